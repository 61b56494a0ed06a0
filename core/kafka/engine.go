package kafka

import (
	"context"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"hash/fnv"
	"math/rand/v2"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/krabka/krabka-coord/core"
	"github.com/krabka/krabka-coord/core/coord"
)

// The shared transactional engine (krabka.engine=shared, issue 35).
//
// With the per-role client (krabka.engine=client) every acquisition builds
// a franz-go transactional producer of its own: its goroutines, metadata,
// buffers and sockets. The engine instead carries the transactions of every
// role of a Transport on a few franz-go clients that are never
// transactional themselves: franz-go stays the protocol layer (its broker
// connections, authentication, coordinator look-up and kmsg requests) and
// the engine speaks the transactional protocol itself:
//
//   - InitProducerId, AddPartitionsToTxn (version 3, the client form),
//     AddOffsetsToTxn and EndTxn (capped at version 4) go to the transaction
//     coordinator through franz-go's Client.Request, which finds and caches
//     the coordinator of each transactional id; TxnOffsetCommit goes to the
//     group coordinator the same way;
//   - Produce requests carry record batches the engine encodes itself
//     (kmsg.RecordBatch and kmsg.Record, CRC-32C), transactional, with the
//     role's producer id and epoch and an idempotent sequence per partition
//     per epoch, sent to the partition leader through Client.Broker, capped
//     at Produce version 11.
//
// Every transaction is a transaction version 1 transaction on clusters of
// either version: Produce v12+ and EndTxn v5+ are the KIP-890 part 2 forms
// (the partition joins the transaction implicitly, and the coordinator bumps
// the epoch at every EndTxn), which would change the fencing token on every
// renewal; a coordinator runs a transaction whose EndTxn is below version 5
// as a version-1 transaction (see the package documentation).
//
// Planes: the control plane (engineControlClients clients, a role picked by
// its transactional id) carries every InitProducerId, every recovery and
// every transaction that writes only the coordination topic (leases); the
// data plane (engineDataClients clients, a role picked
// by its transactional id) carries the transactions that write other topics
// (guarded writes, pipelines). A broker answers the requests of one
// connection in order, so a slow command partition never delays a renewal.
//
// Per role the engine keeps a few words of state (engProducer): the token,
// the sequences of the partitions written under it, and the transaction
// flags; no goroutine and no socket.

// engineDataClients is the number of data-plane clients of an engine (each
// with one produce connection and one request connection per broker it
// talks to).
const engineDataClients = 2

// engineControlClients is the number of control-plane clients of an engine:
// a role's coordinator requests go through one of them (picked by its
// transactional id), so that requests of different roles are in flight on
// several connections at once. A broker answers the requests of one
// connection one after the other, so a single connection caps a process's
// renewals, mints and resignations at one coordinator append at a time.
// Seen with one control client per process: 1,024 shards over 4 members on
// one broker had renewals time out past their lease while 256 shards moved.
// With four the same bench was not better (docs/GROUPS.md: the cause of
// those timeouts is not found); 256 shards run without a failed renewal.
const engineControlClients = 4

// maxEngineProduceVersion is the highest Produce version the engine sends
// (version 12 is the transaction version 2 form, see above).
const maxEngineProduceVersion = 11

// maxClientAddPartitionsVersion is the highest AddPartitionsToTxn version a
// client sends (4+ are broker to broker and need CLUSTER_ACTION).
const maxClientAddPartitionsVersion = 3

// batchTransactional is the transactional bit of a record batch's
// attributes (no compression, create time).
const batchTransactional = 0x10

var crc32c = crc32.MakeTable(crc32.Castagnoli)

// engine is the shared transactional engine of one Transport.
type engine struct {
	t    *Transport
	ctls []*kgo.Client // control plane (ctlClient)
	data []*kgo.Client // data plane (dataClient)

	warmOnce sync.Once // enginePrepare's connections, opened once

	lookups coordLookups // the coordinator look-ups of mints nobody prepared

	mu     sync.Mutex
	topics map[string][]int32 // partition leaders by topic (index: partition)
}

// engineIdleTimeout is how long an engine connection may stay idle before
// franz-go closes it: long, since an engine has a few connections per
// broker whatever the number of roles, and a standby that wins after a long
// wait must not dial at that moment (brokers close idle connections after
// connections.max.idle.ms, 10 minutes by default).
const engineIdleTimeout = 9 * time.Minute

// engineVersions are the request versions of the engine's clients.
func engineVersions() *kgo.Opt {
	v := producerVersions() // TxnOffsetCommit up to 5: the implicit offsets form (pipeline.go)
	v.SetMaxKeyVersion(kmsg.Produce.Int16(), maxEngineProduceVersion)
	v.SetMaxKeyVersion(kmsg.AddPartitionsToTxn.Int16(), maxClientAddPartitionsVersion)
	o := kgo.MaxVersions(v)
	return &o
}

