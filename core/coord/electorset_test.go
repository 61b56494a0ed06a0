package coord_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/krabka/krabka-coord/core"
	"github.com/krabka/krabka-coord/core/coord"
)

// Broker-free tests of the API for many roles (ElectorSet, AcquireMany) on
// the in-memory transport.

// setRecorder reads an ElectorSet's stream and keeps its events.
type setRecorder struct {
	s    *coord.ElectorSet
	mu   sync.Mutex
	evs  []coord.RoleEvent
	read chan struct{} // closed when the stream ended
}

func recordSet(s *coord.ElectorSet) *setRecorder {
	r := &setRecorder{s: s, read: make(chan struct{})}
	go func() {
		defer close(r.read)
		for ev := range s.Events() {
			r.mu.Lock()
			r.evs = append(r.evs, ev)
			r.mu.Unlock()
		}
	}()
	return r
}

// of returns the events of role (all roles: the zero role), in order.
func (r *setRecorder) of(role core.Role) []coord.TermEvent {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []coord.TermEvent
	for _, ev := range r.evs {
		if role.IsZero() || ev.Role == role {
			out = append(out, ev.TermEvent)
		}
	}
	return out
}

// count returns how many events of kind k role has.
func (r *setRecorder) count(role core.Role, k coord.TermEventKind) int {
	n := 0
	for _, ev := range r.of(role) {
		if ev.Kind == k {
			n++
		}
	}
	return n
}

func (r *setRecorder) lastOf(role core.Role, k coord.TermEventKind) coord.TermEvent {
	evs := r.of(role)
	for i := len(evs) - 1; i >= 0; i-- {
		if evs[i].Kind == k {
			return evs[i]
		}
	}
	return coord.TermEvent{}
}

// checkTags asserts that every term event's leadership is of the role the
// event is tagged with.
func (r *setRecorder) checkTags(t *testing.T, name string) {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	for i, ev := range r.evs {
		if ev.Leadership != nil && ev.Leadership.Role() != ev.Role {
			t.Fatalf("%s: event %d tagged %s carries the leadership of %s", name, i, ev.Role, ev.Leadership.Role())
		}
	}
}

func setRoles(n int) []core.Role {
	out := make([]core.Role, n)
	for i := range out {
		out[i] = core.MustRole(fmt.Sprintf("shard-%02d", i))
	}
	return out
}

func newSet(t *testing.T, c *coord.Client, m core.MemberID, roles []core.Role, opts ...coord.ElectOption) (*coord.ElectorSet, *setRecorder) {
	t.Helper()
	s, err := coord.NewElectorSet(c, m, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close(bg()) })
	r := recordSet(s)
	for _, ro := range roles {
		if err := s.Add(ro); err != nil {
			t.Fatal(err)
		}
	}
	return s, r
}

