package coord_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/krabka/krabka-coord/core/coord"
	"github.com/krabka/krabka-coord/core/memtransport"
)

// requests writes n numbered requests round robin over the partitions of
// the "requests" topic (3 partitions).
func requests(c *memtransport.Cluster, n int) {
	c.CreateTopic("requests", 3)
	for i := 0; i < n; i++ {
		c.AppendRaw("requests", int32(i%3), []byte(fmt.Sprint(i)), []byte(fmt.Sprintf("req-%d", i)))
	}
}

// pollAll polls in until n records arrived.
func pollAll(t *testing.T, in *coord.Input, n int) []coord.InputRecord {
	t.Helper()
	var out []coord.InputRecord
	for len(out) < n {
		ctx, cancel := context.WithTimeout(bg(), 5*time.Second)
		recs, err := in.Poll(ctx, n-len(out))
		cancel()
		if err != nil {
			t.Fatalf("poll after %d of %d records: %v", len(out), n, err)
		}
		out = append(out, recs...)
	}
	return out
}

// commandsOf turns records into commands, the offsets to commit with them.
func commandsOf(recs []coord.InputRecord) ([]coord.Message, []coord.Offset) {
	var msgs []coord.Message
	next := map[coord.TopicPartition]int64{}
	var tps []coord.TopicPartition
	for _, r := range recs {
		msgs = append(msgs, coord.Message{Topic: "commands", Partition: 0, Value: []byte("cmd-" + string(r.Value))})
		tp := coord.TopicPartition{Topic: r.Topic, Partition: r.Partition}
		if _, ok := next[tp]; !ok {
			tps = append(tps, tp)
		}
		next[tp] = r.Offset + 1
	}
	var offs []coord.Offset
	for _, tp := range tps {
		offs = append(offs, coord.Offset{Topic: tp.Topic, Partition: tp.Partition, Offset: next[tp]})
	}
	return msgs, offs
}

func commandValues(c *memtransport.Cluster) []string {
	var out []string
	for _, r := range c.Records("commands", 0) {
		out = append(out, string(r.Value))
	}
	return out
}

// A leadership reads from the log start, commits commands with their
// offsets; the successor's first read starts at the committed offsets, and
// the deposed leader's offset commit is refused (FENCED) with its writes.
func TestPipelineSuccessorResumesAtCommittedOffsets(t *testing.T) {
	e := newEnv(t)
	requests(e.cluster, 30)
	ca, _ := e.client()
	la, err := ca.Acquire(bg(), role, ma)
	if err != nil {
		t.Fatal(err)
	}
	if g := ca.PipelineGroup(role); g != ca.TransactionalID(role)+".pipeline" {
		t.Fatalf("group %q", g)
	}
	in, err := la.Consume(bg(), "requests")
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range in.Position() {
		if o.Offset != 0 {
			t.Fatalf("fresh group: position %+v, want the log start", in.Position())
		}
	}
	recs := pollAll(t, in, 12)
	msgs, offs := commandsOf(recs)
	if _, err := la.ProduceOffsets(bg(), offs, msgs...); err != nil {
		t.Fatal(err)
	}
	got := in.Committed() // every partition: the ones not read stay at 0
	byTP := map[coord.TopicPartition]int64{}
	for _, o := range e.cluster.GroupOffsets(ca.PipelineGroup(role)) {
		byTP[coord.TopicPartition{Topic: o.Topic, Partition: o.Partition}] = o.Offset
	}
	for _, o := range got {
		if byTP[coord.TopicPartition{Topic: o.Topic, Partition: o.Partition}] != o.Offset {
			t.Fatalf("group offsets %+v, input says committed %+v, sent %+v", byTP, got, offs)
		}
	}
	if len(byTP) != len(offs) {
		t.Fatalf("group offsets %+v, sent %+v", byTP, offs)
	}
	before := fmt.Sprint(e.cluster.GroupOffsets(ca.PipelineGroup(role)))
	// The deposed leader reads more, then a successor mints.
	more := pollAll(t, in, 6)
	cb, _ := e.client()
	resB := acquireAsync(cb, bg(), mb)
	e.advanceUntil(time.Second, time.Minute, ready(resB))
	rb := <-resB
	if rb.err != nil {
		t.Fatal(rb.err)
	}
	msgs2, offs2 := commandsOf(more)
	if _, err := la.ProduceOffsets(bg(), offs2, msgs2...); !errors.Is(err, coord.ErrFenced) {
		t.Fatalf("deposed leader's offset commit: %v, want FENCED", err)
	}
	if after := fmt.Sprint(e.cluster.GroupOffsets(ca.PipelineGroup(role))); after != before {
		t.Fatalf("offsets moved after a refused commit: %s -> %s", before, after)
	}
	if n := len(commandValues(e.cluster)); n != 12 {
		t.Fatalf("%d commands, want 12", n)
	}
	if _, err := in.Poll(bg(), 1); !errors.Is(err, coord.ErrFenced) {
		t.Fatalf("poll of an ended leadership: %v", err)
	}
	inB, err := rb.l.Consume(bg(), "requests")
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(inB.Position()) != fmt.Sprint(got) || fmt.Sprint(inB.Committed()) != fmt.Sprint(got) {
		t.Fatalf("successor starts at %+v (committed %+v), want %+v", inB.Position(), inB.Committed(), got)
	}
	rest := pollAll(t, inB, 18)
	msgs3, offs3 := commandsOf(rest)
	if _, err := rb.l.ProduceOffsets(bg(), offs3, msgs3...); err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for _, v := range commandValues(e.cluster) {
		seen[v]++
	}
	for i := 0; i < 30; i++ {
		if n := seen[fmt.Sprintf("cmd-req-%d", i)]; n != 1 {
			t.Errorf("request %d: %d commands", i, n)
		}
	}
}

