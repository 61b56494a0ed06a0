package memtransport

import (
	"context"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/krabka/krabka-coord/core"
	"github.com/krabka/krabka-coord/core/coord"
)

// Named clusters: the in-process cluster behind bootstrap.servers=mem://NAME
// (docs/TESTING.md). NewNamed registers a cluster under a name for the
// whole process; core/kafka.NewClient, the constructor every surface uses,
// routes a configuration naming it to Open, which gives the client a
// Transport of the cluster and its own view of the cluster's clock. The
// controls (Control) act on one such client: cut its link, pause it, kill
// it, mint its role from outside.
//
// The user-facing API lives here rather than in a package of its own
// because this package is the model: a second package would only forward
// to it.

// ClockStartMs is the instant (epoch milliseconds) a named cluster's
// manual clock reads when the cluster is created: 2026-01-01T00:00:00Z.
const ClockStartMs int64 = 1767225600000

// MaxPartitions bounds the partition count of a named cluster (that of
// krabka.topic.partitions).
const MaxPartitions = 100000

var registry = struct {
	sync.Mutex
	byName map[string]*Cluster
}{byName: map[string]*Cluster{}}

// ClusterOption adjusts NewNamed.
type ClusterOption func(*clusterOptions)

type clusterOptions struct{ realTime bool }

// WithRealTime makes the cluster's clock the system clock instead of a
// manual one (Advance then fails).
func WithRealTime() ClusterOption { return func(o *clusterOptions) { o.realTime = true } }

// NewNamed returns a cluster registered under name for the whole process,
// so that clients with bootstrap.servers=mem://name join it, with the given
// partition count for every topic (1..MaxPartitions) and a manual clock
// reading ClockStartMs (WithRealTime: the system clock). Never blocks.
// Errors match coord.ErrInvalidConfig: an invalid name (coord.ValidateMemName),
// a partition count out of range, a name a live cluster has.
func NewNamed(name string, partitions int32, opts ...ClusterOption) (*Cluster, error) {
	if err := coord.ValidateMemName(name); err != nil {
		return nil, err
	}
	if partitions < 1 || partitions > MaxPartitions {
		return nil, coord.WrapError(coord.ErrInvalidConfig, nil, "in-process cluster %q: partitions %d is out of range (1..%d)", name, partitions, MaxPartitions)
	}
	var o clusterOptions
	for _, opt := range opts {
		opt(&o)
	}
	c := NewCluster(partitions)
	c.name = name
	if o.realTime {
		c.clock = core.SystemClock
	} else {
		c.manual = core.NewManualClock(ClockStartMs)
		c.clock = c.manual
	}
	registry.Lock()
	defer registry.Unlock()
	if _, dup := registry.byName[name]; dup {
		return nil, coord.WrapError(coord.ErrInvalidConfig, nil, "an in-process cluster named %q already exists in this process (close it first or pick another name)", name)
	}
	registry.byName[name] = c
	return c, nil
}

// Open returns a new client view of the named cluster writing its
// coordination records to topic, and that client's view of the cluster's
// clock (frozen while the client is paused). core/kafka.NewClient calls it
// for bootstrap.servers=mem://name. Never blocks. Errors match
// coord.ErrInvalidConfig: an invalid name, or no live cluster of that name
// in the process.
func Open(name, topic string) (*Transport, core.Clock, error) {
	if err := coord.ValidateMemName(name); err != nil {
		return nil, nil, err
	}
	registry.Lock()
	c := registry.byName[name]
	registry.Unlock()
	if c == nil {
		return nil, nil, coord.WrapError(coord.ErrInvalidConfig, nil, "bootstrap.servers=%s%s: no in-process cluster named %q exists in this process (create it first: docs/TESTING.md)", coord.MemScheme, name, name)
	}
	t := c.Transport(topic)
	t.clock = NewPausableClock(c.clock)
	return t, t.clock, nil
}

// Name returns the name the cluster is registered under ("" for a cluster
// of NewCluster).
func (c *Cluster) Name() string { return c.name }

// Close unregisters the cluster's name (a new cluster may take it) and
// destroys it: every call of a client still on it fails at once with
// coord.ErrTransport from now on. Idempotent; never blocks.
func (c *Cluster) Close() error {
	registry.Lock()
	if registry.byName[c.name] == c {
		delete(registry.byName, c.name)
	}
	registry.Unlock()
	c.mu.Lock()
	c.destroyed = true
	c.notifyLocked()
	c.mu.Unlock()
	return nil
}

// PartitionCount returns the partition count of every topic of the cluster.
func (c *Cluster) PartitionCount() int32 { return c.partitions }

// Clock returns the cluster's clock (nil for a cluster of NewCluster).
func (c *Cluster) Clock() core.Clock { return c.clock }

// NowMs reads the cluster's clock (epoch milliseconds).
func (c *Cluster) NowMs() int64 {
	if c.clock == nil {
		return 0
	}
	return c.clock.NowMs()
}

