package kafka

import (
	"context"
	"errors"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/krabka/krabka-coord/core"
	"github.com/krabka/krabka-coord/core/coord"
)

// txnProducer is one minted transactional producer (coord.TxnProducer):
// a franz-go transactional client of its own (krabka.engine=client).
type txnProducer struct {
	roleTxn
	cl *kgo.Client
}

// roleTxn is what both producers of a role (txnProducer, and engProducer
// on the shared engine) keep and do alike: the token, one transaction at a
// time, and the settling of a failed transaction without ever minting over
// another member.
type roleTxn struct {
	t     *Transport
	txnID string

	tokMu sync.Mutex
	token core.FencingToken // the current token (changes on an own epoch recovery)

	sem chan struct{} // one transaction at a time; held by the worker goroutine

	// Owned by whoever holds sem.
	open    bool  // a transaction is begun and not yet ended
	pending bool  // a failure left the transaction's outcome (or the producer's state) to settle
	broken  error // set once the producer must not be used again (fenced)
	// offsetsAdded: the open transaction holds consumed offsets
	// (AddOffsetsToTxn answered), so the broker has a transaction even
	// when no record was produced, and kgo's EndTransaction, which ends
	// only transactions it produced in, would not end it (txnProducer; the
	// engine ends every transaction raw).
	offsetsAdded bool

	// offsetsImplicit: the offsets form of this producer's transactions
	// (pipeline.go, implicitOffsets): 0 not asked yet, 1 implicit
	// (TxnOffsetCommit version 5), -1 classic (AddOffsetsToTxn first).
	offsetsImplicit int8

	// closing is set when Close begins: from then on the producer never
	// sends InitProducerId (a leadership is closed when its view saw a
	// newer token, among other reasons, and a deposed member must never
	// mint again).
	closing atomic.Bool

	closeOnce sync.Once
}

func newRoleTxn(t *Transport, txnID string, tok core.FencingToken) roleTxn {
	return roleTxn{t: t, txnID: txnID, token: tok, sem: make(chan struct{}, 1)}
}

// Token implements coord.TxnProducer: the token minted, or the one an own
// epoch recovery (docs/PROTOCOL.md 10.5) continued it under.
func (p *roleTxn) Token() core.FencingToken {
	p.tokMu.Lock()
	defer p.tokMu.Unlock()
	return p.token
}

func (p *roleTxn) setToken(t core.FencingToken) {
	p.tokMu.Lock()
	p.token = t
	p.tokMu.Unlock()
}

func (p *roleTxn) fenced(err error, what string) error {
	p.broken = coord.WrapError(coord.ErrFenced, err, "%s of transactional.id %q with token %s", what, p.txnID, p.Token())
	return p.broken
}

func (p *roleTxn) fail(err error, what string) error {
	if isFence(err) {
		return p.fenced(err, what)
	}
	return p.t.classifyTxn(err, what+" of transactional.id "+strconv.Quote(p.txnID), txnACL(p.txnID, "WRITE"), true)
}

// offsetsFail classifies a failed offsets step; a missing ACL on the group
// is named.
func (p *roleTxn) offsetsFail(err error, what, group string) error {
	if errors.Is(err, kerr.GroupAuthorizationFailed) {
		return coord.WrapError(coord.ErrAuthorization, err, "%s of transactional.id %q: the principal lacks READ on Group %q", what, p.txnID, group)
	}
	return p.fail(err, what)
}

// settleWith runs before every transaction and epoch recovery: a fenced
// producer stays fenced, and a failure that is not yet settled is settled
// first (recoverFn, the producer's recoverAfterFailure), or the call fails
// with a retriable error.
func (p *roleTxn) settleWith(recoverFn func()) error {
	if p.broken != nil {
		return p.broken
	}
	if p.open || p.pending {
		recoverFn()
		if p.broken != nil {
			return p.broken
		}
		if p.open || p.pending {
			return coord.WrapError(coord.ErrTransport, nil, "settling the previous failed transaction of %q did not complete; retry", p.txnID)
		}
	}
	return nil
}

