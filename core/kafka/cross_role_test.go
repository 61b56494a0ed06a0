package kafka_test

// Issue 34 on real brokers: a transaction left open on a coordination
// partition (by a raw producer, by a holder SIGKILLed between its renewal's
// Produce and its EndTxn, by a holder whose link is cut there) must not let
// the standbys of the other roles of the partition depose their healthy
// holders, and a holder that really died is still replaced (docs/PROTOCOL.md
// 12.1).

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/krabka/krabka-coord/core"
	"github.com/krabka/krabka-coord/core/coord"
	"github.com/krabka/krabka-coord/core/kafka"
	"github.com/krabka/krabka-coord/tests/kafka/kafkatest"
)

// Timings of these tests: a renewal every 2 s, so a standby whose view
// froze would see its holder's lease run out within 6 s; renewals have 4 s
// to commit (the suite runs beside others on 2 cores).
const (
	xLeaseMs = 6000
	xRenewMs = 2000
	// The faulted holder's transactions time out after 30 s (a reference
	// member or an old one, whose lease transactions carry the lease): the
	// stable offset stays held for the whole observation.
	xFaultTxnTimeoutMs = 30000
)

func crossConfig(bootstrap, topic string, kv ...string) []string {
	return append([]string{
		"bootstrap.servers", bootstrap,
		"krabka.topic", topic,
		"krabka.topic.partitions", "1",
		"krabka.lease.ms", fmt.Sprint(xLeaseMs),
		"krabka.renew.interval.ms", fmt.Sprint(xRenewMs),
		"krabka.challenge.stagger.ms", "1000",
		"krabka.poll.interval.ms", "100",
		"request.timeout.ms", "5000",
	}, kv...)
}

// crossChild is what a child process that holds one role is told.
type crossChild struct {
	Config []string
	Role   string
}

const crossChildEnv = "KRABKA_CROSSROLE_CHILD"

// In a child process (the test binary run again with crossChildEnv set) the
// holder of one role: it acquires the role, says HOLDING, waits for a line
// on stdin, then renews with the answer of its renewal's Produce held on
// the connection (so the EndTxn is never sent) and says PRODUCED; the test
// SIGKILLs it there.
func init() {
	spec := os.Getenv(crossChildEnv)
	if spec == "" {
		return
	}
	os.Exit(runCrossChild(spec))
}

func runCrossChild(spec string) int {
	var c crossChild
	cfg, err := childConfig(spec, &c, func(x *crossChild) []string { return x.Config })
	if err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		return 2
	}
	var armed atomic.Bool
	cl, err := kafka.NewClient(cfg, kafka.WithRequestTrace(func(r kafka.RequestTrace) {
		if armed.Load() && roleProducer(r.Client) && r.Key == "Produce" && r.Err == nil {
			fmt.Println("PRODUCED")
			select {} // hold the answer: the transaction stays open
		}
	}))
	if err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		return 2
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	l, err := cl.Acquire(ctx, core.MustRole(c.Role), core.MustMemberID("child"))
	if err != nil {
		fmt.Fprintln(os.Stderr, "child: acquire:", err)
		return 2
	}
	fmt.Println("HOLDING")
	if _, err := bufio.NewReader(os.Stdin).ReadString('\n'); err != nil {
		return 2
	}
	armed.Store(true)
	_ = l.Renew(ctx)
	select {}
}

// crossRun is one run: healthy roles with a holder (renewing in the
// background) and a standby each, on the one partition of a fresh topic.
type crossRun struct {
	t        *testing.T
	boot     string
	topic    string
	roles    []core.Role
	holders  []*coord.Leadership
	standbys []<-chan acquired
}

func newCrossRun(t *testing.T, c *kafkatest.Cluster, healthy int) *crossRun {
	x := &crossRun{t: t, boot: c.Bootstrap, topic: uniq("it-xrole-")}
	for i := 0; i < healthy; i++ {
		r := core.MustRole(uniq(fmt.Sprintf("it-xrole-%d-", i)))
		x.roles = append(x.roles, r)
		x.holders = append(x.holders, acquire(t, x.client("krabka.renew.background", "true"), r, "holder"))
	}
	for _, r := range x.roles {
		x.standbys = append(x.standbys, acquireAsync(ctxFor(t, 2*time.Minute), x.client(), r, "standby"))
	}
	return x
}

func (x *crossRun) kv(kv ...string) []string { return crossConfig(x.boot, x.topic, kv...) }

func (x *crossRun) client(kv ...string) *coord.Client {
	return newClient(x.t, x.boot, x.kv(kv...)...)
}

