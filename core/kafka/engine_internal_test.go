package kafka

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/krabka/krabka-coord/core/coord"
	"github.com/krabka/krabka-coord/tests/kafka/kafkatest"
)

// wrote is one record a test had the engine write.
type wrote struct {
	key, value string
	id         int64
	epoch      int16
	committed  bool
}

// TestEngineBatchesDecodeWithFranzGo runs transactions of one role on the
// shared engine (lease-topic and data-topic records, pinned and key-hashed
// partitions, a transaction the broker refuses, after which the producer
// continues under its own next epoch), then reads back every batch of the
// partitions it wrote read_uncommitted and checks each with franz-go's own
// decoders: kmsg.RecordBatch for the producer id, epoch, first sequence
// (0 at every new epoch, then advancing by the records of each batch) and
// the transactional flag, and kgo.ProcessFetchPartition, which validates
// the CRC-32C, for the records themselves; read_committed leaves out the
// refused transaction. The requests' trace shows the planes: lease-only
// transactions on the control plane, the others on the data plane.
func TestEngineBatchesDecodeWithFranzGo(t *testing.T) {
	for _, tv := range []int{1, 2} {
		t.Run(fmt.Sprintf("tv%d", tv), func(t *testing.T) {
			t.Parallel()
			c := kafkatest.Start(t, kafkatest.Options{TxnVersion: tv})
			testEngineBatches(t, c)
		})
	}
}

