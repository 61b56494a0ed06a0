package coord

import (
	"bytes"
	"context"
	"slices"
	"sync"
	"time"

	"github.com/krabka/krabka-coord/core"
)

// EventKind says what changed in a watched role.
//
//krabka:enum krabka_watch_event_kind_t prefix=Event
type EventKind int

// The kinds of watch events (numbered as krabka_event_kind_t).
const (
	// EventHolderChanged: a lease names another member, or carries another
	// token, than the lease before it (or the first lease seen).
	EventHolderChanged EventKind = iota
	// EventLeaseRenewed: the same member and token wrote a later deadline
	// (delivered with WatchRenewals, and always when the renewal changed
	// the term's metadata).
	EventLeaseRenewed
	// EventRosterChanged: the roster (its members or their order) changed.
	EventRosterChanged
	// EventRoleFree: the lease's deadline passed on this client's clock, or
	// the lease was cleared or written already expired (a resign), and
	// nobody has taken the role since.
	EventRoleFree
)

// Event is one change of a watched role.
type Event struct {
	Kind EventKind
	Role core.Role
	// Holder is the member the current lease names (zero without a lease).
	Holder    core.MemberID
	HasHolder bool
	// Token is the current lease's token (core.NoEpoch without a lease).
	Token core.FencingToken
	// PrevHolder and PrevToken describe the lease before a HOLDER_CHANGED
	// (HasPrevHolder false and NoEpoch when there was none).
	PrevHolder    core.MemberID
	HasPrevHolder bool
	PrevToken     core.FencingToken
	// Lease is the current lease (nil: none).
	Lease *core.Lease
	// Metadata is the current term's metadata (krabka.meta of the lease
	// record; nil: none).
	Metadata []byte
	// Roster is the roster after the change, in succession order.
	Roster []RosterRank
	// Offset is the offset of the record after which the change was seen
	// (the view's next offset minus one); -1 for a ROLE_FREE by the clock.
	Offset int64
	// At is when this client observed the change.
	At time.Time
}

// WatchOption adjusts a watch.
type WatchOption func(*watchOptions)

type watchOptions struct{ renewals bool }

// WatchRenewals also delivers EventLeaseRenewed.
func WatchRenewals() WatchOption { return func(o *watchOptions) { o.renewals = true } }

// Watch is a subscription to the changes of one role. It holds no epoch and
// registers nothing: it reads the client's live view of the role's
// partition. Events are queued without bound, so a slow reader never holds
// up the view; use Next or C, not both.
type Watch struct {
	c    *Client
	role core.Role // as the caller named it (events carry it)
	wire wireRole  // as the log has it
	opts watchOptions

	cancel context.CancelFunc
	done   chan struct{} // the watch goroutine returned

	mu     sync.Mutex
	queue  []Event
	wake   chan struct{} // closed and replaced when queue grows or the watch ends
	err    error         // why the watch ended (nil while it runs)
	chOnce sync.Once
	ch     chan Event
}

// Watch follows role (see Watch). It brings the view up to the partition's
// last stable offset first, so the first events describe the current state:
// a HOLDER_CHANGED (from no holder) when a lease exists, followed by a
// ROLE_FREE if it has expired, and a ROSTER_CHANGED when the roster is not
// empty. Blocks until that first sync is done or ctx ends; the watch
// itself lives until Close or Client.Close.
func (c *Client) Watch(ctx context.Context, role core.Role, opts ...WatchOption) (*Watch, error) {
	if err := checkNames(role, nil); err != nil {
		return nil, err
	}
	if err := c.checkOpen(); err != nil {
		return nil, err
	}
	wrole, err := c.wire(role)
	if err != nil {
		return nil, err
	}
	cctx, cancel := c.callCtx(ctx)
	defer cancel()
	p, err := c.partition(cctx, wrole)
	if err != nil {
		return nil, c.fail(cctx, err)
	}
	v, err := c.follow(p)
	if err != nil {
		return nil, err
	}
	if err := v.sync(cctx, wrole); err != nil {
		v.release()
		return nil, c.fail(cctx, err)
	}
	// A watched role is one this client reads: Stats lists it, with the
	// view lag of its live view (what the exporter's
	// krabka_role_view_lag_seconds shows).
	c.stats.role(wrole)
	wctx, wcancel := context.WithCancel(c.root)
	w := &Watch{c: c, role: role, wire: wrole, cancel: wcancel, done: make(chan struct{}), wake: make(chan struct{})}
	for _, o := range opts {
		o(&w.opts)
	}
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		defer close(w.done)
		defer v.release()
		w.run(wctx, v)
	}()
	return w, nil
}

// run turns the view's changes of the role into events.
func (w *Watch) run(ctx context.Context, v *partView) {
	var (
		prev      core.State // empty at first: the initial state shows as changes
		prevSeen  bool
		freeFired bool // ROLE_FREE delivered for the current lease
	)
	for {
		st, next, changed := v.snapshot(w.wire)
		now := w.c.clock.NowMs()
		evs, free := w.diff(prev, prevSeen, st, next-1, now, freeFired)
		freeFired = free
		prev, prevSeen = st, true
		w.push(evs...)
		// Wait for the next change, or for the lease deadline (ROLE_FREE by
		// the clock).
		wait := time.Duration(0)
		if st.Lease != nil && !freeFired {
			wait = time.Duration(core.SatSub(st.Lease.Deadline, now)) * time.Millisecond
		}
		if wait > 0 {
			if err := w.c.waitChange(ctx, changed, wait); err != nil {
				w.finish(WrapError(ErrClosed, nil, "the watch of %s was closed", w.role))
				return
			}
			continue
		}
		select {
		case <-changed:
		case <-ctx.Done():
			w.finish(WrapError(ErrClosed, nil, "the watch of %s was closed", w.role))
			return
		}
	}
}

