package kafka

// The reading side of the transport: one-shot reads of a partition (Read),
// and the long-polling fetches of a partition follower (Fetch, StableOffset)
// that core/coord's live view is built on (docs/PROTOCOL.md section 10.1).
//
// Every read is a raw read_uncommitted Fetch request to the partition
// leader, decoded with kgo.ProcessFetchPartition with the control records
// kept: each batch comes with its producer id, its transactional flag and
// the COMMIT/ABORT markers, and core.TxnFolder decides per producer what is
// committed (docs/PROTOCOL.md 12.1). A read_committed reader would see
// nothing past a transaction that another producer left open (a holder of
// another role killed between its renewal's Produce and its EndTxn) until
// the coordinator aborts it; this one sees every transaction that committed
// after it. Followers long-poll on a kgo client of their own, one long poll
// per broker for every followed partition it leads (follow.go): a fetch
// that waits at the broker holds its connection, and Kafka answers the
// requests of one connection in order, so a long poll on a shared
// connection would hold up every other request behind it.

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/krabka/krabka-coord/core"
	"github.com/krabka/krabka-coord/core/coord"
)

// fetched is one answered fetch of one partition.
type fetched struct {
	recs    []core.RawRecord // committed records (read_committed fetches)
	batches []core.Batch     // every batch and marker (read_uncommitted fetches)
	next    int64            // the offset to fetch from next
	// reset: the offset asked for was out of range (below the log start,
	// records deleted; or past the end, topic recreated): next is the log
	// start and recs is empty. A reader folds again from there.
	reset bool
	lso   int64 // the last stable offset the broker reported (-1: unknown)
	hwm   int64 // the high watermark the broker reported (-1: unknown)
}

// fetchOnce sends one read_committed Fetch for partition from offset to the
// partition leader through cl, waiting at most maxWait at the broker for
// data. Retriable errors (a moving leader) are retried while ctx lasts.
func (t *Transport) fetchOnce(ctx context.Context, cl *kgo.Client, partition int32, offset int64, maxWait time.Duration) (fetched, error) {
	return t.fetchMax(ctx, cl, partition, offset, maxWait, 16<<20, true, false)
}

// fetchMax is fetchOnce asking for at most maxBytes of the partition (the
// broker still returns a whole first batch); without retry, a failure that
// fetchOnce would retry (a leader moving or down) is returned at once. A
// committed fetch (read_committed) answers recs; otherwise (read_uncommitted,
// control records kept) it answers batches.
func (t *Transport) fetchMax(ctx context.Context, cl *kgo.Client, partition int32, offset int64, maxWait time.Duration, maxBytes int32, retry, committed bool) (fetched, error) {
	topic := t.cfg.Topic
	readACL := topicACL(topic, "READ")
	for {
		leader, id, err := t.meta(ctx, partition)
		if err != nil {
			if !retry {
				return fetched{}, err
			}
			if rerr := t.retryable(ctx, err, "metadata"); rerr != nil {
				return fetched{}, rerr
			}
			continue
		}
		req := t.fetchRequest(id, maxWait, maxBytes, committed, partOffset{partition, offset})
		kresp, err := cl.Broker(int(leader)).Request(ctx, req)
		if err != nil {
			t.forgetLeaders()
			if !retry {
				return fetched{}, err
			}
			if rerr := t.retryable(ctx, err, "fetch"); rerr != nil {
				return fetched{}, rerr
			}
			continue
		}
		resp := kresp.(*kmsg.FetchResponse)
		if e := kerr.ErrorForCode(resp.ErrorCode); e != nil {
			return fetched{}, t.classify(e, "fetch of "+topic, readACL)
		}
		var got *kmsg.FetchResponseTopicPartition
		for i := range resp.Topics {
			for j := range resp.Topics[i].Partitions {
				if resp.Topics[i].Partitions[j].Partition == partition {
					got = &resp.Topics[i].Partitions[j]
				}
			}
		}
		if got == nil {
			return fetched{}, coord.WrapError(coord.ErrTransport, nil, "fetch response without partition %d", partition)
		}
		if e := kerr.ErrorForCode(got.ErrorCode); e != nil {
			out, again, err := t.partitionError(ctx, e, partition, offset)
			switch {
			case err != nil:
				return fetched{}, err
			case !again:
				return out, nil
			case !retry:
				return fetched{}, e
			case !errors.Is(e, kerr.OffsetOutOfRange):
				if rerr := t.retryable(ctx, e, "fetch"); rerr != nil {
					return fetched{}, rerr
				}
			}
			continue
		}
		return t.decodeFetched(got, offset, committed)
	}
}

