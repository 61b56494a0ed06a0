package coord

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/krabka/krabka-coord/core"
)

// One Acquire as a state machine (issue 35, item 3: a waiting standby
// costs no goroutine). acqRun holds what the acquire loop keeps between
// its steps; step runs the loop until it must wait and says for what: the
// role's next record, an instant, or both. Acquire and TryAcquire wait in
// their caller's goroutine (block). AcquireEach parks a waiting run
// instead (drive): the run sits in its view's table of parked runs and
// on a timer of the client's clock, and whichever comes first (a record
// of the role folded, the instant, the call's context ending) starts one
// goroutine that steps it again. A standby waiting behind a live lease is
// then a few hundred bytes of state and no goroutine.

// acqRun is one acquisition in progress.
type acqRun struct {
	c      *Client
	name   core.Role
	role   wireRole
	member core.MemberID
	try    bool
	o      acquireOptions
	ctx    context.Context // the call's context merged with the client's (callCtx)
	rt     rideThrough

	p         int32
	v         *partView // nil until the partition is known and followed
	prepared  bool      // the transport was asked to Prepare the role
	lazy      bool      // prepare nothing (AcquireEach on a Warmer transport)
	regOffset int64     // offset of this run's latest registration (-1 none)
	synced    bool      // the view reached the stable offset listed since the last decision to act

	// Parked (drive): guarded by mu.
	mu     sync.Mutex
	parked bool
	timer  core.Timer
	cause  error                          // the wait's retried transport error (acqStep.cause)
	done   func(l *Leadership, err error) // drive's result; called once
}

// acqStep is what a step ended with: the result (done), or a wait.
type acqStep struct {
	done bool
	l    *Leadership
	at   int64 // TryAcquire: when the answer can change
	err  error

	// A wait: until the role's next record (onRecord; next is the view's
	// next offset the decision was made at) or for d, whichever is first.
	onRecord bool
	next     int64
	d        time.Duration
	cause    error // a retried transport error: reported if the context ends in the wait
}

// newAcqRun builds a run of name for member (checked by the caller:
// checkNames) within ctx.
func newAcqRun(c *Client, ctx context.Context, name core.Role, member core.MemberID, try bool, o acquireOptions) (*acqRun, error) {
	role, err := c.wire(name)
	if err != nil {
		return nil, err
	}
	a := &acqRun{c: c, name: name, role: role, member: member, try: try, o: o, ctx: ctx, regOffset: -1}
	a.rt = rideThrough{c: c, role: role, try: try, ride: o.rideOutage}
	return a, nil
}

func (a *acqRun) result(l *Leadership, at int64, err error) acqStep {
	return acqStep{done: true, l: l, at: at, err: err}
}

// failed ends the run with err as the caller sees it.
func (a *acqRun) failed(err error) acqStep { return a.result(nil, 0, a.c.fail(a.ctx, err)) }

// waitRecord waits for the role's next record after next, for at most d.
func waitRecord(next int64, d time.Duration) acqStep {
	return acqStep{onRecord: true, next: next, d: d}
}

// transient returns the wait before the next step after err when err may
// pass (rideThrough), else the run's end.
func (a *acqRun) transient(err error) acqStep {
	if d, ok := a.rt.retry(a.ctx, err); ok {
		return acqStep{d: d, cause: err}
	}
	return a.failed(err)
}

// close lets go of what the run took (its view, the prepared producer).
func (a *acqRun) close() {
	if a.prepared {
		a.c.t.(Preparer).Unprepare(a.role.txnID())
		a.prepared = false
	}
	if a.v != nil {
		a.v.release()
		a.v = nil
	}
}

