package kafka_test

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/krabka/krabka-coord/core/coord"
)

// Helpers of the pipeline tests: input topics of numbered requests, the
// command topic read back read_committed, the group's committed offsets.

// adminFor returns a kadm client on bootstrap, closed with the test.
func adminFor(t testing.TB, bootstrap string) *kadm.Client {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(bootstrap, ",")...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return kadm.NewClient(cl)
}

// makeTopic creates topic with the given partitions (replication 1, or the
// cluster's default).
func makeTopic(t testing.TB, bootstrap, topic string, partitions int32) {
	t.Helper()
	adm := adminFor(t, bootstrap)
	resp, err := adm.CreateTopics(ctxFor(t, 30*time.Second), partitions, -1, nil, topic)
	if err == nil {
		err = resp.Error()
	}
	if err != nil {
		t.Fatalf("creating %s: %v", topic, err)
	}
}

// requestTopic creates a topic of partitions partitions and writes n
// numbered requests to it: request i (value "req-<i>", key "<i>") to
// partition i % partitions, so each partition holds its requests in
// increasing order.
func requestTopic(t testing.TB, bootstrap string, partitions int32, n int) string {
	t.Helper()
	topic := uniq("it-pipe-in-")
	makeTopic(t, bootstrap, topic, partitions)
	cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(bootstrap, ",")...),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(5*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	recs := make([]*kgo.Record, n)
	for i := range recs {
		recs[i] = &kgo.Record{Topic: topic, Partition: int32(i % int(partitions)), Key: []byte(strconv.Itoa(i)), Value: []byte("req-" + strconv.Itoa(i))}
	}
	if err := cl.ProduceSync(ctxFor(t, 60*time.Second), recs...).FirstErr(); err != nil {
		t.Fatalf("writing the requests: %v", err)
	}
	return topic
}

// commandFor is the command a pipeline writes for a request: the same
// number, to the command partition of the request's partition.
func commandFor(topic string, r coord.InputRecord) coord.Message {
	return coord.Message{Topic: topic, Partition: r.Partition, Key: r.Key, Value: []byte("cmd-" + strings.TrimPrefix(string(r.Value), "req-"))}
}

// readCommands reads every partition of topic read_committed up to its last
// stable offset and returns the request numbers of the commands, per
// partition in log order.
func readCommands(t testing.TB, bootstrap, topic string) map[int32][]int {
	t.Helper()
	adm := adminFor(t, bootstrap)
	ctx := ctxFor(t, 60*time.Second)
	// The writers are done, but the coordinator writes a transaction's
	// markers after it answered EndTxn: wait (up to 30 s) until the last
	// stable offset of every partition reached its end, so that a commit
	// answered just before the call is read (a CI run read 20 of 60
	// commands: the successor's last transaction was not stable yet).
	var lso kadm.ListedOffsets
	for settle := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		var err error
		lso, err = adm.ListCommittedOffsets(ctx, topic)
		if err == nil {
			err = lso.Error()
		}
		if err != nil {
			t.Fatalf("listing %s: %v", topic, err)
		}
		hw, err := adm.ListEndOffsets(ctx, topic)
		if err == nil {
			err = hw.Error()
		}
		if err != nil {
			t.Fatalf("listing %s: %v", topic, err)
		}
		stable := true
		lso.Each(func(o kadm.ListedOffset) {
			if h, ok := hw.Lookup(topic, o.Partition); !ok || h.Offset != o.Offset {
				stable = false
			}
		})
		if stable || time.Now().After(settle) {
			break
		}
	}
	parts := map[int32]kgo.Offset{}
	ends := map[int32]int64{}
	lso.Each(func(o kadm.ListedOffset) {
		parts[o.Partition] = kgo.NewOffset().AtStart()
		ends[o.Partition] = o.Offset
	})
	out := map[int32][]int{}
	cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(bootstrap, ",")...),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: parts}),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.KeepControlRecords())
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	pos := map[int32]int64{}
	done := func() bool {
		for p, end := range ends {
			if pos[p] < end {
				return false
			}
		}
		return true
	}
	for !done() {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("reading %s: positions %v, ends %v: %v", topic, pos, ends, ctx.Err())
		}
		fs.EachError(func(tp string, p int32, err error) { t.Fatalf("reading %s/%d: %v", tp, p, err) })
		fs.EachRecord(func(r *kgo.Record) {
			pos[r.Partition] = r.Offset + 1
			if r.Attrs.IsControl() || r.Offset >= ends[r.Partition] {
				return
			}
			n, err := strconv.Atoi(strings.TrimPrefix(string(r.Value), "cmd-"))
			if err != nil {
				t.Fatalf("%s/%d@%d: not a command: %q", topic, r.Partition, r.Offset, r.Value)
			}
			out[r.Partition] = append(out[r.Partition], n)
		})
	}
	return out
}

