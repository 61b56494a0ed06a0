package coord

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"

	"github.com/krabka/krabka-coord/core"
)

// Exactly-once pipelines under the leader's token (docs/PIPELINES.md).
//
// A leadership reads input partitions read_committed from the offsets
// committed for its role (Consume), and a guarded write carries the offsets
// it consumed (ProduceOffsets): the commands and the offsets commit in one
// transaction of the role's transactional producer, under the same producer
// epoch (the token). A deposed leader's offset commit is refused by the
// broker together with its writes, so the successor resumes exactly after
// the last request whose commands were committed.
//
// The offsets are committed for the consumer group PipelineGroup(role)
// without group membership (generation -1, no member id): the transactional
// id's epoch fences them.

// TopicPartition names one partition of a topic.
type TopicPartition struct {
	Topic     string
	Partition int32
}

// String reads "topic/partition".
func (tp TopicPartition) String() string { return fmt.Sprintf("%s/%d", tp.Topic, tp.Partition) }

// InputRecord is one record read under a term (read_committed).
type InputRecord struct {
	Topic     string
	Partition int32
	Offset    int64
	Key       []byte
	Value     []byte
	Headers   []Header
}

// Offset says where consumption of one partition continues: the offset of
// the next record to read (the last consumed offset + 1), as Kafka commits
// it.
type Offset struct {
	Topic     string
	Partition int32
	Offset    int64
}

// InputSource is implemented by transports that can read input topics for a
// pipeline (core/kafka, core/memtransport). Every method blocks for at most
// the lifetime of ctx; errors wrap the sentinels of errors_client.go.
type InputSource interface {
	// InputPartitions returns the partition count of topic from the
	// cluster's metadata. A topic that does not exist is
	// ErrUnknownTopicOrPartition naming it (it is never created).
	InputPartitions(ctx context.Context, topic string) (int32, error)
	// StartOffsets returns, for each of tps in order, the offset committed
	// for group, or the partition's log start offset where group has none.
	StartOffsets(ctx context.Context, group string, tps []TopicPartition) ([]int64, error)
	// OpenInput starts reading the partitions of starts, each from its
	// offset, read_committed (records of aborted transactions and control
	// records left out). Never blocks.
	OpenInput(starts map[TopicPartition]int64) (InputStream, error)
}

// InputStream is one reader of input partitions (InputSource.OpenInput).
// Its methods are called by one goroutine at a time.
type InputStream interface {
	// Poll blocks until at least one record is there and returns up to max
	// of them, each partition's in offset order, or until ctx ends.
	Poll(ctx context.Context, max int) ([]InputRecord, error)
	// Close releases the reader. Never blocks for long.
	Close() error
}

// OffsetProducer is implemented by TxnProducers that can commit consumed
// offsets in their transaction (AddOffsetsToTxn and TxnOffsetCommit on
// Kafka).
type OffsetProducer interface {
	// TransactOffsets is Transact carrying offsets: msgs (possibly none) and
	// offsets (at least one) of group commit in one transaction or not at
	// all. Errors as Transact: a fence on any step matches ErrFenced.
	TransactOffsets(ctx context.Context, group string, offsets []Offset, msgs []Message) ([]ProduceResult, error)
}

// PipelineGroup returns the consumer group id under which role's consumed
// offsets are committed: the role's transactional id (TransactionalID)
// followed by ".pipeline". No member ever joins the group.
func (c *Client) PipelineGroup(role core.Role) string {
	return pipelineGroup(c.TransactionalID(role))
}

func pipelineGroup(txnID string) string { return txnID + ".pipeline" }

// pipeState is a leadership's view of its inputs (under mu).
type pipeState struct {
	mu sync.Mutex
	// read holds the partitions an Input of this leadership read, with the
	// highest position reached over its inputs.
	read map[TopicPartition]int64
	// committed holds the offsets known committed for the group: where an
	// input started, raised by every transaction of this leadership that
	// committed offsets.
	committed map[TopicPartition]int64
	// topics holds the partition counts of the topics consumed.
	topics map[string]int32
}