// failedWith handles a transaction step that failed with werr (already
// classified): a fence ends the producer; anything else is settled at once
// (recoverFn). When settling finds that another member minted in the
// meantime, the caller is told FENCED, with both answers in the text: the
// failed step was refused or aborted by that mint (a coordinator that
// loses a race with a fence answers EndTxn UNKNOWN_SERVER_ERROR, say).
func (p *roleTxn) failedWith(werr error, recoverFn func()) error {
	if errors.Is(werr, coord.ErrFenced) {
		return werr
	}
	p.pending = true
	recoverFn()
	if p.broken != nil {
		return coord.WrapError(coord.ErrFenced, p.broken, "%v; then", werr)
	}
	return werr
}

// stillOurs runs the first two steps of settling a failed transaction
// (recoverAfterFailure): a raw EndTxn abort under the current token
// (rawAbort; a fence in its answer ends the producer), then
// DescribeTransactions: when the coordinator's current token is not this
// producer's, another member minted and the producer ends fenced. It
// returns the token and true only when a re-initialisation may follow
// (not after Close began).
func (p *roleTxn) stillOurs(ctx context.Context, rawAbort func() error) (core.FencingToken, bool) {
	tok := p.Token()
	if p.broken != nil || p.closing.Load() {
		return tok, false
	}
	if err := rawAbort(); err != nil {
		if isFence(err) {
			_ = p.fenced(err, "EndTxn abort after a failed transaction")
			return tok, false
		}
		p.t.log().Debug("krabka: EndTxn abort after a failed transaction", "transactional_id", p.txnID, "answer", err.Error())
	}
	cur, err := p.t.CurrentToken(ctx, p.txnID)
	if err != nil {
		p.t.log().Debug("krabka: DescribeTransactions after a failed transaction", "transactional_id", p.txnID, "error", err.Error())
		return tok, false
	}
	if cur != tok {
		_ = p.fenced(nil, "after a failed transaction the coordinator's current token is "+cur.String()+" (another member minted)")
		return tok, false
	}
	return tok, !p.closing.Load()
}

// closeWith is Close: self leaves the transport's producers, then it waits
// for a transaction in flight (bounded by request.timeout.ms), runs
// rawAbort when an earlier failure left a transaction open (so that it does
// not hold back the last stable offset of the partition until the
// coordinator times it out), and then release.
func (p *roleTxn) closeWith(self minted, rawAbort func() error, release func()) {
	p.closeOnce.Do(func() {
		p.t.mu.Lock()
		if p.t.prods[p.txnID] == self {
			delete(p.t.prods, p.txnID)
		}
		p.t.mu.Unlock()
		p.closing.Store(true)
		done := make(chan struct{})
		go func() {
			defer close(done)
			p.sem <- struct{}{}
			if (p.open || p.pending) && p.broken == nil {
				// A raw EndTxn abort under this producer's token: it ends
				// a transaction still open, and a superseded token is
				// simply refused. Never a re-initialisation.
				_ = rawAbort()
			}
			<-p.sem
			if release != nil {
				release()
			}
		}()
		select {
		case <-done:
		case <-time.After(p.t.cfg.RequestTimeout):
		}
	})
}

// Recover implements coord.TokenRecoverer: it completes an epoch recovery
// that an earlier failure left pending (InitProducerId carrying this
// producer's id and epoch, KIP-360) and returns the current token, so that
// a renewal writes its lease under the token its records carry.
func (p *txnProducer) Recover(ctx context.Context) (core.FencingToken, error) {
	_, err := exclusive(ctx, p.sem, p.t, p.txnID, "epoch recovery of ", func(wctx context.Context) ([]coord.ProduceResult, error) {
		return nil, p.settle(wctx)
	})
	return p.Token(), err
}

// workCtx is the context of the calls of one transaction. It is not
// cancelled with the caller's context: a kgo produce or EndTxn abandoned
// half-way makes franz-go re-initialise the producer (an epoch bump) and,
// on a transaction.version 1 coordinator, a re-initialisation during an
// ongoing transaction is answered PRODUCER_FENCED. The worker finishes
// (or aborts) the transaction cleanly instead, bounded by the later of the
// caller's deadline and request.timeout.ms.
func workCtx(ctx context.Context, requestTimeout time.Duration) (context.Context, context.CancelFunc) {
	d := time.Now().Add(requestTimeout)
	if dl, ok := ctx.Deadline(); ok && dl.After(d) {
		d = dl
	}
	return context.WithDeadline(context.WithoutCancel(ctx), d)
}

