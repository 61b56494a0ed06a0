// Command kready waits until a Kafka cluster reports the expected number of
// brokers in its metadata, by asking the cluster (never by reading logs).
//
//	kready -bootstrap 127.0.0.1:39092[,..] -brokers N -timeout 90s [-features]
//
// With -features it then prints the finalized feature levels (for example
// "transaction.version=2") from an ApiVersions response, one per line.
// Exit code 0 when ready, 1 on timeout (with the last error seen).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func main() {
	bootstrap := flag.String("bootstrap", "127.0.0.1:39092", "comma-separated seed brokers (PLAINTEXT)")
	brokers := flag.Int("brokers", 1, "number of brokers that must be visible")
	timeout := flag.Duration("timeout", 90*time.Second, "overall bound")
	features := flag.Bool("features", false, "print finalized features once ready")
	flag.Parse()

	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()

	var lastErr error
	for {
		err := try(ctx, *bootstrap, *brokers, *features)
		if err == nil {
			return
		}
		lastErr = err
		select {
		case <-ctx.Done():
			fmt.Fprintf(os.Stderr, "kready: cluster at %s not ready after %s: %v\n", *bootstrap, *timeout, lastErr)
			os.Exit(1)
		case <-time.After(300 * time.Millisecond):
		}
	}
}

func try(ctx context.Context, bootstrap string, want int, features bool) error {
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(strings.Split(bootstrap, ",")...),
		kgo.DialTimeout(2*time.Second),
		kgo.RetryTimeout(2*time.Second),
		kgo.RequestRetries(0),
	)
	if err != nil {
		return err
	}
	defer cl.Close()
	actx, acancel := context.WithTimeout(ctx, 3*time.Second)
	defer acancel()
	adm := kadm.NewClient(cl)
	md, err := adm.BrokerMetadata(actx)
	if err != nil {
		return err
	}
	if len(md.Brokers) < want {
		return fmt.Errorf("%d of %d brokers visible", len(md.Brokers), want)
	}
	if md.Controller < 0 {
		return fmt.Errorf("no active controller yet")
	}
	if !features {
		return nil
	}
	req := kmsg.NewPtrApiVersionsRequest()
	req.ClientSoftwareName = "kready"
	req.ClientSoftwareVersion = "1"
	resp, err := req.RequestWith(actx, cl)
	if err != nil {
		return err
	}
	var lines []string
	for _, f := range resp.FinalizedFeatures {
		lines = append(lines, fmt.Sprintf("%s=%d", f.Name, f.MaxVersionLevel))
	}
	sort.Strings(lines)
	for _, l := range lines {
		fmt.Println(l)
	}
	return nil
}
