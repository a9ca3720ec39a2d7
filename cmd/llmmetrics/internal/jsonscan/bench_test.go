package jsonscan_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/llmmetrics/llmmetrics/cmd/llmmetrics/internal/jsonscan"
)

// chatFacts is what a chat walker reads from a chunk: the choices that
// carry output and the usage.
type chatFacts struct {
	carrying int
	usage    jsonscan.Ints
}

var chatUsage = []string{"prompt_tokens", "completion_tokens"}

// walkChat reads choices[].delta.{content,reasoning_content,tool_calls} and
// usage, as the OpenAI decoder's walker does (a shorter copy of it).
func walkChat(j *jsonscan.Scanner, i int, f *chatFacts) (int, bool) {
	i, more, ok := j.OpenObject(i, 0)
	for ok && more {
		var k []byte
		if k, i, ok = j.Key(i); !ok {
			break
		}
		switch string(k) {
		case "choices":
			f.carrying = 0
			if j.At(i) != '[' {
				i, ok = j.Skip(i, 1)
				break
			}
			var more bool
			i, more, ok = j.OpenArray(i, 1)
			for ok && more {
				var carries bool
				if i, carries, ok = walkChatChoice(j, i, 2); carries {
					f.carrying++
				}
				if ok {
					i, more, ok = j.NextElement(i)
				}
			}
		case "usage":
			i, ok = j.Ints(i, 1, chatUsage, &f.usage)
		default:
			i, ok = j.Skip(i, 1)
		}
		if ok {
			i, more, ok = j.NextMember(i)
		}
	}
	return i, ok
}

func walkChatChoice(j *jsonscan.Scanner, i, depth int) (int, bool, bool) {
	if j.At(i) != '{' {
		next, ok := j.Skip(i, depth)
		return next, false, ok
	}
	var carries bool
	i, more, ok := j.OpenObject(i, depth)
	for ok && more {
		var k []byte
		if k, i, ok = j.Key(i); !ok {
			break
		}
		if string(k) != "delta" || j.At(i) != '{' {
			i, ok = j.Skip(i, depth+1)
		} else {
			carries = false
			var more bool
			i, more, ok = j.OpenObject(i, depth+1)
			for ok && more {
				if k, i, ok = j.Key(i); !ok {
					break
				}
				var yes bool
				switch string(k) {
				case "content", "reasoning_content":
					i, yes, ok = j.NonEmptyString(i, depth+2)
				case "tool_calls":
					i, yes, ok = j.NonEmptyArray(i, depth+2)
				default:
					i, ok = j.Skip(i, depth+2)
				}
				carries = carries || yes
				if ok {
					i, more, ok = j.NextMember(i)
				}
			}
		}
		if ok {
			i, more, ok = j.NextMember(i)
		}
	}
	return i, carries, ok
}

// chatJSON is the encoding/json baseline: the members walkChat reads, as a
// struct.
type chatJSON struct {
	Choices []struct {
		Delta struct {
			Content          string            `json:"content"`
			ReasoningContent string            `json:"reasoning_content"`
			ToolCalls        []json.RawMessage `json:"tool_calls"`
		} `json:"delta"`
	} `json:"choices"`
	Usage *struct {
		PromptTokens     int `json:"prompt_tokens"`
		CompletionTokens int `json:"completion_tokens"`
	} `json:"usage"`
}

// chatChunks returns n chunks that differ only in their content text, as
// consecutive chunks of a stream do.
func chatChunks(n int) [][]byte {
	words := strings.Fields("the quick brown fox jumps over a lazy dog while streaming tokens arrive")
	out := make([][]byte, n)
	for k := range out {
		out[k] = []byte(strings.Replace(chatChunk, `" Paris"`, `" `+words[k%len(words)]+`"`, 1))
	}
	return out
}