// adopt asks kgo for the producer's id and epoch, which runs the
// re-initialisation a failure left pending (only recoverAfterFailure calls
// it, after the coordinator confirmed the token is still this producer's).
// A re-initialisation carries the current id and epoch (KIP-360), and the
// coordinator bumps it only while that epoch is still current. So exactly
// the next epoch of the same producer id (or, once the epoch is exhausted,
// a new id) is this leadership's own recovery and becomes its token.
// Anything else is not ours: an epoch more than one ahead is the
// coordinator's unbumped answer to a "retry" (Kafka answers the current
// epoch unbumped when the request carries the previous one), which may be
// another member's token. It ends the producer as fenced.
func (p *txnProducer) adopt(ctx context.Context) error {
	id, epoch, err := p.cl.ProducerID(ctx)
	if err != nil {
		return p.fail(err, "InitProducerId (epoch recovery)")
	}
	old := p.Token()
	if id == old.ProducerID && epoch == old.ProducerEpoch {
		return nil
	}
	nt, own := ownRecovery(old, id, epoch)
	if !own {
		return p.fenced(nil, "epoch recovery answered "+strconv.FormatInt(id, 10)+":"+strconv.Itoa(int(epoch))+", which is not the next epoch of this producer (another member minted)")
	}
	p.setToken(nt)
	p.t.log().Info("krabka: own epoch recovery: this producer continues under a new token",
		"transactional_id", p.txnID, "old_token", old.String(), "new_token", nt.String(), "at_ms", time.Now().UnixMilli())
	return nil
}

// Close waits for a transaction in flight (bounded by request.timeout.ms),
// aborts a transaction an earlier failure left open, so that it does not
// hold back the last stable offset of the partition until the coordinator
// times it out, and closes the kgo client.
func (p *txnProducer) Close() error {
	p.closeWith(p, p.rawAbort, p.cl.Close)
	return nil
}

// Transact implements coord.TxnProducer. The kgo calls run in a worker
// goroutine that holds the producer until they return; the caller returns
// when ctx ends even if the cluster does not answer.
func (p *txnProducer) Transact(ctx context.Context, msgs []coord.Message) ([]coord.ProduceResult, error) {
	return p.run(ctx, msgs, nil)
}

// run is Transact and TransactOffsets (oc nil: no offsets).
func (p *txnProducer) run(ctx context.Context, msgs []coord.Message, oc *offsetCommit) ([]coord.ProduceResult, error) {
	return exclusive(ctx, p.sem, p.t, p.txnID, "transaction of ", func(wctx context.Context) ([]coord.ProduceResult, error) {
		return p.transact(wctx, ctx, msgs, oc)
	})
}

// exclusive runs fn holding sem (one transaction at a time per producer) in
// a worker goroutine on the worker context of ctx (workCtx), and returns
// its answer, or a timeout when ctx ends first (the worker then finishes or
// aborts in the background and releases sem). what names the step for the
// timeout ("transaction of " and the quoted id).
func exclusive(ctx context.Context, sem chan struct{}, t *Transport, txnID, what string, fn func(wctx context.Context) ([]coord.ProduceResult, error)) ([]coord.ProduceResult, error) {
	select {
	case sem <- struct{}{}:
	case <-ctx.Done():
		return nil, t.classify(ctx.Err(), "waiting for the previous transaction of "+strconv.Quote(txnID), "")
	}
	type result struct {
		res []coord.ProduceResult
		err error
	}
	ch := make(chan result, 1)
	go func() {
		defer func() { <-sem }()
		wctx, cancel := workCtx(ctx, t.cfg.RequestTimeout)
		defer cancel()
		res, err := fn(wctx)
		ch <- result{res, err}
	}()
	select {
	case r := <-ch:
		return r.res, r.err
	case <-ctx.Done():
		return nil, t.classify(ctx.Err(), what+strconv.Quote(txnID), "")
	}
}

