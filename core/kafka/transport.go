// Package kafka is the Kafka Transport of krabka-coord, built on franz-go
// (kgo, kadm). It is the only package of the project that imports franz-go.
//
// What goes on the wire (docs/PROTOCOL.md section 8):
//
//   - registrations: a plain idempotent producer, acks=all, linger 0, the
//     role's partition pinned explicitly;
//   - leases and guarded writes: one transactional producer per
//     acquisition (transactional.id = krabka.role.prefix + role, transaction
//     timeout = the lease duration bounded by the broker's
//     transaction.max.timeout.ms), minted eagerly with InitProducerId before
//     the first transaction; the token is learnt from that producer;
//   - reads: raw read_committed Fetch requests to the partition leader from
//     the log start up to the last stable offset listed just before
//     (ListOffsets with isolation read_committed), filtered of aborted data
//     with kgo.ProcessFetchPartition, so an aborted tail cannot stall a read;
//   - the third-party check: DescribeTransactions.
//
// Transaction protocol version 2 (KIP-890 part 2). Under transaction.version
// 2 a client that sends EndTxn v5+ has the coordinator bump the producer
// epoch at the end of every transaction, which would change the fencing
// token on every renewal and make DescribeTransactions report the epoch of
// the next transaction. Every client of this package caps the EndTxn request
// at version 4 (kgo.MaxVersions). franz-go then stays on the classic
// transaction path (AddPartitionsToTxn, produce v11, EndTxn v4) and the
// coordinator runs the transactions of this id as version-1 transactions:
// the epoch changes only at InitProducerId, the token a leadership holds is
// the token in its leases and Describe's "current" stays truthful. Every
// transaction additionally checks the producer id and epoch stamped on its
// produced records against the token: if they ever differ (the producer had
// to re-initialise itself), the transaction is aborted and the leadership
// ends as fenced, so a changed token can never be used silently.
package kafka

import (
	"context"
	"errors"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/krabka/krabka-coord/core"
	"github.com/krabka/krabka-coord/core/coord"
	"github.com/krabka/krabka-coord/core/memtransport"
)

// MaxEndTxnVersion is the highest EndTxn request version this package sends
// (see the package documentation: it keeps one epoch per InitProducerId
// under transaction.version 2).
const MaxEndTxnVersion = 4

// defaultTxnMaxTimeout is Kafka's default transaction.max.timeout.ms, used
// when the broker's value cannot be read (no DESCRIBE_CONFIGS on the cluster).
const defaultTxnMaxTimeout = 15 * time.Minute

// Versions returns the request versions every client of this package is
// capped at: kgo's stable set with EndTxn capped at MaxEndTxnVersion and
// TxnOffsetCommit at MaxTxnOffsetCommitVersion (pipeline.go).
func Versions() *kversion.Versions {
	v := kversion.Stable()
	v.SetMaxKeyVersion(kmsg.EndTxn.Int16(), MaxEndTxnVersion)
	v.SetMaxKeyVersion(kmsg.TxnOffsetCommit.Int16(), MaxTxnOffsetCommitVersion)
	return v
}

// NewClient returns a coord.Client on the Kafka transport and the system
// clock. It validates cfg and does not connect (the first call does).
//
// bootstrap.servers=mem://NAME instead builds the client on the in-process
// cluster NAME of core/memtransport (docs/TESTING.md), with that cluster's
// clock; options do not apply to it. Errors then also match
// coord.ErrInvalidConfig for a name no live cluster of the process has.
func NewClient(cfg coord.Config, options ...Option) (*coord.Client, error) {
	if name, ok := cfg.MemCluster(); ok {
		if err := cfg.Validate(); err != nil {
			return nil, err
		}
		mt, clock, err := memtransport.Open(name, cfg.Topic)
		if err != nil {
			return nil, err
		}
		return coord.NewClient(cfg, mt, clock)
	}
	t, err := New(cfg, options...)
	if err != nil {
		return nil, err
	}
	var clock core.Clock = core.SystemClock
	if cfg.TestClockOffsetMs != 0 {
		// TEST ONLY (krabka.test.clock.offset.ms): a skewed lease clock.
		clock = offsetClock{core.SystemClock, cfg.TestClockOffsetMs}
	}
	c, err := coord.NewClient(cfg, t, clock)
	if err != nil {
		t.Close()
		return nil, err
	}
	return c, nil
}

