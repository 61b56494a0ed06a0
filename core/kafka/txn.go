package kafka

import (
	"context"
	"errors"
	"math/rand/v2"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/krabka/krabka-coord/core"
	"github.com/krabka/krabka-coord/core/coord"
)

// txnProducer is one minted transactional producer (coord.TxnProducer).
type txnProducer struct {
	t     *Transport
	cl    *kgo.Client
	txnID string

	tokMu sync.Mutex
	token core.FencingToken // the current token (changes on an own epoch recovery)

	sem chan struct{} // one transaction at a time; held by the worker goroutine

	// Owned by whoever holds sem.
	open   bool  // a transaction is begun and not yet ended
	broken error // set once the producer must not be used again (fenced)

	closeOnce sync.Once
}

// Token implements coord.TxnProducer: the token minted, or the one an own
// epoch recovery (COORDINATION.md 10.5) continued it under.
func (p *txnProducer) Token() core.FencingToken {
	p.tokMu.Lock()
	defer p.tokMu.Unlock()
	return p.token
}

func (p *txnProducer) setToken(t core.FencingToken) {
	p.tokMu.Lock()
	p.token = t
	p.tokMu.Unlock()
}

// Recover implements coord.TokenRecoverer: it completes an epoch recovery
// that an earlier failure left pending (InitProducerId carrying this
// producer's id and epoch, KIP-360) and returns the current token, so that
// a renewal writes its lease under the token its records carry.
func (p *txnProducer) Recover(ctx context.Context) (core.FencingToken, error) {
	select {
	case p.sem <- struct{}{}:
	case <-ctx.Done():
		return p.Token(), classify(ctx.Err(), "waiting for the previous transaction of "+strconv.Quote(p.txnID), "")
	}
	ch := make(chan error, 1)
	go func() {
		defer func() { <-p.sem }()
		wctx, cancel := p.workCtx(ctx)
		defer cancel()
		if p.broken != nil {
			ch <- p.broken
			return
		}
		ch <- p.adopt(wctx)
	}()
	select {
	case err := <-ch:
		return p.Token(), err
	case <-ctx.Done():
		return p.Token(), classify(ctx.Err(), "epoch recovery of "+strconv.Quote(p.txnID), "")
	}
}

// workCtx is the context of the kgo calls of one transaction. It is not
// cancelled with the caller's context: a kgo produce or EndTxn abandoned
// half-way makes franz-go re-initialise the producer (an epoch bump) and,
// on a transaction.version 1 coordinator, a re-initialisation during an
// ongoing transaction is answered PRODUCER_FENCED. The worker finishes
// (or aborts) the transaction cleanly instead, bounded by the later of the
// caller's deadline and request.timeout.ms.
func (p *txnProducer) workCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	d := time.Now().Add(p.t.cfg.RequestTimeout)
	if dl, ok := ctx.Deadline(); ok && dl.After(d) {
		d = dl
	}
	return context.WithDeadline(context.WithoutCancel(ctx), d)
}

// adopt asks kgo for the producer's id and epoch, which runs a pending
// re-initialisation. A re-initialisation carries the current id and epoch
// (KIP-360): the coordinator grants it only when nobody else minted in
// between, so a higher epoch of the same producer id (or, once the epoch is
// exhausted, a new id) is this leadership's own recovery and becomes its
// token. Anything else ends the producer as fenced.
func (p *txnProducer) adopt(ctx context.Context) error {
	id, epoch, err := p.cl.ProducerID(ctx)
	if err != nil {
		return p.fail(err, "InitProducerId (epoch recovery)")
	}
	old := p.Token()
	if id == old.ProducerID && epoch == old.ProducerEpoch {
		return nil
	}
	nt, terr := core.NewFencingToken(id, epoch)
	if terr != nil || nt.Compare(old) <= 0 {
		return p.fenced(terr, "epoch recovery to "+strconv.FormatInt(id, 10)+":"+strconv.Itoa(int(epoch)))
	}
	p.setToken(nt)
	p.t.log().Info("krabka: own epoch recovery: the leadership continues under a new token",
		"transactional_id", p.txnID, "old_token", old.String(), "new_token", nt.String())
	return nil
}

// Close waits for a transaction in flight (bounded by request.timeout.ms),
// aborts a transaction an earlier failure left open, so that it does not
// hold back the last stable offset of the partition until the coordinator
// times it out, and closes the kgo client.
func (p *txnProducer) Close() error {
	p.closeOnce.Do(func() {
		p.t.mu.Lock()
		if p.t.prods[p.txnID] == p {
			delete(p.t.prods, p.txnID)
		}
		p.t.mu.Unlock()
		done := make(chan struct{})
		go func() {
			defer close(done)
			p.sem <- struct{}{}
			if p.open && p.broken == nil {
				_ = p.abort()
			}
			<-p.sem
			p.cl.Close()
		}()
		select {
		case <-done:
		case <-time.After(p.t.cfg.RequestTimeout):
		}
	})
	return nil
}

