package kafka_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/krabka/krabka-coord/core"
	"github.com/krabka/krabka-coord/core/coord"
	"github.com/krabka/krabka-coord/core/kafka"
	"github.com/krabka/krabka-coord/tests/kafka/kafkatest"
)

// A renew or produce that hits its own timeout, whichever step of the
// transaction the timeout lands in, returns TIMEOUT and never ends the
// leadership: the next renew and produce succeed, the lease they write
// carries the leadership's token, and the token is the coordinator's
// current one. The timeouts sweep 1 ms to 40 ms, so they land while
// waiting for the previous transaction, during AddPartitionsToTxn/Produce
// and during EndTxn.
func TestOwnTimeoutNeverFences(t *testing.T) {
	eachTV(t, func(t *testing.T, c *kafkatest.Cluster) {
		topic, _ := dataTopic(t, c.Bootstrap)
		cl := newClient(t, c.Bootstrap)
		for _, op := range []string{"renew", "produce"} {
			role := core.MustRole(uniq("it-own-timeout-"))
			l := acquire(t, cl, role, "a")
			minted := l.Token()
			timeouts := 0
			for ms := 1; ms <= 40; ms++ {
				ctx, cancel := context.WithTimeout(context.Background(), time.Duration(ms)*time.Millisecond)
				var err error
				if op == "renew" {
					err = l.Renew(ctx)
				} else {
					_, err = l.Produce(ctx, coord.Message{Topic: topic, Partition: 0, Key: []byte("k"), Value: []byte(fmt.Sprint(ms))})
				}
				cancel()
				if err != nil {
					if !errors.Is(err, coord.ErrTimeout) {
						t.Fatalf("%s with a %d ms timeout: %v (want nil or TIMEOUT)", op, ms, err)
					}
					timeouts++
				}
				if l.State() != coord.Active {
					t.Fatalf("%s with a %d ms timeout ended the leadership: %s %v", op, ms, l.State(), l.Err())
				}
				// The next calls with a generous timeout succeed.
				if err := l.Renew(ctxFor(t, 10*time.Second)); err != nil {
					t.Fatalf("renew after a %d ms %s: %v", ms, op, err)
				}
				if _, err := l.Produce(ctxFor(t, 10*time.Second), coord.Message{Topic: topic, Partition: 0, Key: []byte("k"), Value: []byte("ok")}); err != nil {
					t.Fatalf("produce after a %d ms %s: %v", ms, op, err)
				}
				if lt := l.Lease().Token; lt != l.Token() {
					t.Fatalf("after a %d ms %s the lease carries %s, the leadership holds %s", ms, op, lt, l.Token())
				}
			}
			// Better than a recovery: a caller's timeout never bumps the
			// epoch (the transaction in flight is finished or aborted).
			if l.Token() != minted {
				t.Fatalf("%s: the token moved from %s to %s", op, minted, l.Token())
			}
			if timeouts == 0 {
				t.Fatalf("%s: no call of 1-40 ms timed out; the sweep proves nothing", op)
			}
			st, err := cl.Describe(ctxFor(t, 10*time.Second), role)
			if err != nil || !st.Current || st.Token != l.Token() || st.Lease.Token != l.Token() {
				t.Fatalf("%s: describe %+v %v, leadership token %s", op, st, err, l.Token())
			}
			t.Logf("%s: %d of 40 calls timed out; token %s", op, timeouts, l.Token())
			l.Close()
		}
	})
}