// offsetClock is the system clock shifted by a fixed offset: the test-only
// krabka.test.clock.offset.ms hook, to skew one member's lease clock.
type offsetClock struct {
	core.Clock
	offsetMs int64
}

func (c offsetClock) NowMs() int64 { return c.Clock.NowMs() + c.offsetMs }

// AfterFunc implements core.TimerClock: the offset moves every instant
// alike, so a delay is the system clock's.
func (c offsetClock) AfterFunc(d time.Duration, f func()) core.Timer {
	return core.AfterFunc(c.Clock, d, f)
}

// Transport implements coord.Transport on franz-go.
type Transport struct {
	cfg  coord.Config
	opts []kgo.Opt // connection options shared by every kgo client

	admin *kgo.Client // metadata, offsets, fetches, DescribeTransactions, CreateTopics
	adm   *kadm.Client

	regOnce sync.Once
	reg     *kgo.Client // registrar producer
	regErr  error

	mu         sync.Mutex
	closed     bool
	partitions int32
	topicID    [16]byte
	leaders    map[int32]int32
	txnMax     time.Duration
	prods      map[string]minted    // newest producer per transactional id
	follow     *followers           // the long polls of the followed partitions, one per broker (follow.go)
	topicCheck sync.Once            // the settings of an existing topic are checked once
	prepared   map[string]*prepared // producers built ahead of their Mint (Prepare)

	trace func(RequestTrace) // WithRequestTrace (nil: off)

	offsetsForm offsetsForm // how transactions carry offsets (pipeline.go; zero: the library's choice)

	fetchNext map[int32]int64     // the highest next offset a fetch of each partition answered (stableByFetch)
	hwmQueues map[int32]*hwmQueue // StableOffset's shared requests, by partition

	engOnce sync.Once
	eng     *engine // krabka.engine=shared (engine.go); built on first use
	engErr  error
}

// minted is a producer Mint returned (txnProducer, or engProducer on the
// shared engine).
type minted interface{ Close() error }

var _ coord.Transport = (*Transport)(nil)

// Option adjusts a Transport.
type Option func(*options)

type options struct {
	dial    func(ctx context.Context, network, host string) (net.Conn, error)
	trace   func(RequestTrace)
	offsets offsetsForm // tests and benchmarks only (export_test.go)
}

// WithDialer makes every connection through dial (tests route the clients
// through a proxy they can sever).
func WithDialer(dial func(ctx context.Context, network, host string) (net.Conn, error)) Option {
	return func(o *options) { o.dial = dial }
}

// New builds the transport from cfg (validated). No connection is made.
func New(cfg coord.Config, opt ...Option) (*Transport, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if name, ok := cfg.MemCluster(); ok {
		return nil, coord.WrapError(coord.ErrUnsupported, nil, "bootstrap.servers=%s%s is an in-process cluster: this call needs a real Kafka cluster (only kafka.NewClient serves mem://, docs/TESTING.md)", coord.MemScheme, name)
	}
	var o options
	for _, f := range opt {
		f(&o)
	}
	opts, err := connOpts(cfg)
	if err != nil {
		return nil, err
	}
	opts = append(opts, logOpts(cfg)...)
	if o.dial != nil {
		opts = append(opts, kgo.Dialer(o.dial))
	}
	t := &Transport{
		cfg: cfg, opts: opts, trace: o.trace, offsetsForm: o.offsets,
		leaders: map[int32]int32{}, prods: map[string]minted{}, prepared: map[string]*prepared{},
		fetchNext: map[int32]int64{}, hwmQueues: map[int32]*hwmQueue{},
	}
	t.follow = newFollowers(t)
	admin, err := kgo.NewClient(t.clientOpts("admin", "")...)
	if err != nil {
		return nil, coord.WrapError(coord.ErrInvalidConfig, err, "building the admin client")
	}
	t.admin, t.adm = admin, kadm.NewClient(admin)
	return t, nil
}

