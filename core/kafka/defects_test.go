package kafka_test

import (
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/krabka/krabka-coord/core"
	"github.com/krabka/krabka-coord/core/coord"
	"github.com/krabka/krabka-coord/tests/kafka/kafkatest"
)

// krabka.role.prefix is part of the role everywhere (record keys, partition
// hash, transactional.id): two environments with different prefixes on one
// topic hold the same role name independently (two leases, two rosters),
// and a client without a prefix sees the prefixed name as an ordinary role.
func TestRolePrefixesSeparateEnvironments(t *testing.T) {
	eachTV(t, func(t *testing.T, c *kafkatest.Cluster) {
		topic := uniq("it-prefix-")
		ca := newClient(t, c.Bootstrap, "krabka.topic", topic, "krabka.role.prefix", "staging.")
		cb := newClient(t, c.Bootstrap, "krabka.topic", topic, "krabka.role.prefix", "prod.")
		plain := newClient(t, c.Bootstrap, "krabka.topic", topic)
		role := core.MustRole(uniq("it-prefix-role-"))
		// Neither waits for the other's live lease.
		a := acquire(t, ca, role, "a")
		b := acquire(t, cb, role, "b")
		if a.Role() != role || b.Role() != role {
			t.Fatalf("roles %s, %s; want %s", a.Role(), b.Role(), role)
		}
		if a.Token().ProducerID == b.Token().ProducerID {
			t.Fatalf("one producer id %s / %s: one transactional.id for both", a.Token(), b.Token())
		}
		for _, x := range []struct {
			cl     *coord.Client
			l      *coord.Leadership
			member string
		}{{ca, a, "a"}, {cb, b, "b"}} {
			st, err := x.cl.Describe(ctxFor(t, 10*time.Second), role)
			if err != nil {
				t.Fatal(err)
			}
			if st.Role != role || !st.Current || st.Holder.String() != x.member || st.Token != x.l.Token() ||
				len(st.Roster) != 1 || st.Roster[0].Member.String() != x.member {
				t.Fatalf("%s: %+v", x.member, st)
			}
			// The same state under its full name for a client without a prefix.
			full := core.MustRole(x.cl.TransactionalID(role))
			ps, err := plain.Describe(ctxFor(t, 10*time.Second), full)
			if err != nil || !ps.Current || ps.Holder.String() != x.member || ps.Token != x.l.Token() || ps.Partition != st.Partition {
				t.Fatalf("%s under its full name %s: %+v %v (prefixed view %+v)", x.member, full, ps, err, st)
			}
		}
		// The unprefixed role is a third, untouched one.
		st, err := plain.Describe(ctxFor(t, 10*time.Second), role)
		if err != nil || st.HasHolder || len(st.Roster) != 0 {
			t.Fatalf("the unprefixed role: %+v %v", st, err)
		}
		// A second member of one environment queues behind its own holder only.
		cb2 := newClient(t, c.Bootstrap, "krabka.topic", topic, "krabka.role.prefix", "prod.")
		_, at, err := cb2.TryAcquire(ctxFor(t, 10*time.Second), role, core.MustMemberID("b2"))
		if err != nil || at.IsZero() {
			t.Fatalf("b2: %v %v", at, err)
		}
		st, err = cb.Describe(ctxFor(t, 10*time.Second), role)
		if err != nil || len(st.Roster) != 2 {
			t.Fatalf("prod roster %+v %v", st, err)
		}
		if st, err := ca.Describe(ctxFor(t, 10*time.Second), role); err != nil || len(st.Roster) != 1 {
			t.Fatalf("staging roster %+v %v", st, err)
		}
	})
}

// A transaction timeout longer than the broker's transaction.max.timeout.ms
// (15 minutes on the test brokers) can never work: the first acquire fails
// with INVALID_CONFIG naming the settings, not with endless retriable
// errors. A long lease alone is fine: the transaction timeout is
// krabka.txn.timeout.ms (docs/PROTOCOL.md 12.2).
func TestTransactionTimeoutAboveTheBrokersLimitFailsClearly(t *testing.T) {
	c := kafkatest.Start(t, kafkatest.Options{})
	cl := newClient(t, c.Bootstrap, "krabka.lease.ms", "86400000", "krabka.renew.interval.ms", "1000",
		"krabka.txn.timeout.ms", "86400000")
	_, err := cl.Acquire(ctxFor(t, 30*time.Second), core.MustRole(uniq("it-longlease-")), core.MustMemberID("a"))
	if !errors.Is(err, coord.ErrInvalidConfig) || !strings.Contains(err.Error(), "krabka.txn.timeout.ms") ||
		!strings.Contains(err.Error(), "transaction.max.timeout.ms") {
		t.Fatalf("a one-day transaction timeout: %v", err)
	}
	ok := newClient(t, c.Bootstrap, "krabka.lease.ms", "86400000", "krabka.renew.interval.ms", "1000")
	l, err := ok.Acquire(ctxFor(t, 30*time.Second), core.MustRole(uniq("it-longlease-")), core.MustMemberID("a"))
	if err != nil {
		t.Fatalf("a one-day lease with the default transaction timeout: %v", err)
	}
	if rem := l.Lease().Deadline - l.Lease().GrantedAt; rem != 86400000 {
		t.Fatalf("the lease runs %d ms, want a day", rem)
	}
}

