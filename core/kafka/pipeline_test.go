package kafka_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/krabka/krabka-coord/core"
	"github.com/krabka/krabka-coord/core/coord"
	"github.com/krabka/krabka-coord/core/kafka"
	"github.com/krabka/krabka-coord/tests/kafka/kafkatest"
)

// A leadership consumes requests and commits commands with the offsets in
// one transaction; an offsets-only transaction commits too (its EndTxn is
// sent although no record was produced: a pending offset commit would be
// aborted at the transaction timeout and leave the old offset); bad input
// is refused before anything is written, naming the problem.
func TestPipelineCommitsOffsetsWithCommands(t *testing.T) {
	eachTV(t, func(t *testing.T, c *kafkatest.Cluster) {
		in := requestTopic(t, c.Bootstrap, 3, 30)
		out := uniq("it-pipe-out-")
		makeTopic(t, c.Bootstrap, out, 3)
		cl := newClient(t, c.Bootstrap, "krabka.topic", uniq("it-pipe-coord-"), "krabka.topic.partitions", "1",
			"krabka.lease.ms", "30000", "krabka.renew.interval.ms", "10000")
		role := core.MustRole(uniq("it-pipe-"))
		group := cl.PipelineGroup(role)
		if group != cl.TransactionalID(role)+".pipeline" {
			t.Fatalf("group %q", group)
		}
		l := acquire(t, cl, role, "a")
		if _, err := l.Consume(ctxFor(t, 20*time.Second), in, "it-pipe-missing"); !errors.Is(err, coord.ErrUnknownTopicOrPartition) || !strings.Contains(err.Error(), `"it-pipe-missing"`) {
			t.Fatalf("consume of a missing topic: %v", err)
		}
		input, err := l.Consume(ctxFor(t, 20*time.Second), in)
		if err != nil {
			t.Fatal(err)
		}
		if got := fmt.Sprint(input.Position()); got != fmt.Sprintf("[{%s 0 0} {%s 1 0} {%s 2 0}]", in, in, in) {
			t.Fatalf("a fresh group starts at %s, want the log start", got)
		}
		recs := pollN(t, input, 30)
		var first []coord.InputRecord
		for _, r := range recs {
			if r.Offset < 4 {
				first = append(first, r)
			}
		}
		var msgs []coord.Message
		for _, r := range first {
			msgs = append(msgs, commandFor(out, r))
		}
		if _, err := l.ProduceOffsets(ctxFor(t, 20*time.Second), nextOffsets(first), msgs...); err != nil {
			t.Fatal(err)
		}
		if got := groupOffsets(t, c.Bootstrap, group, in); fmt.Sprint(got) != "map[0:4 1:4 2:4]" {
			t.Fatalf("committed offsets %v, want 4 on each partition", got)
		}
		// Offsets only: partition 0 to 6.
		if res, err := l.ProduceOffsets(ctxFor(t, 20*time.Second), []coord.Offset{{Topic: in, Partition: 0, Offset: 6}}); err != nil || len(res) != 0 {
			t.Fatalf("offsets only: %v %v", res, err)
		}
		if got := groupOffsets(t, c.Bootstrap, group, in); fmt.Sprint(got) != "map[0:6 1:4 2:4]" {
			t.Fatalf("after an offsets-only transaction: %v, want partition 0 at 6", got)
		}
		// Bad input: nothing written, nothing committed, still leading.
		cmd := coord.Message{Topic: out, Partition: 0, Value: []byte("cmd-999999")}
		for _, tc := range []struct {
			offs []coord.Offset
			kind error
			want string
		}{
			{[]coord.Offset{{Topic: in, Partition: 0, Offset: 5}}, coord.ErrInvalidArgument, "goes backwards: 6 is committed"},
			{[]coord.Offset{{Topic: in, Partition: 3, Offset: 1}}, coord.ErrUnknownTopicOrPartition, "does not exist"},
			{[]coord.Offset{{Topic: out, Partition: 0, Offset: 1}}, coord.ErrInvalidArgument, "was not read by this leadership"},
			{[]coord.Offset{{Topic: "it-pipe-missing", Partition: 0, Offset: 1}}, coord.ErrUnknownTopicOrPartition, "does not exist"},
			{[]coord.Offset{{Topic: in, Partition: 1, Offset: 11}}, coord.ErrInvalidArgument, "beyond what this leadership read"},
		} {
			_, err := l.ProduceOffsets(ctxFor(t, 20*time.Second), tc.offs, cmd)
			if !errors.Is(err, tc.kind) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%+v: %v, want %v naming %q", tc.offs, err, tc.kind, tc.want)
			}
		}
		if l.State() != coord.Active {
			t.Fatalf("bad input ended the leadership: %v", l.Err())
		}
		if got := groupOffsets(t, c.Bootstrap, group, in); fmt.Sprint(got) != "map[0:6 1:4 2:4]" {
			t.Fatalf("offsets moved by refused calls: %v", got)
		}
		cmds := readCommands(t, c.Bootstrap, out)
		if e := countCommands(cmds, 12, 3); e.commands != 12 || e.duplicated != 0 || e.outOfOrder != 0 || e.missing != 0 {
			t.Fatalf("commands %v: %s", cmds, e)
		}
	})
}

