package llmmetrics

import "errors"

// The package's errors, wrapped with the details (see the package
// documentation's Errors section for the convention).
var (
	// ErrInvalid is returned (wrapped) for an argument outside its
	// documented range: a percentile outside [0, 100], a NaN or infinite
	// sample, a negative price or token count, a negative SLO limit, a
	// malformed SLO or objective text, an invalid option, or an enum value
	// or name that is not one of its own.
	ErrInvalid = errors.New("llmmetrics: invalid argument")
	// ErrUndefined is returned (wrapped) by a function whose arguments
	// are valid but whose result does not exist: the percentile of no
	// values, a weighted mean whose weights sum to 0, the cost per token
	// at zero throughput.
	ErrUndefined = errors.New("llmmetrics: undefined result")
)
