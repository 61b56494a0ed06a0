package main

import (
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/krabka/krabka-coord/core/coord"
	"github.com/krabka/krabka-coord/core/kafka"
)

// syncBuf is a goroutine-safe buffer of the event lines.
type syncBuf struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func testHost() (*host, *syncBuf) {
	out := &syncBuf{}
	return &host{member: "go-1", out: out, renewing: map[string]bool{}, leads: map[string]*coord.Leadership{}}, out
}

func produced(role string) kafka.RequestTrace {
	return kafka.RequestTrace{Client: "producer", TxnID: role, Key: "Produce", Broker: 2}
}

// traceReturns runs h.trace(tr) and says whether it returned within d.
func traceReturns(h *host, tr kafka.RequestTrace, d time.Duration) (chan struct{}, bool) {
	done := make(chan struct{})
	go func() {
		h.trace(tr)
		close(done)
	}()
	select {
	case <-done:
		return done, true
	case <-time.After(d):
		return done, false
	}
}

// Armed, at a renewing role's answered Produce: MIDTXN is printed and the
// answer is held until GO; the arm is used up.
func TestTraceHoldsAnArmedRenewalUntilGo(t *testing.T) {
	h, out := testHost()
	pr, pw := io.Pipe()
	go h.control(pr)
	h.setRenewing("r1", true)
	if _, err := io.WriteString(pw, "ARM\n"); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(2 * time.Second)
	for !h.armed.Load() && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	done, ok := traceReturns(h, produced("r1"), 200*time.Millisecond)
	if ok {
		t.Fatal("the armed renewal's answer was not held")
	}
	if got := out.String(); !strings.Contains(got, " go-1 MIDTXN role=r1 ") || !strings.Contains(got, "broker=2") {
		t.Fatalf("events: %q", got)
	}
	if _, err := io.WriteString(pw, "GO\n"); err != nil {
		t.Fatal(err)
	}
	select {
	case <-done:
	case <-time.After(2 * time.Second):
		t.Fatal("GO did not release the answer")
	}
	if h.armed.Load() {
		t.Fatal("the arm was not used up")
	}
	// Not armed any more: the next renewal passes.
	if _, ok := traceReturns(h, produced("r1"), time.Second); !ok {
		t.Fatal("an unarmed renewal was held")
	}
	pw.Close()
}

// Nothing else is held: an unarmed renewal, a role that is not renewing
// (a guarded write, an acquisition's lease), another request or client, a
// failed request, or an arm withdrawn with DISARM.
func TestTraceLetsEverythingElsePass(t *testing.T) {
	h, out := testHost()
	h.setRenewing("r1", true)
	if _, ok := traceReturns(h, produced("r1"), time.Second); !ok {
		t.Fatal("unarmed renewal held")
	}
	h.armed.Store(true)
	for name, tr := range map[string]kafka.RequestTrace{
		"not renewing": produced("r2"),
		"EndTxn":       {Client: "producer", TxnID: "r1", Key: "EndTxn"},
		"registrar":    {Client: "registrar", Key: "Produce"},
		"failed":       {Client: "producer", TxnID: "r1", Key: "Produce", Err: io.ErrUnexpectedEOF},
	} {
		if _, ok := traceReturns(h, tr, time.Second); !ok {
			t.Fatalf("%s: held", name)
		}
	}
	if !h.armed.Load() {
		t.Fatal("the arm was used up by a request that is not an answered renewal")
	}
	pr, pw := io.Pipe()
	go h.control(pr)
	if _, err := io.WriteString(pw, "DISARM\n"); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(2 * time.Second)
	for h.armed.Load() && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if _, ok := traceReturns(h, produced("r1"), time.Second); !ok {
		t.Fatal("a disarmed renewal was held")
	}
	if strings.Contains(out.String(), "MIDTXN") {
		t.Fatalf("MIDTXN printed: %q", out.String())
	}
	pw.Close()
}

// With the shared engine (the default) a renewal's Produce is traced by the
// engine's control plane with the role's transactional id: armed, it is
// held until GO like the per-role producer's; the engine's Produce of
// another role passes.
func TestTraceHoldsTheEnginesRenewal(t *testing.T) {
	h, out := testHost()
	h.setRenewing("r1", true)
	h.armed.Store(true)
	if _, ok := traceReturns(h, kafka.RequestTrace{Client: "engine-control", TxnID: "r2", Key: "Produce", Broker: 2}, time.Second); !ok {
		t.Fatal("the engine's Produce of a role not renewing was held")
	}
	done, ok := traceReturns(h, kafka.RequestTrace{Client: "engine-control", TxnID: "r1", Key: "Produce", Broker: 2}, 200*time.Millisecond)
	if ok {
		t.Fatal("the engine's armed renewal was not held")
	}
	if got := out.String(); !strings.Contains(got, " go-1 MIDTXN role=r1 ") {
		t.Fatalf("events: %q", got)
	}
	pr, pw := io.Pipe()
	go h.control(pr)
	if _, err := io.WriteString(pw, "GO\n"); err != nil {
		t.Fatal(err)
	}
	select {
	case <-done:
	case <-time.After(2 * time.Second):
		t.Fatal("GO did not release the engine's answer")
	}
	pw.Close()
}