// newEngine builds the engine's clients (no connection is made).
func newEngine(t *Transport) (*engine, error) {
	mv := engineVersions()
	opts := func(name string) []kgo.Opt {
		return append(t.tracedOpts(traceHook{client: name, engine: true}), *mv, kgo.RequiredAcks(kgo.AllISRAcks()), kgo.ConnIdleTimeout(engineIdleTimeout))
	}
	e := &engine{t: t, topics: map[string][]int32{}}
	for i := 0; i < engineControlClients+engineDataClients; i++ {
		name, plane := "engine-control", &e.ctls
		if i >= engineControlClients {
			name, plane = "engine-data", &e.data
		}
		cl, err := kgo.NewClient(opts(name)...)
		if err != nil {
			e.close()
			return nil, err
		}
		*plane = append(*plane, cl)
	}
	return e, nil
}

func (e *engine) close() {
	for _, cl := range e.ctls {
		cl.Close()
	}
	for _, cl := range e.data {
		cl.Close()
	}
}

// engine returns the Transport's engine, building it on first use.
func (t *Transport) engine() (*engine, error) {
	t.engOnce.Do(func() {
		if t.checkOpen() != nil {
			return
		}
		t.eng, t.engErr = newEngine(t)
		if t.engErr != nil {
			t.engErr = coord.WrapError(coord.ErrInvalidConfig, t.engErr, "building the transactional engine")
		}
	})
	if t.eng == nil && t.engErr == nil {
		return nil, coord.WrapError(coord.ErrClosed, nil, "transport closed") // Close ran first
	}
	return t.eng, t.engErr
}

// enginePrepare is Prepare on the engine, in the background: once per
// engine, the broker's transaction.max.timeout.ms and the produce
// connections of every plane to every broker; per role, the transaction
// coordinator of txnID, which the control plane and the role's data-plane
// client each look up and cache (FindCoordinator, through a read-only
// DescribeTransactions), so that the Mint of a standby that wins, its
// lease and its first guarded write open no connection and look nothing up.
// The channel returned is closed when that work is done.
func (t *Transport) enginePrepare(txnID string) <-chan struct{} {
	done := make(chan struct{})
	if t.checkOpen() != nil {
		close(done)
		return done
	}
	e, err := t.engine()
	if err != nil {
		close(done)
		return done
	}
	go func() {
		defer close(done)
		ctx, cancel := context.WithTimeout(context.Background(), t.cfg.RequestTimeout)
		defer cancel()
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			e.warm()
		}()
		for _, cl := range []*kgo.Client{e.ctlClient(txnID), e.dataClient(txnID)} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				// Read-only; its answer does not matter.
				req := kmsg.NewPtrDescribeTransactionsRequest()
				req.TransactionalIDs = []string{txnID}
				if _, err := req.RequestWith(ctx, cl); err == nil && cl == e.ctlClient(txnID) {
					e.knownCoordinator(txnID)
				}
			}()
		}
		wg.Wait()
	}()
	return done
}

// warm is the part of a prepare that is the same for every role, once per
// engine (a call while the first one runs waits for it; later ones return
// at once): the broker's transaction.max.timeout.ms and the connections
// of every plane to every broker (produce, and requests).
func (e *engine) warm() {
	e.warmOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), e.t.cfg.RequestTimeout)
		defer cancel()
		e.t.brokerTxnMax(ctx)
		var wg sync.WaitGroup
		for _, cl := range append(slices.Clone(e.ctls), e.data...) {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_ = cl.EnsureProduceConnectionIsOpen(ctx, -1)
				// And the request connection (coordinator requests),
				// which an ApiVersions request opens.
				for _, b := range cl.DiscoveredBrokers() {
					_, _ = b.Request(ctx, kmsg.NewPtrApiVersionsRequest())
				}
			}()
		}
		wg.Wait()
	})
}

// shared reports whether the transport runs roles on the engine.
func (t *Transport) shared() bool { return t.cfg.Engine != "client" }

// plane names the plane of cl ("engine-control" or "engine-data", as
// RequestTrace does).
func (e *engine) plane(cl *kgo.Client) string {
	if slices.Contains(e.ctls, cl) {
		return "engine-control"
	}
	return "engine-data"
}

// ctlClient is the control-plane client of txnID.
func (e *engine) ctlClient(txnID string) *kgo.Client { return pick(e.ctls, txnID) }

// dataClient is the data-plane client of txnID.
func (e *engine) dataClient(txnID string) *kgo.Client { return pick(e.data, txnID) }

// pick is the client of clients that txnID hashes to.
func pick(clients []*kgo.Client, txnID string) *kgo.Client {
	h := fnv.New32a()
	h.Write([]byte(txnID))
	return clients[int(h.Sum32()%uint32(len(clients)))]
}

