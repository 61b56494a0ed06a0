package kafka_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/krabka/krabka-coord/core"
	"github.com/krabka/krabka-coord/core/coord"
	"github.com/krabka/krabka-coord/core/kafka"
	"github.com/krabka/krabka-coord/core/memtransport"
	"github.com/krabka/krabka-coord/tests/kafka/kafkatest"
)

// Fidelity of the in-process cluster (issue 37, docs/TESTING.md): the same
// scenarios run on a named memtransport cluster (mem://NAME, manual clock)
// and on a real broker (tv1 and tv2), each reporting the sequence of
// events and errors the library gave; the test fails when a scenario's two
// sequences differ. What must differ is left out of the sequences and said
// here: timings (the in-process cluster's time moves only when advanced,
// the broker's is the wall clock), token values (compared only relative to
// each other), and the errors a cut link gives on the way (the in-process
// cluster refuses at once; a cut TCP link times out), which show in the
// leadership's events only as AT_RISK and its end.

// world is one side of the comparison.
type world interface {
	// client is a new client of the world with the fidelity lease settings
	// (2 s lease, 500 ms renewal, 500 ms stagger) and kv on top.
	client(t *testing.T, kv ...string) *coord.Client
	// pass lets d of the world's time go by (in-process: advance the
	// clock step by step; broker: sleep).
	pass(t *testing.T, d time.Duration)
	// until lets the world's time go by until done is closed, at most max
	// of it (then the test fails).
	until(t *testing.T, done <-chan struct{}, max time.Duration, what string)
	now() int64
	cut(t *testing.T, cl *coord.Client)
	pause(t *testing.T, cl *coord.Client)
	resume(t *testing.T, cl *coord.Client)
	kill(t *testing.T, cl *coord.Client)
	// mint is a blind successor of role as cl names it.
	mint(t *testing.T, cl *coord.Client, role core.Role) core.FencingToken
	// data is the topic guarded writes go to (partition 0) and committed
	// reads its committed values.
	data() string
	committed(t *testing.T) []string
}

var fidelityConf = []string{
	"request.timeout.ms", "3000",
	"krabka.lease.ms", "2000",
	"krabka.renew.interval.ms", "500",
	"krabka.challenge.stagger.ms", "500",
	"krabka.poll.interval.ms", "100",
}

// ---- the in-process cluster ----------------------------------------------

type memWorld struct {
	c     *memtransport.Cluster
	topic string
}

func newMemWorld(t *testing.T) *memWorld {
	c, err := memtransport.NewNamed(uniq("fidelity-"), 1)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &memWorld{c: c, topic: "commands"}
}

func (w *memWorld) client(t *testing.T, kv ...string) *coord.Client {
	t.Helper()
	cfg := testConfig(t, "mem://"+w.c.Name(), append(append([]string{}, fidelityConf...), kv...)...)
	cl, err := kafka.NewClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cl.Close() })
	return cl
}

// memStep is how far the in-process clock moves per step; between steps
// the woken goroutines get a moment of real time.
const memStep = 50 * time.Millisecond

func (w *memWorld) step(t *testing.T) {
	time.Sleep(time.Millisecond)
	if err := w.c.Advance(memStep); err != nil {
		t.Fatal(err)
	}
}

func (w *memWorld) pass(t *testing.T, d time.Duration) {
	for moved := time.Duration(0); moved < d; moved += memStep {
		w.step(t)
	}
	time.Sleep(5 * time.Millisecond)
}

func (w *memWorld) until(t *testing.T, done <-chan struct{}, max time.Duration, what string) {
	t.Helper()
	for moved := time.Duration(0); moved <= max; moved += memStep {
		select {
		case <-done:
			return
		default:
		}
		w.step(t)
	}
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatalf("in-process: %s did not happen within %v of cluster time", what, max)
	}
}

func (w *memWorld) now() int64 { return w.c.NowMs() }

