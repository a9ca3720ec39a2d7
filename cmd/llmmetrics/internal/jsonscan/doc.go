// Package jsonscan is the command's copy of the library's internal/jsonscan
// (the command depends on the library's public API only, so it keeps its own
// copy of this internal package; keep the two in step).
//
// It validates a JSON object and reads the few members a
// stream decoder needs from it, without allocating.
//
// A decoder sees one small JSON object per stream event (an OpenAI chunk, an
// Anthropic event, a Gemini response, an Ollama line) and needs two or three
// facts from it: does it carry output, what is its usage, is it an error.
// encoding/json answers that with a struct or a map per event, and
// allocates; this package answers it with a walker: a function that reads
// the members it knows with the Scanner's primitives and skips the others.
// On a realistic chat chunk a walker is 10× faster than json.Unmarshal into
// a struct of the same members, with 0 allocations instead of 11, and a
// Cache hit is 9× faster again (go test -run '^$' -bench
// BenchmarkWalkChatChunk -count 20 ./internal/jsonscan, medians of the
// per-run ratios, 2026-11-22).
// The Scanner validates everything it reads or skips with encoding/json's
// grammar and nesting limit (MaxDepth), so Walk reports false exactly when
// json.Valid would, or when the text is not an object.
//
// # Indices and depth
//
// Every primitive takes the index i of a value in the text being walked and
// returns the index just after it (next) and whether the text was valid
// (ok). After ok == false, the other results mean nothing: return at once.
// depth is the number of containers around the value at i: Walk gives the
// walker the top-level object at depth 0, its members are at depth 1.
//
// # Writing a walker
//
// A walker iterates the members of an object with OpenObject, Key and
// NextMember (arrays: OpenArray and NextElement), switches on the key, and
// reads each value it knows with one primitive: NonEmptyString for a text
// whose presence means output, Int or Ints for counts, StringValue for a
// "type" tag, True for a flag, Skip for everything else. When a member
// appears twice, the walker should let the last one win, as encoding/json
// does for a map. For Ollama's
//
//	{"message":{"content":"Hi"},"done":false,"eval_count":7}
//
// the walker is:
//
//	type facts struct {
//		content, done bool
//		evals        int
//		hasEvals     bool
//	}
//
//	func walk(j *jsonscan.Scanner, i int, f *facts) (int, bool) {
//		i, more, ok := j.OpenObject(i, 0)
//		for ok && more {
//			var k []byte
//			if k, i, ok = j.Key(i); !ok {
//				break
//			}
//			switch string(k) {
//			case "message":
//				i, ok = message(j, i, 1, f)
//			case "done":
//				i, f.done, ok = j.True(i, 1)
//			case "eval_count":
//				i, f.evals, f.hasEvals, ok = j.Int(i, 1)
//			default:
//				i, ok = j.Skip(i, 1)
//			}
//			if ok {
//				i, more, ok = j.NextMember(i)
//			}
//		}
//		return i, ok
//	}
//
// where message is the same loop one level down (depth 1, members at depth
// 2), reading "content" with NonEmptyString and skipping a value that is not
// an object. The package's Example runs this walker. Scanner.Members is that
// loop as a function: it calls a function literal per member, which is
// shorter to write and allocates nothing, at the cost of an indirect call
// per member (see Members for where that matters).
//
// # The cache
//
// Consecutive events of one stream are mostly the same bytes; Cache answers
// such an event from the previous one's facts, comparing every byte except
// the body of the hot string: the last string NonEmptyString read (see
// Cache). The answer is right for any walker that reads each value once
// with these primitives and whose facts depend only on the text it walks
// (state carried from one event to the next belongs in the decoder, not in
// the facts): the walker saw the hot string only through its emptiness.
package jsonscan