func (s *pipeState) init() {
	if s.read == nil {
		s.read, s.committed, s.topics = map[TopicPartition]int64{}, map[TopicPartition]int64{}, map[string]int32{}
	}
}

// Input reads the partitions of its topics under one leadership
// (Leadership.Consume). Poll is for one goroutine at a time; Position,
// Committed and Close may be called from any.
type Input struct {
	l      *Leadership
	stream InputStream
	tps    []TopicPartition
	stop   func() bool

	pollMu sync.Mutex

	mu     sync.Mutex
	pos    map[TopicPartition]int64
	closed bool
}

func (l *Leadership) inputSource() (InputSource, error) {
	src, ok := l.c.t.(InputSource)
	if !ok {
		return nil, WrapError(ErrUnsupported, nil, "the transport cannot read input topics")
	}
	return src, nil
}

// Consume starts reading topics (every partition of each) read_committed,
// from the offsets committed for the role under PipelineGroup (partitions
// with none start at the log start). A topic that does not exist is
// ErrUnknownTopicOrPartition naming it; an illegal or repeated topic name,
// or none, is ErrInvalidArgument. Blocks for the metadata and offset
// requests, until ctx ends at most; an ended leadership returns its error.
func (l *Leadership) Consume(ctx context.Context, topics ...string) (*Input, error) {
	if len(topics) == 0 {
		return nil, WrapError(ErrInvalidArgument, nil, "consume: no topic given")
	}
	seen := map[string]bool{}
	for _, t := range topics {
		if !validTopicName(t) {
			return nil, WrapError(ErrInvalidArgument, nil, "consume: topic %q is not a legal topic name", t)
		}
		if seen[t] {
			return nil, WrapError(ErrInvalidArgument, nil, "consume: topic %q given twice", t)
		}
		seen[t] = true
	}
	if err := l.Err(); err != nil {
		return nil, err
	}
	src, err := l.inputSource()
	if err != nil {
		return nil, err
	}
	cctx, cancel := l.c.callCtx(ctx)
	defer cancel()
	stopBg := context.AfterFunc(l.bg, cancel)
	defer stopBg()
	var tps []TopicPartition
	counts := map[string]int32{}
	for _, t := range topics {
		n, err := src.InputPartitions(cctx, t)
		if err != nil {
			return nil, l.inputErr(ctx, err)
		}
		counts[t] = n
		for p := int32(0); p < n; p++ {
			tps = append(tps, TopicPartition{t, p})
		}
	}
	offs, err := src.StartOffsets(cctx, pipelineGroup(l.role.txnID()), tps)
	if err != nil {
		return nil, l.inputErr(ctx, err)
	}
	if len(offs) != len(tps) {
		return nil, WrapError(ErrTransport, nil, "consume: %d start offsets for %d partitions", len(offs), len(tps))
	}
	s := &l.pipe
	s.mu.Lock()
	s.init()
	starts := make(map[TopicPartition]int64, len(tps))
	for i, tp := range tps {
		// This leadership may have committed more than the answer shows
		// (a transaction committed while the request was on its way).
		off := offs[i]
		if c, ok := s.committed[tp]; ok && c > off {
			off = c
		}
		starts[tp] = off
		s.committed[tp] = off
		if r, ok := s.read[tp]; !ok || r < off {
			s.read[tp] = off
		}
	}
	for t, n := range counts {
		s.topics[t] = n
	}
	s.mu.Unlock()
	stream, err := src.OpenInput(starts)
	if err != nil {
		return nil, l.inputErr(ctx, err)
	}
	in := &Input{l: l, stream: stream, tps: tps, pos: starts}
	in.stop = context.AfterFunc(l.bg, func() { in.Close() })
	if l.Err() != nil {
		in.Close()
		return nil, l.Err()
	}
	return in, nil
}

// inputErr is the error a caller of an input call sees: the leadership's
// when it ended meanwhile.
func (l *Leadership) inputErr(ctx context.Context, err error) error {
	if e := l.Err(); e != nil {
		return e
	}
	return l.c.fail(ctx, err)
}

