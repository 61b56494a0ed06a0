package kafka_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/krabka/krabka-coord/core"
	"github.com/krabka/krabka-coord/core/coord"
	"github.com/krabka/krabka-coord/tests/kafka/kafkatest"
)

// The broker refuses a deposed holder's writes through the library's own
// write path (issue 26). The live view ends a holder as soon as it sees a
// newer lease, so a takeover on the same coordination topic is usually
// answered locally. Here the successor follows a DIFFERENT coordination
// topic: same role name, so the same transactional.id, and its acquire
// mints a newer epoch that the holder's view (of its own topic) never
// sees. The holder still believes it leads, and each of its produce, batch
// produce, renew and resign goes to the broker and is refused there. A
// read_committed read of the command topic afterwards holds none of the
// refused writes and all of the successor's, with the successor's token.
func TestBlindHolderIsRefusedByTheBroker(t *testing.T) {
	eachTV(t, func(t *testing.T, c *kafkatest.Cluster) {
		topic, _ := dataTopic(t, c.Bootstrap)
		ca := newClient(t, c.Bootstrap, "krabka.topic", uniq("it-blind-a-"), "krabka.topic.partitions", "1")
		cb := newClient(t, c.Bootstrap, "krabka.topic", uniq("it-blind-b-"), "krabka.topic.partitions", "1")
		msg := func(v string) coord.Message {
			return coord.Message{Topic: topic, Partition: 0, Key: []byte(v), Value: []byte(v)}
		}
		ops := []struct {
			name string
			do   func(l *coord.Leadership) error
			// the values the refused call tried to write
			refused []string
		}{
			{"produce", func(l *coord.Leadership) error {
				_, err := l.Produce(ctxFor(t, 10*time.Second), msg("old-after-produce"))
				return err
			}, []string{"old-after-produce"}},
			{"batch", func(l *coord.Leadership) error {
				_, err := l.Produce(ctxFor(t, 10*time.Second), msg("old-after-batch-1"), msg("old-after-batch-2"), msg("old-after-batch-3"))
				return err
			}, []string{"old-after-batch-1", "old-after-batch-2", "old-after-batch-3"}},
			{"renew", func(l *coord.Leadership) error { return l.Renew(ctxFor(t, 10*time.Second)) }, nil},
			{"resign", func(l *coord.Leadership) error { return l.Resign(ctxFor(t, 10*time.Second)) }, nil},
		}
		want := map[string]core.FencingToken{} // value -> the token it must carry
		var refused []string
		for _, op := range ops {
			role := core.MustRole(uniq("it-blind-" + op.name + "-"))
			a := acquire(t, ca, role, "old")
			if _, err := a.Produce(ctxFor(t, 10*time.Second), msg("old-before-"+op.name)); err != nil {
				t.Fatal(err)
			}
			want["old-before-"+op.name] = a.Token()
			b := acquire(t, cb, role, "new")
			if !b.Token().Supersedes(a.Token()) {
				t.Fatalf("%s: the successor's token %s does not supersede %s", op.name, b.Token(), a.Token())
			}
			if _, err := b.Produce(ctxFor(t, 10*time.Second), msg("new-"+op.name+"-1")); err != nil {
				t.Fatal(err)
			}
			// The holder cannot know: nothing ended it.
			if a.State() != coord.Active || a.Err() != nil {
				t.Fatalf("%s: the blind holder is %s (%v) before its call", op.name, a.State(), a.Err())
			}
			err := op.do(a)
			if !errors.Is(err, coord.ErrFenced) {
				t.Fatalf("%s of the blind holder: got %v, want FENCED", op.name, err)
			}
			if !strings.Contains(err.Error(), "PRODUCER_FENCED") && !strings.Contains(err.Error(), "INVALID_PRODUCER_EPOCH") {
				t.Fatalf("%s of the blind holder: %v does not name the broker's refusal", op.name, err)
			}
			if strings.Contains(err.Error(), "the log shows a lease") {
				t.Fatalf("%s of the blind holder was answered by the view, not the broker: %v", op.name, err)
			}
			if a.State() != coord.Fenced {
				t.Fatalf("%s: the refused holder is %s, want FENCED", op.name, a.State())
			}
			t.Logf("%s: %v", op.name, err)
			refused = append(refused, op.refused...)
			if _, err := b.Produce(ctxFor(t, 10*time.Second), msg("new-"+op.name+"-2")); err != nil {
				t.Fatalf("the successor after the refusal: %v", err)
			}
			want["new-"+op.name+"-1"], want["new-"+op.name+"-2"] = b.Token(), b.Token()
			// The refused renewal or resignation left the holder's lease
			// in its own topic as it was.
			st, err := ca.Describe(ctxFor(t, 10*time.Second), role)
			if err != nil {
				t.Fatal(err)
			}
			if st.Lease == nil || st.Lease.Member.String() != "old" || st.Lease.Token != a.Token() || st.Current || st.Token != b.Token() {
				t.Fatalf("%s: the holder's topic after the refusal: %+v (lease %+v)", op.name, st, st.Lease)
			}
			b.Close()
		}
		got := committed(t, c.Bootstrap, topic)
		for _, v := range refused {
			if _, ok := got[v]; ok {
				t.Fatalf("the refused write %q is in the log: %v", v, got)
			}
		}
		for v, tok := range want {
			r, ok := got[v]
			if !ok {
				t.Fatalf("acknowledged %q is missing from the log: %v", v, got)
			}
			if r != tok {
				t.Fatalf("%q carries the batch token %s, want %s", v, r, tok)
			}
		}
		if len(got) != len(want) {
			t.Fatalf("the log holds %d values, want %d: %v", len(got), len(want), got)
		}
	})
}

// committed reads every committed data record of a one-partition topic
// (read_committed, to its last stable offset) and returns the token of the
// batch each value came in.
func committed(t *testing.T, bootstrap, topic string) map[string]core.FencingToken {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	adm, err := kgo.NewClient(kgo.SeedBrokers(bootstrap))
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()
	offs, err := kadm.NewClient(adm).ListCommittedOffsets(ctx, topic)
	if err == nil {
		err = offs.Error()
	}
	if err != nil {
		t.Fatal(err)
	}
	end, ok := offs.Lookup(topic, 0)
	if !ok {
		t.Fatalf("no stable offset for %s/0", topic)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(bootstrap), kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.KeepControlRecords(),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	out := map[string]core.FencingToken{}
	for next := int64(0); next < end.Offset; {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("reading %s stopped at %d of %d", topic, next, end.Offset)
		}
		if err := fs.Err(); err != nil {
			t.Fatal(err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			next = r.Offset + 1
			if r.Attrs.IsControl() || r.Offset >= end.Offset {
				return
			}
			if _, dup := out[string(r.Value)]; dup {
				t.Errorf("%q is in the log twice", r.Value)
			}
			out[string(r.Value)] = core.FencingToken{ProducerID: r.ProducerID, ProducerEpoch: r.ProducerEpoch}
		})
	}
	return out
}
