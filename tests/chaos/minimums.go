package chaos

import (
	"fmt"
	"sort"
	"time"
)

// Minimums is what a campaign must have seen for its verdict to mean
// anything: a run in which no command was acknowledged, no leader was
// replaced or no fault took effect would pass the checker vacuously, so such
// a run fails (docs/RELIABILITY.md, "Minimums").
type Minimums struct {
	Acked     int `json:"acked"`     // acknowledged commands (DISPATCHED events)
	Takeovers int `json:"takeovers"` // distinct tokens in the committed log, minus the first leader's
	Faults    int `json:"faults"`    // faults that took effect, all kinds together
	PerKind   int `json:"per_kind"`  // faults that took effect, of each kind the schedule drew
}

// MinimumsPer90s are the minimums of a 90 s campaign (make chaos-short).
// They sit far below what such a run sees on a loaded 2-core machine (two
// runs: 472 and 318 acknowledged, 11 and 5 takeovers, 12 and 11 faults; the
// 10-minute runs of docs/RELIABILITY.md under load 25-35: about 110 or more
// acknowledged, 6 takeovers and 10 faults per 90 s), because a broker fault
// under load can stop every write for over a minute: they prove that the
// campaign did something, not how well the library did.
//
//   - 20 acknowledged commands (2 s of the leader's 100 ms pace);
//   - 1 takeover visible in the committed log (2 tokens), so that the order
//     and stale-token checks compare the writes of two leaders;
//   - 4 faults that took effect (the schedule draws one every 2-16 s);
//   - of each fault kind the schedule drew, at least 1 that took effect.
var MinimumsPer90s = Minimums{Acked: 20, Takeovers: 1, Faults: 4, PerKind: 1}

// MinimumsFor scales the acknowledged, takeover and fault minimums with the
// campaign's length (pro rata of 90 s, at least 1 each); PerKind stays 1.
func MinimumsFor(d time.Duration) Minimums {
	scale := func(n int) int {
		v := int(int64(n) * int64(d) / int64(90*time.Second))
		if v < 1 {
			v = 1
		}
		return v
	}
	b := MinimumsPer90s
	return Minimums{Acked: scale(b.Acked), Takeovers: scale(b.Takeovers), Faults: scale(b.Faults), PerKind: b.PerKind}
}

// Shortfalls lists, one sentence each, the minimums a campaign missed.
// drawn and injected count faults by kind: drawn when the schedule chose
// one, injected when it took effect (a live process killed or stopped, a
// broker killed, links cut or delayed, a member restarted with a skewed
// clock).
func Shortfalls(m Minimums, d time.Duration, acked, tokens int, drawn, injected map[string]int) []string {
	var out []string
	if acked < m.Acked {
		out = append(out, fmt.Sprintf("minimum missed: %d acknowledged commands, want at least %d in a %s campaign", acked, m.Acked, d))
	}
	takeovers := tokens - 1
	if takeovers < 0 {
		takeovers = 0
	}
	if takeovers < m.Takeovers {
		out = append(out, fmt.Sprintf("minimum missed: %d takeovers in the committed log (%d tokens), want at least %d in a %s campaign", takeovers, tokens, m.Takeovers, d))
	}
	total := 0
	for _, n := range injected {
		total += n
	}
	if total < m.Faults {
		out = append(out, fmt.Sprintf("minimum missed: %d faults took effect, want at least %d in a %s campaign", total, m.Faults, d))
	}
	kinds := make([]string, 0, len(drawn))
	for k := range drawn {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	for _, k := range kinds {
		if drawn[k] > 0 && injected[k] < m.PerKind {
			out = append(out, fmt.Sprintf("minimum missed: %s drawn %d times but took effect %d times, want at least %d", k, drawn[k], injected[k], m.PerKind))
		}
	}
	return out
}

// RoleShortfalls lists the extra roles (roles.go) whose acknowledged
// commands fell below the minimum: each role's own checks must have had
// something to judge.
func RoleShortfalls(m Minimums, d time.Duration, acked map[string]int) []string {
	names := make([]string, 0, len(acked))
	for n := range acked {
		names = append(names, n)
	}
	sort.Strings(names)
	var out []string
	for _, n := range names {
		if acked[n] < m.Acked {
			out = append(out, fmt.Sprintf("minimum missed: %d acknowledged commands of role %s, want at least %d in a %s campaign", acked[n], n, m.Acked, d))
		}
	}
	return out
}
