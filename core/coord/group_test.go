package coord_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/krabka/krabka-coord/core/coord"
	"github.com/krabka/krabka-coord/core/memtransport"
)

// gatedTransport holds every transaction of its producers at a gate while
// gating is on, and reports the messages of each transaction.
type gatedTransport struct {
	*memtransport.Transport
	gating  atomic.Bool
	entered chan []coord.Message
	gate    chan struct{}
}

type gatedProducer struct {
	coord.TxnProducer
	t *gatedTransport
}

func (g *gatedTransport) Mint(ctx context.Context, id string, timeout time.Duration) (coord.TxnProducer, error) {
	p, err := g.Transport.Mint(ctx, id, timeout)
	if err != nil {
		return nil, err
	}
	return &gatedProducer{p, g}, nil
}

func (p *gatedProducer) Transact(ctx context.Context, msgs []coord.Message) ([]coord.ProduceResult, error) {
	if p.t.gating.Load() {
		p.t.entered <- append([]coord.Message(nil), msgs...)
		<-p.t.gate
	}
	return p.TxnProducer.Transact(ctx, msgs)
}

type produced struct {
	res []coord.ProduceResult
	err error
}

func produceAsync(ctx context.Context, l *coord.Leadership, values ...string) <-chan produced {
	ch := make(chan produced, 1)
	msgs := make([]coord.Message, len(values))
	for i, v := range values {
		msgs[i] = coord.Message{Topic: "commands", Partition: 0, Key: []byte("k"), Value: []byte(v)}
	}
	go func() {
		res, err := l.Produce(ctx, msgs...)
		ch <- produced{res, err}
	}()
	return ch
}

func waitPending(t *testing.T, l *coord.Leadership, n int) {
	t.Helper()
	for l.PendingWrites() != n {
		time.Sleep(time.Millisecond)
	}
}

func valuesOf(msgs []coord.Message) []string {
	out := make([]string, len(msgs))
	for i, m := range msgs {
		out[i] = string(m.Value)
	}
	return out
}

