package memtransport_test

import (
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/krabka/krabka-coord/core"
	"github.com/krabka/krabka-coord/core/memtransport"
)

// A PausableClock's AfterFunc runs a call as a Sleep of the same length
// would return: at its instant while the view runs, at Resume for a call
// that came due while paused, never after Stop (also while held by a pause).
func TestPausableClockAfterFunc(t *testing.T) {
	base := core.NewManualClock(1000)
	k := memtransport.NewPausableClock(base)
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

	core.AfterFunc(k, 2*time.Second, call("running"))
	base.Advance(time.Second)
	if g := ran(); len(g) != 0 {
		t.Fatalf("ran %v at 2000, before the instant 3000", g)
	}
	base.Advance(time.Second) // 3000: the view runs, the base clock runs the call
	if g := ran(); !slices.Equal(g, []string{"running"}) {
		t.Fatalf("ran %v at 3000, want [running]", g)
	}

	// Due while paused: held until Resume, in the order they came due.
	core.AfterFunc(k, 2*time.Second, call("paused-b")) // 5000
	core.AfterFunc(k, time.Second, call("paused-a"))   // 4000
	stopped := core.AfterFunc(k, time.Second, call("stopped-while-held"))
	k.Pause()
	whilePaused := core.AfterFunc(k, 3*time.Second, call("scheduled-while-paused")) // the view reads 3000: 6000
	base.Advance(5 * time.Second)                                                   // 8000
	if g := ran(); len(g) != 1 {
		t.Fatalf("ran %v while paused", g)
	}
	if !stopped.Stop() {
		t.Fatal("Stop of a call held by the pause reported false")
	}
	k.Resume()
	if g := ran(); !slices.Equal(g, []string{"running", "paused-a", "paused-b", "scheduled-while-paused"}) {
		t.Fatalf("ran %v after Resume", g)
	}
	if whilePaused.Stop() {
		t.Fatal("Stop reported stopping a call that ran")
	}

	// Stopped before its instant: never runs.
	never := core.AfterFunc(k, time.Second, call("never"))
	if !never.Stop() {
		t.Fatal("Stop of a pending call reported false")
	}
	base.Advance(time.Hour)
	if g := ran(); len(g) != 4 {
		t.Fatalf("ran %v: a stopped call ran", g)
	}
}

// On a real-time base the call runs from the system clock's timer.
func TestPausableClockAfterFuncOnTheSystemClock(t *testing.T) {
	k := memtransport.NewPausableClock(core.SystemClock)
	done := make(chan struct{})
	core.AfterFunc(k, time.Millisecond, func() { close(done) })
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("the call never ran")
	}
}