func connOpts(cfg coord.Config) ([]kgo.Opt, error) {
	rt := cfg.RequestTimeout
	dial := rt
	if dial > 10*time.Second {
		dial = 10 * time.Second
	}
	opts := []kgo.Opt{
		kgo.SeedBrokers(cfg.BootstrapServers...),
		kgo.ClientID(cfg.ClientID),
		kgo.MaxVersions(Versions()),
		kgo.DialTimeout(dial),
		kgo.RetryTimeout(rt),
		kgo.RequestTimeoutOverhead(rt),
		kgo.MetadataMinAge(250 * time.Millisecond),
		kgo.RetryBackoffFn(func(n int) time.Duration {
			d := time.Duration(n) * 50 * time.Millisecond
			if d > 500*time.Millisecond {
				d = 500 * time.Millisecond
			}
			return d
		}),
	}
	switch cfg.SecurityProtocol {
	case "SSL", "SASL_SSL":
		tc, err := tlsConfig(cfg)
		if err != nil {
			return nil, err
		}
		opts = append(opts, kgo.DialTLSConfig(tc))
	default:
		if cfg.SSLCertificateLocation != "" {
			return nil, coord.WrapError(coord.ErrInvalidConfig, nil,
				"ssl.certificate.location is set but security.protocol=%s does not use TLS (SSL or SASL_SSL)", cfg.SecurityProtocol)
		}
	}
	switch cfg.SecurityProtocol {
	case "SASL_PLAINTEXT", "SASL_SSL":
		switch cfg.SASLMechanism {
		case "PLAIN":
			opts = append(opts, kgo.SASL(plain.Auth{User: cfg.SASLUsername, Pass: cfg.SASLPassword}.AsMechanism()))
		case "SCRAM-SHA-256":
			opts = append(opts, kgo.SASL(scram.Auth{User: cfg.SASLUsername, Pass: cfg.SASLPassword}.AsSha256Mechanism()))
		case "SCRAM-SHA-512":
			opts = append(opts, kgo.SASL(scram.Auth{User: cfg.SASLUsername, Pass: cfg.SASLPassword}.AsSha512Mechanism()))
		default:
			return nil, coord.WrapError(coord.ErrInvalidConfig, nil, "sasl.mechanism=%q", cfg.SASLMechanism)
		}
	}
	return opts, nil
}

// bound returns ctx limited to request.timeout.ms when it has no earlier
// deadline: no round trip waits for ever.
func (t *Transport) bound(ctx context.Context) (context.Context, context.CancelFunc) {
	if dl, ok := ctx.Deadline(); ok && time.Until(dl) <= t.cfg.RequestTimeout {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, t.cfg.RequestTimeout)
}

func (t *Transport) checkOpen() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return coord.WrapError(coord.ErrClosed, nil, "transport closed")
	}
	return nil
}

// Partitions implements coord.Transport.
func (t *Transport) Partitions(ctx context.Context) (int32, error) {
	if err := t.checkOpen(); err != nil {
		return 0, err
	}
	ctx, cancel := t.bound(ctx)
	defer cancel()
	created := false
	for {
		n, err := t.loadMetadata(ctx)
		if err == nil {
			if !created {
				t.checkTopicOnce()
			}
			return n, nil
		}
		if !errors.Is(err, kerr.UnknownTopicOrPartition) || created {
			if created && errors.Is(err, kerr.UnknownTopicOrPartition) {
				// Just created: metadata may lag a moment.
				if serr := sleepCtx(ctx, 100*time.Millisecond); serr != nil {
					return 0, t.classify(serr, "waiting for the created topic "+t.cfg.Topic, "")
				}
				continue
			}
			return 0, err
		}
		if err := t.createTopic(ctx); err != nil {
			return 0, err
		}
		created = true
	}
}

