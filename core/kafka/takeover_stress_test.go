package kafka_test

import (
	"fmt"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/krabka/krabka-coord/core"
	"github.com/krabka/krabka-coord/core/coord"
	"github.com/krabka/krabka-coord/core/kafka"
	"github.com/krabka/krabka-coord/tests/kafka/kafkatest"
)

// takeoverRounds is the number of takeovers TestTakeoverUnderGroupCommit
// runs per transaction version: 200 (issue 26), KRABKA_TAKEOVER_ROUNDS to
// run more when hunting a race.
func takeoverRounds(t *testing.T) int {
	if s := os.Getenv("KRABKA_TAKEOVER_ROUNDS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			t.Fatalf("KRABKA_TAKEOVER_ROUNDS=%q is not a positive integer", s)
		}
		return n
	}
	return 200
}

// A takeover while the holder has 64 guarded writes in flight, repeated on
// both transaction versions. Each round asserts:
//   - every writer of the deposed holder ends FENCED;
//   - the deposed holder writes no InitProducerId after the successor's
//     mint (seen on its own connections by reqSpy), so it can neither fence
//     the successor nor be handed the successor's epoch as a "retry";
//   - the successor's first guarded write commits, under the token it won;
//   - exactly one member believes it holds the coordinator's current
//     token: DescribeTransactions names the successor's token, the
//     successor is ACTIVE and the deposed holder FENCED.
//
// The successor's lease clock runs a minute ahead of the 30 s lease, so it
// takes over at once.
func TestTakeoverUnderGroupCommit(t *testing.T) {
	rounds := takeoverRounds(t)
	eachTV(t, func(t *testing.T, c *kafkatest.Cluster) {
		const writers = 64
		topic, read := dataTopic(t, c.Bootstrap)
		spyA, spyB := &reqSpy{}, &reqSpy{}
		// A 30 s lease: under a loaded machine a 2 s lease could expire (a
		// renewal slow to answer) and end a writer EXPIRED instead of by
		// the mint this test is about; the successor's clock runs a minute
		// ahead, so it takes over at once all the same.
		long := []string{"krabka.lease.ms", "30000", "krabka.renew.interval.ms", "10000"}
		cfgA := testConfig(t, c.Bootstrap, append(long, "request.timeout.ms", "20000")...)
		ca, err := kafka.NewClient(cfgA, kafka.WithDialer(spyA.Dial))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ca.Close() })
		cfgB := testConfig(t, c.Bootstrap, long...)
		trB, err := kafka.New(cfgB, kafka.WithDialer(spyB.Dial))
		if err != nil {
			t.Fatal(err)
		}
		cb, err := coord.NewClient(cfgB, trB, skewedClock{time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cb.Close() })

		var mu sync.Mutex
		acked := map[ackKey]int64{}
		for round := 0; round < rounds; round++ {
			role := core.MustRole(uniq("it-stress-"))
			txnID := ca.TransactionalID(role)
			a := acquire(t, ca, role, "a")
			aTok := a.Token()
			enough := make(chan struct{})
			var enoughOnce sync.Once
			n := 0
			var wg sync.WaitGroup
			failures := make([]error, writers)
			for w := 0; w < writers; w++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for s := 0; ; s++ {
						msg := groupMsg(topic, aTok, round*writers+w, s)
						res, err := a.Produce(ctxFor(t, 60*time.Second), msg)
						if err != nil {
							failures[w] = err
							return
						}
						mu.Lock()
						acked[ackKey{aTok, round*writers + w, s}] = res[0].Offset
						n++
						if n >= writers {
							enoughOnce.Do(func() { close(enough) })
						}
						mu.Unlock()
					}
				}()
			}
			select {
			case <-enough:
			case <-time.After(60 * time.Second):
				t.Fatalf("round %d: the writers did not get going", round)
			}
			b := acquire(t, cb, role, "b")
			bTok := b.Token()
			var bMint time.Time
			for _, in := range spyB.initsSince(time.Time{}) {
				if in.txnID == txnID {
					bMint = in.at // the last InitProducerId b wrote for the role
				}
			}
			if bMint.IsZero() {
				t.Fatalf("round %d: b won %s without an InitProducerId seen on its connections", round, bTok)
			}
			wg.Wait()
			for w, err := range failures {
				wantErr(t, err, coord.ErrFenced, fmt.Sprintf("round %d: writer %d after the takeover", round, w))
			}
			res, err := b.Produce(ctxFor(t, 20*time.Second), groupMsg(topic, bTok, -1-round, 0))
			if err != nil {
				t.Fatalf("round %d: the successor's first write (token %s, a had %s): %v", round, bTok, aTok, err)
			}
			acked[ackKey{bTok, -1 - round, 0}] = res[0].Offset
			for _, in := range spyA.initsSince(bMint) {
				if in.txnID == txnID {
					t.Fatalf("round %d: the deposed holder (token %s) sent InitProducerId(%d:%d) %v after b's mint of %s",
						round, aTok, in.producerID, in.epoch, in.at.Sub(bMint), bTok)
				}
			}
			st, err := cb.Describe(ctxFor(t, 20*time.Second), role)
			if err != nil {
				t.Fatal(err)
			}
			if st.Token != b.Token() || b.Token() != bTok || b.State() != coord.Active {
				t.Fatalf("round %d: the coordinator's token is %s; b holds %s (won %s) and is %s", round, st.Token, b.Token(), bTok, b.State())
			}
			if a.State() != coord.Fenced || a.Token() == st.Token {
				t.Fatalf("round %d: the deposed holder is %s with token %s (coordinator: %s)", round, a.State(), a.Token(), st.Token)
			}
			b.Close()
		}
		checkLog(t, parseGroupRecs(t, read()), acked)
		t.Logf("%d takeovers under %d writers; %d writes acknowledged; InitProducerId requests: a %d, b %d",
			rounds, writers, len(acked), spyA.count(), spyB.count())
	})
}
