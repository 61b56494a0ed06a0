package coord

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"sync"
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

// ElectOption adjusts an Elector.
type ElectOption func(*electOptions) error

type electOptions struct {
	recampaign    bool
	backoffMin    time.Duration
	backoffMax    time.Duration
	stopMargin    time.Duration // -1: Config.StopMargin
	eligible      bool
	acquire       []AcquireOption
	manualRelease bool // RunWithCallbacks: a term is released after OnStopped returned
	// ElectOnLease (elect_lease.go)
	onLease func(LeaseEvent)
}

// ElectRecampaign says whether the elector campaigns again after it lost a
// term (fenced, expired, lost at risk, or the leadership was resigned or
// closed by its owner). Default true; false makes Run return the loss's
// error after the term's STOPPED.
func ElectRecampaign(on bool) ElectOption {
	return func(o *electOptions) error { o.recampaign = on; return nil }
}

// ElectBackoff sets the wait before campaigning again after a loss: min
// after a term that lasted at least one lease, doubling after each shorter
// one up to max. Default 100 ms and krabka.lease.ms. 0 < min <= max.
func ElectBackoff(min, max time.Duration) ElectOption {
	return func(o *electOptions) error {
		if min <= 0 || max < min {
			return WrapError(ErrInvalidArgument, nil, "ElectBackoff(%v, %v): need 0 < min <= max", min, max)
		}
		o.backoffMin, o.backoffMax = min, max
		return nil
	}
}

// ElectStopMargin sets how long before the lease deadline a term whose
// lease is at risk ends (TermStopped with StopLostAtRisk; the term context
// is cancelled and the leadership closed): the term ends at the later of
// the AT_RISK instant and deadline - d. Default Config.StopMargin
// (krabka.lease.stop.margin.ms); at most Config.RiskMargin; 0 keeps the
// term until the leadership itself ends (EXPIRED at the deadline).
func ElectStopMargin(d time.Duration) ElectOption {
	return func(o *electOptions) error {
		if d < 0 {
			return WrapError(ErrInvalidArgument, nil, "ElectStopMargin(%v): must not be negative", d)
		}
		o.stopMargin = d
		return nil
	}
}

// ElectEligible sets whether the member starts as a candidate (default
// true). See Elector.SetEligible.
func ElectEligible(on bool) ElectOption {
	return func(o *electOptions) error { o.eligible = on; return nil }
}

// ElectManualRelease makes the elector wait, before it campaigns after a
// term, for Release of that term instead of for Next to take the term's
// TermStopped. A consumer that hands the events on (the C API posts them to
// a queue) releases a term once its host has processed the STOPPED event,
// so that the guarantee "no STARTED before the previous STOPPED was dealt
// with" holds end to end.
func ElectManualRelease() ElectOption {
	return func(o *electOptions) error { o.manualRelease = true; return nil }
}

// ElectAcquireOptions passes opts to every Acquire of the elector (term and
// member metadata).
func ElectAcquireOptions(opts ...AcquireOption) ElectOption {
	return func(o *electOptions) error {
		if err := CheckAcquireOptions(opts...); err != nil {
			return err
		}
		o.acquire = append(o.acquire, opts...)
		return nil
	}
}

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
	released uint64      // the last term whose TermStopped was taken
	relWake  chan struct{}

	queue  []TermEvent
	qWake  chan struct{} // closed and replaced when the queue grows or closes
	qClose bool
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

// Healthy reports whether the elector is doing its job, for a host's health
// endpoint (core/coord/healthz adapts it to net/http): nil while it
// campaigns or waits as a standby, while the member is withdrawn, and while
// it holds the role with its lease renewed on time; an error when the held
// lease is at risk (Leadership.AtRisk), before Run and after Run returned.
func (e *Elector) Healthy() error {
	e.mu.Lock()
	started, stopped, runErr, l := e.started, e.stopped, e.runErr, e.cur
	e.mu.Unlock()
	switch {
	case !started:
		return fmt.Errorf("krabka: elector %s/%s: not running (Run was not called)", e.role, e.member)
	case stopped && runErr != nil:
		return fmt.Errorf("krabka: elector %s/%s: stopped: %w", e.role, e.member, runErr)
	case stopped:
		return fmt.Errorf("krabka: elector %s/%s: stopped", e.role, e.member)
	case l != nil && l.AtRisk():
		lease := l.Lease()
		return fmt.Errorf("krabka: elector %s/%s: holding the role with its lease at risk: no renewal succeeded and the deadline is %d ms away",
			e.role, e.member, lease.Deadline-e.c.clock.NowMs())
	}
	return nil
}

