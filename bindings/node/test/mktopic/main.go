// Command mktopic creates a topic for the Node binding's live tests (the C
// API has no admin calls, and the test brokers do not auto-create topics).
//
//	go run ./bindings/node/test/mktopic BOOTSTRAP TOPIC [PARTITIONS]
package main

import (
	"context"
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
	if len(os.Args) < 3 {
		fmt.Fprintln(os.Stderr, "usage: mktopic BOOTSTRAP TOPIC [PARTITIONS]")
		os.Exit(2)
	}
	partitions := int32(1)
	if len(os.Args) > 3 {
		n, err := strconv.Atoi(os.Args[3])
		if err != nil || n < 1 {
			fmt.Fprintln(os.Stderr, "mktopic: bad partition count")
			os.Exit(2)
		}
		partitions = int32(n)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(os.Args[1], ",")...))
	if err != nil {
		fmt.Fprintln(os.Stderr, "mktopic:", err)
		os.Exit(1)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	resp, err := kadm.NewClient(cl).CreateTopic(ctx, partitions, 1, nil, os.Args[2])
	if err == nil && resp.Err != nil && resp.Err != kerr.TopicAlreadyExists {
		err = resp.Err
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "mktopic:", err)
		os.Exit(1)
	}
	fmt.Println(os.Args[2])
}
