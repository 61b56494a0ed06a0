package kafka

// One follower per broker (issue 35, item 2). The live views of a client
// (core/coord view.go) each call Fetch in a loop for their partition; here
// the calls of every partition that one broker leads ride one long-polling
// Fetch request to that broker, on one connection of one kgo client shared
// by all brokers. The broker answers as soon as any of the partitions has
// records, or after the wait; every call of the round gets its partition's
// answer (an empty one when it had nothing), and the views call again.
//
// Kafka answers the requests of one connection in order, so a partition
// cannot join a long poll in flight: the follower waits, after a round,
// until every partition it answered is asked for again (followBarrier at
// most) before it sends the next, and a call that arrives while a round is
// in flight (a partition followed for the first time, or one whose view
// came back late) cancels that round, which closes its connection (franz-go
// dials again); the calls of the cancelled round are sent again at once
// with the newcomer.

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/krabka/krabka-coord/core/coord"
)

// followBarrier bounds how long a broker's follower waits, after a round,
// for the partitions it answered to be asked for again.
const followBarrier = 100 * time.Millisecond

// followers are the per-broker followers of a Transport.
type followers struct {
	t *Transport

	mu      sync.Mutex
	closed  bool
	cl      *kgo.Client // built on the first Fetch; every broker's long polls
	brokers map[int32]*brokerFollow
	ctx     context.Context
	cancel  context.CancelFunc
	wg      sync.WaitGroup
}

func newFollowers(t *Transport) *followers {
	ctx, cancel := context.WithCancel(context.Background())
	return &followers{t: t, brokers: map[int32]*brokerFollow{}, ctx: ctx, cancel: cancel}
}

// followCall is one Fetch call waiting for its partition's answer.
type followCall struct {
	p       int32
	offset  int64
	maxWait time.Duration
	ans     chan followAnswer // capacity 1
	gone    bool              // withdrawn while in a round (under the brokerFollow's mu)
}

type followAnswer struct {
	f   fetched
	err error
}

// brokerFollow long-polls the partitions one broker leads.
type brokerFollow struct {
	fs     *followers
	leader int32

	mu       sync.Mutex
	pending  map[int32][]*followCall // calls not in a round yet, in the order they came, by partition
	inRoundP map[int32]int64         // the partitions of the round in flight, at their offsets
	round    []*followCall           // the calls of the round in flight
	inRound  bool
	cancel   context.CancelFunc // cancels the round in flight
	expect   map[int32]bool     // answered by the last round, not asked for again yet
	barrier  time.Time          // the next round waits for expect until then
	wake     chan struct{}      // capacity 1: pending or expect changed
	rounds   int64              // rounds sent (tests)
	canceled int64              // rounds cancelled by a newcomer (tests)
	widest   int                // the most partitions one round carried (tests)
}

// broker returns the follower of leader, starting it on first use.
func (fs *followers) broker(leader int32) (*brokerFollow, error) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if fs.closed {
		return nil, coord.WrapError(coord.ErrClosed, nil, "transport closed")
	}
	if fs.cl == nil {
		cl, err := kgo.NewClient(fs.t.clientOpts("follower", "")...)
		if err != nil {
			return nil, coord.WrapError(coord.ErrInvalidConfig, err, "building the follower client")
		}
		fs.cl = cl
	}
	if b, ok := fs.brokers[leader]; ok {
		return b, nil
	}
	b := &brokerFollow{fs: fs, leader: leader, pending: map[int32][]*followCall{}, expect: map[int32]bool{}, wake: make(chan struct{}, 1)}
	fs.brokers[leader] = b
	fs.wg.Add(1)
	go func() {
		defer fs.wg.Done()
		b.run(fs.ctx)
	}()
	return b, nil
}

// submit queues c for the next round; a round in flight is cancelled (it
// cannot take c) and sent again with it, unless it fetches c's partition
// from another offset (c goes in a later round). Several calls may follow
// one partition (views of several clients on one transport, such as the
// members of a group sharing a group log): calls at one offset share a
// round's answer, calls at other offsets wait for a round of their own.
func (b *brokerFollow) submit(c *followCall) {
	b.mu.Lock()
	b.pending[c.p] = append(b.pending[c.p], c)
	delete(b.expect, c.p)
	off, busy := b.inRoundP[c.p]
	if busy && off != c.offset && b.roundGoneLocked(c.p) {
		busy = false // nobody waits for the round's answer of c's partition any more
	}
	if b.inRound && b.cancel != nil && (!busy || off == c.offset) {
		b.cancel()
		b.cancel = nil
		b.canceled++
	}
	b.mu.Unlock()
	b.poke()
}

