package kafka

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/krabka/krabka-coord/core/coord"
	"github.com/krabka/krabka-coord/tests/kafka/kafkatest"
)

// A transaction whose produce or commit was abandoned half-way (the
// caller's context ended while the request was on the wire, which is what made franz-go
// re-initialise the producer before this package kept the worker's context
// apart) is recovered by the next transaction: the producer is not fenced,
// the transaction commits, and the token (the same one or the recovered,
// higher one) is the coordinator's current token. On transaction.version 1
// this needs the raw EndTxn abort before franz-go re-initialises: a
// re-initialisation during an ongoing transaction is answered
// PRODUCER_FENCED there.
//
// This is the per-role client's path (krabka.engine=client); the shared
// engine's is TestEngineAbandonedStepsAreRecovered.
func TestAbandonedProduceIsRecovered(t *testing.T) {
	for _, tv := range []int{1, 2} {
		t.Run(fmt.Sprintf("tv%d", tv), func(t *testing.T) {
			t.Parallel()
			c := kafkatest.Start(t, kafkatest.Options{TxnVersion: tv})
			var b [5]byte
			_, _ = rand.Read(b[:])
			id := hex.EncodeToString(b[:])
			cfg := coord.DefaultConfig()
			for k, v := range map[string]string{"bootstrap.servers": c.Bootstrap, "request.timeout.ms": "5000", "krabka.topic": "it-abandon-" + id,
				"krabka.engine": "client"} {
				if err := cfg.Set(k, v); err != nil {
					t.Fatal(err)
				}
			}
			tr, err := New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer tr.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
			defer cancel()
			if _, err := tr.Partitions(ctx); err != nil {
				t.Fatal(err)
			}
			txnID := "it-abandon-" + id
			prod, err := tr.Mint(ctx, txnID, 30*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			p := prod.(*txnProducer)
			minted := p.Token()
			msg := []coord.Message{{Topic: cfg.Topic, Partition: 0, Key: []byte("k"), Value: []byte("v")}}
			// Abandon produces after 0.1 to 5 ms until one was abandoned
			// with its batch on the wire (franz-go then re-initialises:
			// the token moves). Every abandoned one must be recovered.
			abandoned, recovered := 0, false
			for i := 0; i < 500 && !recovered; i++ {
				d := time.Duration(100+(i*50)%5000) * time.Microsecond
				p.sem <- struct{}{}
				if err := p.cl.BeginTransaction(); err != nil {
					t.Fatal(err)
				}
				p.open = true
				// The produce is abandoned in the even rounds, the EndTxn
				// commit in the odd ones.
				pctx, ectx := ctx, ctx
				sctx, scancel := context.WithTimeout(ctx, d)
				if i%2 == 0 {
					pctx = sctx
				} else {
					ectx = sctx
				}
				err := p.cl.ProduceSync(pctx, &kgo.Record{Topic: cfg.Topic, Partition: 0, Key: []byte("k"), Value: []byte("abandoned")}).FirstErr()
				if err == nil {
					err = p.cl.EndTransaction(ectx, kgo.TryCommit)
				}
				scancel()
				if err == nil {
					p.open = false
					<-p.sem
					continue
				}
				<-p.sem
				abandoned++
				before := p.Token()
				if _, err := p.Transact(ctx, msg); err != nil {
					t.Fatalf("the transaction after a produce abandoned after %v: %v", d, err)
				}
				tok := p.Token()
				cur, err := tr.CurrentToken(ctx, txnID)
				if err != nil || cur != tok || tok.Compare(before) < 0 {
					t.Fatalf("after %v: token before %s, now %s, coordinator %s (%v)", d, before, tok, cur, err)
				}
				recovered = tok != before
			}
			if !recovered {
				t.Fatalf("%d produces abandoned, none made franz-go re-initialise; the recovery is untested", abandoned)
			}
			tok := p.Token()
			if _, err := p.Transact(ctx, msg); err != nil || p.Token() != tok {
				t.Fatalf("a transaction after the recovery: %v (token %s, then %s)", err, tok, p.Token())
			}
			t.Logf("minted %s, continued under %s", minted, tok)
		})
	}
}
