package coord

import (
	"context"
	"slices"
	"strings"
	"sync"

	"github.com/krabka/krabka-coord/core"
)

// Many roles (issue 35, docs/MANY-ROLES.md): an ElectorSet is one member's
// election loop over many roles, with one event stream tagged by role and
// roles added and removed at run time; Client.AcquireMany takes many roles
// at once. Both are built on the per-role machinery (an Elector, an
// Acquire and a Leadership per role), so that a shared engine can make
// them cheaper later without changing the API.

// RoleEvent is one event of an ElectorSet: a role's TermEvent, tagged with
// the role. Its TermElectorStopped is the role's last event: the role left
// the set (Remove, Close) or its loop ended by itself (Err says why).
type RoleEvent struct {
	Role core.Role
	TermEvent
	e *Elector // the role's elector that produced it (Release)
}

// Release tells a set built with ElectManualRelease that the consumer is
// done with this TermStopped: the role may campaign again. It releases the
// term of the elector that produced the event, even when the role was
// removed and added again since (a new elector, terms numbered from 1
// again). Other kinds, and a set without ElectManualRelease (Next
// releases), make it a no-op. Idempotent, never blocks.
func (ev RoleEvent) Release() {
	if ev.Kind == TermStopped && ev.e != nil {
		ev.e.Release(ev.Term)
	}
}

// ElectorSet runs one member's election loops over a set of roles: an
// Elector per role (NewElector's guarantees hold for each role), every
// event on one stream (Next or Events) tagged with its role. Roles are
// added (Add) and removed (Remove) while it runs; Close resigns every role
// it holds. The release rule is the elector's, per role: a role campaigns
// again only after its last TermStopped was taken from the stream (with
// ElectManualRelease: after Release of that role and term), so reading the
// stream is what keeps the roles moving; the stream is unbounded.
//
// A role is in at most one place of a client: Add and AcquireMany refuse a
// role already in the set or held by the client (ErrInvalidArgument naming
// the role). An ElectorSet is safe for concurrent use.
type ElectorSet struct {
	c      *Client
	member core.MemberID
	opts   []ElectOption
	manual bool // ElectManualRelease: the caller releases terms (Release)

	ctx    context.Context // ends with Close
	cancel context.CancelFunc

	mu     sync.Mutex
	closed bool
	roles  map[wireRole]*setRole
	loops  sync.WaitGroup
	queue  []RoleEvent
	qWake  chan struct{} // closed and replaced when the queue grows or closes
	qClose bool          // Close ran and every role's last event was moved: nothing more comes
	chOnce sync.Once
	ch     chan RoleEvent
}

// setRole is one role of a set: its elector, the cancel of its loop, and
// done, closed once the loop returned and its last event was queued.
type setRole struct {
	role     core.Role
	e        *Elector
	cancel   context.CancelFunc
	removing bool
	done     chan struct{}

	moving sync.Mutex // held while move takes the elector's events (their order)
	ended  bool       // under moving: the last event was moved and the role left the set
}