func (w *memWorld) ctl(t *testing.T, cl *coord.Client) *memtransport.Client {
	t.Helper()
	k, err := memtransport.Control(cl)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func (w *memWorld) cut(t *testing.T, cl *coord.Client) {
	if err := w.ctl(t, cl).Cut(); err != nil {
		t.Fatal(err)
	}
}
func (w *memWorld) pause(t *testing.T, cl *coord.Client) {
	if err := w.ctl(t, cl).Pause(); err != nil {
		t.Fatal(err)
	}
}
func (w *memWorld) resume(t *testing.T, cl *coord.Client) {
	if err := w.ctl(t, cl).Resume(); err != nil {
		t.Fatal(err)
	}
}
func (w *memWorld) kill(t *testing.T, cl *coord.Client) { w.ctl(t, cl).Kill() }
func (w *memWorld) mint(t *testing.T, cl *coord.Client, role core.Role) core.FencingToken {
	tok, err := w.ctl(t, cl).Mint(role)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}
func (w *memWorld) data() string { return w.topic }
func (w *memWorld) committed(t *testing.T) []string {
	return values(w.c.Records(w.topic, 0))
}

// ---- a real broker -------------------------------------------------------

type brokerWorld struct {
	bootstrap  string
	coordTopic string
	topic      string
	read       func() []core.RawRecord

	mu      sync.Mutex
	proxies map[*coord.Client]*proxy
	clocks  map[*coord.Client]*memtransport.PausableClock
}

func newBrokerWorld(t *testing.T, c *kafkatest.Cluster) *brokerWorld {
	topic, read := dataTopic(t, c.Bootstrap)
	return &brokerWorld{bootstrap: c.Bootstrap, coordTopic: uniq("it-fidelity-"), topic: topic, read: read,
		proxies: map[*coord.Client]*proxy{}, clocks: map[*coord.Client]*memtransport.PausableClock{}}
}

// client builds the client on a proxy it can cut and a clock it can pause
// (the two halves of SIGSTOP).
func (w *brokerWorld) client(t *testing.T, kv ...string) *coord.Client {
	t.Helper()
	cfg := testConfig(t, w.bootstrap, append(append([]string{"krabka.topic", w.coordTopic, "krabka.topic.partitions", "1"}, fidelityConf...), kv...)...)
	p := newProxy()
	tr, err := kafka.New(cfg, kafka.WithDialer(p.Dial))
	if err != nil {
		t.Fatal(err)
	}
	clock := memtransport.NewPausableClock(core.SystemClock)
	cl, err := coord.NewClient(cfg, tr, clock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Heal(); cl.Close(); p.Close() })
	w.mu.Lock()
	w.proxies[cl], w.clocks[cl] = p, clock
	w.mu.Unlock()
	return cl
}

func (w *brokerWorld) pass(_ *testing.T, d time.Duration) { time.Sleep(d) }

func (w *brokerWorld) until(t *testing.T, done <-chan struct{}, max time.Duration, what string) {
	t.Helper()
	select {
	case <-done:
	case <-time.After(max + 20*time.Second): // a loaded machine: the bound only keeps a hang from lasting
		t.Fatalf("broker: %s did not happen", what)
	}
}

func (w *brokerWorld) now() int64 { return time.Now().UnixMilli() }

func (w *brokerWorld) parts(cl *coord.Client) (*proxy, *memtransport.PausableClock) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.proxies[cl], w.clocks[cl]
}

func (w *brokerWorld) cut(_ *testing.T, cl *coord.Client) { p, _ := w.parts(cl); p.Sever() }
func (w *brokerWorld) pause(_ *testing.T, cl *coord.Client) {
	p, k := w.parts(cl)
	k.Pause()
	p.Sever()
}
func (w *brokerWorld) resume(_ *testing.T, cl *coord.Client) {
	p, k := w.parts(cl)
	p.Heal()
	k.Resume()
}
func (w *brokerWorld) kill(_ *testing.T, cl *coord.Client) { p, _ := w.parts(cl); p.Sever() }