// loadMetadata reads the topic's partition count, id and leaders.
func (t *Transport) loadMetadata(ctx context.Context) (int32, error) {
	md, err := t.adm.Metadata(ctx, t.cfg.Topic)
	if err != nil {
		return 0, t.classify(err, "metadata of "+t.cfg.Topic, topicACL(t.cfg.Topic, "DESCRIBE"))
	}
	td, ok := md.Topics[t.cfg.Topic]
	if !ok {
		return 0, coord.WrapError(coord.ErrTransport, kerr.UnknownTopicOrPartition, "metadata lists no topic %s", t.cfg.Topic)
	}
	if td.Err != nil {
		if errors.Is(td.Err, kerr.UnknownTopicOrPartition) {
			return 0, td.Err
		}
		return 0, t.classify(td.Err, "metadata of "+t.cfg.Topic, topicACL(t.cfg.Topic, "DESCRIBE"))
	}
	n := int32(len(td.Partitions))
	if n == 0 {
		return 0, kerr.UnknownTopicOrPartition
	}
	leaders := map[int32]int32{}
	for _, p := range td.Partitions {
		leaders[p.Partition] = p.Leader
	}
	t.mu.Lock()
	t.partitions, t.topicID, t.leaders = n, td.ID, leaders
	t.mu.Unlock()
	return n, nil
}

func (t *Transport) meta(ctx context.Context, p int32) (leader int32, id [16]byte, err error) {
	t.mu.Lock()
	n := t.partitions
	leader, ok := t.leaders[p]
	id = t.topicID
	t.mu.Unlock()
	if n == 0 || !ok || leader < 0 {
		if _, err := t.loadMetadata(ctx); err != nil {
			return 0, id, err
		}
		t.mu.Lock()
		leader, ok = t.leaders[p]
		id = t.topicID
		t.mu.Unlock()
		if !ok {
			return 0, id, coord.WrapError(coord.ErrTransport, nil, "partition %d of %s does not exist", p, t.cfg.Topic)
		}
		if leader < 0 {
			return 0, id, coord.WrapError(coord.ErrTransport, kerr.LeaderNotAvailable, "partition %d of %s", p, t.cfg.Topic)
		}
	}
	return leader, id, nil
}

func (t *Transport) forgetLeaders() {
	t.mu.Lock()
	t.leaders = map[int32]int32{}
	t.mu.Unlock()
}

func (t *Transport) registrar() (*kgo.Client, error) {
	t.regOnce.Do(func() {
		opts := append(t.clientOpts("registrar", ""),
			kgo.RecordPartitioner(kgo.ManualPartitioner()),
			kgo.RequiredAcks(kgo.AllISRAcks()),
			kgo.ProducerLinger(0),
			kgo.RecordDeliveryTimeout(t.cfg.RequestTimeout),
		)
		t.reg, t.regErr = kgo.NewClient(opts...)
	})
	return t.reg, t.regErr
}

// Append implements coord.Transport (the registrar producer).
func (t *Transport) Append(ctx context.Context, partition int32, key, value []byte, headers []coord.Header) (int64, error) {
	if err := t.checkOpen(); err != nil {
		return 0, err
	}
	ctx, cancel := t.bound(ctx)
	defer cancel()
	reg, err := t.registrar()
	if err != nil {
		return 0, coord.WrapError(coord.ErrInvalidConfig, err, "building the registrar producer")
	}
	r := &kgo.Record{Topic: t.cfg.Topic, Partition: partition, Key: key, Value: value}
	for _, h := range headers {
		r.Headers = append(r.Headers, kgo.RecordHeader{Key: h.Key, Value: h.Value})
	}
	res, err := await(ctx, func() (kgo.ProduceResults, error) {
		rs := reg.ProduceSync(ctx, r)
		return rs, rs.FirstErr()
	})
	if err != nil {
		// A fence on the registration path says nothing about the role.
		return 0, t.classify(err, "registration in "+t.cfg.Topic, topicACL(t.cfg.Topic, "WRITE")+" (and IDEMPOTENT_WRITE on the Cluster or WRITE on a topic)")
	}
	return res[0].Record.Offset, nil
}

