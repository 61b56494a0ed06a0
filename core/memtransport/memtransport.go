// Package memtransport is an in-memory coord.Transport for fast unit tests of
// the client logic: one Cluster holds the coordination topic's partitions and
// a transaction coordinator; every client gets its own Transport view of it.
//
// It models what the client relies on: one token per InitProducerId (a new
// producer id after epoch 32767), the broker rejecting transactional writes
// of a superseded token (ErrFenced), read_committed visibility (a
// transaction's records appear atomically at commit), and faults a test can
// inject (refusals, black holes, lagging reads, and a transaction another
// producer leaves open: OpenTxn).
//
// Its readers read past the last stable offset as core/kafka's do
// (docs/PROTOCOL.md 12.1): Fetch answers batches with their producer and
// the transaction markers, and StableOffset the end of the log;
// ReadCommitted switches a cluster to the read_committed reading of the
// library before that change (records up to the last stable offset only),
// so a test can show what the change fixes.
package memtransport

import (
	"context"
	"fmt"
	"math"
	"sort"
	"sync"
	"time"

	"github.com/krabka/krabka-coord/core"
	"github.com/krabka/krabka-coord/core/coord"
)

// Fault selects how a Transport answers while a fault is set.
type Fault int

const (
	// Healthy: calls work.
	Healthy Fault = iota
	// Refuse: every call fails at once with coord.ErrTransport.
	Refuse
	// BlackHole: every call blocks until its context ends.
	BlackHole
)

type record struct {
	offset     int64
	key, value []byte
	headers    []core.RecordHeader
	visible    bool // false: hidden by HideReads (a lagging read)

	pid     int64            // the producer of an OpenTxn record or marker (0: none)
	open    bool             // the record's OpenTxn has not ended
	aborted bool             // the record's OpenTxn was aborted
	control core.ControlType // a transaction marker (no key or value)
}

// committed reports whether a read_committed reader returns r.
func (r *record) committed() bool {
	return r.visible && !r.open && !r.aborted && r.control == core.NotControl
}

type txnState struct {
	token core.FencingToken
}

// Cluster is the shared in-memory cluster. Safe for concurrent use.
type Cluster struct {
	mu             sync.Mutex
	partitions     int32
	logs           map[string][][]record // topic -> partition -> records
	txns           map[string]*txnState
	nextPID        int64
	hideReads      bool // new appends stay invisible to Read until ShowReads
	committedReads bool // readers stop at the last stable offset (ReadCommitted)
	nextOpenPID    int64
	appends        int
	mints          int
	changed        chan struct{} // closed and replaced whenever records appear

	// Named clusters (NewNamed, named.go).
	name        string
	clock       core.Clock        // the cluster's clock (nil: the tests pass their own)
	manual      *core.ManualClock // clock when it is manual (nil: real time)
	unavailable bool              // SetAvailable(false): every call is refused
	destroyed   bool              // Close: every call is refused
}

// NewCluster returns a cluster whose coordination topic will have the given
// number of partitions.
func NewCluster(partitions int32) *Cluster {
	return &Cluster{partitions: partitions, logs: map[string][][]record{}, txns: map[string]*txnState{}, nextPID: 1000, changed: make(chan struct{})}
}

func (c *Cluster) log(topic string, n int32) [][]record {
	l, ok := c.logs[topic]
	if !ok {
		l = make([][]record, n)
		c.logs[topic] = l
	}
	return l
}

func (c *Cluster) appendLocked(topic string, p int32, key, value []byte, headers ...core.RecordHeader) (int64, error) {
	l := c.log(topic, c.partitions)
	if p < 0 {
		if key == nil {
			p = 0
		} else {
			p = (core.Murmur2(key) & 0x7fffffff) % int32(len(l))
		}
	}
	if int(p) >= len(l) {
		return 0, coord.WrapError(coord.ErrTransport, nil, "partition %d of %s does not exist", p, topic)
	}
	off := int64(len(l[p]))
	l[p] = append(l[p], record{offset: off, key: clone(key), value: clone(value), headers: headers, visible: !c.hideReads})
	c.notifyLocked()
	return off, nil
}

func clone(b []byte) []byte {
	if b == nil {
		return nil
	}
	return append([]byte{}, b...)
}

// AppendRaw appends a record outside any transaction (a test writes a
// poisoned record this way) and returns its offset.
func (c *Cluster) AppendRaw(topic string, partition int32, key, value []byte) int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	off, err := c.appendLocked(topic, partition, key, value)
	if err != nil {
		panic(err)
	}
	return off
}

// HideReads makes records appended from now on invisible to Read until
// ShowReads (a lagging read).
func (c *Cluster) HideReads() { c.mu.Lock(); c.hideReads = true; c.mu.Unlock() }

