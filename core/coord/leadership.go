package coord

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/krabka/krabka-coord/core"
)

// LeadershipState says whether a leadership is active and, if not, how it
// ended.
//
//krabka:enum krabka_leadership_state_t
type LeadershipState int

// The states of a leadership (numbered as krabka_leadership_state_t).
const (
	// Active: the lease is live and nobody is known to have superseded it.
	Active LeadershipState = iota
	// Fenced: the cluster superseded the token (ErrFenced).
	Fenced
	// Expired: renewal failed until the lease deadline (ErrLeaseExpired).
	Expired
	// Resigned: the owner gave the role up (ErrNotLeader).
	Resigned
	// Closed: the owner closed the leadership (ErrNotLeader) or its client
	// (ErrClosed).
	Closed
)

// Message is one record of a guarded write.
type Message struct {
	Topic     string
	Partition int32 // -1: Kafka's key hashing (murmur2 of the key; no key: any partition)
	Key       []byte
	Value     []byte
	Headers   []Header
}

// Header is a record header.
type Header struct {
	Key   string
	Value []byte
}

// ProduceResult says where one message of a guarded write landed.
type ProduceResult struct {
	Topic     string
	Partition int32
	Offset    int64
}

// Leadership is one won role: one token, one lease, one transactional
// producer. It is safe for concurrent use; the calls that talk to the cluster
// run one at a time.
//
// It ends exactly once: Fenced (a transactional step answered 47/90),
// Expired (a renewal was attempted and had not succeeded when the lease
// deadline came; the end happens by the deadline even when the cluster is
// unreachable), Resigned, or Closed. Done is closed then and Err says why.
//
// The deadline alone does not end a leadership. A holder that simply did not
// renew in time (it was paused, or its host renews late) still tries its
// writes, and the broker decides: if a standby minted a newer epoch the
// write is rejected and the leadership ends Fenced; if nobody did, the
// token is still the role's current one and the write is as safe as before.
// The local end is reserved for a holder that knows it cannot reach the
// cluster: that one stops by its deadline instead of waiting for a write to
// fail (the counterpart of ZooKeeper's quiesce on session loss).
type Leadership struct {
	c         *Client
	role      wireRole
	member    core.MemberID
	partition int32
	prod      TxnProducer
	view      *partView // the client's live view of the role's partition (released at the end)

	op chan struct{} // one-slot semaphore serialising transport calls

	mu    sync.Mutex
	lease core.Lease
	meta  []byte // the term's metadata (krabka.meta on every lease record); nil: none
	state LeadershipState
	err   error
	done  chan struct{}
	// renewFailing is set when a renewal fails without a fence and cleared
	// when one succeeds: a failing renewal at the deadline ends the
	// leadership as Expired.
	renewFailing bool
	sched        schedState // the leadership's timers (sched.go)

	bg       context.Context // ends with the leadership
	bgCancel context.CancelFunc
	prodOnce sync.Once

	grp group // concurrent Produce calls waiting for their transaction (group.go)

	pipe pipeState // the inputs read and the offsets committed (pipeline.go)

	risk riskState // the at-risk watcher and the subscriptions of Events (risk.go)

	ride rideState // riding out an outage of the cluster (outage.go); under mu
}

func newLeadership(c *Client, role wireRole, member core.MemberID, p int32, prod TxnProducer, lease core.Lease, view *partView) *Leadership {
	bg, cancel := context.WithCancel(context.Background())
	return &Leadership{
		c: c, role: role, member: member, partition: p, prod: prod, view: view,
		op: make(chan struct{}, 1), lease: lease, state: Active, done: make(chan struct{}),
		bg: bg, bgCancel: cancel,
		grp: group{arrived: make(chan struct{}, 1)},
	}
}

// end records how the leadership ended (first call wins) and releases the
// producer.
func (l *Leadership) end(s LeadershipState, err error) { l.finish(s, err, false) }

