package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/krabka/krabka-coord/core"
	"github.com/krabka/krabka-coord/core/coord"
	"github.com/krabka/krabka-coord/core/kafka"
	"github.com/krabka/krabka-coord/core/memtransport"
)

// The controller's failover, tested as a user tests theirs: on the
// in-process cluster (bootstrap.servers=mem://NAME), no broker, the lease
// clock moved by the test. Node A leads and dispatches; a blind successor
// fences it in the middle of its commands (every later command of A is
// refused, none is committed); node B takes over once the clock passes A's
// lease deadline and dispatches in its turn.
func TestControllerFailover(t *testing.T) {
	start := time.Now()
	cluster, err := memtransport.NewNamed("example-controller", 1)
	if err != nil {
		t.Fatal(err)
	}
	defer cluster.Close()
	role := core.MustRole("controller")

	type node struct {
		client  *coord.Client
		started chan struct{}
		stopped chan coord.StopReason
	}
	run := func(member string, opts ...coord.ElectOption) *node {
		cfg := coord.DefaultConfig()
		if err := cfg.Set("bootstrap.servers", "mem://example-controller"); err != nil {
			t.Fatal(err)
		}
		client, err := kafka.NewClient(cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { client.Close() })
		elector, err := coord.NewElector(client, role, core.MustMemberID(member), opts...)
		if err != nil {
			t.Fatal(err)
		}
		n := &node{client: client, started: make(chan struct{}, 8), stopped: make(chan coord.StopReason, 8)}
		cb := controller{topic: "commands", member: member, every: time.Millisecond}.callbacks()
		onStarted, onStopped := cb.OnStarted, cb.OnStopped
		cb.OnStarted = func(ctx context.Context, l *coord.Leadership) { n.started <- struct{}{}; onStarted(ctx, l) }
		cb.OnStopped = func(r coord.StopReason, err error) { onStopped(r, err); n.stopped <- r }
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { defer close(done); elector.RunWithCallbacks(ctx, cb) }()
		t.Cleanup(func() { cancel(); <-done })
		return n
	}
	wait := func(what string, ch <-chan struct{}) {
		t.Helper()
		select {
		case <-ch:
		case <-time.After(20 * time.Second):
			t.Fatalf("%s never happened", what)
		}
	}
	byMember := func() (a, b int) {
		for _, r := range cluster.Records("commands", 0) {
			switch string(r.Key) {
			case "node-a":
				a++
			case "node-b":
				b++
			}
		}
		return a, b
	}

	// A fenced node stays down (no re-campaign), so B is the successor.
	a := run("node-a", coord.ElectRecampaign(false))
	wait("A's term", a.started)
	for n, _ := byMember(); n < 3; n, _ = byMember() {
		time.Sleep(time.Millisecond) // A dispatches on its own ticker
	}
	b := run("node-b")

	// Fenced mid-command: the blind successor mints the role at the
	// coordinator; A's next command is refused and its term stops FENCED.
	ctl, err := memtransport.Control(a.client)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ctl.Mint(role); err != nil {
		t.Fatal(err)
	}
	var reason coord.StopReason
	select {
	case reason = <-a.stopped:
	case <-time.After(20 * time.Second):
		t.Fatal("A's term never stopped after the blind successor minted")
	}
	if reason != coord.StopFenced {
		t.Fatalf("A's term stopped with %s, want FENCED", reason)
	}
	aCommitted, _ := byMember()

	// B takes over once the clock passes A's lease deadline.
	var moved time.Duration
	for len(b.started) == 0 && moved < 5*time.Minute {
		if err := cluster.Advance(time.Second); err != nil {
			t.Fatal(err)
		}
		moved += time.Second
		time.Sleep(2 * time.Millisecond)
	}
	wait("B's term", b.started)
	for _, n := byMember(); n < 3; _, n = byMember() {
		time.Sleep(time.Millisecond)
	}
	if after, _ := byMember(); after != aCommitted {
		t.Fatalf("A had %d commands committed when fenced and %d later: a fenced write was committed", aCommitted, after)
	}
	recs := cluster.Records("commands", 0)
	last := recs[len(recs)-1]
	if string(last.Key) != "node-b" || !strings.HasPrefix(string(last.Value), "command ") {
		t.Fatalf("the last committed command is %q from %q, want one of node-b", last.Value, last.Key)
	}
	t.Logf("failover: A fenced after %d commands, B took over after %v of cluster time; %v of wall time", aCommitted, moved, time.Since(start))
}
