package coord

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/krabka/krabka-coord/core"
)

// Elector runs the election loop of one member for one role: it campaigns
// (Client.Acquire), keeps the won lease renewed (in the background, whether
// or not krabka.renew.background is set), ends the term before the lease
// deadline when renewals keep failing (ElectStopMargin), resigns when Run's
// context ends, and by default campaigns again after a loss, with backoff.
// Build it with NewElector; Run it once. Its events are read with Next or
// C (the event form), or given to callbacks by RunWithCallbacks and Elect.
//
// Guarantees, in event order (Next, C) and for the callbacks alike:
//   - every TermStarted is followed by exactly one TermStopped of the same
//     term, and the term context is cancelled before that TermStopped is
//     delivered;
//   - no TermStarted comes before the previous term's TermStopped was
//     taken: Run campaigns again only once that TermStopped was returned
//     by Next (or C), with callbacks once OnStopped returned, with
//     ElectManualRelease once Release(term) was called. A new term never
//     overtakes a consumer still acting on the last one;
//   - a term's TermAtRisk and TermRecovered come between its TermStarted
//     and TermStopped; TermNewLeader events come at any time (the one
//     naming this member's own win may come before or after its
//     TermStarted);
//   - when Run returns, every term it started has stopped and no
//     leadership it won is left running: it was resigned (Run's context
//     ended, a withdrawal, a callback panic), closed (lost at risk) or
//     ended by itself.
//
// Safety still comes from the broker: a guarded write of an ended term is
// refused. The term context and TermStopped only tell the host when to stop
// trying.
//
// An Elector is safe for concurrent use.
type Elector struct {
	c      *Client
	role   core.Role
	member core.MemberID
	o      electOptions

	mu      sync.Mutex
	started bool // Run was called
	stopped bool // Run returned
	runErr  error
	endErr  error                   // Err: why the loop ended (matches ElectorStopped)
	cancel  context.CancelCauseFunc // Run's inner context
	stopErr error                   // set by stopWith before or during Run
	done    chan struct{}           // closed when Run returned

	eligible    bool
	eligGen     uint64        // bumped on every SetEligible
	withdrawn   uint64        // the eligGen the loop last served while ineligible
	withdrawErr error         // the outcome of that withdrawal (Leave)
	eligWake    chan struct{} // closed and replaced on SetEligible and when a withdrawal is served

	term     uint64
	cur      *Leadership // the current term's leadership (nil between terms)
	suspend  bool        // the current term is suspended (TermSuspended delivered, no TermRecovered yet)
	released uint64      // the last term whose TermStopped was taken
	relWake  chan struct{}

	queue  []TermEvent
	qWake  chan struct{} // closed and replaced when the queue grows or closes
	qClose bool
	// sink, when set (by an ElectorSet, before Start), is called after an
	// event was queued and once the loop ended, outside mu: the set takes
	// the events with take, no goroutine per role waits in Next.
	sink   func()
	chOnce sync.Once
	ch     chan TermEvent

	bg sync.WaitGroup // leaderships being closed in the background (Run waits)

	lastHolder core.MemberID // the last NEW_LEADER delivered (deduplicates re-watches)
	lastToken  core.FencingToken
}

// NewElector returns an elector of member for role on c. Nothing touches
// the network until Run. Bad options give ErrInvalidArgument naming the
// problem.
func NewElector(c *Client, role core.Role, member core.MemberID, opts ...ElectOption) (*Elector, error) {
	if c == nil {
		return nil, WrapError(ErrInvalidArgument, nil, "NewElector: no client")
	}
	if err := checkNames(role, &member); err != nil {
		return nil, err
	}
	if _, err := c.wire(role); err != nil {
		return nil, err
	}
	o := electOptions{recampaign: true, backoffMin: 100 * time.Millisecond, stopMargin: -1, eligible: true,
		backoffMax: time.Duration(c.cfg.Lease.DurationMs) * time.Millisecond}
	for _, f := range opts {
		if f == nil {
			continue
		}
		if err := f(&o); err != nil {
			return nil, err
		}
	}
	if o.rideOutage == 0 && c.cfg.ElectorRideOutage {
		o.rideOutage = 1
	}
	if o.rideOutage > 0 {
		// As a standby too (outage.go).
		o.acquire = append(o.acquire, func(ao *acquireOptions) { ao.rideOutage = true })
	}
	risk := c.cfg.RiskMargin()
	switch {
	case o.stopMargin < 0:
		o.stopMargin = c.cfg.StopMargin()
	case o.stopMargin > risk:
		return nil, WrapError(ErrInvalidArgument, nil,
			"ElectStopMargin(%v): must not exceed the risk margin %v (krabka.lease.risk.margin.ms): a term ends only after its lease was at risk", o.stopMargin, risk)
	}
	e := &Elector{c: c, role: role, member: member, o: o, done: make(chan struct{}),
		eligible: o.eligible, eligWake: make(chan struct{}), relWake: make(chan struct{}), qWake: make(chan struct{})}
	return e, nil
}

