package core

import "fmt"

// LeaseConfig holds the three extents of the lease clock, in milliseconds.
type LeaseConfig struct {
	// DurationMs is how long a granted lease lasts (default 30000).
	DurationMs int64
	// RenewIntervalMs is how long after a grant the holder renews (default 10000).
	RenewIntervalMs int64
	// ChallengeStaggerMs separates the challenge instants of successive ranks
	// (default 5000).
	ChallengeStaggerMs int64
}

// DefaultLeaseConfig returns the defaults: 30 s lease, 10 s renew interval,
// 5 s challenge stagger.
func DefaultLeaseConfig() LeaseConfig {
	return LeaseConfig{DurationMs: 30000, RenewIntervalMs: 10000, ChallengeStaggerMs: 5000}
}

// Validate checks that every extent is positive and that the renew interval
// is shorter than the lease (invalid_lease_config).
func (c LeaseConfig) Validate() error {
	bad := func(field, detail string) error {
		return newErr(PartLeaseConfig, CatInvalidLeaseConfig, field, detail)
	}
	switch {
	case c.DurationMs <= 0:
		return bad("duration_ms", fmt.Sprintf("%d must be positive", c.DurationMs))
	case c.RenewIntervalMs <= 0:
		return bad("renew_interval_ms", fmt.Sprintf("%d must be positive", c.RenewIntervalMs))
	case c.ChallengeStaggerMs <= 0:
		return bad("challenge_stagger_ms", fmt.Sprintf("%d must be positive", c.ChallengeStaggerMs))
	case c.RenewIntervalMs >= c.DurationMs:
		return bad("renew_interval_ms", fmt.Sprintf("%d must be shorter than duration_ms %d", c.RenewIntervalMs, c.DurationMs))
	}
	return nil
}

// RenewsWithMargin reports (advisory only) whether three renewals fit in one
// lease: 3 x RenewIntervalMs <= DurationMs, computed exactly for every int64.
func (c LeaseConfig) RenewsWithMargin() bool {
	r, d := c.RenewIntervalMs, c.DurationMs
	// 3r <= d  <=>  r <= floor(d/3) for integers (floor, not truncation).
	q := d / 3
	if d%3 != 0 && d < 0 {
		q--
	}
	return r <= q
}

// Grant returns the lease that member m holds under token t when granted at
// now: GrantedAt = now, Deadline = now + DurationMs (saturating).
func (c LeaseConfig) Grant(m MemberID, t FencingToken, now int64) Lease {
	return Lease{Member: m, Token: t, GrantedAt: now, Deadline: satAdd(now, c.DurationMs)}
}

// ChallengeDelay returns how long after the anchor a member of the given rank
// challenges: rank x ChallengeStaggerMs (saturating). A negative rank counts
// as 0.
func (c LeaseConfig) ChallengeDelay(rank int32) int64 {
	if rank <= 0 {
		return 0
	}
	return satMul(int64(rank), c.ChallengeStaggerMs)
}

// LiveAt reports whether the lease is live at now: now < Deadline.
func (l Lease) LiveAt(now int64) bool { return now < l.Deadline }

// RemainingAt returns max(Deadline - now, 0) (saturating).
func (l Lease) RemainingAt(now int64) int64 {
	r := satSub(l.Deadline, now)
	if r < 0 {
		return 0
	}
	return r
}

// ExpiresAt returns the instant the lease stops being live: its deadline.
func (l Lease) ExpiresAt() int64 { return l.Deadline }

// RenewAt returns when the holder should renew l:
// min(GrantedAt + RenewIntervalMs, Deadline) (saturating).
func (c LeaseConfig) RenewAt(l Lease) int64 {
	at := satAdd(l.GrantedAt, c.RenewIntervalMs)
	if at > l.Deadline {
		return l.Deadline
	}
	return at
}

// RenewDueAt reports whether renewal of l is due at now: now >= RenewAt(l).
func (c LeaseConfig) RenewDueAt(l Lease, now int64) bool { return now >= c.RenewAt(l) }

// ChallengeAt returns when a member of the given rank challenges l:
// Deadline + rank x ChallengeStaggerMs (saturating).
func (c LeaseConfig) ChallengeAt(l Lease, rank int32) int64 {
	return satAdd(l.Deadline, c.ChallengeDelay(rank))
}

// DecisionKind is the outcome of Evaluate.
//
//krabka:enum -
type DecisionKind int

// The four decisions of the succession rule (docs/PROTOCOL.md section 6).
const (
	// NotRegistered: the member is not in the roster; it must register.
	NotRegistered DecisionKind = iota
	// Hold: the member holds a live lease.
	Hold
	// Challenge: the member should mint an epoch and write a lease.
	Challenge
	// Wait: the member should wait until Decision.WaitUntil and re-read.
	Wait
)

// Decision is the result of Evaluate. WaitUntil is set only for Wait: the
// first instant at which the answer changes for an unchanged state.
type Decision struct {
	Kind      DecisionKind
	WaitUntil int64
}

// Evaluate applies the succession rule (docs/PROTOCOL.md section 6) for member me at now.
// The first matching row wins: not in the roster -> NotRegistered; a lease
// naming me that is live -> Hold; otherwise the anchor is the lease deadline
// (or, with no lease, my own registered_at) plus rank x stagger, and the
// answer is Challenge from the anchor on and Wait(anchor) before it. The
// anchor never depends on now.
func Evaluate(s State, me MemberID, now int64, c LeaseConfig) Decision {
	entry, ok := s.Registered(me)
	if !ok {
		return Decision{Kind: NotRegistered}
	}
	if s.Lease != nil && s.Lease.Member == me && s.Lease.LiveAt(now) {
		return Decision{Kind: Hold}
	}
	rank, _ := s.Rank(me)
	base := entry.RegisteredAt
	if s.Lease != nil {
		base = s.Lease.Deadline
	}
	if succ, ok := s.NamedSuccessor(); ok {
		// A hand-over to a named member (docs/PROTOCOL.md 11.3): it
		// challenges at once, every other member one stagger later than
		// its rank alone would say.
		if succ == me {
			rank = 0
		} else {
			rank++
		}
	}
	anchor := satAdd(base, satMul(int64(rank), c.ChallengeStaggerMs)) // rank >= 0
	if now >= anchor {
		return Decision{Kind: Challenge}
	}
	return Decision{Kind: Wait, WaitUntil: anchor}
}