// step runs the acquire loop (docs/PROTOCOL.md sections 6 and 10) until it
// has a result or must wait.
func (a *acqRun) step() acqStep {
	c, role, member, cctx := a.c, a.role, a.member, a.ctx
	if a.v == nil {
		p, err := c.partition(cctx, role)
		var v *partView
		if err == nil {
			v, err = c.follow(p)
		}
		if err != nil {
			return a.transient(err)
		}
		a.p, a.v = p, v
		if pr, ok := c.t.(Preparer); ok && !a.try && !a.lazy {
			pr.Prepare(role.txnID(), c.cfg.LeaseTxnTimeout())
			a.prepared = true
		}
	}
	v, p := a.v, a.p
	poll := c.cfg.PollInterval
	for {
		if !a.synced {
			if err := v.sync(cctx, role); err != nil {
				return a.transient(err)
			}
			a.synced = true
			a.rt.ok()
		}
		st, next := v.peek(role)
		now := c.clock.NowMs()
		d := core.Evaluate(st, member, now, c.cfg.Lease)
		switch d.Kind {
		case core.NotRegistered:
			if a.regOffset >= 0 && next <= a.regOffset {
				// The view has not reached this run's registration yet.
				if a.try {
					return a.result(nil, core.SatAdd(now, poll.Milliseconds()), nil)
				}
				return waitRecord(next, poll)
			}
			if a.regOffset >= 0 {
				c.log().Info("krabka: registration was removed (pruned by a winner); registering again at the tail",
					"role", role.String(), "member", member.String())
			}
			reg := core.Registration{Member: member, RegisteredAt: now}
			off, err := c.t.Append(cctx, p, role.registrationKey(member), core.EncodeRegistration(reg), a.o.registrationHeaders())
			if err != nil {
				return a.transient(err)
			}
			a.regOffset = off
			a.synced = false // decide on a view that holds the registration
			c.joinedRole(role, member)
			c.log().Debug("krabka: registered", "role", role.String(), "member", member.String(), "partition", p, "offset", off)
		case core.Wait:
			c.joinedRole(role, member)
			if a.try {
				return a.result(nil, d.WaitUntil, nil)
			}
			// Until the WAIT instant or the role's next record, whichever
			// is first: every record of the role ends this wait, so
			// re-reading on a poll would only repeat the same decision
			// (at 10,000 waiting roles, 10,000 wake-ups a second). The
			// bound, the larger of the poll and the renew interval, only
			// covers a wall clock that steps while the timer runs on the
			// monotonic clock; a live holder's renewal ends the wait
			// before it.
			wait := time.Duration(core.SatSub(d.WaitUntil, now)) * time.Millisecond
			if bound := max(poll, time.Duration(c.cfg.Lease.RenewIntervalMs)*time.Millisecond); wait > bound {
				wait = bound
			}
			return waitRecord(next, wait)
		case core.Hold, core.Challenge:
			if !a.synced {
				continue
			}
			a.synced = false // the next decision to act needs a fresh sync
			// Act only on a view that holds everything committed before now.
			if err := v.sync(cctx, role); err != nil {
				return a.transient(err)
			}
			st, next = v.peek(role)
			now = c.clock.NowMs()
			if d2 := core.Evaluate(st, member, now, c.cfg.Lease); d2.Kind != core.Hold && d2.Kind != core.Challenge {
				a.synced = true
				continue
			} else if until := a.rt.holdOff(st, member, now); d2.Kind == core.Challenge && until > now {
				// Back from an outage: the holder gets its lease (outage.go).
				if a.try {
					return a.result(nil, until, nil)
				}
				return waitRecord(next, min(poll, time.Duration(until-now)*time.Millisecond))
			} else if dl, open := v.openLease(role, member); d2.Kind == core.Challenge && open && dl > now {
				// A lease of the role in a transaction whose marker did not
				// reach the view within sync's wait: its holder may have
				// committed it already (a marker late to this view, a loaded
				// follower), so it counts until its deadline; abandoned, the
				// mint after that aborts it (docs/PROTOCOL.md 12.1).
				if a.try {
					return a.result(nil, dl, nil)
				}
				return waitRecord(next, min(poll, time.Duration(dl-now)*time.Millisecond))
			}
			l, err := c.challenge(cctx, role, member, p, st, now, a.o.meta)
			c.stats.role(role).challenge(member, st.Lease, err)
			if err == nil {
				return a.result(l, 0, nil)
			}
			if !errors.Is(err, ErrFenced) {
				return a.transient(err)
			}
			// A competitor minted after us: back off until its lease shows
			// (or the smaller of the poll interval and the stagger passes).
			back := poll
			if s := time.Duration(c.cfg.Lease.ChallengeStaggerMs) * time.Millisecond; s < back {
				back = s
			}
			if a.try {
				return a.result(nil, core.SatAdd(c.clock.NowMs(), back.Milliseconds()), nil)
			}
			return waitRecord(next, back)
		}
	}
}

// block runs the acquisition in the caller's goroutine.
func (a *acqRun) block() (*Leadership, int64, error) {
	defer a.close()
	for {
		s := a.step()
		if s.done {
			return s.l, s.at, s.err
		}
		var ch <-chan struct{}
		if s.onRecord {
			ch = a.v.waiter(a.role, s.next)
		}
		if err := a.c.waitChange(a.ctx, ch, s.d); err != nil {
			if s.cause != nil && !errors.Is(err, ErrClosed) {
				err = s.cause // the last reason, as a timeout's cause
			}
			return nil, 0, a.c.fail(a.ctx, err)
		}
	}
}

// drive runs the acquisition without holding a goroutine while it waits:
// it steps until the run must wait, then parks it (resume steps it again).
// done receives the result, once, from whichever goroutine ended the run.
func (a *acqRun) drive() {
	for {
		if err := a.ctx.Err(); err != nil {
			if a.cause != nil && a.c.root.Err() == nil {
				err = a.cause // the last reason, as a timeout's cause
			}
			a.finish(a.result(nil, 0, a.c.fail(a.ctx, err)))
			return
		}
		s := a.step()
		if s.done {
			a.finish(s)
			return
		}
		if a.park(s) {
			return
		}
	}
}

