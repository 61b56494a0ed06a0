package kafka

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/krabka/krabka-coord/core"
	"github.com/krabka/krabka-coord/tests/kafka/kafkatest"
)

// Issue 35, item 2: the followed partitions of a transport that one broker
// leads ride one long poll (one follower per broker, one kgo client for all
// brokers), and every record appended to any of them reaches that
// partition's reader, in order, once.
func TestOneFollowerPerBroker(t *testing.T) {
	const parts, rounds = 8, 5
	c := kafkatest.Start(t, kafkatest.Options{TxnVersion: 2})
	cfg, _ := internalConfig(t, c, "it-follow-broker-", "krabka.topic.partitions", fmt.Sprint(parts))
	tr, _ := tracedTransport(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if _, err := tr.Partitions(ctx); err != nil {
		t.Fatal(err)
	}

	// One reader per partition, as the live views read: Fetch in a loop
	// from the next offset, folding the batches through a TxnFolder.
	var (
		mu  sync.Mutex
		got = make([][]string, parts)
	)
	rctx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for p := int32(0); p < parts; p++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			txns := core.NewTxnFolder(func(r core.RawRecord) {
				mu.Lock()
				got[p] = append(got[p], string(r.Key))
				mu.Unlock()
			})
			next := int64(0)
			for rctx.Err() == nil {
				f, err := tr.Fetch(rctx, p, next, 5*time.Second)
				if err != nil {
					if rctx.Err() == nil {
						t.Errorf("partition %d: %v", p, err)
					}
					return
				}
				for _, b := range f.Batches {
					txns.Add(b)
				}
				next = max(next, f.Next)
			}
		}()
	}
	defer func() { stop(); wg.Wait() }()

	for r := 0; r < rounds; r++ {
		for p := int32(0); p < parts; p++ {
			if _, err := tr.Append(ctx, p, []byte(fmt.Sprintf("p%d-r%d", p, r)), []byte("v"), nil); err != nil {
				t.Fatal(err)
			}
		}
	}
	complete := func() bool {
		mu.Lock()
		defer mu.Unlock()
		for p := range got {
			if len(got[p]) < rounds {
				return false
			}
		}
		return true
	}
	for !complete() {
		if ctx.Err() != nil {
			mu.Lock()
			defer mu.Unlock()
			t.Fatalf("records missed: %v", got)
		}
		time.Sleep(10 * time.Millisecond)
	}
	mu.Lock()
	for p := range got {
		want := make([]string, rounds)
		for r := range want {
			want[r] = fmt.Sprintf("p%d-r%d", p, r)
		}
		if fmt.Sprint(got[p]) != fmt.Sprint(want) {
			t.Errorf("partition %d read %v, want %v", p, got[p], want)
		}
	}
	mu.Unlock()

	// One broker: one follower, on one client, whose rounds carry every
	// followed partition once they all follow.
	tr.follow.mu.Lock()
	nb, cl := len(tr.follow.brokers), tr.follow.cl
	var b *brokerFollow
	for _, x := range tr.follow.brokers {
		b = x
	}
	tr.follow.mu.Unlock()
	if nb != 1 || cl == nil {
		t.Fatalf("%d broker followers (client %v), want one", nb, cl != nil)
	}
	for {
		b.mu.Lock()
		widest, rounds, canceled := b.widest, b.rounds, b.canceled
		b.mu.Unlock()
		if widest == parts {
			t.Logf("%d rounds, %d cancelled by a newcomer", rounds, canceled)
			break
		}
		if widest > parts {
			t.Fatalf("a round carried %d partitions of %d", widest, parts)
		}
		if ctx.Err() != nil {
			t.Fatalf("no round carried all %d partitions (widest %d of %d rounds)", parts, widest, rounds)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Several readers of one partition on one transport (the members of a group
// sharing a group log read it so): each gets every record from where it
// started, in order, once, whether the readers are at one offset or at
// different ones. The follower once kept one call per partition, so a
// second reader's call replaced the first's, which then waited forever (a
// group member's view stopped and its heartbeats went unseen).
func TestSeveralReadersOfOnePartition(t *testing.T) {
	const readers, records = 4, 12
	c := kafkatest.Start(t, kafkatest.Options{TxnVersion: 2})
	cfg, _ := internalConfig(t, c, "it-follow-shared-", "krabka.topic.partitions", "1")
	tr, _ := tracedTransport(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if _, err := tr.Partitions(ctx); err != nil {
		t.Fatal(err)
	}
	appendN := func(from, to int) {
		for i := from; i < to; i++ {
			if _, err := tr.Append(ctx, 0, []byte(fmt.Sprintf("r%02d", i)), []byte("v"), nil); err != nil {
				t.Fatal(err)
			}
		}
	}
	appendN(0, records/2)
	var (
		mu  sync.Mutex
		got = make([][]string, readers)
	)
	rctx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for i := 0; i < readers; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			txns := core.NewTxnFolder(func(r core.RawRecord) {
				mu.Lock()
				got[i] = append(got[i], string(r.Key))
				mu.Unlock()
			})
			next := int64(i % 2 * 3) // two readers from 0, two from offset 3
			for rctx.Err() == nil {
				f, err := tr.Fetch(rctx, 0, next, 5*time.Second)
				if err != nil {
					if rctx.Err() == nil {
						t.Errorf("reader %d: %v", i, err)
					}
					return
				}
				for _, b := range f.Batches {
					txns.Add(b)
				}
				next = max(next, f.Next)
			}
		}()
	}
	defer func() { stop(); wg.Wait() }()
	time.Sleep(200 * time.Millisecond) // let every reader wait at the end
	appendN(records/2, records)
	want := func(i int) []string {
		var w []string
		for r := i % 2 * 3; r < records; r++ {
			w = append(w, fmt.Sprintf("r%02d", r))
		}
		return w
	}
	for {
		mu.Lock()
		done := true
		for i := range got {
			if len(got[i]) < len(want(i)) {
				done = false
			}
		}
		snapshot := fmt.Sprint(got)
		mu.Unlock()
		if done {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("records missed after %v: %s", ctx.Err(), snapshot)
		}
		time.Sleep(10 * time.Millisecond)
	}
	mu.Lock()
	defer mu.Unlock()
	for i := range got {
		if fmt.Sprint(got[i]) != fmt.Sprint(want(i)) {
			t.Errorf("reader %d read %v, want %v", i, got[i], want(i))
		}
	}
}