// CallbackPanic is what RunWithCallbacks and Elect panic with after a
// callback panicked and the elector made sure no leadership is left
// running; it is also the Err of the TermStopped (StopResigned) of the
// term the panic ended.
type CallbackPanic struct {
	Callback string // "OnStarted", "OnStopped", "OnNewLeader", "OnAtRisk" or "OnRecovered"
	Value    any    // what the callback panicked with
	Stack    []byte // the callback's stack at the panic
}

func (p *CallbackPanic) Error() string {
	return fmt.Sprintf("krabka: elector callback %s panicked: %v", p.Callback, p.Value)
}

// Unwrap returns the panic value when it is an error.
func (p *CallbackPanic) Unwrap() error {
	if err, ok := p.Value.(error); ok {
		return err
	}
	return nil
}

// stopWith ends Run as if its context ended, with cause (a callback
// panicked).
func (e *Elector) stopWith(cause error) {
	e.mu.Lock()
	if e.stopErr == nil {
		e.stopErr = cause
	}
	cancel := e.cancel
	e.mu.Unlock()
	if cancel != nil {
		cancel(cause)
	}
}

// Run runs the election loop until ctx ends, then resigns a held role and
// returns nil once every term it started has stopped. It returns early
// with the error when the client is closed (ErrClosed), when the cluster
// refuses the member for good (ErrAuthorization, ErrUnsupported, ...), or,
// with ElectRecampaign(false), after the first lost term (its error).
// Failures that may pass (a broker down) never end it: Acquire rides
// through them. Events are queued for Next and C without bound; read them,
// because a new term waits until the last TermStopped was taken. Run may
// be called once.
func (e *Elector) Run(ctx context.Context) error {
	if ctx == nil {
		ctx = context.Background()
	}
	e.mu.Lock()
	if e.started {
		e.mu.Unlock()
		return WrapError(ErrInvalidArgument, nil, "Elector.Run of %s/%s was already called: an elector runs once", e.role, e.member)
	}
	e.started = true
	rctx, cancel := context.WithCancelCause(ctx)
	e.cancel = cancel
	if e.stopErr != nil {
		cancel(e.stopErr)
	}
	e.mu.Unlock()

	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		e.watchLeaders(rctx)
	}()
	err := e.loop(rctx)
	if ctx.Err() != nil && !isPanic(context.Cause(rctx)) {
		err = nil // the caller ended the election: the normal way to stop
	} else if p := context.Cause(rctx); isPanic(p) {
		err = p
	}
	cancel(nil)
	wg.Wait()
	e.bg.Wait()
	e.mu.Lock()
	e.stopped, e.runErr = true, err
	e.qClose = true
	close(e.qWake)
	e.qWake = make(chan struct{})
	e.wakeEligLocked()
	e.mu.Unlock()
	close(e.done)
	return err
}

func isPanic(err error) bool {
	var p *CallbackPanic
	return errors.As(err, &p)
}

