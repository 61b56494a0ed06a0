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
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/krabka/krabka-coord/core/coord"
)

// Pipelines (docs/PIPELINES.md): reading input topics read_committed from
// the offsets committed for the role's group, and committing consumed
// offsets inside the role's transaction.
//
// On the wire, a transaction carrying offsets is the consume-transform-
// produce transaction of Kafka's transactional producers, in one of two
// forms:
//
//   - classic (transaction.version 1 clusters, and every transaction
//     without records): BeginTransaction, AddOffsetsToTxn (transactional
//     id, producer id and epoch, group) to the transaction coordinator,
//     TxnOffsetCommit version 4 (group, transactional id, producer id and
//     epoch, generation -1, no member id: no group membership; the group
//     coordinator checks the producer epoch) to the group coordinator, the
//     records produced (AddPartitionsToTxn, Produce), then EndTxn (sent raw
//     when there are no records);
//   - implicit (transactions with records, on clusters whose finalized
//     transaction.version is 2 and whose brokers take TxnOffsetCommit
//     version 5, KIP-890 part 2): the records first (AddPartitionsToTxn,
//     Produce), then TxnOffsetCommit version 5, with which the group
//     coordinator adds the offsets partition to the transaction itself (an
//     AddPartitionsToTxn of its own to the transaction coordinator, checked
//     against the producer id and epoch like the client's), then EndTxn: no
//     AddOffsetsToTxn, one round trip to the transaction coordinator fewer
//     per transaction. Kafka's own producer skips AddOffsetsToTxn the same
//     way under transaction version 2 (TransactionManager.sendOffsetsToTransaction).
//
// Either way the transaction itself stays a version-1 transaction (EndTxn is
// capped at 4, see transport.go): the coordinator ends it without bumping
// the epoch, so the token stays one epoch per InitProducerId. That is why
// the implicit TxnOffsetCommit must come after the records and never opens
// a transaction. The broker decides whether to add the offsets partition
// from the partition's producer state: a transaction of this producer id
// and epoch still open there (UnifiedLog.hasOngoingTransaction) counts as
// the current one, and no add is sent. Under transaction version 2 proper
// the epoch rises at every EndTxn, so the next transaction never matches
// the previous one; here it has the same epoch, and the previous
// transaction's commit marker may still be on its way to
// __consumer_offsets when its EndTxn has been answered (the markers are
// written after the answer). A TxnOffsetCommit version 5 sent first would
// then be appended without being added to the new transaction: refused
// (INVALID_TXN_STATE, measured: issue 38), or, with the marker landing
// after it, committed with the previous transaction. After the records it
// is safe: the transaction coordinator accepted the records'
// AddPartitionsToTxn, which it answers CONCURRENT_TRANSACTIONS until every
// marker of the previous transaction is written, so nothing of this
// producer is open on the offsets partition any more. AddOffsetsToTxn waits
// in the same way, which keeps the classic form safe in any order.
//
// The producer's kgo client may send TxnOffsetCommit up to version 5
// (producerVersions); the classic form's version 4 is sent through the
// transport's admin client, which is capped at 4 like every other client
// (Versions).

var (
	_ coord.InputSource    = (*Transport)(nil)
	_ coord.OffsetProducer = (*txnProducer)(nil)
)

// MaxTxnOffsetCommitVersion is the TxnOffsetCommit request version of the
// classic form (see above), and the cap of every client of this package
// but the transactional producers (Versions).
const MaxTxnOffsetCommitVersion = 4

// implicitTxnOffsetCommitVersion is the TxnOffsetCommit request version of
// the implicit form (see above): the first that adds the offsets partition
// to the transaction by itself.
const implicitTxnOffsetCommitVersion = 5

// producerVersions are the request versions of a transactional producer's
// kgo client: Versions with TxnOffsetCommit allowed up to version 5. EndTxn
// stays capped at 4, so franz-go itself never switches to KIP-890 part 2
// (it needs EndTxn 5 and produce 12 as well).
func producerVersions() *kversion.Versions {
	v := Versions()
	v.SetMaxKeyVersion(kmsg.TxnOffsetCommit.Int16(), implicitTxnOffsetCommitVersion)
	return v
}

