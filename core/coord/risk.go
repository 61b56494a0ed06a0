package coord

import (
	"context"
	"sync"
	"time"

	"github.com/krabka/krabka-coord/core"
)

// Lease at risk. A held lease is at risk when its deadline is within the
// risk margin (krabka.lease.risk.margin.ms, Config.RiskMargin) and no
// renewal has succeeded since it fell due: renewals failed, are still in
// flight (a cut link leaves them hanging until the deadline), or were not
// attempted. The margin is below krabka.lease.ms - krabka.renew.interval.ms,
// so a lease is never at risk before it fell due for renewal. It recovers
// when a renewal succeeds again. Being at risk ends nothing by itself: it is
// the warning that comes before EXPIRED (or before a standby takes over),
// early enough to stop work while the lease still holds.

// LeadershipEventKind says what a LeadershipEvent reports.
//
//krabka:enum krabka_lease_event_kind_t prefix=Leadership
type LeadershipEventKind int

// The kinds of leadership events.
const (
	// LeadershipAtRisk: the deadline is within the risk margin and no
	// renewal succeeded since the lease fell due.
	LeadershipAtRisk LeadershipEventKind = iota + 1
	// LeadershipRecovered: a renewal succeeded after LeadershipAtRisk.
	LeadershipRecovered
	// LeadershipEnded: the leadership ended (State and Err say how). The
	// last event of every subscription that was not cancelled.
	LeadershipEnded
)

// LeadershipEvent is one event of Leadership.Events.
type LeadershipEvent struct {
	Kind LeadershipEventKind
	// Deadline: AT_RISK, the deadline of the lease at risk; RECOVERED, the
	// deadline of the lease the renewal wrote; ENDED, the deadline of the
	// last lease written.
	Deadline time.Time
	// At is when the leadership observed the change (the client's clock).
	At time.Time
	// State and Err: ENDED only, how the leadership ended (Leadership.State
	// and Leadership.Err).
	State LeadershipState
	Err   error
}

// riskState is the at-risk watcher's state and the subscriptions of one
// leadership. The zero value is ready; the watcher starts with the first
// subscription.
type riskState struct {
	mu      sync.Mutex
	started bool
	timer   core.Timer // the next check (checkRiskLocked); nil: none pending
	atRisk  bool
	riskEv  LeadershipEvent // the AT_RISK event while at risk
	ended   bool
	endEv   LeadershipEvent
	subs    map[*leadershipSub]struct{}
	moved   chan struct{} // closed when a renewal moves the lease (leaseMoved, elect_lease.go)
}

// leaseMovedLocked tells the watch that a renewal moved the lease (called with
// l.mu held; never blocks).
func (l *Leadership) leaseMovedLocked() {
	r := &l.risk
	r.mu.Lock()
	if r.moved != nil {
		close(r.moved)
		r.moved = nil
	}
	r.mu.Unlock()
	l.checkRiskLocked()
}

func (r *riskState) broadcastLocked(ev LeadershipEvent) {
	for s := range r.subs {
		s.push(ev)
	}
}

// leadershipSub is one subscription: an unbounded queue drained by a pump
// goroutine into the subscriber's channel, so the library never waits for
// the reader.
type leadershipSub struct {
	mu   sync.Mutex
	q    []LeadershipEvent
	wake chan struct{} // capacity 1
}

func (s *leadershipSub) push(ev LeadershipEvent) {
	s.mu.Lock()
	s.q = append(s.q, ev)
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

func (s *leadershipSub) pop() (LeadershipEvent, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.q) == 0 {
		return LeadershipEvent{}, false
	}
	ev := s.q[0]
	s.q[0] = LeadershipEvent{}
	s.q = s.q[1:]
	return ev, true
}

// AtRisk reports whether the lease is at risk now (see Events): the
// leadership is active, no renewal succeeded since the lease fell due, and
// its deadline is within Config.RiskMargin. Never blocks.
func (l *Leadership) AtRisk() bool {
	l.mu.Lock()
	state, deadline := l.state, l.lease.Deadline
	l.mu.Unlock()
	return state == Active && l.c.clock.NowMs() >= core.SatSub(deadline, l.c.cfg.RiskMargin().Milliseconds())
}

// Events subscribes to the leadership's events: LeadershipAtRisk when the
// lease deadline is within Config.RiskMargin (krabka.lease.risk.margin.ms)
// and no renewal succeeded since the lease fell due, LeadershipRecovered
// when a renewal succeeds after that, and LeadershipEnded, the last one,
// when the leadership ends; the channel is closed after it. A subscription
// made while the lease is at risk starts with LeadershipAtRisk, one made
// after the end gets only LeadershipEnded.
//
// Each call is a subscription of its own. Events are queued without bound
// for each subscriber (there are at most two per renewal and one end), so
// the library never waits for a reader; the subscription ends, and its
// channel is closed, after LeadershipEnded or when ctx ends (nil: never).
//
// With a cut link LeadershipAtRisk comes Config.RiskMargin before the
// deadline, before the end as EXPIRED. The first subscription starts the
// watch of the deadline (a call scheduled on the client's clock, no
// goroutine); each subscription runs one goroutine that hands its events
// over until it ends.
func (l *Leadership) Events(ctx context.Context) <-chan LeadershipEvent {
	if ctx == nil {
		ctx = context.Background()
	}
	ch := make(chan LeadershipEvent)
	s := l.subscribe()
	go s.pump(ctx, ch, func() { l.unsubscribe(s) })
	return ch
}

