// Command ktopic makes sure a topic exists on a test cluster, for the live
// tests of the C ABI and the bindings (the C API has no admin calls and the
// test brokers do not create topics on first use). An existing topic is left
// as it is. Replication is the broker default.
//
//	go run ./tests/kafka/cmd/ktopic BOOTSTRAP TOPIC [PARTITIONS]   (default 1 partition)
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "ktopic:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	if len(args) < 2 || len(args) > 3 {
		return errors.New("usage: ktopic BOOTSTRAP TOPIC [PARTITIONS]")
	}
	partitions := 1
	if len(args) == 3 {
		n, err := strconv.Atoi(args[2])
		if err != nil || n < 1 {
			return fmt.Errorf("partition count %q is not a positive integer", args[2])
		}
		partitions = n
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(args[0], ",")...))
	if err != nil {
		return err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res, err := kadm.NewClient(cl).CreateTopic(ctx, int32(partitions), -1, nil, args[1])
	if err == nil {
		err = res.Err
	}
	if err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
		return fmt.Errorf("creating %s on %s: %w", args[1], args[0], err)
	}
	return nil
}