// leaders returns the partition leaders of topic, from the engine's cache
// unless refresh is set. An unknown topic is retried briefly (it may just
// have been created), then reported as ErrUnknownTopicOrPartition.
func (e *engine) leaders(ctx context.Context, topic string, refresh bool) ([]int32, error) {
	e.mu.Lock()
	ls, ok := e.topics[topic]
	e.mu.Unlock()
	if ok && !refresh {
		return ls, nil
	}
	if !ok && topic == e.t.cfg.Topic {
		// The coordination topic: the transport's own metadata (Partitions
		// read it before any mint) saves the round trip on a new holder's
		// first lease.
		if ls := e.t.knownLeaders(); ls != nil {
			e.mu.Lock()
			e.topics[topic] = ls
			e.mu.Unlock()
			return ls, nil
		}
	}
	for try := 0; ; try++ {
		req := kmsg.NewPtrMetadataRequest()
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(topic)
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, e.ctls[0])
		if err == nil && len(resp.Topics) != 1 {
			err = kerr.UnknownTopicOrPartition
		}
		if err == nil {
			err = kerr.ErrorForCode(resp.Topics[0].ErrorCode)
		}
		if err == nil {
			ps := resp.Topics[0].Partitions
			ls = make([]int32, len(ps))
			for i := range ls {
				ls[i] = -1
			}
			for _, p := range ps {
				if p.Partition >= 0 && int(p.Partition) < len(ls) {
					ls[p.Partition] = p.Leader
				}
			}
			if len(ls) == 0 {
				err = kerr.UnknownTopicOrPartition
			}
		}
		if err == nil {
			e.mu.Lock()
			e.topics[topic] = ls
			e.mu.Unlock()
			return ls, nil
		}
		if !kerr.IsRetriable(err) || try >= 4 {
			return nil, err
		}
		if serr := sleepCtx(ctx, time.Duration(try+1)*100*time.Millisecond); serr != nil {
			return nil, err
		}
	}
}

// knownLeaders returns the partition leaders of the coordination topic
// from the transport's metadata (nil: not read yet, or a leader unknown).
func (t *Transport) knownLeaders() []int32 {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.partitions <= 0 || len(t.leaders) != int(t.partitions) {
		return nil
	}
	ls := make([]int32, t.partitions)
	for p := range ls {
		l, ok := t.leaders[int32(p)]
		if !ok || l < 0 {
			return nil
		}
		ls[p] = l
	}
	return ls
}

// engineMint is Mint on the engine: InitProducerId for txnID on the
// control plane (retried while the coordinator answers
// CONCURRENT_TRANSACTIONS or is loading or moving), and a producer holding
// nothing but its token.
func (t *Transport) engineMint(ctx context.Context, txnID string, txnTimeout time.Duration) (*engProducer, error) {
	e, err := t.engine()
	if err != nil {
		return nil, err
	}
	looked := e.lookup(ctx, txnID)
	id, epoch, err := e.initProducerID(ctx, txnID, txnTimeout, tokenIDs{-1, -1})
	looked(err == nil)
	if err != nil {
		cerr := t.classifyTxn(err, "InitProducerId for transactional.id "+strconv.Quote(txnID), txnACL(txnID, "WRITE"), true)
		if errors.Is(cerr, coord.ErrUnsupported) {
			cerr = coord.WrapError(coord.ErrUnsupported, cerr, "the cluster does not support transactions (InitProducerId), which taking a role needs (%s)", t.brokerVersion(ctx))
		}
		return nil, cerr
	}
	tok, err := core.NewFencingToken(id, epoch)
	if err != nil {
		return nil, coord.WrapError(coord.ErrTransport, err, "InitProducerId for %q answered %d:%d", txnID, id, epoch)
	}
	return &engProducer{roleTxn: newRoleTxn(t, txnID, tok), e: e, timeout: txnTimeout}, nil
}

// coordLookups batches the transaction-coordinator look-ups of mints whose
// role nobody prepared (AcquireEach prepares no role: a standby taking
// 10,000 roles over would otherwise send one FindCoordinator per role, on
// the control connections that carry the mints and lease transactions of
// those same wins). A mint whose coordinator is unknown while no other such
// mint is in flight looks it up itself (InitProducerId's own
// FindCoordinator: no extra round trip for a single role); the ones that
// start while one is in flight share the next look-up, one
// DescribeTransactions of all their ids per control client, which franz-go
// resolves with one FindCoordinator for all of them and caches.
type coordLookups struct {
	mu      sync.Mutex
	known   map[string]struct{} // ids whose coordinator the control plane looked up (a mint, a prepare, a batch); grows with the ids minted, as franz-go's own cache of coordinators does
	alone   int                 // mints of an unknown coordinator in flight
	running bool                // runLookups is sending the batches
	next    *lookupBatch        // the batch the mints that started since the last one was sent wait for
}

// lookupBatch is one batched look-up.
type lookupBatch struct {
	ids  []string
	done chan struct{}
}

// maxLookupBatch bounds the ids of one DescribeTransactions request.
const maxLookupBatch = 1000

// lookup makes sure the control plane knows txnID's coordinator before its
// InitProducerId (see coordLookups), and returns what the mint calls when
// it is answered (ok: the coordinator is known from then on).
func (e *engine) lookup(ctx context.Context, txnID string) func(ok bool) {
	q := &e.lookups
	q.mu.Lock()
	if _, ok := q.known[txnID]; ok {
		q.mu.Unlock()
		return func(bool) {}
	}
	q.alone++
	var b *lookupBatch
	if q.alone > 1 {
		if q.next == nil {
			q.next = &lookupBatch{done: make(chan struct{})}
		}
		b = q.next
		b.ids = append(b.ids, txnID)
		if !q.running {
			q.running = true
			go e.runLookups()
		}
	}
	q.mu.Unlock()
	if b != nil {
		select {
		case <-b.done:
		case <-ctx.Done(): // the mint fails on its own
		}
	}
	return func(ok bool) {
		q.mu.Lock()
		q.alone--
		if ok {
			if q.known == nil {
				q.known = map[string]struct{}{}
			}
			q.known[txnID] = struct{}{}
		}
		q.mu.Unlock()
	}
}