// Role returns the role; Member the member.
func (e *Elector) Role() core.Role { return e.role }

// Member returns the member the elector campaigns for.
func (e *Elector) Member() core.MemberID { return e.member }

// Leadership returns the current term's leadership, nil between terms.
func (e *Elector) Leadership() *Leadership {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.cur
}

// Term returns the number of the current or last term (0: none yet).
func (e *Elector) Term() uint64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.term
}

// Done is closed when Run has returned.
func (e *Elector) Done() <-chan struct{} { return e.done }

// Eligible reports whether the member is a candidate (SetEligible).
func (e *Elector) Eligible() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.eligible
}

// SetEligible withdraws the member's candidacy (false) or restores it
// (true) without closing anything. Withdrawn, a holder resigns (its term
// stops with StopResigned and the first standby takes over at once) and a
// standby stops challenging and leaves the roster (Client.Leave); the
// elector then waits. Restored, it campaigns again and registers at the
// tail of the roster. SetEligible(false) on a running elector blocks until
// the member is out (the resignation or the leave was written, or failed:
// the error says why) or ctx ends; SetEligible(true) does not block.
// Before Run it only sets the initial state.
func (e *Elector) SetEligible(ctx context.Context, on bool) error {
	if ctx == nil {
		ctx = context.Background()
	}
	e.mu.Lock()
	e.eligible = on
	e.eligGen++
	gen := e.eligGen
	e.wakeEligLocked()
	running := e.started && !e.stopped
	e.mu.Unlock()
	if on || !running {
		return nil
	}
	for {
		e.mu.Lock()
		served, err, wake := e.withdrawn >= gen, e.withdrawErr, e.eligWake
		superseded := e.eligGen > gen && e.eligible // restored meanwhile
		stopped := e.stopped
		e.mu.Unlock()
		switch {
		case served:
			return err
		case superseded || stopped:
			return nil
		}
		select {
		case <-wake:
		case <-e.done:
		case <-ctx.Done():
			return e.c.fail(ctx, ctx.Err())
		}
	}
}

func (e *Elector) wakeEligLocked() {
	close(e.eligWake)
	e.eligWake = make(chan struct{})
}

// State returns where the loop is: ElectorNotStarted before Run,
// ElectorCampaigning between terms (standing by, backing off or withdrawn
// included), ElectorHolding, ElectorAtRisk or ElectorSuspended while a
// term runs, ElectorStopped once Run returned (Err says why). Never blocks.
// A state is a snapshot: the term's events (Next, C) say when it changes.
func (e *Elector) State() ElectorState {
	e.mu.Lock()
	started, stopped, l, suspended := e.started, e.stopped, e.cur, e.suspend
	e.mu.Unlock()
	switch {
	case !started:
		return ElectorNotStarted
	case stopped:
		return ElectorStopped
	case l == nil:
		return ElectorCampaigning
	case suspended:
		return ElectorSuspended
	case l.AtRisk():
		return ElectorAtRisk
	}
	return ElectorHolding
}

// Err returns nil until Run returned, then why the loop ended: an error
// that matches ElectorStopped (errors.Is) and wraps what ended it: Run's
// error (ErrClosed, the lost term's error with ElectRecampaign(false), a
// refusal for good, a *CallbackPanic), or the cause of Run's context when
// the caller ended the loop (context.Canceled, say). Never blocks.
func (e *Elector) Err() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if !e.stopped {
		return nil
	}
	return e.endErr
}

// Healthy reports whether the elector is doing its job, for a host's health
// endpoint (core/coord/healthz adapts it to net/http), built on State: nil
// while it campaigns or waits as a standby, while the member is withdrawn,
// and while it holds the role with its lease renewed on time; otherwise an
// error that matches the state with errors.Is: ElectorAtRisk (the held
// lease is at risk), ElectorSuspended (a term rides out an outage),
// ElectorNotStarted (before Run) and ElectorStopped (after Run returned;
// it is Err, which also wraps why). Never blocks.
func (e *Elector) Healthy() error {
	switch st := e.State(); st {
	case ElectorNotStarted:
		return fmt.Errorf("%w: %s/%s", st, e.role, e.member)
	case ElectorStopped:
		return e.Err()
	case ElectorAtRisk, ElectorSuspended:
		var away int64
		if l := e.Leadership(); l != nil {
			away = l.Lease().Deadline - e.c.clock.NowMs()
		}
		if st == ElectorSuspended {
			return fmt.Errorf("%w: %s/%s: no renewal succeeded since the cluster stopped answering; the lease deadline is %d ms away (negative: passed)",
				st, e.role, e.member, away)
		}
		return fmt.Errorf("%w: %s/%s: no renewal succeeded and the deadline is %d ms away", st, e.role, e.member, away)
	}
	return nil
}