// Advance moves the cluster's manual clock forward by d (truncated to
// milliseconds) and wakes the timers of its clients whose time has come,
// except those of paused clients. It does not wait for what the woken
// timers do. Errors match coord.ErrInvalidConfig: d negative (the clock
// never goes backwards), a real-time clock.
func (c *Cluster) Advance(d time.Duration) error {
	if d < 0 {
		return coord.WrapError(coord.ErrInvalidConfig, nil, "in-process cluster %q: cannot advance the clock by %v: the clock never goes backwards", c.name, d)
	}
	if c.manual == nil {
		return coord.WrapError(coord.ErrInvalidConfig, nil, "in-process cluster %q runs on real time: its clock cannot be advanced", c.name)
	}
	c.manual.Advance(d)
	return nil
}

// SetAvailable(false) makes every call of every client of the cluster fail
// at once with coord.ErrTransport until SetAvailable(true).
func (c *Cluster) SetAvailable(on bool) {
	c.mu.Lock()
	c.unavailable = !on
	c.notifyLocked()
	c.mu.Unlock()
}

// MintTxn mints a new token for the transactional id at the cluster's
// coordinator (InitProducerId, as Mint does) without writing anything: a
// blind successor. Every earlier producer of the id is fenced. Errors:
// coord.ErrTransport while the cluster is unavailable or destroyed.
func (c *Cluster) MintTxn(txnID string) (core.FencingToken, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case c.destroyed:
		return core.NoEpoch, coord.WrapError(coord.ErrTransport, nil, "in-process cluster %q was destroyed", c.name)
	case c.unavailable:
		return core.NoEpoch, coord.WrapError(coord.ErrTransport, nil, "in-process cluster %q is unavailable (made so by the test)", c.name)
	}
	return c.mintLocked(txnID), nil
}

// Client is the controls of one client of a named cluster (Control).
type Client struct {
	cl *coord.Client
	t  *Transport
}

// Control returns the controls of cl, a client built on a named in-process
// cluster (core/kafka.NewClient with bootstrap.servers=mem://NAME). Never
// blocks. Errors match coord.ErrInvalidConfig: cl nil, or not in-process.
func Control(cl *coord.Client) (*Client, error) {
	if cl == nil {
		return nil, coord.WrapError(coord.ErrInvalidConfig, nil, "no client given")
	}
	t, ok := cl.Transport().(*Transport)
	if !ok || t.clock == nil {
		return nil, coord.WrapError(coord.ErrInvalidConfig, nil, "the client is not connected to an in-process cluster (its bootstrap.servers is %q, not %sNAME): test controls need one", strings.Join(cl.Config().BootstrapServers, ","), coord.MemScheme)
	}
	return &Client{cl: cl, t: t}, nil
}

// Cluster returns the cluster the client is on.
func (k *Client) Cluster() *Cluster { return k.t.c }

func (k *Client) live(what string) error {
	k.t.mu.Lock()
	defer k.t.mu.Unlock()
	if k.t.killed {
		return coord.WrapError(coord.ErrInvalidConfig, nil, "cannot %s a killed client", what)
	}
	return nil
}

// Cut makes every call of the client fail at once with coord.ErrTransport
// (a link that refuses connections) until Heal. Errors: a killed client.
func (k *Client) Cut() error {
	if err := k.live("cut"); err != nil {
		return err
	}
	k.t.SetFault(Refuse)
	return nil
}

// Heal undoes Cut. Errors: a killed client.
func (k *Client) Heal() error {
	if err := k.live("heal"); err != nil {
		return err
	}
	k.t.SetFault(Healthy)
	return nil
}

// Pause stops the client as SIGSTOP would: its calls hold until Resume (or
// their context ends) and its view of the clock freezes, so its timers do
// not fire. Idempotent. Errors: a killed client.
func (k *Client) Pause() error {
	if err := k.live("pause"); err != nil {
		return err
	}
	k.t.clock.Pause()
	k.t.mu.Lock()
	if k.t.resumed == nil {
		k.t.resumed = make(chan struct{})
	}
	k.t.mu.Unlock()
	return nil
}

// Resume undoes Pause: the held calls go on and the client's clock jumps
// to the cluster's. Idempotent. Errors: a killed client.
func (k *Client) Resume() error {
	if err := k.live("resume"); err != nil {
		return err
	}
	k.t.mu.Lock()
	if k.t.resumed != nil {
		close(k.t.resumed)
		k.t.resumed = nil
	}
	k.t.mu.Unlock()
	k.t.clock.Resume()
	return nil
}

// Kill makes the client's process die: none of its calls reaches the
// cluster again (they fail at once with coord.ErrTransport), so it neither
// resigns nor leaves, also not when closed: its leases stay until their
// deadline. A paused client is released (its held calls fail). Idempotent.
func (k *Client) Kill() {
	k.t.mu.Lock()
	k.t.killed = true
	if k.t.resumed != nil {
		close(k.t.resumed)
		k.t.resumed = nil
	}
	k.t.mu.Unlock()
	k.t.clock.Resume()
}

