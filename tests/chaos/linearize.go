package chaos

import (
	"fmt"
	"sort"
	"time"

	"github.com/anishathalye/porcupine"
)

// Linearizability of the guarded writes, checked with porcupine
// (github.com/anishathalye/porcupine).
//
// The object is the command partition, an append-only log; each committed
// member record is one append operation. Its invocation is the at= of its
// value (the member's clock just before it called the write) and its
// response the member's DISPATCHED event for that offset. The final read
// of the log fixes where every append took effect, so the sequential model
// is: the state is the number of entries applied so far, and an append is
// legal exactly when it is the next entry of the log. Porcupine then looks
// for an order of the appends, each at a point within its own interval,
// that is the log order: it fails when an append was acknowledged before
// another was invoked but sits after it in the log.
//
// What the history leaves out, and why that is sound:
//   - attempts that did not commit (not in the log): an operation whose
//     outcome is unknown and that had no effect can be left out;
//   - acknowledged commands missing from the log: the lost check reports them;
//   - an attempt that committed without an acknowledgement (the call
//     failed or the member died) has no response time. It took effect
//     before every later entry of the log, so it returned, at the latest,
//     when the earliest acknowledged later entry did; that is its response.
//
// The history is cut at quiescent points (no operation's interval spans
// the instant); every operation of a segment both starts and ends before
// the next segment's, so the log is linearizable exactly when each segment
// is, starting from the number of entries of the segments before it.
// Times are milliseconds on the one clock all processes share; porcupine's
// intervals are closed, so two readings of the same millisecond count as
// concurrent, never as ordered.

type linResult struct {
	verdict    string
	ops        int
	segments   int
	violations []Violation
}

// linTimeout bounds porcupine on one segment; a segment it cannot decide
// in time makes the verdict "unknown" (reported, not a violation).
var linTimeout = 60 * time.Second

func linearize(recs []Record, acked map[int]Ack) linResult {
	out := linResult{verdict: "yes"}
	byPart := map[int32][]int{}
	for i, r := range recs {
		byPart[r.Partition] = append(byPart[r.Partition], i)
	}
	parts := make([]int32, 0, len(byPart))
	for p := range byPart {
		parts = append(parts, p)
	}
	sort.Slice(parts, func(i, j int) bool { return parts[i] < parts[j] })
	for _, p := range parts {
		idx := byPart[p] // log order
		type op struct {
			pos       int
			rec       int
			call, ret int64
			acked     bool
		}
		ops := make([]op, len(idx))
		maxT := int64(0)
		for k, i := range idx {
			ops[k] = op{pos: k, rec: i, call: recs[i].At}
			if a, ok := acked[i]; ok {
				ops[k].ret, ops[k].acked = a.At.UnixMilli(), true
			}
			if ops[k].call > maxT {
				maxT = ops[k].call
			}
			if ops[k].ret > maxT {
				maxT = ops[k].ret
			}
		}
		// Unacknowledged entries: the earliest response of an acknowledged later entry.
		bound := maxT + 1
		for k := len(ops) - 1; k >= 0; k-- {
			if !ops[k].acked {
				ops[k].ret = bound
			} else if ops[k].ret < bound {
				bound = ops[k].ret
			}
			if ops[k].ret < ops[k].call { // a clock that stepped back: keep the interval valid
				ops[k].ret = ops[k].call
			}
		}
		order := make([]int, len(ops))
		for k := range order {
			order[k] = k
		}
		sort.Slice(order, func(a, b int) bool { return ops[order[a]].call < ops[order[b]].call })
		start := 0 // log entries of the segments before
		for s := 0; s < len(order); {
			end := ops[order[s]].ret
			e := s + 1
			for e < len(order) && ops[order[e]].call <= end {
				if ops[order[e]].ret > end {
					end = ops[order[e]].ret
				}
				e++
			}
			seg := make([]porcupine.Operation, 0, e-s)
			for _, k := range order[s:e] {
				seg = append(seg, porcupine.Operation{ClientId: 0, Input: ops[k].pos, Call: ops[k].call, Output: nil, Return: ops[k].ret})
			}
			init := start
			model := porcupine.Model{
				Init: func() interface{} { return init },
				Step: func(state, input, _ interface{}) (bool, interface{}) {
					n := state.(int)
					if input.(int) == n {
						return true, n + 1
					}
					return false, n
				},
			}
			out.ops += len(seg)
			out.segments++
			illegal := false
			switch porcupine.CheckOperationsTimeout(model, seg, linTimeout) {
			case porcupine.Illegal:
				illegal = true
				out.verdict = "NO"
				if len(out.violations) < maxListed {
					var ex []string
					lo, hi := len(ops), -1
					for _, k := range order[s:e] {
						if ops[k].pos < lo {
							lo = ops[k].pos
						}
						if ops[k].pos > hi {
							hi = ops[k].pos
						}
					}
					for k := lo; k <= hi && len(ex) < 12; k++ {
						st := "unacknowledged"
						if ops[k].acked {
							st = "acknowledged " + time.UnixMilli(ops[k].ret).UTC().Format("15:04:05.000")
						}
						ex = append(ex, fmt.Sprintf("%s (invoked %s, %s)", recs[ops[k].rec], time.UnixMilli(ops[k].call).UTC().Format("15:04:05.000"), st))
					}
					out.violations = append(out.violations, Violation{"linearizability",
						fmt.Sprintf("partition %d: the log order of %d guarded writes (entries %d-%d) contradicts their invocation and acknowledgement times (porcupine)", p, e-s, lo, hi), ex})
				}
			case porcupine.Unknown:
				if out.verdict == "yes" {
					out.verdict = "unknown"
				}
			}
			start += e - s
			s = e
			if illegal {
				// The segments after it start from positions this one
				// did not reach: checking them would only repeat it.
				break
			}
		}
	}
	return out
}