// The takeover, with a blind holder (its view follows another coordination
// topic, so it cannot see the successor): the successor's first read starts
// at the committed offsets; the deposed holder's offset commit (with and
// without commands) is refused by the broker with its code and ends it
// FENCED; nothing it consumed and produced after its last commit is
// visible; the successor finishes the input and every request has exactly
// one command.
func TestPipelineTakeoverResumesAtCommittedOffsets(t *testing.T) {
	eachTV(t, func(t *testing.T, c *kafkatest.Cluster) {
		const n = 60
		in := requestTopic(t, c.Bootstrap, 2, n)
		long := []string{"krabka.lease.ms", "30000", "krabka.renew.interval.ms", "10000", "krabka.topic.partitions", "1"}
		ca := newClient(t, c.Bootstrap, append(long, "krabka.topic", uniq("it-pipe-a-"))...)
		cb := newClient(t, c.Bootstrap, append(long, "krabka.topic", uniq("it-pipe-b-"))...)
		for _, withCommands := range []bool{true, false} {
			out := uniq("it-pipe-out-")
			makeTopic(t, c.Bootstrap, out, 2)
			role := core.MustRole(uniq("it-pipe-takeover-"))
			a := acquire(t, ca, role, "a")
			ina, err := a.Consume(ctxFor(t, 20*time.Second), in)
			if err != nil {
				t.Fatal(err)
			}
			recs := pollN(t, ina, n)
			cmdsOf := func(rs []coord.InputRecord) []coord.Message {
				var m []coord.Message
				for _, r := range rs {
					m = append(m, commandFor(out, r))
				}
				return m
			}
			var done, after []coord.InputRecord
			for _, r := range recs {
				if r.Offset < 10 {
					done = append(done, r)
				} else if r.Offset < 20 {
					after = append(after, r)
				}
			}
			if _, err := a.ProduceOffsets(ctxFor(t, 20*time.Second), nextOffsets(done), cmdsOf(done)...); err != nil {
				t.Fatal(err)
			}
			committed := ina.Committed()
			b := acquire(t, cb, role, "b")
			if a.State() != coord.Active {
				t.Fatalf("the blind holder is %s before its call", a.State())
			}
			var msgs []coord.Message
			if withCommands {
				msgs = cmdsOf(after)
			}
			_, err = a.ProduceOffsets(ctxFor(t, 20*time.Second), nextOffsets(after), msgs...)
			if !errors.Is(err, coord.ErrFenced) || !(strings.Contains(err.Error(), "PRODUCER_FENCED") || strings.Contains(err.Error(), "INVALID_PRODUCER_EPOCH")) {
				t.Fatalf("the deposed holder's offset commit (commands %v): %v, want FENCED with the broker's code", withCommands, err)
			}
			if strings.Contains(err.Error(), "the log shows a lease") || a.State() != coord.Fenced {
				t.Fatalf("not refused by the broker: %v (state %s)", err, a.State())
			}
			t.Logf("commands %v: the deposed holder's commit: %v", withCommands, err)
			inb, err := b.Consume(ctxFor(t, 20*time.Second), in)
			if err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(inb.Position()) != fmt.Sprint(committed) || fmt.Sprint(inb.Committed()) != fmt.Sprint(committed) {
				t.Fatalf("the successor starts at %v (committed %v), want %v", inb.Position(), inb.Committed(), committed)
			}
			rest := pollN(t, inb, n-len(done))
			for _, r := range rest {
				if r.Offset < 10 {
					t.Fatalf("the successor read %+v again, below the committed offset 10", r)
				}
			}
			if _, err := b.ProduceOffsets(ctxFor(t, 20*time.Second), nextOffsets(rest), cmdsOf(rest)...); err != nil {
				t.Fatal(err)
			}
			b.Close()
			if e := countCommands(readCommands(t, c.Bootstrap, out), n, 2); !e.ok() {
				t.Fatalf("commands %v: %s", withCommands, e)
			} else {
				t.Logf("commands %v: %s", withCommands, e)
			}
		}
	})
}