// BenchmarkWalkChatChunk reads the facts of a realistic chat chunk (265
// bytes) three ways: encoding/json into a struct of the members read (the
// baseline), a full Walk, and the Cache on consecutive chunks that differ
// in their text.
func BenchmarkWalkChatChunk(b *testing.B) {
	chunks := chatChunks(16)
	b.Run("encoding/json", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(chunks[0])))
		carrying := 0
		for k := 0; b.Loop(); k++ {
			var v chatJSON
			if err := json.Unmarshal(chunks[k%len(chunks)], &v); err != nil {
				b.Fatal(err)
			}
			for _, c := range v.Choices {
				if c.Delta.Content != "" || c.Delta.ReasoningContent != "" || len(c.Delta.ToolCalls) > 0 {
					carrying++
				}
			}
		}
		if carrying == 0 {
			b.Fatal("nothing read")
		}
	})
	b.Run("Walk", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(chunks[0])))
		var j jsonscan.Scanner
		var f chatFacts
		carrying := 0
		for k := 0; b.Loop(); k++ {
			if !jsonscan.Walk(&j, chunks[k%len(chunks)], &f, walkChat) {
				b.Fatal("invalid")
			}
			carrying += f.carrying
		}
		if carrying == 0 {
			b.Fatal("nothing read")
		}
	})
	b.Run("Cache", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(chunks[0])))
		var j jsonscan.Scanner
		var c jsonscan.Cache[chatFacts]
		carrying := 0
		for k := 0; b.Loop(); k++ {
			f, _ := c.Walk(&j, chunks[k%len(chunks)], walkChat)
			carrying += f.carrying
		}
		if carrying == 0 {
			b.Fatal("nothing read")
		}
	})
}

// stringStarts returns the index of every string (key or value) in doc,
// which has no escapes.
func stringStarts(doc string) []int {
	var starts []int
	for i := 0; i < len(doc); i++ {
		if doc[i] == '"' {
			starts = append(starts, i)
			i += strings.IndexByte(doc[i+1:], '"') + 1
		}
	}
	return starts
}

// BenchmarkStr scans strings with Str and with a byte-at-a-time copy of it
// (the baseline): every key and value of a realistic chat chunk (17
// strings of 2–29 bytes, as most events hold), and one 256-byte text (a
// long delta or tool-call arguments).
func BenchmarkStr(b *testing.B) {
	long := `{"content":"` + strings.Repeat("The quick brown fox jumps over the lazy dog. ", 6)[:256] + `"}`
	for _, in := range []struct {
		name string
		doc  string
	}{{"chat chunk", chatChunk}, {"256-byte text", long}} {
		starts := stringStarts(in.doc)
		var j jsonscan.Scanner
		j.SetText([]byte(in.doc))
		b.Run(in.name+"/bytewise", func(b *testing.B) {
			b.ReportAllocs()
			n := 0
			for b.Loop() {
				for _, i := range starts {
					end, _, _ := j.StrBytewise(i)
					n += end
				}
			}
			if n == 0 {
				b.Fatal("nothing scanned")
			}
		})
		b.Run(in.name+"/8 bytes at a time", func(b *testing.B) {
			b.ReportAllocs()
			n := 0
			for b.Loop() {
				for _, i := range starts {
					end, _, _ := j.Str(i)
					n += end
				}
			}
			if n == 0 {
				b.Fatal("nothing scanned")
			}
		})
	}
}

// BenchmarkSkipSpace calls SkipSpace where a walker of compact JSON does
// (after each of the 29 delimiters of the chat chunk; none finds a space),
// and the loop alone (the baseline).
func BenchmarkSkipSpace(b *testing.B) {
	var at []int
	for i, c := range []byte(chatChunk) {
		if strings.IndexByte(`{}[],:`, c) >= 0 {
			at = append(at, i+1)
		}
	}
	var j jsonscan.Scanner
	j.SetText([]byte(chatChunk))
	b.Run("loop", func(b *testing.B) {
		b.ReportAllocs()
		n := 0
		for b.Loop() {
			for _, i := range at {
				n += j.SkipSpaceLoop(i)
			}
		}
		if n == 0 {
			b.Fatal("nothing scanned")
		}
	})
	b.Run("first test, then loop", func(b *testing.B) {
		b.ReportAllocs()
		n := 0
		for b.Loop() {
			for _, i := range at {
				n += j.SkipSpace(i)
			}
		}
		if n == 0 {
			b.Fatal("nothing scanned")
		}
	})
}
