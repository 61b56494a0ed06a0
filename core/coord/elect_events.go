package coord

import (
	"context"
	"fmt"
	"time"

	"github.com/krabka/krabka-coord/core"
)

// The elector (issue 23): the whole election loop of one member for one
// role, in the shape Go users know from client-go's
// leaderelection.LeaderElector (NewLeaderElector, Run, RunOrDie with
// OnStartedLeading / OnStoppedLeading / OnNewLeader) rather than etcd's
// concurrency.Election.Campaign: Campaign there is one blocking
// acquisition, which is Client.Acquire here; the loop around it (renew,
// stop before the deadline, resign on cancel, campaign again) is what an
// Elector adds. Its events (TermEvent) are plain values, so the C API can
// deliver them through its completion queue and the bindings as events;
// the callback form (Elect, RunWithCallbacks) is built on them.

// StopReason says why a term ended. The values shared with LeadershipState
// have its numbers.
type StopReason int

// The reasons a term ends.
const (
	// StopFenced: the cluster superseded the term's token (ErrFenced).
	StopFenced StopReason = 1
	// StopExpired: renewals failed until the lease deadline
	// (ErrLeaseExpired), with no stop margin (ElectStopMargin(0)) or when
	// the margin had no time to act.
	StopExpired StopReason = 2
	// StopResigned: the elector resigned (its context ended, the member
	// withdrew its candidacy, a callback panicked) or the owner resigned the
	// leadership (ErrNotLeader, or the *CallbackPanic).
	StopResigned StopReason = 3
	// StopClosed: the leadership was closed without resigning, by its
	// owner (ErrNotLeader) or with the client (ErrClosed).
	StopClosed StopReason = 4
	// StopLostAtRisk: the lease was at risk and no renewal succeeded until
	// the stop margin before its deadline: the elector ended the term and
	// closed the leadership before the deadline (ErrLeaseExpired, saying
	// so).
	StopLostAtRisk StopReason = 5
)

// String returns "FENCED", "EXPIRED", "RESIGNED", "CLOSED" or
// "LOST_AT_RISK".
func (r StopReason) String() string {
	switch r {
	case StopFenced:
		return "FENCED"
	case StopExpired:
		return "EXPIRED"
	case StopResigned:
		return "RESIGNED"
	case StopClosed:
		return "CLOSED"
	case StopLostAtRisk:
		return "LOST_AT_RISK"
	}
	return fmt.Sprintf("StopReason(%d)", int(r))
}

// TermEventKind says what a TermEvent reports.
type TermEventKind int

// The kinds of term events.
const (
	// TermStarted: the member won the role; a term begins.
	TermStarted TermEventKind = iota + 1
	// TermAtRisk: the term's lease is at risk (Leadership.Events).
	TermAtRisk
	// TermRecovered: a renewal succeeded after TermAtRisk.
	TermRecovered
	// TermStopped: the term ended (Reason, Err). Exactly one follows every
	// TermStarted.
	TermStopped
	// TermNewLeader: the log shows another holder or token of the role
	// (anyone's term, this member's included).
	TermNewLeader
)

// String returns "STARTED", "AT_RISK", "RECOVERED", "STOPPED" or
// "NEW_LEADER".
func (k TermEventKind) String() string {
	switch k {
	case TermStarted:
		return "STARTED"
	case TermAtRisk:
		return "AT_RISK"
	case TermRecovered:
		return "RECOVERED"
	case TermStopped:
		return "STOPPED"
	case TermNewLeader:
		return "NEW_LEADER"
	}
	return fmt.Sprintf("TermEventKind(%d)", int(k))
}

// TermEvent is one event of an Elector. Every field but Leadership and
// Context is a plain value.
type TermEvent struct {
	Kind TermEventKind
	// Term numbers this elector's terms 1, 2, ... (STARTED, AT_RISK,
	// RECOVERED and STOPPED of one term carry the same number); 0 on
	// NEW_LEADER.
	Term uint64
	// Token: the term's token on term events; the new holder's on
	// NEW_LEADER.
	Token core.FencingToken
	// Holder: the new holder on NEW_LEADER; this member on term events.
	Holder core.MemberID
	// Deadline: the lease deadline (STARTED: of the first lease; AT_RISK:
	// of the lease at risk; RECOVERED: of the renewed lease; STOPPED: of the
	// last lease written; NEW_LEADER: of the new holder's lease).
	Deadline time.Time
	// Reason and Err: STOPPED only.
	Reason StopReason
	Err    error
	// At is when the elector produced the event (the client's clock).
	At time.Time
	// Leadership is the term's leadership (term events; Go only, the C API
	// maps it to a handle).
	Leadership *Leadership
	// Context is the term context (term events; Go only): cancelled when the
	// term ends, before STOPPED is delivered; context.Cause says why.
	Context context.Context
}