// loop campaigns, runs terms and campaigns again.
func (e *Elector) loop(ctx context.Context) error {
	backoff := time.Duration(0)
	for {
		if err := e.waitEligible(ctx); err != nil {
			return err
		}
		l, err := e.campaign(ctx)
		if err != nil {
			return err
		}
		if l == nil {
			continue // withdrawn meanwhile
		}
		startedAt := e.c.clock.NowMs()
		n, reason, terr, withdrawn := e.runTerm(ctx, l)
		if err := e.waitReleased(ctx, n); err != nil {
			return err
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if e.c.checkOpen() != nil {
			return WrapError(ErrClosed, terr, "the client was closed")
		}
		if withdrawn {
			continue // SetEligible(false): waitEligible serves it
		}
		if !e.o.recampaign {
			return terr
		}
		switch {
		case backoff == 0 || core.SatSub(e.c.clock.NowMs(), startedAt) >= e.c.cfg.Lease.DurationMs:
			backoff = e.o.backoffMin
		default:
			backoff = min(2*backoff, e.o.backoffMax)
		}
		e.c.log().Info("krabka: elector: term lost; campaigning again", "role", e.role.String(), "member", e.member.String(),
			"term", n, "reason", reason.String(), "backoff_ms", backoff.Milliseconds())
		e.mu.Lock()
		elig := e.eligWake
		e.mu.Unlock()
		// A withdrawal during the backoff is served at once.
		if err := e.c.waitChange(ctx, elig, backoff); err != nil {
			return err
		}
	}
}

// waitEligible returns once the member is a candidate; while it is not, it
// serves every withdrawal (the member leaves the roster).
func (e *Elector) waitEligible(ctx context.Context) error {
	for {
		e.mu.Lock()
		on, gen, served, wake := e.eligible, e.eligGen, e.withdrawn, e.eligWake
		e.mu.Unlock()
		if on {
			return nil
		}
		if served < gen {
			e.withdraw(ctx, gen)
			continue
		}
		select {
		case <-wake:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// withdraw removes the member from the roster (a standby withdrawing, or a
// member withdrawn between terms) and marks gen served.
func (e *Elector) withdraw(ctx context.Context, gen uint64) {
	lctx, cancel := context.WithTimeout(ctx, e.c.cfg.RequestTimeout)
	err := e.c.Leave(lctx, e.role, e.member)
	cancel()
	if err != nil {
		e.c.log().Warn("krabka: elector: leaving the roster failed; the member keeps its place until a winner prunes it",
			"role", e.role.String(), "member", e.member.String(), "error", err)
	}
	e.served(gen, err)
}

func (e *Elector) served(gen uint64, err error) {
	e.mu.Lock()
	if gen > e.withdrawn {
		e.withdrawn, e.withdrawErr = gen, err
	}
	e.wakeEligLocked()
	e.mu.Unlock()
}

// campaign acquires the role, again after failures that may pass (Acquire
// rides through ErrTransport itself; a timeout of the transport's own, with
// a cut link, ends it). nil, nil: the member was withdrawn meanwhile. An
// error: ctx ended, or the acquire failed for good.
func (e *Elector) campaign(ctx context.Context) (*Leadership, error) {
	backoff := 50 * time.Millisecond
	for {
		l, err := e.campaignOnce(ctx)
		if err == nil || ctx.Err() != nil || !retriable(err) {
			return l, err
		}
		e.c.log().Warn("krabka: elector: campaign failed; retrying", "role", e.role.String(), "member", e.member.String(),
			"backoff_ms", backoff.Milliseconds(), "error", err)
		if err := e.c.sleep(ctx, backoff); err != nil {
			return nil, err
		}
		backoff = min(2*backoff, e.c.cfg.PollInterval)
	}
}

func (e *Elector) campaignOnce(ctx context.Context) (*Leadership, error) {
	actx, cancel := context.WithCancel(ctx)
	defer cancel()
	type result struct {
		l   *Leadership
		err error
	}
	res := make(chan result, 1)
	go func() {
		l, err := e.c.Acquire(actx, e.role, e.member, e.o.acquire...)
		res <- result{l, err}
	}()
	for {
		e.mu.Lock()
		wake := e.eligWake
		on := e.eligible
		e.mu.Unlock()
		if !on {
			cancel()
			r := <-res
			e.discard(ctx, r.l)
			return nil, nil // waitEligible leaves the roster
		}
		select {
		case r := <-res:
			if r.err != nil {
				if ctx.Err() != nil {
					return nil, ctx.Err()
				}
				return nil, r.err
			}
			if !e.Eligible() {
				e.discard(ctx, r.l)
				return nil, nil
			}
			return r.l, nil
		case <-wake:
		case <-ctx.Done():
			cancel()
			r := <-res
			e.discard(ctx, r.l)
			return nil, ctx.Err()
		}
	}
}

// discard resigns a leadership won when nobody wants it any more (the
// campaign was cancelled as it won); no term is announced.
func (e *Elector) discard(ctx context.Context, l *Leadership) {
	if l == nil {
		return
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), e.c.cfg.RequestTimeout)
	defer cancel()
	if err := l.Resign(rctx); err != nil {
		e.c.log().Warn("krabka: elector: resigning a role won as the campaign was cancelled failed", "role", e.role.String(), "error", err)
	}
	l.Close()
}

// runTerm runs one term of l and returns its number, how it ended, and
// whether it ended because the member was withdrawn.
func (e *Elector) runTerm(ctx context.Context, l *Leadership) (uint64, StopReason, error, bool) {
	e.mu.Lock()
	e.term++
	n := e.term
	e.cur = l
	elig := e.eligWake
	e.mu.Unlock()
	tctx, tcancel := context.WithCancelCause(ctx)
	defer tcancel(nil)
	if !e.c.cfg.BackgroundRenew {
		// The leadership's goroutines hold the client's wait group while it
		// is active (it was just won), so this Add cannot race with Close.
		e.c.wg.Add(1)
		go func() {
			defer e.c.wg.Done()
			l.renewLoop()
		}()
	}
	evCtx, evCancel := context.WithCancel(context.Background())
	defer evCancel()
	evs := l.Events(evCtx)
	tok := l.Token()
	ev := func(k TermEventKind, deadline time.Time) TermEvent {
		return TermEvent{Kind: k, Term: n, Token: tok, Holder: e.member, Deadline: deadline,
			At: time.UnixMilli(e.c.clock.NowMs()), Leadership: l, Context: tctx}
	}
	first := time.UnixMilli(l.Lease().Deadline)
	e.push(ev(TermStarted, first))
	stopLeases := e.followLeases(n, l, first)
	e.c.log().Info("krabka: elector: term started", "role", e.role.String(), "member", e.member.String(), "term", n, "token", tok.String())

	var (
		reason    StopReason
		err       error
		withdrawn bool
		stopAt    <-chan struct{}
		stopTimer context.CancelFunc = func() {}
	)
	defer func() { stopTimer() }()
	var rerr error // the resignation's error
	resign := func(why error) {
		tcancel(why)
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), e.c.cfg.RequestTimeout)
		rerr = l.Resign(rctx)
		cancel()
		if rerr != nil {
			e.c.log().Warn("krabka: elector: resign failed", "role", e.role.String(), "member", e.member.String(), "error", rerr)
		}
		reason, err = stopReason(l)
		if rerr == nil && reason != StopResigned {
			// The resignation was written, and the standby it let in was
			// quick: the view showed its lease (a fence) before the
			// leadership recorded the resignation. The term was resigned.
			reason, err = StopResigned, WrapError(ErrNotLeader, nil, "role %s was resigned", e.role)
		}
		if reason == StopResigned && why != nil {
			err = why
		}
	}
wait:
	for {
		select {
		case lev, ok := <-evs:
			if !ok {
				reason, err = stopReason(l)
				break wait
			}
			switch lev.Kind {
			case LeadershipAtRisk:
				e.push(ev(TermAtRisk, lev.Deadline))
				if e.o.stopMargin > 0 {
					stopTimer()
					stopAt, stopTimer = e.after(tctx, lev.Deadline.Add(-e.o.stopMargin))
				}
			case LeadershipRecovered:
				stopTimer()
				stopAt = nil
				e.push(ev(TermRecovered, lev.Deadline))
			case LeadershipEnded:
				reason, err = stopReason(l)
				break wait
			}
		case <-stopAt:
			dl := l.Lease().Deadline
			reason = StopLostAtRisk
			err = WrapError(ErrLeaseExpired, nil,
				"role %s: lease at risk: no renewal succeeded, and the elector ended term %d %d ms before the lease deadline %d",
				e.role, n, dl-e.c.clock.NowMs(), dl)
			tcancel(err)
			// The link is presumably gone: no resignation to wait for. The
			// leadership is Closed at once; releasing its producer can take
			// up to request.timeout.ms with a cut link, and Run waits for
			// that only when it returns.
			e.bg.Add(1)
			go func() {
				defer e.bg.Done()
				l.Close()
			}()
			<-l.Done()
			if l.State() != Closed {
				reason, err = stopReason(l) // it ended by itself just before
			}
			break wait
		case <-elig:
			e.mu.Lock()
			on := e.eligible
			elig = e.eligWake
			e.mu.Unlock()
			if !on {
				withdrawn = true
				resign(nil)
				break wait
			}
		case <-ctx.Done():
			cause := context.Cause(ctx)
			if !isPanic(cause) {
				cause = nil
			}
			resign(cause)
			break wait
		}
	}
	tcancel(err)
	e.mu.Lock()
	e.cur = nil
	e.mu.Unlock()
	stopLeases()
	stop := ev(TermStopped, time.UnixMilli(l.Lease().Deadline))
	stop.Reason, stop.Err = reason, err
	e.push(stop)
	e.c.log().Info("krabka: elector: term stopped", "role", e.role.String(), "member", e.member.String(), "term", n,
		"reason", reason.String(), "error", err)
	if withdrawn {
		// The resignation removed the registration: the withdrawal that
		// stopped this term is served.
		e.mu.Lock()
		gen, off := e.eligGen, !e.eligible
		e.mu.Unlock()
		if off {
			e.served(gen, rerr)
		}
	}
	return n, reason, err, withdrawn
}

// stopReason maps how l ended to a StopReason.
func stopReason(l *Leadership) (StopReason, error) {
	switch l.State() {
	case Fenced:
		return StopFenced, l.Err()
	case Expired:
		return StopExpired, l.Err()
	case Resigned:
		return StopResigned, l.Err()
	}
	return StopClosed, l.Err()
}

// after returns a channel closed at the instant at (the client's clock),
// unless ctx ends or stop is called first.
func (e *Elector) after(parent context.Context, at time.Time) (<-chan struct{}, context.CancelFunc) {
	ctx, stop := context.WithCancel(parent)
	ch := make(chan struct{})
	go func() {
		d := time.Duration(at.UnixMilli()-e.c.clock.NowMs()) * time.Millisecond
		if d <= 0 || e.c.clock.Sleep(ctx, d) == nil {
			if ctx.Err() == nil {
				close(ch)
			}
		}
	}()
	return ch, stop
}

// waitReleased waits until term n's TermStopped was taken.
func (e *Elector) waitReleased(ctx context.Context, n uint64) error {
	for {
		e.mu.Lock()
		done, wake := e.released >= n, e.relWake
		e.mu.Unlock()
		if done {
			return nil
		}
		select {
		case <-wake:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// Release tells an elector built with ElectManualRelease that the consumer
// is done with term n (it processed the term's TermStopped): Run may
// campaign again. Releasing a term releases the earlier ones; a term not
// yet stopped is released in advance. Idempotent, never blocks.
func (e *Elector) Release(n uint64) { e.release(n) }

// release marks term n's TermStopped as taken.
func (e *Elector) release(n uint64) {
	e.mu.Lock()
	if n > e.released {
		e.released = n
		close(e.relWake)
		e.relWake = make(chan struct{})
	}
	e.mu.Unlock()
}

// watchLeaders turns the role's holder changes into TermNewLeader events,
// watching again after a watch failed for a reason that may pass.
func (e *Elector) watchLeaders(ctx context.Context) {
	backoff := 50 * time.Millisecond
	for ctx.Err() == nil {
		w, err := e.c.Watch(ctx, e.role)
		if err != nil {
			if ctx.Err() != nil || !retriable(err) {
				if ctx.Err() == nil && !errors.Is(err, ErrClosed) {
					e.c.log().Warn("krabka: elector: watching the role failed; no NEW_LEADER events", "role", e.role.String(), "error", err)
				}
				return
			}
			if e.c.sleep(ctx, backoff) != nil {
				return
			}
			backoff = min(2*backoff, e.c.cfg.PollInterval)
			continue
		}
		backoff = 50 * time.Millisecond
		for {
			ev, err := w.Next(ctx)
			if err != nil {
				break
			}
			if ev.Kind != EventHolderChanged || !ev.HasHolder {
				continue
			}
			e.mu.Lock()
			dup := ev.Holder == e.lastHolder && ev.Token == e.lastToken
			e.lastHolder, e.lastToken = ev.Holder, ev.Token
			e.mu.Unlock()
			if dup {
				continue
			}
			te := TermEvent{Kind: TermNewLeader, Holder: ev.Holder, Token: ev.Token, At: ev.At}
			if ev.Lease != nil {
				te.Deadline = time.UnixMilli(ev.Lease.Deadline)
			}
			e.push(te)
		}
		w.Close()
	}
}

func (e *Elector) push(ev TermEvent) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.qClose {
		return
	}
	e.queue = append(e.queue, ev)
	close(e.qWake)
	e.qWake = make(chan struct{})
}

// Next returns the next event, blocking until there is one, ctx ends (its
// error; ErrTimeout on a deadline) or Run has returned and every event was
// taken (ErrClosed). Taking a TermStopped lets Run campaign again (see
// Elector). Use Next or C, not both; not with RunWithCallbacks.
func (e *Elector) Next(ctx context.Context) (TermEvent, error) {
	if ctx == nil {
		ctx = context.Background()
	}
	for {
		e.mu.Lock()
		if len(e.queue) > 0 {
			ev := e.queue[0]
			e.queue[0] = TermEvent{}
			e.queue = e.queue[1:]
			manual := e.o.manualRelease
			e.mu.Unlock()
			if ev.Kind == TermStopped && !manual {
				e.release(ev.Term)
			}
			return ev, nil
		}
		closed, wake := e.qClose, e.qWake
		e.mu.Unlock()
		if closed {
			return TermEvent{}, WrapError(ErrClosed, nil, "the elector of %s/%s has stopped", e.role, e.member)
		}
		select {
		case <-wake:
		case <-ctx.Done():
			return TermEvent{}, e.c.fail(ctx, ctx.Err())
		}
	}
}

// C returns a channel carrying the events of Next; it is closed once Run
// returned and every event was delivered. Use Next or C, not both.
func (e *Elector) C() <-chan TermEvent {
	e.chOnce.Do(func() {
		e.ch = make(chan TermEvent)
		go func() {
			defer close(e.ch)
			for {
				ev, err := e.Next(context.Background())
				if err != nil {
					return
				}
				e.ch <- ev
			}
		}()
	})
	return e.ch
}

// Callbacks are the functions RunWithCallbacks and Elect call. OnStarted is
// required; the others may be nil.
//
// OnStarted runs in a goroutine of its own for the whole term, like
// client-go's OnStartedLeading: do the term's work there (guarded writes
// through l) and return once ctx is done. The other callbacks run one at a
// time on RunWithCallbacks's goroutine, in event order, possibly while
// OnStarted runs. OnStopped is called exactly once after every OnStarted,
// only after that OnStarted returned, and the next OnStarted is called (and
// the next term campaigned for) only after OnStopped returned.
//
// A panic in a callback is recovered; the elector stops (a held role is
// resigned, OnStopped is called for a started term with StopResigned and
// the *CallbackPanic), and RunWithCallbacks then panics with that
// *CallbackPanic on its own goroutine, so that a panic never leaves a
// leadership running. No callback but the pairing OnStopped runs after a
// panic.
type Callbacks struct {
	OnStarted   func(ctx context.Context, l *Leadership)
	OnStopped   func(reason StopReason, err error)
	OnNewLeader func(holder core.MemberID, token core.FencingToken)
	OnAtRisk    func(deadline time.Time)
	OnRecovered func(deadline time.Time)
}

// Elect runs an elector of member for role with callbacks until ctx ends
// (the counterpart of client-go's leaderelection.RunOrDie): NewElector and
// RunWithCallbacks. It returns what Run returns; see Callbacks for the
// guarantees and the handling of panics.
func Elect(ctx context.Context, c *Client, role core.Role, member core.MemberID, cb Callbacks, opts ...ElectOption) error {
	e, err := NewElector(c, role, member, opts...)
	if err != nil {
		return err
	}
	return e.RunWithCallbacks(ctx, cb)
}

// RunWithCallbacks is Run delivering the events to cb instead of Next and
// C (see Callbacks). It returns once Run returned and every callback due
// was called.
func (e *Elector) RunWithCallbacks(ctx context.Context, cb Callbacks) error {
	if cb.OnStarted == nil {
		return WrapError(ErrInvalidArgument, nil, "RunWithCallbacks: Callbacks.OnStarted is required")
	}
	e.mu.Lock()
	if e.started {
		e.mu.Unlock()
		return WrapError(ErrInvalidArgument, nil, "Elector.Run of %s/%s was already called: an elector runs once", e.role, e.member)
	}
	e.o.manualRelease = true
	e.mu.Unlock()

	runErr := make(chan error, 1)
	go func() { runErr <- e.Run(ctx) }()

	var (
		first  *CallbackPanic
		open   uint64        // the term whose OnStarted was called and OnStopped not yet
		opened chan struct{} // closed when that OnStarted returned
		panics = make(chan *CallbackPanic, 1)
	)
	call := func(name string, f func()) (p *CallbackPanic) {
		defer func() {
			if r := recover(); r != nil {
				p = &CallbackPanic{Callback: name, Value: r, Stack: debug.Stack()}
			}
		}()
		f()
		return nil
	}
	panicked := func(p *CallbackPanic) {
		if p != nil && first == nil {
			first = p
			e.c.log().Error("krabka: elector: a callback panicked; resigning and stopping", "role", e.role.String(),
				"member", e.member.String(), "callback", p.Callback, "panic", fmt.Sprint(p.Value))
			e.stopWith(p)
		}
	}
	events := e.C()
	for {
		var ev TermEvent
		select {
		case p := <-panics:
			panicked(p)
			continue
		case x, ok := <-events:
			if !ok {
				err := <-runErr
				if first != nil {
					panic(first)
				}
				return err
			}
			ev = x
		}
		switch ev.Kind {
		case TermStarted:
			if first != nil {
				// Stopping after a panic: the term is not announced, and
				// neither is its end.
				continue
			}
			open, opened = ev.Term, make(chan struct{})
			done, tctx, l := opened, ev.Context, ev.Leadership
			go func() {
				defer close(done)
				if p := call("OnStarted", func() { cb.OnStarted(tctx, l) }); p != nil {
					panics <- p
				}
			}()
		case TermStopped:
			if ev.Term == open {
				<-opened
				select {
				case p := <-panics:
					panicked(p)
				default:
				}
				if cb.OnStopped != nil {
					panicked(call("OnStopped", func() { cb.OnStopped(ev.Reason, ev.Err) }))
				}
				open, opened = 0, nil
			}
			e.release(ev.Term)
		case TermNewLeader:
			if first == nil && cb.OnNewLeader != nil {
				panicked(call("OnNewLeader", func() { cb.OnNewLeader(ev.Holder, ev.Token) }))
			}
		case TermAtRisk:
			if first == nil && cb.OnAtRisk != nil && ev.Term == open {
				panicked(call("OnAtRisk", func() { cb.OnAtRisk(ev.Deadline) }))
			}
		case TermRecovered:
			if first == nil && cb.OnRecovered != nil && ev.Term == open {
				panicked(call("OnRecovered", func() { cb.OnRecovered(ev.Deadline) }))
			}
		}
	}
}