// knownCoordinator records that the control plane looked txnID's
// coordinator up (enginePrepare).
func (e *engine) knownCoordinator(txnID string) {
	q := &e.lookups
	q.mu.Lock()
	if q.known == nil {
		q.known = map[string]struct{}{}
	}
	q.known[txnID] = struct{}{}
	q.mu.Unlock()
}

// runLookups sends the batches one after the other while mints wait for
// one: per control client, one DescribeTransactions of the batch's ids of
// that client (read-only; franz-go looks their coordinators up with one
// FindCoordinator and caches them), bounded by request.timeout.ms.
func (e *engine) runLookups() {
	q := &e.lookups
	for {
		q.mu.Lock()
		b := q.next
		q.next = nil
		if b == nil {
			q.running = false
			q.mu.Unlock()
			return
		}
		q.mu.Unlock()
		byClient := map[*kgo.Client][]string{}
		for _, id := range b.ids {
			cl := e.ctlClient(id)
			byClient[cl] = append(byClient[cl], id)
		}
		ctx, cancel := context.WithTimeout(context.Background(), e.t.cfg.RequestTimeout)
		var wg sync.WaitGroup
		for cl, ids := range byClient {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for chunk := range slices.Chunk(ids, maxLookupBatch) {
					req := kmsg.NewPtrDescribeTransactionsRequest()
					req.TransactionalIDs = chunk
					_, _ = req.RequestWith(ctx, cl) // its answer does not matter: the mint finds out
				}
			}()
		}
		wg.Wait()
		cancel()
		close(b.done)
	}
}

// initProducerID sends InitProducerId for txnID on the control plane: a
// first initialisation with cur -1:-1, or a re-initialisation carrying the
// current id and epoch (KIP-360).
func (e *engine) initProducerID(ctx context.Context, txnID string, timeout time.Duration, cur tokenIDs) (int64, int16, error) {
	var id int64
	var epoch int16
	err := retryTxnStep(ctx, func() error {
		req := kmsg.NewPtrInitProducerIDRequest()
		req.TransactionalID = kmsg.StringPtr(txnID)
		req.TransactionTimeoutMillis = int32(timeout.Milliseconds())
		req.ProducerID, req.ProducerEpoch = cur.id, cur.epoch
		resp, err := req.RequestWith(ctx, e.ctlClient(txnID))
		if err != nil {
			return err
		}
		id, epoch = resp.ProducerID, resp.ProducerEpoch
		return kerr.ErrorForCode(resp.ErrorCode)
	})
	return id, epoch, err
}

// engProducer is one role's producer on the engine (coord.TxnProducer,
// coord.TokenRecoverer, coord.OffsetProducer): the same safety steps as
// txnProducer, on the engine's shared connections.
type engProducer struct {
	roleTxn
	e       *engine
	timeout time.Duration

	// Owned by whoever holds sem.
	seq      map[engPart]int32 // next sequence per partition under the current token
	seqDoubt bool              // a produce failed with a batch whose outcome is unknown: only a new epoch makes the sequences known again
}

var (
	_ coord.TxnProducer    = (*engProducer)(nil)
	_ coord.TokenRecoverer = (*engProducer)(nil)
	_ coord.OffsetProducer = (*engProducer)(nil)
)

// engPart is a topic partition a producer wrote.
type engPart struct {
	topic     string
	partition int32
}

func (p *engProducer) ids() tokenIDs {
	t := p.Token()
	return tokenIDs{t.ProducerID, t.ProducerEpoch}
}

// Recover implements coord.TokenRecoverer (see txnProducer.Recover).
func (p *engProducer) Recover(ctx context.Context) (core.FencingToken, error) {
	_, err := exclusive(ctx, p.sem, p.e.t, p.txnID, "epoch recovery of ", func(wctx context.Context) ([]coord.ProduceResult, error) {
		return nil, p.settle(wctx)
	})
	return p.Token(), err
}

// Transact implements coord.TxnProducer: one transaction on the engine.
// It blocks until the commit is answered or ctx ends (the transaction then
// finishes or is aborted in the background, bounded by request.timeout.ms).
func (p *engProducer) Transact(ctx context.Context, msgs []coord.Message) ([]coord.ProduceResult, error) {
	return exclusive(ctx, p.sem, p.e.t, p.txnID, "transaction of ", func(wctx context.Context) ([]coord.ProduceResult, error) {
		return p.transact(wctx, ctx, msgs, nil)
	})
}

// TransactOffsets implements coord.OffsetProducer (see
// txnProducer.TransactOffsets).
func (p *engProducer) TransactOffsets(ctx context.Context, group string, offsets []coord.Offset, msgs []coord.Message) ([]coord.ProduceResult, error) {
	return exclusive(ctx, p.sem, p.e.t, p.txnID, "transaction of ", func(wctx context.Context) ([]coord.ProduceResult, error) {
		return p.transact(wctx, ctx, msgs, &offsetCommit{group: group, offsets: offsets})
	})
}

