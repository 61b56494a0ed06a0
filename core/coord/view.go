package coord

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/krabka/krabka-coord/core"
)

// The live view (docs/PROTOCOL.md section 10.1). A client follows each
// partition of the coordination topic it cares about (a role it acquires,
// holds, watches or describes) with one follower goroutine that fetches
// read_committed from the next offset with long polls, folds every record
// into a core.PartitionFolder and wakes whoever waits on the partition.
// Every acquire, leadership and watch of the client on that partition
// shares the view; the follower stops when the last of them lets go.
//
// A waiter waits for its own role: snapshot hands it a channel of that role
// alone, closed when a fetch answer folds a record of the role (or the fold
// restarts, which may change every role). The fold knows each record's
// role, so a fetch answer costs O(its records), not O(the roles of the
// partition), and a renewal of one role wakes no waiter of another
// (issue 35). sync, which waits for the view to reach an offset, waits on
// the partition-wide channel, closed whenever the next offset moves or the
// follower fails.
//
// A transport that reads past the last stable offset (Fetched.Batches)
// hands the view every batch with its producer; the view's core.TxnFolder
// folds a transaction when its COMMIT marker arrives, so a transaction left
// open by one producer (a holder of another role killed between its
// renewal's Produce and its EndTxn) does not hide the renewals the other
// holders commit after it (docs/PROTOCOL.md 12.1). Before a decision to
// act, sync waits (briefly) only for open transactions that hold a record
// of the role being decided.

// followWait is how long one fetch of a follower waits at the broker for
// new records (a long poll; the broker answers as soon as records arrive).
const followWait = 5 * time.Second

// partView is the client's live view of one partition.
type partView struct {
	c *Client
	p int32

	stop context.CancelFunc
	done chan struct{} // closed when the follower goroutine has returned

	mu      sync.Mutex
	refs    int
	fold    *core.PartitionFolder
	txns    *core.TxnFolder // resolves Fetched.Batches into fold
	next    int64           // the next offset to fetch
	lso     int64           // the last stable offset the broker last reported
	changed chan struct{}   // closed and replaced whenever next moves, the fold restarts or a fetch fails
	// roleWait holds a channel for each role somebody waits on (snapshot),
	// closed and removed when a record of that role is folded or the fold
	// restarts; the next snapshot of the role makes a new one.
	roleWait map[string]chan struct{}
	// parked holds the acquisitions parked on a role (acqRun.park): no
	// goroutine waits for them; the follower resumes them (woken) after
	// folding a record of their role or the partition again.
	parked map[string][]*acqRun
	woken  []*acqRun
	wakes  map[string]int64 // role channels closed and holder calls (once per fetch answer) since the view started, by role (tests)
	// holders holds the leaderships of the client on the partition and
	// the electors' leader watches, by role (watch): the follower calls
	// their checkView after it folded a record of their role (touched) or
	// folded the partition again.
	holders map[string][]viewWatcher
	touched map[string]struct{} // roles of holders folded by the fetch answer being applied
	err     error               // the follower's last error; nil after a fetch succeeded
	folded  int64               // records folded since the view started
	resets  int64               // times the fold restarted from the log start
	heardMs int64               // when a fetch last answered (client clock; 0: never)
	skipped int                 // records of the partition skipped by the fold so far
}

// follow returns the client's view of partition p, starting its follower
// when nobody follows p yet. The caller must call release once.
func (c *Client) follow(p int32) (*partView, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, WrapError(ErrClosed, nil, "")
	}
	if v, ok := c.views[p]; ok {
		v.mu.Lock()
		v.refs++
		v.mu.Unlock()
		return v, nil
	}
	ctx, cancel := context.WithCancel(c.root)
	v := &partView{
		c: c, p: p, stop: cancel, done: make(chan struct{}), refs: 1,
		lso: -1, changed: make(chan struct{}), roleWait: map[string]chan struct{}{}, parked: map[string][]*acqRun{},
		wakes: map[string]int64{}, holders: map[string][]viewWatcher{}, touched: map[string]struct{}{},
	}
	v.restartFold()
	c.views[p] = v
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		defer close(v.done)
		v.run(ctx)
	}()
	return v, nil
}