// NewElectorSet returns an empty set of election loops of member on c;
// Add puts roles in it. opts apply to every role's Elector (NewElector),
// ElectManualRelease included (then Release a role's term once its
// TermStopped was dealt with). Nothing touches the network until Add. Bad
// options give ErrInvalidArgument naming the problem.
func NewElectorSet(c *Client, member core.MemberID, opts ...ElectOption) (*ElectorSet, error) {
	if c == nil {
		return nil, WrapError(ErrInvalidArgument, nil, "NewElectorSet: no client")
	}
	if member.IsZero() {
		return nil, checkNames(core.MustRole("-"), &member)
	}
	var o electOptions
	o.stopMargin = -1
	for _, f := range opts {
		if f == nil {
			continue
		}
		if err := f(&o); err != nil {
			return nil, err
		}
	}
	if risk := c.cfg.RiskMargin(); o.stopMargin > risk {
		return nil, WrapError(ErrInvalidArgument, nil,
			"ElectStopMargin(%v): must not exceed the risk margin %v (krabka.lease.risk.margin.ms): a term ends only after its lease was at risk", o.stopMargin, risk)
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &ElectorSet{c: c, member: member, manual: o.manualRelease, ctx: ctx, cancel: cancel,
		roles: map[wireRole]*setRole{}, qWake: make(chan struct{})}
	s.opts = append(append(s.opts, opts...), ElectManualRelease())
	return s, nil
}

// Member returns the member the set campaigns for.
func (s *ElectorSet) Member() core.MemberID { return s.member }

// Add puts role in the set and starts its election loop (Elector.Start):
// it campaigns at once. opts apply to this role only, after the set's (the
// C API passes each role's metadata this way). It returns without waiting
// for the network. Errors (each naming the role): ErrInvalidArgument for
// the zero role, a role already in the set (or still being removed), a
// role this client holds outside the set and a bad option; the role's
// length error when krabka.role.prefix and the role together are too long;
// ErrClosed after Close or once the client was closed.
func (s *ElectorSet) Add(role core.Role, opts ...ElectOption) error {
	if err := checkNames(role, nil); err != nil {
		return err
	}
	w, err := s.c.wire(role)
	if err != nil {
		return err
	}
	if err := s.c.checkOpen(); err != nil {
		return WrapError(ErrClosed, nil, "ElectorSet.Add(%s): the client was closed", role)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return WrapError(ErrClosed, nil, "ElectorSet.Add(%s): the set was closed", role)
	}
	if sr, ok := s.roles[w]; ok {
		if sr.removing {
			return WrapError(ErrInvalidArgument, nil, "ElectorSet.Add(%s): the role is still being removed from the set", role)
		}
		return WrapError(ErrInvalidArgument, nil, "ElectorSet.Add(%s): the role is already in the set", role)
	}
	if err := s.c.heldElsewhere("ElectorSet.Add", role, w); err != nil {
		return err
	}
	eopts := s.opts
	if len(opts) > 0 {
		// The set's options, the role's, then ElectManualRelease again
		// (the set releases terms itself).
		eopts = append(append(slices.Clone(s.opts), opts...), ElectManualRelease())
	}
	e, err := NewElector(s.c, role, s.member, eopts...)
	if err != nil {
		return WrapError(ErrInvalidArgument, err, "ElectorSet.Add(%s)", role)
	}
	ctx, cancel := context.WithCancel(s.ctx)
	sr := &setRole{role: role, e: e, cancel: cancel, done: make(chan struct{})}
	e.sink = func() { s.move(w, sr) }
	s.roles[w] = sr
	s.loops.Add(1)
	if err := e.Start(ctx); err != nil {
		delete(s.roles, w)
		s.loops.Done()
		cancel()
		return err
	}
	return nil
}

// move moves a role's queued events onto the set's stream, in order; once
// the role's loop ended and its last event was moved, the role leaves the
// set. The elector calls it (sink) after queueing an event and when its
// loop ends: no goroutine per role waits for the events.
func (s *ElectorSet) move(w wireRole, sr *setRole) {
	sr.moving.Lock()
	defer sr.moving.Unlock()
	if sr.ended {
		return
	}
	for {
		ev, ok, closed := sr.e.take()
		if closed {
			break
		}
		if !ok {
			return
		}
		s.mu.Lock()
		s.queue = append(s.queue, RoleEvent{Role: sr.role, TermEvent: ev, e: sr.e})
		close(s.qWake)
		s.qWake = make(chan struct{})
		s.mu.Unlock()
	}
	sr.ended = true
	sr.cancel()
	s.mu.Lock()
	if s.roles[w] == sr {
		delete(s.roles, w)
	}
	s.mu.Unlock()
	close(sr.done)
	s.loops.Done()
}

// Remove takes role out of the set: its loop ends (a held term is resigned,
// so a standby takes over at once; a standby leaves the race). It blocks
// until the role's last event (TermElectorStopped, after the term's
// TermStopped) is on the stream or ctx ends; the resignation is bounded by
// krabka.request.timeout.ms. Errors: ErrInvalidArgument naming the role
// when it is not in the set; ErrTimeout (or ctx's error) when ctx ended
// first, the removal then finishing in the background.
func (s *ElectorSet) Remove(ctx context.Context, role core.Role) error {
	if ctx == nil {
		ctx = context.Background()
	}
	if err := checkNames(role, nil); err != nil {
		return err
	}
	w, err := s.c.wire(role)
	if err != nil {
		return err
	}
	s.mu.Lock()
	sr, ok := s.roles[w]
	if ok {
		sr.removing = true
	}
	s.mu.Unlock()
	if !ok {
		return WrapError(ErrInvalidArgument, nil, "ElectorSet.Remove(%s): the role is not in the set", role)
	}
	sr.cancel()
	select {
	case <-sr.done:
		return nil
	case <-ctx.Done():
		return s.c.fail(ctx, WrapError(ErrTimeout, ctx.Err(), "ElectorSet.Remove(%s): the role's loop has not ended yet", role))
	}
}

// Roles returns the roles in the set now, sorted (a role whose loop ended
// by itself has left it). Never blocks.
func (s *ElectorSet) Roles() []core.Role {
	s.mu.Lock()
	out := make([]core.Role, 0, len(s.roles))
	for _, sr := range s.roles {
		out = append(out, sr.role)
	}
	s.mu.Unlock()
	slices.SortFunc(out, func(a, b core.Role) int { return strings.Compare(a.String(), b.String()) })
	return out
}

// Len returns how many roles are in the set. Never blocks.
func (s *ElectorSet) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.roles)
}