// partOffset is one partition of a Fetch and the offset it is read from.
type partOffset struct {
	p      int32
	offset int64
}

// fetchRequest builds a sessionless Fetch of the coordination topic (topic
// id id) from each partition at its offset, answered once a byte is there
// or after maxWait at the broker; read_committed when committed.
func (t *Transport) fetchRequest(id [16]byte, maxWait time.Duration, maxBytes int32, committed bool, parts ...partOffset) *kmsg.FetchRequest {
	req := kmsg.NewPtrFetchRequest()
	req.ReplicaID = -1
	req.MaxWaitMillis = int32(maxWait / time.Millisecond)
	req.MinBytes = 1
	req.MaxBytes = maxBytes
	if committed {
		req.IsolationLevel = 1
	}
	req.SessionID = 0
	req.SessionEpoch = -1
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = t.cfg.Topic
	rt.TopicID = id
	for _, po := range parts {
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition = po.p
		rp.FetchOffset = po.offset
		rp.LogStartOffset = -1
		rp.PartitionMaxBytes = maxBytes
		rp.CurrentLeaderEpoch = -1
		rp.LastFetchedEpoch = -1
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	return req
}

// partitionError handles the error code e of one partition of a Fetch
// asked from offset: a log start past the offset answers the reset (the
// reader folds again from there); a retention race, or a leader moving
// (the cached leaders are forgotten), asks the caller to fetch again
// (again); anything else is returned classified.
func (t *Transport) partitionError(ctx context.Context, e error, partition int32, offset int64) (out fetched, again bool, err error) {
	switch {
	case errors.Is(e, kerr.OffsetOutOfRange):
		start, err := t.listStart(ctx, partition)
		if err != nil {
			return fetched{}, false, err
		}
		if start == offset {
			return fetched{}, true, nil // raced with a retention step; ask again
		}
		return fetched{next: start, reset: true, lso: -1}, false, nil
	case errors.Is(e, kerr.NotLeaderForPartition), errors.Is(e, kerr.UnknownTopicID),
		errors.Is(e, kerr.FencedLeaderEpoch), errors.Is(e, kerr.UnknownLeaderEpoch),
		errors.Is(e, kerr.LeaderNotAvailable), errors.Is(e, kerr.UnknownTopicOrPartition),
		errors.Is(e, kerr.InconsistentTopicID):
		t.forgetLeaders()
		return fetched{}, true, nil
	}
	return fetched{}, false, t.classify(e, "fetch of "+t.cfg.Topic, topicACL(t.cfg.Topic, "READ"))
}

// decodeFetched decodes one partition of a Fetch answer asked from offset:
// committed records (read_committed) or every batch and marker.
func (t *Transport) decodeFetched(got *kmsg.FetchResponseTopicPartition, offset int64, committed bool) (fetched, error) {
	iso := kgo.ReadUncommitted()
	if committed {
		iso = kgo.ReadCommitted()
	}
	fp, next := kgo.ProcessFetchPartition(kgo.ProcessFetchPartitionOpts{
		Offset: offset, IsolationLevel: iso, Topic: t.cfg.Topic, Partition: got.Partition,
		KeepControlRecords: !committed,
	}, got, kgo.DefaultDecompressor(), nil)
	if fp.Err != nil {
		return fetched{}, coord.WrapError(coord.ErrTransport, fp.Err, "decoding a fetch of partition %d", got.Partition)
	}
	out := fetched{next: next, lso: got.LastStableOffset, hwm: got.HighWatermark}
	if next < offset {
		out.next = offset
	}
	t.fetchedTo(got.Partition, out.next)
	if committed {
		for _, r := range fp.Records {
			if !r.Attrs.IsControl() {
				out.recs = append(out.recs, rawRecord(r))
			}
		}
	} else {
		out.batches = batchesOf(fp.Records)
	}
	return out, nil
}

// rawRecord is r as the fold takes it.
func rawRecord(r *kgo.Record) core.RawRecord {
	rec := core.RawRecord{Offset: r.Offset, Key: r.Key, Value: r.Value}
	for _, h := range r.Headers {
		rec.Headers = append(rec.Headers, core.RecordHeader{Key: h.Key, Value: h.Value})
	}
	return rec
}

// batchesOf groups the records of a read_uncommitted fetch (control records
// kept) into runs of one producer, in offset order: each transaction marker
// is a batch of its own.
func batchesOf(recs []*kgo.Record) []core.Batch {
	var out []core.Batch
	for _, r := range recs {
		if r.Attrs.IsControl() {
			ct, ok := controlType(r.Key)
			if !ok {
				continue // a control record of another kind (none is defined today)
			}
			out = append(out, core.Batch{ProducerID: r.ProducerID, Transactional: true, Control: ct})
			continue
		}
		txn := r.Attrs.IsTransactional()
		if n := len(out); n > 0 && out[n-1].Control == core.NotControl &&
			out[n-1].ProducerID == r.ProducerID && out[n-1].Transactional == txn {
			out[n-1].Records = append(out[n-1].Records, rawRecord(r))
			continue
		}
		out = append(out, core.Batch{ProducerID: r.ProducerID, Transactional: txn, Records: []core.RawRecord{rawRecord(r)}})
	}
	return out
}

// controlType decodes a control record's key (i16 version, i16 type: 0
// ABORT, 1 COMMIT).
func controlType(key []byte) (core.ControlType, bool) {
	if len(key) < 4 {
		return core.NotControl, false
	}
	switch int16(key[2])<<8 | int16(key[3]) {
	case 0:
		return core.ControlAbort, true
	case 1:
		return core.ControlCommit, true
	}
	return core.NotControl, false
}

// StableOffset implements coord.Transport for Fetch's readers, which read
// past the last stable offset: the high watermark of the partition, listed
// now (one Fetch, or ListOffsets) without waiting for any marker; the view
// waits for the markers of its own role's transactions itself
// (docs/PROTOCOL.md 12.1).
//
// Calls of one partition share their requests: a call waits for the next
// request of its partition sent after it began (at most one is in flight
// per partition), whose answer holds everything committed before the call.
// A standby that wins 10,000 roles syncs each of them twice; one request
// per call made those 20,000 requests on the admin connection, which the
// broker answers one after the other.
func (t *Transport) StableOffset(ctx context.Context, partition int32) (int64, error) {
	if err := t.checkOpen(); err != nil {
		return 0, err
	}
	t.mu.Lock()
	q := t.hwmQueues[partition]
	if q == nil {
		q = &hwmQueue{}
		t.hwmQueues[partition] = q
	}
	if q.next == nil {
		q.next = &hwmRequest{done: make(chan struct{})}
	}
	r := q.next
	if !q.running {
		q.running = true
		go t.runHWM(partition, q)
	}
	t.mu.Unlock()
	select {
	case <-r.done:
		return r.hwm, r.err
	case <-ctx.Done():
		return 0, coord.WrapError(coord.ErrTimeout, ctx.Err(), "listing the end offset of %s partition %d", t.cfg.Topic, partition)
	}
}

// hwmQueue is the StableOffset requests of one partition (under t.mu).
type hwmQueue struct {
	running bool        // runHWM is sending the requests of the partition
	next    *hwmRequest // the request the calls that began since the last one was sent wait for
}

// hwmRequest is one request of StableOffset, shared by the calls that
// began before it was sent.
type hwmRequest struct {
	done chan struct{} // closed when hwm and err are set
	hwm  int64
	err  error
}

// runHWM sends the partition's requests one after the other while calls
// wait for one, each bounded by request.timeout.ms (a Close fails it at
// once: the admin client is closed).
func (t *Transport) runHWM(partition int32, q *hwmQueue) {
	for {
		t.mu.Lock()
		r := q.next
		q.next = nil
		if r == nil {
			q.running = false
			t.mu.Unlock()
			return
		}
		t.mu.Unlock()
		r.hwm, r.err = t.stableOffset(partition)
		close(r.done)
	}
}

// stableOffset is one request of StableOffset.
func (t *Transport) stableOffset(partition int32) (int64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), t.cfg.RequestTimeout)
	defer cancel()
	if _, hwm, ok := t.stableByFetch(ctx, partition); ok {
		return hwm, nil
	}
	return t.listEnd(ctx, partition)
}

