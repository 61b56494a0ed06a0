package coord

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"time"

	"github.com/krabka/krabka-coord/core"
)

// CallbackPanic is what RunWithCallbacks and Elect panic with after a
// callback panicked and the elector made sure no leadership is left
// running; it is also the Err of the TermStopped (StopResigned) of the
// term the panic ended.
type CallbackPanic struct {
	Callback string // "OnStarted", "OnStopped", "OnNewLeader", "OnAtRisk", "OnRecovered" or "OnSuspended"
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

func isPanic(err error) bool {
	var p *CallbackPanic
	return errors.As(err, &p)
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
	// OnSuspended (ElectRideOutage only): no broker answers and the term is
	// suspended, not stopped: stop dispatching until OnRecovered (the same
	// term goes on) or OnStopped. OnStarted's ctx stays live meanwhile.
	OnSuspended func(deadline time.Time)
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
		case TermSuspended:
			if first == nil && cb.OnSuspended != nil && ev.Term == open {
				panicked(call("OnSuspended", func() { cb.OnSuspended(ev.Deadline) }))
			}
		case TermRecovered:
			if first == nil && cb.OnRecovered != nil && ev.Term == open {
				panicked(call("OnRecovered", func() { cb.OnRecovered(ev.Deadline) }))
			}
		}
	}
}
