package workload

import (
	"time"

	"github.com/llmmetrics/llmmetrics"
)

// Profile is a use case of -workload: the lengths it sends and the SLO its
// users expect. Flags given explicitly override a profile's values.
type Profile struct {
	Name          string
	Input, Output string // as -input-tokens and -output-tokens take them
	PrefixTokens  int
	PrefixGroups  int
	SLO           llmmetrics.SLO
}

// Profiles are the use cases of -workload (docs/command.md states the
// source of each figure).
var Profiles = []Profile{
	// A chatbot: a short prompt, a 100–500-token answer read as it streams.
	{Name: "chat", Input: "uniform:20-200", Output: "uniform:100-500",
		SLO: llmmetrics.SLO{TTFT: 200 * time.Millisecond, TPOT: 100 * time.Millisecond}},
	// Inline code completion: the editor's context in, a few lines out, at
	// once.
	{Name: "code", Input: "normal:1000,300", Output: "uniform:10-60",
		SLO: llmmetrics.SLO{TTFT: 100 * time.Millisecond, E2EL: time.Second}},
	// Summarizing a ~2,000-token document: input-bound, a short summary,
	// a 2–3 s TTFT tolerated.
	{Name: "summarize", Input: "normal:2000,400", Output: "uniform:100-300",
		SLO: llmmetrics.SLO{TTFT: 3 * time.Second, E2EL: 60 * time.Second}},
	// Retrieval-augmented answers: a long retrieved context shared by the
	// questions about it, a short question, a chat-length answer.
	{Name: "rag", Input: "uniform:20-100", Output: "uniform:100-300", PrefixTokens: 2000, PrefixGroups: 8,
		SLO: llmmetrics.SLO{TTFT: time.Second, TPOT: 100 * time.Millisecond}},
	// Long generation: 2,000 tokens out, read after it ends.
	{Name: "long", Input: "uniform:100-500", Output: "2000",
		SLO: llmmetrics.SLO{TPOT: 100 * time.Millisecond, E2EL: 120 * time.Second}},
	// An agent's tasks (agent.go): the task message in, a tool call or the
	// answer out at each step, a shared system prompt with the tools; a
	// step's TTFT over a long context tolerated as summarize's, a decode
	// twice as slow as TraceLab's median (40.7 tokens/s, 25 ms a token).
	{Name: "agent", Input: DefaultTaskTokens, Output: DefaultStepOutputTokens, PrefixTokens: DefaultSystemTokens, PrefixGroups: 1,
		SLO: llmmetrics.SLO{TTFT: 3 * time.Second, TPOT: 50 * time.Millisecond}},
}

// ProfileNamed returns the profile called name.
func ProfileNamed(name string) (Profile, bool) {
	for _, p := range Profiles {
		if p.Name == name {
			return p, true
		}
	}
	return Profile{}, false
}
