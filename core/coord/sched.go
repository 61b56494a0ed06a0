package coord

import (
	"context"
	"math/rand/v2"
	"time"

	"github.com/krabka/krabka-coord/core"
)

// The scheduler of a client's leaderships (issue 35, item 3): no goroutine
// per held role. A leadership keeps its deadline, its background renewal
// and its at-risk watch (risk.go) as calls scheduled on the client's clock
// (core.AfterFunc: on a core.TimerClock, a record of the clock, not a
// goroutine), learns from its
// partition's view when a newer token of its role was written (the view's
// follower calls it back, partView.watch), and commits guarded writes in a
// committer started when a Produce call arrives and gone when the queue
// is empty (group.go). A goroutine runs only while there is work: one
// renewal, one group of writes, one end.
//
// The timer callbacks run where the clock runs them (for a ManualClock,
// the goroutine that moves it): they take the leadership's mu briefly and
// start a goroutine for anything that may block.
//
// The wait group: an active leadership holds one count of the client's
// wait group from start until finish has released everything (hold), so
// that the goroutines it starts while active (always under mu, after
// checking the state) never Add to a wait group at zero that Client.Close
// may be waiting on.

// renewJitterFraction bounds the jitter of background renewals: each one
// is scheduled up to this fraction of krabka.renew.interval.ms before its
// instant (drawn anew for every renewal), so that roles acquired together
// do not renew together. Earlier, never later: the lease has as much
// margin left as without jitter.
const renewJitterFraction = 0.1

// schedState is a leadership's scheduled calls; every field is under the
// leadership's mu.
type schedState struct {
	held     bool       // the leadership holds a count of the client's wait group
	deadline core.Timer // the deadline check (nil: none pending)
	renewOn  bool       // background renewal (krabka.renew.background or an elector)
	renew    core.Timer // the next renewal (nil: none pending or one running)
	jitterMs int64      // how early the next renewal is due (renewJitterFraction)
}

// start takes the leadership's hold, schedules its deadline check and,
// with krabka.renew.background, its renewals, and registers it with its
// partition's view. Never blocks.
func (l *Leadership) start() {
	l.mu.Lock()
	if l.state != Active {
		l.mu.Unlock()
		return
	}
	l.sched.held = true
	l.c.wg.Add(1)
	l.armDeadlineLocked()
	if l.c.cfg.BackgroundRenew {
		l.startRenewerLocked()
	}
	l.mu.Unlock()
	l.view.watch(l.role, l)
}

// goLocked runs f in a goroutine counted in the client's wait group,
// unless the leadership ended (false). The caller holds l.mu.
func (l *Leadership) goLocked(f func()) bool {
	if l.state != Active {
		return false
	}
	l.c.wg.Add(1)
	go func() {
		defer l.c.wg.Done()
		f()
	}()
	return true
}

// stopTimer stops the call *t (if any) and forgets it.
func stopTimer(t *core.Timer) {
	if *t != nil {
		(*t).Stop()
		*t = nil
	}
}

// stopTimersLocked stops the scheduled calls of a leadership that ended
// and reports whether it held a count of the wait group (finish releases
// it last). The caller holds l.mu.
func (l *Leadership) stopTimersLocked() bool {
	s := &l.sched
	stopTimer(&s.deadline)
	stopTimer(&s.renew)
	held := s.held
	s.held = false
	return held
}

// armDeadlineLocked (re)schedules the deadline check: before the deadline,
// a call at the deadline; at or after it, the end as Expired when a
// renewal is failing and no outage ride is on, else nothing (a failing
// renewal or the ride's end nudges it again). The caller holds l.mu.
func (l *Leadership) armDeadlineLocked() {
	s := &l.sched
	stopTimer(&s.deadline)
	if l.state != Active {
		return
	}
	deadline := l.lease.Deadline
	now := l.c.clock.NowMs()
	if now < deadline {
		s.deadline = core.AfterFunc(l.c.clock, time.Duration(deadline-now)*time.Millisecond, l.nudge)
		return
	}
	if l.renewFailing && !l.ride.riding() {
		l.goLocked(func() {
			l.end(Expired, WrapError(ErrLeaseExpired, nil, "role %s: lease deadline %d passed while renewals were failing", l.role, deadline))
		})
	}
}

