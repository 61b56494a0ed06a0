package kafka_test

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/krabka/krabka-coord/core"
	"github.com/krabka/krabka-coord/core/coord"
	"github.com/krabka/krabka-coord/demo"
	"github.com/krabka/krabka-coord/tests/kafka/kafkatest"
)

// groupMsg is what the group-commit tests write: "token|writer|seq".
func groupMsg(topic string, tok core.FencingToken, w, seq int) coord.Message {
	return coord.Message{Topic: topic, Partition: 0, Key: []byte(fmt.Sprintf("w%d", w)),
		Value: []byte(fmt.Sprintf("%s|%d|%d", tok, w, seq))}
}

type groupRec struct {
	tok    core.FencingToken
	w, seq int
	offset int64
}

func parseGroupRecs(t *testing.T, recs []core.RawRecord) []groupRec {
	t.Helper()
	out := make([]groupRec, 0, len(recs))
	for _, r := range recs {
		parts := strings.Split(string(r.Value), "|")
		if len(parts) != 3 {
			t.Fatalf("offset %d: unexpected record %q", r.Offset, r.Value)
		}
		tok, err := core.ParseFencingToken(parts[0])
		if err != nil {
			t.Fatalf("offset %d: %v", r.Offset, err)
		}
		var g groupRec
		if _, err := fmt.Sscanf(parts[1]+" "+parts[2], "%d %d", &g.w, &g.seq); err != nil {
			t.Fatalf("offset %d: %q: %v", r.Offset, r.Value, err)
		}
		g.tok, g.offset = tok, r.Offset
		out = append(out, g)
	}
	return out
}

type ackKey struct {
	tok    core.FencingToken
	w, seq int
}

// checkLog asserts the committed log holds every acknowledged message
// exactly once at the offset its caller was told, nothing that was not
// acknowledged, each writer's messages in its order, and tokens that never
// go backwards in log order (the demo's check).
func checkLog(t *testing.T, log []groupRec, acked map[ackKey]int64) {
	t.Helper()
	seen := map[ackKey]int64{}
	type writerKey struct {
		tok core.FencingToken
		w   int
	}
	lastSeq := map[writerKey]int{}
	var prev core.FencingToken
	for i, r := range log {
		k := ackKey{r.tok, r.w, r.seq}
		if _, dup := seen[k]; dup {
			t.Fatalf("%v is in the log twice", k)
		}
		seen[k] = r.offset
		off, ok := acked[k]
		if !ok {
			t.Fatalf("%v (offset %d) is in the log but was never acknowledged", k, r.offset)
		}
		if off != r.offset {
			t.Fatalf("%v acknowledged at offset %d, found at %d", k, off, r.offset)
		}
		wk := writerKey{r.tok, r.w}
		if s, ok := lastSeq[wk]; ok && r.seq <= s {
			t.Fatalf("writer %d of %s: seq %d after %d in log order", r.w, r.tok, r.seq, s)
		}
		lastSeq[wk] = r.seq
		if i > 0 && r.tok.Compare(prev) < 0 {
			t.Fatalf("offset %d: token %s after %s", r.offset, r.tok, prev)
		}
		prev = r.tok
	}
	for k := range acked {
		if _, ok := seen[k]; !ok {
			t.Fatalf("acknowledged %v is missing from the log", k)
		}
	}
}

// txnSizes splits sorted offsets of a one-partition topic into
// transactions: every commit marker takes one offset, so a gap ends one.
func txnSizes(offsets []int64) []int {
	sort.Slice(offsets, func(i, j int) bool { return offsets[i] < offsets[j] })
	var sizes []int
	n := 0
	for i, o := range offsets {
		if i > 0 && o != offsets[i-1]+1 {
			sizes = append(sizes, n)
			n = 0
		}
		n++
	}
	if n > 0 {
		sizes = append(sizes, n)
	}
	return sizes
}