// subscribe is Events without the goroutine: the subscription's events
// queue in s (pop), and s.wake is nudged when one arrives. unsubscribe
// ends it. Never blocks.
func (l *Leadership) subscribe() *leadershipSub {
	s := &leadershipSub{wake: make(chan struct{}, 1)}
	l.startRiskWatch()
	r := &l.risk
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case r.ended:
		s.q = append(s.q, r.endEv)
	default:
		if r.subs == nil {
			r.subs = map[*leadershipSub]struct{}{}
		}
		r.subs[s] = struct{}{}
		if r.atRisk {
			s.q = append(s.q, r.riskEv)
		}
	}
	if len(s.q) > 0 {
		s.wake <- struct{}{}
	}
	return s
}

// unsubscribe ends a subscription of subscribe. Never blocks.
func (l *Leadership) unsubscribe(s *leadershipSub) {
	r := &l.risk
	r.mu.Lock()
	delete(r.subs, s)
	r.mu.Unlock()
}

func (s *leadershipSub) pump(ctx context.Context, ch chan<- LeadershipEvent, unsubscribe func()) {
	defer close(ch)
	defer unsubscribe()
	for {
		ev, ok := s.pop()
		if !ok {
			select {
			case <-s.wake:
				continue
			case <-ctx.Done():
				return
			}
		}
		select {
		case ch <- ev:
		case <-ctx.Done():
			return
		}
		if ev.Kind == LeadershipEnded {
			return
		}
	}
}

// startRiskWatch starts the at-risk watch once, unless the leadership
// ended already (then it records the end for the subscribers). The watch
// is a call scheduled on the client's clock at the instant the lease
// would be at risk (deadline - margin), moved by every renewal that moves
// the lease (sched.go: no goroutine per leadership). Never blocks.
func (l *Leadership) startRiskWatch() {
	l.mu.Lock()
	defer l.mu.Unlock()
	r := &l.risk
	r.mu.Lock()
	if r.started || r.ended {
		r.mu.Unlock()
		return
	}
	if l.state != Active {
		r.ended = true
		r.endEv = LeadershipEvent{Kind: LeadershipEnded, Deadline: time.UnixMilli(l.lease.Deadline), At: time.UnixMilli(l.c.clock.NowMs()), State: l.state, Err: l.err}
		r.mu.Unlock()
		return
	}
	r.started = true
	r.mu.Unlock()
	l.checkRiskLocked()
}

// riskDue is the at-risk watch's call. Never blocks.
func (l *Leadership) riskDue() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.checkRiskLocked()
}

// checkRiskLocked follows the lease once the watch started: it publishes
// the changes of the at-risk level and, once the leadership ended, the
// end; while the lease is not at risk it schedules itself at the instant
// it would be (a renewal that moves the lease calls it again first). The
// caller holds l.mu. Never blocks.
func (l *Leadership) checkRiskLocked() {
	r := &l.risk
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.started || r.ended {
		return
	}
	stopTimer(&r.timer)
	lease := l.lease
	now := l.c.clock.NowMs()
	if l.state != Active {
		r.ended, r.atRisk = true, false
		r.endEv = LeadershipEvent{Kind: LeadershipEnded, Deadline: time.UnixMilli(lease.Deadline), At: time.UnixMilli(now), State: l.state, Err: l.err}
		r.broadcastLocked(r.endEv)
		r.subs = nil
		return
	}
	riskAt := core.SatSub(lease.Deadline, l.c.cfg.RiskMargin().Milliseconds())
	risky := now >= riskAt
	switch {
	case risky && !r.atRisk:
		r.atRisk = true
		r.riskEv = LeadershipEvent{Kind: LeadershipAtRisk, Deadline: time.UnixMilli(lease.Deadline), At: time.UnixMilli(now)}
		r.broadcastLocked(r.riskEv)
		l.c.log().Warn("krabka: lease at risk: no renewal succeeded and the deadline is near",
			"role", l.role.String(), "member", l.member.String(), "deadline", lease.Deadline, "remaining_ms", lease.Deadline-now)
	case !risky && r.atRisk:
		r.atRisk = false
		r.broadcastLocked(LeadershipEvent{Kind: LeadershipRecovered, Deadline: time.UnixMilli(lease.Deadline), At: time.UnixMilli(now)})
		l.c.log().Info("krabka: lease recovered: a renewal succeeded",
			"role", l.role.String(), "member", l.member.String(), "deadline", lease.Deadline)
	}
	if !risky {
		r.timer = core.AfterFunc(l.c.clock, time.Duration(riskAt-now)*time.Millisecond, l.riskDue)
	}
}
