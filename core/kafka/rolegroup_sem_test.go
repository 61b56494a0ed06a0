package kafka_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/krabka/krabka-coord/core"
	"github.com/krabka/krabka-coord/core/coord"
	"github.com/krabka/krabka-coord/core/kafka"
	"github.com/krabka/krabka-coord/tests/kafka/kafkatest"
)

// A semaphore on real brokers (docs/GROUPS.md): 2 slots, more members than
// slots. Member processes (the test binary run again, as in
// TestGroupFourMemberProcesses) write guarded commands to partition k of a
// command topic while they hold slot k. Along the whole run: no member is
// assigned a slot while it holds one (its events), and no two slots' live
// leases ever name one member (the log, sampled). The scenario, with leases
// of 6 s:
//
//   - three members: two hold a slot each, under distinct tokens, one waits;
//   - a holder leaves (Close): its slot goes to the member that waited, with
//     a newer token;
//   - a fourth member joins and waits; a holder is SIGKILLed: after its
//     deadline its slot goes to the fourth;
//   - a member of this process, z, takes the slot of a holder that leaves,
//     writes one command, and turns into a zombie: its clock stops, its
//     views of the coordination topic and of the group log are held back
//     and its renewals fail, so its Leadership stays Active (nothing tells
//     it), while for everyone else its heartbeat and its lease run out. A
//     fifth member takes its slot; z's next write goes to the broker and is
//     refused there (PRODUCER_FENCED or INVALID_PRODUCER_EPOCH, the
//     library's ErrFenced), and is not in the command partition when read
//     back; z's command from before is.
//
// At the end the verifier over both partitions (no record of an older token
// after a newer one).
func TestGroupSemaphoreLive(t *testing.T) {
	eachTV(t, func(t *testing.T, c *kafkatest.Cluster) {
		r := newGroupRunWith(t, c, 2, groupTiming{LeaseMs: 6000, RenewMs: 1500, WriteMs: 500}, true)
		r.semaphoreScenario()
	})
}