// 64 writers on one leadership: every acknowledged message is in the log
// exactly once where its caller was told, per-writer order holds, and the
// writes were grouped (fewer transactions than messages).
func TestGroupCommitManyWriters(t *testing.T) {
	eachTV(t, func(t *testing.T, c *kafkatest.Cluster) {
		const writers, each = 64, 20
		topic, read := dataTopic(t, c.Bootstrap)
		cl := newClient(t, c.Bootstrap, "request.timeout.ms", "20000")
		l := acquire(t, cl, core.MustRole(uniq("it-group-")), "a")
		var mu sync.Mutex
		acked := map[ackKey]int64{}
		var offsets []int64
		var wg sync.WaitGroup
		errs := make(chan error, writers)
		for w := 0; w < writers; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for s := 0; s < each; s++ {
					res, err := l.Produce(ctxFor(t, 60*time.Second), groupMsg(topic, l.Token(), w, s))
					if err != nil {
						errs <- fmt.Errorf("writer %d seq %d: %w", w, s, err)
						return
					}
					if len(res) != 1 || res[0].Partition != 0 || res[0].Topic != topic {
						errs <- fmt.Errorf("writer %d seq %d: results %+v", w, s, res)
						return
					}
					mu.Lock()
					acked[ackKey{l.Token(), w, s}] = res[0].Offset
					offsets = append(offsets, res[0].Offset)
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		if len(acked) != writers*each {
			t.Fatalf("%d acknowledged, want %d", len(acked), writers*each)
		}
		checkLog(t, parseGroupRecs(t, read()), acked)
		sizes := txnSizes(offsets)
		if len(sizes) >= writers*each {
			t.Fatalf("%d transactions for %d messages: nothing was grouped", len(sizes), writers*each)
		}
		sort.Ints(sizes)
		t.Logf("%d messages in %d transactions, sizes min %d median %d max %d", writers*each, len(sizes),
			sizes[0], sizes[len(sizes)/2], sizes[len(sizes)-1])
		if l.State() != coord.Active {
			t.Fatalf("state %s: %v", l.State(), l.Err())
		}
	})
}

// A takeover while 64 writers write: every caller in flight fails with
// FENCED, nothing acknowledged is missing, nothing unacknowledged is
// committed, and tokens never go backwards in the log (our check and the
// demo's, demo.CheckLog).
func TestGroupCommitTakeoverFencesEveryCaller(t *testing.T) {
	eachTV(t, func(t *testing.T, c *kafkatest.Cluster) {
		const writers = 64
		topic, read := dataTopic(t, c.Bootstrap)
		ca := newClient(t, c.Bootstrap, "request.timeout.ms", "20000")
		cb := newSkewedClient(t, c.Bootstrap, 10*time.Second) // a's lease is over on b's clock
		role := core.MustRole(uniq("it-group-fence-"))
		a := acquire(t, ca, role, "a")
		var mu sync.Mutex
		acked := map[ackKey]int64{}
		ackedBy := make([]int, writers)
		enough := make(chan struct{})
		var enoughOnce sync.Once
		var wg sync.WaitGroup
		failures := make([]error, writers)
		for w := 0; w < writers; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for s := 0; ; s++ {
					res, err := a.Produce(ctxFor(t, 60*time.Second), groupMsg(topic, a.Token(), w, s))
					if err != nil {
						failures[w] = err
						return
					}
					mu.Lock()
					acked[ackKey{a.Token(), w, s}] = res[0].Offset
					ackedBy[w]++
					if len(acked) >= 4*writers {
						enoughOnce.Do(func() { close(enough) })
					}
					mu.Unlock()
				}
			}()
		}
		select {
		case <-enough:
		case <-time.After(60 * time.Second):
			t.Fatal("the writers did not get going")
		}
		b := acquire(t, cb, role, "b") // mints a newer epoch: a is fenced
		wg.Wait()
		for w, err := range failures {
			wantErr(t, err, coord.ErrFenced, fmt.Sprintf("writer %d after the takeover", w))
		}
		if a.State() != coord.Fenced {
			t.Fatalf("a is %s", a.State())
		}
		for s := 0; s < 3; s++ {
			res, err := b.Produce(ctxFor(t, 10*time.Second), groupMsg(topic, b.Token(), 0, s))
			if err != nil {
				t.Fatal(err)
			}
			acked[ackKey{b.Token(), 0, s}] = res[0].Offset
		}
		log := parseGroupRecs(t, read())
		checkLog(t, log, acked)
		if last := log[len(log)-1]; last.tok != b.Token() {
			t.Fatalf("the log ends with %s, want b's %s", last.tok, b.Token())
		}
		// The demo's check on the same log: token text and batch producer
		// epochs never go backwards, every acknowledged command is there.
		acks := make([]demo.Ack, 0, len(acked))
		for k, off := range acked {
			acks = append(acks, demo.Ack{Member: fmt.Sprintf("w%d", k.w), Offset: off})
		}
		chk, err := demo.CheckLog(ctxFor(t, 60*time.Second), c.Bootstrap, topic, acks)
		if err != nil || !chk.OK() {
			t.Fatalf("the demo's log check: %v\n%s", err, chk)
		}
		t.Logf("%d writes of a acknowledged before the fence", len(acked)-3)
	})
}

