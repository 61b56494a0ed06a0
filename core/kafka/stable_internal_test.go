package kafka

import (
	"context"
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