func testEngineBatches(t *testing.T, c *kafkatest.Cluster) {
	cfg, id := internalConfig(t, c, "eng_", "krabka.engine", "shared", "request.timeout.ms", "10000")
	tr, traced := tracedTransport(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	if _, err := tr.Partitions(ctx); err != nil {
		t.Fatal(err)
	}
	data := "engdata_" + id
	if _, err := tr.adm.CreateTopic(ctx, 3, 1, map[string]*string{"max.message.bytes": kmsg.StringPtr("100000")}, data); err != nil {
		t.Fatal(err)
	}
	txnID := "eng-role-" + id
	mp, err := tr.Mint(ctx, txnID, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	p, ok := mp.(*engProducer)
	if !ok {
		t.Fatalf("krabka.engine=shared minted a %T, not the engine's producer", mp)
	}
	defer p.Close()
	tok0 := p.Token()

	written := map[engPart][]wrote{} // in offset order per partition
	run := func(i int, leaseOnly bool) {
		t.Helper()
		msgs := []coord.Message{{Topic: cfg.Topic, Partition: 0, Key: []byte(fmt.Sprintf("lease-%d", i)), Value: []byte("v")}}
		if !leaseOnly {
			msgs = append(msgs,
				coord.Message{Topic: data, Partition: 1, Key: []byte(fmt.Sprintf("a-%d", i)), Value: []byte("x"), Headers: []coord.Header{{Key: "h", Value: []byte("1")}}},
				coord.Message{Topic: data, Partition: 1, Key: []byte(fmt.Sprintf("b-%d", i)), Value: bytes.Repeat([]byte("y"), i+1)},
				coord.Message{Topic: data, Partition: -1, Key: []byte(fmt.Sprintf("hashed-%d", i)), Value: []byte("z")},
			)
		}
		res, err := p.Transact(ctx, msgs)
		if err != nil {
			t.Fatalf("transaction %d: %v", i, err)
		}
		if len(res) != len(msgs) {
			t.Fatalf("transaction %d: %d results for %d messages", i, len(res), len(msgs))
		}
		tok := p.Token()
		for j, r := range res {
			k := engPart{r.Topic, r.Partition}
			if r.Topic != msgs[j].Topic || msgs[j].Partition >= 0 && r.Partition != msgs[j].Partition {
				t.Fatalf("message %d landed on %s/%d", j, r.Topic, r.Partition)
			}
			if n := len(written[k]); n > 0 && r.Offset <= int64(n-1) {
				t.Fatalf("offset %d of %s/%d does not advance", r.Offset, r.Topic, r.Partition)
			}
			written[k] = append(written[k], wrote{string(msgs[j].Key), string(msgs[j].Value), tok.ProducerID, tok.ProducerEpoch, true})
		}
	}
	for i := 0; i < 4; i++ {
		run(i, i%2 == 1)
	}

	// The broker refuses a record above the topic's max.message.bytes: the
	// transaction is aborted under the same token (nothing of the
	// producer's state is in doubt); the other partition's batch, written
	// and aborted, used its sequence.
	big := []coord.Message{
		{Topic: data, Partition: 2, Key: []byte("fine"), Value: []byte("ok")},
		{Topic: data, Partition: 0, Key: []byte("big"), Value: bytes.Repeat([]byte("B"), 200000)},
	}
	if _, err := p.Transact(ctx, big); !errors.Is(err, coord.ErrMessageTooLarge) {
		t.Fatalf("an oversized record: %v", err)
	}
	if p.Token() != tok0 {
		t.Fatalf("after the refused transaction the token is %s, not %s", p.Token(), tok0)
	}
	k2 := engPart{data, 2} // the refused transaction's other record, aborted
	written[k2] = append(written[k2], wrote{"fine", "ok", tok0.ProducerID, tok0.ProducerEpoch, false})
	run(4, false)
	// A failure whose outcome is unknown is settled by an own epoch
	// recovery: exactly the next epoch, sequences from 0.
	p.sem <- struct{}{}
	p.pending, p.seqDoubt = true, true // a produce whose outcome is unknown
	p.recoverAfterFailure()
	<-p.sem
	tok1 := p.Token()
	if tok1.ProducerID != tok0.ProducerID || tok1.ProducerEpoch != tok0.ProducerEpoch+1 || p.broken != nil {
		t.Fatalf("after the recovery the token is %s (broken %v), not the next epoch of %s", tok1, p.broken, tok0)
	}
	if cur, err := tr.CurrentToken(ctx, txnID); err != nil || cur != tok1 {
		t.Fatalf("coordinator's token %s (%v), producer's %s", cur, err, tok1)
	}
	for i := 5; i < 8; i++ {
		run(i, false)
	}

	// Read every partition back.
	leaders := func(topic string) []int32 {
		ls, err := tr.eng.leaders(ctx, topic, true)
		if err != nil {
			t.Fatal(err)
		}
		return ls
	}
	tds, err := tr.adm.ListTopics(ctx, cfg.Topic, data)
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for k, want := range written {
		leader := leaders(k.topic)[k.partition]
		for _, iso := range []int8{0, 1} {
			req := kmsg.NewPtrFetchRequest()
			req.ReplicaID, req.MaxWaitMillis, req.MaxBytes, req.IsolationLevel = -1, 100, 10<<20, iso
			ft := kmsg.NewFetchRequestTopic()
			ft.Topic, ft.TopicID = k.topic, tds[k.topic].ID // Fetch v13+ names topics by id
			fp := kmsg.NewFetchRequestTopicPartition()
			fp.Partition, fp.FetchOffset, fp.PartitionMaxBytes, fp.CurrentLeaderEpoch, fp.LogStartOffset = k.partition, 0, 10<<20, -1, -1
			ft.Partitions = append(ft.Partitions, fp)
			req.Topics = append(req.Topics, ft)
			resp, err := req.RequestWith(ctx, tr.admin.Broker(int(leader)))
			if err != nil {
				t.Fatal(err)
			}
			if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
				t.Fatalf("fetch of %s/%d answered %d topics", k.topic, k.partition, len(resp.Topics))
			}
			rp := &resp.Topics[0].Partitions[0]
			if iso == 0 {
				checked += checkBatches(t, k, rp.RecordBatches, tok0.ProducerID, want)
			}
			level := kgo.ReadUncommitted()
			if iso == 1 {
				level = kgo.ReadCommitted()
			}
			got, _ := kgo.ProcessFetchPartition(kgo.ProcessFetchPartitionOpts{Topic: k.topic, Partition: k.partition, IsolationLevel: level}, rp, kgo.DefaultDecompressor(), nil)
			if got.Err != nil {
				t.Fatalf("franz-go decoding %s/%d: %v", k.topic, k.partition, got.Err)
			}
			var recs []*kgo.Record
			for _, r := range got.Records {
				if r.ProducerID == tok0.ProducerID {
					recs = append(recs, r)
				}
			}
			var exp []wrote
			for _, w := range want {
				if w.committed || iso == 0 {
					exp = append(exp, w)
				}
			}
			if len(recs) != len(exp) {
				t.Fatalf("%s/%d isolation %d: franz-go decoded %d records of the producer, the engine wrote %d", k.topic, k.partition, iso, len(recs), len(exp))
			}
			for i, r := range recs {
				w := exp[i]
				if string(r.Key) != w.key || string(r.Value) != w.value || r.ProducerEpoch != w.epoch || !r.Attrs.IsTransactional() {
					t.Fatalf("%s/%d record %d: key %q value %q epoch %d transactional %v; wrote %+v", k.topic, k.partition, i, r.Key, r.Value, r.ProducerEpoch, r.Attrs.IsTransactional(), w)
				}
				hasTok := false
				for _, h := range r.Headers {
					if h.Key == "krabka.token" {
						hasTok = string(h.Value) == fmt.Sprintf("%d:%d", w.id, w.epoch)
					}
				}
				if (k.topic == data) != hasTok {
					t.Fatalf("%s/%d record %d: token header %v (headers %v)", k.topic, k.partition, i, hasTok, r.Headers)
				}
			}
		}
	}
	if checked < 10 {
		t.Fatalf("only %d batches checked", checked)
	}

	// The planes: lease-only transactions on the control plane, the
	// others on the data plane; nothing on a per-role producer client.
	planes := map[string]int{}
	for _, r := range traced() {
		if r.Key == "Produce" || r.Key == "EndTxn" || r.Key == "AddPartitionsToTxn" || r.Key == "InitProducerID" {
			planes[r.Client+"/"+r.Key]++
		}
		if r.Client == "producer" {
			t.Fatalf("a per-role producer client sent %s", r.Key)
		}
	}
	if planes["engine-control/InitProducerID"] < 2 || planes["engine-control/Produce"] < 2 || planes["engine-data/Produce"] < 5 || planes["engine-data/EndTxn"] < 5 {
		t.Fatalf("requests by plane: %v", planes)
	}
}

// checkBatches decodes the record batches of one partition with
// kmsg.RecordBatch and checks the data batches of producer id: epochs as
// written, the transactional flag, and the sequences (each epoch's first
// batch at 0, each next batch at the previous one's first sequence plus its
// records). It returns the number of data batches checked.
func checkBatches(t *testing.T, k engPart, raw []byte, id int64, want []wrote) int {
	t.Helper()
	next := map[int16]int32{}
	n, rec := 0, 0
	for len(raw) > 0 {
		var b kmsg.RecordBatch
		if err := b.ReadFrom(raw); err != nil {
			t.Fatalf("%s/%d: %v", k.topic, k.partition, err)
		}
		size := int(b.Length) + 12
		raw = raw[size:]
		if b.ProducerID != id || b.Attributes&0x20 != 0 { // another producer, or a commit/abort marker
			continue
		}
		if b.Attributes&batchTransactional == 0 || b.Magic != 2 {
			t.Fatalf("%s/%d: batch at %d attributes %#x magic %d", k.topic, k.partition, b.FirstOffset, b.Attributes, b.Magic)
		}
		if b.FirstSequence != next[b.ProducerEpoch] {
			t.Fatalf("%s/%d: batch at %d of epoch %d has sequence %d, want %d", k.topic, k.partition, b.FirstOffset, b.ProducerEpoch, b.FirstSequence, next[b.ProducerEpoch])
		}
		next[b.ProducerEpoch] = b.FirstSequence + b.NumRecords
		if rec+int(b.NumRecords) > len(want) {
			t.Fatalf("%s/%d: more records than written", k.topic, k.partition)
		}
		for i := 0; i < int(b.NumRecords); i++ {
			if want[rec+i].epoch != b.ProducerEpoch {
				t.Fatalf("%s/%d: batch at %d epoch %d, record written under epoch %d", k.topic, k.partition, b.FirstOffset, b.ProducerEpoch, want[rec+i].epoch)
			}
		}
		rec += int(b.NumRecords)
		n++
	}
	if rec != len(want) {
		t.Fatalf("%s/%d: %d records in batches, %d written", k.topic, k.partition, rec, len(want))
	}
	return n
}

// TestEngineAbandonedStepsAreRecovered: an engine transaction whose
// AddPartitionsToTxn, Produce or EndTxn was abandoned half-way (its context
// ended while the request was on the wire, 0.1 to 5 ms in) leaves its
// outcome unknown, and an abandoned Produce the partition's sequence too.
// The next transaction settles it first (raw EndTxn abort,
// DescribeTransactions, then, after an abandoned Produce, the own
// next-epoch re-initialisation with sequences from 0; otherwise the same
// token) and commits; the token is the coordinator's current one and never
// goes back. At least one
// abandonment must have forced an epoch recovery, or the recovery is
// untested and the test fails.
func TestEngineAbandonedStepsAreRecovered(t *testing.T) {
	for _, tv := range []int{1, 2} {
		t.Run(fmt.Sprintf("tv%d", tv), func(t *testing.T) {
			t.Parallel()
			c := kafkatest.Start(t, kafkatest.Options{TxnVersion: tv})
			cfg, id := internalConfig(t, c, "eng-abandon-", "krabka.engine", "shared", "request.timeout.ms", "5000")
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
			txnID := "eng-abandon-" + id
			mp, err := tr.Mint(ctx, txnID, 30*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			p := mp.(*engProducer)
			defer p.Close()
			msg := []coord.Message{{Topic: cfg.Topic, Partition: 0, Key: []byte("k"), Value: []byte("v")}}
			abandoned, recovered := 0, 0
			for i := 0; i < 60; i++ { // d from 0.1 to 4.2 ms: abandons each of the three steps
				d := time.Duration(100+(i*70)%5000) * time.Microsecond
				p.sem <- struct{}{}
				if err := p.settle(ctx); err != nil {
					t.Fatal(err)
				}
				tok := p.Token()
				ids := tokenIDs{tok.ProducerID, tok.ProducerEpoch}
				bs, err := p.batches(ctx, []coord.Message{{Topic: cfg.Topic, Partition: 0, Key: []byte("k"), Value: []byte("abandoned")}}, tok)
				if err != nil {
					t.Fatal(err)
				}
				sctx, scancel := context.WithTimeout(ctx, d)
				p.open = true
				err = p.addPartitions(sctx, p.e.ctlClient(txnID), ids, bs)
				if err == nil {
					if err = p.produce(sctx, p.e.ctlClient(txnID), bs); err != nil {
						p.seqDoubt = true // what transact records: the batch's outcome is unknown
					}
				}
				if err == nil {
					err = endTxn(sctx, p.e.ctlClient(txnID), txnID, ids, true)
				}
				scancel()
				if err == nil {
					p.open = false
					<-p.sem
					continue
				}
				p.pending = true // what failed() records before settling
				<-p.sem
				abandoned++
				before := p.Token()
				if _, err := p.Transact(ctx, msg); err != nil {
					t.Fatalf("the transaction after a step abandoned after %v: %v", d, err)
				}
				now := p.Token()
				cur, err := tr.CurrentToken(ctx, txnID)
				if err != nil || cur != now || now.Compare(before) < 0 {
					t.Fatalf("after %v: token before %s, now %s, coordinator %s (%v)", d, before, now, cur, err)
				}
				if now != before {
					recovered++
				}
			}
			if recovered == 0 {
				t.Fatalf("%d steps abandoned, no epoch recovery: the recovery is untested", abandoned)
			}
			tok := p.Token()
			if _, err := p.Transact(ctx, msg); err != nil || p.Token() != tok {
				t.Fatalf("a transaction after the recoveries: %v (token %s, then %s)", err, tok, p.Token())
			}
			t.Logf("%d abandoned, %d epoch recoveries, now %s", abandoned, recovered, tok)
		})
	}
}

// TestEnginePrepareIsNearlyFree: on the engine Prepare builds nothing per
// role (no producer, no client) and only has the control plane and the
// role's data plane learn the role's transaction coordinator (and, once per
// engine, opens the produce connections), so that the Mint that follows
// sends InitProducerId and its lease transaction, and then a guarded
// write, with no FindCoordinator, ApiVersions, DescribeConfigs or
// DescribeTransactions; an unprepared Mint of a fresh transport sends them
// (the control half).
func TestEnginePrepareIsNearlyFree(t *testing.T) {
	c := kafkatest.Start(t, kafkatest.Options{TxnVersion: 2})
	cfg, id := internalConfig(t, c, "eng-prepare-", "krabka.engine", "shared", "request.timeout.ms", "10000")
	tr, reqs := tracedTransport(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if _, err := tr.Partitions(ctx); err != nil {
		t.Fatal(err)
	}
	data := "eng-prepare-data-" + id
	if _, err := tr.adm.CreateTopic(ctx, 1, 1, nil, data); err != nil {
		t.Fatal(err)
	}
	count := func(from int) map[string]int {
		got := map[string]int{}
		for _, r := range reqs()[from:] {
			got[r.Key]++
		}
		return got
	}
	mintAndWrite := func(txnID string) map[string]int {
		t.Helper()
		from := len(reqs())
		p, err := tr.Mint(ctx, txnID, 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		defer p.Close()
		if _, err := p.Transact(ctx, []coord.Message{{Topic: cfg.Topic, Partition: 0, Key: []byte("k"), Value: []byte("v")}}); err != nil {
			t.Fatal(err)
		}
		if _, err := p.Transact(ctx, []coord.Message{{Topic: data, Partition: 0, Key: []byte("k"), Value: []byte("w")}}); err != nil {
			t.Fatal(err)
		}
		return count(from)
	}
	cold := mintAndWrite("eng-prepare-cold-" + id)
	for _, k := range []string{"FindCoordinator", "ApiVersions", "DescribeConfigs"} {
		if cold[k] == 0 {
			t.Fatalf("an unprepared Mint sent no %s (requests %v): the control does not show what Prepare saves", k, cold)
		}
	}
	txnID := "eng-prepare-warm-" + id
	from := len(reqs())
	select { // what Transport.Prepare runs on the engine, waited for
	case <-tr.enginePrepare(txnID):
	case <-ctx.Done():
		t.Fatal("Prepare did not finish")
	}
	if got := count(from)["DescribeTransactions"]; got != 2 {
		t.Fatalf("Prepare sent %d DescribeTransactions (requests %v): want one per plane of the role", got, count(from))
	}
	tr.mu.Lock()
	n := len(tr.prepared)
	tr.mu.Unlock()
	if n != 0 {
		t.Fatalf("Prepare on the engine built %d per-role producers", n)
	}
	from = len(reqs())
	warm := mintAndWrite(txnID)
	// Each Produce is traced once, by the engine, naming the role (the
	// chaos campaign's mid-transaction faults pick a role's renewal by it):
	// the lease on the control plane, the guarded write on the data plane.
	var produced []string
	for _, r := range reqs()[from:] {
		if r.Key == "Produce" {
			produced = append(produced, r.Client+"/"+r.TxnID)
		}
	}
	if want := []string{"engine-control/" + txnID, "engine-data/" + txnID}; !slices.Equal(produced, want) {
		t.Errorf("the Produce requests of the two transactions were traced as %q, want %q", produced, want)
	}
	for _, k := range []string{"FindCoordinator", "ApiVersions", "DescribeConfigs", "DescribeTransactions"} {
		if warm[k] != 0 {
			t.Errorf("the Mint after Prepare sent %d %s (requests %v)", warm[k], k, warm)
		}
	}
	if warm["InitProducerID"] != 1 || warm["EndTxn"] != 2 {
		t.Errorf("the prepared Mint and its two transactions sent %v: want one InitProducerID and two EndTxn", warm)
	}
}

// TestEngineWarmIsOncePerEngine: Warm (what AcquireEach calls instead of
// preparing each of its roles) reads transaction.max.timeout.ms and opens
// the engine's connections once, and looks up no role; a second Warm
// sends nothing. A Mint after it opens no connection and reads no
// setting: it looks its role's coordinator up (FindCoordinator) and
// initialises.
func TestEngineWarmIsOncePerEngine(t *testing.T) {
	tr, e, reqs, id, ctx := engineOnBroker(t, "eng-warm-")
	count := func(from int) map[string]int { return keyCounts(reqs()[from:], "") }
	from := len(reqs())
	tr.Warm()
	e.warm() // waits for the Warm above
	warmed := count(from)
	if warmed["DescribeConfigs"] != 1 || warmed["FindCoordinator"] != 0 || warmed["DescribeTransactions"] != 0 {
		t.Fatalf("Warm sent %v: want one DescribeConfigs, no FindCoordinator, no DescribeTransactions", warmed)
	}
	from = len(reqs())
	tr.Warm()
	e.warm()
	if again := count(from); len(again) != 0 {
		t.Fatalf("a second Warm sent %v", again)
	}
	p, err := tr.Mint(ctx, "eng-warm-"+id, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	minted := count(from)
	// A fresh coordinator may answer the first InitProducerId with a
	// retriable error, and each retry may look the coordinator up again.
	if minted["ApiVersions"] != 0 || minted["DescribeConfigs"] != 0 || minted["DescribeTransactions"] != 0 ||
		minted["FindCoordinator"] < 1 || minted["InitProducerID"] < 1 || minted["FindCoordinator"] > minted["InitProducerID"] {
		t.Fatalf("a Mint after Warm sent %v: want a FindCoordinator per InitProducerID, no ApiVersions, DescribeConfigs or DescribeTransactions", minted)
	}
}

// TestEngineBatchesCoordinatorLookups: mints of roles nobody prepared that
// run at once (a standby winning many roles) share their coordinator
// look-ups (coordLookups): 64 concurrent mints send far fewer
// FindCoordinator requests than 64, and each is minted; a second mint of
// the same role looks nothing up.
func TestEngineBatchesCoordinatorLookups(t *testing.T) {
	tr, e, reqs, id, ctx := engineOnBroker(t, "eng-lookups-")
	tr.Warm()
	e.warm()
	count := func(from int, key string) int { return keyCounts(reqs()[from:], "engine-control")[key] }
	const n = 64
	from := len(reqs())
	errs := make(chan error, n)
	for i := range n {
		go func() {
			p, err := tr.Mint(ctx, fmt.Sprintf("eng-lookups-%s-%d", id, i), 10*time.Second)
			if err == nil {
				p.Close()
			}
			errs <- err
		}()
	}
	for range n {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	found, described := count(from, "FindCoordinator"), count(from, "DescribeTransactions")
	t.Logf("%d concurrent mints of unprepared roles: %d FindCoordinator, %d DescribeTransactions", n, found, described)
	if found == 0 || found > n/4 {
		t.Fatalf("%d concurrent mints sent %d FindCoordinator requests: not shared", n, found)
	}
	from = len(reqs())
	p, err := tr.Mint(ctx, fmt.Sprintf("eng-lookups-%s-%d", id, 0), 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	p.Close()
	// Only a retried InitProducerId (a coordinator moving or loading) may
	// look the coordinator up again.
	if d, f, i := count(from, "DescribeTransactions"), count(from, "FindCoordinator"), count(from, "InitProducerID"); d != 0 || f > i-1 {
		t.Fatalf("a second mint of a role looked its coordinator up again: %d DescribeTransactions, %d FindCoordinator, %d InitProducerID", d, f, i)
	}
}

// engineOnBroker is a traced transport on the shared engine, on a fresh
// one-broker cluster whose transaction log is loaded, with the
// coordination topic's partitions read: the
// transport, its engine, its requests, the test's id and a context that
// ends with the test.
func engineOnBroker(t *testing.T, prefix string) (*Transport, *engine, func() []RequestTrace, string, context.Context) {
	t.Helper()
	c := kafkatest.Start(t, kafkatest.Options{TxnVersion: 2})
	cfg, id := internalConfig(t, c, prefix, "krabka.engine", "shared", "request.timeout.ms", "10000")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	// A mint on another transport first: the cluster's first
	// InitProducerId creates and loads the transaction log, whose
	// retries the tests would count.
	other, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if p, err := other.Mint(ctx, prefix+id+"-first", 10*time.Second); err != nil {
		t.Fatal(err)
	} else {
		p.Close()
	}
	other.Close()
	tr, reqs := tracedTransport(t, cfg)
	if _, err := tr.Partitions(ctx); err != nil {
		t.Fatal(err)
	}
	e, err := tr.engine()
	if err != nil {
		t.Fatal(err)
	}
	return tr, e, reqs, id, ctx
}

// keyCounts counts requests by name, of one client ("": every client).
func keyCounts(reqs []RequestTrace, client string) map[string]int {
	got := map[string]int{}
	for _, r := range reqs {
		if client == "" || r.Client == client {
			got[r.Key]++
		}
	}
	return got
}