// One set over five roles: a term per role, each event tagged with its
// role; a role removed at run time stops (RESIGNED) and ends alone; a role
// added at run time starts; Close resigns the rest and ends the stream.
func TestElectorSetAddRemoveAndTaggedEvents(t *testing.T) {
	e := newEnv(t)
	c, _ := e.client()
	roles := setRoles(5)
	s, r := newSet(t, c, ma, roles)
	for _, ro := range roles {
		waitFor(t, ro.String()+"'s term", func() bool { return r.count(ro, coord.TermStarted) == 1 })
	}
	if got := s.Roles(); !slices.Equal(got, roles) || s.Len() != 5 || len(s.Held()) != 5 {
		t.Fatalf("roles %v, len %d, held %d", got, s.Len(), len(s.Held()))
	}
	tokens := map[core.Role]core.FencingToken{}
	for _, ro := range roles {
		st := r.lastOf(ro, coord.TermStarted)
		if st.Term != 1 || st.Leadership.Role() != ro || st.Holder != ma {
			t.Fatalf("%s: STARTED %+v", ro, st)
		}
		tokens[ro] = st.Token
	}
	// Remove one role: its term stops RESIGNED, its loop ends, nobody else moves.
	gone := roles[2]
	if err := s.Remove(bg(), gone); err != nil {
		t.Fatal(err)
	}
	evs := r.of(gone)
	waitFor(t, "the removed role's last event", func() bool { evs = r.of(gone); return len(evs) > 0 && evs[len(evs)-1].Kind == coord.TermElectorStopped })
	if stop := r.lastOf(gone, coord.TermStopped); stop.Reason != coord.StopResigned || stop.Term != 1 {
		t.Fatalf("removed role stopped %+v", stop)
	}
	checkPairing(t, gone.String(), evs, true)
	if s.Elector(gone) != nil || slices.Contains(s.Roles(), gone) || s.Len() != 4 {
		t.Fatalf("%s still in the set: %v", gone, s.Roles())
	}
	for _, ro := range roles {
		if ro == gone {
			continue
		}
		if n := r.count(ro, coord.TermStopped); n != 0 {
			t.Fatalf("%s stopped %d times when %s was removed", ro, n, gone)
		}
		if l := s.Held()[ro]; l == nil || l.Token() != tokens[ro] || l.State() != coord.Active {
			t.Fatalf("%s: held %v", ro, l)
		}
	}
	if err := s.Remove(bg(), gone); !errors.Is(err, coord.ErrInvalidArgument) || !strings.Contains(err.Error(), gone.String()) {
		t.Fatalf("removing a role not in the set: %v", err)
	}
	// Add at run time: a new role, and the removed one again (its terms
	// are numbered from 1 again: a new elector).
	added := core.MustRole("shard-added")
	for _, ro := range []core.Role{added, gone} {
		if err := s.Add(ro); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "the added role's term", func() bool { return r.count(added, coord.TermStarted) == 1 })
	waitFor(t, "the re-added role's term", func() bool { return r.count(gone, coord.TermStarted) == 2 })
	if st := r.lastOf(gone, coord.TermStarted); st.Term != 1 || st.Token == tokens[gone] {
		t.Fatalf("re-added role: %+v (first token %s)", st, tokens[gone])
	}
	// Close: every held term stops RESIGNED, every role ends, the stream closes.
	if err := s.Close(bg()); err != nil {
		t.Fatal(err)
	}
	<-r.read
	all := append(slices.Clone(roles), added)
	for _, ro := range all {
		if n := r.count(ro, coord.TermElectorStopped); n < 1 {
			t.Fatalf("%s: no ELECTOR_STOPPED after Close", ro)
		}
		if stop := r.lastOf(ro, coord.TermStopped); stop.Reason != coord.StopResigned {
			t.Fatalf("%s: stopped %+v at Close", ro, stop)
		}
	}
	r.checkTags(t, "set")
	if _, err := s.Next(bg()); !errors.Is(err, coord.ErrClosed) {
		t.Fatalf("Next after Close: %v", err)
	}
	if err := s.Add(added); !errors.Is(err, coord.ErrClosed) || !strings.Contains(err.Error(), added.String()) {
		t.Fatalf("Add after Close: %v", err)
	}
	for _, ro := range all {
		if st, err := c.Describe(bg(), ro); err != nil || st.Lease == nil || st.Lease.Deadline > e.clock.NowMs() {
			t.Fatalf("%s still held after Close: %+v %v", ro, st, err)
		}
	}
}

