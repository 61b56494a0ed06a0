package sim

import (
	"iter"
	"slices"
)

// The discrete-event scheduler and the processes of the members.
//
// Time is the simulation's true time in milliseconds. Events run one at a
// time in (time, sequence) order; nothing runs concurrently, so one seed
// gives one run. A member's concurrent activities (the follower of its view,
// the acquire loop and the host's dispatch loop, the renewer, the deadline
// and view watchers of a leadership) are processes: coroutines (iter.Pull)
// that run straight-line code and block in wait calls. Only the scheduler
// resumes a process, from an event; a process never resumes another one,
// it schedules a wake-up at the current instant instead.

// event is a function to run, a wake-up of process p in wait gen, or a
// request arriving at the cluster (rq set); the last two need no
// allocation.
type event struct {
	fn   func()
	p    *proc
	gen  uint64
	resp *response
	rq   *request
	why  wakeKind
	link *member // a message on this member's link: held while it is cut
}

// slot orders an event in the heap; the heap holds no pointers, so that
// sifting it costs no write barriers.
type slot struct {
	at  int64
	seq uint64
	ev  int32 // index in sched.events
}

type sched struct {
	now    int64
	seq    uint64
	heap   []slot
	events []event
	free   []int32
}

func (s *sched) at(t int64, fn func()) { s.push(t, event{fn: fn}) }

func (s *sched) after(d int64, fn func()) { s.at(s.now+d, fn) }

// wakeAt schedules a wake-up of p (in wait gen) at t.
func (s *sched) wakeAt(t int64, p *proc, gen uint64, why wakeKind, r *response) {
	s.push(t, event{p: p, gen: gen, why: why, resp: r})
}

func (s *sched) push(t int64, ev event) {
	if t < s.now {
		t = s.now
	}
	var i int32
	if n := len(s.free); n > 0 {
		i = s.free[n-1]
		s.free = s.free[:n-1]
		s.events[i] = ev
	} else {
		i = int32(len(s.events))
		s.events = append(s.events, ev)
	}
	s.seq++
	s.heap = append(s.heap, slot{at: t, seq: s.seq, ev: i})
	h := s.heap
	j := len(h) - 1
	for j > 0 {
		p := (j - 1) / 2
		if !less(h[j], h[p]) {
			break
		}
		h[j], h[p] = h[p], h[j]
		j = p
	}
}

func less(a, b slot) bool { return a.at < b.at || (a.at == b.at && a.seq < b.seq) }

