package llmmetrics

// Goodput says how many requests of a run met the SLO (were good: OK and
// within every limit) and what share of the work was useful. Rates are per
// second; ratios are in [0, 1], 0 when their denominator is 0.
type Goodput struct {
	// Good is the number of good requests.
	Good int `json:"good"`
	// GoodTokens is Σ N (output tokens) over good requests.
	GoodTokens int `json:"good_tokens"`
	// RequestsPerSecond is request goodput: Good / Duration (vLLM's
	// "Request goodput").
	RequestsPerSecond float64 `json:"requests_per_second"`
	// TokensPerSecond is token goodput: GoodTokens / Duration.
	TokensPerSecond float64 `json:"tokens_per_second"`
	// Attainment is SLO attainment: Good / Requests (failed and canceled
	// requests count as not good).
	Attainment float64 `json:"attainment"`
	// UsefulWorkRatio is GoodTokens / the output tokens of all requests,
	// whatever their outcome: the share of generated tokens that reached
	// a user within the SLO.
	UsefulWorkRatio float64 `json:"useful_work_ratio"`
	// ByThreshold is the share of requests meeting each limit alone, so a
	// reader sees which limit binds.
	ByThreshold ThresholdAttainment `json:"by_threshold"`
}

// ThresholdAttainment holds, for each limit of an SLO taken alone, the share
// of all requests that are OK and meet it (an unset limit: Completed /
// Requests).
type ThresholdAttainment struct {
	// TTFT is the share of requests that are OK and meet the TTFT limit.
	TTFT float64 `json:"ttft"`
	// TTFO is the share of requests that are OK and meet the TTFO limit.
	TTFO float64 `json:"ttfo"`
	// TPOT is the share of requests that are OK and meet the TPOT limit.
	TPOT float64 `json:"tpot"`
	// ITL is the share of requests that are OK and meet the ITL limit.
	ITL float64 `json:"itl"`
	// E2EL is the share of requests that are OK and meet the E2EL limit.
	E2EL float64 `json:"e2el"`
}