// Calls queued behind a transaction in flight go into the next one, in
// queue order, each caller's messages together and in its order; a caller
// that gives up while queued is left out and its message is never written;
// a renewal never shares a transaction with guarded writes.
func TestGroupCommitGathersQueuedCallsInOrder(t *testing.T) {
	e := newEnv(t)
	cfg := e.config("krabka.produce.group.linger.ms", "0")
	g := &gatedTransport{Transport: e.cluster.Transport(cfg.Topic), entered: make(chan []coord.Message, 16), gate: make(chan struct{})}
	c, err := coord.NewClient(cfg, g, e.clock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	l, err := c.Acquire(bg(), role, ma)
	if err != nil {
		t.Fatal(err)
	}
	g.gating.Store(true)

	a := produceAsync(bg(), l, "a")
	if got := valuesOf(<-g.entered); len(got) != 1 || got[0] != "a" {
		t.Fatalf("first transaction %q", got)
	}
	bctx, cancelB := context.WithCancel(bg())
	b := produceAsync(bctx, l, "b")
	waitPending(t, l, 1)
	cc := produceAsync(bg(), l, "c1", "c2")
	waitPending(t, l, 2)
	d := produceAsync(bg(), l, "d")
	waitPending(t, l, 3)
	cancelB()
	if r := <-b; !errors.Is(r.err, context.Canceled) {
		t.Fatalf("withdrawn caller: %+v", r)
	}
	if n := l.PendingWrites(); n != 2 {
		t.Fatalf("%d pending after the withdrawal", n)
	}
	g.gate <- struct{}{} // a commits
	if r := <-a; r.err != nil || len(r.res) != 1 {
		t.Fatalf("a: %+v", r)
	}
	if got := valuesOf(<-g.entered); len(got) != 3 || got[0] != "c1" || got[1] != "c2" || got[2] != "d" {
		t.Fatalf("second transaction %q, want c1 c2 d", got)
	}
	g.gate <- struct{}{}
	rc, rd := <-cc, <-d
	if rc.err != nil || rd.err != nil || len(rc.res) != 2 || len(rd.res) != 1 {
		t.Fatalf("c: %+v d: %+v", rc, rd)
	}
	if rc.res[0].Offset+1 != rc.res[1].Offset || rc.res[1].Offset+1 != rd.res[0].Offset {
		t.Fatalf("offsets c %+v d %+v", rc.res, rd.res)
	}
	for _, r := range e.cluster.Records("commands", 0) {
		if string(r.Value) == "b" {
			t.Fatal("the withdrawn caller's message was written")
		}
	}

	// A renewal and guarded writes, concurrently: never in one transaction.
	f := produceAsync(bg(), l, "f")
	first := <-g.entered
	var wg sync.WaitGroup
	wg.Add(1)
	var renewErr error
	go func() { defer wg.Done(); renewErr = l.Renew(bg()) }()
	h := produceAsync(bg(), l, "h")
	waitPending(t, l, 1)
	txns := [][]coord.Message{first}
	for i := 0; i < 2; i++ {
		g.gate <- struct{}{}
		txns = append(txns, <-g.entered)
	}
	g.gating.Store(false)
	g.gate <- struct{}{}
	wg.Wait()
	if renewErr != nil {
		t.Fatal(renewErr)
	}
	if r := <-f; r.err != nil {
		t.Fatal(r.err)
	}
	if r := <-h; r.err != nil {
		t.Fatal(r.err)
	}
	leases := 0
	for _, txn := range txns {
		lease := 0
		for _, m := range txn {
			if m.Topic == cfg.Topic {
				lease++
			}
		}
		if lease > 0 && lease != len(txn) {
			t.Fatalf("a renewal shared a transaction with guarded writes: %+v", txn)
		}
		leases += lease
	}
	if leases != 1 {
		t.Fatalf("%d lease writes in %d transactions", leases, len(txns))
	}
}

// A transaction that fails fails its own callers only; a fence fails every
// caller of its transaction and then every queued call.
func TestGroupCommitFailureReachesOnlyItsTransaction(t *testing.T) {
	e := newEnv(t)
	cfg := e.config("krabka.produce.group.linger.ms", "0")
	g := &gatedTransport{Transport: e.cluster.Transport(cfg.Topic), entered: make(chan []coord.Message, 16), gate: make(chan struct{})}
	c, err := coord.NewClient(cfg, g, e.clock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	l, err := c.Acquire(bg(), role, ma)
	if err != nil {
		t.Fatal(err)
	}
	g.gating.Store(true)
	a := produceAsync(bg(), l, "a")
	<-g.entered
	b1 := produceAsync(bg(), l, "b1")
	waitPending(t, l, 1)
	b2 := produceAsync(bg(), l, "b2")
	waitPending(t, l, 2)
	g.gate <- struct{}{} // a commits
	if r := <-a; r.err != nil {
		t.Fatal(r.err)
	}
	if got := valuesOf(<-g.entered); len(got) != 2 {
		t.Fatalf("second transaction %q", got)
	}
	cq := produceAsync(bg(), l, "c")
	waitPending(t, l, 1)
	g.Transport.SetFault(memtransport.Refuse) // b1 and b2's transaction fails
	g.gate <- struct{}{}
	for name, ch := range map[string]<-chan produced{"b1": b1, "b2": b2} {
		if r := <-ch; !errors.Is(r.err, coord.ErrTransport) {
			t.Fatalf("%s: %+v", name, r)
		}
	}
	if got := valuesOf(<-g.entered); len(got) != 1 || got[0] != "c" {
		t.Fatalf("third transaction %q", got)
	}
	g.Transport.SetFault(memtransport.Healthy)
	g.gate <- struct{}{}
	if r := <-cq; r.err != nil {
		t.Fatalf("the next transaction failed too: %v", r.err)
	}
	if l.State() != coord.Active {
		t.Fatalf("state %s", l.State())
	}

	// A standby's mint fences the holder: every caller of the transaction
	// in flight and every queued caller get ErrFenced.
	d := produceAsync(bg(), l, "d1")
	<-g.entered
	q1 := produceAsync(bg(), l, "q1")
	q2 := produceAsync(bg(), l, "q2")
	waitPending(t, l, 2)
	if _, err := g.Transport.Mint(bg(), c.TransactionalID(role), time.Second); err != nil {
		t.Fatal(err)
	}
	g.gating.Store(false)
	g.gate <- struct{}{}
	for name, ch := range map[string]<-chan produced{"in flight": d, "queued 1": q1, "queued 2": q2} {
		if r := <-ch; !errors.Is(r.err, coord.ErrFenced) {
			t.Fatalf("%s: %+v", name, r)
		}
	}
	if l.State() != coord.Fenced {
		t.Fatalf("state %s", l.State())
	}
}