// Close implements coord.TxnProducer: it waits for a transaction in flight
// (bounded by request.timeout.ms) and ends a transaction an earlier failure
// left open with a raw EndTxn abort under the producer's token. The
// engine's connections stay.
func (p *engProducer) Close() error {
	p.closeWith(p, func() error { return p.rawEnd(p.e.ctlClient(p.txnID), false) }, nil)
	return nil
}

// settle: see roleTxn.settleWith.
func (p *engProducer) settle(context.Context) error { return p.settleWith(p.recoverAfterFailure) }

// failed: see roleTxn.failedWith.
func (p *engProducer) failed(werr error) error { return p.failedWith(werr, p.recoverAfterFailure) }

// rawEnd sends EndTxn (commit or abort) under the producer's token through
// cl and returns the coordinator's answer.
func (p *engProducer) rawEnd(cl *kgo.Client, commit bool) error {
	ctx, cancel := context.WithTimeout(context.Background(), p.e.t.cfg.RequestTimeout)
	defer cancel()
	return endTxn(ctx, cl, p.txnID, p.ids(), commit)
}

// endTxn sends one EndTxn under tok through cl.
func endTxn(ctx context.Context, cl *kgo.Client, txnID string, tok tokenIDs, commit bool) error {
	req := kmsg.NewPtrEndTxnRequest()
	req.TransactionalID = txnID
	req.ProducerID = tok.id
	req.ProducerEpoch = tok.epoch
	req.Commit = commit
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return err
	}
	return kerr.ErrorForCode(resp.ErrorCode)
}

// recoverAfterFailure settles a transaction that failed part-way, never
// minting over another member: the raw EndTxn abort, DescribeTransactions,
// and only when the coordinator's current token is still this producer's a
// re-initialisation carrying it (KIP-360), of which exactly the next epoch
// is taken (ownRecovery). The sequences restart at 0 under the new epoch.
// Nothing of this runs once Close began. See txnProducer.recoverAfterFailure.
func (p *engProducer) recoverAfterFailure() {
	t := p.t
	ctx, cancel := context.WithTimeout(context.Background(), t.cfg.RequestTimeout)
	defer cancel()
	ended := false
	tok, ok := p.stillOurs(ctx, func() error {
		err := retryTxnStep(ctx, func() error { return p.rawEnd(p.e.ctlClient(p.txnID), false) })
		ended = err == nil || errors.Is(err, kerr.InvalidTxnState) // aborted, or nothing ongoing
		return err
	})
	if !ok {
		return
	}
	if ended && !p.seqDoubt {
		// The transaction is over and every sequence is known (the
		// failure was not a produce whose outcome is unknown): the
		// producer continues under the same token, as a link cut that
		// heals must allow (the elector rides outages out under one
		// token).
		p.open, p.pending = false, false
		return
	}
	id, epoch, err := p.e.initProducerID(ctx, p.txnID, p.timeout, tokenIDs{tok.ProducerID, tok.ProducerEpoch})
	if err != nil {
		if isFence(err) {
			_ = p.fenced(err, "InitProducerId (epoch recovery)")
		}
		return
	}
	nt, ok := ownRecovery(tok, id, epoch)
	if !ok {
		_ = p.fenced(nil, "epoch recovery answered "+strconv.FormatInt(id, 10)+":"+strconv.Itoa(int(epoch))+", which is not the next epoch of this producer (another member minted)")
		return
	}
	p.setToken(nt)
	p.seq, p.seqDoubt = nil, false
	p.open, p.pending = false, false
	t.log().Info("krabka: own epoch recovery: this producer continues under a new token",
		"transactional_id", p.txnID, "old_token", tok.String(), "new_token", nt.String(), "at_ms", time.Now().UnixMilli())
}

// ownRecovery reports whether id:epoch, answered to a re-initialisation
// under old, is this producer's own recovery (docs/PROTOCOL.md 10.5):
// exactly the next epoch of the same producer id, or a new id at epoch 0
// once old's epoch is exhausted; and returns it as a token.
func ownRecovery(old core.FencingToken, id int64, epoch int16) (core.FencingToken, bool) {
	nt, err := core.NewFencingToken(id, epoch)
	own := id == old.ProducerID && int(epoch) == int(old.ProducerEpoch)+1 ||
		id != old.ProducerID && epoch == 0 && old.ProducerEpoch >= epochExhausted
	return nt, err == nil && own
}

// engBatch is one partition's records of a transaction.
type engBatch struct {
	part    engPart
	idx     []int // indexes into the transaction's messages
	seq     int32
	raw     []byte
	base    int64
	leader  int32
	written bool // the leader accepted the batch (its sequence is used)
}