// Bad input fails before anything is written, naming the problem.
func TestPipelineBadInputErrorsBeforeWriting(t *testing.T) {
	e := newEnv(t)
	requests(e.cluster, 9)
	e.cluster.CreateTopic("other", 2)
	c, _ := e.client()
	l, err := c.Acquire(bg(), role, ma)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Consume(bg(), "requests", "missing"); !errors.Is(err, coord.ErrUnknownTopicOrPartition) || !strings.Contains(err.Error(), `"missing"`) {
		t.Fatalf("consume of a missing topic: %v", err)
	}
	for _, bad := range [][]string{nil, {""}, {"requests", "requests"}, {"bad topic"}} {
		if _, err := l.Consume(bg(), bad...); !errors.Is(err, coord.ErrInvalidArgument) {
			t.Fatalf("consume %q: %v", bad, err)
		}
	}
	in, err := l.Consume(bg(), "requests")
	if err != nil {
		t.Fatal(err)
	}
	pollAll(t, in, 9)
	if _, err := l.ProduceOffsets(bg(), []coord.Offset{{Topic: "requests", Partition: 0, Offset: 2}}); err != nil {
		t.Fatal(err)
	}
	cmd := coord.Message{Topic: "commands", Partition: 0, Value: []byte("x")}
	cases := []struct {
		offs []coord.Offset
		kind error
		want string
	}{
		{[]coord.Offset{{Topic: "other", Partition: 0, Offset: 1}}, coord.ErrInvalidArgument, `topic "other" was not read`},
		{[]coord.Offset{{Topic: "nope", Partition: 0, Offset: 1}}, coord.ErrUnknownTopicOrPartition, "does not exist"},
		{[]coord.Offset{{Topic: "requests", Partition: 3, Offset: 1}}, coord.ErrUnknownTopicOrPartition, "partition 3 of \"requests\" does not exist"},
		{[]coord.Offset{{Topic: "requests", Partition: 0, Offset: 1}}, coord.ErrInvalidArgument, "goes backwards: 2 is committed"},
		{[]coord.Offset{{Topic: "requests", Partition: 1, Offset: 4}}, coord.ErrInvalidArgument, "beyond what this leadership read (position 3)"},
		{[]coord.Offset{{Topic: "requests", Partition: 1, Offset: 1}, {Topic: "requests", Partition: 1, Offset: 2}}, coord.ErrInvalidArgument, "given twice"},
		{[]coord.Offset{{Topic: "requests", Partition: -1, Offset: 1}}, coord.ErrInvalidArgument, "must be 0 or more"},
		{[]coord.Offset{{Topic: "requests", Partition: 1, Offset: 3}, {Topic: "requests", Partition: 2, Offset: -5}}, coord.ErrInvalidArgument, "must be 0 or more"},
	}
	before := fmt.Sprint(e.cluster.GroupOffsets(c.PipelineGroup(role)))
	for _, tc := range cases {
		_, err := l.ProduceOffsets(bg(), tc.offs, cmd)
		if !errors.Is(err, tc.kind) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %v naming %q", tc.offs, err, tc.kind, tc.want)
		}
	}
	if n := len(commandValues(e.cluster)); n != 0 {
		t.Fatalf("%d commands written by refused calls", n)
	}
	if after := fmt.Sprint(e.cluster.GroupOffsets(c.PipelineGroup(role))); after != before {
		t.Fatalf("offsets moved: %s -> %s", before, after)
	}
	if l.State() != coord.Active {
		t.Fatalf("bad input ended the leadership: %v", l.Err())
	}
}

