package kafka_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/krabka/krabka-coord/core"
	"github.com/krabka/krabka-coord/core/coord"
)

// A Kafka-compatible service without transactions (no InitProducerId,
// AddPartitionsToTxn, EndTxn) or without DescribeTransactions cannot run the
// protocol: acquire and describe fail at once with ErrUnsupported and a
// message that says so, instead of hanging or looking like a fence. Apache
// Kafka cannot be configured without these APIs, so franz-go's in-process
// fake cluster plays such a service here (it only advertises what it is told).
func TestClusterWithoutTransactionsIsUnsupported(t *testing.T) {
	for _, tc := range []struct {
		name    string
		removed []kmsg.Key
	}{
		{"no transactions", []kmsg.Key{kmsg.InitProducerID, kmsg.AddPartitionsToTxn, kmsg.EndTxn, kmsg.DescribeTransactions}},
		{"no DescribeTransactions", []kmsg.Key{kmsg.DescribeTransactions}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := kversion.Stable()
			for _, k := range tc.removed {
				v.SetMaxKeyVersion(int16(k), -1)
			}
			fake, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.MaxVersions(v))
			if err != nil {
				t.Fatal(err)
			}
			defer fake.Close()
			cl := newClient(t, strings.Join(fake.ListenAddrs(), ","))
			role := core.MustRole(uniq("it-unsupported-"))

			_, err = cl.Describe(ctxFor(t, 10*time.Second), role)
			if !errors.Is(err, coord.ErrUnsupported) {
				t.Fatalf("describe: %v, want ErrUnsupported", err)
			}
			if !strings.Contains(err.Error(), "DescribeTransactions") {
				t.Fatalf("describe error does not name the missing API: %v", err)
			}
			_, err = cl.Acquire(ctxFor(t, 10*time.Second), role, core.MustMemberID("a"))
			if len(tc.removed) > 1 {
				if !errors.Is(err, coord.ErrUnsupported) || errors.Is(err, coord.ErrFenced) || !strings.Contains(err.Error(), "transactions") {
					t.Fatalf("acquire: %v, want ErrUnsupported naming transactions", err)
				}
			} else if err != nil {
				t.Fatalf("acquire needs no DescribeTransactions, got %v", err)
			}
		})
	}
}