// brokerTxnMax returns the broker's transaction.max.timeout.ms (read once)
// and whether it was read; Kafka's default when the principal may not
// describe broker configs.
func (t *Transport) brokerTxnMax(ctx context.Context) (time.Duration, bool) {
	t.mu.Lock()
	m := t.txnMax
	t.mu.Unlock()
	if m > 0 {
		return m, true
	}
	known := false
	m = defaultTxnMaxTimeout
	// DescribeConfigs without a broker id answers only the cluster-wide
	// dynamic settings; the static transaction.max.timeout.ms needs one.
	var ids []int32
	if md, err := t.adm.BrokerMetadata(ctx); err == nil {
		for _, b := range md.Brokers {
			ids = append(ids, b.NodeID)
			break
		}
	}
	rcs, err := t.adm.DescribeBrokerConfigs(ctx, ids...)
	if err == nil {
		for _, rc := range rcs {
			if rc.Err != nil {
				continue
			}
			for _, c := range rc.Configs {
				if c.Key == "transaction.max.timeout.ms" && c.Value != nil {
					if ms, perr := strconv.ParseInt(*c.Value, 10, 64); perr == nil && ms > 0 {
						m, known = time.Duration(ms)*time.Millisecond, true
					}
				}
			}
		}
	}
	if known {
		t.mu.Lock()
		t.txnMax = m
		t.mu.Unlock()
	}
	return m, known
}

// Mint implements coord.Transport: a new kgo client for every acquisition,
// initialised eagerly (InitProducerId) before any transaction; the previous
// producer of the same transactional id is closed.
func (t *Transport) Mint(ctx context.Context, txnID string, txnTimeout time.Duration) (coord.TxnProducer, error) {
	if err := t.checkOpen(); err != nil {
		return nil, err
	}
	ctx, cancel := t.bound(ctx)
	defer cancel()
	// The transaction timeout is krabka.txn.timeout.ms capped at the lease
	// (docs/PROTOCOL.md 12.2): a broker that caps it lower can never run
	// this configuration (issue 16.5). When the cap cannot be read, the
	// broker answers INVALID_TRANSACTION_TIMEOUT itself.
	if m, known := t.brokerTxnMax(ctx); known && txnTimeout > m {
		return nil, coord.WrapError(coord.ErrInvalidConfig, nil,
			"the transaction timeout %d ms (krabka.txn.timeout.ms, capped at krabka.lease.ms) exceeds the broker's transaction.max.timeout.ms=%d: lower krabka.txn.timeout.ms or raise the broker's limit",
			txnTimeout.Milliseconds(), m.Milliseconds())
	}
	if txnTimeout < time.Millisecond {
		txnTimeout = time.Millisecond
	}
	if t.shared() {
		p, err := t.engineMint(ctx, txnID, txnTimeout)
		if err != nil {
			return nil, err
		}
		t.log().Info("krabka: minted a producer epoch (InitProducerId returned)", "transactional_id", txnID, "token", p.token.String(), "at_ms", time.Now().UnixMilli())
		if err := t.replaceProducer(txnID, p); err != nil {
			return nil, err
		}
		return p, nil
	}
	cl := t.takePrepared(txnID, txnTimeout)
	if cl == nil {
		var err error
		if cl, err = kgo.NewClient(t.txnOpts(txnID, txnTimeout)...); err != nil {
			return nil, coord.WrapError(coord.ErrInvalidConfig, err, "building the transactional producer")
		}
	}
	id, epoch, err := cl.ProducerID(ctx)
	if err != nil {
		go cl.Close()
		return nil, t.classifyTxn(err, "InitProducerId for transactional.id "+strconv.Quote(txnID), txnACL(txnID, "WRITE"), true)
	}
	tok, err := core.NewFencingToken(id, epoch)
	if err != nil {
		// franz-go answers (-1, -1) without an error when the brokers do
		// not offer InitProducerId at all: a service without transactions.
		go cl.Close()
		return nil, coord.WrapError(coord.ErrUnsupported, err,
			"InitProducerId for %q gave no producer id: the cluster does not support transactions (InitProducerId), which taking a role needs (%s)", txnID, t.brokerVersion(ctx))
	}
	t.log().Info("krabka: minted a producer epoch (InitProducerId returned)", "transactional_id", txnID, "token", tok.String(), "at_ms", time.Now().UnixMilli())
	p := &txnProducer{roleTxn: newRoleTxn(t, txnID, tok), cl: cl}
	if err := t.replaceProducer(txnID, p); err != nil {
		return nil, err
	}
	return p, nil
}