// Permanent answers have their own, non-retriable codes (issue 16.5): a
// record larger than the broker accepts, a topic or a partition that does
// not exist. None of them ends the leadership.
func TestPermanentProduceErrorsAreNotTransport(t *testing.T) {
	c := kafkatest.Start(t, kafkatest.Options{})
	topic, _ := dataTopic(t, c.Bootstrap) // one partition
	cl := newClient(t, c.Bootstrap)
	l := acquire(t, cl, core.MustRole(uniq("it-permanent-")), "a")
	cases := []struct {
		name string
		msg  coord.Message
		kind error
	}{
		{"too large", coord.Message{Topic: topic, Partition: 0, Key: []byte("k"), Value: make([]byte, 2<<20)}, coord.ErrMessageTooLarge},
		{"unknown topic", coord.Message{Topic: uniq("it-missing-"), Partition: 0, Key: []byte("k")}, coord.ErrUnknownTopicOrPartition},
		{"missing partition", coord.Message{Topic: topic, Partition: 7, Key: []byte("k")}, coord.ErrUnknownTopicOrPartition},
	}
	for _, tc := range cases {
		_, err := l.Produce(ctxFor(t, 20*time.Second), tc.msg)
		if !errors.Is(err, tc.kind) || errors.Is(err, coord.ErrTransport) {
			t.Errorf("%s: %v, want %v and not TRANSPORT", tc.name, err, tc.kind)
		}
		if l.State() != coord.Active {
			t.Fatalf("%s ended the leadership: %v", tc.name, l.Err())
		}
	}
	if _, err := l.Produce(ctxFor(t, 20*time.Second), coord.Message{Topic: topic, Partition: 0, Key: []byte("k"), Value: []byte("ok")}); err != nil {
		t.Fatal(err)
	}
}

// Wrong SASL credentials are AUTHENTICATION, distinct from a missing ACL
// (AUTHORIZATION).
func TestWrongSASLPasswordIsAuthentication(t *testing.T) {
	c := kafkatest.Start(t, kafkatest.Options{SASL: true})
	cl := saslClient(t, c, kafkatest.AliceUser, "not-the-password")
	_, err := cl.Describe(ctxFor(t, 30*time.Second), core.MustRole(uniq("alice.it-auth-")))
	if !errors.Is(err, coord.ErrAuthentication) || errors.Is(err, coord.ErrAuthorization) {
		t.Fatalf("wrong password: %v", err)
	}
}

