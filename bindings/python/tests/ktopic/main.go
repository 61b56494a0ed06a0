// Command ktopic creates a topic for the Python binding's live tests (the
// binding has no admin API and the test brokers do not auto-create topics).
//
//	go run ./bindings/python/tests/ktopic -bootstrap 127.0.0.1:39092 -topic T [-partitions 1]
//
// An existing topic is left as it is.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

func main() {
	bootstrap := flag.String("bootstrap", os.Getenv("KRABKA_BOOTSTRAP"), "broker list")
	topic := flag.String("topic", "", "topic to create")
	partitions := flag.Int("partitions", 1, "partition count")
	flag.Parse()
	if *bootstrap == "" || *topic == "" {
		fmt.Fprintln(os.Stderr, "ktopic: -bootstrap and -topic are required")
		os.Exit(2)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(*bootstrap, ",")...))
	if err != nil {
		fmt.Fprintln(os.Stderr, "ktopic:", err)
		os.Exit(1)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := kadm.NewClient(cl).CreateTopic(ctx, int32(*partitions), -1, nil, *topic)
	if err == nil {
		err = res.Err
	}
	if err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
		fmt.Fprintln(os.Stderr, "ktopic:", err)
		os.Exit(1)
	}
}
