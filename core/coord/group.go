package coord

import (
	"context"
	"sync"
	"time"

	"github.com/krabka/krabka-coord/core"
)

// Group commit of guarded writes.
//
// Concurrent Produce calls on one leadership queue here; one committer
// goroutine, started by the call that finds none running and gone once the
// queue is empty (no goroutine per idle role: sched.go), takes the
// operation slot (the same one Renew and Resign take), gathers the queued
// calls into one transaction of the role's producer and hands each caller
// its own slice of the results, or the transaction's error. While a transaction commits, new calls queue for the
// next one. Bounds: krabka.produce.group.max.messages and
// krabka.produce.group.max.bytes (a call never splits: one bigger than a
// bound goes alone), and krabka.produce.group.linger.ms (see takeBatch).
//
// Order: the calls of one transaction are written in queue order, each
// call's messages contiguous and in its own order; transactions commit one
// after another. So the messages of one caller keep their order, and the
// order between callers is the commit order.
//
// Failure: a transaction that fails fails exactly its own callers. A fence
// (ErrFenced) ends the leadership as before, so every caller of the
// transaction gets ErrFenced and every queued or later call gets the
// leadership's error; a lease that expired while renewals were failing
// ends it as Expired at the start of the next transaction in the same way.
// Any other error (a message too large, a timeout) fails that transaction's
// callers only; the next transaction is tried as usual.
//
// Renewals do not ride in group transactions: Renew takes the operation
// slot between two group transactions and writes its lease in a
// transaction of its own, so its deadline bound (a renewal that starts
// before the deadline never runs past it) stays its own and a bad message
// of some caller can never make a renewal fail.
type group struct {
	mu      sync.Mutex
	queue   []*produceCall
	last    int           // callers of the previous transaction (linger target)
	running bool          // a committer runs (commitLoop)
	ended   bool          // the leadership ended: no committer starts any more
	arrived chan struct{} // nudged on every enqueue while the committer lingers (capacity 1)
}

// produceCall is one Produce call waiting for its transaction.
type produceCall struct {
	ctx     context.Context
	token   core.FencingToken // the leadership's token when the call was made: what its messages were built for
	msgs    []Message
	offsets []Offset // consumed offsets committed with msgs (ProduceOffsets; pipeline.go)
	bytes   int
	taken   bool // in a transaction: the caller can no longer withdraw it (under group.mu)
	res     []ProduceResult
	err     error
	done    chan struct{}
}

func messageBytes(msgs []Message) int {
	n := 0
	for _, m := range msgs {
		n += len(m.Key) + len(m.Value)
		for _, h := range m.Headers {
			n += len(h.Key) + len(h.Value)
		}
	}
	return n
}

func signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// PendingWrites returns how many Produce calls are queued for the next
// group transaction (not counting those of the transaction in flight).
// Never blocks.
func (l *Leadership) PendingWrites() int {
	l.grp.mu.Lock()
	defer l.grp.mu.Unlock()
	return len(l.grp.queue)
}

// enqueue adds a call and starts the committer unless one runs. A call
// queued after the leadership ended is left to its caller, who sees the
// end (queueCall).
func (l *Leadership) enqueue(c *produceCall) {
	g := &l.grp
	g.mu.Lock()
	g.queue = append(g.queue, c)
	start := !g.running && !g.ended
	if start {
		// Before the end (ended is set under g.mu before the leadership's
		// hold is released): the wait group is above zero.
		g.running = true
		l.c.wg.Add(1)
	}
	g.mu.Unlock()
	if start {
		go l.commitLoop()
	}
	signal(g.arrived)
}

// endGroup stops the committers of an ended leadership and fails whatever
// is still queued with err.
func (l *Leadership) endGroup(err error) {
	g := &l.grp
	g.mu.Lock()
	g.ended = true
	g.mu.Unlock()
	l.failQueue(err)
}

// withdraw removes a call that no transaction has taken yet; false when it
// was taken (its transaction decides).
func (l *Leadership) withdraw(c *produceCall) bool {
	g := &l.grp
	g.mu.Lock()
	defer g.mu.Unlock()
	if c.taken {
		return false
	}
	for i, q := range g.queue {
		if q == c {
			g.queue = append(g.queue[:i], g.queue[i+1:]...)
			break
		}
	}
	c.taken = true // nobody else completes it
	return true
}

