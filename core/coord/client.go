package coord

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/krabka/krabka-coord/core"
)

// Client takes roles, renews and checks them over a Transport. It is safe
// for concurrent use. Build it with NewClient (core/kafka.NewClient builds
// one on the Kafka transport).
type Client struct {
	cfg   Config
	t     Transport
	clock core.Clock

	logger *slog.Logger // NewLogger(cfg)
	stats  *clientStats // counters (stats.go)

	root   context.Context // cancelled by Close
	cancel context.CancelFunc
	wg     sync.WaitGroup // background goroutines of leaderships

	mu          sync.Mutex
	closed      bool
	partitions  int32                    // 0 until read from the cluster
	leaderships map[*Leadership]struct{} // not yet ended
	byRole      map[wireRole]*Leadership // the newest leadership of each role
	views       map[int32]*partView      // live views of the partitions followed
	// joined: the (role, member) pairs this client registered (or found
	// registered) in an acquire; Close leaves those it does not hold
	// (krabka.leave.on.close).
	joined map[roleMember]struct{}

	steps stepQueue // parked acquisitions ready to step again (acquire_run.go)
}

type roleMember struct {
	role   wireRole
	member core.MemberID
}

// NewClient returns a client over t. The configuration is validated; nothing
// touches the network. clock nil means SystemClock. Closing the client closes t.
func NewClient(cfg Config, t Transport, clock core.Clock) (*Client, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if t == nil {
		return nil, WrapError(ErrInvalidConfig, nil, "no transport")
	}
	if clock == nil {
		clock = core.SystemClock
	}
	root, cancel := context.WithCancel(context.Background())
	return &Client{
		cfg: cfg, t: t, clock: clock, root: root, cancel: cancel, logger: NewLogger(cfg), stats: newClientStats(),
		leaderships: map[*Leadership]struct{}{},
		byRole:      map[wireRole]*Leadership{},
		views:       map[int32]*partView{},
		joined:      map[roleMember]struct{}{},
	}, nil
}

// Transport returns the transport the client was built on (test aids use
// it to reach an in-process cluster's controls: core/memtransport.Control).
// Never blocks.
func (c *Client) Transport() Transport { return c.t }

// Config returns a copy of the client's configuration.
func (c *Client) Config() Config { return c.cfg }

// TransactionalID returns the transactional.id that stands for role:
// krabka.role.prefix followed by the role name (the text even when the two
// together are longer than a role may be, which every call on it refuses).
func (c *Client) TransactionalID(role core.Role) string {
	if w, err := c.wire(role); err == nil {
		return w.txnID()
	}
	return c.cfg.RolePrefix + role.String()
}

// callCtx returns a context that ends with ctx or with the client.
func (c *Client) callCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	if ctx == nil {
		ctx = context.Background()
	}
	cctx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(c.root, cancel)
	return cctx, func() { stop(); cancel() }
}

// fail turns err into the error a caller sees: ErrClosed once the client is
// closed, ErrTimeout when the caller's deadline passed.
func (c *Client) fail(ctx context.Context, err error) error {
	if err == nil {
		return nil
	}
	if c.root.Err() != nil {
		if errors.Is(err, ErrClosed) {
			return err
		}
		return WrapError(ErrClosed, nil, "the call was cancelled by Client.Close")
	}
	if ctx != nil && errors.Is(ctx.Err(), context.DeadlineExceeded) && !errors.Is(err, ErrTimeout) &&
		ClientErrorKind(err) != ErrFenced && ClientErrorKind(err) != ErrAuthorization && ClientErrorKind(err) != ErrUnsupported {
		return WrapError(ErrTimeout, err, "")
	}
	if errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, ErrTimeout) {
		return WrapError(ErrTimeout, err, "")
	}
	return err
}

func (c *Client) checkOpen() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return WrapError(ErrClosed, nil, "")
	}
	return nil
}

func checkNames(role core.Role, member *core.MemberID) error {
	if role.IsZero() {
		return core.NewError(core.PartRole, core.CatEmptyRole, "role", "the zero Role; build one with NewRole")
	}
	if member != nil && member.IsZero() {
		return core.NewError(core.PartMember, core.CatEmptyMember, "member", "the zero MemberID; build one with NewMemberID")
	}
	return nil
}