// finish is end; with background the producer is released in a goroutine
// that the client's Close waits for (a resignation that was written has
// nothing left to settle, and its caller need not wait for the connections
// to close).
func (l *Leadership) finish(s LeadershipState, err error, background bool) {
	l.mu.Lock()
	if l.state != Active {
		l.mu.Unlock()
		return
	}
	if background {
		// Added while the leadership is active: its hold (sched.go) keeps
		// the wait group above zero, so this cannot race with
		// Client.Close's Wait.
		l.c.wg.Add(1)
	}
	l.state, l.err = s, err
	close(l.done)
	held := l.stopTimersLocked()
	l.checkRiskLocked() // the end for the subscribers of Events
	l.mu.Unlock()
	l.c.stats.role(l.role).end(s)
	l.c.logEnd(l, s, err)
	l.bgCancel()
	l.c.forget(l)
	l.endGroup(err)
	l.view.unwatch(l.role, l)
	if background {
		go func() {
			defer l.c.wg.Done()
			l.closeProducer()
		}()
	} else {
		l.closeProducer()
	}
	l.view.release()
	if held {
		l.c.wg.Done()
	}
}

func (l *Leadership) closeProducer() { l.prodOnce.Do(func() { l.prod.Close() }) }

// Role returns the role (as the caller named it, without
// krabka.role.prefix).
func (l *Leadership) Role() core.Role { return l.c.user(l.role) }

// Member returns the member id.
func (l *Leadership) Member() core.MemberID { return l.member }

// Partition returns the role's partition of the coordination topic.
func (l *Leadership) Partition() int32 { return l.partition }

// Token returns the fencing token this leadership holds: the one minted,
// or the one an own epoch recovery continued it under (docs/PROTOCOL.md
// 10.5: the producer re-initialised itself after a failed transaction and
// the coordinator granted it because nobody else minted in between; the
// next lease carries it).
func (l *Leadership) Token() core.FencingToken { return l.prod.Token() }

// Lease returns the lease this leadership last wrote. Never blocks.
func (l *Leadership) Lease() core.Lease {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.lease
}

// RenewDue reports whether the renew interval has passed since the lease
// was granted (or the deadline is reached). False once the leadership ended.
// It stays true past the deadline: a late renewal is still worth trying,
// and the broker fences it if a standby took over meanwhile.
func (l *Leadership) RenewDue() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.state == Active && l.c.cfg.Lease.RenewDueAt(l.lease, l.c.clock.NowMs())
}

// State returns the state. Never blocks. Active means only that the
// leadership has not been seen to end; it is no proof of leadership. The
// proof is a guarded write that succeeded (the broker accepted the token).
func (l *Leadership) State() LeadershipState {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.state
}

// Done returns a channel closed when the leadership ends for any reason.
func (l *Leadership) Done() <-chan struct{} { return l.done }

// Err returns nil while active; afterwards ErrFenced, ErrLeaseExpired,
// ErrNotLeader (resigned or closed) or ErrClosed (the client was closed).
func (l *Leadership) Err() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.err
}