// nudge checks the deadline again: the deadline check's call, and after a
// failed renewal or a change of the ride. Never blocks.
func (l *Leadership) nudge() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.armDeadlineLocked()
}

// startRenewer turns on the background renewal of l: renewals when due
// (with jitter, renewJitterFraction), failed ones retried until the
// leadership ends. Idempotent. Never blocks.
func (l *Leadership) startRenewer() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.startRenewerLocked()
}

func (l *Leadership) startRenewerLocked() {
	if l.sched.renewOn || l.state != Active {
		return
	}
	l.sched.renewOn = true
	l.drawJitterLocked()
	l.armRenewLocked(0)
}

// drawJitterLocked draws how early the next renewal is due. The caller
// holds l.mu.
func (l *Leadership) drawJitterLocked() {
	l.sched.jitterMs = renewJitterMs(l.c.cfg.Lease)
}

// renewJitterMs draws how early a renewal is due: 0 to renewJitterFraction
// of the renew interval.
func renewJitterMs(lc core.LeaseConfig) int64 {
	if most := int64(float64(lc.RenewIntervalMs) * renewJitterFraction); most > 0 {
		return rand.Int64N(most + 1)
	}
	return 0
}

// armRenewLocked schedules the renewal check after d (0: at the renew
// instant). The caller holds l.mu.
func (l *Leadership) armRenewLocked(d time.Duration) {
	s := &l.sched
	stopTimer(&s.renew)
	if l.state != Active {
		return
	}
	if d <= 0 {
		d = time.Duration(core.SatSub(l.renewAtLocked(), l.c.clock.NowMs())) * time.Millisecond
	}
	s.renew = core.AfterFunc(l.c.clock, d, l.renewDue)
}

// renewAtLocked is when the next background renewal is due: the renew
// instant of the lease, jittered earlier. The caller holds l.mu.
func (l *Leadership) renewAtLocked() int64 {
	return core.SatSub(l.c.cfg.Lease.RenewAt(l.lease), l.sched.jitterMs)
}

// renewDue is the renewal check's call: a renewal in a goroutine of its
// own when due (a renewal of the owner's may have moved the lease since
// the call was scheduled: then the call is scheduled again). Never blocks.
func (l *Leadership) renewDue() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.sched.renew = nil
	if now := l.c.clock.NowMs(); now < l.renewAtLocked() {
		l.armRenewLocked(0)
		return
	}
	l.goLocked(l.renewOnce)
}

// renewOnce renews (bounded by request.timeout.ms) and schedules the next
// renewal: at its instant after a success, after the retry interval after
// a failure.
func (l *Leadership) renewOnce() {
	ctx, cancel := context.WithTimeout(l.bg, l.c.cfg.RequestTimeout)
	err := l.Renew(ctx)
	cancel()
	l.mu.Lock()
	defer l.mu.Unlock()
	if err != nil {
		l.armRenewLocked(l.renewRetry())
		return
	}
	l.drawJitterLocked()
	l.armRenewLocked(0)
}

// renewRetry is the wait before a failed background renewal is tried
// again: a quarter of the renew interval, at most the poll interval, at
// least 10 ms.
func (l *Leadership) renewRetry() time.Duration {
	cfg := l.c.cfg
	retry := time.Duration(cfg.Lease.RenewIntervalMs) * time.Millisecond / 4
	retry = min(retry, cfg.PollInterval)
	return max(retry, 10*time.Millisecond)
}

// checkView ends the leadership as Fenced when its partition's view shows
// a lease whose token supersedes this leadership's (docs/PROTOCOL.md 10,
// section 11.4 of the issue): another member (or another incarnation of
// this one) minted and wrote its lease, so the broker already rejects this
// token. No write is needed to learn it. The view calls it after folding a
// record of the role (partView.watch); the end runs in a goroutine of its
// own. Never blocks on the cluster.
func (l *Leadership) checkView() {
	l.c.stats.viewWaits.Add(1)
	st := l.view.state(l.role)
	if st.Lease == nil {
		return
	}
	tok := l.Token()
	if !st.Lease.Token.Supersedes(tok) {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.goLocked(func() {
		l.end(Fenced, WrapError(ErrFenced, nil,
			"role %s: the log shows a lease of %s with token %s, which supersedes this leadership's token %s",
			l.role, st.Lease.Member, st.Lease.Token, tok))
	})
}