// replaceProducer makes p the producer of txnID and closes the previous
// one; on a closed transport it closes p and fails with ErrClosed.
func (t *Transport) replaceProducer(txnID string, p minted) error {
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		p.Close()
		return coord.WrapError(coord.ErrClosed, nil, "transport closed")
	}
	prev := t.prods[txnID]
	t.prods[txnID] = p
	t.mu.Unlock()
	if prev != nil {
		prev.Close()
	}
	return nil
}

// txnOpts are the options of the transactional producer of txnID.
func (t *Transport) txnOpts(txnID string, txnTimeout time.Duration) []kgo.Opt {
	return append(t.clientOpts("producer", txnID),
		kgo.TransactionalID(txnID),
		kgo.TransactionTimeout(txnTimeout),
		kgo.RecordPartitioner(messagePartitioner{}),
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.ProducerLinger(0),
		kgo.RecordDeliveryTimeout(t.cfg.RequestTimeout),
		// A transaction that begins right after the previous one committed
		// meets CONCURRENT_TRANSACTIONS until the commit markers are written
		// (about a millisecond on a healthy cluster). franz-go's default 20 ms
		// backoff made back-to-back guarded writes cost ~25 ms each; franz-go
		// still raises the backoff itself if the state lasts (200 ms after 1 s).
		kgo.ConcurrentTransactionsBackoff(txnBackoff),
		kgo.MaxVersions(producerVersions()), // TxnOffsetCommit up to 5 (pipeline.go)
	)
}

// Prepare implements coord.Preparer: it builds the transactional producer
// of txnID ahead of the Mint that will use it and makes it ready, so that a
// standby that wins spends nothing but InitProducerId and its lease
// transaction: the broker's transaction.max.timeout.ms is read (Mint checks
// the lease against it), franz-go's own cache learns the transaction
// coordinator (a DescribeTransactions through the producer: franz-go
// caches the coordinator it looked up for it, which a raw FindCoordinator
// does not, and opens the coordinator's connection), and the producer's
// produce connections are opened. The producer holds no epoch until Mint
// initialises it. Never blocks.
//
// On the shared engine (krabka.engine=shared) nothing is built per role:
// Prepare only reads transaction.max.timeout.ms once and has the control
// plane look up (and cache) the transaction coordinator of txnID, in the
// background, and opens the engine's produce connections once.
func (t *Transport) Prepare(txnID string, txnTimeout time.Duration) {
	if t.shared() {
		t.enginePrepare(txnID)
		return
	}
	t.mu.Lock()
	if t.closed || t.prepared[txnID] != nil {
		t.mu.Unlock()
		return
	}
	m := t.txnMax
	t.mu.Unlock()
	if m > 0 && txnTimeout > m {
		return // Mint refuses it anyway
	}
	if txnTimeout < time.Millisecond {
		txnTimeout = time.Millisecond
	}
	cl, err := kgo.NewClient(t.txnOpts(txnID, txnTimeout)...)
	if err != nil {
		return
	}
	t.mu.Lock()
	if t.closed || t.prepared[txnID] != nil {
		t.mu.Unlock()
		cl.Close()
		return
	}
	pr := &prepared{cl: cl, timeout: txnTimeout, ready: make(chan struct{})}
	t.prepared[txnID] = pr
	t.mu.Unlock()
	go func() {
		defer close(pr.ready)
		ctx, cancel := context.WithTimeout(context.Background(), t.cfg.RequestTimeout)
		defer cancel()
		var wg sync.WaitGroup
		wg.Add(2)
		go func() {
			defer wg.Done()
			t.brokerTxnMax(ctx)
		}()
		go func() {
			defer wg.Done()
			_ = cl.EnsureProduceConnectionIsOpen(ctx, -1)
		}()
		// Read-only; its answer does not matter (a principal without
		// DESCRIBE on the id is refused, after the coordinator lookup).
		req := kmsg.NewPtrDescribeTransactionsRequest()
		req.TransactionalIDs = []string{txnID}
		_, _ = req.RequestWith(ctx, cl)
		wg.Wait()
	}()
}

