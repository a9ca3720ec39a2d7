package jsonscan_test

import (
	"fmt"

	"github.com/llmmetrics/llmmetrics/cmd/llmmetrics/internal/jsonscan"
)

// ollamaFacts is what a decoder needs from one line of Ollama's /api/chat
// stream.
type ollamaFacts struct {
	content, done bool // message.content is a non-empty string; done is true
	evals         int  // eval_count: the output tokens, on the last line
	hasEvals      bool
}

// walkOllama reads {"message":{"content":…},"done":…,"eval_count":…}.
func walkOllama(j *jsonscan.Scanner, i int, f *ollamaFacts) (int, bool) {
	i, more, ok := j.OpenObject(i, 0)
	for ok && more {
		var k []byte
		if k, i, ok = j.Key(i); !ok {
			break
		}
		switch string(k) {
		case "message":
			i, ok = walkOllamaMessage(j, i, 1, f)
		case "done":
			i, f.done, ok = j.True(i, 1)
		case "eval_count":
			i, f.evals, f.hasEvals, ok = j.Int(i, 1)
		default:
			i, ok = j.Skip(i, 1)
		}
		if ok {
			i, more, ok = j.NextMember(i)
		}
	}
	return i, ok
}

// walkOllamaMessage reads the "message" value at i, at depth.
func walkOllamaMessage(j *jsonscan.Scanner, i, depth int, f *ollamaFacts) (int, bool) {
	f.content = false // the last "message" member counts
	if j.At(i) != '{' {
		return j.Skip(i, depth)
	}
	i, more, ok := j.OpenObject(i, depth)
	for ok && more {
		var k []byte
		if k, i, ok = j.Key(i); !ok {
			break
		}
		if string(k) == "content" {
			i, f.content, ok = j.NonEmptyString(i, depth+1)
		} else {
			i, ok = j.Skip(i, depth+1)
		}
		if ok {
			i, more, ok = j.NextMember(i)
		}
	}
	return i, ok
}

// A walker for the lines of an Ollama chat stream, and a Cache that answers
// the lines that differ from the previous one only in their text.
func Example() {
	lines := []string{
		`{"model":"llama3.2","created_at":"2024-07-22T20:33:28.1Z","message":{"role":"assistant","content":"The"},"done":false}`,
		`{"model":"llama3.2","created_at":"2024-07-22T20:33:28.1Z","message":{"role":"assistant","content":" sky"},"done":false}`,
		`{"model":"llama3.2","created_at":"2024-07-22T20:33:28.2Z","message":{"role":"assistant","content":""},"done":true,"eval_count":2}`,
		`{"model":"llama3.2","message":{"content":"unterminated"`,
	}
	var j jsonscan.Scanner
	var cache jsonscan.Cache[ollamaFacts]
	for _, line := range lines {
		f, hit := cache.Walk(&j, []byte(line), walkOllama)
		if f == nil {
			fmt.Println("not a JSON object")
			continue
		}
		fmt.Printf("content %v, done %v, eval_count %d (present %v), from the cache %v\n", f.content, f.done, f.evals, f.hasEvals, hit)
	}
	// Output:
	// content true, done false, eval_count 0 (present false), from the cache false
	// content true, done false, eval_count 0 (present false), from the cache true
	// content false, done true, eval_count 2 (present true), from the cache false
	// not a JSON object
}
