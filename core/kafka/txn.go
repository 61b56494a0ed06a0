package kafka

import (
	"context"
	"errors"
	"math/rand/v2"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/krabka/krabka-coord/core"
	"github.com/krabka/krabka-coord/core/coord"
)

// txnProducer is one minted transactional producer (coord.TxnProducer).
type txnProducer struct {
	t     *Transport
	cl    *kgo.Client
	txnID string
	token core.FencingToken

	sem chan struct{} // one transaction at a time; held by the worker goroutine

	// Owned by whoever holds sem.
	open   bool  // a transaction is begun and not yet ended
	broken error // set once the producer must not be used again (fenced)

	closeOnce sync.Once
}

func (p *txnProducer) Token() core.FencingToken { return p.token }

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
		res, err := p.transact(ctx, msgs)
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
	p.broken = coord.WrapError(coord.ErrFenced, err, "%s of transactional.id %q with token %s", what, p.txnID, p.token)
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

func (p *txnProducer) transact(ctx context.Context, msgs []coord.Message) ([]coord.ProduceResult, error) {
	if p.broken != nil {
		return nil, p.broken
	}
	if p.open {
		if err := p.abort(); err != nil {
			return nil, p.fail(err, "aborting the previous transaction")
		}
	}
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
			_ = p.abort()
		}
		return nil, werr
	}
	// The token must be the one every record was written with: a producer
	// that re-initialised itself (an internal epoch bump) superseded it.
	for _, r := range recs {
		if r.ProducerID != p.token.ProducerID || r.ProducerEpoch != p.token.ProducerEpoch {
			_ = p.abort()
			return nil, p.fenced(nil, "records written as "+strconv.FormatInt(r.ProducerID, 10)+":"+
				strconv.Itoa(int(r.ProducerEpoch))+", not the minted token")
		}
	}
	// The commit is proven by the produce results above plus this EndTxn:
	// with records produced, kgo always sends EndTxn to the coordinator.
	if err := p.cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
		werr := p.fail(err, "EndTxn commit")
		if !errors.Is(werr, coord.ErrFenced) {
			_ = p.abort()
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
