package main

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/krabka/krabka-coord/core"
	"github.com/krabka/krabka-coord/core/coord"
	"github.com/krabka/krabka-coord/core/memtransport"
)

// The pipeline of a leadership (in memory): every request becomes one
// command naming it, reported as PIPED; a second term of the pipeline
// (after the first one's end) resumes at the committed offsets, so the
// requests written meanwhile are turned into commands and none twice.
func TestPipelineTurnsEachRequestIntoOneCommand(t *testing.T) {
	cluster := memtransport.NewCluster(4)
	cluster.CreateTopic("requests", 3)
	write := func(from, to int) {
		for i := from; i < to; i++ {
			cluster.AppendRaw("requests", int32(i%3), nil, []byte(fmt.Sprintf("req=%d", i)))
		}
	}
	write(0, 30)
	cfg := coord.DefaultConfig()
	if err := cfg.Set("bootstrap.servers", "mem:9092"); err != nil {
		t.Fatal(err)
	}
	client, err := coord.NewClient(cfg, cluster.Transport(cfg.Topic), core.NewManualClock(1_800_000_000_000))
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	role, _ := core.NewRole("pipe")
	member, _ := core.NewMemberID("go-1")
	l, err := client.Acquire(context.Background(), role, member)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	h, out := testHost()
	h.rejoin = 10 * time.Millisecond
	// runUntil runs the pipeline until n commands are there (or 30 s went
	// by: then the test fails on the count below) and ends its term.
	runUntil := func(n int) {
		tm := &term{stop: make(chan struct{})}
		var gate sync.RWMutex
		done := make(chan struct{})
		go func() {
			defer close(done)
			h.pipeline(l, tm, &gate, "pipe", "commands", "requests")
		}()
		deadline := time.Now().Add(30 * time.Second)
		for len(cluster.Records("commands", 0)) < n && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
		}
		tm.end()
		<-done
	}
	runUntil(30)
	write(30, 45)
	runUntil(45)
	count := map[string]int{}
	for _, r := range cluster.Records("commands", 0) {
		f := strings.Fields(string(r.Value))
		if len(f) < 2 || !strings.HasPrefix(f[0], "in=") {
			t.Fatalf("command %q", r.Value)
		}
		count[f[0]+" "+f[1]]++
	}
	for i := 0; i < 45; i++ {
		key := fmt.Sprintf("in=%d/%d req=%d", i%3, i/3, i)
		if count[key] != 1 {
			t.Errorf("request %d: %d commands", i, count[key])
		}
	}
	if len(count) != 45 {
		t.Errorf("%d distinct commands, want 45", len(count))
	}
	if n := strings.Count(out.String(), " PIPED role=pipe "); n != 45 {
		t.Errorf("%d PIPED events, want 45", n)
	}
}