// stableByFetch lists the last stable offset and the high watermark of
// partition with one read_committed Fetch (no wait at the broker, at most
// one batch) from the highest offset a fetch of the partition answered
// before: the answer carries both, where ListOffsets needs one request for
// each (two requests on one connection, which the broker answers one after
// the other). False when no fetch answered before, or this one failed (one
// attempt, no retry) or was out of range: the caller lists them with
// ListOffsets.
func (t *Transport) stableByFetch(ctx context.Context, partition int32) (lso, hwm int64, ok bool) {
	t.mu.Lock()
	off, known := t.fetchNext[partition]
	t.mu.Unlock()
	if !known {
		return 0, 0, false
	}
	// One attempt: a leader that is down or moving sends the caller to
	// ListOffsets with its whole deadline, which rides through it as before.
	// It gets half of request.timeout.ms, so that a broker that does not
	// answer at all leaves the fallback time too.
	fctx, cancel := context.WithTimeout(ctx, t.cfg.RequestTimeout/2)
	defer cancel()
	f, err := t.fetchMax(fctx, t.admin, partition, off, 0, 1, false, false)
	if err == nil && f.reset {
		t.mu.Lock()
		t.fetchNext[partition] = f.next // the log start moved, or the topic was recreated
		t.mu.Unlock()
	}
	if err != nil || f.reset || f.lso < 0 || f.hwm < 0 {
		return 0, 0, false
	}
	return f.lso, f.hwm, true
}