// held reports whether the partition's last stable offset is behind its
// high watermark: a transaction is open on it.
func (x *crossRun) held() (lso, hwm int64) {
	x.t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(x.boot, ",")...))
	if err != nil {
		x.t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ctx := ctxFor(x.t, 20*time.Second)
	ends, err := adm.ListEndOffsets(ctx, x.topic)
	if err != nil {
		x.t.Fatal(err)
	}
	stable, err := adm.ListCommittedOffsets(ctx, x.topic)
	if err != nil {
		x.t.Fatal(err)
	}
	e, _ := ends.Lookup(x.topic, 0)
	s, _ := stable.Lookup(x.topic, 0)
	return s.Offset, e.Offset
}

// watch waits d and fails the test if a standby of a healthy role won or a
// healthy holder's leadership ended meanwhile.
func (x *crossRun) watch(d time.Duration, what string) {
	x.t.Helper()
	end := time.Now().Add(d)
	for time.Now().Before(end) {
		for i, ch := range x.standbys {
			if len(ch) > 0 {
				a := <-ch
				x.t.Fatalf("%s: the standby of %s won (err %v) while its holder was %s (%v): a healthy holder deposed",
					what, x.roles[i], a.err, x.holders[i].State(), x.holders[i].Err())
			}
		}
		for i, l := range x.holders {
			if l.State() != coord.Active {
				x.t.Fatalf("%s: the healthy holder of %s ended %s: %v", what, x.roles[i], l.State(), l.Err())
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// heldWhile asserts that a transaction holds the stable offset (the fault
// really left one open).
func (x *crossRun) heldWhile(what string) {
	x.t.Helper()
	lso, hwm := x.held()
	if lso >= hwm {
		x.t.Fatalf("%s: no transaction holds the stable offset (lso %d, hwm %d): the fault did not leave one open", what, lso, hwm)
	}
	x.t.Logf("%s: the stable offset is held at %d, high watermark %d", what, lso, hwm)
}

// replaced waits for the standby of a dead holder and returns how long after
// the dead holder's deadline it won. It must win before the coordinator
// could abort the dead holder's open transaction (faultAt + its timeout):
// the standby did not wait for the stable offset to move.
func replaced(t *testing.T, ch <-chan acquired, deadline int64, faultAt time.Time, what string) int64 {
	t.Helper()
	abortAt := faultAt.Add(xFaultTxnTimeoutMs * time.Millisecond)
	select {
	case a := <-ch:
		if a.err != nil {
			t.Fatalf("%s: the dead holder's standby: %v", what, a.err)
		}
		late := a.l.Lease().GrantedAt - deadline
		if late < 0 {
			t.Fatalf("%s: the standby's lease was granted %d ms before the dead holder's deadline", what, -late)
		}
		if a.at >= abortAt.UnixMilli() {
			t.Fatalf("%s: the standby won %d ms after the fault, not before the open transaction's timeout", what, a.at-faultAt.UnixMilli())
		}
		t.Logf("%s: the dead holder was replaced %d ms after its deadline (%d ms after the fault)", what, late, a.at-faultAt.UnixMilli())
		return late
	case <-time.After(time.Until(abortAt)):
		t.Fatalf("%s: the dead holder was not replaced before its open transaction's timeout (its deadline %d)", what, deadline)
	}
	return 0
}

// A raw producer opens a transaction on the partition, appends one record
// and never ends it (its timeout is longer than the observation): for four
// leases (24 s) no standby of the three healthy roles wins and every holder stays
// active.
func TestOpenTransactionOfARawProducerDeposesNoHealthyHolder(t *testing.T) {
	eachTV(t, func(t *testing.T, c *kafkatest.Cluster) {
		x := newCrossRun(t, c, 3)
		cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(c.Bootstrap, ",")...),
			kgo.TransactionalID(uniq("it-xrole-raw-")), kgo.TransactionTimeout(90*time.Second),
			kgo.RecordPartitioner(kgo.ManualPartitioner()))
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		ctx := ctxFor(t, 30*time.Second)
		if err := cl.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: x.topic, Partition: 0, Key: []byte("abandoned"), Value: []byte("x")}).FirstErr(); err != nil {
			t.Fatal(err)
		}
		x.heldWhile("raw producer")
		x.watch(4*xLeaseMs*time.Millisecond, "raw producer")
		x.heldWhile("raw producer, after the observation")
	})
}