// Elector returns role's elector (State, Leadership, SetEligible, Healthy
// of one role), nil when the role is not in the set. Read its events from
// the set, never with its own Next or C. Never blocks.
func (s *ElectorSet) Elector(role core.Role) *Elector {
	w, err := s.c.wire(role)
	if err != nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if sr, ok := s.roles[w]; ok {
		return sr.e
	}
	return nil
}

// Held returns the leaderships of the roles the set holds now, by role.
// Never blocks.
func (s *ElectorSet) Held() map[core.Role]*Leadership {
	s.mu.Lock()
	ers := make([]*setRole, 0, len(s.roles))
	for _, sr := range s.roles {
		ers = append(ers, sr)
	}
	s.mu.Unlock()
	out := map[core.Role]*Leadership{}
	for _, sr := range ers {
		if l := sr.e.Leadership(); l != nil {
			out[sr.role] = l
		}
	}
	return out
}

// Next returns the set's next event, blocking until there is one, ctx ends
// (its error; ErrTimeout on a deadline) or the set was closed and every
// event was taken (ErrClosed). Taking a TermStopped lets its role campaign
// again (without ElectManualRelease). Use Next or Events, not both.
func (s *ElectorSet) Next(ctx context.Context) (RoleEvent, error) {
	if ctx == nil {
		ctx = context.Background()
	}
	for {
		s.mu.Lock()
		if len(s.queue) > 0 {
			ev := s.queue[0]
			s.queue[0] = RoleEvent{}
			s.queue = s.queue[1:]
			s.mu.Unlock()
			if !s.manual {
				ev.Release()
			}
			return ev, nil
		}
		closed, wake := s.qClose, s.qWake
		s.mu.Unlock()
		if closed {
			return RoleEvent{}, WrapError(ErrClosed, nil, "the elector set of %s was closed", s.member)
		}
		select {
		case <-wake:
		case <-ctx.Done():
			return RoleEvent{}, s.c.fail(ctx, ctx.Err())
		}
	}
}

// Release tells a set built with ElectManualRelease that the consumer is
// done with term n of role (it processed that TermStopped): the role may
// campaign again. It applies to the role's elector now in the set (term
// numbers start at 1 again when a role is removed and added again:
// RoleEvent.Release releases the elector that produced the event); a role
// no longer in the set is ignored. Never blocks.
func (s *ElectorSet) Release(role core.Role, n uint64) {
	if e := s.Elector(role); e != nil {
		e.Release(n)
	}
}

// Events returns a channel carrying the events of Next; it is closed once
// the set was closed and every event was delivered. Use Next or Events,
// not both.
func (s *ElectorSet) Events() <-chan RoleEvent {
	s.chOnce.Do(func() {
		s.ch = make(chan RoleEvent)
		go func() {
			defer close(s.ch)
			for {
				ev, err := s.Next(context.Background())
				if err != nil {
					return
				}
				s.ch <- ev
			}
		}()
	})
	return s.ch
}

// Close ends every role's loop: held terms are resigned (each bounded by
// krabka.request.timeout.ms, all in parallel), standbys leave the race,
// and every role's last event (TermElectorStopped) is queued; the stream
// then ends (Next: ErrClosed; Events: closed). It blocks until every loop
// ended or ctx ends (ErrTimeout or ctx's error; the loops then end in the
// background). Idempotent: a second Close waits the same way.
func (s *ElectorSet) Close(ctx context.Context) error {
	if ctx == nil {
		ctx = context.Background()
	}
	s.mu.Lock()
	first := !s.closed
	s.closed = true
	s.mu.Unlock()
	if first {
		s.cancel()
		go func() {
			s.loops.Wait()
			s.mu.Lock()
			s.qClose = true
			close(s.qWake)
			s.qWake = make(chan struct{})
			s.mu.Unlock()
		}()
	}
	for {
		s.mu.Lock()
		closed, wake := s.qClose, s.qWake
		s.mu.Unlock()
		if closed {
			return nil
		}
		select {
		case <-wake:
		case <-ctx.Done():
			return s.c.fail(ctx, WrapError(ErrTimeout, ctx.Err(), "ElectorSet.Close: %d roles have not ended yet", s.Len()))
		}
	}
}

// heldElsewhere fails, naming role, when the client holds it (a leadership
// not yet ended).
func (c *Client) heldElsewhere(fn string, role core.Role, w wireRole) error {
	c.mu.Lock()
	l, ok := c.byRole[w]
	if ok {
		_, ok = c.leaderships[l]
	}
	c.mu.Unlock()
	if ok && l.State() == Active {
		return WrapError(ErrInvalidArgument, nil, "%s(%s): this client already holds the role (member %s, token %s)", fn, role, l.Member(), l.Token())
	}
	return nil
}