// partition returns the role's partition, reading the partition count once.
func (c *Client) partition(ctx context.Context, role wireRole) (int32, error) {
	n, err := c.partitionCount(ctx)
	if err != nil {
		return 0, err
	}
	return role.partitionOf(n)
}

// partitionCount returns the coordination topic's partition count, read
// from the cluster once.
func (c *Client) partitionCount(ctx context.Context) (int32, error) {
	c.mu.Lock()
	n := c.partitions
	c.mu.Unlock()
	if n == 0 {
		var err error
		n, err = c.t.Partitions(ctx)
		if err != nil {
			return 0, err
		}
		c.mu.Lock()
		c.partitions = n
		c.mu.Unlock()
	}
	return n, nil
}

func (c *Client) readState(ctx context.Context, role wireRole, p int32) (core.State, error) {
	recs, err := c.t.Read(ctx, p)
	if err != nil {
		return core.State{}, err
	}
	st := role.fold(recs)
	c.stats.read(role, len(recs), st, c.clock.NowMs())
	return st, nil
}

// sleep sleeps d on the client's clock; it fails when ctx ends, and with
// ErrClosed as soon as the client is closed (whatever its clock: a manual
// clock that nobody advances must not hold a closed client's waits).
func (c *Client) sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		d = time.Millisecond
	}
	cctx, cancel := c.callCtx(ctx)
	defer cancel()
	err := c.clock.Sleep(cctx, d)
	if err != nil && c.root.Err() != nil && (ctx == nil || ctx.Err() == nil) {
		return WrapError(ErrClosed, nil, "the client was closed")
	}
	return err
}

// Acquire takes role for member, waiting as long as the succession rules
// say (docs/PROTOCOL.md sections 6 and 10): it registers the member, waits
// for its turn, then mints a new epoch and writes a lease. A member that
// finds itself holding a live lease (an earlier incarnation) mints too,
// fencing that incarnation.
//
// It reads the role through the client's live view of the role's
// partition: a WAIT ends at its instant or as soon as a record arrives
// (a standby waiting behind a live lease is not woken in between:
// krabka.poll.interval.ms bounds the steps that wait for something no
// record of the role announces, such as its own registration being read
// back or a backoff), and before it challenges it brings the view up to the
// partition's last stable offset. It registers at most once, and again only
// when the log shows its registration removed after that (it was pruned).
//
// Blocks until the role is won, ctx ends (ErrTimeout on a deadline) or the
// client is closed (ErrClosed). Failures that may pass (ErrTransport: a
// broker down, nothing listening yet) are logged and retried with backoff
// until ctx ends (then ErrTimeout carrying the last reason); permanent
// errors of the cluster (ErrAuthorization, ErrAuthentication,
// ErrUnsupported, ErrInvalidConfig ...) end the call.
func (c *Client) Acquire(ctx context.Context, role core.Role, member core.MemberID, opts ...AcquireOption) (*Leadership, error) {
	l, _, err := c.acquire(ctx, role, member, false, opts)
	return l, err
}

// TryAcquire is one pass of Acquire that never waits for another member's
// lease. It registers the member if needed. When the role is not won it
// returns a nil Leadership, a nil error and the instant the answer can
// change. Blocks for the round trips of one pass.
func (c *Client) TryAcquire(ctx context.Context, role core.Role, member core.MemberID, opts ...AcquireOption) (*Leadership, time.Time, error) {
	l, at, err := c.acquire(ctx, role, member, true, opts)
	if err != nil || l != nil {
		return l, time.Time{}, err
	}
	return nil, time.UnixMilli(at), nil
}

func (c *Client) acquire(ctx context.Context, name core.Role, member core.MemberID, try bool, opts []AcquireOption) (*Leadership, int64, error) {
	if err := checkNames(name, &member); err != nil {
		return nil, 0, err
	}
	o, err := acquireOpts(opts)
	if err != nil {
		return nil, 0, err
	}
	cctx, cancel := c.callCtx(ctx)
	defer cancel()
	a, err := newAcqRun(c, cctx, name, member, try, o)
	if err != nil {
		return nil, 0, err
	}
	if err := c.checkOpen(); err != nil {
		return nil, 0, err
	}
	return a.block()
}