// diff returns the events between two states of the role, and whether
// ROLE_FREE has now been delivered for the current lease.
func (w *Watch) diff(prev core.State, prevSeen bool, cur core.State, offset, now int64, freeFired bool) ([]Event, bool) {
	var evs []Event
	at := time.UnixMilli(now)
	ev := func(k EventKind, off int64) Event {
		e := Event{Kind: k, Role: w.role, Token: core.NoEpoch, PrevToken: core.NoEpoch, Roster: rosterRanks(cur), Offset: off, At: at}
		if cur.Lease != nil {
			l := *cur.Lease
			e.Lease, e.Holder, e.HasHolder, e.Token = &l, l.Member, true, l.Token
			e.Metadata = append([]byte(nil), cur.Metadata...)
		}
		return e
	}
	p, c := prev.Lease, cur.Lease
	switch {
	case c == nil && p != nil:
		// The lease was cleared (a lease tombstone: the first resign).
		if !freeFired {
			evs = append(evs, ev(EventRoleFree, offset))
		}
		freeFired = false
	case c != nil && (p == nil || c.Member != p.Member || c.Token != p.Token):
		e := ev(EventHolderChanged, offset)
		if p != nil {
			e.PrevHolder, e.HasPrevHolder, e.PrevToken = p.Member, true, p.Token
		}
		evs = append(evs, e)
		freeFired = false
		if !c.LiveAt(now) {
			evs = append(evs, ev(EventRoleFree, offset))
			freeFired = true
		}
	case c != nil && *c != *p:
		// Same member and token: a renewal, or a resign's expired lease.
		if c.Deadline > p.Deadline {
			if w.opts.renewals || !bytes.Equal(prev.Metadata, cur.Metadata) {
				// A renewal that changed the term's metadata is always
				// delivered.
				evs = append(evs, ev(EventLeaseRenewed, offset))
			}
			if c.LiveAt(now) {
				freeFired = false
			}
		}
		if !c.LiveAt(now) && !freeFired {
			evs = append(evs, ev(EventRoleFree, offset))
			freeFired = true
		}
	case c != nil && !c.LiveAt(now) && !freeFired && prevSeen:
		// Nothing new in the log: the deadline passed on the clock.
		evs = append(evs, ev(EventRoleFree, -1))
		freeFired = true
	}
	if !sameRoster(prev.Roster, cur.Roster) {
		evs = append(evs, ev(EventRosterChanged, offset))
	}
	return evs, freeFired
}

func sameRoster(a, b []core.RosterEntry) bool {
	return slices.EqualFunc(a, b, func(x, y core.RosterEntry) bool { return x.Member == y.Member && x.Offset == y.Offset })
}

func (w *Watch) push(evs ...Event) {
	if len(evs) == 0 {
		return
	}
	w.mu.Lock()
	w.queue = append(w.queue, evs...)
	close(w.wake)
	w.wake = make(chan struct{})
	w.mu.Unlock()
}

func (w *Watch) finish(err error) {
	w.mu.Lock()
	if w.err == nil {
		w.err = err
	}
	close(w.wake)
	w.wake = make(chan struct{})
	w.mu.Unlock()
}

// Next returns the next event, blocking until one is there, ctx ends (its
// error, ErrTimeout on a deadline) or the watch ends (ErrClosed, after every
// queued event was returned).
func (w *Watch) Next(ctx context.Context) (Event, error) {
	if ctx == nil {
		ctx = context.Background()
	}
	for {
		w.mu.Lock()
		if len(w.queue) > 0 {
			e := w.queue[0]
			w.queue[0] = Event{}
			w.queue = w.queue[1:]
			w.mu.Unlock()
			return e, nil
		}
		err, wake := w.err, w.wake
		w.mu.Unlock()
		if err != nil {
			return Event{}, err
		}
		select {
		case <-wake:
		case <-ctx.Done():
			return Event{}, w.c.fail(ctx, ctx.Err())
		}
	}
}

// C returns a channel carrying the same events as Next; it is closed when
// the watch ends. Use Next or C, not both.
func (w *Watch) C() <-chan Event {
	w.chOnce.Do(func() {
		w.ch = make(chan Event)
		go func() {
			defer close(w.ch)
			for {
				e, err := w.Next(context.Background())
				if err != nil {
					return
				}
				select {
				case w.ch <- e:
				case <-w.done:
					return
				}
			}
		}()
	})
	return w.ch
}

// Role returns the watched role.
func (w *Watch) Role() core.Role { return w.role }

// Close ends the watch: Next answers ErrClosed once the queued events are
// read. Idempotent; waits for the watch's goroutine.
func (w *Watch) Close() error {
	w.cancel()
	<-w.done
	return nil
}