// release gives up one reference; the last one stops the follower.
func (v *partView) release() {
	c := v.c
	c.mu.Lock()
	v.mu.Lock()
	v.refs--
	last := v.refs == 0
	v.mu.Unlock()
	if last && c.views[v.p] == v {
		delete(c.views, v.p)
	}
	c.mu.Unlock()
	if last {
		v.stop()
		c.t.Unfollow(v.p)
	}
}

// run is the follower: fetch from next, fold, wake the waiters; on errors
// it backs off (up to a second) and tries again until the view stops.
func (v *partView) run(ctx context.Context) {
	backoff := 20 * time.Millisecond
	for ctx.Err() == nil {
		v.mu.Lock()
		next := v.next
		v.mu.Unlock()
		f, err := v.c.t.Fetch(ctx, v.p, next, followWait)
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			v.mu.Lock()
			v.err = err
			v.wakeLocked()
			v.mu.Unlock()
			v.c.log().Debug("krabka: following the coordination partition failed; retrying",
				"partition", v.p, "offset", next, "error", err)
			if v.c.clock.Sleep(ctx, backoff) != nil {
				return
			}
			backoff = min(2*backoff, time.Second)
			continue
		}
		backoff = 20 * time.Millisecond
		v.mu.Lock()
		v.err = nil
		v.heardMs = v.c.clock.NowMs()
		moved := false
		read := 0
		if f.Reset {
			// The log start passed the next offset (retention, deleted
			// records) or the topic was recreated: fold again from the start.
			v.restartFold()
			v.next = f.Next
			v.resets++
			moved = true
			v.wakeRolesLocked()
			v.c.log().Info("krabka: the coordination partition's log start moved past the view; folding it again from the start",
				"partition", v.p, "from", next, "log_start", f.Next)
		} else {
			for _, r := range f.Records {
				v.addLocked(r)
			}
			n := len(f.Records)
			for _, b := range f.Batches {
				v.txns.Add(b)
				n += len(b.Records)
			}
			v.folded += int64(n)
			read = n
			if f.Next > v.next {
				v.next = f.Next
				moved = true
			}

		}
		if f.LastStable >= 0 {
			v.lso = f.LastStable
		}
		skipped := v.fold.Skipped()
		v.c.stats.fetched(read, skipped-v.skipped)
		v.skipped = skipped
		if moved {
			v.wakeLocked()
		}
		check := v.touchedLocked()
		woken := v.woken
		v.woken = nil
		v.mu.Unlock()
		for _, l := range check {
			l.checkView()
		}
		for _, a := range woken {
			a.resume()
		}
	}
}

// viewWatcher is called back by a partition's follower after it folded a
// record of the watcher's role (a leadership of the client, an elector's
// leader watch). checkView runs in the follower's goroutine, outside the
// view's lock, and must not block.
type viewWatcher interface{ checkView() }

// watch registers w for role: the follower calls w.checkView after folding
// a record of the role. It checks the view once now. unwatch undoes it.
// Never blocks on the cluster.
func (v *partView) watch(role wireRole, w viewWatcher) {
	k := role.r.String()
	v.mu.Lock()
	v.holders[k] = append(v.holders[k], w)
	v.mu.Unlock()
	w.checkView()
}

// unwatch removes w (registered by watch).
func (v *partView) unwatch(role wireRole, w viewWatcher) {
	k := role.r.String()
	v.mu.Lock()
	defer v.mu.Unlock()
	hs := slices.DeleteFunc(v.holders[k], func(h viewWatcher) bool { return h == w })
	if len(hs) == 0 {
		delete(v.holders, k)
	} else {
		v.holders[k] = hs
	}
}

// touchedLocked returns the watchers whose roles the fetch answer just
// applied folded, and forgets them. The caller holds v.mu.
func (v *partView) touchedLocked() []viewWatcher {
	if len(v.touched) == 0 {
		return nil
	}
	var ls []viewWatcher
	for k := range v.touched {
		ls = append(ls, v.holders[k]...)
		v.wakes[k]++
	}
	clear(v.touched)
	return ls
}

// restartFold starts the fold afresh (a new view, or the log start moved).
// The caller holds v.mu, or owns v alone.
func (v *partView) restartFold() {
	v.fold = core.NewPartitionFolder()
	v.skipped = 0
	v.txns = core.NewTxnFolder(v.addLocked)
}

