package sim

import (
	"math/rand/v2"
	"testing"
)

// The scheduler runs events in (time, sequence) order: never back in time,
// events of one instant in the order they were scheduled, none lost.
func TestSchedulerRunsEventsInOrder(t *testing.T) {
	var s sched
	r := rand.New(rand.NewPCG(1, 2))
	pushed, popped := 0, 0
	lastSeq := map[int64]int{} // per instant, the order number of the last event run
	order := 0
	pop := func() {
		at, ev, ok := s.pop()
		if !ok {
			t.Fatal("an event is missing")
		}
		if at < s.now {
			t.Fatalf("went back from %d to %d", s.now, at)
		}
		n := int(ev.gen)
		if at == s.now && n < lastSeq[at] {
			t.Fatalf("at %d event %d ran after event %d", at, n, lastSeq[at])
		}
		lastSeq[at] = n
		s.now = at
		popped++
	}
	for range 100000 {
		if r.IntN(3) != 0 || len(s.heap) == 0 {
			order++
			s.push(s.now+r.Int64N(50), event{gen: uint64(order)})
			pushed++
		} else {
			pop()
		}
	}
	for len(s.heap) > 0 {
		pop()
	}
	if pushed != popped {
		t.Fatalf("pushed %d, ran %d", pushed, popped)
	}
}
