package coord

import (
	"context"
	"time"

	"github.com/krabka/krabka-coord/core"
)

// Lease events of an Elector: one for every renewal of a term's lease, for a
// host that must know each new deadline at once (krabka-coord run hands it
// to the watchdog process that stops its program at deadline - stop
// margin). They are Go only and do not cross the C API: a TermEvent says
// when a term starts, is at risk, recovers and stops; a LeaseEvent only
// moves the deadline.

// LeaseEvent reports a lease that a renewal of an elector's term wrote.
type LeaseEvent struct {
	// Term is the term's number (as on its TermEvents).
	Term uint64
	// Token is the token the lease carries (the term's, or the one an own
	// epoch recovery continued it under).
	Token core.FencingToken
	// Deadline is the new lease deadline.
	Deadline time.Time
	// At is when the elector saw the renewal (the client's clock).
	At time.Time
}

// ElectOnLease makes the elector call f with every lease a renewal of one
// of its terms writes (the first lease of a term is TermStarted's
// Deadline). The calls of a term come after its TermStarted was queued and
// before its TermStopped is, one at a time and in order, on a goroutine of
// the elector. f must return quickly: the term's end waits for a call in
// progress. Consecutive renewals may be reported as one (the newest lease).
func ElectOnLease(f func(LeaseEvent)) ElectOption {
	return func(o *electOptions) error { o.onLease = f; return nil }
}

// followLeases calls the ElectOnLease function with every lease of term n
// that moves past the one its TermStarted announced (deadline first). The
// returned stop returns once no call is in progress and none will follow.
func (e *Elector) followLeases(n uint64, l *Leadership, first time.Time) (stop func()) {
	f := e.o.onLease
	if f == nil {
		return func() {}
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		last := core.Lease{Deadline: first.UnixMilli(), Token: l.Token()}
		for {
			moved := l.risk.leaseMoved()
			cur := l.Lease()
			if cur.Deadline != last.Deadline || cur.Token != last.Token {
				last = cur
				f(LeaseEvent{Term: n, Token: cur.Token, Deadline: time.UnixMilli(cur.Deadline), At: time.UnixMilli(e.c.clock.NowMs())})
			}
			select {
			case <-moved:
			case <-l.Done():
				return
			case <-ctx.Done():
				return
			}
		}
	}()
	return func() {
		cancel()
		<-done
	}
}

// leaseMoved returns a channel that is closed when a renewal next moves the
// lease (Leadership.leaseMovedLocked).
func (r *riskState) leaseMoved() <-chan struct{} {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.moved == nil {
		r.moved = make(chan struct{})
	}
	return r.moved
}