// commitLoop is the committer: it commits group transactions until the
// queue is empty or the leadership ended, then returns. It holds a count
// of the client's wait group (enqueue).
func (l *Leadership) commitLoop() {
	defer l.c.wg.Done()
	g := &l.grp
	for {
		for l.commitOne() {
		}
		g.mu.Lock()
		if len(g.queue) == 0 || g.ended {
			g.running = false
			g.mu.Unlock()
			return
		}
		g.mu.Unlock()
	}
}

// failQueue completes every queued call with err.
func (l *Leadership) failQueue(err error) {
	g := &l.grp
	g.mu.Lock()
	q := g.queue
	g.queue = nil
	for _, c := range q {
		c.taken = true
	}
	g.mu.Unlock()
	for _, c := range q {
		c.err = l.c.fail(c.ctx, err)
		close(c.done)
	}
}

// takeBatch takes the calls of the next transaction from the head of the
// queue. When fewer calls are queued than the previous transaction carried
// (and the bounds leave room), it first waits up to the linger for more:
// the callers of the previous transaction are usually just coming back. A
// single writer never waits (the previous transaction carried one call).
func (l *Leadership) takeBatch() []*produceCall {
	g := &l.grp
	cfg := l.c.cfg
	maxMsgs, maxBytes := cfg.GroupMaxMessages, cfg.GroupMaxBytes
	if maxMsgs <= 0 {
		maxMsgs = 1024
	}
	if maxBytes <= 0 {
		maxBytes = 1 << 20
	}
	full := func() bool { // under g.mu
		if len(g.queue) >= g.last {
			return true
		}
		n, b := 0, 0
		for _, c := range g.queue {
			n += len(c.msgs)
			b += c.bytes
		}
		return n >= maxMsgs || b >= maxBytes
	}
	g.mu.Lock()
	if len(g.queue) > 0 && cfg.GroupLinger > 0 && !full() {
		g.mu.Unlock()
		t := time.NewTimer(cfg.GroupLinger)
	wait:
		for {
			select {
			case <-g.arrived:
				g.mu.Lock()
				f := full()
				g.mu.Unlock()
				if f {
					break wait
				}
			case <-t.C:
				break wait
			case <-l.bg.Done():
				break wait
			}
		}
		t.Stop()
		g.mu.Lock()
	}
	defer g.mu.Unlock()
	n, msgs, bytes := 0, 0, 0
	for _, c := range g.queue {
		if n > 0 && (msgs+len(c.msgs) > maxMsgs || bytes+c.bytes > maxBytes) {
			break
		}
		n++
		msgs += len(c.msgs)
		bytes += c.bytes
	}
	batch := append([]*produceCall(nil), g.queue[:n]...)
	g.queue = append(g.queue[:0:0], g.queue[n:]...)
	for _, c := range batch {
		c.taken = true
	}
	if n > 0 {
		g.last = n
	}
	return batch
}