// addLocked folds one committed record and wakes the waiters of its role.
// The caller holds v.mu.
func (v *partView) addLocked(r core.RawRecord) {
	role, ok := v.fold.AddRawRole(r)
	if !ok {
		return // a key that does not decode: counted as skipped, no role's state moved
	}
	k := role.String()
	if _, ok := v.holders[k]; ok {
		v.touched[k] = struct{}{}
	}
	if ch, ok := v.roleWait[k]; ok {
		close(ch)
		delete(v.roleWait, k)
		v.wakes[k]++
	}
	if runs, ok := v.parked[k]; ok {
		v.woken = append(v.woken, runs...)
		delete(v.parked, k)
		v.wakes[k]++
	}
}

// wakeRolesLocked wakes the waiters of every role (the fold restarted).
func (v *partView) wakeRolesLocked() {
	for k := range v.holders {
		v.touched[k] = struct{}{}
	}
	for k, ch := range v.roleWait {
		close(ch)
		delete(v.roleWait, k)
		v.wakes[k]++
	}
	for k, runs := range v.parked {
		v.woken = append(v.woken, runs...)
		delete(v.parked, k)
		v.wakes[k]++
	}
}

func (v *partView) wakeLocked() {
	close(v.changed)
	v.changed = make(chan struct{})
}

// snapshot returns role's state as the view has it, the view's next offset
// and a channel closed when the view folds the role's next record (or
// folds the partition again from its start). Records of other roles do not
// close it.
func (v *partView) snapshot(role wireRole) (core.State, int64, <-chan struct{}) {
	v.c.stats.viewWaits.Add(1)
	v.mu.Lock()
	defer v.mu.Unlock()
	k := role.r.String()
	ch, ok := v.roleWait[k]
	if !ok {
		ch = make(chan struct{})
		v.roleWait[k] = ch
	}
	return role.stateIn(v.fold), v.next, ch
}

// peek returns role's state as the view has it and the view's next
// offset; waiter or park then waits for what comes after.
func (v *partView) peek(role wireRole) (core.State, int64) {
	v.c.stats.viewWaits.Add(1)
	v.mu.Lock()
	defer v.mu.Unlock()
	return role.stateIn(v.fold), v.next
}

// lease returns the role's current lease in the view (nil: none).
func (v *partView) lease(role wireRole) *core.Lease {
	v.mu.Lock()
	defer v.mu.Unlock()
	return role.stateIn(v.fold).Lease
}

// waiter returns a channel closed when the view folds role's next record
// (or the partition again); closed already when the view's next offset
// moved past next (a decision made at next may be stale).
func (v *partView) waiter(role wireRole, next int64) <-chan struct{} {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.next != next {
		return closedChan
	}
	k := role.r.String()
	ch, ok := v.roleWait[k]
	if !ok {
		ch = make(chan struct{})
		v.roleWait[k] = ch
	}
	return ch
}

var closedChan = func() chan struct{} { ch := make(chan struct{}); close(ch); return ch }()

// park registers a, a run that decided at next to wait for role's next
// record; false (nothing registered) when the view's next offset moved
// past next since. The follower resumes it (woken) when it folds a record
// of role; unpark takes it out.
func (v *partView) park(role wireRole, next int64, a *acqRun) bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.next != next {
		return false
	}
	k := role.r.String()
	v.parked[k] = append(v.parked[k], a)
	return true
}

// unpark removes a from the runs parked on role (if it is there).
func (v *partView) unpark(role wireRole, a *acqRun) {
	k := role.r.String()
	v.mu.Lock()
	defer v.mu.Unlock()
	runs := slices.DeleteFunc(v.parked[k], func(r *acqRun) bool { return r == a })
	if len(runs) == 0 {
		delete(v.parked, k)
	} else {
		v.parked[k] = runs
	}
}

// state returns role's state as the view has it (no channel: for a caller
// that does not wait).
func (v *partView) state(role wireRole) core.State {
	v.mu.Lock()
	defer v.mu.Unlock()
	return role.stateIn(v.fold)
}