// rideThrough makes Acquire ride through failures that may pass (a broker
// down, a leader moving, nothing listening yet: ErrTransport): it logs the
// reason and retries with a growing backoff (50 ms doubling up to
// krabka.poll.interval.ms: retry says how long to wait before the next
// step) until the caller's context ends, which then reports TIMEOUT (or
// CLOSED) with the last reason. With or without a
// timeout the behaviour is the same. TryAcquire (one pass) does not retry.
type rideThrough struct {
	c       *Client
	role    wireRole
	try     bool
	backoff time.Duration
	ride    bool  // riding out an outage (outage.go): ok after a retry starts a grace
	blind   bool  // a retry happened since the last ok
	grace   int64 // until when a holder's lease that expired counts as live (ms, client clock)
}

func (r *rideThrough) ok() {
	r.backoff = 0
	r.backAgain()
}

func (r *rideThrough) retry(ctx context.Context, err error) (time.Duration, bool) {
	if r.try || ClientErrorKind(err) != ErrTransport || ctx.Err() != nil {
		return 0, false
	}
	r.blind = true
	first := r.backoff == 0
	if first {
		r.backoff = 50 * time.Millisecond
	} else if r.backoff *= 2; r.backoff > r.c.cfg.PollInterval {
		r.backoff = r.c.cfg.PollInterval
	}
	lvl := slog.LevelDebug
	if first {
		lvl = slog.LevelWarn // once per streak of failures
	}
	r.c.log().Log(ctx, lvl, "krabka: acquire: retrying after a transport error", "role", r.role.String(), "backoff_ms", r.backoff.Milliseconds(), "error", err.Error())
	return r.backoff, true
}

// joinedRole remembers that this client registered member for role (Close
// leaves it when krabka.leave.on.close is set and the role is not held).
func (c *Client) joinedRole(role wireRole, member core.MemberID) {
	c.mu.Lock()
	c.joined[roleMember{role, member}] = struct{}{}
	c.mu.Unlock()
}

// leaseMessage is the lease record of role (value nil: a tombstone),
// carrying the term's metadata when there is some (docs/PROTOCOL.md 11.1:
// every lease record of a term carries it; the metadata commits with the
// lease, in the same record).
func (c *Client) leaseMessage(role wireRole, p int32, value []byte, meta []byte) Message {
	m := Message{Topic: c.cfg.Topic, Partition: p, Key: role.leaseKey(), Value: value}
	if meta != nil {
		m.Headers = []Header{{Key: core.HeaderMeta, Value: meta}}
	}
	return m
}

// registrationTombstone is the record that removes member's registration.
func (c *Client) registrationTombstone(role wireRole, p int32, member core.MemberID) Message {
	return Message{Topic: c.cfg.Topic, Partition: p, Key: role.registrationKey(member)}
}

// challenge mints a new epoch for role and writes member's lease under it,
// pruning in the same transaction the members that let their turn pass.
func (c *Client) challenge(ctx context.Context, role wireRole, member core.MemberID, p int32, st core.State, now int64, meta []byte) (*Leadership, error) {
	prod, err := c.t.Mint(ctx, role.txnID(), c.cfg.LeaseTxnTimeout())
	if err != nil {
		return nil, err
	}
	tok := prod.Token()
	lease := c.cfg.Lease.Grant(member, tok, c.clock.NowMs())
	msgs := []Message{c.leaseMessage(role, p, core.EncodeLease(lease), meta)}
	pruned := core.PruneList(st, member, now)
	for _, m := range pruned {
		msgs = append(msgs, c.registrationTombstone(role, p, m))
	}
	res, err := prod.Transact(ctx, msgs)
	if err == nil && (len(res) != len(msgs) || res[0].Partition != p || res[0].Offset < 0) {
		err = WrapError(ErrTransport, nil, "lease write of %s returned no produce result for partition %d", role, p)
	}
	if err != nil {
		prod.Close()
		return nil, err
	}
	if len(pruned) > 0 {
		c.log().Info("krabka: won the role and pruned members that let their turn pass",
			"role", role.String(), "member", member.String(), "token", tok.String(), "pruned", len(pruned))
	}
	view, err := c.follow(p)
	if err != nil {
		prod.Close()
		return nil, err
	}
	l := newLeadership(c, role, member, p, prod, lease, view)
	l.meta = meta

	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		view.release()
		prod.Close()
		return nil, WrapError(ErrClosed, nil, "")
	}
	prev := c.byRole[role]
	c.byRole[role] = l
	c.leaderships[l] = struct{}{}
	c.mu.Unlock()
	if prev != nil {
		prev.end(Fenced, WrapError(ErrFenced, nil,
			"role %s was acquired again by this client with token %s", role, tok))
	}
	l.start()
	c.log().Info("krabka: role won", "role", role.String(), "member", member.String(), "token", tok.String(), "partition", p)
	return l, nil
}