func (w *brokerWorld) mint(t *testing.T, cl *coord.Client, role core.Role) core.FencingToken {
	t.Helper()
	tr, err := kafka.New(cl.Config())
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	p, err := tr.Mint(ctxFor(t, 20*time.Second), cl.TransactionalID(role), 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	return p.Token()
}
func (w *brokerWorld) data() string                    { return w.topic }
func (w *brokerWorld) committed(_ *testing.T) []string { return values(w.read()) }

// ---- the scenarios -------------------------------------------------------

// errKind names err by the library's error it matches ("ok" for nil).
func errKind(err error) string {
	if err == nil {
		return "ok"
	}
	for _, k := range []struct {
		err  error
		name string
	}{{coord.ErrFenced, "FENCED"}, {coord.ErrLeaseExpired, "LEASE_EXPIRED"}, {coord.ErrNotLeader, "NOT_LEADER"},
		{coord.ErrTimeout, "TIMEOUT"}, {coord.ErrTransport, "TRANSPORT"}, {coord.ErrClosed, "CLOSED"}} {
		if errors.Is(err, k.err) {
			return k.name
		}
	}
	return "other: " + err.Error()
}

// produceTo writes v (key and value) to the world's data topic. The key
// matters: the broker's topic is compacted and refuses a record without a
// key (INVALID_RECORD), which the in-process cluster does not model.
func produceTo(w world, l *coord.Leadership, v string) error {
	_, err := l.Produce(context.Background(), coord.Message{Topic: w.data(), Partition: 0, Key: []byte(v), Value: []byte(v)})
	return err
}

type acquireResult struct {
	l   *coord.Leadership
	err error
	at  int64 // the world's time when it returned
}

func acquireIn(w world, cl *coord.Client, role core.Role, member string) (<-chan acquireResult, <-chan struct{}) {
	ch, done := make(chan acquireResult, 1), make(chan struct{})
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		l, err := cl.Acquire(ctx, role, core.MustMemberID(member))
		ch <- acquireResult{l, err, w.now()}
		close(done)
	}()
	return ch, done
}

func mustAcquire(t *testing.T, cl *coord.Client, role core.Role, member string) *coord.Leadership {
	t.Helper()
	l, err := cl.Acquire(ctxFor(t, 30*time.Second), role, core.MustMemberID(member))
	if err != nil {
		t.Fatalf("%s: %v", member, err)
	}
	return l
}

type scenario struct {
	name string
	run  func(t *testing.T, w world) []string
}