// ShowReads makes every record visible.
func (c *Cluster) ShowReads() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.hideReads = false
	for _, parts := range c.logs {
		for _, recs := range parts {
			for i := range recs {
				recs[i].visible = true
			}
		}
	}
	c.notifyLocked()
}

// notifyLocked wakes the long polls waiting in Fetch.
func (c *Cluster) notifyLocked() {
	close(c.changed)
	c.changed = make(chan struct{})
}

// stableLocked returns the first offset of partition p of topic that is not
// visible or belongs to an open transaction (or its length): what a
// read_committed reader can reach.
func (c *Cluster) stableLocked(topic string, p int32) int64 {
	l := c.log(topic, c.partitions)
	if int(p) >= len(l) {
		return 0
	}
	for i, r := range l[p] {
		if !r.visible || r.open {
			return int64(i)
		}
	}
	return int64(len(l[p]))
}

// endLocked returns the first offset of partition p of topic that is not
// visible (or its length): what a reader past the stable offset can reach
// (the high watermark).
func (c *Cluster) endLocked(topic string, p int32) int64 {
	l := c.log(topic, c.partitions)
	if int(p) >= len(l) {
		return 0
	}
	for i, r := range l[p] {
		if !r.visible {
			return int64(i)
		}
	}
	return int64(len(l[p]))
}

// ReadCommitted makes every reader of the cluster read as the library did
// before docs/PROTOCOL.md 12.1: committed records up to the last stable
// offset only (Fetched.Records), with StableOffset the last stable offset.
// For tests that show what reading past it changes.
func (c *Cluster) ReadCommitted(on bool) { c.mu.Lock(); c.committedReads = on; c.mu.Unlock() }

// OpenTxn is a transaction of a producer outside the library, open on one
// partition (a holder of another role killed between its Produce and its
// EndTxn leaves one): it holds the partition's last stable offset until
// Commit or Abort.
type OpenTxn struct {
	c     *Cluster
	topic string
	p     int32
	pid   int64
	off   int64
	done  bool
}

// OpenTxn appends key and value to partition of topic inside a new
// transaction of its own producer and leaves the transaction open.
func (c *Cluster) OpenTxn(topic string, partition int32, key, value []byte) *OpenTxn {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.nextOpenPID++
	off, err := c.appendLocked(topic, partition, key, value)
	if err != nil {
		panic(err)
	}
	r := &c.log(topic, c.partitions)[partition][off]
	r.pid, r.open = 900000+c.nextOpenPID, true
	return &OpenTxn{c: c, topic: topic, p: partition, pid: r.pid, off: off}
}

// Commit ends the transaction with a COMMIT marker; Abort with an ABORT
// marker (what the coordinator does at the transaction's timeout). Only the
// first call counts.
func (o *OpenTxn) Commit() { o.end(core.ControlCommit) }

// Abort: see Commit.
func (o *OpenTxn) Abort() { o.end(core.ControlAbort) }

func (o *OpenTxn) end(ct core.ControlType) {
	c := o.c
	c.mu.Lock()
	defer c.mu.Unlock()
	if o.done {
		return
	}
	o.done = true
	l := c.log(o.topic, c.partitions)[o.p]
	r := &l[o.off]
	r.open, r.aborted = false, ct == core.ControlAbort
	off, err := c.appendLocked(o.topic, o.p, nil, nil)
	if err != nil {
		panic(err)
	}
	m := &c.log(o.topic, c.partitions)[o.p][off]
	m.pid, m.control = o.pid, ct
	c.notifyLocked()
}

// batchOf is r as a read_uncommitted fetch returns it.
func batchOf(r record) core.Batch {
	if r.control != core.NotControl {
		return core.Batch{ProducerID: r.pid, Transactional: true, Control: r.control}
	}
	return core.Batch{ProducerID: r.pid, Transactional: r.pid != 0,
		Records: []core.RawRecord{{Offset: r.offset, Key: r.key, Value: r.value, Headers: r.headers}}}
}

// Appends returns how many non-transactional appends (registrations) were made.
func (c *Cluster) Appends() int { c.mu.Lock(); defer c.mu.Unlock(); return c.appends }

// Mints returns how many InitProducerId calls succeeded.
func (c *Cluster) Mints() int { c.mu.Lock(); defer c.mu.Unlock(); return c.mints }

// Records returns the visible records of a partition of topic.
func (c *Cluster) Records(topic string, partition int32) []core.RawRecord {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []core.RawRecord
	l := c.log(topic, c.partitions)
	if int(partition) >= len(l) {
		return nil
	}
	for _, r := range l[partition] {
		if r.committed() {
			out = append(out, core.RawRecord{Offset: r.offset, Key: r.key, Value: r.value, Headers: r.headers})
		}
	}
	return out
}