// The form of the offsets steps (pipeline.go), seen on the wire: on a
// transaction.version 2 cluster no AddOffsetsToTxn for a transaction with
// records (TxnOffsetCommit version 5 after the records adds the offsets
// partition), on a version 1 cluster AddOffsetsToTxn first. In each form
// the offsets commit with the commands and abort with them: a transaction
// whose records the broker refuses (MESSAGE_TOO_LARGE) leaves the committed
// offsets where they were and nothing pending, and the next transaction
// commits; a mint of the same transactional id right after the
// TxnOffsetCommit was answered (a successor's InitProducerId, which aborts
// the open transaction) fences the writer, and neither its commands nor
// its offsets are committed. On the version 2 cluster the classic form
// (forced) runs too.
func TestPipelineOffsetsFormCommitsAndAborts(t *testing.T) {
	eachTV(t, func(t *testing.T, c *kafkatest.Cluster) {
		tv2 := strings.HasSuffix(t.Name(), "tv2")
		forms := []bool{false} // classic forced: no, then yes on tv2
		if tv2 {
			forms = append(forms, true)
		}
		for _, classic := range forms {
			form := "default form"
			if classic {
				form = "classic form"
			}
			var (
				mu    sync.Mutex
				sent  = map[string]int{}
				fence string // the transactional id to mint over at the next TxnOffsetCommit answer
			)
			trace := kafka.WithRequestTrace(func(r kafka.RequestTrace) {
				mu.Lock()
				sent[r.Key]++
				id := ""
				if r.Key == "TxnOffsetCommit" && r.Err == nil {
					id, fence = fence, ""
				}
				mu.Unlock()
				if id != "" {
					// The hook runs before the answer is handed on: the
					// successor's mint completes before the writer's next step.
					mintOver(t, c.Bootstrap, id)
				}
			})
			count := func() (int, int) {
				mu.Lock()
				defer mu.Unlock()
				return sent["AddOffsetsToTxn"], sent["TxnOffsetCommit"]
			}
			cl, err := kafka.NewClient(testConfig(t, c.Bootstrap, "krabka.topic", uniq("it-pipe-form-"), "krabka.topic.partitions", "1",
				"krabka.lease.ms", "30000", "krabka.renew.interval.ms", "10000"), trace, kafka.WithOffsetsForm(classic, false))
			if err != nil {
				t.Fatal(err)
			}
			in := requestTopic(t, c.Bootstrap, 2, 20)
			out := uniq("it-pipe-out-")
			small := "1000"
			resp, err := adminFor(t, c.Bootstrap).CreateTopics(ctxFor(t, 30*time.Second), 2, -1, map[string]*string{"max.message.bytes": &small}, out)
			if err == nil {
				err = resp.Error()
			}
			if err != nil {
				t.Fatal(err)
			}
			role := core.MustRole(uniq("it-pipe-form-"))
			group := cl.PipelineGroup(role)
			l := acquire(t, cl, role, "a")
			input, err := l.Consume(ctxFor(t, 20*time.Second), in)
			if err != nil {
				t.Fatal(err)
			}
			recs := pollN(t, input, 20)
			between := func(lo, hi int64) []coord.InputRecord {
				var rs []coord.InputRecord
				for _, r := range recs {
					if r.Offset >= lo && r.Offset < hi {
						rs = append(rs, r)
					}
				}
				return rs
			}
			cmds := func(rs []coord.InputRecord) []coord.Message {
				var m []coord.Message
				for _, r := range rs {
					m = append(m, commandFor(out, r))
				}
				return m
			}
			offsetsAre := func(want string, after string) {
				t.Helper()
				if got := groupOffsets(t, c.Bootstrap, group, in); fmt.Sprint(got) != want {
					t.Fatalf("%s, %s: committed offsets %v, want %s", form, after, got, want)
				}
			}
			add0, commit0 := count()
			first := between(0, 3)
			if _, err := l.ProduceOffsets(ctxFor(t, 20*time.Second), nextOffsets(first), cmds(first)...); err != nil {
				t.Fatal(err)
			}
			add, commit := count()
			if commit <= commit0 {
				t.Fatalf("%s: no TxnOffsetCommit sent", form)
			}
			// (A step answered CONCURRENT_TRANSACTIONS is sent again.)
			if implicit := tv2 && !classic; implicit && add != add0 || !implicit && add <= add0 {
				t.Fatalf("%s on %s: %d AddOffsetsToTxn sent for one commit", form, t.Name(), add-add0)
			}
			offsetsAre("map[0:3 1:3]", "after the first commit")

			// The broker refuses the records: the offsets are not committed.
			second := between(3, 6)
			big := cmds(second)
			noise := make([]byte, 5000) // incompressible: above max.message.bytes after compression too
			for i := range noise {
				noise[i] = byte(rand.IntN(256))
			}
			big[len(big)-1].Value = noise
			_, err = l.ProduceOffsets(ctxFor(t, 20*time.Second), nextOffsets(second), big...)
			if !errors.Is(err, coord.ErrMessageTooLarge) {
				t.Fatalf("%s: an oversized command: %v, want MESSAGE_TOO_LARGE", form, err)
			}
			offsetsAre("map[0:3 1:3]", "after a transaction whose records were refused")
			if l.State() != coord.Active {
				t.Fatalf("%s: the refused write ended the leadership: %v", form, l.Err())
			}
			third := between(3, 8)
			if _, err := l.ProduceOffsets(ctxFor(t, 20*time.Second), nextOffsets(third), cmds(third)...); err != nil {
				t.Fatal(err)
			}
			offsetsAre("map[0:8 1:8]", "after the third commit")

			// A successor mints right after the TxnOffsetCommit was answered.
			mu.Lock()
			fence = cl.TransactionalID(role)
			mu.Unlock()
			fourth := between(8, 10)
			_, err = l.ProduceOffsets(ctxFor(t, 20*time.Second), nextOffsets(fourth), cmds(fourth)...)
			if !errors.Is(err, coord.ErrFenced) {
				t.Fatalf("%s: a write whose transaction a mint aborted after its TxnOffsetCommit: %v, want FENCED", form, err)
			}
			mu.Lock()
			armed := fence != ""
			mu.Unlock()
			if armed {
				t.Fatalf("%s: no TxnOffsetCommit was answered in the fenced write", form)
			}
			t.Logf("%s: the fenced write: %v", form, err)
			offsetsAre("map[0:8 1:8]", "after the fenced write")
			if e := countCommands(readCommands(t, c.Bootstrap, out), 16, 2); !e.ok() {
				t.Fatalf("%s: commands of requests 0..15 expected: %s", form, e)
			}
			l.Close()
			cl.Close()
		}
	})
}

// mintOver initialises the producer id of txnID from a client of its own
// (InitProducerId, as a successor's mint): an open transaction of the
// previous epoch is aborted.
func mintOver(t testing.TB, bootstrap, txnID string) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(bootstrap, ",")...), kgo.TransactionalID(txnID))
	if err != nil {
		t.Error(err)
		return
	}
	defer cl.Close()
	if _, _, err := cl.ProducerID(ctxFor(t, 30*time.Second)); err != nil {
		t.Errorf("minting over %s: %v", txnID, err)
	}
}