// commitOne runs one group transaction; false when the queue was empty or
// the leadership ended.
func (l *Leadership) commitOne() bool {
	g := &l.grp
	g.mu.Lock()
	empty := len(g.queue) == 0
	g.mu.Unlock()
	if empty {
		return false
	}
	_, release, _, err := l.begin(context.Background(), false)
	if err != nil {
		// The leadership ended or the client closed (nothing else ends a
		// background context).
		l.failQueue(err)
		return false
	}
	// Drain signals from calls already queued before lingering.
	select {
	case <-g.arrived:
	default:
	}
	batch := l.takeBatch()
	if len(batch) == 0 {
		release()
		return false
	}
	// The transaction's wait must not end with the leadership: when the
	// live view ends it (a successor's lease arrived) while this
	// transaction's commit is in flight, the commit may already have
	// landed before the successor's mint. Telling its callers FENCED then
	// would deny a committed write. So the wait ends with the client, the
	// callers' deadlines or all callers giving up, and the answer is the
	// broker's (the worker bounds each transaction by request.timeout.ms).
	base, stopBase := l.c.callCtx(context.Background())
	defer stopBase()
	tctx, cancel := l.txnContext(base, batch)
	// An own epoch recovery left pending by an earlier failure changes the
	// token before this transaction writes (docs/PROTOCOL.md 10.5). The
	// messages of a call made under the old token were built for it (a
	// host puts the token in its commands): they are not written under the
	// new one. Those calls fail with a retriable error, and the caller
	// builds them again with the token it reads now.
	var res []ProduceResult
	err = nil
	if r, ok := l.prod.(TokenRecoverer); ok {
		var cur core.FencingToken
		if cur, err = r.Recover(tctx); err == nil {
			batch = l.refuseStale(batch, cur)
		}
	}
	var offs []Offset
	if err == nil && len(batch) > 0 {
		offs = l.mergeOffsets(batch)
		var msgs []Message
		if len(batch) == 1 {
			msgs = batch[0].msgs
		} else {
			total := 0
			for _, c := range batch {
				total += len(c.msgs)
			}
			msgs = make([]Message, 0, total)
			for _, c := range batch {
				msgs = append(msgs, c.msgs...)
			}
		}
		switch op, _ := l.prod.(OffsetProducer); {
		case len(offs) > 0 && op != nil:
			res, err = op.TransactOffsets(tctx, pipelineGroup(l.role.txnID()), offs, msgs)
		case len(offs) > 0:
			err = WrapError(ErrUnsupported, nil, "the transport cannot commit offsets in a transaction")
		case len(msgs) == 0:
			// Offsets-only calls whose offsets are all committed already.
		default:
			res, err = l.prod.Transact(tctx, msgs)
		}
		if err == nil && len(offs) > 0 {
			l.committedOffsets(offs)
		}
		if err == nil && len(res) != len(msgs) {
			err = WrapError(ErrTransport, nil, "guarded write returned %d results for %d messages", len(res), len(msgs))
		}
	}
	cancel()
	if err != nil {
		err = l.failure(context.Background(), err, false)
	}
	release()
	i := 0
	for _, c := range batch {
		if err != nil {
			c.err = l.c.fail(c.ctx, err)
		} else {
			c.res = res[i : i+len(c.msgs) : i+len(c.msgs)]
			i += len(c.msgs)
		}
		close(c.done)
	}
	return true
}

// refuseStale fails the calls of batch made under another token than cur
// (their messages were built for it) and returns the others.
func (l *Leadership) refuseStale(batch []*produceCall, cur core.FencingToken) []*produceCall {
	keep := batch[:0:0]
	for _, c := range batch {
		if c.token == cur {
			keep = append(keep, c)
			continue
		}
		c.err = l.c.fail(c.ctx, WrapError(ErrTransport, nil,
			"the leadership of %s continues under token %s after an own epoch recovery (docs/PROTOCOL.md 10.5); these messages were built for token %s and were not written: build them again with the current token and retry",
			l.role, cur, c.token))
		close(c.done)
	}
	return keep
}

// txnContext bounds a group transaction: by the latest deadline among its
// callers (none if one of them has none), and it is cancelled when every
// caller has given up. cctx already ends with the leadership and the client.
func (l *Leadership) txnContext(cctx context.Context, batch []*produceCall) (context.Context, context.CancelFunc) {
	var latest time.Time
	bounded := true
	for _, c := range batch {
		d, ok := c.ctx.Deadline()
		if !ok {
			bounded = false
			break
		}
		if d.After(latest) {
			latest = d
		}
	}
	var ctx context.Context
	var cancel context.CancelFunc
	if bounded {
		ctx, cancel = context.WithDeadline(cctx, latest)
	} else {
		ctx, cancel = context.WithCancel(cctx)
	}
	var mu sync.Mutex
	left := len(batch)
	stops := make([]func() bool, 0, len(batch))
	for _, c := range batch {
		stops = append(stops, context.AfterFunc(c.ctx, func() {
			mu.Lock()
			left--
			all := left == 0
			mu.Unlock()
			if all {
				cancel()
			}
		}))
	}
	return ctx, func() {
		for _, s := range stops {
			s()
		}
		cancel()
	}
}