var fidelityScenarios = []scenario{
	{"election", func(t *testing.T, w world) []string {
		role := core.MustRole("fid-election")
		a, b := w.client(t), w.client(t)
		la := mustAcquire(t, a, role, "a")
		lb, _, err := b.TryAcquire(ctxFor(t, 20*time.Second), role, core.MustMemberID("b"))
		st, derr := b.Describe(ctxFor(t, 20*time.Second), role)
		out := []string{"a acquire: ok", fmt.Sprintf("b try_acquire: won %v, %s", lb != nil, errKind(err)), "describe: " + errKind(derr)}
		if derr == nil {
			// Whether the lease is still live when describe answers is
			// timing on the broker (a 2 s lease on a loaded machine): not
			// compared.
			out = append(out, fmt.Sprintf("describe: holder %s, token is a's %v, current %v, has a lease %v, roster %d",
				st.Holder, st.Token == la.Token(), st.Current, st.Lease != nil, len(st.Roster)))
		}
		return out
	}},
	{"renewal", func(t *testing.T, w world) []string {
		role := core.MustRole("fid-renewal")
		a := w.client(t, "krabka.renew.background", "true")
		la := mustAcquire(t, a, role, "a")
		first, tok := la.Lease().Deadline, la.Token()
		w.pass(t, 1500*time.Millisecond)
		return []string{fmt.Sprintf("after 3 renewal intervals: %s, deadline later %v, token same %v",
			la.State(), la.Lease().Deadline > first, la.Token() == tok)}
	}},
	{"resign", func(t *testing.T, w world) []string {
		role := core.MustRole("fid-resign")
		a, b := w.client(t), w.client(t)
		la := mustAcquire(t, a, role, "a")
		deadline := la.Lease().Deadline
		bres, bdone := acquireIn(w, b, role, "b")
		time.Sleep(20 * time.Millisecond) // let b register (either order gives the same sequence)
		out := []string{"a resign: " + errKind(la.Resign(ctxFor(t, 20*time.Second)))}
		w.until(t, bdone, 5*time.Second, "b's acquire")
		r := <-bres
		out = append(out, "b acquire: "+errKind(r.err))
		if r.err == nil {
			out = append(out, fmt.Sprintf("b token supersedes a's %v", r.l.Token().Supersedes(la.Token())))
		}
		_ = deadline
		return append(out, "a produce after resign: "+errKind(produceTo(w, la, "a-after")), "a state: "+la.State().String())
	}},
	{"kill", func(t *testing.T, w world) []string {
		role := core.MustRole("fid-kill")
		a, b := w.client(t, "krabka.renew.background", "true"), w.client(t)
		la := mustAcquire(t, a, role, "a")
		bres, bdone := acquireIn(w, b, role, "b")
		w.kill(t, a)
		killedAt := w.now()
		deadline := la.Lease().Deadline // no renewal after the kill reaches the cluster
		w.until(t, bdone, 10*time.Second, "b's acquire after a's kill")
		r := <-bres
		out := []string{"b acquire: " + errKind(r.err)}
		if r.err == nil {
			out = append(out, fmt.Sprintf("b won after a's last deadline %v", r.at >= deadline && r.at >= killedAt))
		}
		return out
	}},
	{"pause past the lease", func(t *testing.T, w world) []string {
		role := core.MustRole("fid-pause")
		a, b := w.client(t, "krabka.renew.background", "true"), w.client(t)
		la := mustAcquire(t, a, role, "a")
		bres, bdone := acquireIn(w, b, role, "b")
		w.pause(t, a)
		w.until(t, bdone, 10*time.Second, "b's acquire while a is paused")
		r := <-bres
		out := []string{"b acquire: " + errKind(r.err)}
		w.resume(t, a)
		err := produceTo(w, la, "a-after-pause")
		refused := errors.Is(err, coord.ErrFenced) || errors.Is(err, coord.ErrLeaseExpired)
		out = append(out, fmt.Sprintf("a produce after resume refused (FENCED or LEASE_EXPIRED): %v", refused))
		select {
		case <-la.Done():
		case <-time.After(20 * time.Second):
		}
		st := la.State().String()
		if st == "FENCED" || st == "EXPIRED" {
			st = "FENCED or EXPIRED"
		}
		return append(out, "a ended: "+st, fmt.Sprintf("committed: %v", w.committed(t)))
	}},
	{"at-risk under a cut link", func(t *testing.T, w world) []string {
		role := core.MustRole("fid-atrisk")
		a := w.client(t, "krabka.renew.background", "true")
		la := mustAcquire(t, a, role, "a")
		evs := la.Events(context.Background())
		w.cut(t, a)
		var out []string
		done := make(chan struct{})
		go func() {
			defer close(done)
			for ev := range evs {
				s := ev.Kind.String()
				if ev.Kind == coord.LeadershipEnded {
					s += " " + ev.State.String()
				}
				out = append(out, s)
				if ev.Kind == coord.LeadershipEnded {
					return
				}
			}
		}()
		w.until(t, done, 10*time.Second, "the end of the cut leadership")
		return out
	}},
	{"blind successor then a refused write", func(t *testing.T, w world) []string {
		role := core.MustRole("fid-blind")
		a := w.client(t)
		la := mustAcquire(t, a, role, "a")
		out := []string{"a produce a-1: " + errKind(produceTo(w, la, "a-1"))}
		blind := w.mint(t, a, role)
		out = append(out, fmt.Sprintf("blind token supersedes a's %v", blind.Supersedes(la.Token())))
		out = append(out, "a produce a-2: "+errKind(produceTo(w, la, "a-2")), "a state: "+la.State().String())
		return append(out, fmt.Sprintf("committed: %v", w.committed(t)))
	}},
	{"watch events", func(t *testing.T, w world) []string {
		role := core.MustRole("fid-watch")
		a, b, c := w.client(t), w.client(t), w.client(t)
		watch, err := c.Watch(ctxFor(t, 20*time.Second), role)
		if err != nil {
			t.Fatal(err)
		}
		// Each step waits for the watch to report it before the next one:
		// a watch reports the changes it reads, so changes made faster than
		// it reads may come as one (on either cluster).
		var out []string
		ctx := ctxFor(t, 30*time.Second)
		upTo := func(last string) {
			for len(out) == 0 || out[len(out)-1] != last {
				ev, err := watch.Next(ctx)
				if err != nil {
					t.Fatalf("watch: %v (so far %v)", err, out)
				}
				switch ev.Kind {
				case coord.EventHolderChanged:
					out = append(out, fmt.Sprintf("HOLDER_CHANGED %s", ev.Holder))
				case coord.EventRoleFree:
					out = append(out, "ROLE_FREE")
				}
			}
		}
		la := mustAcquire(t, a, role, "a")
		upTo("HOLDER_CHANGED a")
		if err := la.Resign(ctxFor(t, 20*time.Second)); err != nil {
			t.Fatal(err)
		}
		upTo("ROLE_FREE")
		mustAcquire(t, b, role, "b")
		upTo("HOLDER_CHANGED b")
		return out
	}},
	{"elector term events", func(t *testing.T, w world) []string {
		role := core.MustRole("fid-elector")
		a := w.client(t)
		e, err := coord.NewElector(a, role, core.MustMemberID("a"), coord.ElectRecampaign(false))
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		if err := e.Start(ctx); err != nil {
			t.Fatal(err)
		}
		var out []string
		next := func() coord.TermEvent {
			for {
				ev, err := e.Next(ctxFor(t, 30*time.Second))
				if err != nil {
					t.Fatalf("elector: %v (so far %v)", err, out)
				}
				if ev.Kind == coord.TermNewLeader && ev.Holder == core.MustMemberID("a") {
					// NEW_LEADER naming this member's own lease comes when
					// the elector's watch first reads the log: before or
					// after the term events, by timing, on either cluster.
					continue
				}
				return ev
			}
		}
		ev := next()
		out = append(out, fmt.Sprintf("%s term %d", ev.Kind, ev.Term))
		if ev.Kind != coord.TermStarted {
			return out
		}
		w.mint(t, a, role)
		out = append(out, "produce after the blind mint: "+errKind(produceTo(w, e.Leadership(), "e-1")))
		for {
			ev = next()
			if ev.Kind == coord.TermStopped {
				return append(out, fmt.Sprintf("%s term %d reason %s", ev.Kind, ev.Term, ev.Reason))
			}
			out = append(out, fmt.Sprintf("%s term %d holder %s", ev.Kind, ev.Term, ev.Holder))
		}
	}},
}

