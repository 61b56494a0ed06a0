package coord_test

import (
	"context"
	"errors"
	"maps"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/krabka/krabka-coord/core"
	"github.com/krabka/krabka-coord/core/coord"
)

// Issue 35, item 3: AcquireEach waits for many roles without a goroutine
// per waiting role (acquire_run.go).

// eachLog records AcquireEach's reports by index.
type eachLog struct {
	mu   sync.Mutex
	n    []int
	ls   []*coord.Leadership
	errs []error
}

func newEachLog(n int) *eachLog {
	return &eachLog{n: make([]int, n), ls: make([]*coord.Leadership, n), errs: make([]error, n)}
}

func (r *eachLog) report(i int, l *coord.Leadership, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.n[i]++
	r.ls[i], r.errs[i] = l, err
}

// waitParked waits until c has n acquisitions parked.
func waitParked(t *testing.T, c *coord.Client, n int) {
	t.Helper()
	for end := time.Now().Add(30 * time.Second); coord.ParkedRuns(c) != n; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("%d acquisitions parked, want %d", coord.ParkedRuns(c), n)
		}
	}
}

// Roles held by another client: every one of AcquireEach's acquisitions
// parks (a goroutine per waiting role would add as many goroutines as
// roles), each is won once its holder resigns, and each is reported once,
// with its own index.
func TestAcquireEachParksWaitingRoles(t *testing.T) {
	e := newEnv(t)
	ca, _ := e.client()
	cb, _ := e.client()
	const n = 200
	roles := setRoles(n)
	held, err := ca.AcquireMany(bg(), roles, ma)
	if err != nil {
		t.Fatal(err)
	}
	rec := newEachLog(n)
	base := runtime.NumGoroutine()
	done := make(chan error, 1)
	go func() { done <- cb.AcquireEach(bg(), roles, mb, rec.report) }()
	waitParked(t, cb, n)
	runtime.GC()
	extra := runtime.NumGoroutine() - base
	t.Logf("%d roles waiting: %d more goroutines", n, extra)
	if extra >= n/4 {
		t.Fatalf("%d more goroutines for %d waiting roles: not parked", extra, n)
	}
	for _, l := range held {
		if err := l.Resign(bg()); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("AcquireEach did not return after every holder resigned (%d parked)", coord.ParkedRuns(cb))
	}
	for i := range roles {
		if rec.n[i] != 1 || rec.errs[i] != nil || rec.ls[i] == nil || rec.ls[i].Role() != roles[i] || rec.ls[i].State() != coord.Active {
			t.Fatalf("roles[%d]: reported %d times, %v %v", i, rec.n[i], rec.ls[i], rec.errs[i])
		}
		if !rec.ls[i].Token().Supersedes(held[i].Token()) {
			t.Fatalf("roles[%d]: token %v does not supersede the resigned holder's %v", i, rec.ls[i].Token(), held[i].Token())
		}
	}
	if p := coord.ParkedRuns(cb); p != 0 {
		t.Fatalf("%d acquisitions still parked after every role was won", p)
	}
}

// The context ending and Close end parked acquisitions at once (the
// parked wait's timer is on a manual clock nobody advances): each role is
// reported with the error, and the call returns a *RolesError naming all.
func TestAcquireEachEndsParkedRuns(t *testing.T) {
	for _, tc := range []struct {
		name string
		want error
	}{{"deadline", coord.ErrTimeout}, {"close", coord.ErrClosed}} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			ca, _ := e.client()
			cb, _ := e.client()
			roles := setRoles(20)
			if _, err := ca.AcquireMany(bg(), roles, ma); err != nil {
				t.Fatal(err)
			}
			rec := newEachLog(len(roles))
			ctx, cancel := context.WithTimeout(bg(), 24*time.Hour)
			if tc.want == coord.ErrTimeout {
				// Parked within 5 s: the deadline ends the wait, not a timer.
				ctx, cancel = context.WithTimeout(bg(), 5*time.Second)
			}
			defer cancel()
			done := make(chan error, 1)
			go func() { done <- cb.AcquireEach(ctx, roles, mb, rec.report) }()
			waitParked(t, cb, len(roles))
			if tc.want == coord.ErrClosed {
				cb.Close()
			}
			var err error
			select {
			case err = <-done:
			case <-time.After(30 * time.Second):
				t.Fatalf("AcquireEach did not end (%d parked)", coord.ParkedRuns(cb))
			}
			var re *coord.RolesError
			if !errors.As(err, &re) || re.Total != len(roles) || len(re.Failed()) != len(roles) {
				t.Fatalf("%v", err)
			}
			for i := range roles {
				if rec.n[i] != 1 || rec.ls[i] != nil || rec.errs[i] == nil {
					t.Fatalf("roles[%d]: reported %d times, %v %v", i, rec.n[i], rec.ls[i], rec.errs[i])
				}
				if !errors.Is(rec.errs[i], tc.want) {
					t.Fatalf("roles[%d]: %v, want %v", i, rec.errs[i], tc.want)
				}
			}
		})
	}
}

// Bad input is refused before anything is sent, naming the call and the
// role; each is never called.
func TestAcquireEachBadInput(t *testing.T) {
	e := newEnv(t)
	c, _ := e.client()
	r := setRoles(2)
	called := false
	err := c.AcquireEach(bg(), []core.Role{r[0], r[1], r[0]}, ma, func(int, *coord.Leadership, error) { called = true })
	if !errors.Is(err, coord.ErrInvalidArgument) || called {
		t.Fatalf("a role given twice: %v (each called %v)", err, called)
	}
	for _, want := range []string{"AcquireEach", r[0].String()} {
		if !strings.Contains(err.Error(), want) {
			t.Fatalf("%q does not name %q", err, want)
		}
	}
	if err := c.AcquireEach(bg(), r, core.MemberID{}, nil); err == nil || !strings.Contains(err.Error(), "member") {
		t.Fatalf("the zero member: %v", err)
	}
	if err := c.AcquireEach(bg(), nil, ma, nil); err != nil {
		t.Fatalf("no roles: %v", err)
	}
}