// Poll blocks until at least one record is there and returns up to max
// records (max < 1: 500), each partition's in offset order; or until ctx
// ends (ErrTimeout) or the leadership ends (its error: ErrFenced,
// ErrLeaseExpired, ErrNotLeader, ErrClosed). A closed Input is
// ErrInvalidArgument. The position of every partition returned moves past
// its last record.
func (in *Input) Poll(ctx context.Context, max int) ([]InputRecord, error) {
	if max < 1 {
		max = 500
	}
	if ctx == nil {
		ctx = context.Background()
	}
	l := in.l
	if err := l.Err(); err != nil {
		return nil, err
	}
	in.pollMu.Lock()
	defer in.pollMu.Unlock()
	in.mu.Lock()
	closed := in.closed
	in.mu.Unlock()
	if closed {
		return nil, WrapError(ErrInvalidArgument, nil, "poll on a closed input")
	}
	cctx, cancel := l.c.callCtx(ctx)
	defer cancel()
	stopBg := context.AfterFunc(l.bg, cancel)
	defer stopBg()
	recs, err := in.stream.Poll(cctx, max)
	if err != nil {
		if e := l.Err(); e != nil {
			return nil, e
		}
		if ctx.Err() != nil && !errors.Is(err, ErrTimeout) {
			err = WrapError(ErrTimeout, err, "poll")
		}
		return nil, l.c.fail(ctx, err)
	}
	in.mu.Lock()
	for _, r := range recs {
		in.pos[TopicPartition{r.Topic, r.Partition}] = r.Offset + 1
	}
	in.mu.Unlock()
	s := &l.pipe
	s.mu.Lock()
	for _, r := range recs {
		tp := TopicPartition{r.Topic, r.Partition}
		if s.read[tp] < r.Offset+1 {
			s.read[tp] = r.Offset + 1
		}
	}
	s.mu.Unlock()
	return recs, nil
}

// Position returns, per partition of the input, the offset of the next
// record it will read, sorted by topic and partition. Never blocks.
func (in *Input) Position() []Offset {
	in.mu.Lock()
	defer in.mu.Unlock()
	return offsetsOf(in.tps, in.pos)
}

// Committed returns, per partition of the input, the offset committed for
// the role: the one the input started from, raised by every transaction of
// this leadership that committed offsets. Sorted by topic and partition.
// Never blocks.
func (in *Input) Committed() []Offset {
	s := &in.l.pipe
	s.mu.Lock()
	defer s.mu.Unlock()
	return offsetsOf(in.tps, s.committed)
}

func offsetsOf(tps []TopicPartition, m map[TopicPartition]int64) []Offset {
	out := make([]Offset, 0, len(tps))
	for _, tp := range tps {
		out = append(out, Offset{tp.Topic, tp.Partition, m[tp]})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Topic != out[j].Topic {
			return out[i].Topic < out[j].Topic
		}
		return out[i].Partition < out[j].Partition
	})
	return out
}

// Close stops reading. Idempotent; the leadership's end closes its inputs.
// Offsets of the partitions it read can still be committed by
// ProduceOffsets while the leadership lasts.
func (in *Input) Close() error {
	in.mu.Lock()
	if in.closed {
		in.mu.Unlock()
		return nil
	}
	in.closed = true
	in.mu.Unlock()
	if in.stop != nil {
		in.stop()
	}
	return in.stream.Close()
}

// ProduceOffsets is Produce carrying consumed offsets: msgs and offsets
// commit in one transaction under the leadership's token, for the group
// PipelineGroup, or not at all. Concurrent callers are committed together
// (group commit): their offsets merge per partition, the highest wins, and
// an offset at or below what is already committed is left out.
//
// Bad input is refused before anything is written, failing this call only:
// ErrUnknownTopicOrPartition for an offset of a topic or partition that does
// not exist; ErrInvalidArgument for an offset of a partition no Input of
// this leadership read, one below the offset committed (backwards), one
// beyond what this leadership read (its position), a partition given twice,
// or a message that Produce refuses. No messages with offsets is allowed
// (an offsets-only transaction). Errors and blocking as Produce; a
// transport that cannot commit offsets is ErrUnsupported.
func (l *Leadership) ProduceOffsets(ctx context.Context, offsets []Offset, msgs ...Message) ([]ProduceResult, error) {
	return l.write(ctx, offsets, msgs)
}

