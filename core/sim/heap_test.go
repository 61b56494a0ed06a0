package sim

import (
	"math/rand/v2"
	"testing"
)

func TestHeapOrder(t *testing.T) {
	var s sched
	r := rand.New(rand.NewPCG(1, 2))
	var got []int64
	for i := 0; i < 100000; i++ {
		if r.IntN(3) != 0 || len(s.heap) == 0 {
			s.at(s.now+r.Int64N(1000), func() {})
		} else {
			at, _, _ := s.pop()
			if at < s.now {
				t.Fatalf("went back from %d to %d", s.now, at)
			}
			s.now = at
			got = append(got, at)
		}
	}
	n := 0
	for {
		at, _, ok := s.pop()
		if !ok {
			break
		}
		if at < s.now {
			t.Fatalf("went back")
		}
		s.now = at
		n++
	}
	t.Log(len(got), n)
}