// Mint is a blind successor of role: it mints a new token for the role's
// transactional id as this client names it (krabka.role.prefix + role) at
// the cluster's coordinator without writing a lease, and returns it. The
// role's holder learns nothing; its next guarded write, renewal or resign
// is refused as fenced. Goes straight to the cluster (works while this
// client is cut, paused or killed). Errors: an invalid role (core's name
// errors), coord.ErrTransport while the cluster is unavailable or
// destroyed.
func (k *Client) Mint(role core.Role) (core.FencingToken, error) {
	if _, err := core.NewRole(role.String()); err != nil {
		return core.NoEpoch, err
	}
	return k.t.c.MintTxn(k.cl.TransactionalID(role))
}

// PausableClock is a view of a base clock that a pause freezes: the view
// of one client of a named cluster (its clock, frozen while the client is
// paused), also usable on its own (a test pausing a client of a real
// cluster models SIGSTOP with it). Safe for concurrent use.
type PausableClock struct {
	base core.Clock

	mu       sync.Mutex
	frozenAt int64
	resumed  chan struct{}    // non-nil while paused; closed by Resume
	held     []*pausableTimer // AfterFunc calls that came due while paused (run by Resume)
}

var _ core.TimerClock = (*PausableClock)(nil)

// NewPausableClock returns a running view of base.
func NewPausableClock(base core.Clock) *PausableClock { return &PausableClock{base: base} }

// Pause freezes the view at base's current time: NowMs answers that time
// and Sleep does not return (except by its context) until Resume.
// Idempotent.
func (k *PausableClock) Pause() {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.resumed == nil {
		k.frozenAt, k.resumed = k.base.NowMs(), make(chan struct{})
	}
}

// Resume undoes Pause: the view jumps to base's time, and the sleeps whose
// end passed return. Idempotent.
//
// The AfterFunc calls that came due while paused run in the calling
// goroutine before Resume returns, in the order they came due.
func (k *PausableClock) Resume() {
	k.mu.Lock()
	if k.resumed != nil {
		close(k.resumed)
		k.resumed = nil
	}
	held := k.held
	k.held = nil
	k.mu.Unlock()
	for _, t := range held {
		k.fire(t)
	}
}

// pausableTimer is an AfterFunc call on a PausableClock.
type pausableTimer struct {
	k     *PausableClock
	until int64 // the view's instant of the call
	f     func()

	// Under k.mu:
	state int        // timerPending, timerStarted or timerStopped
	base  core.Timer // the call scheduled on the base clock
}

const (
	timerPending = iota
	timerStarted
	timerStopped
)

// AfterFunc implements core.TimerClock: f runs once the view reads at
// least its now + d while it is not paused, as a Sleep of d would return.
// The call is scheduled on the base clock (core.AfterFunc: f runs where
// the base clock runs its calls); one that comes due while the view is
// paused runs in Resume. Never blocks.
func (k *PausableClock) AfterFunc(d time.Duration, f func()) core.Timer {
	t := &pausableTimer{k: k, until: k.NowMs() + d.Milliseconds(), f: f}
	k.arm(t)
	return t
}

// arm schedules t on the base clock at the view's instant t.until.
func (k *PausableClock) arm(t *pausableTimer) {
	left := time.Duration(t.until-k.base.NowMs()) * time.Millisecond
	b := core.AfterFunc(k.base, left, func() { k.fire(t) })
	k.mu.Lock()
	if t.state == timerPending {
		t.base = b
	}
	k.mu.Unlock()
}

// fire runs t's call once its time has come and the view runs: while
// paused it holds t for Resume; before t's instant (the base clock was set
// back) it schedules t again.
func (k *PausableClock) fire(t *pausableTimer) {
	k.mu.Lock()
	if t.state != timerPending {
		k.mu.Unlock()
		return
	}
	if k.resumed != nil {
		k.held = append(k.held, t)
		k.mu.Unlock()
		return
	}
	if k.base.NowMs() < t.until {
		k.mu.Unlock()
		k.arm(t)
		return
	}
	t.state = timerStarted
	k.mu.Unlock()
	t.f()
}

// Stop implements core.Timer.
func (t *pausableTimer) Stop() bool {
	k := t.k
	k.mu.Lock()
	if t.state != timerPending {
		k.mu.Unlock()
		return false
	}
	t.state = timerStopped
	if i := slices.Index(k.held, t); i >= 0 {
		k.held = slices.Delete(k.held, i, i+1)
	}
	b := t.base
	k.mu.Unlock()
	if b != nil {
		b.Stop()
	}
	return true
}

// NowMs implements core.Clock: base's time, or the time of the Pause.
func (k *PausableClock) NowMs() int64 {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.resumed != nil {
		return k.frozenAt
	}
	return k.base.NowMs()
}

// Sleep implements core.Clock: it returns once base reads the view's now
// + d while the view is not paused, or with ctx's error when ctx ends.
func (k *PausableClock) Sleep(ctx context.Context, d time.Duration) error {
	until := k.NowMs() + d.Milliseconds()
	for {
		k.mu.Lock()
		resumed := k.resumed
		k.mu.Unlock()
		if resumed != nil {
			select {
			case <-resumed:
				continue
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		left := until - k.base.NowMs()
		if left <= 0 {
			return ctx.Err()
		}
		if err := k.base.Sleep(ctx, time.Duration(left)*time.Millisecond); err != nil {
			return err
		}
	}
}