// pop removes the earliest event, sets now to its time and returns it; ok
// is false when none is left.
func (s *sched) pop() (int64, event, bool) {
	h := s.heap
	n := len(h)
	if n == 0 {
		return 0, event{}, false
	}
	top := h[0]
	n--
	h[0] = h[n]
	h = h[:n]
	i := 0
	for {
		l := 2*i + 1
		if l >= n {
			break
		}
		m := l
		if r := l + 1; r < n && less(h[r], h[l]) {
			m = r
		}
		if !less(h[m], h[i]) {
			break
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
	s.heap = h
	ev := s.events[top.ev]
	s.events[top.ev] = event{}
	s.free = append(s.free, top.ev)
	return top.at, ev, true
}

// wakeKind says why a blocked process was resumed.
type wakeKind uint8

const (
	wakeNone     wakeKind = iota
	wakeTimer             // a sleep or a timeout ran out
	wakeResponse          // the answer of an RPC arrived
	wakeChange            // the view moved, or a nudge
	wakeStart             // the first resume
)

// killed unwinds a process whose incarnation crashed or whose owner
// cancelled it (a panic recovered at the top of the process).
type killed struct{}

// proc is one process of an incarnation.
type proc struct {
	sim  *Sim
	inc  *incarnation
	name string

	next  func() (struct{}, bool)
	stop  func()
	yield func(struct{}) bool

	gen       uint64 // the current wait; wake-ups of older waits are ignored
	done      bool
	cancelled bool

	// Set by the wake-up that resumed the process.
	why  wakeKind
	resp *response

	// cutoff: a true instant past which calls of this process time out
	// (a renewal that started before the deadline never runs past it); 0
	// none.
	cutoff int64
	// callTimeout: how long the current call waits (for the quiet mark of
	// a lost or late message); callEnd: the true instant it times out.
	// The timeout is armed only once a message of the call is known to be
	// lost or late (armed = gen+1 then): an answer in time needs no timer
	// event.
	callTimeout int64
	callEnd     int64
	armed       uint64
}

// late reports that a message of p's call in wait gen arrives at at (-1:
// never). A call whose answer will not be there by its end times out then.
func (p *proc) late(gen uint64, at int64) {
	if p.gen != gen || p.armed == gen+1 || (at >= 0 && at <= p.callEnd) {
		return
	}
	p.armed = gen + 1
	p.sim.s.wakeAt(p.callEnd, p, gen, wakeTimer, nil)
}

// spawn starts a process of inc running body.
func (inc *incarnation) spawn(name string, body func(p *proc)) *proc {
	p := &proc{sim: inc.sim, inc: inc, name: name}
	seq := func(yield func(struct{}) bool) {
		p.yield = yield
		defer func() {
			p.done = true
			if r := recover(); r != nil {
				if _, ok := r.(killed); !ok {
					panic(r)
				}
			}
		}()
		body(p)
	}
	p.next, p.stop = iter.Pull(seq)
	if len(inc.procs) >= 16 {
		inc.procs = slices.DeleteFunc(inc.procs, func(q *proc) bool { return q.done })
	}
	inc.procs = append(inc.procs, p)
	p.sim.s.wakeAt(p.sim.s.now, p, p.gen, wakeStart, nil)
	return p
}

// block suspends the process until a wake-up of the current wait. It
// unwinds the process (panic(killed{})) when the incarnation died or the
// process was cancelled.
func (p *proc) block() {
	if !p.yield(struct{}{}) {
		panic(killed{})
	}
	if p.cancelled || p.inc.dead {
		panic(killed{})
	}
}

// wake resumes p if it still waits in wait gen. A paused incarnation gets
// its wake-ups when it resumes, in the order they came.
func (p *proc) wake(gen uint64, why wakeKind, r *response) {
	if p.done || p.gen != gen || p.inc.dead {
		return
	}
	s := p.sim.s
	if p.inc.pausedUntil > s.now {
		s.wakeAt(p.inc.pausedUntil, p, gen, why, r)
		return
	}
	p.gen++
	p.why, p.resp = why, r
	p.next()
}

// kill unwinds the process now (called by the scheduler only: a crash).
func (p *proc) kill() {
	if p.done {
		return
	}
	p.gen++
	p.cancelled = true
	p.stop()
	p.done = true
}

// cancel asks the process to unwind at its next wake-up, which is
// scheduled at once (called from another process: the end of a
// leadership stops its renewer and watchers).
func (p *proc) cancel() {
	if p.done || p.cancelled {
		return
	}
	p.cancelled = true
	p.sim.s.wakeAt(p.sim.s.now, p, p.gen, wakeChange, nil)
}

// sleep blocks for d milliseconds (of true time: a skewed clock runs at the
// same rate).
func (p *proc) sleep(d int64) {
	if d < 1 {
		d = 1
	}
	p.sim.s.wakeAt(p.sim.s.now+d, p, p.gen, wakeTimer, nil)
	p.block()
}

// waiter is a process waiting for a change (of a view, or a nudge).
type waiter struct {
	p   *proc
	gen uint64
}

// waitList is a set of waiters woken together.
type waitList struct{ ws []waiter }

func (w *waitList) add(p *proc) { w.ws = append(w.ws, waiter{p, p.gen}) }

// wakeAll schedules a wake-up of every waiter at the current instant.
func (w *waitList) wakeAll(s *sched) {
	for _, x := range w.ws {
		if x.p.gen == x.gen && !x.p.done { // else it already woke for another reason
			s.wakeAt(s.now, x.p, x.gen, wakeChange, nil)
		}
	}
	w.ws = w.ws[:0]
}

// waitOn blocks until list wakes the process or d milliseconds pass (d <= 0:
// no timer). It reports whether the list woke it.
func (p *proc) waitOn(list *waitList, d int64) bool {
	list.add(p)
	if d > 0 {
		p.sim.s.wakeAt(p.sim.s.now+d, p, p.gen, wakeTimer, nil)
	}
	p.block()
	return p.why == wakeChange
}