// transact runs one transaction on ctx (the worker's context); caller is
// the caller's context (see txnProducer.transact).
func (p *engProducer) transact(ctx, caller context.Context, msgs []coord.Message, oc *offsetCommit) ([]coord.ProduceResult, error) {
	if err := p.settle(ctx); err != nil {
		return nil, err
	}
	t := p.e.t
	tok := p.Token()
	ids := tokenIDs{tok.ProducerID, tok.ProducerEpoch}
	cl := p.e.ctlClient(p.txnID)
	for _, m := range msgs {
		if m.Topic != t.cfg.Topic {
			cl = p.e.dataClient(p.txnID)
			break
		}
	}
	batches, err := p.batches(ctx, msgs, tok)
	if err != nil {
		return nil, err // nothing was sent
	}
	// The offsets steps, in the form txnProducer.transact uses (pipeline.go):
	// the classic form before the records, the implicit one after them.
	implicit := false
	if oc != nil {
		p.open = true
		implicit = len(batches) > 0 && p.implicitOffsets(ctx, cl)
		if !implicit {
			if err := p.offsetsBefore(ctx, cl, ids, oc, false); err != nil {
				return nil, p.failed(err)
			}
		}
	}
	if len(batches) > 0 {
		p.open = true
		if err := p.addPartitions(ctx, cl, ids, batches); err != nil {
			return nil, p.failed(p.fail(err, "AddPartitionsToTxn"))
		}
		if err := p.produce(ctx, cl, batches); err != nil {
			perr := p.fail(err, "produce")
			var r refused
			if !errors.As(err, &r) {
				p.seqDoubt = true
			} else if aerr := retryTxnStep(ctx, func() error { return p.rawEnd(cl, false) }); aerr == nil {
				// Refused for good: nothing of the producer's state is in
				// doubt. Aborted under the same token (the caller's other
				// messages of a group commit keep their token); only when
				// the abort fails is the failure settled in full.
				p.open = false
				return nil, perr
			}
			return nil, p.failed(perr)
		}
		if implicit {
			if err := p.commitOffsets(ctx, cl, ids, oc, true); err != nil {
				return nil, p.failed(err)
			}
		}
	}
	// The stamped-token check: every batch carries, in its header, the
	// token this transaction began under (the engine stamps the batches
	// itself), and the producer's token has not moved since.
	for _, b := range batches {
		bid := int64(binary.BigEndian.Uint64(b.raw[43:]))
		bep := int16(binary.BigEndian.Uint16(b.raw[51:]))
		if bid != tok.ProducerID || bep != tok.ProducerEpoch || p.Token() != tok {
			return nil, p.failed(coord.WrapError(coord.ErrTransport, nil,
				"transaction of %q: records written as %d:%d, not %s; aborted, retry", p.txnID, bid, bep, tok))
		}
	}
	if !p.open {
		return []coord.ProduceResult{}, nil // nothing to commit
	}
	if caller.Err() != nil {
		// The caller gave up before the commit: abort cleanly.
		if err := retryTxnStep(ctx, func() error { return p.rawEnd(cl, false) }); err != nil {
			p.pending = true
			p.recoverAfterFailure()
		} else {
			p.open = false
		}
		return nil, t.classify(caller.Err(), "transaction of "+strconv.Quote(p.txnID), "")
	}
	if err := retryTxnStep(ctx, func() error { return endTxn(ctx, cl, p.txnID, ids, true) }); err != nil {
		return nil, p.failed(p.fail(err, "EndTxn commit"))
	}
	p.open = false
	out := make([]coord.ProduceResult, len(msgs))
	for _, b := range batches {
		for j, i := range b.idx {
			out[i] = coord.ProduceResult{Topic: b.part.topic, Partition: b.part.partition, Offset: b.base + int64(j)}
		}
	}
	return out, nil
}

// batches places msgs on their partitions (Partition -1: Kafka's key
// hashing, see messagePartitioner) and encodes one record batch per
// partition under tok. Nothing is sent.
func (p *engProducer) batches(ctx context.Context, msgs []coord.Message, tok core.FencingToken) ([]*engBatch, error) {
	t := p.e.t
	byPart := map[engPart]*engBatch{}
	var order []*engBatch
	for i, m := range msgs {
		ls, err := p.e.leaders(ctx, m.Topic, false)
		if err != nil {
			return nil, t.classifyTxn(err, "metadata of topic "+strconv.Quote(m.Topic)+" for a transaction of "+strconv.Quote(p.txnID), topicACL(m.Topic, "DESCRIBE"), true)
		}
		part := m.Partition
		switch {
		case part >= 0:
		case m.Key == nil:
			part = int32(rand.IntN(len(ls)))
		default:
			part = int32(core.Murmur2(m.Key)&0x7fffffff) % int32(len(ls))
		}
		if int(part) >= len(ls) {
			return nil, coord.WrapError(coord.ErrUnknownTopicOrPartition, nil, "transaction of %q: topic %q has no partition %d (it has %d)", p.txnID, m.Topic, part, len(ls))
		}
		k := engPart{m.Topic, part}
		b := byPart[k]
		if b == nil {
			b = &engBatch{part: k}
			byPart[k] = b
			order = append(order, b)
		}
		b.idx = append(b.idx, i)
	}
	now := time.Now().UnixMilli()
	for _, b := range order {
		recs := make([]kmsg.Record, len(b.idx))
		for j, i := range b.idx {
			m := msgs[i]
			r := kmsg.Record{Key: m.Key, Value: m.Value, OffsetDelta: int32(j)}
			for _, h := range m.Headers {
				r.Headers = append(r.Headers, kmsg.Header{Key: h.Key, Value: h.Value})
			}
			if t.cfg.ProduceTokenHeader && m.Topic != t.cfg.Topic {
				r.Headers = append(r.Headers, kmsg.Header{Key: core.HeaderToken, Value: []byte(tok.String())})
			}
			recs[j] = r
		}
		b.seq = p.seq[b.part]
		b.raw = encodeBatch(tokenIDs{tok.ProducerID, tok.ProducerEpoch}, b.seq, now, recs)
	}
	return order, nil
}

