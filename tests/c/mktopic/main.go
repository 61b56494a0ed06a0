// Command mktopic makes sure a topic exists, for the C live test and the C
// example (the C API has no admin calls; the test brokers do not create
// topics on first use).
//
//	go run ./tests/c/mktopic BOOTSTRAP TOPIC [PARTITIONS]
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
		fmt.Fprintln(os.Stderr, "mktopic:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	if len(args) < 2 {
		return errors.New("usage: mktopic BOOTSTRAP TOPIC [PARTITIONS]")
	}
	parts := 3
	if len(args) > 2 {
		n, err := strconv.Atoi(args[2])
		if err != nil || n < 1 {
			return fmt.Errorf("bad partition count %q", args[2])
		}
		parts = n
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(args[0], ",")...))
	if err != nil {
		return err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res, err := kadm.NewClient(cl).CreateTopic(ctx, int32(parts), -1, nil, args[1])
	if err == nil {
		err = res.Err
	}
	if err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
		return err
	}
	return nil
}
