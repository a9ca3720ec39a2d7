//go:build race

package llmmetrics

// raceEnabled is true when the tests run under the race detector (-race),
// where sync.Pool drops items on purpose: allocation counts and pool reuse
// are not measured then.
const raceEnabled = true