// begin checks the leadership is usable for a write, takes the operation
// slot and returns a context bounded by ctx and the client; a renewal that
// starts before the deadline is also bounded by the deadline (a renewal
// that has not succeeded by then ends the leadership as Expired). release
// must be called.
func (l *Leadership) begin(ctx context.Context, renewal bool) (context.Context, func(), core.Lease, error) {
	if ctx == nil {
		ctx = context.Background()
	}
	if err := l.Err(); err != nil {
		return nil, nil, core.Lease{}, err
	}
	cctx, cancelCall := l.c.callCtx(ctx)
	stopBg := context.AfterFunc(l.bg, cancelCall)
	release := func() { stopBg(); cancelCall() }
	select {
	case l.op <- struct{}{}:
	case <-cctx.Done():
		release()
		return nil, nil, core.Lease{}, l.failure(ctx, cctx.Err(), renewal)
	}
	rel := func() { <-l.op; release() }
	l.mu.Lock()
	lease, state, err := l.lease, l.state, l.err
	l.mu.Unlock()
	if state != Active {
		rel()
		return nil, nil, core.Lease{}, err
	}
	now := l.c.clock.NowMs()
	if now >= lease.Deadline {
		l.mu.Lock()
		failing := l.renewFailing && !l.ride.riding()
		l.mu.Unlock()
		if failing {
			rel()
			l.end(Expired, WrapError(ErrLeaseExpired, nil, "role %s: lease deadline %d passed while renewals were failing", l.role, lease.Deadline))
			return nil, nil, core.Lease{}, l.Err()
		}
		// Late, but nobody knows better than the broker: try the write.
		return cctx, rel, lease, nil
	}
	if !renewal {
		return cctx, rel, lease, nil
	}
	// A renewal never runs past the lease deadline.
	dctx, dcancel := context.WithCancel(cctx)
	bound := core.AfterFunc(l.c.clock, time.Duration(lease.Deadline-now)*time.Millisecond, dcancel)
	return dctx, func() { bound.Stop(); dcancel(); rel() }, lease, nil
}

// failure classifies err of a transactional step: a fence ends the
// leadership; a failed renewal at or after the deadline ends it as expired
// (before the deadline it is remembered, and the watcher ends the
// leadership when the deadline comes unless a renewal succeeds first).
func (l *Leadership) failure(callerCtx context.Context, err error, renewal bool) error {
	if errors.Is(err, ErrFenced) {
		l.end(Fenced, err)
		return l.Err()
	}
	if st := l.State(); st != Active {
		return l.Err()
	}
	if !renewal {
		return l.c.fail(callerCtx, err)
	}
	l.mu.Lock()
	deadline := l.lease.Deadline
	l.renewFailing = true
	l.ride.failed(err)
	riding := l.ride.riding()
	l.mu.Unlock()
	l.nudge()
	if l.c.clock.NowMs() >= deadline && !riding {
		l.end(Expired, WrapError(ErrLeaseExpired, err, "role %s: lease deadline %d passed", l.role, deadline))
		return l.Err()
	}
	return l.c.fail(callerCtx, err)
}

// Renew writes a fresh lease under the same token, in a transaction of the
// role's producer. ErrFenced: the cluster superseded this leadership (stop
// at once). ErrLeaseExpired: a renewal failed and the deadline passed before
// one succeeded. A renewal that starts before the deadline never runs past
// it; one that starts after it (the holder was late) is sent anyway, and the
// broker fences it if a standby has taken over. Blocks until ctx ends.
func (l *Leadership) Renew(ctx context.Context) error {
	return l.renew(ctx, nil, false)
}

// SetMetadata changes the term's metadata (docs/PROTOCOL.md 11.1): a renewal
// whose lease record carries meta (nil: no metadata from now on). The lease
// and its metadata change in one record, atomically: no reader ever sees
// the metadata with another term's lease. Over core.MaxMetadataBytes is
// ErrInvalidArgument before anything is written. Errors as Renew.
func (l *Leadership) SetMetadata(ctx context.Context, meta []byte) error {
	if err := checkMetadata("metadata", meta); err != nil {
		return err
	}
	return l.renew(ctx, append([]byte(nil), meta...), true)
}

// Metadata returns the term's metadata as last written (nil: none).
func (l *Leadership) Metadata() []byte {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]byte(nil), l.meta...)
}