// abort ends an open transaction, bounded by request.timeout.ms.
func (p *txnProducer) abort() error {
	ctx, cancel := context.WithTimeout(context.Background(), p.t.cfg.RequestTimeout)
	defer cancel()
	if err := p.cl.AbortBufferedRecords(ctx); err != nil {
		return err
	}
	if err := p.cl.EndTransaction(ctx, kgo.TryAbort); err != nil {
		return err
	}
	if p.offsetsAdded {
		// kgo ends only what it produced in: end the offsets too.
		if err := p.rawEnd(false); err != nil && !errors.Is(err, kerr.InvalidTxnState) {
			return err
		}
	}
	p.open, p.offsetsAdded = false, false
	return nil
}

// transact runs one transaction on ctx (the worker's context); caller is the
// caller's context: once it has ended before the commit is sent, the
// transaction is aborted instead of committed (the caller was told TIMEOUT).
func (p *txnProducer) transact(ctx, caller context.Context, msgs []coord.Message, oc *offsetCommit) ([]coord.ProduceResult, error) {
	if err := p.settle(ctx); err != nil {
		return nil, err
	}
	tok := p.Token()
	if err := p.cl.BeginTransaction(); err != nil {
		return nil, p.fail(err, "BeginTransaction")
	}
	p.open = true
	recs := make([]*kgo.Record, len(msgs))
	for i, m := range msgs {
		r := &kgo.Record{Topic: m.Topic, Partition: m.Partition, Key: m.Key, Value: m.Value}
		for _, h := range m.Headers {
			r.Headers = append(r.Headers, kgo.RecordHeader{Key: h.Key, Value: h.Value})
		}
		if p.t.cfg.ProduceTokenHeader && m.Topic != p.t.cfg.Topic {
			// The token these records are written with (checked below
			// against what the broker stamped on them).
			r.Headers = append(r.Headers, kgo.RecordHeader{Key: core.HeaderToken, Value: []byte(tok.String())})
		}
		recs[i] = r
	}
	ids := tokenIDs{tok.ProducerID, tok.ProducerEpoch}
	// The offsets steps (pipeline.go): in the classic form AddOffsetsToTxn
	// and TxnOffsetCommit before the records (with the overlap form, tests
	// and benchmarks only, the TxnOffsetCommit beside the produce); in the
	// implicit form TxnOffsetCommit version 5 after them.
	var implicit, overlap bool
	if oc != nil {
		implicit = len(recs) > 0 && p.implicitOffsets(ctx, p.cl)
		overlap = !implicit && len(recs) > 0 && p.t.offsetsForm.overlap
		if !implicit {
			if err := p.offsetsBefore(ctx, p.cl, ids, oc, overlap); err != nil {
				return nil, p.failed(err)
			}
		}
	}
	if len(recs) > 0 {
		var beside chan error
		if overlap {
			beside = make(chan error, 1)
			go func() { beside <- p.commitOffsets(ctx, p.cl, ids, oc, false) }()
		}
		results := p.cl.ProduceSync(ctx, recs...)
		var oerr error
		if beside != nil {
			oerr = <-beside
		}
		if err := results.FirstErr(); err != nil {
			return nil, p.failed(p.fail(err, "produce"))
		}
		if oerr != nil {
			return nil, p.failed(oerr)
		}
	}
	if implicit {
		if err := p.commitOffsets(ctx, p.cl, ids, oc, true); err != nil {
			return nil, p.failed(err)
		}
	}
	if oc != nil && len(recs) > 0 {
		// kgo produced in this transaction: its EndTransaction (or abort)
		// ends it, offsets included.
		p.offsetsAdded = false
	}
	// The token must be the one every record was written with. A producer
	// that re-initialised itself after the check above (it cannot without a
	// failure in between) is stopped here: its records carry a token the
	// caller did not build the messages for.
	for _, r := range recs {
		if r.ProducerID != tok.ProducerID || r.ProducerEpoch != tok.ProducerEpoch {
			got := strconv.FormatInt(r.ProducerID, 10) + ":" + strconv.Itoa(int(r.ProducerEpoch))
			return nil, p.failed(coord.WrapError(coord.ErrTransport, nil,
				"transaction of %q: records written as %s, not %s (an epoch recovery during the transaction); aborted, retry", p.txnID, got, tok))
		}
	}
	if caller.Err() != nil {
		// The caller gave up before the commit: abort cleanly.
		if err := p.abort(); err != nil {
			p.pending = true
			p.recoverAfterFailure()
		}
		return nil, p.t.classify(caller.Err(), "transaction of "+strconv.Quote(p.txnID), "")
	}
	// The commit is proven by the produce results above plus this EndTxn:
	// with records produced, kgo always sends EndTxn to the coordinator.
	// Without records (offsets only) kgo would send nothing and the
	// offsets would stay pending until the transaction timeout: the
	// EndTxn is sent raw, and kgo's EndTransaction then only ends its own
	// (empty) transaction state.
	if len(recs) == 0 && p.offsetsAdded {
		if err := retryTxnStep(ctx, func() error { return p.rawEnd(true) }); err != nil {
			return nil, p.failed(p.fail(err, "EndTxn commit (offsets only)"))
		}
		p.offsetsAdded = false
	}
	if err := p.cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
		return nil, p.failed(p.fail(err, "EndTxn commit"))
	}
	p.open, p.offsetsAdded = false, false
	out := make([]coord.ProduceResult, len(recs))
	for i, r := range recs {
		out[i] = coord.ProduceResult{Topic: r.Topic, Partition: r.Partition, Offset: r.Offset}
	}
	return out, nil
}