// A message too large fails its own transaction's callers only: every
// writer fails at most once, with the same non-fence error, the leadership
// stays active, everyone goes on writing, and the log holds exactly the
// acknowledged messages.
func TestGroupCommitIsolatesAFailedTransaction(t *testing.T) {
	eachTV(t, func(t *testing.T, c *kafkatest.Cluster) {
		const writers, each = 16, 30
		topic, read := dataTopic(t, c.Bootstrap)
		// Group bounds above the message size, so the big message can share
		// its transaction with other callers.
		cl := newClient(t, c.Bootstrap, "request.timeout.ms", "20000", "krabka.produce.group.max.bytes", "16777216")
		l := acquire(t, cl, core.MustRole(uniq("it-group-big-")), "a")
		var mu sync.Mutex
		acked := map[ackKey]int64{}
		failed := map[int][]error{}
		var wg sync.WaitGroup
		for w := 0; w < writers; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for s := 0; s < each; s++ {
					m := groupMsg(topic, l.Token(), w, s)
					if w == 0 && s == each/2 {
						m.Headers = []coord.Header{{Key: "pad", Value: make([]byte, 2<<20)}} // over the 1 MB batch limit
					}
					res, err := l.Produce(ctxFor(t, 60*time.Second), m)
					mu.Lock()
					if err != nil {
						failed[w] = append(failed[w], err)
					} else {
						acked[ackKey{l.Token(), w, s}] = res[0].Offset
					}
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		if len(failed[0]) != 1 {
			t.Fatalf("the writer of the big message failed %d times: %v", len(failed[0]), failed[0])
		}
		var first error
		for w, errs := range failed {
			if len(errs) != 1 {
				t.Fatalf("writer %d failed %d times (%v): the failure reached more than one transaction", w, len(errs), errs)
			}
			if errors.Is(errs[0], coord.ErrFenced) || !strings.Contains(strings.ToUpper(errs[0].Error()), "TOO_LARGE") &&
				!strings.Contains(strings.ToLower(errs[0].Error()), "too large") {
				t.Fatalf("writer %d: %v, want the message-too-large error", w, errs[0])
			}
			if first == nil {
				first = errs[0]
			}
		}
		if l.State() != coord.Active {
			t.Fatalf("state %s: %v", l.State(), l.Err())
		}
		if want := writers*each - len(failed); len(acked) != want {
			t.Fatalf("%d acknowledged, want %d", len(acked), want)
		}
		checkLog(t, parseGroupRecs(t, read()), acked)
		t.Logf("%d callers shared the failed transaction: %v", len(failed), first)
	})
}
