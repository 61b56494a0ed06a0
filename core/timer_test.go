package core

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"
)

// ranWithin reports whether ch is closed within d (a bound on a failure's
// wait, not a timing assertion).
func ranWithin(ch <-chan struct{}, d time.Duration) bool {
	select {
	case <-ch:
		return true
	case <-time.After(d):
		return false
	}
}

func TestAfterFuncOnTheSystemClockRunsOnceUnlessStopped(t *testing.T) {
	ran := make(chan struct{})
	tm := AfterFunc(SystemClock, time.Millisecond, func() { close(ran) }) // a second call would panic
	if !ranWithin(ran, 30*time.Second) {
		t.Fatal("the call never ran")
	}
	if tm.Stop() {
		t.Fatal("Stop reported stopping a call that ran")
	}

	stopped := AfterFunc(SystemClock, time.Hour, func() { t.Error("a stopped call ran") })
	if !stopped.Stop() {
		t.Fatal("Stop of a pending call reported false")
	}
	if stopped.Stop() {
		t.Fatal("a second Stop reported true")
	}
}

// A ManualClock runs its due calls in the goroutine that moves it, in the
// order of their instants, then of their scheduling; never before their
// instant, never after a Stop, never when the clock moves backwards.
func TestAfterFuncOnAManualClockRunsDueCallsInOrder(t *testing.T) {
	clk := NewManualClock(1000)
	var mu sync.Mutex
	var got []string
	call := func(name string) func() {
		return func() {
			mu.Lock()
			defer mu.Unlock()
			got = append(got, name)
		}
	}
	ran := func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(got)
	}
	AfterFunc(clk, 5*time.Second, call("5s-first"))
	AfterFunc(clk, 3*time.Second, call("3s"))
	AfterFunc(clk, 5*time.Second, call("5s-second"))
	stopped := AfterFunc(clk, 4*time.Second, call("4s-stopped"))
	late := AfterFunc(clk, 10*time.Second, call("10s"))

	clk.Advance(2 * time.Second) // 3000
	if g := ran(); len(g) != 0 {
		t.Fatalf("ran %v at 3000, before any instant", g)
	}
	clk.Advance(time.Second) // 4000
	if g := ran(); !slices.Equal(g, []string{"3s"}) {
		t.Fatalf("ran %v at 4000, want [3s]", g)
	}
	if !stopped.Stop() {
		t.Fatal("Stop of the pending 4 s call reported false")
	}
	clk.Advance(2 * time.Second) // 6000
	if g := ran(); !slices.Equal(g, []string{"3s", "5s-first", "5s-second"}) {
		t.Fatalf("ran %v at 6000, want [3s 5s-first 5s-second]", g)
	}
	clk.Set(2000) // backwards: nothing is due
	clk.Set(10999)
	if g := ran(); len(g) != 3 {
		t.Fatalf("ran %v at 10999, before the 10 s call's 11000", g)
	}
	clk.Set(11000)
	if g := ran(); !slices.Equal(g, []string{"3s", "5s-first", "5s-second", "10s"}) {
		t.Fatalf("ran %v at 11000", g)
	}
	if late.Stop() {
		t.Fatal("Stop reported stopping a call that ran")
	}
	clk.mu.Lock()
	pending := len(clk.timers)
	clk.mu.Unlock()
	if pending != 0 {
		t.Fatalf("%d calls still pending on the clock", pending)
	}

	// A call may schedule the next one on the clock it runs on.
	next := make(chan struct{})
	AfterFunc(clk, time.Second, func() {
		AfterFunc(clk, time.Second, func() { close(next) })
	})
	clk.Advance(time.Second)
	clk.Advance(time.Second)
	if !ranWithin(next, 30*time.Second) {
		t.Fatal("the call scheduled by a call never ran")
	}

	// d <= 0: at once, from a goroutine of its own.
	now := make(chan struct{})
	if AfterFunc(clk, 0, func() { close(now) }).Stop() {
		t.Fatal("Stop of a call due at once reported true")
	}
	if !ranWithin(now, 30*time.Second) {
		t.Fatal("a call due at once never ran")
	}
}

// plainClock hides ManualClock's AfterFunc: AfterFunc falls back to a
// goroutine sleeping on the clock.
type plainClock struct{ m *ManualClock }

func (c plainClock) NowMs() int64 { return c.m.NowMs() }
func (c plainClock) Sleep(ctx context.Context, d time.Duration) error {
	return c.m.Sleep(ctx, d)
}

func TestAfterFuncOnAClockWithoutTimers(t *testing.T) {
	clk := NewManualClock(0)
	var plain Clock = plainClock{clk}
	if _, ok := plain.(TimerClock); ok {
		t.Fatal("plainClock is a TimerClock: the test would not reach the fallback")
	}
	ran := make(chan struct{})
	tm := AfterFunc(plain, 5*time.Second, func() { close(ran) })
	waitForSleepers(t, clk, 1)
	clk.Advance(4 * time.Second)
	select {
	case <-ran:
		t.Fatal("the call ran at 4000, before its instant 5000")
	default:
	}
	clk.Advance(time.Second)
	if !ranWithin(ran, 30*time.Second) {
		t.Fatal("the call never ran")
	}
	if tm.Stop() {
		t.Fatal("Stop reported stopping a call that ran")
	}

	stopped := AfterFunc(plain, time.Second, func() { t.Error("a stopped call ran") })
	waitForSleepers(t, clk, 1)
	if !stopped.Stop() {
		t.Fatal("Stop of a pending call reported false")
	}
	waitForSleepers(t, clk, 0) // its goroutine ended
	clk.Advance(time.Hour)
}
