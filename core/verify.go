package core

import "sync"

// Verdict is what a Verifier says of one consumed record (docs/PROTOCOL.md
// 11.5).
//
//krabka:enum krabka_verdict_t prefix=Verdict
type Verdict int

const (
	// VerdictOK: the record's krabka.token names the producer id and epoch
	// of its batch, and that token is not older than the highest seen for
	// the role.
	VerdictOK Verdict = iota
	// VerdictStale: the batch's token is older than the highest token seen
	// for the role: a writer that had been superseded when this record was
	// read after a newer one (not possible through the library's guarded
	// write, whose stale tokens the broker refuses; possible for records
	// produced outside it, or reordered by the consumer).
	VerdictStale
	// VerdictMismatch: the record carries krabka.token, but it is not a
	// token or not the producer id and epoch of the batch the broker
	// accepted: it was not written by the token it claims.
	VerdictMismatch
	// VerdictUnstamped: no krabka.token header (a writer with
	// krabka.produce.token.header=false, or not the library); the batch's
	// token still counts towards staleness.
	VerdictUnstamped
)

// Verifier judges consumed records of guarded writes: a consumer, or a
// device that receives commands, feeds it each record's krabka.token header
// and the producer id and epoch of the record's batch (which the broker
// itself accepted), in the order it reads them. It keeps the highest token
// seen per scope (a role name, or whatever the consumer groups writers by:
// one partition, one device). Safe for concurrent use.
type Verifier struct {
	mu      sync.Mutex
	highest map[string]FencingToken
}

// NewVerifier returns a verifier that has seen nothing.
func NewVerifier() *Verifier { return &Verifier{highest: map[string]FencingToken{}} }

// Judge returns the verdict of one record of scope: header is the value of
// its krabka.token header (hasHeader false: none), batch the producer id and
// epoch of its batch. Checked in this order: MISMATCH (the header disagrees
// with the batch), STALE (the batch is older than the highest token seen),
// UNSTAMPED, OK. A record that is neither MISMATCH nor STALE raises the
// highest token of its scope to its batch's.
func (v *Verifier) Judge(scope string, header []byte, hasHeader bool, batch FencingToken) Verdict {
	if hasHeader {
		tok, err := ParseFencingToken(string(header))
		if err != nil || tok != batch {
			return VerdictMismatch
		}
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if h, ok := v.highest[scope]; ok && batch.Compare(h) < 0 {
		return VerdictStale
	}
	v.highest[scope] = batch
	if !hasHeader {
		return VerdictUnstamped
	}
	return VerdictOK
}

// Highest returns the highest token seen for scope (ok false: none yet).
func (v *Verifier) Highest(scope string) (FencingToken, bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	t, ok := v.highest[scope]
	return t, ok
}
