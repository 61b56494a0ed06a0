// Smoke tests against real brokers started by cluster.sh (through kafkatest).
// They check that the clusters the safety tests rely on behave as documented
// in README.md, including the transaction.version 2 epoch behaviour of
// franz-go.
package kafka_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/krabka/krabka-coord/tests/kafka/kafkatest"
)

func TestMain(m *testing.M) { kafkatest.Main(m) }

func uniq(prefix string) string { return fmt.Sprintf("%s%d", prefix, time.Now().UnixNano()) }

func admin(t *testing.T, bootstrap string, opts ...kgo.Opt) *kadm.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(strings.Split(bootstrap, ",")...)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return kadm.NewClient(cl)
}

func createTopic(t *testing.T, adm *kadm.Client, name string, rf int16, configs map[string]*string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := adm.CreateTopic(ctx, 1, rf, configs, name)
	if err != nil {
		t.Fatalf("create topic %s: %v", name, err)
	}
	if res.Err != nil && !errors.Is(res.Err, kerr.TopicAlreadyExists) {
		t.Fatalf("create topic %s: %v", name, res.Err)
	}
}

func producer(t *testing.T, bootstrap, txnID string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	base := []kgo.Opt{
		kgo.SeedBrokers(strings.Split(bootstrap, ",")...),
		kgo.TransactionalID(txnID),
		kgo.TransactionTimeout(10 * time.Second),
		kgo.ProducerLinger(0),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
	}
	cl, err := kgo.NewClient(append(base, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

func ctxT(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// commitOne runs one transaction that writes one record and commits it.
func commitOne(ctx context.Context, cl *kgo.Client, topic, val string) error {
	if err := cl.BeginTransaction(); err != nil {
		return err
	}
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Partition: 0, Key: []byte("k"), Value: []byte(val)}).FirstErr(); err != nil {
		_ = cl.EndTransaction(ctx, kgo.TryAbort)
		return fmt.Errorf("produce: %w", err)
	}
	if err := cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	return nil
}

// readCommitted reads partition 0 of topic up to its last stable offset.
func readCommitted(t *testing.T, bootstrap, topic string, opts ...kgo.Opt) []string {
	t.Helper()
	ctx := ctxT(t, 30*time.Second)
	adm := admin(t, bootstrap, opts...)
	// EndTxn returns before the coordinator has written the commit markers,
	// so the last stable offset can lag right after a commit: wait (bounded)
	// until no transaction is open on the partition (LSO == high watermark).
	var end kadm.ListedOffset
	for {
		lso, err := adm.ListCommittedOffsets(ctx, topic)
		if err != nil {
			t.Fatal(err)
		}
		hwm, err := adm.ListEndOffsets(ctx, topic)
		if err != nil {
			t.Fatal(err)
		}
		end, _ = lso.Lookup(topic, 0)
		h, _ := hwm.Lookup(topic, 0)
		if end.Err != nil || h.Err != nil {
			t.Fatal(end.Err, h.Err)
		}
		if end.Offset == h.Offset {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("%s: LSO %d never reached high watermark %d", topic, end.Offset, h.Offset)
		}
		time.Sleep(50 * time.Millisecond)
	}
	cl, err := kgo.NewClient(append([]kgo.Opt{
		kgo.SeedBrokers(strings.Split(bootstrap, ",")...),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.KeepControlRecords(),
	}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var vals []string
	for pos := int64(0); pos < end.Offset; {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("reading %s: only reached offset %d of %d", topic, pos, end.Offset)
		}
		fs.EachRecord(func(r *kgo.Record) {
			pos = r.Offset + 1
			if r.Attrs.IsControl() {
				return
			}
			vals = append(vals, string(r.Value))
		})
	}
	return vals
}

func isFenced(err error) bool {
	return errors.Is(err, kerr.ProducerFenced) || errors.Is(err, kerr.InvalidProducerEpoch)
}

func TestCompactedTopicTxnCommit(t *testing.T) {
	c := kafkatest.Start(t, kafkatest.Options{})
	topic := uniq("smoke-compact-")
	createTopic(t, admin(t, c.Bootstrap), topic, 1, map[string]*string{"cleanup.policy": kadm.StringPtr("compact")})

	ctx := ctxT(t, 60*time.Second)
	cl := producer(t, c.Bootstrap, uniq("smoke-txn-"))
	if _, _, err := cl.ProducerID(ctx); err != nil {
		t.Fatalf("InitProducerId: %v", err)
	}
	if err := commitOne(ctx, cl, topic, "v1"); err != nil {
		t.Fatal(err)
	}
	got := readCommitted(t, c.Bootstrap, topic)
	if len(got) != 1 || got[0] != "v1" {
		t.Fatalf("read committed %q, want [v1]", got)
	}
	cfgs, err := admin(t, c.Bootstrap).DescribeTopicConfigs(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := cfgs.On(topic, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, kv := range cfg.Configs {
		if kv.Key == "cleanup.policy" && kv.MaybeValue() != "compact" {
			t.Fatalf("cleanup.policy=%s", kv.MaybeValue())
		}
	}
}

func TestFencingTV1(t *testing.T) { testFencing(t, 1) }
func TestFencingTV2(t *testing.T) { testFencing(t, 2) }

// A second producer with the same transactional.id fences the first.
func testFencing(t *testing.T, tv int) {
	c := kafkatest.Start(t, kafkatest.Options{TxnVersion: tv})
	topic := uniq("smoke-fence-")
	createTopic(t, admin(t, c.Bootstrap), topic, 1, nil)
	ctx := ctxT(t, 60*time.Second)
	id := uniq("smoke-fence-id-")

	p1 := producer(t, c.Bootstrap, id)
	pid1, e1, err := p1.ProducerID(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := commitOne(ctx, p1, topic, "p1-a"); err != nil {
		t.Fatal(err)
	}
	// p1 opens a second transaction and writes into it.
	if err := p1.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := p1.ProduceSync(ctx, &kgo.Record{Topic: topic, Partition: 0, Value: []byte("p1-b")}).FirstErr(); err != nil {
		t.Fatal(err)
	}

	p2 := producer(t, c.Bootstrap, id)
	pid2, e2, err := p2.ProducerID(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("tv%d: p1 (id %d, epoch %d), p2 (id %d, epoch %d)", tv, pid1, e1, pid2, e2)
	if pid2 == pid1 && e2 <= e1 {
		t.Fatalf("p2 did not get a higher epoch")
	}

	perr := p1.ProduceSync(ctx, &kgo.Record{Topic: topic, Partition: 0, Value: []byte("p1-c")}).FirstErr()
	cerr := p1.EndTransaction(ctx, kgo.TryCommit)
	t.Logf("tv%d: fenced p1: produce err=%v; commit err=%v", tv, perr, cerr)
	if !isFenced(perr) && !isFenced(cerr) {
		t.Fatalf("p1 not fenced: produce err=%v, commit err=%v", perr, cerr)
	}
	if cerr == nil {
		t.Fatalf("fenced p1 committed")
	}
	if err := commitOne(ctx, p2, topic, "p2-a"); err != nil {
		t.Fatalf("p2 commit: %v", err)
	}

	// Second shape: the fenced holder goes straight to EndTxn (no produce
	// after the fence): the broker answers EndTxn itself.
	p3 := producer(t, c.Bootstrap, id)
	if _, _, err := p3.ProducerID(ctx); err != nil { // fences p2
		t.Fatal(err)
	}
	if err := p2.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	perr = p2.ProduceSync(ctx, &kgo.Record{Topic: topic, Partition: 0, Value: []byte("p2-b")}).FirstErr()
	cerr = p2.EndTransaction(ctx, kgo.TryCommit)
	t.Logf("tv%d: p2 fenced before its transaction: produce err=%v; commit err=%v", tv, perr, cerr)
	if !isFenced(perr) && !isFenced(cerr) {
		t.Fatalf("p2 not fenced: produce err=%v, commit err=%v", perr, cerr)
	}

	p4 := producer(t, c.Bootstrap, id)
	if _, _, err := p4.ProducerID(ctx); err != nil { // fences p3, which holds an open transaction
		t.Fatal(err)
	}
	if err := p3.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	cerr = p3.EndTransaction(ctx, kgo.TryCommit) // nothing produced: no request is sent
	t.Logf("tv%d: p3 empty commit after fence: err=%v", tv, cerr)

	got := readCommitted(t, c.Bootstrap, topic)
	if strings.Join(got, ",") != "p1-a,p2-a" {
		t.Fatalf("committed %q, want [p1-a p2-a]", got)
	}
}

// The fenced holder's EndTxn itself is refused by the broker with
// PRODUCER_FENCED (tv1) / INVALID_PRODUCER_EPOCH or PRODUCER_FENCED (tv2)
// when its transaction was already under way before the fence.
func TestFencedEndTxnTV1(t *testing.T) { testFencedEndTxn(t, 1) }
func TestFencedEndTxnTV2(t *testing.T) { testFencedEndTxn(t, 2) }

func testFencedEndTxn(t *testing.T, tv int) {
	c := kafkatest.Start(t, kafkatest.Options{TxnVersion: tv})
	topic := uniq("smoke-fence-end-")
	createTopic(t, admin(t, c.Bootstrap), topic, 1, nil)
	ctx := ctxT(t, 60*time.Second)
	id := uniq("smoke-fence-end-id-")
	p1 := producer(t, c.Bootstrap, id)
	if _, _, err := p1.ProducerID(ctx); err != nil {
		t.Fatal(err)
	}
	if err := p1.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := p1.ProduceSync(ctx, &kgo.Record{Topic: topic, Partition: 0, Value: []byte("x")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	p2 := producer(t, c.Bootstrap, id)
	if _, _, err := p2.ProducerID(ctx); err != nil {
		t.Fatal(err)
	}
	err := p1.EndTransaction(ctx, kgo.TryCommit)
	t.Logf("tv%d: EndTxn(commit) of the fenced holder: %v", tv, err)
	if !isFenced(err) {
		t.Fatalf("fenced EndTxn: got %v, want PRODUCER_FENCED or INVALID_PRODUCER_EPOCH", err)
	}
	if got := readCommitted(t, c.Bootstrap, topic); len(got) != 0 {
		t.Fatalf("fenced transaction visible: %q", got)
	}
}

// On 3 nodes (RF 3, min.insync.replicas=2), SIGKILL of the partition leader
// still lets a transaction with acks=all commit.
func TestThreeNodesKillOne(t *testing.T) {
	c := kafkatest.Start(t, kafkatest.Options{Nodes: 3})
	adm := admin(t, c.Bootstrap)
	topic := uniq("smoke-3n-")
	createTopic(t, adm, topic, 3, map[string]*string{"min.insync.replicas": kadm.StringPtr("2")})

	ctx := ctxT(t, 120*time.Second)
	cl := producer(t, c.Bootstrap, uniq("smoke-3n-id-"), kgo.RequiredAcks(kgo.AllISRAcks()))
	if _, _, err := cl.ProducerID(ctx); err != nil {
		t.Fatal(err)
	}
	if err := commitOne(ctx, cl, topic, "before"); err != nil {
		t.Fatal(err)
	}
	md, err := adm.Metadata(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	p, ok := md.Topics[topic].Partitions[0]
	if !ok || p.Leader < 1 {
		t.Fatalf("no leader for %s-0: %+v", topic, md.Topics[topic])
	}
	victim := int(p.Leader)
	t.Logf("killing node %d (leader of %s-0, replicas %v, isr %v)", victim, topic, p.Replicas, p.ISR)
	c.KillNode(t, victim)
	t.Cleanup(func() { c.StartNode(t, victim) })

	t0 := time.Now()
	if err := commitOne(ctx, cl, topic, "after"); err != nil {
		t.Fatalf("commit with node %d dead: %v", victim, err)
	}
	t.Logf("transaction committed %.1fs after SIGKILL of node %d", time.Since(t0).Seconds(), victim)
	got := readCommitted(t, c.Bootstrap, topic)
	if strings.Join(got, ",") != "before,after" {
		t.Fatalf("committed %q", got)
	}
}

func TestSASLACLs(t *testing.T) {
	c := kafkatest.Start(t, kafkatest.Options{SASL: true})
	topic := uniq("alice.smoke-")
	// The PLAINTEXT listener is ANONYMOUS = super user.
	createTopic(t, admin(t, c.Bootstrap), topic, 1, nil)
	createTopic(t, admin(t, c.Bootstrap), "__coordination_state", 1, map[string]*string{"cleanup.policy": kadm.StringPtr("compact")})
	ctx := ctxT(t, 60*time.Second)
	auth := func(u, p string) kgo.Opt { return kgo.SASL(scram.Auth{User: u, Pass: p}.AsSha256Mechanism()) }

	mal := producer(t, c.SASLBootstrap, "alice.smoke", auth(kafkatest.MalloryUser, kafkatest.MalloryPassword))
	if _, _, err := mal.ProducerID(ctx); !errors.Is(err, kerr.TransactionalIDAuthorizationFailed) {
		t.Fatalf("mallory InitProducerId: got %v, want TRANSACTIONAL_ID_AUTHORIZATION_FAILED", err)
	}
	mal2 := producer(t, c.SASLBootstrap, "mallory.own", auth(kafkatest.MalloryUser, kafkatest.MalloryPassword))
	if _, _, err := mal2.ProducerID(ctx); !errors.Is(err, kerr.TransactionalIDAuthorizationFailed) {
		t.Fatalf("mallory InitProducerId on her own id: got %v, want TRANSACTIONAL_ID_AUTHORIZATION_FAILED", err)
	}
	bad := producer(t, c.SASLBootstrap, "alice.smoke", auth(kafkatest.AliceUser, "wrong"))
	if _, _, err := bad.ProducerID(ctx); err == nil {
		t.Fatal("wrong password accepted")
	}

	alice := producer(t, c.SASLBootstrap, "alice.smoke", auth(kafkatest.AliceUser, kafkatest.AlicePassword))
	if _, _, err := alice.ProducerID(ctx); err != nil {
		t.Fatalf("alice InitProducerId: %v", err)
	}
	if err := commitOne(ctx, alice, topic, "a"); err != nil {
		t.Fatalf("alice on %s: %v", topic, err)
	}
	if err := commitOne(ctx, alice, "__coordination_state", "a"); err != nil {
		t.Fatalf("alice on __coordination_state: %v", err)
	}
	d, err := admin(t, c.SASLBootstrap, auth(kafkatest.AliceUser, kafkatest.AlicePassword)).DescribeTransactions(ctx, "alice.smoke")
	if err != nil {
		t.Fatalf("alice DescribeTransactions: %v", err)
	}
	if tx, ok := d["alice.smoke"]; !ok || tx.Err != nil {
		t.Fatalf("alice DescribeTransactions: %+v", d)
	}
	got := readCommitted(t, c.SASLBootstrap, topic, auth(kafkatest.MalloryUser, kafkatest.MalloryPassword))
	if len(got) != 1 || got[0] != "a" {
		t.Fatalf("mallory read %q", got)
	}
	// mallory may read but not write.
	plain, err := kgo.NewClient(kgo.SeedBrokers(c.SASLBootstrap), auth(kafkatest.MalloryUser, kafkatest.MalloryPassword), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	if err := plain.ProduceSync(ctx, &kgo.Record{Topic: topic, Partition: 0, Value: []byte("m")}).FirstErr(); !errors.Is(err, kerr.TopicAuthorizationFailed) && !errors.Is(err, kerr.ClusterAuthorizationFailed) {
		t.Fatalf("mallory produce: got %v, want an authorization error", err)
	}
}

// capEndTxn4 returns kgo.MaxVersions with EndTxn capped at v4.
func capEndTxn4() kgo.Opt {
	v := kversion.Stable()
	v.SetMaxKeyVersion(kmsg.EndTxn.Int16(), 4)
	return kgo.MaxVersions(v)
}

type epochObs struct {
	clientEpochs   []int16 // ProducerID(ctx) after init and after each commit
	describeEpochs []int16 // DescribeTransactions epoch after each commit
	pids           []int64
}

func observeEpochs(t *testing.T, c *kafkatest.Cluster, commits int, opts ...kgo.Opt) epochObs {
	t.Helper()
	topic := uniq("smoke-epoch-")
	adm := admin(t, c.Bootstrap)
	createTopic(t, adm, topic, 1, nil)
	ctx := ctxT(t, 60*time.Second)
	id := uniq("smoke-epoch-id-")
	cl := producer(t, c.Bootstrap, id, opts...)
	var o epochObs
	pid, e, err := cl.ProducerID(ctx)
	if err != nil {
		t.Fatal(err)
	}
	o.pids, o.clientEpochs = append(o.pids, pid), append(o.clientEpochs, e)
	for i := 0; i < commits; i++ {
		if err := commitOne(ctx, cl, topic, fmt.Sprint(i)); err != nil {
			t.Fatalf("commit %d: %v", i, err)
		}
		pid, e, err := cl.ProducerID(ctx)
		if err != nil {
			t.Fatal(err)
		}
		o.pids, o.clientEpochs = append(o.pids, pid), append(o.clientEpochs, e)
		d, err := adm.DescribeTransactions(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		tx := d[id]
		if tx.Err != nil {
			t.Fatal(tx.Err)
		}
		o.describeEpochs = append(o.describeEpochs, tx.ProducerEpoch)
		if tx.ProducerID != pid {
			t.Fatalf("DescribeTransactions producer id %d, client %d", tx.ProducerID, pid)
		}
	}
	// Records carry the epoch they were written with.
	return o
}

func allEqual(xs []int16) bool {
	for _, x := range xs {
		if x != xs[0] {
			return false
		}
	}
	return true
}

// TestEpochTV2 records what franz-go v1.22.x does on a transaction.version=2
// cluster: uncapped, EndTxn v5 bumps the epoch on every commit; with EndTxn
// capped at v4 the client stays on the classic protocol, one epoch per
// InitProducerId.
func TestEpochTV2(t *testing.T) {
	c := kafkatest.Start(t, kafkatest.Options{})
	const n = 3

	un := observeEpochs(t, c, n)
	t.Logf("tv2 uncapped: client epochs %v, DescribeTransactions epochs %v, pids %v", un.clientEpochs, un.describeEpochs, un.pids)
	for i := 1; i <= n; i++ {
		if un.clientEpochs[i] != un.clientEpochs[i-1]+1 || un.pids[i] != un.pids[0] {
			t.Errorf("uncapped: epoch after commit %d is %d, want %d (+1 per commit)", i, un.clientEpochs[i], un.clientEpochs[i-1]+1)
		}
		if un.describeEpochs[i-1] != un.clientEpochs[i] {
			t.Errorf("uncapped: DescribeTransactions epoch %d after commit %d, client %d", un.describeEpochs[i-1], i, un.clientEpochs[i])
		}
	}

	capd := observeEpochs(t, c, n, capEndTxn4())
	t.Logf("tv2 EndTxn<=v4: client epochs %v, DescribeTransactions epochs %v, pids %v", capd.clientEpochs, capd.describeEpochs, capd.pids)
	if !allEqual(capd.clientEpochs) || !allEqual(capd.describeEpochs) || capd.describeEpochs[0] != capd.clientEpochs[0] {
		t.Errorf("capped: epoch moved: client %v, describe %v", capd.clientEpochs, capd.describeEpochs)
	}

	// For comparison: a tv1 cluster never bumps, capped or not.
	c1 := kafkatest.Start(t, kafkatest.Options{TxnVersion: 1})
	v1 := observeEpochs(t, c1, n)
	t.Logf("tv1 uncapped: client epochs %v, DescribeTransactions epochs %v", v1.clientEpochs, v1.describeEpochs)
	if !allEqual(v1.clientEpochs) || !allEqual(v1.describeEpochs) {
		t.Errorf("tv1: epoch moved: client %v, describe %v", v1.clientEpochs, v1.describeEpochs)
	}
}