// A guarded write that fails for real (every connection cut while it is in
// flight, so the records' delivery times out and franz-go must
// re-initialise the producer) does not end the leadership: once the
// cluster is reachable again the next renew continues under the recovered
// token (or the same one), the lease carries it, and the coordinator agrees.
// If another member mints in between, the same recovery is refused: FENCED.
func TestFailedTransactionRecoversOwnEpoch(t *testing.T) {
	eachTV(t, func(t *testing.T, c *kafkatest.Cluster) {
		topic, read := dataTopic(t, c.Bootstrap)
		for _, rival := range []bool{false, true} {
			px := newProxy()
			cfg := testConfig(t, c.Bootstrap, "request.timeout.ms", "3000",
				"krabka.lease.ms", "60000", "krabka.renew.interval.ms", "20000")
			cl, err := kafka.NewClient(cfg, kafka.WithDialer(px.Dial))
			if err != nil {
				t.Fatal(err)
			}
			role := core.MustRole(uniq("it-recover-"))
			l := acquire(t, cl, role, "a")
			minted := l.Token()
			if _, err := l.Produce(ctxFor(t, 10*time.Second), coord.Message{Topic: topic, Partition: 0, Key: []byte("k"), Value: []byte("before")}); err != nil {
				t.Fatal(err)
			}
			px.Sever()
			_, err = l.Produce(ctxFor(t, 20*time.Second), coord.Message{Topic: topic, Partition: 0, Key: []byte("k"), Value: []byte("cut")})
			if err == nil || errors.Is(err, coord.ErrFenced) {
				t.Fatalf("produce with every connection cut: %v", err)
			}
			t.Logf("produce with every connection cut: %v", err)
			if l.State() != coord.Active {
				t.Fatalf("the cut ended the leadership: %s %v", l.State(), l.Err())
			}
			px.Heal()
			if rival {
				// b's clock runs a minute ahead: a's lease is over for b.
				cb := newSkewedClient(t, c.Bootstrap, 70*time.Second)
				b := acquire(t, cb, role, "b")
				defer b.Close()
				wantErr(t, retryTransport(t, func() error { return l.Renew(ctxFor(t, 10*time.Second)) }), coord.ErrFenced, "renew after a rival minted")
				if l.State() != coord.Fenced {
					t.Fatalf("state %s", l.State())
				}
				cl.Close()
				continue
			}
			// The first calls may still meet connections the heal closed
			// (TRANSPORT, retriable): retry those, nothing else.
			if err := retryTransport(t, func() error { return l.Renew(ctxFor(t, 10*time.Second)) }); err != nil {
				t.Fatalf("renew after the cut healed: %v", err)
			}
			if _, err := l.Produce(ctxFor(t, 10*time.Second), coord.Message{Topic: topic, Partition: 0, Key: []byte("k"), Value: []byte("after")}); err != nil {
				t.Fatalf("produce after the cut healed: %v", err)
			}
			if l.Token().Compare(minted) < 0 || l.Lease().Token != l.Token() {
				t.Fatalf("token %s (minted %s), lease token %s", l.Token(), minted, l.Lease().Token)
			}
			var st *coord.Status
			if err := retryTransport(t, func() (err error) { st, err = cl.Describe(ctxFor(t, 10*time.Second), role); return err }); err != nil || !st.Current || st.Token != l.Token() {
				t.Fatalf("describe %+v %v, leadership token %s", st, err, l.Token())
			}
			t.Logf("minted %s, continued under %s", minted, l.Token())
			cl.Close()
		}
		got := values(read())
		after := false
		for _, v := range got {
			if v == "cut" {
				t.Fatalf("the failed write is visible: %q", got)
			}
			after = after || v == "after"
		}
		if !after {
			t.Fatalf("read back %q, no write after the recovery", got)
		}
	})
}

// retryTransport calls fn until it returns something other than a
// retriable TRANSPORT or TIMEOUT error (at most 10 times).
func retryTransport(t *testing.T, fn func() error) error {
	t.Helper()
	var err error
	for i := 0; i < 10; i++ {
		if err = fn(); err == nil || !(errors.Is(err, coord.ErrTransport) || errors.Is(err, coord.ErrTimeout)) {
			return err
		}
		t.Logf("retrying after %v", err)
		time.Sleep(200 * time.Millisecond)
	}
	return err
}

