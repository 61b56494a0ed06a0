package kafka

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/krabka/krabka-coord/core/coord"
	"github.com/krabka/krabka-coord/tests/kafka/kafkatest"
)

// StableOffset lists the high watermark (the end a reader past the last
// stable offset must reach) with one ListOffsets until a fetch of the
// partition has answered; from then on with one Fetch, which answers the
// same offset (here: past a committed transaction and a registration-style
// plain append).
func TestStableOffsetByOneFetch(t *testing.T) {
	c := kafkatest.Start(t, kafkatest.Options{TxnVersion: 2})
	cfg, id := internalConfig(t, c, "it-stable-", "request.timeout.ms", "10000", "krabka.topic.partitions", "1")
	tr, reqs := tracedTransport(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if _, err := tr.Partitions(ctx); err != nil {
		t.Fatal(err)
	}
	count := func(f func()) map[string]int {
		from := len(reqs())
		f()
		got := map[string]int{}
		for _, r := range reqs()[from:] {
			if r.Client == "admin" {
				got[r.Key]++
			}
		}
		return got
	}
	if _, err := tr.Append(ctx, 0, []byte("k1"), []byte("v1"), nil); err != nil {
		t.Fatal(err)
	}
	p, err := tr.Mint(ctx, "it-stable-"+id, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if _, err := p.Transact(ctx, []coord.Message{{Topic: cfg.Topic, Partition: 0, Key: []byte("k2"), Value: []byte("v2")}}); err != nil {
		t.Fatal(err)
	}
	var listed int64
	got := count(func() {
		if listed, err = tr.StableOffset(ctx, 0); err != nil {
			t.Fatal(err)
		}
	})
	if got["ListOffsets"] != 1 || got["Fetch"] != 0 {
		t.Fatalf("before any fetch: %v, want one ListOffsets and no Fetch", got)
	}
	// k1 and k2, and the commit marker once the coordinator wrote it (it
	// answers EndTxn first): the high watermark, no wait for the marker.
	if listed != 2 && listed != 3 {
		t.Fatalf("listed %d, want 2 or 3", listed)
	}
	if _, err := tr.Fetch(ctx, 0, 0, 0); err != nil {
		t.Fatal(err)
	}
	off3, err := tr.Append(ctx, 0, []byte("k3"), []byte("v3"), nil)
	if err != nil {
		t.Fatal(err)
	}
	var byFetch int64
	got = count(func() {
		if byFetch, err = tr.StableOffset(ctx, 0); err != nil {
			t.Fatal(err)
		}
	})
	if got["ListOffsets"] != 0 || got["Fetch"] != 1 {
		t.Fatalf("after a fetch: %v, want one Fetch and no ListOffsets", got)
	}
	if byFetch < off3+1 || byFetch > 4 {
		t.Fatalf("listed %d by fetch, want past k3 at %d (at most 4)", byFetch, off3)
	}
}

// Concurrent StableOffset calls of one partition share their requests
// (one in flight, the next one shared by every call that began since),
// and each still answers at least the end of what was appended before the
// call began: 40 writers each append a record and then list the end, 5
// times each; 200 calls sent far fewer than 200 requests.
func TestStableOffsetCallsShareRequests(t *testing.T) {
	c := kafkatest.Start(t, kafkatest.Options{TxnVersion: 2})
	cfg, _ := internalConfig(t, c, "it-stable-share-", "request.timeout.ms", "10000", "krabka.topic.partitions", "1")
	tr, reqs := tracedTransport(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if _, err := tr.Partitions(ctx); err != nil {
		t.Fatal(err)
	}
	from := len(reqs())
	const writers, rounds = 40, 5
	errs := make(chan error, writers)
	for w := range writers {
		go func() {
			for i := range rounds {
				off, err := tr.Append(ctx, 0, []byte(fmt.Sprintf("k%d-%d", w, i)), []byte("v"), nil)
				if err != nil {
					errs <- err
					return
				}
				end, err := tr.StableOffset(ctx, 0)
				if err != nil {
					errs <- err
					return
				}
				if end <= off {
					errs <- fmt.Errorf("writer %d: StableOffset answered %d after an append at offset %d", w, end, off)
					return
				}
			}
			errs <- nil
		}()
	}
	for range writers {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	listed := 0
	for _, r := range reqs()[from:] {
		if r.Client == "admin" && (r.Key == "Fetch" || r.Key == "ListOffsets") {
			listed++
		}
	}
	t.Logf("%d StableOffset calls: %d requests", writers*rounds, listed)
	if listed == 0 || listed > writers*rounds/2 {
		t.Fatalf("%d StableOffset calls sent %d Fetch or ListOffsets requests: not shared", writers*rounds, listed)
	}
}