// settle: see roleTxn.settleWith.
func (p *txnProducer) settle(context.Context) error { return p.settleWith(p.recoverAfterFailure) }

// failed: see roleTxn.failedWith.
func (p *txnProducer) failed(werr error) error { return p.failedWith(werr, p.recoverAfterFailure) }

// rawAbort sends EndTxn(abort) under the producer's token and returns the
// coordinator's answer (nil: aborted, or nothing to abort).
func (p *txnProducer) rawAbort() error { return p.rawEnd(false) }

// rawEnd sends EndTxn (commit or abort) under the producer's token and
// returns the coordinator's answer.
func (p *txnProducer) rawEnd(commit bool) error {
	ctx, cancel := context.WithTimeout(context.Background(), p.t.cfg.RequestTimeout)
	defer cancel()
	tok := p.Token()
	return endTxn(ctx, p.cl, p.txnID, tokenIDs{tok.ProducerID, tok.ProducerEpoch}, commit)
}

// recoverAfterFailure settles a transaction that failed part-way, without
// ever minting over another member (issue 26). A failed produce or EndTxn
// leaves franz-go's producer id marked for re-initialisation, and the
// transaction's outcome unknown. In order:
//
//  1. a raw EndTxn abort under the current token ends the transaction if it
//     is still ongoing; a fence in the answer ends the producer;
//  2. DescribeTransactions: if the coordinator's current token is not this
//     producer's, another member minted: the producer ends fenced without
//     sending InitProducerId;
//  3. only then franz-go's abort, which re-initialises the producer under
//     its own id and epoch (KIP-360; the coordinator bumps it only while
//     that epoch is current), and adopt takes exactly the next epoch.
//
// Nothing of this runs once Close began. Other errors leave the failure
// pending for the next transaction to settle.
func (p *txnProducer) recoverAfterFailure() {
	ctx, cancel := context.WithTimeout(context.Background(), p.t.cfg.RequestTimeout)
	defer cancel()
	if _, ok := p.stillOurs(ctx, p.rawAbort); !ok {
		return
	}
	if err := p.abort(); err != nil {
		if isFence(err) {
			_ = p.fenced(err, "aborting a failed transaction")
		}
		return
	}
	if err := p.adopt(ctx); err != nil {
		return
	}
	p.pending = false
}

// epochExhausted is the producer epoch at which Kafka hands out a new
// producer id instead of bumping (TransactionMetadata.isEpochExhausted:
// Short.MaxValue - 1).
const epochExhausted = 32766

// messagePartitioner pins a record to its Partition when it is >= 0 and
// otherwise applies Kafka's default key hashing: murmur2(key) & 0x7fffffff
// modulo the partition count (a record without a key goes to any partition).
type messagePartitioner struct{}

func (messagePartitioner) ForTopic(string) kgo.TopicPartitioner { return messagePartitioner{} }

func (messagePartitioner) RequiresConsistency(*kgo.Record) bool { return true }

func (messagePartitioner) Partition(r *kgo.Record, n int) int {
	if r.Partition >= 0 {
		return int(r.Partition)
	}
	if r.Key == nil {
		return rand.IntN(n)
	}
	return int(core.Murmur2(r.Key)&0x7fffffff) % n
}
