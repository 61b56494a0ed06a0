package memtransport

import (
	"context"
	"sort"
	"sync"

	"github.com/krabka/krabka-coord/core/coord"
)

// Pipelines (coord.InputSource, coord.OffsetProducer): input topics are the
// cluster's topics, read committed up to the last stable offset, and the
// consumer group offsets live beside the logs, committed atomically with a
// transaction's records under the producer's token.

var (
	_ coord.InputSource    = (*Transport)(nil)
	_ coord.OffsetProducer = (*producer)(nil)
)

// CreateTopic creates topic with the given number of partitions (nothing
// when it exists). Input topics must exist before a leadership consumes
// them; topics written by guarded writes are created on first write with
// the cluster's partition count.
func (c *Cluster) CreateTopic(topic string, partitions int32) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.logs[topic]; !ok {
		c.logs[topic] = make([][]record, partitions)
	}
}

// GroupOffsets returns the offsets committed for group, sorted by topic and
// partition.
func (c *Cluster) GroupOffsets(group string) []coord.Offset {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []coord.Offset
	for tp, off := range c.groupOffsets[group] {
		out = append(out, coord.Offset{Topic: tp.Topic, Partition: tp.Partition, Offset: off})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Topic != out[j].Topic {
			return out[i].Topic < out[j].Topic
		}
		return out[i].Partition < out[j].Partition
	})
	return out
}

// InputPartitions implements coord.InputSource.
func (t *Transport) InputPartitions(ctx context.Context, topic string) (int32, error) {
	if err := t.check(ctx); err != nil {
		return 0, err
	}
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	l, ok := t.c.logs[topic]
	if !ok {
		return 0, coord.WrapError(coord.ErrUnknownTopicOrPartition, nil, "topic %q does not exist", topic)
	}
	return int32(len(l)), nil
}

// StartOffsets implements coord.InputSource (the log start is 0).
func (t *Transport) StartOffsets(ctx context.Context, group string, tps []coord.TopicPartition) ([]int64, error) {
	if err := t.check(ctx); err != nil {
		return nil, err
	}
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	out := make([]int64, len(tps))
	for i, tp := range tps {
		out[i] = t.c.groupOffsets[group][tp]
	}
	return out, nil
}

// OpenInput implements coord.InputSource.
func (t *Transport) OpenInput(starts map[coord.TopicPartition]int64) (coord.InputStream, error) {
	s := &inputStream{t: t, pos: map[coord.TopicPartition]int64{}}
	for tp, off := range starts {
		s.tps = append(s.tps, tp)
		s.pos[tp] = off
	}
	sort.Slice(s.tps, func(i, j int) bool {
		if s.tps[i].Topic != s.tps[j].Topic {
			return s.tps[i].Topic < s.tps[j].Topic
		}
		return s.tps[i].Partition < s.tps[j].Partition
	})
	return s, nil
}

type inputStream struct {
	t   *Transport
	tps []coord.TopicPartition
	pos map[coord.TopicPartition]int64

	mu     sync.Mutex
	closed bool
	next   int // the partition to start the next poll at (round robin)
}

// Poll implements coord.InputStream: committed records up to each
// partition's last stable offset.
func (s *inputStream) Poll(ctx context.Context, max int) ([]coord.InputRecord, error) {
	c := s.t.c
	for {
		if err := s.t.check(ctx); err != nil {
			return nil, err
		}
		s.mu.Lock()
		closed := s.closed
		s.mu.Unlock()
		if closed {
			return nil, coord.WrapError(coord.ErrInvalidArgument, nil, "memtransport: input closed")
		}
		var out []coord.InputRecord
		c.mu.Lock()
		changed := c.changed
		for k := 0; k < len(s.tps) && len(out) < max; k++ {
			tp := s.tps[(s.next+k)%len(s.tps)]
			l := c.log(tp.Topic, c.partitions)
			if int(tp.Partition) >= len(l) {
				continue
			}
			stable := c.stableLocked(tp.Topic, tp.Partition)
			for off := s.pos[tp]; off < stable && len(out) < max; off++ {
				r := l[tp.Partition][off]
				s.pos[tp] = off + 1
				if !r.committed() {
					continue
				}
				var hs []coord.Header
				for _, h := range r.headers {
					hs = append(hs, coord.Header{Key: h.Key, Value: clone(h.Value)})
				}
				out = append(out, coord.InputRecord{Topic: tp.Topic, Partition: tp.Partition, Offset: r.offset,
					Key: clone(r.key), Value: clone(r.value), Headers: hs})
			}
		}
		c.mu.Unlock()
		if len(s.tps) > 0 {
			s.next = (s.next + 1) % len(s.tps)
		}
		if len(out) > 0 {
			return out, nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return nil, coord.WrapError(coord.ErrTimeout, ctx.Err(), "memtransport: poll")
		}
	}
}

// Close implements coord.InputStream.
func (s *inputStream) Close() error {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	return nil
}

// TransactOffsets implements coord.OffsetProducer (and Transact, without
// offsets): msgs and offsets commit together if the token is still the
// coordinator's and every topic of offsets exists.
func (p *producer) TransactOffsets(ctx context.Context, group string, offsets []coord.Offset, msgs []coord.Message) ([]coord.ProduceResult, error) {
	if err := p.t.check(ctx); err != nil {
		return nil, err
	}
	p.mu.Lock()
	closed := p.closed
	p.mu.Unlock()
	if closed {
		return nil, coord.WrapError(coord.ErrTransport, nil, "producer closed")
	}
	c := p.t.c
	c.mu.Lock()
	defer c.mu.Unlock()
	if cur := c.txns[p.txnID].token; cur != p.token {
		return nil, coord.WrapError(coord.ErrFenced, nil, "PRODUCER_FENCED: %s superseded by %s", p.token, cur)
	}
	for _, o := range offsets {
		if l, ok := c.logs[o.Topic]; !ok || int(o.Partition) >= len(l) {
			return nil, coord.WrapError(coord.ErrUnknownTopicOrPartition, nil, "TxnOffsetCommit: %s/%d does not exist", o.Topic, o.Partition)
		}
	}
	res, err := p.appendLocked(msgs)
	if err != nil || len(offsets) == 0 {
		return res, err
	}
	if c.groupOffsets == nil {
		c.groupOffsets = map[string]map[coord.TopicPartition]int64{}
	}
	g := c.groupOffsets[group]
	if g == nil {
		g = map[coord.TopicPartition]int64{}
		c.groupOffsets[group] = g
	}
	for _, o := range offsets {
		g[coord.TopicPartition{Topic: o.Topic, Partition: o.Partition}] = o.Offset
	}
	return res, nil
}