// fetchedTo remembers the highest next offset a fetch of partition answered.
func (t *Transport) fetchedTo(partition int32, next int64) {
	t.mu.Lock()
	if next > t.fetchNext[partition] {
		t.fetchNext[partition] = next
	} else if _, ok := t.fetchNext[partition]; !ok {
		t.fetchNext[partition] = next
	}
	t.mu.Unlock()
}

// Read implements coord.Transport: every committed record from the log
// start to the high watermark listed when the call began, in offset order,
// read past the last stable offset (see the top of this file); a
// transaction still open at the end gets up to markerWait (bounded by
// request.timeout.ms/2) to end, and is left out if it does not.
func (t *Transport) Read(ctx context.Context, partition int32) ([]core.RawRecord, error) {
	if err := t.checkOpen(); err != nil {
		return nil, err
	}
	ctx, cancel := t.bound(ctx)
	defer cancel()
	end, err := t.StableOffset(ctx, partition)
	if err != nil {
		return nil, err
	}
	var out []core.RawRecord
	txns := core.NewTxnFolder(func(r core.RawRecord) { out = append(out, r) })
	offset := int64(0)
	var waitUntil time.Time
	for {
		if offset >= end {
			if txns.Open() == 0 {
				break
			}
			if waitUntil.IsZero() {
				waitUntil = time.Now().Add(min(markerWait, t.cfg.RequestTimeout/2))
			}
			if !time.Now().Before(waitUntil) {
				break
			}
		}
		maxWait := time.Duration(0)
		if offset >= end {
			maxWait = 20 * time.Millisecond // at the end, waiting for a marker
		}
		f, err := t.fetchMax(ctx, t.admin, partition, offset, maxWait, 16<<20, true, false)
		if err != nil {
			return nil, err
		}
		if f.reset {
			if f.next <= offset {
				return nil, coord.WrapError(coord.ErrTransport, kerr.OffsetOutOfRange, "fetch at %d of partition %d", offset, partition)
			}
			out, offset = out[:0], f.next
			txns = core.NewTxnFolder(func(r core.RawRecord) { out = append(out, r) })
			continue
		}
		for _, b := range f.batches {
			txns.Add(b)
		}
		if f.next <= offset && offset < end {
			// No progress below the end listed: retry shortly.
			if err := sleepCtx(ctx, 20*time.Millisecond); err != nil {
				return nil, t.classify(err, fmt.Sprintf("reading partition %d to offset %d (at %d)", partition, end, offset), "")
			}
			continue
		}
		offset = max(offset, f.next)
	}
	// A transaction committed late hands its records on after later ones.
	slices.SortFunc(out, func(a, b core.RawRecord) int { return cmp.Compare(a.Offset, b.Offset) })
	return out, nil
}