// Transact implements coord.TxnProducer. The kgo calls run in a worker
// goroutine that holds the producer until they return; the caller returns
// when ctx ends even if the cluster does not answer.
func (p *txnProducer) Transact(ctx context.Context, msgs []coord.Message) ([]coord.ProduceResult, error) {
	select {
	case p.sem <- struct{}{}:
	case <-ctx.Done():
		return nil, classify(ctx.Err(), "waiting for the previous transaction of "+strconv.Quote(p.txnID), "")
	}
	ch := make(chan struct {
		res []coord.ProduceResult
		err error
	}, 1)
	go func() {
		defer func() { <-p.sem }()
		wctx, cancel := p.workCtx(ctx)
		defer cancel()
		res, err := p.transact(wctx, ctx, msgs)
		ch <- struct {
			res []coord.ProduceResult
			err error
		}{res, err}
	}()
	select {
	case r := <-ch:
		return r.res, r.err
	case <-ctx.Done():
		return nil, classify(ctx.Err(), "transaction of "+strconv.Quote(p.txnID), "")
	}
}

func (p *txnProducer) fenced(err error, what string) error {
	p.broken = coord.WrapError(coord.ErrFenced, err, "%s of transactional.id %q with token %s", what, p.txnID, p.Token())
	return p.broken
}

func (p *txnProducer) fail(err error, what string) error {
	if isFence(err) {
		return p.fenced(err, what)
	}
	return classifyTxn(err, what+" of transactional.id "+strconv.Quote(p.txnID), txnACL(p.txnID, "WRITE"), true)
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
	p.open = false
	return nil
}

// transact runs one transaction on ctx (the worker's context); caller is the
// caller's context: once it has ended before the commit is sent, the
// transaction is aborted instead of committed (the caller was told TIMEOUT).
func (p *txnProducer) transact(ctx, caller context.Context, msgs []coord.Message) ([]coord.ProduceResult, error) {
	if p.broken != nil {
		return nil, p.broken
	}
	if p.open {
		p.recoverAfterFailure()
		if p.broken != nil {
			return nil, p.broken
		}
		if p.open {
			return nil, coord.WrapError(coord.ErrTransport, nil, "aborting the previous transaction of %q failed; retry", p.txnID)
		}
	}
	// Complete a pending epoch recovery before the records are built with
	// the token (see adopt).
	if err := p.adopt(ctx); err != nil {
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
		recs[i] = r
	}
	results := p.cl.ProduceSync(ctx, recs...)
	if err := results.FirstErr(); err != nil {
		werr := p.fail(err, "produce")
		if !errors.Is(werr, coord.ErrFenced) {
			p.recoverAfterFailure()
		}
		return nil, werr
	}
	// The token must be the one every record was written with. A producer
	// that re-initialised itself after the check above (it cannot without a
	// failure in between) is stopped here: its records carry a token the
	// caller did not build the messages for.
	for _, r := range recs {
		if r.ProducerID != tok.ProducerID || r.ProducerEpoch != tok.ProducerEpoch {
			p.recoverAfterFailure()
			got := strconv.FormatInt(r.ProducerID, 10) + ":" + strconv.Itoa(int(r.ProducerEpoch))
			if p.broken != nil {
				return nil, p.broken
			}
			return nil, coord.WrapError(coord.ErrTransport, nil,
				"transaction of %q: records written as %s, not %s (an epoch recovery during the transaction); aborted, retry", p.txnID, got, tok)
		}
	}
	if caller.Err() != nil {
		// The caller gave up before the commit: abort cleanly.
		if err := p.abort(); err != nil {
			p.recoverAfterFailure()
		}
		return nil, classify(caller.Err(), "transaction of "+strconv.Quote(p.txnID), "")
	}
	// The commit is proven by the produce results above plus this EndTxn:
	// with records produced, kgo always sends EndTxn to the coordinator.
	if err := p.cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
		werr := p.fail(err, "EndTxn commit")
		if !errors.Is(werr, coord.ErrFenced) {
			p.recoverAfterFailure()
		}
		return nil, werr
	}
	p.open = false
	out := make([]coord.ProduceResult, len(recs))
	for i, r := range recs {
		out[i] = coord.ProduceResult{Topic: r.Topic, Partition: r.Partition, Offset: r.Offset}
	}
	return out, nil
}

// recoverAfterFailure ends a transaction that failed part-way. A failed
// produce or EndTxn leaves franz-go's producer id marked for
// re-initialisation; on a transaction.version 1 coordinator a
// re-initialisation while the transaction is still ongoing fences the
// producer (the coordinator bumps the epoch to abort it and then refuses the
// retry of the same request). So the transaction is first aborted with a
// raw EndTxn under the current token (any answer is fine: no transaction,
// already aborted, or a fence that the re-initialisation will confirm), then
// franz-go's abort re-initialises the producer and adopt takes the new
// token. Errors are left for the next transaction to meet.
func (p *txnProducer) recoverAfterFailure() {
	ctx, cancel := context.WithTimeout(context.Background(), p.t.cfg.RequestTimeout)
	defer cancel()
	tok := p.Token()
	req := kmsg.NewPtrEndTxnRequest()
	req.TransactionalID = p.txnID
	req.ProducerID = tok.ProducerID
	req.ProducerEpoch = tok.ProducerEpoch
	req.Commit = false
	if resp, err := req.RequestWith(ctx, p.cl); err == nil {
		if e := kerr.ErrorForCode(resp.ErrorCode); e != nil {
			p.t.log().Debug("krabka: EndTxn abort after a failed transaction", "transactional_id", p.txnID, "answer", e.Error())
		}
	}
	if err := p.abort(); err != nil {
		if isFence(err) {
			_ = p.fenced(err, "aborting a failed transaction")
		}
		return
	}
	_ = p.adopt(ctx)
}

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
