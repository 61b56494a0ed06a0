package core

import (
	"context"
	"sync"
	"time"
)

// Clock is the source of time for the lease logic: NowMs is epoch
// milliseconds, and Sleep blocks for d or until ctx is done (returning
// ctx.Err()).
type Clock interface {
	NowMs() int64
	Sleep(ctx context.Context, d time.Duration) error
}

// SystemClock is the wall clock.
var SystemClock Clock = systemClock{}

type systemClock struct{}

func (systemClock) NowMs() int64 { return time.Now().UnixMilli() }

func (systemClock) Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// ManualClock is a Clock that moves only when told to. Sleep blocks until the
// clock has been advanced to (or past) the end of the sleep, or ctx is done.
// It is safe for concurrent use.
type ManualClock struct {
	mu       sync.Mutex
	now      int64
	waiters  []manualWaiter
	timers   []*manualTimer // pending AfterFunc calls (timer.go)
	timerSeq uint64
}

type manualWaiter struct {
	until int64
	ch    chan struct{}
}

// NewManualClock returns a ManualClock reading startMs.
func NewManualClock(startMs int64) *ManualClock { return &ManualClock{now: startMs} }

// NowMs returns the clock's current instant.
func (c *ManualClock) NowMs() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock forward by d (truncated to milliseconds,
// saturating), wakes the sleepers whose time has come and then runs the
// AfterFunc calls whose time has come (in the calling goroutine: Advance
// returns when they have).
func (c *ManualClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.setLocked(satAdd(c.now, d.Milliseconds()))
	due := c.dueTimersLocked()
	c.mu.Unlock()
	runTimers(due)
}

// Set moves the clock to ms (forwards or backwards), wakes the sleepers
// whose time has come and runs the AfterFunc calls whose time has come, as
// Advance does.
func (c *ManualClock) Set(ms int64) {
	c.mu.Lock()
	c.setLocked(ms)
	due := c.dueTimersLocked()
	c.mu.Unlock()
	runTimers(due)
}

func (c *ManualClock) setLocked(ms int64) {
	c.now = ms
	kept := c.waiters[:0]
	for _, w := range c.waiters {
		if w.until <= ms {
			close(w.ch)
		} else {
			kept = append(kept, w)
		}
	}
	c.waiters = kept
}

// Sleep blocks until the clock reads at least now + d, or ctx is done.
func (c *ManualClock) Sleep(ctx context.Context, d time.Duration) error {
	c.mu.Lock()
	until := satAdd(c.now, d.Milliseconds())
	if until <= c.now {
		c.mu.Unlock()
		return ctx.Err()
	}
	w := manualWaiter{until: until, ch: make(chan struct{})}
	c.waiters = append(c.waiters, w)
	c.mu.Unlock()
	select {
	case <-w.ch:
		return nil
	case <-ctx.Done():
		c.mu.Lock()
		for i, x := range c.waiters {
			if x.ch == w.ch {
				c.waiters = append(c.waiters[:i], c.waiters[i+1:]...)
				break
			}
		}
		c.mu.Unlock()
		return ctx.Err()
	}
}