// On three brokers, SIGKILL of the data partition's leader while the role's
// transaction coordinator runs on another node: the guarded write in flight
// may time out, but the leadership stays active (nobody else minted), the
// next renew and produce succeed once the partition has a new leader, and
// the lease carries the leadership's token, which is the coordinator's
// current one. With request.timeout.ms 10 s the write in flight outlives
// the failover (no epoch bump); with 1.5 s its records fail first, franz-go
// must re-initialise the producer and the leadership continues under the
// recovered token.
func TestBrokerKillNeverFencesTheLeader(t *testing.T) {
	c := kafkatest.Start(t, kafkatest.Options{Nodes: 3})
	adm := admin(t, c.Bootstrap)
	ctx := ctxFor(t, 300*time.Second)
	for _, rt := range []string{"10000", "1500"} {
		t.Run("request.timeout.ms="+rt, func(t *testing.T) { killDataLeader(t, ctx, c, adm, rt) })
	}
}

func killDataLeader(t *testing.T, ctx context.Context, c *kafkatest.Cluster, adm *kadm.Client, requestTimeout string) {
	data := uniq("it-kill-data-")
	if _, err := adm.CreateTopic(ctx, 1, 3, map[string]*string{"min.insync.replicas": kadm.StringPtr("2")}, data); err != nil {
		t.Fatal(err)
	}
	var leader int32 = -1
	for leader < 1 {
		md, err := adm.Metadata(ctx, data)
		if err != nil {
			t.Fatal(err)
		}
		leader = md.Topics[data].Partitions[0].Leader
	}
	// A role whose transaction coordinator is not the data leader.
	cl := newClient(t, c.Bootstrap, "request.timeout.ms", requestTimeout,
		"krabka.lease.ms", "120000", "krabka.renew.interval.ms", "30000")
	var role core.Role
	for i := 0; ; i++ {
		role = core.MustRole(uniq("it-kill-"))
		co := adm.FindTxnCoordinators(ctx, cl.TransactionalID(role))
		r, ok := co[cl.TransactionalID(role)]
		if ok && r.Err == nil && r.NodeID != leader {
			t.Logf("role %s: transaction coordinator node %d, data leader node %d", role, r.NodeID, leader)
			break
		}
		if i > 50 {
			t.Fatal("no role with a coordinator apart from the data leader")
		}
	}
	l := acquire(t, cl, role, "a")
	minted := l.Token()
	msg := func(v string) coord.Message {
		return coord.Message{Topic: data, Partition: 0, Key: []byte("k"), Value: []byte(v)}
	}
	if _, err := l.Produce(ctxFor(t, 20*time.Second), msg("before")); err != nil {
		t.Fatal(err)
	}
	c.KillNode(t, int(leader))
	defer c.StartNode(t, int(leader))
	_, err := l.Produce(ctxFor(t, 10*time.Second), msg("during"))
	t.Logf("produce right after SIGKILL of node %d: %v", leader, err)
	if errors.Is(err, coord.ErrFenced) || l.State() != coord.Active {
		t.Fatalf("the kill fenced the leader: %v, %s", err, l.State())
	}
	var renewErr error
	for i := 0; i < 20; i++ {
		if renewErr = l.Renew(ctxFor(t, 10*time.Second)); renewErr == nil || errors.Is(renewErr, coord.ErrFenced) {
			break
		}
		t.Logf("renew: %v", renewErr)
	}
	if renewErr != nil {
		t.Fatalf("renew after the kill: %v", renewErr)
	}
	var perr error
	for i := 0; i < 20; i++ {
		if _, perr = l.Produce(ctxFor(t, 10*time.Second), msg("after")); perr == nil || errors.Is(perr, coord.ErrFenced) {
			break
		}
		t.Logf("produce: %v", perr)
	}
	if perr != nil {
		t.Fatalf("produce after the kill: %v", perr)
	}
	if l.State() != coord.Active || l.Lease().Token != l.Token() {
		t.Fatalf("state %s, lease token %s, token %s", l.State(), l.Lease().Token, l.Token())
	}
	var st *coord.Status
	if err := retryTransport(t, func() (err error) { st, err = cl.Describe(ctxFor(t, 10*time.Second), role); return err }); err != nil || !st.Current || st.Token != l.Token() {
		t.Fatalf("describe %+v %v, token %s", st, err, l.Token())
	}
	t.Logf("minted %s, token %s after the kill", minted, l.Token())
}