// Token returns the coordinator's current token of a transactional id.
func (c *Cluster) Token(txnID string) core.FencingToken {
	c.mu.Lock()
	defer c.mu.Unlock()
	if s, ok := c.txns[txnID]; ok {
		return s.token
	}
	return core.NoEpoch
}

// Transport returns a new client view of the cluster writing the
// coordination records to topic.
func (c *Cluster) Transport(topic string) *Transport {
	return &Transport{c: c, topic: topic}
}

// Transport is one client's view of a Cluster (coord.Transport).
type Transport struct {
	c     *Cluster
	topic string

	mu     sync.Mutex
	fault  Fault
	closed bool

	// The controls of a client of a named cluster (named.go).
	killed  bool
	resumed chan struct{}  // non-nil while paused; closed by Resume
	clock   *PausableClock // the client's view of the cluster's clock (nil: unnamed cluster)
}

var _ coord.Transport = (*Transport)(nil)

// SetFault makes this view answer per f from now on.
func (t *Transport) SetFault(f Fault) { t.mu.Lock(); t.fault = f; t.mu.Unlock() }

func (t *Transport) check(ctx context.Context) error {
	for {
		t.mu.Lock()
		resumed := t.resumed
		t.mu.Unlock()
		if resumed == nil {
			break
		}
		// Paused (SIGSTOP): the call holds until Resume or its context ends.
		select {
		case <-resumed:
		case <-ctx.Done():
			return coord.WrapError(coord.ErrTimeout, ctx.Err(), "memtransport: the client is paused")
		}
	}
	t.mu.Lock()
	f, closed, killed := t.fault, t.closed, t.killed
	t.mu.Unlock()
	if closed {
		return coord.WrapError(coord.ErrClosed, nil, "memtransport closed")
	}
	if killed {
		return coord.WrapError(coord.ErrTransport, nil, "memtransport: the client was killed (krabka testing kill): nothing it sends reaches the cluster")
	}
	t.c.mu.Lock()
	unavailable, destroyed, name := t.c.unavailable, t.c.destroyed, t.c.name
	t.c.mu.Unlock()
	if destroyed {
		return coord.WrapError(coord.ErrTransport, nil, "memtransport: the in-process cluster %q was destroyed", name)
	}
	if unavailable {
		return coord.WrapError(coord.ErrTransport, nil, "memtransport: the in-process cluster %q is unavailable (made so by the test)", name)
	}
	switch f {
	case Refuse:
		return coord.WrapError(coord.ErrTransport, nil, "memtransport: connection refused")
	case BlackHole:
		<-ctx.Done()
		return coord.WrapError(coord.ErrTimeout, ctx.Err(), "memtransport: no answer")
	}
	if err := ctx.Err(); err != nil {
		return coord.WrapError(coord.ErrTimeout, err, "memtransport")
	}
	return nil
}

// Partitions implements coord.Transport.
func (t *Transport) Partitions(ctx context.Context) (int32, error) {
	if err := t.check(ctx); err != nil {
		return 0, err
	}
	return t.c.partitions, nil
}

// Read implements coord.Transport.
func (t *Transport) Read(ctx context.Context, partition int32) ([]core.RawRecord, error) {
	if err := t.check(ctx); err != nil {
		return nil, err
	}
	return t.c.Records(t.topic, partition), nil
}

// StableOffset implements coord.Transport: the first record not visible
// yet (under ReadCommitted: the last stable offset).
func (t *Transport) StableOffset(ctx context.Context, partition int32) (int64, error) {
	if err := t.check(ctx); err != nil {
		return 0, err
	}
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	if t.c.committedReads {
		return t.c.stableLocked(t.topic, partition), nil
	}
	return t.c.endLocked(t.topic, partition), nil
}

