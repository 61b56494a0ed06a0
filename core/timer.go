package core

import (
	"cmp"
	"context"
	"slices"
	"sync/atomic"
	"time"
)

// Timers on a Clock (issue 35, item 3): a call scheduled for an instant of
// the clock, with no goroutine waiting for it on the clocks that schedule
// calls themselves, so that one scheduler can keep the renewals, deadlines
// and waits of many roles on one clock.

// Timer is a call scheduled by AfterFunc.
type Timer interface {
	// Stop cancels the call and reports whether it did: false when the
	// call already started (or, on a ManualClock, is due and about to run)
	// or was stopped before. It does not wait for a call that started.
	// Never blocks.
	Stop() bool
}

// TimerClock is a Clock that schedules calls itself: a pending call costs
// a record of the clock, not a goroutine. SystemClock, ManualClock and
// memtransport's PausableClock are TimerClocks.
type TimerClock interface {
	Clock
	// AfterFunc calls f once the clock reads at least now + d, unless the
	// returned Timer is stopped first. Never blocks.
	AfterFunc(d time.Duration, f func()) Timer
}

// AfterFunc calls f once clock reads at least its now + d (truncated to
// milliseconds; d <= 0: as soon as possible), unless the returned Timer is
// stopped first. On a TimerClock the clock schedules the call (see its
// AfterFunc for the goroutine f runs in); on any other Clock one goroutine
// sleeps on the clock per pending call and runs f. f runs at most once and
// should not block: on a ManualClock it runs in the goroutine that moves
// the clock. Never blocks.
func AfterFunc(clock Clock, d time.Duration, f func()) Timer {
	if tc, ok := clock.(TimerClock); ok {
		return tc.AfterFunc(d, f)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t := &sleepTimer{cancel: cancel}
	go func() {
		defer cancel()
		if clock.Sleep(ctx, d) == nil && t.state.CompareAndSwap(timerPending, timerStarted) {
			f()
		}
	}()
	return t
}

// The states of a timer.
const (
	timerPending int32 = iota
	timerStarted
	timerStopped
)

// sleepTimer is AfterFunc on a Clock that is no TimerClock: a goroutine
// sleeping on the clock.
type sleepTimer struct {
	cancel context.CancelFunc
	state  atomic.Int32
}

func (t *sleepTimer) Stop() bool {
	if !t.state.CompareAndSwap(timerPending, timerStopped) {
		return false
	}
	t.cancel()
	return true
}

// AfterFunc implements TimerClock with time.AfterFunc: f runs in a
// goroutine of its own once d has passed.
func (systemClock) AfterFunc(d time.Duration, f func()) Timer {
	return time.AfterFunc(d, f)
}

// manualTimer is a call pending on a ManualClock.
type manualTimer struct {
	c     *ManualClock
	until int64
	seq   uint64
	f     func()
}

// AfterFunc implements TimerClock: f runs in the goroutine of the Advance
// or Set that moves the clock to at least now + d, after the clock moved
// and outside its lock (so f may read the clock or schedule again), the
// due calls of one move in the order of their instants, then of their
// scheduling. A call with d <= 0 runs at once in a goroutine of its own.
// Never blocks.
func (c *ManualClock) AfterFunc(d time.Duration, f func()) Timer {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.timerSeq++
	t := &manualTimer{c: c, until: satAdd(c.now, d.Milliseconds()), seq: c.timerSeq, f: f}
	if t.until <= c.now {
		go f()
		return t // already started: Stop reports false
	}
	c.timers = append(c.timers, t)
	return t
}

func (t *manualTimer) Stop() bool {
	c := t.c
	c.mu.Lock()
	defer c.mu.Unlock()
	i := slices.Index(c.timers, t)
	if i < 0 {
		return false
	}
	c.timers = slices.Delete(c.timers, i, i+1)
	return true
}

// dueTimersLocked removes and returns the timers due at c.now, in the
// order they run. The caller holds c.mu.
func (c *ManualClock) dueTimersLocked() []*manualTimer {
	var due []*manualTimer
	kept := c.timers[:0]
	for _, t := range c.timers {
		if t.until <= c.now {
			due = append(due, t)
		} else {
			kept = append(kept, t)
		}
	}
	clear(c.timers[len(kept):])
	c.timers = kept
	slices.SortFunc(due, func(a, b *manualTimer) int {
		return cmp.Or(cmp.Compare(a.until, b.until), cmp.Compare(a.seq, b.seq))
	})
	return due
}

func runTimers(due []*manualTimer) {
	for _, t := range due {
		t.f()
	}
}