// A holder of a fourth role in a child process is SIGKILLed between its
// renewal's Produce and its EndTxn: the healthy roles keep their holders,
// and the dead holder's standby takes over (its own role's open
// transaction is waited for at most a second, then its mint aborts it).
func TestHolderKilledInsideItsRenewalDeposesNoHealthyHolder(t *testing.T) {
	eachTV(t, func(t *testing.T, c *kafkatest.Cluster) {
		x := newCrossRun(t, c, 3)
		dead := core.MustRole(uniq("it-xrole-dead-"))
		spec, _ := json.Marshal(crossChild{Config: x.kv("krabka.txn.timeout.ms", fmt.Sprint(xFaultTxnTimeoutMs)), Role: dead.String()})
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), crossChildEnv+"="+string(spec))
		cmd.Stderr = os.Stderr
		stdin, err := cmd.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
		lines := bufio.NewScanner(stdout)
		expect := func(want string) {
			t.Helper()
			got := make(chan bool, 1)
			go func() { got <- lines.Scan() && strings.TrimSpace(lines.Text()) == want }()
			select {
			case ok := <-got:
				if !ok {
					t.Fatalf("child: want %s, got %q (%v)", want, lines.Text(), lines.Err())
				}
			case <-time.After(60 * time.Second):
				t.Fatalf("child: no %s within 60 s", want)
			}
		}
		expect("HOLDING")
		standby := acquireAsync(ctxFor(t, 2*time.Minute), x.client(), dead, "standby")
		time.Sleep(300 * time.Millisecond) // the standby registers
		st, err := x.client().Describe(ctxFor(t, 10*time.Second), dead)
		if err != nil || st.Lease == nil || st.Lease.Member.String() != "child" {
			t.Fatalf("describe of the child's role: %+v %v", st, err)
		}
		deadline := st.Lease.Deadline
		if _, err := io.WriteString(stdin, "go\n"); err != nil {
			t.Fatal(err)
		}
		expect("PRODUCED")
		faultAt := time.Now()
		if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		_ = cmd.Wait()
		x.heldWhile("holder killed inside its renewal")
		x.watch(2*xLeaseMs*time.Millisecond, "holder killed inside its renewal")
		replaced(t, standby, deadline, faultAt, "holder killed inside its renewal")
		x.watch(xLeaseMs*time.Millisecond, "after the takeover")
	})
}

// A holder of a fourth role is cut off between its renewal's Produce and
// its EndTxn (its connections severed as the Produce is answered, new ones
// black-holed): the healthy roles keep their holders, the cut holder's
// standby takes over, and the cut holder ends.
func TestHolderCutOffInsideItsRenewalDeposesNoHealthyHolder(t *testing.T) {
	eachTV(t, func(t *testing.T, c *kafkatest.Cluster) {
		x := newCrossRun(t, c, 3)
		cut := core.MustRole(uniq("it-xrole-cut-"))
		px := newProxy()
		defer px.Close()
		var armed atomic.Bool
		cfg := testConfig(t, c.Bootstrap, x.kv("krabka.txn.timeout.ms", fmt.Sprint(xFaultTxnTimeoutMs))...)
		cl, err := kafka.NewClient(cfg, kafka.WithDialer(px.Dial), kafka.WithRequestTrace(func(r kafka.RequestTrace) {
			if roleProducer(r.Client) && r.Key == "Produce" && r.Err == nil && armed.CompareAndSwap(true, false) {
				px.Sever()
			}
		}))
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		l := acquire(t, cl, cut, "cut")
		standby := acquireAsync(ctxFor(t, 2*time.Minute), x.client(), cut, "standby")
		time.Sleep(300 * time.Millisecond) // the standby registers
		deadline := l.Lease().Deadline
		armed.Store(true)
		faultAt := time.Now()
		rctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		if err := l.Renew(rctx); err == nil {
			t.Fatal("the cut holder's renewal succeeded")
		}
		if armed.Load() {
			t.Fatal("the cut holder's renewal never had its Produce answered")
		}
		if nd := l.Lease().Deadline; nd != deadline {
			t.Fatalf("the cut holder's deadline moved from %d to %d", deadline, nd)
		}
		x.heldWhile("holder cut off inside its renewal")
		x.watch(2*xLeaseMs*time.Millisecond, "holder cut off inside its renewal")
		replaced(t, standby, deadline, faultAt, "holder cut off inside its renewal")
		select {
		case <-l.Done():
		case <-time.After(10 * time.Second):
			t.Fatalf("the cut holder's leadership did not end: %s", l.State())
		}
		x.watch(xLeaseMs*time.Millisecond, "after the takeover")
	})
}

// roleProducer reports whether a traced request's client carries a role's
// transactions: the per-role producer (krabka.engine=client) or the shared
// engine's planes (krabka.engine=shared).
func roleProducer(client string) bool {
	return client == "producer" || client == "engine-control" || client == "engine-data"
}
