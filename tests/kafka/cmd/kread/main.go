// Command kread prints every committed data record of a test topic, read
// with isolation read_committed up to each partition's last stable offset,
// as one JSON object a line. The live tests of the C ABI and the bindings use
// it to read the command log back after the broker refused a deposed
// holder's writes (the C API has no consumer, on purpose).
//
//	go run ./tests/kafka/cmd/kread BOOTSTRAP TOPIC
//
// Each line: {"partition":0,"offset":3,"key":"...","value":"...",
// "producer_id":76,"producer_epoch":2,"headers":{"k":"v"}}. Key, value and
// header values are printed as strings (the tests write UTF-8). Control
// records (commit and abort markers) and aborted data are not printed.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

type line struct {
	Partition     int32             `json:"partition"`
	Offset        int64             `json:"offset"`
	Key           string            `json:"key"`
	Value         string            `json:"value"`
	ProducerID    int64             `json:"producer_id"`
	ProducerEpoch int16             `json:"producer_epoch"`
	Headers       map[string]string `json:"headers"`
}

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "kread:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	if len(args) != 2 {
		return errors.New("usage: kread BOOTSTRAP TOPIC")
	}
	bootstrap, topic := args[0], args[1]
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	admin, err := kgo.NewClient(kgo.SeedBrokers(bootstrap))
	if err != nil {
		return err
	}
	defer admin.Close()
	stable, err := kadm.NewClient(admin).ListCommittedOffsets(ctx, topic)
	if err != nil {
		return fmt.Errorf("listing the stable offsets of %s: %w", topic, err)
	}
	if err := stable.Error(); err != nil {
		return fmt.Errorf("listing the stable offsets of %s: %w", topic, err)
	}
	ends := map[int32]int64{}
	starts := map[int32]kgo.Offset{}
	stable.Each(func(o kadm.ListedOffset) {
		if o.Offset > 0 {
			ends[o.Partition] = o.Offset
			starts[o.Partition] = kgo.NewOffset().AtStart()
		}
	})
	if len(ends) == 0 {
		return nil // nothing committed yet
	}
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(bootstrap),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.KeepControlRecords(),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: starts}),
	)
	if err != nil {
		return err
	}
	defer cl.Close()
	out := json.NewEncoder(os.Stdout)
	// Control records are kept so that every offset below the stable offset
	// is seen: a partition of transactional writes ends in a commit or abort
	// marker, and aborted data (which read_committed drops) is always
	// followed by its abort marker. So a partition is done when a record at
	// stable offset - 1 arrived. A read that stops short fails at the
	// deadline, never with a silently short answer.
	next := map[int32]int64{}
	done := func() bool {
		for p, end := range ends {
			if next[p] < end {
				return false
			}
		}
		return true
	}
	for !done() {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			return fmt.Errorf("reading %s: stopped at %v of stable offsets %v: %w", topic, next, ends, ctx.Err())
		}
		var ferr error
		fs.EachError(func(_ string, p int32, err error) { ferr = fmt.Errorf("fetching %s/%d: %w", topic, p, err) })
		if ferr != nil {
			return ferr
		}
		fs.EachRecord(func(r *kgo.Record) {
			if r.Offset >= ends[r.Partition] {
				return
			}
			next[r.Partition] = r.Offset + 1
			if r.Attrs.IsControl() {
				return
			}
			l := line{Partition: r.Partition, Offset: r.Offset, Key: string(r.Key), Value: string(r.Value),
				ProducerID: r.ProducerID, ProducerEpoch: r.ProducerEpoch, Headers: map[string]string{}}
			for _, h := range r.Headers {
				l.Headers[h.Key] = string(h.Value)
			}
			if err := out.Encode(l); err != nil && ferr == nil {
				ferr = err
			}
		})
		if ferr != nil {
			return ferr
		}
	}
	return nil
}
