package coord

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/krabka/krabka-coord/core"
)

// Run runs the election loop until ctx ends, then resigns a held role and
// returns nil once every term it started has stopped. It returns early
// with the error when the client is closed (ErrClosed), when the cluster
// refuses the member for good (ErrAuthorization, ErrUnsupported, ...), or,
// with ElectRecampaign(false), after the first lost term (its error).
// Failures that may pass (a broker down) never end it: Acquire rides
// through them. Events are queued for Next and C without bound; read them,
// because a new term waits until the last TermStopped was taken. Run may
// be called once (or Start). The last event is TermElectorStopped.
func (e *Elector) Run(ctx context.Context) error {
	if ctx == nil {
		ctx = context.Background()
	}
	rctx, cancel, err := e.begin(ctx)
	if err != nil {
		return err
	}
	return e.run(ctx, rctx, cancel)
}

// Start is Run on a goroutine of its own: it returns at once, with the
// loop counted as running (State is no longer ElectorNotStarted), or with
// the error Run would return at once (a second Run or Start). Done is
// closed when the loop ended; Err says why, and the last event
// (TermElectorStopped) carries what Run returned.
func (e *Elector) Start(ctx context.Context) error {
	if ctx == nil {
		ctx = context.Background()
	}
	rctx, cancel, err := e.begin(ctx)
	if err != nil {
		return err
	}
	go e.run(ctx, rctx, cancel)
	return nil
}

// begin marks the elector started and returns the loop's context.
func (e *Elector) begin(ctx context.Context) (context.Context, context.CancelCauseFunc, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.started {
		return nil, nil, WrapError(ErrInvalidArgument, nil, "Elector.Run of %s/%s was already called: an elector runs once", e.role, e.member)
	}
	e.started = true
	rctx, cancel := context.WithCancelCause(ctx)
	e.cancel = cancel
	if e.stopErr != nil {
		cancel(e.stopErr)
	}
	return rctx, cancel, nil
}