// offsetsForm overrides how transactions carry offsets (tests and
// benchmarks compare the forms on one cluster; the zero value is what the
// library does).
type offsetsForm struct {
	// classic: always AddOffsetsToTxn and TxnOffsetCommit version 4, also
	// on a cluster that allows the implicit form.
	classic bool
	// overlap: in the classic form, TxnOffsetCommit beside the records'
	// produce (after AddOffsetsToTxn) instead of before it. The implicit
	// form never overlaps (see above).
	overlap bool
}

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
	// A topic the metadata does not know is asked for again for a second
	// (a topic just created may not have reached every broker), not until
	// ctx ends: a missing topic is an answer, not a transient failure.
	unknownUntil := time.Now().Add(time.Second)
	n, err := withRetry(ctx, func() (int32, error) {
		tds, err := t.adm.ListTopics(ctx, topic)
		if err != nil {
			return 0, err
		}
		td, ok := tds[topic]
		if !ok {
			td.Err = kerr.UnknownTopicOrPartition
		}
		if errors.Is(td.Err, kerr.UnknownTopicOrPartition) && time.Now().After(unknownUntil) {
			return 0, errUnknownTopic
		}
		if td.Err != nil {
			return 0, td.Err
		}
		return int32(len(td.Partitions)), nil
	})
	switch {
	case errors.Is(err, errUnknownTopic), errors.Is(err, kerr.UnknownTopicOrPartition):
		return 0, coord.WrapError(coord.ErrUnknownTopicOrPartition, err, "input topic %q does not exist", topic)
	case err != nil:
		return 0, t.classify(err, what, topicACL(topic, "DESCRIBE"))
	}
	return n, nil
}

// errUnknownTopic: the metadata kept answering that the topic does not
// exist (not retriable, unlike kerr.UnknownTopicOrPartition).
var errUnknownTopic = errors.New("UNKNOWN_TOPIC_OR_PARTITION: the topic does not exist")

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
// txnRetry, until ctx ends. The first backoff is txnBackoff (the state
// usually lasts until the previous transaction's markers are written,
// about a millisecond on a quiet broker); each retry doubles it, up to
// txnBackoffMax. A fixed 500 µs for the first second was a retry storm on
// a loaded broker: with 1,024 group shards, whose markers took tens of
// milliseconds, a member sent several AddPartitionsToTxn per transaction,
// which loaded the broker further (docs/GROUPS.md).
func retryTxnStep(ctx context.Context, fn func() error) error {
	return retryTxnStepWith(ctx, fn, sleepCtx)
}

// retryTxnStepWith is retryTxnStep waiting with sleep (a test records the
// waits).
func retryTxnStepWith(ctx context.Context, fn func() error, sleep func(context.Context, time.Duration) error) error {
	d := txnBackoff
	for {
		err := fn()
		if err == nil || !txnRetry(err) {
			return err
		}
		if sleep(ctx, d) != nil {
			return err
		}
		d = min(2*d, txnBackoffMax)
	}
}

// txnBackoffMax bounds retryTxnStep's backoff.
const txnBackoffMax = 50 * time.Millisecond