// encodeBatch encodes recs as one transactional record batch (magic 2, no
// compression, create time now) of the producer tok starting at sequence
// seq, with its length and CRC-32C filled in.
func encodeBatch(tok tokenIDs, seq int32, now int64, recs []kmsg.Record) []byte {
	var body []byte
	for i := range recs {
		r := &recs[i]
		r.Length = 0
		r.Length = int32(len(r.AppendTo(nil)) - 1) // varint 0 is one byte
		body = r.AppendTo(body)
	}
	b := kmsg.RecordBatch{
		PartitionLeaderEpoch: -1,
		Magic:                2,
		Attributes:           batchTransactional,
		LastOffsetDelta:      int32(len(recs) - 1),
		FirstTimestamp:       now,
		MaxTimestamp:         now,
		ProducerID:           tok.id,
		ProducerEpoch:        tok.epoch,
		FirstSequence:        seq,
		NumRecords:           int32(len(recs)),
		Records:              body,
	}
	raw := b.AppendTo(make([]byte, 0, 61+len(body)))
	binary.BigEndian.PutUint32(raw[8:], uint32(len(raw)-12))               // length: after the offset and length fields
	binary.BigEndian.PutUint32(raw[17:], crc32.Checksum(raw[21:], crc32c)) // CRC-32C from the attributes on
	return raw
}

// nextSeq is the sequence after n records from seq (sequences wrap to 0
// after the largest int32, as Kafka's do).
func nextSeq(seq int32, n int) int32 {
	return int32((int64(seq) + int64(n)) % (1 << 31))
}

// addPartitions adds the batches' partitions to the transaction
// (AddPartitionsToTxn v3 through cl, retried while the coordinator answers
// CONCURRENT_TRANSACTIONS or moves).
func (p *engProducer) addPartitions(ctx context.Context, cl *kgo.Client, tok tokenIDs, batches []*engBatch) error {
	return retryTxnStep(ctx, func() error {
		req := kmsg.NewPtrAddPartitionsToTxnRequest()
		req.TransactionalID, req.ProducerID, req.ProducerEpoch = p.txnID, tok.id, tok.epoch
		idx := map[string]int{}
		for _, b := range batches {
			i, ok := idx[b.part.topic]
			if !ok {
				i = len(req.Topics)
				idx[b.part.topic] = i
				rt := kmsg.NewAddPartitionsToTxnRequestTopic()
				rt.Topic = b.part.topic
				req.Topics = append(req.Topics, rt)
			}
			req.Topics[i].Partitions = append(req.Topics[i].Partitions, b.part.partition)
		}
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			return err
		}
		if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
			return err
		}
		// The first error that is not OPERATION_NOT_ATTEMPTED (the answer
		// of the partitions that were fine when another failed).
		var first error
		note := func(code int16) {
			if err := kerr.ErrorForCode(code); err != nil && (first == nil || errors.Is(first, kerr.OperationNotAttempted)) {
				first = err
			}
		}
		for _, rt := range resp.Topics {
			for _, rp := range rt.Partitions {
				note(rp.ErrorCode)
			}
		}
		for _, tx := range resp.Transactions {
			for _, rt := range tx.Topics {
				for _, rp := range rt.Partitions {
					note(rp.ErrorCode)
				}
			}
		}
		return first
	})
}

// produce sends the batches to their partition leaders (one Produce request
// per leader, the leaders in parallel) and records each batch's base
// offset. A batch whose leader moved or could not be reached is sent again
// with the same sequence (the broker keeps the last five batches of a
// producer, so a batch it already wrote is answered as a duplicate, not
// written twice), after fresh metadata, until ctx ends. The sequences of
// the partitions advance only on success.
func (p *engProducer) produce(ctx context.Context, cl *kgo.Client, batches []*engBatch) error {
	defer func() {
		// The sequences of the batches a leader wrote are used, whatever
		// happened to the others of the request.
		if p.seq == nil {
			p.seq = map[engPart]int32{}
		}
		for _, b := range batches {
			if b.written {
				p.seq[b.part] = nextSeq(b.seq, len(b.idx))
			}
		}
	}()
	todo := batches
	for try := 0; ; try++ {
		byLeader := map[int32][]*engBatch{}
		for _, b := range todo {
			ls, err := p.e.leaders(ctx, b.part.topic, try > 0)
			if err != nil {
				return err
			}
			b.leader = ls[b.part.partition]
			byLeader[b.leader] = append(byLeader[b.leader], b)
		}
		type answer struct {
			retry []*engBatch
			err   error
		}
		ch := make(chan answer, len(byLeader))
		for leader, bs := range byLeader {
			go func() {
				r, err := p.produceTo(ctx, cl, leader, bs)
				ch <- answer{r, err}
			}()
		}
		var retry []*engBatch
		var last error
		for range byLeader {
			a := <-ch
			if a.err != nil && !errors.Is(a.err, errRetryBatches) {
				last = a.err
			}
			retry = append(retry, a.retry...)
		}
		if last != nil {
			return last
		}
		if len(retry) == 0 {
			break
		}
		if err := sleepCtx(ctx, time.Duration(min(try+1, 10))*50*time.Millisecond); err != nil {
			return coord.WrapError(coord.ErrTimeout, err, "produce of transaction of %q: the partition leaders did not accept the records in time", p.txnID)
		}
		todo = retry
	}
	return nil
}