// run is Run after begin.
func (e *Elector) run(ctx, rctx context.Context, cancel context.CancelCauseFunc) error {
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
	end := err
	if end == nil {
		end = context.Cause(ctx)
	}
	cancel(nil)
	wg.Wait()
	e.bg.Wait()
	e.mu.Lock()
	e.stopped, e.runErr = true, err
	if end != nil {
		e.endErr = fmt.Errorf("%w: %s/%s: %w", ElectorStopped, e.role, e.member, end)
	} else {
		e.endErr = fmt.Errorf("%w: %s/%s", ElectorStopped, e.role, e.member)
	}
	if !e.qClose {
		// The last event, queued with the state already STOPPED.
		e.queue = append(e.queue, TermEvent{Kind: TermElectorStopped, Term: e.term, Holder: e.member,
			Err: err, At: time.UnixMilli(e.c.clock.NowMs())})
	}
	e.qClose = true
	close(e.qWake)
	e.qWake = make(chan struct{})
	e.wakeEligLocked()
	e.mu.Unlock()
	close(e.done)
	if e.sink != nil {
		e.sink()
	}
	return err
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
	// Parked while another member holds the role: no goroutine waits in
	// Acquire for it (issue 35).
	if err := e.c.acquireParked(actx, e.role, e.member, e.o.acquire, func(l *Leadership, err error) {
		res <- result{l, err}
	}); err != nil {
		return nil, err
	}
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
	ride := e.o.rideOutage > 0
	if ride {
		l.rideOutage()
	}
	l.startRenewer()     // already on with krabka.renew.background
	evs := l.subscribe() // no goroutine per term: the loop below drains it
	defer l.unsubscribe(evs)
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
		case <-evs.wake:
			lev, ok := evs.pop()
			if !ok {
				continue
			}
			signal(evs.wake) // the next one (if any) in the next pass
			switch lev.Kind {
			case LeadershipAtRisk:
				e.push(ev(TermAtRisk, lev.Deadline))
				if e.o.stopMargin > 0 || ride {
					stopTimer()
					stopAt, stopTimer = e.after(tctx, lev.Deadline.Add(-e.o.stopMargin))
				}
			case LeadershipRecovered:
				stopTimer()
				stopAt = nil
				e.mu.Lock()
				resumed := e.suspend
				e.suspend = false
				e.mu.Unlock()
				e.push(ev(TermRecovered, lev.Deadline))
				if resumed {
					e.c.log().Warn("krabka: elector: the cluster answers again and the suspended term renewed its lease: resumed under the same token",
						"role", e.role.String(), "member", e.member.String(), "term", n, "token", l.Token().String())
				}
			case LeadershipEnded:
				reason, err = stopReason(l)
				break wait
			}
		case <-stopAt:
			if ride {
				// Ride the outage out: the leadership keeps renewing past
				// its deadline (outage.go); the host stops dispatching.
				stopAt = nil
				e.mu.Lock()
				e.suspend = true
				e.mu.Unlock()
				dl := l.Lease().Deadline
				e.push(ev(TermSuspended, time.UnixMilli(dl)))
				e.c.log().Warn("krabka: elector: no renewal succeeded and no broker answers: term suspended until the cluster answers",
					"role", e.role.String(), "member", e.member.String(), "term", n, "token", tok.String(), "deadline_in_ms", dl-e.c.clock.NowMs())
				continue
			}
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
	e.cur, e.suspend = nil, false
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
// unless ctx ends or stop is called first. A call scheduled on the clock
// (core.AfterFunc): no goroutine waits for the instant.
func (e *Elector) after(parent context.Context, at time.Time) (<-chan struct{}, context.CancelFunc) {
	ctx, stop := context.WithCancel(parent)
	ch := make(chan struct{})
	d := time.Duration(at.UnixMilli()-e.c.clock.NowMs()) * time.Millisecond
	t := core.AfterFunc(e.c.clock, d, func() {
		if ctx.Err() == nil {
			close(ch)
		}
	})
	return ch, func() { t.Stop(); stop() }
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

// watchLeaders turns the role's holder changes into TermNewLeader events
// without a goroutine: once the role's view holds everything committed
// before the watch began (retried while that fails for a reason that may
// pass), a leaderWatch is registered with the view, whose follower calls it
// back after folding a record of the role. It returns once the watch is
// registered or ctx ended; the watch is removed when ctx ends.
func (e *Elector) watchLeaders(ctx context.Context) {
	backoff := 50 * time.Millisecond
	for ctx.Err() == nil {
		v, role, err := e.syncedView(ctx)
		if err == nil {
			lw := &leaderWatch{e: e, v: v, role: role}
			v.watch(role, lw)
			context.AfterFunc(ctx, func() {
				v.unwatch(role, lw)
				v.release()
			})
			return
		}
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
	}
}

// syncedView returns the live view of the role's partition (the caller
// releases it) once it holds everything committed before the call.
func (e *Elector) syncedView(ctx context.Context) (*partView, wireRole, error) {
	role, err := e.c.wire(e.role)
	if err != nil {
		return nil, role, err
	}
	cctx, cancel := e.c.callCtx(ctx)
	defer cancel()
	p, err := e.c.partition(cctx, role)
	if err != nil {
		return nil, role, e.c.fail(cctx, err)
	}
	v, err := e.c.follow(p)
	if err != nil {
		return nil, role, err
	}
	if err := v.sync(cctx, role); err != nil {
		v.release()
		return nil, role, e.c.fail(cctx, err)
	}
	// A role the client reads: Stats lists it, with its view lag.
	e.c.stats.role(role)
	return v, role, nil
}

// leaderWatch is an elector's watch of its role's holder on the view
// (watchLeaders): each new holder or token of the role's lease is one
// TermNewLeader.
type leaderWatch struct {
	e    *Elector
	v    *partView
	role wireRole
	mu   sync.Mutex // one check at a time: the events keep the view's order
}

func (lw *leaderWatch) checkView() {
	lw.mu.Lock()
	defer lw.mu.Unlock()
	l := lw.v.lease(lw.role)
	if l == nil {
		return
	}
	e := lw.e
	e.mu.Lock()
	dup := l.Member == e.lastHolder && l.Token == e.lastToken
	e.lastHolder, e.lastToken = l.Member, l.Token
	e.mu.Unlock()
	if dup {
		return
	}
	e.push(TermEvent{Kind: TermNewLeader, Holder: l.Member, Token: l.Token, At: time.UnixMilli(e.c.clock.NowMs()),
		Deadline: time.UnixMilli(l.Deadline)})
}