// Fetch implements coord.Transport: one long-polling read_uncommitted fetch
// of a followed partition from offset, in the round of the follower of the
// partition's leader (follow.go: one long poll per broker carries every
// followed partition it leads).
func (t *Transport) Fetch(ctx context.Context, partition int32, offset int64, maxWait time.Duration) (coord.Fetched, error) {
	if err := t.checkOpen(); err != nil {
		return coord.Fetched{}, err
	}
	bctx, cancel := context.WithTimeout(ctx, maxWait+t.cfg.RequestTimeout)
	defer cancel()
	f, err := t.followFetch(bctx, partition, offset, maxWait)
	if err != nil {
		if ctx.Err() != nil {
			return coord.Fetched{}, t.classify(ctx.Err(), "fetch", "")
		}
		return coord.Fetched{}, err
	}
	return coord.Fetched{Batches: f.batches, Next: f.next, Reset: f.reset, LastStable: f.lso}, nil
}

// Unfollow implements coord.Transport: the follower of the partition's
// leader stops waiting for it between rounds.
func (t *Transport) Unfollow(partition int32) {
	t.follow.forget(partition)
}

// markerWait bounds how long a read waits for commit markers of
// transactions that ended before it began (see Read).
const markerWait = time.Second

// retryable sleeps briefly when err may pass and ctx has time left;
// otherwise it returns err classified.
func (t *Transport) retryable(ctx context.Context, err error, what string) error {
	if k := coord.ClientErrorKind(err); k != nil && k != coord.ErrTransport {
		return err
	}
	if serr := sleepCtx(ctx, 50*time.Millisecond); serr != nil {
		return t.classify(err, what, "")
	}
	return nil
}

// listOne lists one offset of partition p at the partition's leader (one
// ListOffsets request naming that partition alone, so a broker that leads
// other partitions and is down does not matter): at ts -1 the end (the last
// stable offset when committed, else the high watermark), at ts -2 the log
// start.
func (t *Transport) listOne(ctx context.Context, p int32, ts int64, committed bool) (int64, error) {
	what := "listing offsets of " + t.cfg.Topic
	leader, _, err := t.meta(ctx, p)
	if err != nil {
		return 0, err
	}
	req := kmsg.NewPtrListOffsetsRequest()
	req.ReplicaID = -1
	if committed {
		req.IsolationLevel = 1
	}
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = t.cfg.Topic
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.Partition = p
	rp.Timestamp = ts
	rp.CurrentLeaderEpoch = -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	kresp, err := t.admin.Broker(int(leader)).Request(ctx, req)
	if err != nil {
		t.forgetLeaders()
		return 0, t.classify(err, fmt.Sprintf("%s partition %d at broker %d", what, p, leader), topicACL(t.cfg.Topic, "DESCRIBE"))
	}
	resp := kresp.(*kmsg.ListOffsetsResponse)
	for _, rt := range resp.Topics {
		for _, rp := range rt.Partitions {
			if rp.Partition != p {
				continue
			}
			if e := kerr.ErrorForCode(rp.ErrorCode); e != nil {
				if kerr.IsRetriable(e) {
					t.forgetLeaders()
					return 0, e // withRetry tries again
				}
				return 0, t.classify(e, what, topicACL(t.cfg.Topic, "DESCRIBE"))
			}
			return rp.Offset, nil
		}
	}
	return 0, coord.WrapError(coord.ErrTransport, nil, "no offset listed for partition %d of %s", p, t.cfg.Topic)
}

func (t *Transport) listOffset(ctx context.Context, p int32, committed bool) (int64, error) {
	ts := int64(-1)
	if !committed {
		ts = -2
	}
	v, err := withRetry(ctx, func() (int64, error) { return t.listOne(ctx, p, ts, committed) })
	if err != nil && coord.ClientErrorKind(err) == nil {
		err = t.classify(err, "listing offsets of "+t.cfg.Topic, topicACL(t.cfg.Topic, "DESCRIBE"))
	}
	return v, err
}