// semWait polls the group until ok says so (2 minutes at most).
func (r *groupRun) semWait(what string, ok func(st *coord.GroupStatus) bool) *coord.GroupStatus {
	r.t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		st := r.describe()
		if ok(st) {
			return st
		}
		if time.Now().After(deadline) {
			r.t.Fatalf("%s: not within 2 minutes: owners %q holders %q converged %v members %+v", what, st.Owner, st.Holder, st.Converged, st.Members)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// semHeld: both slots held by their owners, distinct members of cands.
func semHeld(st *coord.GroupStatus, cands ...string) bool {
	if !st.Converged || len(st.Owner) != 2 || st.Owner[0] == st.Owner[1] {
		return false
	}
	n := 0
	for _, o := range st.Owner {
		for _, m := range cands {
			if o == m {
				n++
			}
		}
	}
	return n == 2
}

func liveMember(st *coord.GroupStatus, m string) bool {
	for _, x := range st.Members {
		if x.Member == m && x.Live {
			return true
		}
	}
	return false
}

func (r *groupRun) semaphoreScenario() {
	t := r.t
	obs := newClient(t, r.c.Bootstrap, r.kv...)
	slot := func(k int) core.Role {
		role, err := coord.SlotRole(r.group, k)
		if err != nil {
			t.Fatal(err)
		}
		return role
	}
	lease := func(k int) *coord.Status {
		t.Helper()
		var err error
		for i := 0; i < 10; i++ {
			var st *coord.Status
			if st, err = obs.Describe(ctxFor(t, 30*time.Second), slot(k)); err == nil {
				return st
			}
			time.Sleep(time.Second)
		}
		t.Fatalf("describe slot %d: %v", k, err)
		return nil
	}
	// The sampler: the live leases of the two slots never name one member.
	stop := make(chan struct{})
	var sampled sync.WaitGroup
	sampled.Add(1)
	go func() {
		defer sampled.Done()
		samples := 0
		for {
			select {
			case <-stop:
				t.Logf("sampler: %d samples of both slots' leases", samples)
				return
			case <-time.After(200 * time.Millisecond):
			}
			var holders [2]string
			for k := 0; k < 2; k++ {
				st, err := obs.Describe(ctxFor(t, 30*time.Second), slot(k))
				if err != nil || st.Lease == nil || !st.Current || st.Lease.Deadline <= time.Now().UnixMilli() {
					continue
				}
				holders[k] = st.Lease.Member.String()
			}
			samples++
			if holders[0] != "" && holders[0] == holders[1] {
				t.Errorf("both slots' live leases name %s", holders[0])
			}
		}
	}()
	var once sync.Once
	stopSampler := func() { once.Do(func() { close(stop); sampled.Wait() }) }
	defer stopSampler()

	// Three members, two slots.
	for _, m := range []string{"a", "b", "c"} {
		r.start(m)
	}
	st := r.semWait("start", func(st *coord.GroupStatus) bool { return semHeld(st, "a", "b", "c") })
	waiter := map[string]bool{"a": true, "b": true, "c": true}
	delete(waiter, st.Owner[0])
	delete(waiter, st.Owner[1])
	var w string
	for m := range waiter {
		w = m
	}
	l0, l1 := lease(0), lease(1)
	if l0.Lease.Member.String() != st.Owner[0] || l1.Lease.Member.String() != st.Owner[1] || l0.Token == l1.Token {
		t.Fatalf("start: slot 0 %s %s, slot 1 %s %s (owners %q)", l0.Lease.Member, l0.Token, l1.Lease.Member, l1.Token, st.Owner)
	}
	t.Logf("start: slot 0 %s (%s), slot 1 %s (%s), %s waits", st.Owner[0], l0.Token, st.Owner[1], l1.Token, w)

	// The holder of slot 0 leaves: the waiter takes it.
	h := st.Owner[0]
	r.leave(h)
	st2 := r.semWait("leave", func(st *coord.GroupStatus) bool { return semHeld(st, w, st.Owner[1]) && st.Owner[0] == w })
	if st2.Owner[1] != st.Owner[1] {
		t.Errorf("leave of %s moved slot 1 from %s to %s", h, st.Owner[1], st2.Owner[1])
	}
	if n := lease(0); n.Lease.Member.String() != w || !n.Token.Supersedes(l0.Token) {
		t.Fatalf("after %s left: slot 0's lease %+v (token %s), want %s's with a token newer than %s", h, n.Lease, n.Token, w, l0.Token)
	} else {
		t.Logf("leave: %s left, slot 0 went to %s (%s)", h, w, n.Token)
	}

	// d joins and waits; the holder of slot 1 is SIGKILLed: d takes it
	// after the deadline.
	r.start("d")
	r.semWait("d joins", func(st *coord.GroupStatus) bool { return liveMember(st, "d") && st.Converged })
	killed := st2.Owner[1]
	r.kill(killed)
	st3 := r.semWait("kill", func(st *coord.GroupStatus) bool { return semHeld(st, w, "d") && st.Owner[1] == "d" })
	if n := lease(1); n.Lease.Member.String() != "d" || !n.Token.Supersedes(l1.Token) {
		t.Fatalf("after %s was killed: slot 1's lease %+v (token %s), want d's with a token newer than %s", killed, n.Lease, n.Token, l1.Token)
	} else {
		t.Logf("kill: %s killed, slot 1 went to d (%s)", killed, n.Token)
	}

	// z (this process) joins; the holder of slot 0 leaves: z takes it.
	z := newZombieMember(t, r)
	r.semWait("z joins", func(st *coord.GroupStatus) bool { return liveMember(st, "z") && st.Converged })
	r.leave(st3.Owner[0])
	r.semWait("z takes slot 0", func(st *coord.GroupStatus) bool { return semHeld(st, "z", "d") && st.Owner[0] == "z" })
	var zl *coord.Leadership
	for zl == nil {
		ev, err := z.g.Next(ctxFor(t, time.Minute))
		if err != nil {
			t.Fatalf("z's events: %v", err)
		}
		if ev.Kind == coord.ShardAssigned && ev.Shard == 0 {
			zl = ev.Leadership
		}
	}
	if _, err := zl.Produce(ctxFor(t, 20*time.Second), coord.Message{Topic: r.cmdTopic, Partition: 0, Value: []byte("z before")}); err != nil {
		t.Fatalf("z's write while it holds slot 0: %v", err)
	}
	// e joins and waits; z turns into a zombie; e takes slot 0.
	r.start("e")
	r.semWait("e joins", func(st *coord.GroupStatus) bool { return liveMember(st, "e") && st.Converged })
	z.freeze()
	r.semWait("z's slot to e", func(st *coord.GroupStatus) bool { return semHeld(st, "e", "d") && st.Owner[0] == "e" })
	for {
		n := lease(0)
		if n.Lease != nil && n.Lease.Member.String() == "e" && n.Current && n.Token.Supersedes(zl.Token()) {
			t.Logf("zombie: slot 0 went to e (%s) while z (%s) was frozen", n.Token, zl.Token())
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if zl.State() != coord.Active {
		t.Fatalf("the zombie learned of its end without a write: %s %v (the broker's refusal is not tested)", zl.State(), zl.Err())
	}
	_, err := zl.Produce(ctxFor(t, 20*time.Second), coord.Message{Topic: r.cmdTopic, Partition: 0, Value: []byte("z after")})
	if !errors.Is(err, coord.ErrFenced) || !(strings.Contains(err.Error(), "PRODUCER_FENCED") || strings.Contains(err.Error(), "INVALID_PRODUCER_EPOCH")) {
		t.Fatalf("the deposed slot holder's write: %v (want the broker's refusal, ErrFenced)", err)
	}
	if strings.Contains(err.Error(), "the log shows a lease") {
		t.Fatalf("the deposed slot holder's write was answered by the view, not the broker: %v", err)
	}
	t.Logf("the deposed slot holder's write: %v", err)
	z.thaw()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	if err := z.g.Close(ctx); err != nil {
		t.Errorf("z's Close: %v", err)
	}
	cancel()

	for _, m := range []string{"d", "e"} {
		r.leave(m)
	}
	stopSampler()

	// z's write before is in partition 0, the refused one is not.
	tr, err := kafka.New(testConfig(t, r.c.Bootstrap, r.kv...))
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	var vals []string
	err = tr.ReadTopic(ctxFor(t, 2*time.Minute), r.cmdTopic, func(rec kafka.TopicRecord) error {
		if rec.Partition == 0 && strings.HasPrefix(string(rec.Value), "z ") {
			vals = append(vals, string(rec.Value))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(vals) != "[z before]" {
		t.Fatalf("z's commands in slot 0's partition: %q, want only \"z before\"", vals)
	}
	r.verify()
}

// zombieMember is a semaphore member of this process whose clock, views
// and renewals can be frozen: frozen, its clock stops, the answers of its
// fetches (coordination topic and group log) are held back and its writes
// to the coordination topic fail at once, so that nothing ends its
// leadership, while the others see its heartbeat and its lease run out.
type zombieMember struct {
	g     *coord.Group
	mu    sync.Mutex
	at    int64         // the frozen clock's time (0: running)
	thawC chan struct{} // closed by thaw
}

func newZombieMember(t *testing.T, r *groupRun) *zombieMember {
	z := &zombieMember{thawC: make(chan struct{})}
	cfg := testConfig(t, r.c.Bootstrap, r.kv...)
	tr, err := kafka.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	cl, err := coord.NewClient(cfg, &zombieTransport{Transport: tr, z: z, topic: cfg.Topic}, z)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { z.thaw(); cl.Close() })
	glog, err := kafka.NewGroupLog(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { glog.Transport.Close() })
	glog.Transport = &zombieTransport{Transport: glog.Transport.(*kafka.Transport), z: z}
	if z.g, err = coord.NewSemaphore(cl, glog, r.group, r.shards, core.MustMemberID("z")); err != nil {
		t.Fatal(err)
	}
	return z
}

func (z *zombieMember) freeze() {
	z.mu.Lock()
	z.at = time.Now().UnixMilli()
	z.mu.Unlock()
}

func (z *zombieMember) thaw() {
	z.mu.Lock()
	defer z.mu.Unlock()
	if z.at != 0 {
		z.at = 0
		close(z.thawC)
	}
}

// frozen returns a channel closed by thaw, or nil when not frozen.
func (z *zombieMember) frozen() chan struct{} {
	z.mu.Lock()
	defer z.mu.Unlock()
	if z.at == 0 {
		return nil
	}
	return z.thawC
}

// NowMs is core.Clock's: stopped while frozen.
func (z *zombieMember) NowMs() int64 {
	z.mu.Lock()
	defer z.mu.Unlock()
	if z.at != 0 {
		return z.at
	}
	return time.Now().UnixMilli()
}

// Sleep is core.Clock's: no time passes while frozen.
func (z *zombieMember) Sleep(ctx context.Context, d time.Duration) error {
	if ch := z.frozen(); ch != nil {
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return core.SystemClock.Sleep(ctx, d)
}

// zombieTransport is a transport of a zombieMember.
type zombieTransport struct {
	*kafka.Transport
	z     *zombieMember
	topic string // the coordination topic ("" for the group log)
}

// Fetch holds back the answer while frozen.
func (t *zombieTransport) Fetch(ctx context.Context, partition int32, offset int64, maxWait time.Duration) (coord.Fetched, error) {
	f, err := t.Transport.Fetch(ctx, partition, offset, maxWait)
	if ch := t.z.frozen(); ch != nil {
		select {
		case <-ch:
		case <-ctx.Done():
			return coord.Fetched{}, ctx.Err()
		}
	}
	return f, err
}

// Mint returns a producer whose writes to the coordination topic fail
// while frozen.
func (t *zombieTransport) Mint(ctx context.Context, txnID string, timeout time.Duration) (coord.TxnProducer, error) {
	p, err := t.Transport.Mint(ctx, txnID, timeout)
	if err != nil {
		return nil, err
	}
	return &zombieProducer{TxnProducer: p, t: t}, nil
}

type zombieProducer struct {
	coord.TxnProducer
	t *zombieTransport
}

func (p *zombieProducer) Transact(ctx context.Context, msgs []coord.Message) ([]coord.ProduceResult, error) {
	if p.t.z.frozen() != nil {
		for _, m := range msgs {
			if m.Topic == p.t.topic {
				return nil, coord.WrapError(coord.ErrTransport, nil, "zombie: its writes to the coordination topic do not arrive")
			}
		}
	}
	return p.TxnProducer.Transact(ctx, msgs)
}