// sync brings the view up to the offset the transport lists now (one
// round trip; the last stable offset, or the high watermark for a transport
// that reads past it): afterwards the view holds every record committed
// before the call. Then, for a view that reads past the stable offset, it
// waits up to openTxnWait for the transactions still open that hold a
// record of role (a write of the role answered just before the call whose
// COMMIT marker is not in the partition yet: the coordinator writes markers
// after it answers EndTxn), and for no other: a transaction of another
// producer, abandoned or not, does not delay the decision (docs/PROTOCOL.md
// 12.1). Fails when ctx ends, or with the follower's error when that error
// will not pass by itself (authorization, a missing topic ...).
func (v *partView) sync(ctx context.Context, role wireRole) error {
	start := v.c.clock.NowMs()
	target, err := v.c.t.StableOffset(ctx, v.p)
	if err != nil {
		return err
	}
	for {
		v.mu.Lock()
		next, ferr, changed := v.next, v.err, v.changed
		open := next >= target && !role.r.IsZero() && v.txns.OpenHolds(role.r)
		v.mu.Unlock()
		if next >= target && !open {
			return nil
		}
		if ferr != nil && !retriable(ferr) {
			return ferr
		}
		wait := time.Duration(-1)
		if open {
			wait = time.Duration(core.SatSub(core.SatAdd(start, openTxnWait.Milliseconds()), v.c.clock.NowMs())) * time.Millisecond
			if wait <= 0 {
				v.c.log().Debug("krabka: a transaction of the role is still open after the marker wait; deciding on the view as it is",
					"partition", v.p, "role", role.String())
				return nil
			}
		}
		if wait > 0 {
			if err := v.c.waitChange(ctx, changed, wait); err != nil {
				return WrapError(ErrTimeout, err, "waiting for an open transaction of %s in partition %d", role.String(), v.p)
			}
			continue
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return WrapError(ErrTimeout, ctx.Err(), "bringing the view of partition %d to offset %d (at %d)", v.p, target, next)
		case <-v.done:
			return WrapError(ErrClosed, nil, "the view of partition %d stopped", v.p)
		}
	}
}

// openTxnWait bounds how long sync waits for the markers of transactions
// that hold a record of the role being decided (see sync).
const openTxnWait = time.Second

// openLease returns the latest deadline of a lease of role, other than
// member's own, that a transaction the view reads as open holds (a marker
// not read yet), and whether there is one (core.TxnFolder.OpenLease).
func (v *partView) openLease(role wireRole, member core.MemberID) (int64, bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.txns.OpenLease(role.r, member)
}

// openTxns returns how many transactions the view reads as open, and the
// offset of the oldest one's first record (-1: none).
func (v *partView) openTxns() (int, int64) {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.txns.Open(), v.txns.Stable()
}

// retriable reports the errors that may pass by themselves: the transport's.
func retriable(err error) bool {
	return errors.Is(err, ErrTransport) || errors.Is(err, ErrTimeout)
}

// heard returns when the view last heard from the broker (0: never).
func (v *partView) heard() int64 {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.heardMs
}

// lag returns how far the view is behind the last stable offset the broker
// reported (0 when unknown or caught up).
func (v *partView) lag() int64 {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.lso < 0 || v.next >= v.lso {
		return 0
	}
	return v.lso - v.next
}

// waitChange waits until changed is closed, d passes on the client's
// clock (a call scheduled on it: no goroutine sleeps), or ctx ends (then
// its error).
func (c *Client) waitChange(ctx context.Context, changed <-chan struct{}, d time.Duration) error {
	if d <= 0 {
		d = time.Millisecond
	}
	slept := make(chan struct{})
	t := core.AfterFunc(c.clock, d, func() { close(slept) })
	defer t.Stop()
	select {
	case <-changed:
		return nil
	case <-slept:
		return ctx.Err()
	case <-ctx.Done():
		return ctx.Err()
	case <-c.root.Done():
		// Close ends every wait of the client at once, whatever its clock
		// (a manual clock that nobody advances would otherwise hold an
		// elector's backoff forever).
		return WrapError(ErrClosed, nil, "the client was closed")
	}
}

// viewOf returns the live view of role's partition if the client follows it
// (nil otherwise).
func (c *Client) viewOf(role wireRole) *partView {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.partitions == 0 {
		return nil
	}
	p, err := role.partitionOf(c.partitions)
	if err != nil {
		return nil
	}
	return c.views[p]
}