// Warm implements coord.Warmer: Prepare's work that is the same for every
// role, once (on the engine, the broker's transaction.max.timeout.ms and
// the connections of every plane to every broker; with the per-role
// client, the broker's setting), in the background. AcquireEach
// calls it instead of preparing each of its roles: a role's transaction
// coordinator is then looked up by the mint of its win.
func (t *Transport) Warm() {
	if t.checkOpen() != nil {
		return
	}
	if t.shared() {
		if e, err := t.engine(); err == nil {
			go e.warm()
		}
		return
	}
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), t.cfg.RequestTimeout)
		defer cancel()
		t.brokerTxnMax(ctx)
	}()
}

// Unprepare implements coord.Preparer: it closes the producer Prepare
// built if no Mint took it.
func (t *Transport) Unprepare(txnID string) {
	t.mu.Lock()
	p := t.prepared[txnID]
	delete(t.prepared, txnID)
	t.mu.Unlock()
	if p != nil {
		go p.cl.Close()
	}
}

// takePrepared returns the producer Prepare built for txnID (nil: none, or
// built with another transaction timeout).
func (t *Transport) takePrepared(txnID string, txnTimeout time.Duration) *kgo.Client {
	t.mu.Lock()
	p := t.prepared[txnID]
	delete(t.prepared, txnID)
	t.mu.Unlock()
	if p == nil {
		return nil
	}
	if p.timeout != txnTimeout {
		go p.cl.Close()
		return nil
	}
	return p.cl
}

// prepared is a transactional producer built ahead of its Mint.
type prepared struct {
	cl      *kgo.Client
	timeout time.Duration
	ready   chan struct{} // closed when Prepare's look-ups and connections are done
}

// txnBackoff is the retry interval of a transactional request answered
// CONCURRENT_TRANSACTIONS (see Mint). The markers of the previous commit
// usually land within a millisecond of its EndTxn answer, and every
// back-to-back transaction (a group commit under load is always one) meets
// this wait once: 500 µs instead of 2 ms took about a millisecond off each
// transaction (docs/PERFORMANCE.md).
const txnBackoff = 500 * time.Microsecond

// brokerVersion names the Apache Kafka release the cluster's ApiVersions
// answer looks like (franz-go's guess), for UNSUPPORTED messages: the
// protocol needs DescribeTransactions (Kafka 3.0+) and transactions.
func (t *Transport) brokerVersion(ctx context.Context) string {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	req := kmsg.NewPtrApiVersionsRequest()
	req.ClientSoftwareName, req.ClientSoftwareVersion = "krabka-coord", "1"
	resp, err := req.RequestWith(ctx, t.admin)
	if err != nil || resp.ErrorCode != 0 {
		return "the broker is older than Apache Kafka 3.0 (the first release with DescribeTransactions)"
	}
	return "the broker answers like Apache Kafka " + kversion.FromApiVersionsResponse(resp).VersionGuess() +
		"; the protocol needs Apache Kafka 3.0 or later (DescribeTransactions)"
}

