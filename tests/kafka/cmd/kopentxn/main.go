// Command kopentxn leaves a transaction open on one partition of a topic, as
// a holder killed between its renewal's Produce and its EndTxn leaves one,
// for the live tests of the C ABI and the bindings (docs/PROTOCOL.md 12.1).
// It begins a transaction of a transactional.id of its own, produces one
// record to the partition, checks that the partition's last stable offset
// is now behind its high watermark, and prints `open LSO HWM`. Then it
// waits: a line "abort" on stdin (or stdin closing) aborts the transaction
// and exits; SIGKILL leaves it open until the coordinator aborts it at
// TIMEOUT_MS.
//
//	go run ./tests/kafka/cmd/kopentxn BOOTSTRAP TOPIC PARTITION TIMEOUT_MS
package main

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "kopentxn:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	if len(args) != 4 {
		return errors.New("usage: kopentxn BOOTSTRAP TOPIC PARTITION TIMEOUT_MS")
	}
	topic := args[1]
	p, err := strconv.Atoi(args[2])
	if err != nil || p < 0 {
		return fmt.Errorf("partition %q is not a non-negative integer", args[2])
	}
	ms, err := strconv.Atoi(args[3])
	if err != nil || ms < 1 {
		return fmt.Errorf("timeout %q is not a positive number of milliseconds", args[3])
	}
	var id [6]byte
	_, _ = rand.Read(id[:])
	seeds := kgo.SeedBrokers(strings.Split(args[0], ",")...)
	cl, err := kgo.NewClient(seeds, kgo.TransactionalID("kopentxn-"+hex.EncodeToString(id[:])),
		kgo.TransactionTimeout(time.Duration(ms)*time.Millisecond), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		return err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := cl.BeginTransaction(); err != nil {
		return err
	}
	rec := &kgo.Record{Topic: topic, Partition: int32(p), Key: []byte("kopentxn"), Value: []byte("left open")}
	if err := cl.ProduceSync(ctx, rec).FirstErr(); err != nil {
		return fmt.Errorf("produce: %w", err)
	}
	adm := kadm.NewClient(cl)
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		return err
	}
	stable, err := adm.ListCommittedOffsets(ctx, topic)
	if err != nil {
		return err
	}
	e, _ := ends.Lookup(topic, int32(p))
	s, _ := stable.Lookup(topic, int32(p))
	if s.Offset >= e.Offset {
		return fmt.Errorf("the stable offset %d is not behind the high watermark %d: no transaction held", s.Offset, e.Offset)
	}
	fmt.Printf("open %d %d\n", s.Offset, e.Offset)
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() && strings.TrimSpace(in.Text()) != "abort" {
	}
	actx, acancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer acancel()
	return cl.EndTransaction(actx, kgo.TryAbort)
}