// park parks a after step s asked it to wait; false when the wait is over
// already (a record of the partition was folded since the decision).
func (a *acqRun) park(s acqStep) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.ctx.Err() != nil {
		return false // drive ends it (the context's AfterFunc may have passed it already)
	}
	if s.onRecord && !a.v.park(a.role, s.next, a) {
		return false
	}
	a.parked, a.cause = true, s.cause
	d := s.d
	if d <= 0 {
		d = time.Millisecond
	}
	a.timer = core.AfterFunc(a.c.clock, d, a.resume)
	return true
}

// resume steps a parked run again (a record of its role, its instant, or
// its context ending); the first of them does, the others find it running.
func (a *acqRun) resume() {
	a.mu.Lock()
	if !a.parked {
		a.mu.Unlock()
		return
	}
	a.parked = false
	if a.timer != nil {
		a.timer.Stop()
		a.timer = nil
	}
	a.mu.Unlock()
	if a.v != nil { // nil: parked for a retry before the partition was followed
		a.v.unpark(a.role, a)
	}
	a.c.steps.run(a)
}

// acquireParked starts an acquisition of name for member that parks while
// it waits (AcquireEach's form, for one role: no goroutine while another
// member's lease lives) and calls done once with the result, from a
// goroutine of the library; done must not block. Bad input and a closed
// client are returned at once (done is not called). The role is prepared
// in the transport as Acquire's is (the elector's campaigns).
func (c *Client) acquireParked(ctx context.Context, name core.Role, member core.MemberID, opts []AcquireOption, done func(*Leadership, error)) error {
	if err := checkNames(name, &member); err != nil {
		return err
	}
	o, err := acquireOpts(opts)
	if err != nil {
		return err
	}
	cctx, cancel := c.callCtx(ctx)
	a, err := newAcqRun(c, cctx, name, member, false, o)
	if err == nil {
		err = c.checkOpen()
	}
	if err != nil {
		cancel()
		return err
	}
	stop := context.AfterFunc(cctx, a.resume) // the context ending resumes a parked run, which ends
	a.done = func(l *Leadership, err error) {
		stop()
		cancel()
		done(l, err)
	}
	c.steps.run(a)
	return nil
}

// maxStepping bounds the parked acquisitions of a client that step at
// once, each in a goroutine of its own; the others wait their turn in the
// client's stepQueue, in the order they became ready. A step is a few
// round trips (a stable offset, a registration, a mint and a lease
// transaction); the bound keeps the goroutines of a client that starts or
// wakes 10,000 acquisitions at once at a few hundred. Without it, every
// one of them ran at once, and the Go runtime keeps every goroutine
// structure it ever made: a standby of 10,000 roles kept 3 to 5 KiB a
// role of dead goroutines (bench/scale, KRABKA_SCALE_HEAP). With 64 or
// 1,024 the standby kept 1.65 and 1.72 KiB a role (2-minute and 1-minute
// windows); 256 leaves room for the takeover of many roles whose leases
// end together, each step waiting on the network most of its time.
const maxStepping = 256

// stepQueue runs acquisitions' steps (drive), at most maxStepping at once.
type stepQueue struct {
	mu      sync.Mutex
	running int
	ready   []*acqRun // waiting for a goroutine, first come first
	head    int       // ready[head:] are waiting
}

// run steps a now, or when one of the goroutines stepping is free.
func (q *stepQueue) run(a *acqRun) {
	q.mu.Lock()
	if q.running >= maxStepping {
		q.ready = append(q.ready, a)
		q.mu.Unlock()
		return
	}
	q.running++
	q.mu.Unlock()
	go q.loop(a)
}

// loop steps a, then every acquisition that became ready meanwhile.
func (q *stepQueue) loop(a *acqRun) {
	for a != nil {
		a.drive()
		a = q.next()
	}
}

// next takes the first ready acquisition, or gives the goroutine back.
func (q *stepQueue) next() *acqRun {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.head == len(q.ready) {
		q.ready, q.head = q.ready[:0], 0
		if cap(q.ready) > 4*maxStepping {
			q.ready = nil // a burst is over: let its backing array go
		}
		q.running--
		return nil
	}
	a := q.ready[q.head]
	q.ready[q.head] = nil
	q.head++
	if q.head >= 1024 && 2*q.head >= len(q.ready) {
		// Still busy: drop what was taken from the front.
		n := copy(q.ready, q.ready[q.head:])
		clear(q.ready[n:])
		q.ready, q.head = q.ready[:n], 0
	}
	return a
}

func (a *acqRun) finish(s acqStep) {
	a.close()
	a.done(s.l, s.err)
}
