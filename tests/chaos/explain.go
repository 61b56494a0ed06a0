package chaos

import (
	"fmt"
	"sort"
	"strings"
	"time"
)

// GapReport explains one long gap (no acknowledged command for more than
// LongGap) from the timeline: the faults active during it or ended just
// before, how much of it the baseline writer was down too, and what the
// members were waiting for (their errors by call and code, and who took
// the role).
type GapReport struct {
	From         time.Time      `json:"from"`
	To           time.Time      `json:"to"`
	Length       string         `json:"length"`
	Faults       []string       `json:"faults"`
	BaselineDown string         `json:"baseline_down,omitempty"` // of this gap, the time the baseline had no acknowledged command either
	Waits        map[string]int `json:"waits,omitempty"`         // "member op code" -> errors during the gap
	Samples      []string       `json:"samples,omitempty"`       // one message per kind of wait
	Acquired     []string       `json:"acquired,omitempty"`      // takeovers during the gap (and when)
	Text         string         `json:"text"`
}

// explainGaps builds a report for each gap. Faults count when they were
// active during the gap or ended up to LongGap before it began (a broker
// restart's wait follows its fault).
func explainGaps(gaps []Gap, faults []FaultRecord, events []hostEvent, base *BaselineResult, start time.Time) []GapReport {
	var out []GapReport
	for _, g := range gaps {
		r := GapReport{From: g.From, To: g.To, Length: g.Len().Round(100 * time.Millisecond).String(), Waits: map[string]int{}}
		for _, f := range faults {
			if f.Start.Before(g.To) && f.End.After(g.From.Add(-LongGap)) {
				r.Faults = append(r.Faults, fmt.Sprintf("%s %s [%+.1fs, %+.1fs]", f.Kind, f.Target,
					f.Start.Sub(g.From).Seconds(), f.End.Sub(g.From).Seconds()))
			}
		}
		if base != nil {
			var down time.Duration
			for _, bg := range base.Availability.All {
				lo, hi := bg.From, bg.To
				if lo.Before(g.From) {
					lo = g.From
				}
				if hi.After(g.To) {
					hi = g.To
				}
				if hi.After(lo) {
					down += hi.Sub(lo)
				}
			}
			r.BaselineDown = fmt.Sprintf("%s of %s", down.Round(100*time.Millisecond), g.Len().Round(100*time.Millisecond))
		}
		sample := map[string]string{}
		for _, e := range events {
			if e.At.Before(g.From) || e.At.After(g.To) {
				continue
			}
			switch e.Kind {
			case "ERROR", "FENCED", "EXPIRED":
				k := fmt.Sprintf("%s %s %s %s", e.Member, e.Kind, e.Op, e.Code)
				r.Waits[k]++
				if _, ok := sample[k]; !ok {
					msg := e.Msg
					if len(msg) > 200 {
						msg = msg[:200] + "..."
					}
					sample[k] = k + ": " + msg
				}
			case "ACQUIRED":
				r.Acquired = append(r.Acquired, fmt.Sprintf("%s at %+.1fs", e.Member, e.At.Sub(g.From).Seconds()))
			}
		}
		keys := make([]string, 0, len(sample))
		for k := range sample {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			r.Samples = append(r.Samples, sample[k])
		}
		var waits []string
		for _, k := range keys {
			waits = append(waits, fmt.Sprintf("%s x%d", k, r.Waits[k]))
		}
		r.Text = fmt.Sprintf("%s from %s (campaign time %.1fs): faults %s; baseline down %s; waits: %s; takeovers: %s", r.Length,
			g.From.UTC().Format("15:04:05.0"), g.From.Sub(start).Seconds(), orNone(r.Faults), orNone([]string{r.BaselineDown}), orNone(waits), orNone(r.Acquired))
		out = append(out, r)
	}
	return out
}

func orNone(s []string) string {
	var keep []string
	for _, x := range s {
		if x != "" {
			keep = append(keep, x)
		}
	}
	if len(keep) == 0 {
		return "none"
	}
	return strings.Join(keep, "; ")
}