// roundGoneLocked reports whether every call of partition p in the round in
// flight was withdrawn. The caller holds b.mu.
func (b *brokerFollow) roundGoneLocked(p int32) bool {
	for _, c := range b.round {
		if c.p == p && !c.gone {
			return false
		}
	}
	return true
}

// withdraw takes c back when its caller gave up; a call already in a round
// is marked gone (its answer is dropped, and a newcomer of its partition
// at another offset need not wait for that round).
func (b *brokerFollow) withdraw(c *followCall) {
	b.mu.Lock()
	c.gone = true
	q := b.pending[c.p]
	if i := slices.Index(q, c); i >= 0 {
		q = slices.Delete(q, i, i+1)
		if len(q) == 0 {
			delete(b.pending, c.p)
		} else {
			b.pending[c.p] = q
		}
	}
	b.mu.Unlock()
}

// forget drops partition p (no longer followed): the next round does not
// wait for it.
func (b *brokerFollow) forget(p int32) {
	b.mu.Lock()
	delete(b.expect, p)
	b.mu.Unlock()
	b.poke()
}

func (b *brokerFollow) poke() {
	select {
	case b.wake <- struct{}{}:
	default:
	}
}

// run sends rounds until ctx ends (the transport closed).
func (b *brokerFollow) run(ctx context.Context) {
	for {
		// Wait for calls, and for the partitions answered last to come back.
		var (
			calls   []*followCall
			maxWait time.Duration
			rctx    context.Context
			cancel  context.CancelFunc
		)
		for {
			b.mu.Lock()
			wait := time.Until(b.barrier)
			ready := len(b.pending) > 0 && (len(b.expect) == 0 || wait <= 0)
			if ready {
				// Each partition at the offset of its oldest call, with
				// every call at that offset; the others stay for later.
				b.inRoundP = map[int32]int64{}
				for p, q := range b.pending {
					off := q[0].offset
					b.inRoundP[p] = off
					var rest []*followCall
					for _, c := range q {
						if c.offset == off {
							calls = append(calls, c)
						} else {
							rest = append(rest, c)
						}
					}
					if len(rest) == 0 {
						delete(b.pending, p)
					} else {
						b.pending[p] = rest
					}
				}
				b.expect = map[int32]bool{}
				maxWait = calls[0].maxWait
				for _, c := range calls[1:] {
					maxWait = min(maxWait, c.maxWait)
				}
				// The round's cancel is in place before the lock is let go:
				// a call submitted from now on cancels this round.
				rctx, cancel = context.WithTimeout(ctx, maxWait+b.fs.t.cfg.RequestTimeout)
				b.inRound, b.cancel, b.round = true, cancel, calls
				b.rounds++
				b.widest = max(b.widest, len(calls))
			}
			b.mu.Unlock()
			if ready {
				break
			}
			b.mu.Lock()
			timed := len(b.pending) > 0 && wait > 0
			b.mu.Unlock()
			var tm *time.Timer
			var timer <-chan time.Time
			if timed {
				tm = time.NewTimer(wait)
				timer = tm.C
			}
			select {
			case <-ctx.Done():
				if tm != nil {
					tm.Stop()
				}
				b.mu.Lock()
				for p, q := range b.pending {
					for _, c := range q {
						c.ans <- followAnswer{err: coord.WrapError(coord.ErrClosed, nil, "transport closed")}
					}
					delete(b.pending, p)
				}
				b.mu.Unlock()
				return
			case <-b.wake:
			case <-timer:
			}
			if tm != nil {
				tm.Stop()
			}
		}
		answers, err := b.fs.t.fetchRound(rctx, b.fs.cl, b.leader, calls, maxWait)
		cut := err != nil && rctx.Err() == context.Canceled && ctx.Err() == nil
		cancel()
		b.mu.Lock()
		b.inRound, b.cancel, b.inRoundP, b.round = false, nil, nil, nil
		if cut {
			// A newcomer cancelled the round: its calls go again with it,
			// ahead of the calls that came after them (not those withdrawn).
			for i := len(calls) - 1; i >= 0; i-- {
				if c := calls[i]; !c.gone {
					b.pending[c.p] = append([]*followCall{c}, b.pending[c.p]...)
				}
			}
			b.mu.Unlock()
			continue
		}
		for _, c := range calls {
			b.expect[c.p] = true
		}
		b.barrier = time.Now().Add(followBarrier)
		b.mu.Unlock()
		if ctx.Err() != nil {
			err = coord.WrapError(coord.ErrClosed, nil, "transport closed")
		}
		for _, c := range calls {
			a := followAnswer{err: err}
			if err == nil {
				a = answers[c.p]
			}
			c.ans <- a
		}
	}
}