func (t *Transport) listStart(ctx context.Context, p int32) (int64, error) {
	return t.listOffset(ctx, p, false)
}

func (t *Transport) listEnd(ctx context.Context, p int32) (int64, error) {
	v, err := withRetry(ctx, func() (int64, error) { return t.listOne(ctx, p, -1, false) })
	if err != nil && coord.ClientErrorKind(err) == nil {
		err = t.classify(err, "listing end offsets of "+t.cfg.Topic, topicACL(t.cfg.Topic, "DESCRIBE"))
	}
	return v, err
}

// TopicRecord is one committed data record of a topic (ReadTopic).
type TopicRecord struct {
	Partition int32
	Offset    int64
	Key       []byte
	Value     []byte
	Headers   []core.RecordHeader
	// Batch is the producer id and epoch of the record's batch, which the
	// broker accepted (-1:-1 for a non-idempotent producer).
	Batch     core.FencingToken
	Timestamp time.Time
}

// ReadTopic reads every committed data record of topic (isolation
// read_committed) from each partition's start up to its last stable offset
// as listed when the call began, and calls each for them in offset order
// within a partition (partitions interleave). It returns each's first error,
// or an error when the topic does not exist or ctx ends before the end is
// reached (never a silently short read). Uses the transport's connection
// settings (TLS, SASL).
func (t *Transport) ReadTopic(ctx context.Context, topic string, each func(TopicRecord) error) error {
	if err := t.checkOpen(); err != nil {
		return err
	}
	ends, err := t.adm.ListCommittedOffsets(ctx, topic)
	if err == nil {
		err = ends.Error()
	}
	if err != nil {
		return t.classify(err, "listing the stable offsets of "+topic, topicACL(topic, "DESCRIBE"))
	}
	end := map[int32]int64{}
	starts := map[int32]kgo.Offset{}
	ends.Each(func(o kadm.ListedOffset) {
		if o.Topic == topic && o.Offset > 0 {
			end[o.Partition] = o.Offset
			starts[o.Partition] = kgo.NewOffset().AtStart()
		}
	})
	if len(end) == 0 {
		if _, ok := ends[topic]; !ok {
			return coord.WrapError(coord.ErrUnknownTopicOrPartition, nil, "topic %s does not exist", topic)
		}
		return nil
	}
	opts := append(t.clientOpts("reader", ""),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: starts}),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.KeepControlRecords(), // every offset below the stable offset is seen: a transactional partition ends in a marker
	)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return coord.WrapError(coord.ErrInvalidConfig, err, "building the reader of %s", topic)
	}
	defer cl.Close()
	next := map[int32]int64{}
	remaining := len(end)
	for remaining > 0 {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			return t.classify(ctx.Err(), fmt.Sprintf("reading %s (at %v of the stable offsets %v)", topic, next, end), "")
		}
		var ferr error
		fs.EachError(func(_ string, p int32, err error) {
			if ferr == nil {
				ferr = t.classify(err, fmt.Sprintf("fetch of %s/%d", topic, p), topicACL(topic, "READ"))
			}
		})
		if ferr != nil {
			return ferr
		}
		fs.EachRecord(func(r *kgo.Record) {
			stop, ok := end[r.Partition]
			if ferr != nil || !ok || r.Offset >= stop || r.Offset < next[r.Partition] {
				return
			}
			next[r.Partition] = r.Offset + 1
			if next[r.Partition] == stop {
				remaining--
			}
			if r.Attrs.IsControl() {
				return
			}
			tr := TopicRecord{Partition: r.Partition, Offset: r.Offset, Key: r.Key, Value: r.Value, Timestamp: r.Timestamp,
				Batch: core.FencingToken{ProducerID: r.ProducerID, ProducerEpoch: r.ProducerEpoch}}
			for _, h := range r.Headers {
				tr.Headers = append(tr.Headers, core.RecordHeader{Key: h.Key, Value: h.Value})
			}
			ferr = each(tr)
		})
		if ferr != nil {
			return ferr
		}
	}
	return nil
}