// checkOffsets validates offsets against what this leadership read and
// committed and returns a copy.
func (l *Leadership) checkOffsets(ctx context.Context, offsets []Offset) ([]Offset, error) {
	s := &l.pipe
	type bad struct {
		tp   TopicPartition
		kind error
		msg  string
	}
	var unknownTopics []string
	check := func() *bad {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.init()
		seen := map[TopicPartition]bool{}
		for i, o := range offsets {
			tp := TopicPartition{o.Topic, o.Partition}
			if !validTopicName(o.Topic) {
				return &bad{tp, ErrInvalidArgument, fmt.Sprintf("offset %d: topic %q is not a legal topic name", i, o.Topic)}
			}
			if o.Partition < 0 || o.Offset < 0 {
				return &bad{tp, ErrInvalidArgument, fmt.Sprintf("offset %d: partition %d, offset %d of %q: both must be 0 or more", i, o.Partition, o.Offset, o.Topic)}
			}
			if seen[tp] {
				return &bad{tp, ErrInvalidArgument, fmt.Sprintf("offset %d: partition %s given twice", i, tp)}
			}
			seen[tp] = true
			pos, read := s.read[tp]
			if !read {
				n, consumed := s.topics[o.Topic]
				switch {
				case consumed && o.Partition >= n:
					return &bad{tp, ErrUnknownTopicOrPartition, fmt.Sprintf("offset %d: partition %d of %q does not exist (%d partitions)", i, o.Partition, o.Topic, n)}
				case consumed:
					return &bad{tp, ErrInvalidArgument, fmt.Sprintf("offset %d: partition %s was not read by this leadership", i, tp)}
				}
				unknownTopics = append(unknownTopics, o.Topic)
				return &bad{tp, ErrInvalidArgument, fmt.Sprintf("offset %d: topic %q was not read by this leadership", i, o.Topic)}
			}
			if c := s.committed[tp]; o.Offset < c {
				return &bad{tp, ErrInvalidArgument, fmt.Sprintf("offset %d: %d for %s goes backwards: %d is committed", i, o.Offset, tp, c)}
			}
			if o.Offset > pos {
				return &bad{tp, ErrInvalidArgument, fmt.Sprintf("offset %d: %d for %s is beyond what this leadership read (position %d)", i, o.Offset, tp, pos)}
			}
		}
		return nil
	}
	b := check()
	if b == nil {
		return append([]Offset(nil), offsets...), nil
	}
	if len(unknownTopics) > 0 {
		// A topic no input read: say whether it exists at all.
		if src, err := l.inputSource(); err == nil {
			cctx, cancel := l.c.callCtx(ctx)
			_, perr := src.InputPartitions(cctx, unknownTopics[0])
			cancel()
			if errors.Is(perr, ErrUnknownTopicOrPartition) {
				return nil, WrapError(ErrUnknownTopicOrPartition, nil, "%s; it does not exist", b.msg)
			}
		}
	}
	return nil, WrapError(b.kind, nil, "%s", b.msg)
}

// mergeOffsets merges the offsets of a group transaction's calls per
// partition (the highest wins) and leaves out those at or below what is
// committed; sorted by topic and partition.
func (l *Leadership) mergeOffsets(batch []*produceCall) []Offset {
	m := map[TopicPartition]int64{}
	var tps []TopicPartition
	s := &l.pipe
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range batch {
		for _, o := range c.offsets {
			tp := TopicPartition{o.Topic, o.Partition}
			if cur, ok := s.committed[tp]; ok && o.Offset <= cur {
				continue
			}
			if cur, ok := m[tp]; !ok {
				tps = append(tps, tp)
			} else if cur >= o.Offset {
				continue
			}
			m[tp] = o.Offset
		}
	}
	return offsetsOf(tps, m)
}

// committedOffsets records offsets a transaction of this leadership
// committed.
func (l *Leadership) committedOffsets(offs []Offset) {
	s := &l.pipe
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, o := range offs {
		tp := TopicPartition{o.Topic, o.Partition}
		if s.committed[tp] < o.Offset {
			s.committed[tp] = o.Offset
		}
	}
}