// close stops every broker's follower and closes the client.
func (fs *followers) close() {
	fs.mu.Lock()
	fs.closed = true
	cl := fs.cl
	fs.mu.Unlock()
	fs.cancel()
	fs.wg.Wait()
	if cl != nil {
		cl.Close()
	}
}

// forget drops partition p from every broker's follower.
func (fs *followers) forget(p int32) {
	fs.mu.Lock()
	bs := make([]*brokerFollow, 0, len(fs.brokers))
	for _, b := range fs.brokers {
		bs = append(bs, b)
	}
	fs.mu.Unlock()
	for _, b := range bs {
		b.forget(p)
	}
}

// fetchRound sends one read_uncommitted Fetch of every call's partition
// from its offset to leader, waiting up to maxWait at the broker, and
// returns each partition's answer: its batches, or its error (a partition
// error as kerr returns it, for followFetch to handle). The error of the
// whole request (the connection, the broker) is returned alone.
func (t *Transport) fetchRound(ctx context.Context, cl *kgo.Client, leader int32, calls []*followCall, maxWait time.Duration) (map[int32]followAnswer, error) {
	topic := t.cfg.Topic
	t.mu.Lock()
	id := t.topicID
	t.mu.Unlock()
	parts := make([]partOffset, 0, len(calls))
	seen := make(map[int32]bool, len(calls))
	for _, c := range calls {
		if !seen[c.p] { // calls of one partition in a round share its offset
			seen[c.p] = true
			parts = append(parts, partOffset{c.p, c.offset})
		}
	}
	req := t.fetchRequest(id, maxWait, 16<<20, false, parts...)
	kresp, err := cl.Broker(int(leader)).Request(ctx, req)
	if err != nil {
		t.forgetLeaders()
		return nil, err
	}
	resp := kresp.(*kmsg.FetchResponse)
	if e := kerr.ErrorForCode(resp.ErrorCode); e != nil {
		return nil, t.classify(e, "fetch of "+topic, topicACL(topic, "READ"))
	}
	offsets := make(map[int32]int64, len(calls))
	for _, c := range calls {
		offsets[c.p] = c.offset
	}
	out := make(map[int32]followAnswer, len(calls))
	for i := range resp.Topics {
		for j := range resp.Topics[i].Partitions {
			got := &resp.Topics[i].Partitions[j]
			off, ok := offsets[got.Partition]
			if !ok {
				continue
			}
			if e := kerr.ErrorForCode(got.ErrorCode); e != nil {
				out[got.Partition] = followAnswer{err: e}
				continue
			}
			f, err := t.decodeFetched(got, off, false)
			out[got.Partition] = followAnswer{f: f, err: err}
		}
	}
	for _, c := range calls {
		if _, ok := out[c.p]; !ok {
			out[c.p] = followAnswer{err: coord.WrapError(coord.ErrTransport, nil, "fetch response without partition %d", c.p)}
		}
	}
	return out, nil
}

// followFetch is Fetch through the follower of the partition's leader:
// retriable failures (a leader moving, a connection lost) are retried on
// the partition's current leader while ctx lasts, as fetchOnce retries
// them.
func (t *Transport) followFetch(ctx context.Context, partition int32, offset int64, maxWait time.Duration) (fetched, error) {
	for {
		leader, _, err := t.meta(ctx, partition)
		if err != nil {
			if rerr := t.retryable(ctx, err, "metadata"); rerr != nil {
				return fetched{}, rerr
			}
			continue
		}
		b, err := t.follow.broker(leader)
		if err != nil {
			return fetched{}, err
		}
		c := &followCall{p: partition, offset: offset, maxWait: maxWait, ans: make(chan followAnswer, 1)}
		b.submit(c)
		var a followAnswer
		select {
		case a = <-c.ans:
		case <-ctx.Done():
			b.withdraw(c)
			return fetched{}, t.classify(ctx.Err(), "fetch", "")
		}
		if a.err == nil {
			return a.f, nil
		}
		e := a.err
		var ke *kerr.Error
		if errors.As(e, &ke) && ke.Code != 0 && coord.ClientErrorKind(e) == nil {
			// A partition error: a reset, a leader moving, or a failure.
			out, again, err := t.partitionError(ctx, e, partition, offset)
			if err != nil || !again {
				return out, err
			}
			if errors.Is(e, kerr.OffsetOutOfRange) {
				continue
			}
		}
		// A leader moving, or the request failed (the connection, the
		// broker): try again (retryable returns the errors that will not
		// pass, and ctx's end).
		if rerr := t.retryable(ctx, e, "fetch"); rerr != nil {
			return fetched{}, rerr
		}
	}
}
