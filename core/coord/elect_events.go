package coord

import (
	"context"
	"strings"
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
//
//krabka:enum krabka_stop_reason_t prefix=Stop
type StopReason int

// The reasons a term ends.
const (
	// StopNone: not a STOPPED event (the Reason of every other TermEvent).
	StopNone StopReason = 0
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

// TermEventKind says what a TermEvent reports.
//
//krabka:enum krabka_term_event_kind_t prefix=Term
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
	// TermSuspended: the term's renewals fail because no broker answers and
	// the stop margin came (ElectRideOutage only): the term is kept, not
	// stopped, but the host must stop dispatching until TermRecovered (a
	// renewal succeeded under the same token). A TermStopped follows
	// instead when the cluster answers that another member minted
	// (StopFenced) or a renewal fails with an answer (StopExpired).
	TermSuspended
	// TermElectorStopped: the election loop ended (Run returned); the last
	// event. Err is what Run returned: nil when Run's context ended (the
	// normal way to stop), otherwise why the loop ended (ErrClosed, the
	// lost term's error with ElectRecampaign(false), a refusal for good,
	// a *CallbackPanic). Term is the last term's number.
	TermElectorStopped
)

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
	// Reason: STOPPED only. Err: STOPPED (the term's error) and
	// ELECTOR_STOPPED (what Run returned).
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

// ElectorState is where an elector's loop is (Elector.State), numbered as
// krabka_elector_state_t. The states a health check reports as failing
// (ElectorNotStarted, ElectorAtRisk, ElectorSuspended, ElectorStopped) are
// also the sentinel errors of Healthy and Err: match them with errors.Is,
// never by their text.
//
//krabka:enum krabka_elector_state_t prefix=Elector
type ElectorState int

// The states of an elector.
const (
	// ElectorNotStarted: Run was not called yet (never reported by the C
	// API, whose constructor starts the loop).
	ElectorNotStarted ElectorState = iota
	// ElectorCampaigning: between terms: campaigning, standing by, backing
	// off after a loss, or withdrawn (Eligible says which).
	ElectorCampaigning
	// ElectorHolding: a term runs and its lease is renewed on time.
	ElectorHolding
	// ElectorAtRisk: a term runs with its lease at risk (TermAtRisk): no
	// renewal succeeded and the deadline is near.
	ElectorAtRisk
	// ElectorSuspended: a term rides out an outage (TermSuspended): it is
	// kept, but the host must not dispatch until it recovered.
	ElectorSuspended
	// ElectorStopped: the loop ended (Run returned; Err says why).
	ElectorStopped
)

// Error makes a state a sentinel error: Healthy and Err wrap the state
// they report, so that errors.Is(err, ElectorAtRisk) says which.
func (s ElectorState) Error() string {
	switch s {
	case ElectorNotStarted:
		return "krabka: elector not running (Run was not called)"
	case ElectorAtRisk:
		return "krabka: elector holding the role with its lease at risk"
	case ElectorSuspended:
		return "krabka: elector term suspended: no broker answers"
	case ElectorStopped:
		return "krabka: elector stopped"
	}
	return "krabka: elector " + strings.ToLower(s.String())
}