// Fetch implements coord.Transport: the visible records from offset as
// batches with their producers and markers (under ReadCommitted: the
// committed records up to the last stable offset), waiting up to maxWait
// for one to appear.
func (t *Transport) Fetch(ctx context.Context, partition int32, offset int64, maxWait time.Duration) (coord.Fetched, error) {
	timer := time.NewTimer(maxWait)
	defer timer.Stop()
	for {
		if err := t.check(ctx); err != nil {
			return coord.Fetched{}, err
		}
		t.c.mu.Lock()
		stable := t.c.stableLocked(t.topic, partition)
		end := t.c.endLocked(t.topic, partition)
		committedOnly := t.c.committedReads
		if committedOnly {
			end = stable
		}
		changed := t.c.changed
		var out coord.Fetched
		if offset > end {
			out = coord.Fetched{Next: 0, Reset: true, LastStable: stable}
		} else if offset < end {
			l := t.c.log(t.topic, t.c.partitions)[partition]
			for _, r := range l[offset:end] {
				switch {
				case !committedOnly:
					out.Batches = append(out.Batches, batchOf(r))
				case r.committed():
					out.Records = append(out.Records, core.RawRecord{Offset: r.offset, Key: r.key, Value: r.value, Headers: r.headers})
				}
			}
			out.Next, out.LastStable = end, stable
		}
		t.c.mu.Unlock()
		if out.Reset || out.Next > offset {
			return out, nil
		}
		select {
		case <-changed:
		case <-timer.C:
			return coord.Fetched{Next: offset, LastStable: stable}, nil
		case <-ctx.Done():
			return coord.Fetched{}, coord.WrapError(coord.ErrTimeout, ctx.Err(), "memtransport")
		}
	}
}

// Unfollow implements coord.Transport (nothing to release).
func (t *Transport) Unfollow(int32) {}

// Append implements coord.Transport.
func (t *Transport) Append(ctx context.Context, partition int32, key, value []byte, headers []coord.Header) (int64, error) {
	if err := t.check(ctx); err != nil {
		return 0, err
	}
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	t.c.appends++
	var hs []core.RecordHeader
	for _, h := range headers {
		hs = append(hs, core.RecordHeader{Key: h.Key, Value: clone(h.Value)})
	}
	return t.c.appendLocked(t.topic, partition, key, value, hs...)
}

// Mint implements coord.Transport: InitProducerId bumps the epoch (a new
// producer id after 32767), fencing every earlier producer of the id.
func (t *Transport) Mint(ctx context.Context, txnID string, _ time.Duration) (coord.TxnProducer, error) {
	if err := t.check(ctx); err != nil {
		return nil, err
	}
	c := t.c
	c.mu.Lock()
	defer c.mu.Unlock()
	return &producer{t: t, txnID: txnID, token: c.mintLocked(txnID)}, nil
}

// mintLocked is InitProducerId for txnID: the epoch bumps (a new producer
// id after 32767), fencing every earlier producer of the id.
func (c *Cluster) mintLocked(txnID string) core.FencingToken {
	s, ok := c.txns[txnID]
	switch {
	case !ok:
		s = &txnState{token: core.FencingToken{ProducerID: c.nextPID, ProducerEpoch: 0}}
		c.nextPID++
		c.txns[txnID] = s
	case s.token.ProducerEpoch == math.MaxInt16:
		s.token = core.FencingToken{ProducerID: c.nextPID, ProducerEpoch: 0}
		c.nextPID++
	default:
		s.token.ProducerEpoch++
	}
	c.mints++
	return s.token
}

// CurrentToken implements coord.Transport.
func (t *Transport) CurrentToken(ctx context.Context, txnID string) (core.FencingToken, error) {
	if err := t.check(ctx); err != nil {
		return core.NoEpoch, err
	}
	return t.c.Token(txnID), nil
}

// Close implements coord.Transport.
func (t *Transport) Close() error { t.mu.Lock(); t.closed = true; t.mu.Unlock(); return nil }

type producer struct {
	t      *Transport
	txnID  string
	token  core.FencingToken
	closed bool
	mu     sync.Mutex
}

func (p *producer) Token() core.FencingToken { return p.token }

func (p *producer) Close() error { p.mu.Lock(); p.closed = true; p.mu.Unlock(); return nil }

// Transact writes msgs atomically if the token is still the coordinator's.
func (p *producer) Transact(ctx context.Context, msgs []coord.Message) ([]coord.ProduceResult, error) {
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
	out := make([]coord.ProduceResult, 0, len(msgs))
	for _, m := range msgs {
		l := c.log(m.Topic, c.partitions)
		part := m.Partition
		if part < 0 {
			part = 0
			if m.Key != nil {
				part = (core.Murmur2(m.Key) & 0x7fffffff) % int32(len(l))
			}
		}
		var hs []core.RecordHeader
		for _, h := range m.Headers {
			hs = append(hs, core.RecordHeader{Key: h.Key, Value: clone(h.Value)})
		}
		off, err := c.appendLocked(m.Topic, part, m.Key, m.Value, hs...)
		if err != nil {
			return nil, err
		}
		out = append(out, coord.ProduceResult{Topic: m.Topic, Partition: part, Offset: off})
	}
	return out, nil
}

// Topics lists the topics written so far, sorted (for debugging tests).
func (c *Cluster) Topics() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for k := range c.logs {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// String describes the cluster.
func (c *Cluster) String() string {
	return fmt.Sprintf("memtransport.Cluster(%d partitions)", c.partitions)
}