func (l *Leadership) renew(ctx context.Context, newMeta []byte, setMeta bool) error {
	cctx, release, _, err := l.begin(ctx, true)
	if err != nil {
		return err
	}
	defer release()
	meta := newMeta
	if !setMeta {
		meta = l.Metadata()
		if len(meta) == 0 {
			meta = nil
		}
	}
	tok := l.prod.Token()
	if r, ok := l.prod.(TokenRecoverer); ok {
		// The lease must carry the token its records are written with.
		if tok, err = r.Recover(cctx); err != nil {
			return l.failure(ctx, err, true)
		}
	}
	lease := l.c.cfg.Lease.Grant(l.member, tok, l.c.clock.NowMs())
	res, err := l.prod.Transact(cctx, []Message{l.c.leaseMessage(l.role, l.partition, core.EncodeLease(lease), meta)})
	if err == nil && (len(res) != 1 || res[0].Offset < 0) {
		err = WrapError(ErrTransport, nil, "renewal of %s returned no produce result", l.role)
	}
	l.c.stats.role(l.role).renewal(err)
	l.c.logRenewal(l, lease.Deadline, err)
	if err != nil {
		return l.failure(ctx, err, true)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.state != Active {
		return l.err
	}
	l.renewFailing = false
	l.ride.failed(nil)
	if lease.Deadline > l.lease.Deadline || lease.Token != l.lease.Token {
		l.lease = lease
		l.leaseMovedLocked()
	}
	if setMeta {
		l.meta = meta
	}
	return nil
}

// Produce is the guarded write: it writes msgs in one transaction of the
// role's transactional producer, so the broker rejects them once this
// leadership was superseded (ErrFenced, which ends the leadership). On
// success every message is durable per its topic's settings (acks=all) and
// the results say where each landed, in order. Past the lease deadline it
// is still sent (the broker decides) unless a renewal is failing, in which
// case the leadership ends as Expired (ErrLeaseExpired). Blocks until ctx
// ends.
//
// Concurrent calls are committed together (group commit, group.go): calls
// made while a transaction commits are gathered into the next one, within
// krabka.produce.group.max.messages and krabka.produce.group.max.bytes (a
// call is never split). Each caller gets its own results, or the error of
// the transaction that carried its messages: a fence fails every caller of
// that transaction (and ends the leadership), any other failure (a message
// too large, say) fails that transaction's callers only. A caller's
// messages keep their order; between callers the order is the commit
// order. A caller whose ctx ends before its transaction starts is left out
// of it; one whose ctx ends during its transaction gets ErrTimeout while
// the transaction decides (as for any write whose answer did not arrive).
func (l *Leadership) Produce(ctx context.Context, msgs ...Message) ([]ProduceResult, error) {
	return l.write(ctx, nil, msgs)
}

// write is Produce and ProduceOffsets (pipeline.go): the checks, then the
// call queued for its group transaction.
func (l *Leadership) write(ctx context.Context, offsets []Offset, msgs []Message) ([]ProduceResult, error) {
	if len(msgs) == 0 && len(offsets) == 0 {
		return nil, nil
	}
	if err := CheckMessages(msgs); err != nil {
		return nil, err
	}
	if ctx == nil {
		ctx = context.Background()
	}
	if err := l.Err(); err != nil {
		return nil, err
	}
	call := &produceCall{msgs: msgs, bytes: messageBytes(msgs)}
	if len(offsets) > 0 {
		if _, ok := l.prod.(OffsetProducer); !ok {
			return nil, WrapError(ErrUnsupported, nil, "the transport cannot commit offsets in a transaction")
		}
		offs, err := l.checkOffsets(ctx, offsets)
		if err != nil {
			return nil, err
		}
		call.offsets = offs
	}
	start := time.Now()
	res, err := l.queueCall(ctx, call)
	l.c.stats.role(l.role).write(time.Since(start), err)
	return res, err
}

// CheckMessages checks msgs as Produce does before it writes anything
// (ErrInvalidArgument naming the message): a legal topic name, a partition
// of -1 or more, header names that are UTF-8 and not reserved ("krabka.").
// Callers that must refuse bad input before they start a write (the C
// API's asynchronous produce) call it themselves.
func CheckMessages(msgs []Message) error {
	for i, m := range msgs {
		if !validTopicName(m.Topic) {
			return WrapError(ErrInvalidArgument, nil, "message %d: topic %q is not a legal topic name", i, m.Topic)
		}
		if m.Partition < -1 {
			return WrapError(ErrInvalidArgument, nil, "message %d: partition %d (use -1 for key hashing)", i, m.Partition)
		}
		for _, h := range m.Headers {
			if strings.HasPrefix(h.Key, "krabka.") {
				return WrapError(ErrInvalidArgument, nil, "message %d: header %q: names starting with \"krabka.\" are reserved (docs/PROTOCOL.md 11)", i, h.Key)
			}
			if !utf8.ValidString(h.Key) {
				return WrapError(ErrInvalidArgument, nil, "message %d: a header name is not valid UTF-8", i)
			}
		}
	}
	return nil
}

// queueCall queues call (its messages and offsets set) and waits for its
// transaction.
func (l *Leadership) queueCall(ctx context.Context, call *produceCall) ([]ProduceResult, error) {
	cctx, cancel := l.c.callCtx(ctx)
	defer cancel()
	call.ctx, call.token, call.done = cctx, l.prod.Token(), make(chan struct{})
	l.enqueue(call)
	select {
	case <-call.done:
		return call.res, call.err
	case <-l.done:
		if l.withdraw(call) {
			return nil, l.Err()
		}
		<-call.done // the transaction in flight ends with the leadership
		return call.res, call.err
	case <-cctx.Done():
		if !l.withdraw(call) {
			// Taken: the transaction may still commit these messages.
			select {
			case <-call.done:
				return call.res, call.err
			default:
			}
		}
		return nil, l.c.fail(ctx, cctx.Err())
	}
}

// Confirm is the check before a leader-only read (etcd's Txn on the
// election key, Consul's ?consistent): one DescribeTransactions asks the
// transaction coordinator for the role's current token and Confirm reports
// whether it is still this leadership's token (Token). True: nobody minted
// the role since, so at the moment the coordinator answered, no other
// member could write as its holder. False: another member (or a fence)
// minted a newer epoch, and the broker refuses this leadership's writes.
//
// The comparison is plain equality, as Describe's Current: every client of
// core/kafka caps EndTxn below the version that bumps the epoch at each
// commit (docs/PROTOCOL.md 8, transaction protocol version 2), so the
// coordinator reports the epoch the holder was minted with on clusters
// formatted with transaction version 1 or 2 alike.
//
// Confirm waits for the transactional call in flight (renewal, guarded
// write, resignation) to finish first, so that an own epoch recovery
// (docs/PROTOCOL.md 10.5), which changes the token, is never mistaken for
// another member's mint. A false answer does not end the leadership: the
// broker's refusal of its next write does (ErrFenced), or the live view
// when the successor's lease arrives. An ended leadership answers false
// with the error it ended with. Errors of the request itself (ErrTimeout,
// ErrTransport, ErrAuthorization naming the DESCRIBE ACL on the role's
// transactional id) leave the leadership as it was. Blocks for one round
// trip (and the call in flight), until ctx ends at most.
func (l *Leadership) Confirm(ctx context.Context) (bool, error) {
	cctx, release, _, err := l.begin(ctx, false)
	if err != nil {
		return false, err
	}
	defer release()
	tok := l.Token()
	cur, err := l.c.t.CurrentToken(cctx, l.role.txnID())
	if err != nil {
		if e := l.Err(); e != nil {
			return false, e
		}
		return false, l.c.fail(ctx, err)
	}
	return cur == tok, nil
}

// Resign gives the role up and steps aside (docs/PROTOCOL.md sections 8 and
// 10.2): one transaction under this token holding an expired lease
// (granted_at = deadline = now, same member and token) and a tombstone of
// this member's registration. The first standby then ranks 0 and challenges
// at once; the others keep their stagger. A courtesy, not a fence: stop
// guarded writes first. The leadership is Resigned afterwards even if the
// write failed (the error says why). Resigning an ended leadership returns
// the error it ended with (nil if it was resigned). An acquire registers the
// member again, at the tail.
func (l *Leadership) Resign(ctx context.Context) error { return l.resign(ctx, nil) }

// ResignTo is Resign naming the member to hand over to (docs/PROTOCOL.md
// 11.3): the expired lease carries krabka.successor. If that member is in
// the roster it challenges at once and every other standby one stagger
// later than its rank alone; a member that is not registered is ignored by
// readers (the next standby takes over, as after Resign).
//
// The handoff is a preference, not a promise. A member of another
// implementation (its registration lacks krabka.rejoin: RosterRank.Rejoins
// false) ignores the header and challenges at its own rank: when the
// successor is such a member it does not challenge at once, and when one
// ranks ahead of the successor it may mint first. One mint still wins, so
// nothing unsafe happens; only the target is not guaranteed. Watch the
// role (Client.Watch) to learn who took over.
func (l *Leadership) ResignTo(ctx context.Context, successor core.MemberID) error {
	if successor.IsZero() {
		return WrapError(ErrInvalidArgument, nil, "resign to the zero MemberID")
	}
	return l.resign(ctx, &successor)
}

func (l *Leadership) resign(ctx context.Context, successor *core.MemberID) error {
	_, release, _, err := l.begin(ctx, false)
	if err != nil {
		if l.State() == Resigned {
			return nil
		}
		if l.State() == Active { // the call itself failed (closed client, ctx)
			l.end(Resigned, WrapError(ErrNotLeader, nil, "role %s was resigned", l.role))
		}
		return err
	}
	// The resignation's wait does not end with the leadership (the
	// context begin returns does): a standby the resignation let in may
	// mint and write its lease while the commit's answer is on its way,
	// and the live view then ends this leadership. Cancelling the call
	// then would report a resignation that was written as failed; the
	// broker's answer decides (the producer's Close waits for the
	// transaction in flight). The caller's context and the client still
	// end it.
	tctx, stopT := l.c.callCtx(ctx)
	defer stopT()
	tok := l.Token()
	var werr error
	if r, ok := l.prod.(TokenRecoverer); ok {
		// As in a renewal, the lease must carry the token its records are
		// written with: complete a recovery an earlier failure left
		// pending first (docs/PROTOCOL.md 10.5).
		tok, werr = r.Recover(tctx)
	}
	if werr == nil {
		now := l.c.clock.NowMs()
		expired := core.Lease{Member: l.member, Token: tok, GrantedAt: now, Deadline: now}
		leaseMsg := l.c.leaseMessage(l.role, l.partition, core.EncodeLease(expired), nil) // an expired lease carries no metadata
		if successor != nil {
			leaseMsg.Headers = []Header{{Key: core.HeaderSuccessor, Value: []byte(successor.String())}}
		}
		_, werr = l.prod.Transact(tctx, []Message{leaseMsg, l.c.registrationTombstone(l.role, l.partition, l.member)})
	}
	release()
	switch {
	case errors.Is(werr, ErrFenced):
		// The broker refused the resignation: the leadership was already
		// superseded, and its end says so (not "resigned").
		l.end(Fenced, werr)
	case werr != nil:
		l.end(Resigned, WrapError(ErrNotLeader, nil, "role %s was resigned", l.role))
	default:
		// Written: the producer has no transaction left to settle; it is
		// released in the background.
		l.finish(Resigned, WrapError(ErrNotLeader, nil, "role %s was resigned", l.role), true)
	}
	if werr != nil {
		return l.c.fail(ctx, werr)
	}
	l.c.mu.Lock()
	delete(l.c.joined, roleMember{l.role, l.member})
	l.c.mu.Unlock()
	return nil
}

// Close releases the producer without resigning (standbys take over at the
// lease deadline). The state becomes Closed and Err ErrNotLeader.
// Idempotent; blocks briefly while the producer closes.
func (l *Leadership) Close() error {
	l.end(Closed, WrapError(ErrNotLeader, nil, "role %s: the leadership was closed", l.role))
	return nil
}

// String describes the leadership for logs.
func (l *Leadership) String() string {
	return fmt.Sprintf("Leadership(%s/%s %s %s)", l.role, l.member, l.Token(), l.State())
}