// Leave removes member's registration of role (a tombstone of it, written
// outside any transaction: docs/PROTOCOL.md 10.4). A member that leaves is no
// longer in the succession order; an acquire registers it again at the
// tail. Leaving does not end a leadership: a holder that leaves keeps its
// lease until it resigns, closes or its lease runs out. Blocks for one
// write (until ctx ends).
func (c *Client) Leave(ctx context.Context, role core.Role, member core.MemberID) error {
	if err := checkNames(role, &member); err != nil {
		return err
	}
	if err := c.checkOpen(); err != nil {
		return err
	}
	wrole, err := c.wire(role)
	if err != nil {
		return err
	}
	cctx, cancel := c.callCtx(ctx)
	defer cancel()
	p, err := c.partition(cctx, wrole)
	if err != nil {
		return c.fail(cctx, err)
	}
	if _, err := c.t.Append(cctx, p, wrole.registrationKey(member), nil, nil); err != nil {
		return c.fail(cctx, err)
	}
	c.mu.Lock()
	delete(c.joined, roleMember{wrole, member})
	c.mu.Unlock()
	return nil
}

func (c *Client) forget(l *Leadership) {
	c.mu.Lock()
	delete(c.leaderships, l)
	if c.byRole[l.role] == l {
		delete(c.byRole, l.role)
	}
	c.mu.Unlock()
}

// Close cancels the calls blocked on the client (they return ErrClosed),
// ends its leaderships without resigning (their state becomes Closed and
// their calls answer ErrClosed), waits for their background work and closes
// the transport. Idempotent.
func (c *Client) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	ls := make([]*Leadership, 0, len(c.leaderships))
	held := map[roleMember]bool{}
	for l := range c.leaderships {
		ls = append(ls, l)
		held[roleMember{l.role, l.member}] = true
	}
	var leave []roleMember
	if c.cfg.LeaveOnClose {
		for rm := range c.joined {
			if !held[rm] {
				leave = append(leave, rm)
			}
		}
	}
	c.mu.Unlock()
	c.cancel()
	c.leaveAll(leave)
	// End the leaderships in parallel: each may wait (bounded by
	// request.timeout.ms) for its producer's transaction in flight.
	var ends sync.WaitGroup
	for _, l := range ls {
		ends.Add(1)
		go func() {
			defer ends.Done()
			l.end(Closed, WrapError(ErrClosed, nil, "the client was closed"))
		}()
	}
	ends.Wait()
	c.wg.Wait()
	return c.t.Close()
}

// leaveOnCloseTimeout bounds the writes of Close's leaving: a client closed
// while the cluster is unreachable does not hang for request.timeout.ms.
const leaveOnCloseTimeout = 5 * time.Second

// leaveAll writes the registration tombstones of leave (Close with
// krabka.leave.on.close), in parallel, each bounded by request.timeout.ms
// and leaveOnCloseTimeout.
// Failures are logged: the members then keep their places until a winner
// prunes them.
func (c *Client) leaveAll(leave []roleMember) {
	var wg sync.WaitGroup
	for _, rm := range leave {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), min(c.cfg.RequestTimeout, leaveOnCloseTimeout))
			defer cancel()
			p, err := c.partition(ctx, rm.role)
			if err == nil {
				_, err = c.t.Append(ctx, p, rm.role.registrationKey(rm.member), nil, nil)
			}
			if err != nil {
				c.log().Warn("krabka: leaving on close failed; the member keeps its place until a winner prunes it",
					"role", rm.role.String(), "member", rm.member.String(), "error", err)
			}
		}()
	}
	wg.Wait()
}

// String describes the client for logs.
func (c *Client) String() string {
	return fmt.Sprintf("krabka.Client(%v)", c.cfg.BootstrapServers)
}
