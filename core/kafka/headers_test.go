package kafka_test

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/krabka/krabka-coord/core"
	"github.com/krabka/krabka-coord/core/coord"
	"github.com/krabka/krabka-coord/core/kafka"
	"github.com/krabka/krabka-coord/tests/kafka/kafkatest"
)

func rosterOf(t *testing.T, c *coord.Client, role core.Role) (*coord.Status, []string) {
	t.Helper()
	st, err := c.Describe(ctxFor(t, 10*time.Second), role)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, r := range st.Roster {
		names = append(names, r.Member.String())
	}
	return st, names
}

// Pruning that does not strand the reference members (docs/PROTOCOL.md
// 11.6): a registration written as a reference member writes it (the raw
// codec, no krabka.rejoin; here with an unknown header too, which a reader
// ignores) ranked ahead of our standby and letting its turn pass is not
// pruned by the winner; our own member that let its turn pass is pruned, and
// registers again at the tail when it acquires again.
func TestWinnerPrunesOnlyMembersThatRejoin(t *testing.T) {
	eachTV(t, func(t *testing.T, c *kafkatest.Cluster) {
		topic := uniq("it-rejoin-")
		kv := []string{"krabka.topic", topic, "krabka.challenge.stagger.ms", "300"}
		ca := newClient(t, c.Bootstrap, kv...)
		cOurs := newClient(t, c.Bootstrap, append(kv, "krabka.leave.on.close", "false")...)
		cb := newClient(t, c.Bootstrap, kv...)
		role := core.MustRole(uniq("it-rejoin-role-"))
		a := acquire(t, ca, role, "a")

		// The reference member's registration, by hand.
		tr, err := kafka.New(testConfig(t, c.Bootstrap, kv...))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { tr.Close() })
		n, err := tr.Partitions(ctxFor(t, 10*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		p, _ := core.RolePartition(role, n)
		ref := core.MustMemberID("ref")
		if _, err := tr.Append(ctxFor(t, 10*time.Second), p, core.EncodeKey(core.RegistrationKey(role, ref)),
			core.EncodeRegistration(core.Registration{Member: ref, RegisteredAt: time.Now().UnixMilli()}),
			[]coord.Header{{Key: "x-future", Value: []byte("ignored")}}); err != nil {
			t.Fatal(err)
		}
		// Our member registers once and then lets its turn pass.
		if _, _, err := cOurs.TryAcquire(ctxFor(t, 10*time.Second), role, core.MustMemberID("ours")); err != nil {
			t.Fatal(err)
		}
		_, names := rosterOf(t, cb, role)
		if strings.Join(names, ",") != "a,ref,ours" {
			t.Fatalf("roster before the handoff: %v", names)
		}
		bAcq := acquireAsync(ctxFor(t, 60*time.Second), cb, role, "b")
		waitRegistered(t, cb, role, "b")
		if err := a.Resign(ctxFor(t, 10*time.Second)); err != nil {
			t.Fatal(err)
		}
		got := <-bAcq // after two staggers: ref's and ours' turns passed
		if got.err != nil {
			t.Fatal(got.err)
		}
		_, names = rosterOf(t, cb, role)
		if strings.Join(names, ",") != "ref,b" { // the holder and the first standby both rank 0, in offset order
			t.Fatalf("after b won: roster %v, want b,ref (ours pruned, the reference member kept)", names)
		}
		if _, _, err := cOurs.TryAcquire(ctxFor(t, 10*time.Second), role, core.MustMemberID("ours")); err != nil {
			t.Fatal(err)
		}
		if _, names = rosterOf(t, cb, role); strings.Join(names, ",") != "ref,b,ours" {
			t.Fatalf("after ours came back: %v", names)
		}
	})
}

// Metadata of a term and of a member (docs/PROTOCOL.md 11.1, 11.2): acquire
// attaches both; Describe and the roster report them; SetMetadata changes
// the term's metadata with a renewal, which a watch delivers even without
// WatchRenewals; over 4096 bytes is INVALID_ARG before anything is written;
// every event of a term carries that term's metadata and never another's,
// across a resign to a named successor, which takes over while the rank-0
// standby waits (11.3) and is not pruned.
func TestMetadataAndNamedSuccessor(t *testing.T) {
	eachTV(t, func(t *testing.T, c *kafkatest.Cluster) {
		topic := uniq("it-meta-")
		kv := []string{"krabka.topic", topic, "krabka.challenge.stagger.ms", "30000", "krabka.lease.ms", "30000", "krabka.renew.interval.ms", "10000"}
		ca, cb, cc, cw := newClient(t, c.Bootstrap, kv...), newClient(t, c.Bootstrap, kv...), newClient(t, c.Bootstrap, kv...), newClient(t, c.Bootstrap, kv...)
		role := core.MustRole(uniq("it-meta-role-"))
		w, err := cw.Watch(ctxFor(t, 10*time.Second), role)
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close()
		if _, err := ca.Acquire(ctxFor(t, 10*time.Second), role, core.MustMemberID("a"), coord.WithMetadata(make([]byte, core.MaxMetadataBytes+1))); !errors.Is(err, coord.ErrInvalidArgument) {
			t.Fatalf("metadata of 4097 bytes: %v", err)
		}
		if st, names := rosterOf(t, cw, role); len(names) != 0 || st.HasHolder {
			t.Fatalf("the refused acquire wrote something: %+v", st)
		}
		a, err := ca.Acquire(ctxFor(t, 10*time.Second), role, core.MustMemberID("a"), coord.WithMetadata([]byte("term-a:1")), coord.WithMemberMetadata([]byte("member-a")))
		if err != nil {
			t.Fatal(err)
		}
		st, _ := rosterOf(t, cw, role)
		if string(st.Metadata) != "term-a:1" || len(st.Roster) != 1 || string(st.Roster[0].Metadata) != "member-a" {
			t.Fatalf("describe after acquire: meta %q roster %+v", st.Metadata, st.Roster)
		}
		if err := a.SetMetadata(ctxFor(t, 10*time.Second), make([]byte, core.MaxMetadataBytes+1)); !errors.Is(err, coord.ErrInvalidArgument) {
			t.Fatalf("SetMetadata of 4097 bytes: %v", err)
		}
		if err := a.SetMetadata(ctxFor(t, 10*time.Second), []byte("term-a:2")); err != nil {
			t.Fatal(err)
		}
		if st, _ = rosterOf(t, cw, role); string(st.Metadata) != "term-a:2" || string(a.Metadata()) != "term-a:2" {
			t.Fatalf("after SetMetadata: %q", st.Metadata)
		}
		// A plain renewal keeps the metadata.
		if err := a.Renew(ctxFor(t, 10*time.Second)); err != nil {
			t.Fatal(err)
		}
		if st, _ = rosterOf(t, cw, role); string(st.Metadata) != "term-a:2" {
			t.Fatalf("after a renewal: %q", st.Metadata)
		}

		bAcq := acquireAsync(ctxFor(t, 60*time.Second), cb, role, "b")
		waitRegistered(t, cw, role, "b")
		cAcq := make(chan acquired, 1)
		go func() {
			l, err := cc.Acquire(ctxFor(t, 60*time.Second), role, core.MustMemberID("c"), coord.WithMetadata([]byte("term-c")))
			cAcq <- acquired{l, err, time.Now().UnixMilli()}
		}()
		waitRegistered(t, cw, role, "c")
		if err := a.ResignTo(ctxFor(t, 10*time.Second), core.MustMemberID("c")); err != nil {
			t.Fatal(err)
		}
		resigned := time.Now()
		got := <-cAcq
		if got.err != nil {
			t.Fatal(got.err)
		}
		t.Logf("the named successor won %v after the resign", time.UnixMilli(got.at).Sub(resigned).Round(time.Millisecond))
		select {
		case r := <-bAcq:
			t.Fatalf("the rank-0 standby returned (%v, %v) although c was named", r.l, r.err)
		default:
		}
		st, names := rosterOf(t, cw, role)
		if st.Holder.String() != "c" || string(st.Metadata) != "term-c" || strings.Join(names, ",") != "b,c" { // both rank 0, in offset order
			t.Fatalf("after the hand-over: holder %s meta %q roster %v", st.Holder, st.Metadata, names)
		}

		// Every event names the metadata of its own term.
		want := map[core.FencingToken]map[string]bool{
			a.Token():     {"term-a:1": true, "term-a:2": true},
			got.l.Token(): {"term-c": true},
		}
		sawRenewal := false
		for seenC := false; !seenC; {
			ev, err := w.Next(ctxFor(t, 10*time.Second))
			if err != nil {
				t.Fatalf("watch: %v", err)
			}
			if !ev.HasHolder {
				continue
			}
			if ok := want[ev.Token][string(ev.Metadata)]; !ok && !(ev.Kind == coord.EventRoleFree || ev.Lease.GrantedAt == ev.Lease.Deadline) {
				t.Fatalf("%s event of token %s carries metadata %q", ev.Kind, ev.Token, ev.Metadata)
			}
			if ev.Kind == coord.EventLeaseRenewed && bytes.Equal(ev.Metadata, []byte("term-a:2")) {
				sawRenewal = true
			}
			seenC = ev.Token == got.l.Token()
		}
		if !sawRenewal {
			t.Fatal("the metadata change was not delivered as a renewal event")
		}
	})
}

// Guarded writes carry krabka.token (krabka.produce.token.header, default
// true) and user headers; headers named krabka.* are refused; the verifier
// passes the library's writes and flags a write produced on purpose outside
// it (no idempotence: producer id -1) as STALE, and a copied header as
// MISMATCH.
func TestGuardedWritesAreStampedAndVerified(t *testing.T) {
	c := kafkatest.Start(t, kafkatest.Options{})
	topic, _ := dataTopic(t, c.Bootstrap)
	cl := newClient(t, c.Bootstrap)
	role := core.MustRole(uniq("it-stamp-"))
	l := acquire(t, cl, role, "a")
	msg := coord.Message{Topic: topic, Partition: 0, Key: []byte("k"), Value: []byte("v1"), Headers: []coord.Header{{Key: "trace", Value: []byte("t-1")}}}
	if _, err := l.Produce(ctxFor(t, 10*time.Second), msg); err != nil {
		t.Fatal(err)
	}
	bad := msg
	bad.Headers = []coord.Header{{Key: core.HeaderToken, Value: []byte("1:1")}}
	if _, err := l.Produce(ctxFor(t, 10*time.Second), bad); !errors.Is(err, coord.ErrInvalidArgument) {
		t.Fatalf("a user header named krabka.token: %v", err)
	}
	raw, err := kgo.NewClient(kgo.SeedBrokers(c.Bootstrap), kgo.DisableIdempotentWrite(), kgo.RequiredAcks(kgo.LeaderAck()))
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	outside := []*kgo.Record{
		{Topic: topic, Partition: 0, Key: []byte("k"), Value: []byte("outside-stale")},
		{Topic: topic, Partition: 0, Key: []byte("k"), Value: []byte("outside-copied"), Headers: []kgo.RecordHeader{{Key: core.HeaderToken, Value: []byte(l.Token().String())}}},
	}
	if err := raw.ProduceSync(ctxFor(t, 10*time.Second), outside...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	tr, err := kafka.New(testConfig(t, c.Bootstrap))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tr.Close() })
	v := core.NewVerifier()
	verdicts := map[string]core.Verdict{}
	err = tr.ReadTopic(ctxFor(t, 20*time.Second), topic, func(r kafka.TopicRecord) error {
		var hdr []byte
		has := false
		for _, h := range r.Headers {
			if h.Key == core.HeaderToken {
				hdr, has = h.Value, true
			}
			if string(r.Value) == "v1" && h.Key == "trace" && string(h.Value) != "t-1" {
				t.Errorf("user header %q", h.Value)
			}
		}
		if string(r.Value) == "v1" && (!has || string(hdr) != l.Token().String() || r.Batch != l.Token()) {
			t.Errorf("the guarded write carries %q (batch %s), want %s", hdr, r.Batch, l.Token())
		}
		verdicts[string(r.Value)] = v.Judge(role.String(), hdr, has, r.Batch)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if verdicts["v1"] != core.VerdictOK || verdicts["outside-stale"] != core.VerdictStale || verdicts["outside-copied"] != core.VerdictMismatch {
		t.Fatalf("verdicts %v", verdicts)
	}
}

// Metadata survives compaction (docs/PROTOCOL.md 11: compaction keeps the
// last record of a key with its headers): on a topic that rolls segments
// every 100 ms and cleans at once, a term's metadata and a member's, written
// before many superseding lease records, are still there after the cleaner
// removed the older lease records (the test waits until it did).
func TestMetadataSurvivesCompaction(t *testing.T) {
	c := kafkatest.Start(t, kafkatest.Options{})
	topic := uniq("it-compact-")
	adm, err := kgo.NewClient(kgo.SeedBrokers(c.Bootstrap))
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()
	str := func(s string) *string { return &s }
	res, err := kadm.NewClient(adm).CreateTopic(ctxFor(t, 20*time.Second), 1, -1, map[string]*string{
		"cleanup.policy": str("compact"), "segment.ms": str("100"), "min.cleanable.dirty.ratio": str("0.01"),
		"min.compaction.lag.ms": str("0"), "delete.retention.ms": str("100"),
	}, topic)
	if err == nil {
		err = res.Err
	}
	if err != nil {
		t.Fatal(err)
	}
	cl := newClient(t, c.Bootstrap, "krabka.topic", topic, "krabka.lease.ms", "30000", "krabka.renew.interval.ms", "10000")
	role := core.MustRole(uniq("it-compact-role-"))
	l, err := cl.Acquire(ctxFor(t, 20*time.Second), role, core.MustMemberID("m"), coord.WithMetadata([]byte("first")), coord.WithMemberMetadata([]byte("member-m")))
	if err != nil {
		t.Fatal(err)
	}
	const writes = 30
	for i := 0; i < writes; i++ {
		time.Sleep(150 * time.Millisecond) // past segment.ms: the next append rolls a segment
		if err := l.SetMetadata(ctxFor(t, 10*time.Second), []byte(fmt.Sprintf("term-%02d", i))); err != nil {
			t.Fatal(err)
		}
	}
	tr, err := kafka.New(testConfig(t, c.Bootstrap, "krabka.topic", topic))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tr.Close() })
	leaseKey := core.EncodeKey(core.LeaseKey(role))
	leases := func() (n int, last core.RawRecord) {
		recs, err := tr.Read(ctxFor(t, 20*time.Second), 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range recs {
			if bytes.Equal(r.Key, leaseKey) {
				n, last = n+1, r
			}
		}
		return n, last
	}
	// writes+1 lease records were written (the acquire's and the
	// renewals'); the cleaner may already have run during the writes.
	const n0 = writes + 1
	deadline := time.Now().Add(120 * time.Second)
	var n int
	for n, _ = leases(); n >= n0/2; n, _ = leases() {
		if time.Now().After(deadline) {
			t.Fatalf("the log cleaner did not compact %s within 120 s (%d of %d lease records left)", topic, n, n0)
		}
		time.Sleep(time.Second)
	}
	t.Logf("compaction left %d of %d lease records", n, n0)
	// A fresh client folds what compaction left.
	fresh := newClient(t, c.Bootstrap, "krabka.topic", topic)
	st, err := fresh.Describe(ctxFor(t, 20*time.Second), role)
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("term-%02d", writes-1)
	if string(st.Metadata) != want || len(st.Roster) != 1 || string(st.Roster[0].Metadata) != "member-m" || st.Token != l.Token() {
		t.Fatalf("after compaction: metadata %q roster %+v token %s", st.Metadata, st.Roster, st.Token)
	}
}