// Two sets over the same roles in two clients: a holds every role, b
// stands by. One role removed from a fails over to b; the other roles do
// not move (no STOPPED in a, no STARTED in b, same tokens).
func TestElectorSetFailoverOfOneRoleLeavesTheOthers(t *testing.T) {
	e := newEnv(t)
	ca, _ := e.client()
	cb, _ := e.client()
	roles := setRoles(4)
	_, ra := newSet(t, ca, ma, roles)
	for _, ro := range roles {
		waitFor(t, "a holds "+ro.String(), func() bool { return ra.count(ro, coord.TermStarted) == 1 })
	}
	sb, rb := newSet(t, cb, mb, roles)
	for _, ro := range roles {
		waitFor(t, "b registered for "+ro.String(), func() bool {
			st, err := cb.Describe(bg(), ro)
			return err == nil && len(st.Roster) == 2
		})
	}
	moved := roles[1]
	if err := ra.s.Remove(bg(), moved); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "b takes "+moved.String(), func() bool { return rb.count(moved, coord.TermStarted) == 1 })
	won := rb.lastOf(moved, coord.TermStarted)
	if won.Leadership.Role() != moved || won.Token == ra.lastOf(moved, coord.TermStarted).Token {
		t.Fatalf("b's term of %s: %+v", moved, won)
	}
	for _, ro := range roles {
		if ro == moved {
			continue
		}
		if n := ra.count(ro, coord.TermStopped); n != 0 {
			t.Fatalf("a: %s stopped when %s failed over", ro, moved)
		}
		if n := rb.count(ro, coord.TermStarted); n != 0 {
			t.Fatalf("b: %s started when only %s failed over", ro, moved)
		}
		st, err := ca.Describe(bg(), ro)
		if err != nil || !st.Current || st.Holder != ma || st.Token != ra.lastOf(ro, coord.TermStarted).Token {
			t.Fatalf("%s: %+v %v", ro, st, err)
		}
	}
	if held := sb.Held(); len(held) != 1 || held[moved] == nil {
		t.Fatalf("b holds %v", held)
	}
	ra.checkTags(t, "a")
	rb.checkTags(t, "b")
}

// With ElectManualRelease, a role removed and stopped waits for Release;
// taking the TermStopped alone does not release it. A fenced role of the
// set campaigns again only after Release of that role's term.
func TestElectorSetManualReleasePerRole(t *testing.T) {
	e := newEnv(t)
	c, _ := e.client()
	roles := setRoles(2)
	s, r := newSet(t, c, ma, roles, coord.ElectManualRelease(), coord.ElectBackoff(time.Millisecond, time.Millisecond))
	for _, ro := range roles {
		waitFor(t, ro.String()+"'s term", func() bool { return r.count(ro, coord.TermStarted) == 1 })
	}
	// The holder resigns role 0 under the elector's feet: its term stops,
	// and the elector would campaign again at once, but waits for Release.
	l := s.Held()[roles[0]]
	if err := l.Resign(bg()); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "role 0's STOPPED", func() bool { return r.count(roles[0], coord.TermStopped) == 1 })
	waitFor(t, "the role's elector between terms", func() bool { return s.Elector(roles[0]).State() == coord.ElectorCampaigning })
	for i := 0; i < 20; i++ {
		e.clock.Advance(time.Second)
		time.Sleep(2 * time.Millisecond)
	}
	if n := r.count(roles[0], coord.TermStarted); n != 1 {
		t.Fatalf("role 0 started %d terms before Release", n)
	}
	s.Release(roles[0], 1)
	e.advanceUntil(100*time.Millisecond, 5*time.Second, func() bool { return r.count(roles[0], coord.TermStarted) == 2 })
	if n := r.count(roles[1], coord.TermStopped); n != 0 {
		t.Fatalf("role 1 stopped %d times", n)
	}
	// The event's own Release: role 1's STOPPED released through it.
	if err := s.Held()[roles[1]].Resign(bg()); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "role 1's STOPPED", func() bool { return r.count(roles[1], coord.TermStopped) == 1 })
	var stop coord.RoleEvent
	r.mu.Lock()
	for _, ev := range r.evs {
		if ev.Role == roles[1] && ev.Kind == coord.TermStopped {
			stop = ev
		}
	}
	r.mu.Unlock()
	for i := 0; i < 20; i++ {
		e.clock.Advance(time.Second)
		time.Sleep(2 * time.Millisecond)
	}
	if n := r.count(roles[1], coord.TermStarted); n != 1 {
		t.Fatalf("role 1 started %d terms before its STOPPED was released", n)
	}
	stop.Release()
	e.advanceUntil(100*time.Millisecond, 5*time.Second, func() bool { return r.count(roles[1], coord.TermStarted) == 2 })
	if st := r.lastOf(roles[1], coord.TermStarted); st.Term != 2 {
		t.Fatalf("role 1's second term: %+v", st)
	}
}