// On three brokers, a standby waiting in Acquire rides through the SIGKILL
// of a broker (the leader of the role's coordination partition): its
// acquire never fails with a transport error and wins once the holder's
// lease lapses (issue 16.5).
func TestStandbyRidesThroughABrokerKill(t *testing.T) {
	c := kafkatest.Start(t, kafkatest.Options{Nodes: 3})
	topic := uniq("it-ride-")
	kv := []string{"krabka.topic", topic, "krabka.topic.partitions", "1", "request.timeout.ms", "5000",
		"krabka.lease.ms", "6000", "krabka.renew.interval.ms", "2000", "krabka.challenge.stagger.ms", "500"}
	ca := newClient(t, c.Bootstrap, kv...)
	cb := newClient(t, c.Bootstrap, kv...)
	role := core.MustRole(uniq("it-ride-"))
	a := acquire(t, ca, role, "a")
	got := acquireAsync(ctxFor(t, 120*time.Second), cb, role, "b")
	// b is registered and waiting before the kill.
	for {
		st, err := ca.Describe(ctxFor(t, 10*time.Second), role)
		if err == nil && len(st.Roster) == 2 {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	md, err := admin(t, c.Bootstrap).Metadata(ctxFor(t, 10*time.Second), topic)
	if err != nil {
		t.Fatal(err)
	}
	victim := int(md.Topics[topic].Partitions[0].Leader)
	c.KillNode(t, victim)
	defer c.StartNode(t, victim)
	a.Close() // the holder goes away without resigning: b waits out the lease
	r := <-got
	if r.err != nil {
		t.Fatalf("the standby's acquire failed while node %d was down: %v", victim, r.err)
	}
	defer r.l.Close()
	if r.l.State() != coord.Active || !r.l.Token().Supersedes(a.Token()) {
		t.Fatalf("b: %s %s (a had %s)", r.l.State(), r.l.Token(), a.Token())
	}
	t.Logf("b won with %s while node %d was down", r.l.Token(), victim)
}

// Leave and Watch with krabka.role.prefix, on a topic an unprefixed client
// shares (issue 26: both once used the bare role, so a prefixed standby's
// leave left it in the roster and a prefixed watch saw nothing). The
// unprefixed client checks the same records under the full name.
func TestPrefixedLeaveAndWatch(t *testing.T) {
	eachTV(t, func(t *testing.T, c *kafkatest.Cluster) {
		topic := uniq("it-prefix-lw-")
		cp := newClient(t, c.Bootstrap, "krabka.topic", topic, "krabka.role.prefix", "env.")
		cp2 := newClient(t, c.Bootstrap, "krabka.topic", topic, "krabka.role.prefix", "env.")
		plain := newClient(t, c.Bootstrap, "krabka.topic", topic)
		role := core.MustRole(uniq("it-prefix-lw-role-"))
		full := core.MustRole(cp.TransactionalID(role))
		// The bare name is an ordinary role of the unprefixed client, with a
		// standby of its own that must stay untouched.
		if _, _, err := plain.TryAcquire(ctxFor(t, 10*time.Second), role, core.MustMemberID("m2")); err != nil {
			t.Fatal(err)
		}

		w, err := cp.Watch(ctxFor(t, 10*time.Second), role)
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close()
		m1 := acquire(t, cp, role, "m1")
		for {
			ev, err := w.Next(ctxFor(t, 10*time.Second))
			if err != nil {
				t.Fatalf("the prefixed watch saw no holder change: %v", err)
			}
			if ev.Role != role {
				t.Fatalf("event names role %s, want %s", ev.Role, role)
			}
			if ev.Kind == coord.EventHolderChanged {
				if !ev.HasHolder || ev.Holder.String() != "m1" || ev.Token != m1.Token() {
					t.Fatalf("holder change %+v, want m1 with %s", ev, m1.Token())
				}
				break
			}
		}

		if _, _, err := cp2.TryAcquire(ctxFor(t, 10*time.Second), role, core.MustMemberID("m2")); err != nil {
			t.Fatal(err)
		}
		roster := func(cl *coord.Client, r core.Role) []string {
			st, err := cl.Describe(ctxFor(t, 10*time.Second), r)
			if err != nil {
				t.Fatal(err)
			}
			var out []string
			for _, rr := range st.Roster {
				out = append(out, rr.Member.String())
			}
			return out
		}
		if got := strings.Join(roster(cp, role), ","); got != "m1,m2" {
			t.Fatalf("prefixed roster before leave: %s", got)
		}
		if err := cp2.Leave(ctxFor(t, 10*time.Second), role, core.MustMemberID("m2")); err != nil {
			t.Fatal(err)
		}
		if got := strings.Join(roster(cp, role), ","); got != "m1" {
			t.Fatalf("prefixed roster after m2 left: %s, want m1", got)
		}
		if got := strings.Join(roster(plain, full), ","); got != "m1" {
			t.Fatalf("roster of %s read without a prefix: %s, want m1", full, got)
		}
		if got := strings.Join(roster(plain, role), ","); got != "m2" {
			t.Fatalf("the unprefixed role's roster: %s, want its own m2 untouched", got)
		}
	})
}

// A broker that dies while a connection's first request is in flight is
// reported as unreachable (a TCP probe of bootstrap.servers finds nothing
// listening), not as a security misconfiguration (issue 26). The "broker"
// is a listener that takes the first request, then closes the connection
// and stops listening, as a killed broker's socket does.
func TestDeadBrokerIsUnreachableNotMisconfigured(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		c, err := ln.Accept()
		ln.Close()
		if err != nil {
			return
		}
		buf := make([]byte, 64)
		_, _ = c.Read(buf) // the first request arrives, no answer goes out
		c.Close()
	}()
	cl := newClient(t, ln.Addr().String(), "request.timeout.ms", "3000")
	_, err = cl.Describe(ctxFor(t, 20*time.Second), core.MustRole(uniq("it-dead-")))
	if err == nil {
		t.Fatal("describe against a dead broker succeeded")
	}
	msg := err.Error()
	if !strings.Contains(msg, "unreachable") || !strings.Contains(msg, "connection refused") ||
		strings.Contains(msg, "security.protocol") || strings.Contains(msg, "SASL") || strings.Contains(msg, "TLS") {
		t.Fatalf("a dead broker: %v", err)
	}
}

// A plaintext client on the SASL listener of a running broker: the broker
// closes the connection before its first answer and the listener is up, so
// the error names security.protocol and the SASL settings (the counterpart
// of the test above, on a real broker).
func TestPlaintextClientOnTheSASLListenerNamesTheProtocol(t *testing.T) {
	c := kafkatest.Start(t, kafkatest.Options{SASL: true})
	cl := newClient(t, c.SASLBootstrap, "request.timeout.ms", "3000")
	_, err := cl.Describe(ctxFor(t, 20*time.Second), core.MustRole(uniq("it-plain-on-sasl-")))
	if err == nil {
		t.Fatal("a plaintext describe on the SASL listener succeeded")
	}
	msg := err.Error()
	if !strings.Contains(msg, "security.protocol") || !strings.Contains(msg, "SASL") || strings.Contains(msg, "unreachable") {
		t.Fatalf("a plaintext client on the SASL listener: %v", err)
	}
}
