package llmmetrics

import (
	"fmt"
	"strings"
)

// The enums of the package: side and Latency (Protocol lives with the
// protocol table, in protocol.go; Outcome with Record, in record.go).
// Latency and Outcome encode as a lower-case name and decode that name in
// any case.

// parseName returns the index of b in names, compared case-insensitively:
// the one rule for the text form of the enums of this package that decode
// (Outcome, Latency), which encode in lower case.
func parseName(b []byte, names []string) (int, bool) {
	for i, n := range names {
		if strings.EqualFold(string(b), n) {
			return i, true
		}
	}
	return 0, false
}

// side is the role of a request's measurements, which selects the metric
// names (see the package documentation's metric table) and is the value
// of RoleKey.
type side uint8

const (
	// sideServer is a model server or a gateway: the gen_ai.server.*
	// instruments (NewHandler, Tracker.Start).
	sideServer side = iota
	// sideClient is an application that calls a model: the
	// gen_ai.client.* instruments (NewTransport, Middleware,
	// Tracker.StartClient).
	sideClient
)

var roleNames = [...]string{sideServer: "server", sideClient: "client"}

// String returns "server" or "client", the value of RoleKey.
func (r side) String() string {
	if int(r) < len(roleNames) {
		return roleNames[r]
	}
	return fmt.Sprintf("side(%d)", uint8(r))
}

// Latency names one of the latency distributions of a Summary:
// Summary.Distribution selects it, an Objective bounds it. Its text form is
// "ttft", "tpot", "itl", "e2el", "ttfo" or "generation" (read
// case-insensitively). The zero value is LatencyTTFT.
type Latency uint8

const (
	// LatencyTTFT selects Summary.TTFT.
	LatencyTTFT Latency = iota
	// LatencyTPOT selects Summary.TPOT.
	LatencyTPOT
	// LatencyITL selects Summary.ITL.
	LatencyITL
	// LatencyE2EL selects Summary.E2EL.
	LatencyE2EL
	// LatencyTTFO selects Summary.TTFO (time to the first answer token).
	LatencyTTFO
	// LatencyGeneration selects Summary.GenerationTime (LastToken −
	// FirstToken).
	LatencyGeneration
)

var latencyNames = []string{"ttft", "tpot", "itl", "e2el", "ttfo", "generation"}

func (l Latency) valid() bool { return int(l) < len(latencyNames) }

// String returns the latency's name, e.g. "ttft" (or "Latency(N)").
func (l Latency) String() string {
	if l.valid() {
		return latencyNames[l]
	}
	return fmt.Sprintf("Latency(%d)", uint8(l))
}

// MarshalText encodes the latency as its name.
func (l Latency) MarshalText() ([]byte, error) {
	if !l.valid() {
		return nil, fmt.Errorf("%w: no name for latency %d", ErrInvalid, uint8(l))
	}
	return []byte(latencyNames[l]), nil
}

// UnmarshalText decodes "ttft", "tpot", "itl", "e2el", "ttfo" or
// "generation", in any case.
func (l *Latency) UnmarshalText(b []byte) error {
	i, ok := parseName(b, latencyNames)
	if !ok {
		return fmt.Errorf("%w: unknown latency %q (want ttft, tpot, itl, e2el, ttfo or generation)", ErrInvalid, b)
	}
	*l = Latency(i)
	return nil
}
