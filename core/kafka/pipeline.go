package kafka

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/krabka/krabka-coord/core/coord"
)

// Pipelines (docs/PIPELINES.md): reading input topics read_committed from
// the offsets committed for the role's group, and committing consumed
// offsets inside the role's transaction.
//
// On the wire, a transaction carrying offsets is the classic
// consume-transform-produce transaction of Kafka's transactional producers:
// BeginTransaction, the records produced (AddPartitionsToTxn, Produce),
// AddOffsetsToTxn (transactional id, producer id and epoch, group) to the
// transaction coordinator, TxnOffsetCommit (group, transactional id,
// producer id and epoch, generation -1, no member id: no group membership;
// the group coordinator checks the producer epoch) to the group
// coordinator, then EndTxn. TxnOffsetCommit is capped at version 4 (see
// Versions): version 5 is the transaction version 2 form (KIP-890 part 2)
// in which the offsets partition joins the transaction implicitly, and this
// package runs every transaction as a version-1 transaction on clusters of
// either version (EndTxn is capped at 4), so AddOffsetsToTxn is always sent.

var (
	_ coord.InputSource    = (*Transport)(nil)
	_ coord.OffsetProducer = (*txnProducer)(nil)
)

// MaxTxnOffsetCommitVersion is the highest TxnOffsetCommit request version
// this package sends (see the package documentation of pipelines above).
const MaxTxnOffsetCommitVersion = 4

// inputFetchMaxBytes bounds what one input reader buffers: at most this many
// bytes per fetch, one fetch in flight.
const inputFetchMaxBytes = 4 << 20

// InputPartitions implements coord.InputSource from the cluster's metadata.
func (t *Transport) InputPartitions(ctx context.Context, topic string) (int32, error) {
	if err := t.checkOpen(); err != nil {
		return 0, err
	}
	ctx, cancel := t.bound(ctx)
	defer cancel()
	what := "metadata of input topic " + strconv.Quote(topic)
	n, err := withRetry(ctx, func() (int32, error) {
		tds, err := t.adm.ListTopics(ctx, topic)
		if err != nil {
			return 0, err
		}
		td, ok := tds[topic]
		if !ok {
			return 0, kerr.UnknownTopicOrPartition
		}
		if td.Err != nil {
			return 0, td.Err
		}
		return int32(len(td.Partitions)), nil
	})
	switch {
	case errors.Is(err, kerr.UnknownTopicOrPartition):
		return 0, coord.WrapError(coord.ErrUnknownTopicOrPartition, err, "input topic %q does not exist", topic)
	case err != nil:
		return 0, t.classify(err, what, topicACL(topic, "DESCRIBE"))
	}
	return n, nil
}

// StartOffsets implements coord.InputSource: OffsetFetch with
// require_stable (it waits while a transaction holding offsets of the group
// is undecided, so that a successor never starts from offsets a deposed
// leader's transaction is about to commit or abort), then ListOffsets for
// the log start of the partitions without a committed offset.
func (t *Transport) StartOffsets(ctx context.Context, group string, tps []coord.TopicPartition) ([]int64, error) {
	if err := t.checkOpen(); err != nil {
		return nil, err
	}
	ctx, cancel := t.bound(ctx)
	defer cancel()
	committed, err := withRetry(ctx, func() (kadm.OffsetResponses, error) {
		r, err := t.adm.FetchOffsets(kadm.RequireStable(ctx), group)
		if err == nil {
			err = r.Error()
		}
		return r, err // UNSTABLE_OFFSET_COMMIT is retriable: wait for the transaction to end
	})
	if err != nil {
		return nil, t.classify(err, "OffsetFetch of group "+strconv.Quote(group), "DESCRIBE on Group "+strconv.Quote(group))
	}
	out := make([]int64, len(tps))
	var missing []string
	seen := map[string]bool{}
	for i, tp := range tps {
		out[i] = -1
		if o, ok := committed.Lookup(tp.Topic, tp.Partition); ok && o.At >= 0 {
			out[i] = o.At
			continue
		}
		if !seen[tp.Topic] {
			seen[tp.Topic] = true
			missing = append(missing, tp.Topic)
		}
	}
	if len(missing) == 0 {
		return out, nil
	}
	starts, err := withRetry(ctx, func() (kadm.ListedOffsets, error) {
		l, err := t.adm.ListStartOffsets(ctx, missing...)
		if err == nil {
			err = l.Error()
		}
		return l, err
	})
	if err != nil {
		return nil, t.classify(err, "ListOffsets (log start) of the input topics", "DESCRIBE on the input topics")
	}
	for i, tp := range tps {
		if out[i] >= 0 {
			continue
		}
		o, ok := starts.Lookup(tp.Topic, tp.Partition)
		if !ok {
			return nil, coord.WrapError(coord.ErrUnknownTopicOrPartition, nil, "input partition %s: no log start offset listed", tp)
		}
		out[i] = o.Offset
	}
	return out, nil
}

