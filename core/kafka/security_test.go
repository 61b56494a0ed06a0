package kafka_test

import (
	"errors"
	"testing"
	"time"

	"github.com/krabka/krabka-coord/core"
	"github.com/krabka/krabka-coord/core/coord"
	"github.com/krabka/krabka-coord/core/kafka"
	"github.com/krabka/krabka-coord/tests/kafka/kafkatest"
)

func saslClient(t *testing.T, c *kafkatest.Cluster, user, password string) *coord.Client {
	return newClient(t, c.SASLBootstrap,
		"security.protocol", "SASL_PLAINTEXT", "sasl.mechanism", "SCRAM-SHA-256",
		"sasl.username", user, "sasl.password", password, "krabka.role.prefix", "alice.")
}

// With SASL and ACLs: alice (WRITE on TransactionalIds prefixed "alice.")
// takes a role; mallory, without those ACLs, gets ErrAuthorization naming
// what is missing: not a hang, not a fence.
func TestSASLAliceTakesRoleMalloryIsRefused(t *testing.T) {
	c := kafkatest.Start(t, kafkatest.Options{SASL: true})
	role := core.MustRole(uniq("it-sasl-"))
	alice := saslClient(t, c, "alice", "alice-secret")
	l := acquire(t, alice, role, "alice-1")
	if err := l.Renew(ctxFor(t, 5*time.Second)); err != nil {
		t.Fatal(err)
	}
	st, err := alice.Describe(ctxFor(t, 5*time.Second), role)
	if err != nil || !st.Current || st.Holder.String() != "alice-1" {
		t.Fatalf("alice describe: %+v %v", st, err)
	}

	mallory := saslClient(t, c, "mallory", "mallory-secret")
	start := time.Now()
	_, err = mallory.Acquire(ctxFor(t, 20*time.Second), role, core.MustMemberID("mallory-1"))
	if !errors.Is(err, coord.ErrAuthorization) || errors.Is(err, coord.ErrFenced) {
		t.Fatalf("mallory acquire: %v", err)
	}
	t.Logf("mallory acquire: %v (%v)", err, time.Since(start))
	_, err = mallory.Describe(ctxFor(t, 20*time.Second), role)
	if !errors.Is(err, coord.ErrAuthorization) {
		t.Fatalf("mallory describe: %v", err)
	}
	t.Logf("mallory describe: %v", err)
	// Mallory minting the transactional id directly is refused too.
	tr, err := kafka.New(testConfig(t, c.SASLBootstrap, "security.protocol", "SASL_PLAINTEXT", "sasl.mechanism", "SCRAM-SHA-256",
		"sasl.username", "mallory", "sasl.password", "mallory-secret"))
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	_, err = tr.Mint(ctxFor(t, 20*time.Second), alice.TransactionalID(role), 10*time.Second)
	if !errors.Is(err, coord.ErrAuthorization) {
		t.Fatalf("mallory mint: %v", err)
	}
	t.Logf("mallory mint: %v", err)
	if l.State() != coord.Active {
		t.Fatalf("alice lost the role: %v", l.Err())
	}
	if err := l.Renew(ctxFor(t, 5*time.Second)); err != nil {
		t.Fatalf("alice renew after mallory: %v", err)
	}
}

// A member cut off from the cluster (its connections go through a proxy
// that the test severs) ends its leadership as expired by its deadline,
// refuses guarded writes afterwards, and a standby takes over.
func TestCutOffHolderExpiresAndStandbyTakesOver(t *testing.T) {
	eachTV(t, func(t *testing.T, c *kafkatest.Cluster) {
		role := core.MustRole(uniq("it-cut-"))
		px := newProxy()
		defer px.Close()
		cfg := testConfig(t, c.Bootstrap, "krabka.renew.background", "true", "request.timeout.ms", "1000")
		ca, err := kafka.NewClient(cfg, kafka.WithDialer(px.Dial))
		if err != nil {
			t.Fatal(err)
		}
		defer ca.Close()
		a := acquire(t, ca, role, "a")
		cb := newClient(t, c.Bootstrap)
		if _, _, err := cb.TryAcquire(ctxFor(t, 10*time.Second), role, core.MustMemberID("b")); err != nil {
			t.Fatal(err)
		}
		ch := acquireAsync(ctxFor(t, 20*time.Second), cb, role, "b")
		time.Sleep(700 * time.Millisecond) // a renews at least once through the proxy
		if a.State() != coord.Active {
			t.Fatalf("a before the cut: %v", a.Err())
		}
		px.Sever()
		select {
		case <-a.Done():
		case <-time.After(2 * leaseMs * time.Millisecond):
			t.Fatal("the cut-off holder did not end")
		}
		ended := time.Now().UnixMilli()
		deadline := a.Lease().Deadline
		if a.State() != coord.Expired || !errors.Is(a.Err(), coord.ErrLeaseExpired) {
			t.Fatalf("cut-off holder: %s %v", a.State(), a.Err())
		}
		// By its deadline: the watcher ends it at the deadline itself; 500 ms
		// of slack for scheduling on a loaded machine, still well below the
		// 1000 ms request timeout a "wait for the write to fail" end would take.
		if ended > deadline+500 {
			t.Fatalf("ended at %d, %d ms after its deadline %d", ended, ended-deadline, deadline)
		}
		_, err = a.Produce(ctxFor(t, time.Second), coord.Message{Topic: "t", Partition: 0, Key: []byte("k")})
		wantErr(t, err, coord.ErrLeaseExpired, "produce of the cut-off holder")
		got := <-ch
		if got.err != nil {
			t.Fatal(got.err)
		}
		if got.at < deadline || got.at > deadline+2000 {
			t.Fatalf("takeover at %d, deadline %d", got.at, deadline)
		}
		closed := make(chan struct{})
		go func() { ca.Close(); close(closed) }()
		select {
		case <-closed:
		case <-time.After(5 * time.Second):
			t.Fatal("closing the cut-off client hangs")
		}
	})
}