// CurrentToken implements coord.Transport (DescribeTransactions).
func (t *Transport) CurrentToken(ctx context.Context, txnID string) (core.FencingToken, error) {
	if err := t.checkOpen(); err != nil {
		return core.NoEpoch, err
	}
	ctx, cancel := t.bound(ctx)
	defer cancel()
	// A cluster that just started (or a coordinator that moves) answers
	// COORDINATOR_NOT_AVAILABLE / LOAD_IN_PROGRESS / NOT_COORDINATOR for a
	// while: those pass, so they are retried until ctx ends.
	dt, err := withRetry(ctx, func() (kadm.DescribedTransaction, error) {
		dts, err := t.adm.DescribeTransactions(ctx, txnID)
		if err != nil {
			return kadm.DescribedTransaction{}, err
		}
		dt, ok := dts[txnID]
		if !ok {
			return dt, coord.WrapError(coord.ErrTransport, nil, "DescribeTransactions answered nothing for %q", txnID)
		}
		return dt, dt.Err
	})
	if err != nil {
		if errors.Is(err, kerr.TransactionalIDNotFound) {
			return core.NoEpoch, nil
		}
		cerr := t.classify(err, "DescribeTransactions of "+strconv.Quote(txnID), txnACL(txnID, "DESCRIBE"))
		if errors.Is(cerr, coord.ErrUnsupported) {
			cerr = coord.WrapError(coord.ErrUnsupported, cerr, "%s", t.brokerVersion(ctx))
		}
		return core.NoEpoch, cerr
	}
	if dt.ProducerID < 0 || dt.ProducerEpoch < 0 {
		return core.NoEpoch, nil
	}
	return core.FencingToken{ProducerID: dt.ProducerID, ProducerEpoch: dt.ProducerEpoch}, nil
}

// Close implements coord.Transport.
func (t *Transport) Close() error {
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return nil
	}
	t.closed = true
	prods := t.prods
	t.prods = map[string]minted{}
	var idle []*kgo.Client // prepared producers
	for _, p := range t.prepared {
		idle = append(idle, p.cl)
	}
	t.prepared = map[string]*prepared{}
	t.mu.Unlock()
	t.follow.close()
	for _, p := range prods {
		p.Close()
	}
	t.engOnce.Do(func() {}) // waits for an engine being built; none is built after this
	if t.eng != nil {
		t.eng.close()
	}
	for _, cl := range idle {
		cl.Close()
	}
	if t.reg != nil {
		t.reg.Close()
	}
	t.admin.Close()
	return nil
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-tm.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// await runs fn in a goroutine and returns when it does or when ctx ends, so
// a kgo call that outlives its context never holds the caller.
func await[T any](ctx context.Context, fn func() (T, error)) (T, error) {
	type result struct {
		v   T
		err error
	}
	ch := make(chan result, 1)
	go func() {
		v, err := fn()
		ch <- result{v, err}
	}()
	select {
	case r := <-ch:
		return r.v, r.err
	case <-ctx.Done():
		var zero T
		return zero, ctx.Err()
	}
}

// withRetry repeats fn while it fails with a retriable broker error (a
// leader moving, a topic just created), until ctx ends.
func withRetry[T any](ctx context.Context, fn func() (T, error)) (T, error) {
	for {
		v, err := fn()
		if err == nil || !(kerr.IsRetriable(err) || coordinatorMoving(err)) {
			return v, err
		}
		if sleepCtx(ctx, 50*time.Millisecond) != nil {
			return v, err
		}
	}
}

// coordinatorMoving reports the transaction coordinator errors that pass by
// themselves, also inside kadm's shard errors (which unwrap to them).
func coordinatorMoving(err error) bool {
	return errors.Is(err, kerr.CoordinatorNotAvailable) || errors.Is(err, kerr.CoordinatorLoadInProgress) ||
		errors.Is(err, kerr.NotCoordinator)
}
