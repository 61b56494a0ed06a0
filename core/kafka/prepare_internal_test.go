package kafka

import (
	"context"
	"testing"
	"time"

	"github.com/krabka/krabka-coord/core/coord"
	"github.com/krabka/krabka-coord/tests/kafka/kafkatest"
)

// A producer that Prepare made ready wins with InitProducerId alone: the
// Mint that takes it sends no FindCoordinator, no ApiVersions (every
// connection it needs is open) and no DescribeConfigs (the broker's
// transaction.max.timeout.ms was read ahead), and its first transaction
// needs no new connection either. Without Prepare the same Mint sends all
// of them (the control half of the test). This is the per-role client
// (krabka.engine=client); the shared engine's is TestEnginePrepareIsNearlyFree.
func TestPreparedProducerIsReady(t *testing.T) {
	c := kafkatest.Start(t, kafkatest.Options{TxnVersion: 2})
	cfg, id := internalConfig(t, c, "it-prepare-", "request.timeout.ms", "10000", "krabka.engine", "client")
	tr, reqs := tracedTransport(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	n, err := tr.Partitions(ctx)
	if err != nil || n < 1 {
		t.Fatalf("partitions %d %v", n, err)
	}
	since := func() func() map[string]int {
		from := len(reqs())
		return func() map[string]int {
			got := map[string]int{}
			for _, r := range reqs()[from:] {
				got[r.Key]++
			}
			return got
		}
	}
	mintAndWrite := func(txnID string) map[string]int {
		t.Helper()
		mark := since()
		p, err := tr.Mint(ctx, txnID, 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		defer p.Close()
		if _, err := p.Transact(ctx, []coord.Message{{Topic: cfg.Topic, Partition: 0, Key: []byte("k"), Value: []byte("v")}}); err != nil {
			t.Fatal(err)
		}
		return mark()
	}

	// Control: a fresh transport state for the broker config, no Prepare.
	cold := mintAndWrite("it-prepare-cold-" + id)
	for _, k := range []string{"FindCoordinator", "ApiVersions", "DescribeConfigs"} {
		if cold[k] == 0 {
			t.Fatalf("an unprepared Mint sent no %s (requests %v): the control does not show what Prepare saves", k, cold)
		}
	}

	tr.mu.Lock()
	tr.txnMax = 0 // read the broker's limit again: Prepare must do it
	tr.mu.Unlock()
	txnID := "it-prepare-warm-" + id
	tr.Prepare(txnID, 10*time.Second)
	tr.mu.Lock()
	pr := tr.prepared[txnID]
	tr.mu.Unlock()
	if pr == nil {
		t.Fatal("Prepare built no producer")
	}
	select {
	case <-pr.ready:
	case <-ctx.Done():
		t.Fatal("Prepare did not finish")
	}
	warm := mintAndWrite(txnID)
	for _, k := range []string{"FindCoordinator", "ApiVersions", "DescribeConfigs", "DescribeTransactions"} {
		if warm[k] != 0 {
			t.Errorf("the Mint of a prepared producer sent %d %s (requests %v)", warm[k], k, warm)
		}
	}
	if warm["InitProducerID"] != 1 || warm["EndTxn"] != 1 {
		t.Errorf("the prepared Mint and its transaction sent %v: want one InitProducerID and one EndTxn", warm)
	}
}