// OpenInput implements coord.InputSource: a kgo consumer client of its own
// (no group), read_committed, assigned the partitions at their offsets, with
// one fetch of at most inputFetchMaxBytes in flight.
func (t *Transport) OpenInput(starts map[coord.TopicPartition]int64) (coord.InputStream, error) {
	if err := t.checkOpen(); err != nil {
		return nil, err
	}
	parts := map[string]map[int32]kgo.Offset{}
	for tp, off := range starts {
		if parts[tp.Topic] == nil {
			parts[tp.Topic] = map[int32]kgo.Offset{}
		}
		parts[tp.Topic][tp.Partition] = kgo.NewOffset().At(off)
	}
	cl, err := kgo.NewClient(append(t.clientOpts("input", ""),
		kgo.ConsumePartitions(parts),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.FetchMaxBytes(inputFetchMaxBytes),
		kgo.FetchMaxPartitionBytes(inputFetchMaxBytes),
		kgo.MaxConcurrentFetches(1),
		kgo.FetchMaxWait(500*time.Millisecond),
	)...)
	if err != nil {
		return nil, coord.WrapError(coord.ErrInvalidConfig, err, "building an input reader")
	}
	return &inputStream{t: t, cl: cl}, nil
}

// inputStream is one input reader (coord.InputStream).
type inputStream struct {
	t  *Transport
	cl *kgo.Client
}

// Poll implements coord.InputStream. Errors a fetch may recover from by
// itself (a leader moving) are logged and polling goes on; others are
// returned classified.
func (s *inputStream) Poll(ctx context.Context, max int) ([]coord.InputRecord, error) {
	for {
		fs := s.cl.PollRecords(ctx, max)
		var out []coord.InputRecord
		fs.EachRecord(func(r *kgo.Record) {
			ir := coord.InputRecord{Topic: r.Topic, Partition: r.Partition, Offset: r.Offset, Key: r.Key, Value: r.Value}
			for _, h := range r.Headers {
				ir.Headers = append(ir.Headers, coord.Header{Key: h.Key, Value: h.Value})
			}
			out = append(out, ir)
		})
		if len(out) > 0 {
			return out, nil
		}
		if err := ctx.Err(); err != nil {
			return nil, coord.WrapError(coord.ErrTimeout, err, "polling the input")
		}
		for _, fe := range fs.Errors() {
			if errors.Is(fe.Err, kgo.ErrClientClosed) {
				return nil, coord.WrapError(coord.ErrInvalidArgument, fe.Err, "polling a closed input")
			}
			if kerr.IsRetriable(fe.Err) || errors.Is(fe.Err, context.Canceled) || errors.Is(fe.Err, context.DeadlineExceeded) {
				s.t.log().Debug("krabka: input fetch", "topic", fe.Topic, "partition", fe.Partition, "error", fe.Err.Error())
				continue
			}
			return nil, s.t.classify(fe.Err, "fetching input partition "+fe.Topic+"/"+strconv.Itoa(int(fe.Partition)), topicACL(fe.Topic, "READ"))
		}
	}
}

// Close implements coord.InputStream.
func (s *inputStream) Close() error {
	go s.cl.Close()
	return nil
}

// TransactOffsets implements coord.OffsetProducer: Transact with the
// offsets of group committed in the same transaction (see above). A fence
// answered to AddOffsetsToTxn or TxnOffsetCommit (PRODUCER_FENCED,
// INVALID_PRODUCER_EPOCH) matches ErrFenced and ends the producer like any
// fence; every other safety step of Transact (one transaction at a time,
// the stamped-token check, the raw EndTxn abort and the own epoch recovery
// after a failure) covers the offsets steps too.
func (p *txnProducer) TransactOffsets(ctx context.Context, group string, offsets []coord.Offset, msgs []coord.Message) ([]coord.ProduceResult, error) {
	return p.run(ctx, msgs, &offsetCommit{group: group, offsets: offsets})
}

// offsetCommit is the offsets a transaction commits.
type offsetCommit struct {
	group   string
	offsets []coord.Offset
}

