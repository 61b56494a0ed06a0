package memtransport_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/krabka/krabka-coord/core"
	"github.com/krabka/krabka-coord/core/coord"
	"github.com/krabka/krabka-coord/core/kafka"
	"github.com/krabka/krabka-coord/core/memtransport"
)

// memClient is a client of the in-process cluster name, built the way a
// user builds one: the ordinary configuration and kafka.NewClient.
func memClient(t *testing.T, name string, extra ...string) *coord.Client {
	t.Helper()
	m := map[string]string{"bootstrap.servers": "mem://" + name}
	for i := 0; i+1 < len(extra); i += 2 {
		m[extra[i]] = extra[i+1]
	}
	cfg, err := coord.ConfigFromMap(m)
	if err != nil {
		t.Fatal(err)
	}
	cl, err := kafka.NewClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cl.Close() })
	return cl
}

func newNamed(t *testing.T, name string, partitions int32) *memtransport.Cluster {
	t.Helper()
	c, err := memtransport.NewNamed(name, partitions)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// advanceUntil advances the cluster's clock in steps of step until done is
// closed, and returns how far it went. Between steps it gives the woken
// timers real time to act; the steps are bounded in number, and nothing
// is asserted about wall time.
func advanceUntil(t *testing.T, c *memtransport.Cluster, step time.Duration, maxSteps int, done <-chan struct{}) time.Duration {
	t.Helper()
	var moved time.Duration
	for i := 0; i < maxSteps; i++ {
		select {
		case <-done:
			return moved
		case <-time.After(2 * time.Millisecond):
		}
		if err := c.Advance(step); err != nil {
			t.Fatal(err)
		}
		moved += step
	}
	select {
	case <-done:
		return moved
	case <-time.After(10 * time.Second):
		t.Fatalf("not done after advancing the clock %d times by %v", maxSteps, step)
	}
	return moved
}

// The controller failover a user writes: win, fenced mid-command by a blind
// successor (the fenced write leaves nothing), the standby takes over once
// the clock passes the holder's deadline.
func TestNamedClusterFailover(t *testing.T) {
	start := time.Now()
	c := newNamed(t, "go-failover", 1)
	ctx := context.Background()
	role := core.MustRole("controller")
	a, b := memClient(t, "go-failover"), memClient(t, "go-failover")

	// Win.
	la, err := a.Acquire(ctx, role, core.MustMemberID("node-a"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := la.Produce(ctx, coord.Message{Topic: "commands", Partition: 0, Value: []byte("cmd-1")}); err != nil {
		t.Fatal(err)
	}

	// The standby waits.
	type won struct {
		l   *coord.Leadership
		err error
	}
	bwon := make(chan won, 1)
	bdone := make(chan struct{})
	go func() {
		l, err := b.Acquire(ctx, role, core.MustMemberID("node-b"))
		bwon <- won{l, err}
		close(bdone)
	}()

	// Fenced mid-command: a blind successor mints the role from outside.
	ctl, err := memtransport.Control(a)
	if err != nil {
		t.Fatal(err)
	}
	blind, err := ctl.Mint(role)
	if err != nil {
		t.Fatal(err)
	}
	if !blind.Supersedes(la.Token()) {
		t.Fatalf("the blind successor's token %v does not supersede the holder's %v", blind, la.Token())
	}
	_, err = la.Produce(ctx, coord.Message{Topic: "commands", Partition: 0, Value: []byte("cmd-2")})
	if !errors.Is(err, coord.ErrFenced) {
		t.Fatalf("the fenced holder's produce answered %v, want FENCED", err)
	}
	recs := c.Records("commands", 0)
	if len(recs) != 1 || string(recs[0].Value) != "cmd-1" {
		t.Fatalf("commands holds %d records (%v), want only cmd-1: the fenced write must leave nothing", len(recs), recs)
	}
	select {
	case w := <-bwon:
		t.Fatalf("the standby won before the lease's deadline passed: %v, %v", w.l, w.err)
	default:
	}

	// The standby takes over once the clock passes the lease's deadline.
	deadline := la.Lease().Deadline
	moved := advanceUntil(t, c, time.Second, 120, bdone)
	w := <-bwon
	if w.err != nil {
		t.Fatal(w.err)
	}
	if now := c.NowMs(); now < deadline {
		t.Fatalf("the standby won at %d, before the holder's deadline %d", now, deadline)
	}
	if !w.l.Token().Supersedes(blind) {
		t.Fatalf("the standby's token %v does not supersede the blind successor's %v", w.l.Token(), blind)
	}
	if _, err := w.l.Produce(ctx, coord.Message{Topic: "commands", Partition: 0, Value: []byte("cmd-3")}); err != nil {
		t.Fatal(err)
	}
	recs = c.Records("commands", 0)
	if len(recs) != 2 || string(recs[1].Value) != "cmd-3" {
		t.Fatalf("commands holds %v, want cmd-1, cmd-3", recs)
	}
	t.Logf("failover: %v of cluster time, %v of wall time", moved, time.Since(start))
}

// Bad input: names, duplicates, a clock moved backwards, controls on a
// client of a real cluster, a name no cluster has.
func TestNamedClusterBadInput(t *testing.T) {
	for _, bad := range []struct{ name, want string }{
		{"", "empty"},
		{"has space", `character ' '`},
		{"slash/x", `character '/'`},
		{strings.Repeat("x", 65), "longer than 64"},
		{"é", "character"},
	} {
		if _, err := memtransport.NewNamed(bad.name, 1); err == nil || !strings.Contains(err.Error(), bad.want) || !errors.Is(err, coord.ErrInvalidConfig) {
			t.Errorf("NewNamed(%q) = %v, want an invalid-config error containing %q", bad.name, err, bad.want)
		}
		_, err := coord.ConfigFromMap(map[string]string{"bootstrap.servers": "mem://" + bad.name})
		if err == nil || !strings.Contains(err.Error(), "bootstrap.servers") || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("bootstrap.servers=mem://%s: %v, want an error naming the key and %q", bad.name, err, bad.want)
		}
	}
	if _, err := coord.ConfigFromMap(map[string]string{"bootstrap.servers": "mem://a,localhost:9092"}); err == nil || !strings.Contains(err.Error(), "only entry") {
		t.Errorf("mem:// beside a broker: %v, want 'must be the only entry'", err)
	}
	for _, p := range []int32{0, -1, memtransport.MaxPartitions + 1} {
		if _, err := memtransport.NewNamed("parts", p); err == nil || !strings.Contains(err.Error(), "partitions") {
			t.Errorf("NewNamed partitions %d: %v, want an error naming partitions", p, err)
		}
	}
	c := newNamed(t, "dup", 1)
	if _, err := memtransport.NewNamed("dup", 1); err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Errorf("a second cluster named dup: %v, want 'already exists'", err)
	}
	if err := c.Advance(-time.Millisecond); err == nil || !strings.Contains(err.Error(), "backwards") {
		t.Errorf("Advance(-1ms): %v, want an error saying the clock never goes backwards", err)
	}
	before := c.NowMs()
	if err := c.Advance(0); err != nil || c.NowMs() != before {
		t.Errorf("Advance(0): %v, clock %d -> %d", err, before, c.NowMs())
	}
	if err := c.Advance(1500 * time.Millisecond); err != nil || c.NowMs() != before+1500 {
		t.Errorf("Advance(1.5s): %v, clock %d -> %d", err, before, c.NowMs())
	}
	if before != memtransport.ClockStartMs {
		t.Errorf("a new cluster's clock reads %d, want %d", before, memtransport.ClockStartMs)
	}
	rt, err := memtransport.NewNamed("real-time", 1, memtransport.WithRealTime())
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	if err := rt.Advance(time.Second); err == nil || !strings.Contains(err.Error(), "real time") {
		t.Errorf("Advance on a real-time clock: %v, want an error saying so", err)
	}
	if now, wall := rt.NowMs(), time.Now().UnixMilli(); now > wall || wall-now > 60000 {
		t.Errorf("the real-time clock reads %d, the system clock %d", now, wall)
	}

	// A client of a real cluster (never connected: no broker needed).
	cfg, err := coord.ConfigFromMap(map[string]string{"bootstrap.servers": "127.0.0.1:1"})
	if err != nil {
		t.Fatal(err)
	}
	real, err := kafka.NewClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer real.Close()
	if _, err := memtransport.Control(real); err == nil || !strings.Contains(err.Error(), "not connected to an in-process cluster") || !strings.Contains(err.Error(), "127.0.0.1:1") {
		t.Errorf("Control of a real-broker client: %v, want an error naming the problem", err)
	}
	if _, err := memtransport.Control(nil); err == nil {
		t.Error("Control(nil) succeeded")
	}

	// A name no cluster has; one whose cluster was closed.
	cfg, _ = coord.ConfigFromMap(map[string]string{"bootstrap.servers": "mem://nobody"})
	if _, err := kafka.NewClient(cfg); err == nil || !strings.Contains(err.Error(), `no in-process cluster named "nobody"`) {
		t.Errorf("a client of mem://nobody: %v, want an error naming it", err)
	}
	gone, _ := memtransport.NewNamed("gone", 1)
	cl := memClient(t, "gone")
	gone.Close()
	if _, err := cl.Describe(context.Background(), core.MustRole("r")); !errors.Is(err, coord.ErrTransport) || !strings.Contains(err.Error(), "destroyed") {
		t.Errorf("describe on a destroyed cluster: %v, want a transport error saying it was destroyed", err)
	}
	if again, err := memtransport.NewNamed("gone", 1); err != nil {
		t.Errorf("the name of a closed cluster is not free again: %v", err)
	} else {
		again.Close()
	}
	// kafka.New (the paths that need a real cluster) refuses mem://.
	cfg, _ = coord.ConfigFromMap(map[string]string{"bootstrap.servers": "mem://dup"})
	if _, err := kafka.New(cfg); !errors.Is(err, coord.ErrUnsupported) || !strings.Contains(err.Error(), "needs a real Kafka cluster") {
		t.Errorf("kafka.New on mem://: %v, want UNSUPPORTED saying it needs a real cluster", err)
	}
}

// The calls of coord.Client and coord.Leadership that docs/TESTING.md
// says work on the in-process cluster: confirm, ResignTo, Fence, Roles,
// Stats, and a cluster made unavailable.
func TestNamedClusterServesEveryClientCall(t *testing.T) {
	c := newNamed(t, "go-calls", 2)
	ctx := context.Background()
	role := core.MustRole("svc")
	a, b, d := memClient(t, "go-calls"), memClient(t, "go-calls"), memClient(t, "go-calls")

	la, err := a.Acquire(ctx, role, core.MustMemberID("a"))
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := la.Confirm(ctx); !ok || err != nil {
		t.Fatalf("confirm of the holder: %v, %v", ok, err)
	}
	if st := a.Stats(); st.Leaders != 1 || st.TimeMs != c.NowMs() {
		t.Fatalf("stats: %d leaders at %d, want 1 at the cluster's %d", st.Leaders, st.TimeMs, c.NowMs())
	}
	// b registers (a standby), then a hands the role to b.
	if l, _, err := b.TryAcquire(ctx, role, core.MustMemberID("b")); l != nil || err != nil {
		t.Fatalf("b's try_acquire: %v, %v", l, err)
	}
	if err := la.ResignTo(ctx, core.MustMemberID("b")); err != nil {
		t.Fatal(err)
	}
	lb, _, err := b.TryAcquire(ctx, role, core.MustMemberID("b"))
	if err != nil || lb == nil {
		t.Fatalf("b after a resigned to it: %v, %v", lb, err)
	}
	n, roles, err := d.Roles(ctx)
	if err != nil || len(roles) != 1 || roles[0].Holder != core.MustMemberID("b") {
		t.Fatalf("roles: %d, %v, %v", n, roles, err)
	}
	// An operator's fence deposes b through the coordinator.
	res, err := d.Fence(ctx, role, "test", nil)
	if err != nil || res.Deposed != core.MustMemberID("b") || !res.NewToken.Supersedes(lb.Token()) {
		t.Fatalf("fence: %+v, %v", res, err)
	}
	if _, err := lb.Produce(ctx, coord.Message{Topic: "t", Partition: 0, Value: []byte("x")}); !errors.Is(err, coord.ErrFenced) {
		t.Fatalf("produce after the fence: %v, want FENCED", err)
	}
	// Unavailable: every call refused at once; available again: served.
	c.SetAvailable(false)
	if _, err := d.Describe(ctx, role); !errors.Is(err, coord.ErrTransport) || !strings.Contains(err.Error(), "unavailable") {
		t.Fatalf("describe while unavailable: %v", err)
	}
	ctl, _ := memtransport.Control(d)
	if _, err := ctl.Mint(role); !errors.Is(err, coord.ErrTransport) {
		t.Fatalf("mint while unavailable: %v", err)
	}
	c.SetAvailable(true)
	if st, err := d.Describe(ctx, role); err != nil || st.Holder != core.MustMemberID("b") {
		t.Fatalf("describe after: %v, %v", st, err)
	}
}

// A paused client's calls hold until resumed, and its clock stands still;
// a cut client's calls fail at once until healed.
func TestNamedClusterPauseAndCut(t *testing.T) {
	c := newNamed(t, "go-pause", 1)
	ctx := context.Background()
	role := core.MustRole("p")
	a := memClient(t, "go-pause")
	ctl, err := memtransport.Control(a)
	if err != nil {
		t.Fatal(err)
	}
	if err := ctl.Cut(); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Describe(ctx, role); !errors.Is(err, coord.ErrTransport) {
		t.Fatalf("describe on a cut link: %v", err)
	}
	if err := ctl.Heal(); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Describe(ctx, role); err != nil {
		t.Fatalf("describe after heal: %v", err)
	}
	if err := ctl.Pause(); err != nil {
		t.Fatal(err)
	}
	frozen := a.Stats().TimeMs
	if err := c.Advance(time.Minute); err != nil {
		t.Fatal(err)
	}
	if got := a.Stats().TimeMs; got != frozen {
		t.Fatalf("a paused client's clock moved from %d to %d", frozen, got)
	}
	done := make(chan error, 1)
	go func() { _, err := a.Describe(ctx, role); done <- err }()
	select {
	case err := <-done:
		t.Fatalf("a paused client's describe returned: %v", err)
	case <-time.After(20 * time.Millisecond):
	}
	if err := ctl.Resume(); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("the held describe after resume: %v", err)
	}
	if got := a.Stats().TimeMs; got != c.NowMs() {
		t.Fatalf("after resume the client's clock reads %d, the cluster's %d", got, c.NowMs())
	}
	// A bounded call of a paused client ends with its timeout.
	ctl.Pause()
	tctx, cancel := context.WithTimeout(ctx, 10*time.Millisecond)
	defer cancel()
	if _, err := a.Describe(tctx, role); !errors.Is(err, coord.ErrTimeout) {
		t.Fatalf("a bounded describe while paused: %v, want TIMEOUT", err)
	}
	ctl.Kill()
	if err := ctl.Resume(); err == nil || !strings.Contains(err.Error(), "killed") {
		t.Fatalf("resume of a killed client: %v", err)
	}
	if _, err := a.Describe(ctx, role); !errors.Is(err, coord.ErrTransport) || !strings.Contains(err.Error(), "killed") {
		t.Fatalf("describe of a killed client: %v", err)
	}
}