// countingPreparer is a transport that counts Prepare calls per id.
type countingPreparer struct {
	coord.Transport
	mu       sync.Mutex
	prepared map[string]int
}

func (p *countingPreparer) Prepare(txnID string, _ time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.prepared[txnID]++
}

func (p *countingPreparer) Unprepare(string) {}

// warmingPreparer is a countingPreparer that can also warm up (Warmer).
type warmingPreparer struct {
	countingPreparer
	warms int
}

func (p *warmingPreparer) Warm() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.warms++ // under the countingPreparer's mu
}

// AcquireEach prepares each role in a transport that can only prepare
// roles one by one (Preparer), as Acquire does; in one that can also warm
// up for roles it is not told of (Warmer, the Kafka transport) it warms it
// once and prepares no role: a standby of 10,000 roles keeps nothing per
// role in the transport. Acquire prepares its role in both.
func TestAcquireEachPreparesOrWarms(t *testing.T) {
	for _, warmer := range []bool{false, true} {
		e := newEnv(t)
		cfg := e.config()
		wp := &warmingPreparer{countingPreparer: countingPreparer{Transport: e.cluster.Transport(cfg.Topic), prepared: map[string]int{}}}
		cp := &wp.countingPreparer
		var tr coord.Transport = cp
		if warmer {
			tr = wp
		}
		c, err := coord.NewClient(cfg, tr, e.clock)
		if err != nil {
			t.Fatal(err)
		}
		roles := setRoles(5)
		if err := c.AcquireEach(bg(), roles[:4], ma, nil); err != nil {
			t.Fatal(err)
		}
		counts := func() (map[string]int, int) {
			cp.mu.Lock()
			defer cp.mu.Unlock()
			return maps.Clone(cp.prepared), wp.warms
		}
		prepared, warms := counts()
		if warmer && (len(prepared) != 0 || warms != 1) {
			t.Fatalf("a Warmer: AcquireEach prepared %v and warmed %d times, want nothing prepared and one warm-up", prepared, warms)
		}
		if !warmer {
			if len(prepared) != 4 {
				t.Fatalf("a Preparer: AcquireEach prepared %v, want each of 4 roles once", prepared)
			}
			for id, n := range prepared {
				if n != 1 {
					t.Fatalf("%s prepared %d times", id, n)
				}
			}
		}
		if _, err := c.Acquire(bg(), roles[4], ma); err != nil {
			t.Fatal(err)
		}
		after, _ := counts()
		if len(after) != len(prepared)+1 {
			t.Fatalf("warmer %v: Acquire did not prepare its role: %v", warmer, after)
		}
		c.Close()
	}
}

// gatedAppends is a transport whose Append waits for a gate, counting the
// calls waiting at once.
type gatedAppends struct {
	coord.Transport
	gate chan struct{}
	mu   sync.Mutex
	in   int
	peak int
}

func (g *gatedAppends) Append(ctx context.Context, p int32, key, value []byte, hs []coord.Header) (int64, error) {
	g.mu.Lock()
	g.in++
	g.peak = max(g.peak, g.in)
	g.mu.Unlock()
	defer func() {
		g.mu.Lock()
		g.in--
		g.mu.Unlock()
	}()
	select {
	case <-g.gate:
	case <-ctx.Done():
		return 0, ctx.Err()
	}
	return g.Transport.Append(ctx, p, key, value, hs)
}

func (g *gatedAppends) stats() (in, peak int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.in, g.peak
}

// AcquireEach steps at most MaxStepping acquisitions at once (a
// goroutine each); the others wait their turn, and every role is still
// won. Without the bound all 300 registrations were in flight at once,
// and the Go runtime keeps every goroutine structure it ever made.
func TestAcquireEachBoundsItsSteps(t *testing.T) {
	e := newEnv(t)
	cfg := e.config()
	tr := &gatedAppends{Transport: e.cluster.Transport(cfg.Topic), gate: make(chan struct{})}
	c, err := coord.NewClient(cfg, tr, e.clock)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	const n = 300
	roles := setRoles(n)
	rec := newEachLog(n)
	done := make(chan error, 1)
	go func() { done <- c.AcquireEach(bg(), roles, ma, rec.report) }()
	for end := time.Now().Add(30 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if in, _ := tr.stats(); in >= coord.MaxStepping {
			break
		}
		if time.Now().After(end) {
			in, _ := tr.stats()
			t.Fatalf("%d registrations in flight, want %d", in, coord.MaxStepping)
		}
	}
	time.Sleep(50 * time.Millisecond) // room for more to start, were they not bounded
	if in, peak := tr.stats(); in != coord.MaxStepping || peak != coord.MaxStepping {
		t.Fatalf("%d registrations in flight (peak %d), want %d", in, peak, coord.MaxStepping)
	}
	close(tr.gate)
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("AcquireEach did not return")
	}
	for i := range roles {
		if rec.n[i] != 1 || rec.errs[i] != nil || rec.ls[i] == nil {
			t.Fatalf("roles[%d]: reported %d times, %v %v", i, rec.n[i], rec.ls[i], rec.errs[i])
		}
	}
	if _, peak := tr.stats(); peak != coord.MaxStepping {
		t.Fatalf("peak %d registrations in flight, want %d", peak, coord.MaxStepping)
	}
}