// txnRetry bounds the retries of a coordinator answer that passes by itself
// (CONCURRENT_TRANSACTIONS right after the previous commit, a coordinator
// loading or moving).
func txnRetry(err error) bool {
	return errors.Is(err, kerr.ConcurrentTransactions) || coordinatorMoving(err) || errors.Is(err, kerr.RebalanceInProgress)
}

// retryTxnStep repeats one raw transactional request while its answer is
// txnRetry, with franz-go's backoff for concurrent transactions, until ctx
// ends.
func retryTxnStep(ctx context.Context, fn func() error) error {
	for i := 0; ; i++ {
		err := fn()
		if err == nil || !txnRetry(err) {
			return err
		}
		d := txnBackoff
		if i > 20 {
			d = 100 * time.Millisecond
		}
		if sleepCtx(ctx, d) != nil {
			return err
		}
	}
}

// addOffsetsToTxn adds the offsets partition of oc's group to the open
// transaction under tok (AddOffsetsToTxn). Errors are classified (a fence:
// ErrFenced through p.fail).
func (p *txnProducer) addOffsetsToTxn(ctx context.Context, tok tokenIDs, oc *offsetCommit) error {
	err := retryTxnStep(ctx, func() error { return addOffsets(ctx, p.cl, p.txnID, tok, oc.group) })
	if err != nil {
		return p.offsetsFail(err, "AddOffsetsToTxn (group "+strconv.Quote(oc.group)+")", oc.group)
	}
	p.offsetsAdded = true
	return nil
}

// offsetsAside starts the TxnOffsetCommit of oc through cl under tok,
// beside the transaction's produce, and returns the wait for its answer
// (classified by offsetsFail; a second call returns nil).
func (p *roleTxn) offsetsAside(ctx context.Context, cl *kgo.Client, tok tokenIDs, oc *offsetCommit) func() error {
	done := make(chan error, 1)
	go func() { done <- txnOffsetCommit(ctx, cl, p.txnID, tok, oc) }()
	return func() error {
		if done == nil {
			return nil
		}
		err := <-done
		done = nil
		if err != nil {
			return p.offsetsFail(err, "TxnOffsetCommit (group "+strconv.Quote(oc.group)+")", oc.group)
		}
		return nil
	}
}

// addOffsets sends one AddOffsetsToTxn of group for txnID under tok through
// cl and returns the coordinator's answer.
func addOffsets(ctx context.Context, cl *kgo.Client, txnID string, tok tokenIDs, group string) error {
	req := kmsg.NewPtrAddOffsetsToTxnRequest()
	req.TransactionalID = txnID
	req.ProducerID = tok.id
	req.ProducerEpoch = tok.epoch
	req.Group = group
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return err
	}
	return kerr.ErrorForCode(resp.ErrorCode)
}

// txnOffsetCommit sends oc's offsets for txnID under tok through cl
// (TxnOffsetCommit, generation -1, no member), retried while the answer
// passes by itself, and returns the answer unclassified.
func txnOffsetCommit(ctx context.Context, cl *kgo.Client, txnID string, tok tokenIDs, oc *offsetCommit) error {
	return retryTxnStep(ctx, func() error {
		req := kmsg.NewPtrTxnOffsetCommitRequest()
		req.TransactionalID = txnID
		req.Group = oc.group
		req.ProducerID = tok.id
		req.ProducerEpoch = tok.epoch
		req.Generation = -1
		req.MemberID = ""
		idx := map[string]int{}
		for _, o := range oc.offsets {
			i, ok := idx[o.Topic]
			if !ok {
				i = len(req.Topics)
				idx[o.Topic] = i
				rt := kmsg.NewTxnOffsetCommitRequestTopic()
				rt.Topic = o.Topic
				req.Topics = append(req.Topics, rt)
			}
			rp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
			rp.Partition = o.Partition
			rp.Offset = o.Offset
			rp.LeaderEpoch = -1
			req.Topics[i].Partitions = append(req.Topics[i].Partitions, rp)
		}
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			return err
		}
		for _, rt := range resp.Topics {
			for _, rp := range rt.Partitions {
				if err := kerr.ErrorForCode(rp.ErrorCode); err != nil {
					if errors.Is(err, kerr.UnknownTopicOrPartition) {
						return coord.WrapError(coord.ErrUnknownTopicOrPartition, err, "TxnOffsetCommit: %s/%d", rt.Topic, rp.Partition)
					}
					return err
				}
			}
		}
		return nil
	})
}

// tokenIDs is a token as the requests carry it.
type tokenIDs struct {
	id    int64
	epoch int16
}