// TestFidelityInProcessVersusBroker runs every scenario on the in-process
// cluster and on the tv1 and tv2 brokers and compares the sequences.
func TestFidelityInProcessVersusBroker(t *testing.T) {
	mem := map[string][]string{}
	for _, sc := range fidelityScenarios {
		t.Run("mem/"+sc.name, func(t *testing.T) {
			mem[sc.name] = sc.run(t, newMemWorld(t))
			t.Logf("%q", mem[sc.name])
		})
	}
	var mu sync.Mutex
	var report []string
	eachTV(t, func(t *testing.T, c *kafkatest.Cluster) {
		for _, sc := range fidelityScenarios {
			t.Run(sc.name, func(t *testing.T) {
				got := sc.run(t, newBrokerWorld(t, c))
				same := fmt.Sprint(got) == fmt.Sprint(mem[sc.name])
				mu.Lock()
				report = append(report, fmt.Sprintf("%s %s: same %v: in-process %q, broker %q", strings.Split(t.Name(), "/")[1], sc.name, same, mem[sc.name], got))
				mu.Unlock()
				if !same {
					t.Errorf("%s: the in-process cluster reported\n  %q\nand the broker\n  %q", sc.name, mem[sc.name], got)
				}
			})
		}
	})
	t.Cleanup(func() {
		for _, r := range report {
			t.Log(r)
		}
		if out := os.Getenv("KRABKA_FIDELITY_OUT"); out != "" {
			if err := os.WriteFile(out, []byte(strings.Join(report, "\n")+"\n"), 0o644); err != nil {
				t.Error(err)
			}
		}
	})
}
