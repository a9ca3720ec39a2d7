package llmmetrics

// Unexported knobs the external tests (package llmmetrics_test) use.

// WithAttributeCacheSize lets a test shrink the attribute cache to see
// evictions.
var WithAttributeCacheSize = withAttributeCacheSize
