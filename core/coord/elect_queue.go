package coord

import (
	"context"
)

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

// push queues ev (nothing once the loop ended and its last event is
// queued) and tells the set, if any (sink).
func (e *Elector) push(ev TermEvent) {
	e.mu.Lock()
	if e.qClose {
		e.mu.Unlock()
		return
	}
	e.queue = append(e.queue, ev)
	close(e.qWake)
	e.qWake = make(chan struct{})
	e.mu.Unlock()
	if e.sink != nil {
		e.sink()
	}
}

// take returns the next event without waiting: ok false when there is
// none, closed true when the loop ended and every event was taken. The
// release rule is the caller's (ElectorSet: its elector runs with
// ElectManualRelease).
func (e *Elector) take() (ev TermEvent, ok, closed bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(e.queue) == 0 {
		return TermEvent{}, false, e.qClose
	}
	ev = e.queue[0]
	e.queue[0] = TermEvent{}
	e.queue = e.queue[1:]
	return ev, true, false
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