// refused is a produce answer that refused a batch for good (its sequence
// was not used and the transaction may simply be aborted, under the same
// token: see refusedBatch).
type refused struct{ err error }

func (r refused) Error() string { return r.err.Error() }
func (r refused) Unwrap() error { return r.err }

// refusedBatch reports the produce errors after which the broker holds
// nothing of the batch and the producer's state is known: the batch is too
// large or malformed, or the principal may not write the topic.
func refusedBatch(err error) bool {
	return errors.Is(err, kerr.MessageTooLarge) || errors.Is(err, kerr.RecordListTooLarge) ||
		errors.Is(err, kerr.InvalidRecord) || errors.Is(err, kerr.CorruptMessage) ||
		errors.Is(err, kerr.InvalidTimestamp) || errors.Is(err, kerr.TopicAuthorizationFailed)
}

// errRetryBatches marks an answer whose batches are to be sent again.
var errRetryBatches = errors.New("retry")

// produceTo sends one Produce request with bs to leader and returns the
// batches to send again (leader moved, connection failed) or the first
// error that is final.
func (p *engProducer) produceTo(ctx context.Context, cl *kgo.Client, leader int32, bs []*engBatch) ([]*engBatch, error) {
	if leader < 0 {
		return bs, errRetryBatches
	}
	req := kmsg.NewPtrProduceRequest()
	req.TransactionID = kmsg.StringPtr(p.txnID)
	req.Acks = -1
	req.TimeoutMillis = int32(p.e.t.cfg.RequestTimeout.Milliseconds())
	idx := map[string]int{}
	for _, b := range bs {
		i, ok := idx[b.part.topic]
		if !ok {
			i = len(req.Topics)
			idx[b.part.topic] = i
			rt := kmsg.NewProduceRequestTopic()
			rt.Topic = b.part.topic
			req.Topics = append(req.Topics, rt)
		}
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Partition = b.part.partition
		rp.Records = b.raw
		req.Topics[i].Partitions = append(req.Topics[i].Partitions, rp)
	}
	start := time.Now()
	kresp, err := cl.Broker(int(leader)).Request(ctx, req)
	p.e.t.engineTrace(p.e.plane(cl), p.txnID, leader, start, err)
	if err != nil {
		if ctx.Err() != nil || !retriableConn(err) {
			return nil, err
		}
		return bs, errRetryBatches
	}
	resp := kresp.(*kmsg.ProduceResponse)
	found := map[engPart]*kmsg.ProduceResponseTopicPartition{}
	for i := range resp.Topics {
		for j := range resp.Topics[i].Partitions {
			rp := &resp.Topics[i].Partitions[j]
			found[engPart{resp.Topics[i].Topic, rp.Partition}] = rp
		}
	}
	var retry []*engBatch
	for _, b := range bs {
		rp := found[b.part]
		if rp == nil {
			return nil, coord.WrapError(coord.ErrTransport, nil, "produce answer of broker %d lists no %s/%d", leader, b.part.topic, b.part.partition)
		}
		err := kerr.ErrorForCode(rp.ErrorCode)
		switch {
		case err == nil:
			b.base, b.written = rp.BaseOffset, true
		case kerr.IsRetriable(err) && !errors.Is(err, kerr.OutOfOrderSequenceNumber):
			retry = append(retry, b)
		default:
			if refusedBatch(err) {
				err = refused{err}
			}
			if rp.ErrorMessage != nil {
				return nil, coord.WrapError(coord.ErrTransport, err, "%s/%d: %s", b.part.topic, b.part.partition, *rp.ErrorMessage)
			}
			return nil, err
		}
	}
	if len(retry) > 0 {
		return retry, errRetryBatches
	}
	return nil, nil
}

// retriableConn reports whether a Produce that failed with err (no answer:
// a connection that broke or could not be made) may be sent again: the
// broker deduplicates a batch it already wrote by its sequence. A closed
// client, refused credentials or a failed TLS handshake are final.
func retriableConn(err error) bool {
	return !errors.Is(err, kgo.ErrClientClosed) && !isAuthErr(err)
}

// isAuthErr reports the errors that no retry repairs.
func isAuthErr(err error) bool {
	return errors.Is(err, kerr.SaslAuthenticationFailed) || errors.Is(err, kerr.TopicAuthorizationFailed) ||
		errors.Is(err, kerr.TransactionalIDAuthorizationFailed) || errors.Is(err, kerr.ClusterAuthorizationFailed) ||
		classifyTLS(err, "") != nil
}