// exactlyOnce is the figure of a pipeline run: every request 0..n-1 must
// have exactly one command, and the commands of each partition must be in
// input order.
type exactlyOnce struct {
	requests, commands, missing, duplicated, outOfOrder int
}

func (e exactlyOnce) String() string {
	return fmt.Sprintf("requests %d, commands %d, missing %d, duplicated %d, out of order %d",
		e.requests, e.commands, e.missing, e.duplicated, e.outOfOrder)
}

func (e exactlyOnce) ok() bool {
	return e.missing == 0 && e.duplicated == 0 && e.outOfOrder == 0 && e.commands == e.requests
}

// countCommands checks cmds (readCommands) against requests 0..n-1 spread
// over partitions as requestTopic spreads them.
func countCommands(cmds map[int32][]int, n, partitions int) exactlyOnce {
	e := exactlyOnce{requests: n}
	seen := make([]int, n)
	for p, list := range cmds {
		prev := -1
		for _, i := range list {
			e.commands++
			if i < 0 || i >= n || i%partitions != int(p) {
				e.outOfOrder++ // a command that is not a request of this partition
				continue
			}
			if seen[i] > 0 {
				e.duplicated++
			}
			seen[i]++
			if i <= prev {
				e.outOfOrder++
			}
			prev = i
		}
	}
	for _, c := range seen {
		if c == 0 {
			e.missing++
		}
	}
	return e
}

// groupOffsets returns the offsets committed for group (require_stable),
// per partition of topic.
func groupOffsets(t testing.TB, bootstrap, group, topic string) map[int32]int64 {
	t.Helper()
	adm := adminFor(t, bootstrap)
	ctx := ctxFor(t, 30*time.Second)
	for {
		r, err := adm.FetchOffsets(kadm.RequireStable(ctx), group)
		if err == nil {
			err = r.Error()
		}
		if err == nil {
			out := map[int32]int64{}
			r.Each(func(o kadm.OffsetResponse) {
				if o.Topic == topic {
					out[o.Partition] = o.At
				}
			})
			return out
		}
		if ctx.Err() != nil {
			t.Fatalf("fetching the offsets of %s: %v", group, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// pollN polls in until n records arrived (60 s at most).
func pollN(t testing.TB, in *coord.Input, n int) []coord.InputRecord {
	t.Helper()
	var out []coord.InputRecord
	ctx := ctxFor(t, 60*time.Second)
	for len(out) < n {
		recs, err := in.Poll(ctx, n-len(out))
		if err != nil {
			t.Fatalf("poll after %d of %d records: %v", len(out), n, err)
		}
		out = append(out, recs...)
	}
	return out
}

// nextOffsets returns, per partition of recs, the offset after its last
// record.
func nextOffsets(recs []coord.InputRecord) []coord.Offset {
	idx := map[coord.TopicPartition]int{}
	var out []coord.Offset
	for _, r := range recs {
		tp := coord.TopicPartition{Topic: r.Topic, Partition: r.Partition}
		i, ok := idx[tp]
		if !ok {
			i = len(out)
			idx[tp] = i
			out = append(out, coord.Offset{Topic: r.Topic, Partition: r.Partition})
		}
		out[i].Offset = r.Offset + 1
	}
	return out
}