// offsetGate holds offset transactions at a gate and reports the offsets of
// each.
type offsetGate struct {
	*memtransport.Transport
	entered chan []coord.Offset
	gate    chan struct{}
}

type offsetGateProducer struct {
	coord.TxnProducer
	g *offsetGate
}

func (g *offsetGate) Mint(ctx context.Context, id string, timeout time.Duration) (coord.TxnProducer, error) {
	p, err := g.Transport.Mint(ctx, id, timeout)
	if err != nil {
		return nil, err
	}
	return &offsetGateProducer{p, g}, nil
}

func (p *offsetGateProducer) TransactOffsets(ctx context.Context, group string, offs []coord.Offset, msgs []coord.Message) ([]coord.ProduceResult, error) {
	p.g.entered <- offs
	<-p.g.gate
	return p.TxnProducer.(coord.OffsetProducer).TransactOffsets(ctx, group, offs, msgs)
}

// Concurrent callers' offsets merge per partition in the shared
// transaction, the highest winning, and each caller gets its own results.
func TestPipelineGroupCommitMergesOffsetsHighestWins(t *testing.T) {
	e := newEnv(t)
	requests(e.cluster, 30)
	cfg := e.config("krabka.produce.group.linger.ms", "0")
	g := &offsetGate{Transport: e.cluster.Transport(cfg.Topic), entered: make(chan []coord.Offset, 4), gate: make(chan struct{})}
	c, err := coord.NewClient(cfg, g, e.clock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	l, err := c.Acquire(bg(), role, ma)
	if err != nil {
		t.Fatal(err)
	}
	in, err := l.Consume(bg(), "requests")
	if err != nil {
		t.Fatal(err)
	}
	pollAll(t, in, 30)
	type res struct {
		r   []coord.ProduceResult
		err error
	}
	call := func(offs []coord.Offset, vals ...string) <-chan res {
		ch := make(chan res, 1)
		var msgs []coord.Message
		for _, v := range vals {
			msgs = append(msgs, coord.Message{Topic: "commands", Partition: 0, Value: []byte(v)})
		}
		go func() {
			r, err := l.ProduceOffsets(bg(), offs, msgs...)
			ch <- res{r, err}
		}()
		return ch
	}
	first := call([]coord.Offset{{Topic: "requests", Partition: 0, Offset: 1}}, "a")
	if got := <-g.entered; fmt.Sprint(got) != "[{requests 0 1}]" {
		t.Fatalf("first transaction offsets %v", got)
	}
	b := call([]coord.Offset{{Topic: "requests", Partition: 0, Offset: 7}, {Topic: "requests", Partition: 1, Offset: 2}}, "b1", "b2")
	waitPending(t, l, 1)
	cc := call([]coord.Offset{{Topic: "requests", Partition: 0, Offset: 4}, {Topic: "requests", Partition: 2, Offset: 10}})
	waitPending(t, l, 2)
	bad := call([]coord.Offset{{Topic: "requests", Partition: 0, Offset: 11}}, "never")
	if r := <-bad; !errors.Is(r.err, coord.ErrInvalidArgument) {
		t.Fatalf("a call beyond the position: %+v", r)
	}
	g.gate <- struct{}{}
	if r := <-first; r.err != nil || len(r.r) != 1 {
		t.Fatalf("first: %+v", r)
	}
	if got := <-g.entered; fmt.Sprint(got) != "[{requests 0 7} {requests 1 2} {requests 2 10}]" {
		t.Fatalf("merged offsets %v", got)
	}
	g.gate <- struct{}{}
	rb, rc := <-b, <-cc
	if rb.err != nil || rc.err != nil || len(rb.r) != 2 || len(rc.r) != 0 {
		t.Fatalf("b %+v c %+v", rb, rc)
	}
	want := "[{requests 0 7} {requests 1 2} {requests 2 10}]"
	if got := fmt.Sprint(e.cluster.GroupOffsets(c.PipelineGroup(role))); got != want {
		t.Fatalf("group offsets %s, want %s", got, want)
	}
	if got := fmt.Sprint(in.Committed()); got != want {
		t.Fatalf("input committed %s, want %s", got, want)
	}
	// Now 4 is below what is committed: refused before anything is written.
	if _, err := l.ProduceOffsets(bg(), []coord.Offset{{Topic: "requests", Partition: 0, Offset: 4}}, coord.Message{Topic: "commands", Partition: 0}); !errors.Is(err, coord.ErrInvalidArgument) {
		t.Fatalf("backwards after the merge: %v", err)
	}
	if got := commandValues(e.cluster); fmt.Sprint(got) != "[a b1 b2]" {
		t.Fatalf("commands %q", got)
	}
}