// Bad input, each error naming the role (or the argument), and nothing
// sent for a refused AcquireMany.
func TestElectorSetAndAcquireManyBadInput(t *testing.T) {
	e := newEnv(t)
	c, _ := e.client()
	if _, err := coord.NewElectorSet(nil, ma); !errors.Is(err, coord.ErrInvalidArgument) {
		t.Fatalf("no client: %v", err)
	}
	if _, err := coord.NewElectorSet(c, core.MemberID{}); err == nil || !strings.Contains(err.Error(), "member") {
		t.Fatalf("zero member: %v", err)
	}
	if _, err := coord.NewElectorSet(c, ma, coord.ElectBackoff(0, 0)); !errors.Is(err, coord.ErrInvalidArgument) || !strings.Contains(err.Error(), "ElectBackoff") {
		t.Fatalf("bad option: %v", err)
	}
	if _, err := coord.NewElectorSet(c, ma, coord.ElectStopMargin(time.Hour)); !errors.Is(err, coord.ErrInvalidArgument) || !strings.Contains(err.Error(), "risk margin") {
		t.Fatalf("stop margin past the risk margin: %v", err)
	}
	held := core.MustRole("held-alone")
	l, err := c.Acquire(bg(), held, ma)
	if err != nil {
		t.Fatal(err)
	}
	s, _ := newSet(t, c, ma, nil)
	r0 := core.MustRole("in-set")
	if err := s.Add(r0); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		role core.Role
		want string
	}{
		{"zero", core.Role{}, "role"},
		{"twice", r0, "in-set"},
		{"held", held, "held-alone"},
	} {
		err := s.Add(tc.role)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Add %s: %v", tc.name, err)
		}
	}
	if err := s.Add(held); !strings.Contains(err.Error(), "already holds") || !errors.Is(err, coord.ErrInvalidArgument) {
		t.Fatalf("Add of a held role: %v", err)
	}
	badOpt := core.MustRole("bad-option")
	if err := s.Add(badOpt, coord.ElectBackoff(0, 0)); !errors.Is(err, coord.ErrInvalidArgument) ||
		!strings.Contains(err.Error(), "bad-option") || !strings.Contains(err.Error(), "ElectBackoff") {
		t.Fatalf("Add with a bad option: %v", err)
	}
	if s.Elector(badOpt) != nil {
		t.Fatalf("a role refused for its option is in the set: %v", s.Roles())
	}
	// AcquireMany: refused before anything is sent (r0 once the set holds it).
	waitFor(t, "the set holds in-set", func() bool { return s.Held()[r0] != nil })
	fresh := core.MustRole("fresh")
	for _, tc := range []struct {
		name  string
		roles []core.Role
		want  string
	}{
		{"twice", []core.Role{fresh, core.MustRole("other"), fresh}, "fresh is given twice (roles[0] and roles[2])"},
		{"held", []core.Role{fresh, held}, "held-alone"},
		{"in a set", []core.Role{fresh, r0}, "in-set"},
		{"zero", []core.Role{fresh, {}}, "roles[1]"},
	} {
		ls, err := c.AcquireMany(bg(), tc.roles, mb)
		if ls != nil || !errors.Is(err, coord.ErrInvalidArgument) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("AcquireMany %s: %v %v", tc.name, ls, err)
		}
	}
	if st, err := c.Describe(bg(), fresh); err != nil || len(st.Roster) != 0 || st.Lease != nil {
		t.Fatalf("a refused AcquireMany wrote for %s: %+v %v", fresh, st, err)
	}
	if _, err := c.AcquireMany(bg(), []core.Role{fresh}, core.MemberID{}); err == nil || !strings.Contains(err.Error(), "member") {
		t.Fatalf("zero member: %v", err)
	}
	// A prefix that makes a role too long: the error names the role.
	cp, _ := e.client("krabka.role.prefix", strings.Repeat("p", 240)+".")
	long := core.MustRole("a-rather-long-role")
	if _, err := cp.AcquireMany(bg(), []core.Role{long}, ma); err == nil || !strings.Contains(err.Error(), long.String()) {
		t.Fatalf("too long with the prefix: %v", err)
	}
	sp, _ := newSet(t, cp, ma, nil)
	if err := sp.Add(long); err == nil || !strings.Contains(err.Error(), long.String()) {
		t.Fatalf("Add too long with the prefix: %v", err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
}

// AcquireMany wins every free role; with one role held by another client
// it returns the others won and a *RolesError naming that role.
func TestAcquireManyAllAndPartial(t *testing.T) {
	e := newEnv(t)
	ca, _ := e.client()
	cb, _ := e.client()
	roles := setRoles(8)
	ls, err := ca.AcquireMany(bg(), roles, ma)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[core.FencingToken]bool{}
	for i, l := range ls {
		if l == nil || l.Role() != roles[i] || l.State() != coord.Active || seen[l.Token()] {
			t.Fatalf("roles[%d]: %v", i, l)
		}
		seen[l.Token()] = true
	}
	// Acquiring them again from the same client: refused, naming the first.
	if _, err := ca.AcquireMany(bg(), roles, ma); !errors.Is(err, coord.ErrInvalidArgument) || !strings.Contains(err.Error(), roles[0].String()) {
		t.Fatalf("again: %v", err)
	}
	more := setRoles(11)[8:]
	taken := more[1]
	if _, err := cb.Acquire(bg(), taken, mb); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(bg(), 300*time.Millisecond)
	defer cancel()
	ls, err = ca.AcquireMany(ctx, more, ma)
	var re *coord.RolesError
	if !errors.As(err, &re) || !errors.Is(err, coord.ErrTimeout) || re.Total != 3 ||
		!slices.Equal(re.Failed(), []core.Role{taken}) || !strings.Contains(err.Error(), "role "+taken.String()+":") {
		t.Fatalf("partial: %v", err)
	}
	if ls[1] != nil || ls[0] == nil || ls[2] == nil || ls[0].Role() != more[0] || ls[2].Role() != more[2] {
		t.Fatalf("partial leaderships %v", ls)
	}
	if ls, err := ca.AcquireMany(bg(), nil, ma); err != nil || len(ls) != 0 {
		t.Fatalf("no roles: %v %v", ls, err)
	}
}

// A role of a set that waits behind another member's lease costs about one
// goroutine (its election loop): its campaign is parked on the view (no
// goroutine in Acquire), its NEW_LEADER events come from a callback of the
// view's follower (no watch goroutine) and its events move onto the set's
// stream when queued (no pump). It was five before. Each waiting role
// still reports the holder (TermNewLeader) and wins once the holder
// resigns.
func TestElectorSetWaitingRoleCostsOneGoroutine(t *testing.T) {
	e := newEnv(t)
	ca, _ := e.client()
	cb, _ := e.client()
	const n = 200
	roles := setRoles(n)
	held, err := ca.AcquireMany(bg(), roles, ma)
	if err != nil {
		t.Fatal(err)
	}
	base := runtime.NumGoroutine()
	s, r := newSet(t, cb, mb, roles)
	waitParked(t, cb, n)
	for _, ro := range roles {
		waitFor(t, ro.String()+"'s holder", func() bool { return r.count(ro, coord.TermNewLeader) == 1 })
		if ev := r.lastOf(ro, coord.TermNewLeader); ev.Holder != ma {
			t.Fatalf("%s: NEW_LEADER names %s, want %s", ro, ev.Holder, ma)
		}
	}
	runtime.GC()
	perRole := float64(runtime.NumGoroutine()-base) / n
	t.Logf("%d roles waiting in a set: %.2f goroutines a role", n, perRole)
	if perRole > 1.5 {
		t.Fatalf("%.2f goroutines a waiting role of a set, want about one (its loop)", perRole)
	}
	for _, l := range held {
		if err := l.Resign(bg()); err != nil {
			t.Fatal(err)
		}
	}
	for _, ro := range roles {
		waitFor(t, ro.String()+"'s term", func() bool { return r.count(ro, coord.TermStarted) == 1 })
	}
	if err := s.Close(bg()); err != nil {
		t.Fatal(err)
	}
}