// addOffsetsToTxn adds the offsets partition of oc's group to the open
// transaction under tok (AddOffsetsToTxn through cl, the producer's client
// or an engine plane). Errors are classified (a fence: ErrFenced through
// p.fail).
func (p *roleTxn) addOffsetsToTxn(ctx context.Context, cl *kgo.Client, tok tokenIDs, oc *offsetCommit) error {
	err := retryTxnStep(ctx, func() error { return addOffsets(ctx, cl, p.txnID, tok, oc.group) })
	if err != nil {
		return p.offsetsFail(err, "AddOffsetsToTxn (group "+strconv.Quote(oc.group)+")", oc.group)
	}
	p.offsetsAdded = true
	return nil
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

// implicitOffsets reports whether this producer's transactions carry their
// offsets in the implicit form (see above): the cluster's finalized
// transaction.version is 2 or more and its brokers take TxnOffsetCommit
// version 5. The producer asks once (ApiVersions through cl, its own client
// or its engine plane,
// bounded by ctx); an ask that fails means the classic form for this
// transaction, and the next transaction asks again. A cluster whose
// transaction version changes later is seen by the next term's producer.
func (p *roleTxn) implicitOffsets(ctx context.Context, cl *kgo.Client) bool {
	if p.t.offsetsForm.classic {
		return false
	}
	if p.offsetsImplicit != 0 {
		return p.offsetsImplicit > 0
	}
	req := kmsg.NewPtrApiVersionsRequest()
	req.ClientSoftwareName, req.ClientSoftwareVersion = "krabka-coord", "1"
	resp, err := req.RequestWith(ctx, cl)
	if err == nil {
		err = kerr.ErrorForCode(resp.ErrorCode)
	}
	if err != nil {
		p.t.log().Debug("krabka: ApiVersions for the offsets form (classic this time)", "transactional_id", p.txnID, "error", err.Error())
		return false
	}
	tv, v5 := int16(0), false
	for _, f := range resp.FinalizedFeatures {
		if f.Name == "transaction.version" {
			tv = f.MaxVersionLevel
		}
	}
	for _, k := range resp.ApiKeys {
		if k.ApiKey == kmsg.TxnOffsetCommit.Int16() && k.MaxVersion >= implicitTxnOffsetCommitVersion {
			v5 = true
		}
	}
	p.offsetsImplicit = -1
	if tv >= 2 && v5 {
		p.offsetsImplicit = 1
	}
	return p.offsetsImplicit > 0
}

// txnOffsetCommit sends oc's offsets to the group coordinator under tok
// (TxnOffsetCommit) and returns the answer unclassified (classify it with
// offsetsFail). implicit: version 5 through the producer's client, which
// adds the offsets partition to the transaction (no AddOffsetsToTxn
// before); otherwise version 4 through the admin client, after
// addOffsetsToTxn. A group coordinator that answers an implicit commit
// below version 5 did not add the partition: that is an error (the
// producer then uses the classic form). cl is the client of the implicit
// form (the producer's own, or its engine plane: either may send version 5).
func (p *roleTxn) txnOffsetCommit(ctx context.Context, cl *kgo.Client, tok tokenIDs, oc *offsetCommit, implicit bool) error {
	if !implicit {
		cl = p.t.admin
	}
	txnID := p.txnID
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
		if implicit && resp.GetVersion() < implicitTxnOffsetCommitVersion {
			p.offsetsImplicit = -1
			return coord.WrapError(coord.ErrTransport, nil, "TxnOffsetCommit of group %q was answered at version %d, which does not add the offsets partition to the transaction; aborted, retry (the next transaction sends AddOffsetsToTxn)", oc.group, resp.GetVersion())
		}
		return nil
	})
}

// offsetsBefore runs the offsets steps of the classic form that come
// before the records: AddOffsetsToTxn, then TxnOffsetCommit version 4
// unless overlap (transact then sends it beside the produce). The error is
// classified.
func (p *roleTxn) offsetsBefore(ctx context.Context, cl *kgo.Client, tok tokenIDs, oc *offsetCommit, overlap bool) error {
	if err := p.addOffsetsToTxn(ctx, cl, tok, oc); err != nil {
		return err
	}
	if overlap {
		return nil
	}
	return p.commitOffsets(ctx, cl, tok, oc, false)
}

// commitOffsets is txnOffsetCommit with its error classified.
func (p *roleTxn) commitOffsets(ctx context.Context, cl *kgo.Client, tok tokenIDs, oc *offsetCommit, implicit bool) error {
	if err := p.txnOffsetCommit(ctx, cl, tok, oc, implicit); err != nil {
		return p.offsetsFail(err, "TxnOffsetCommit (group "+strconv.Quote(oc.group)+")", oc.group)
	}
	return nil
}

// tokenIDs is a token as the requests carry it.
type tokenIDs struct {
	id    int64
	epoch int16
}
