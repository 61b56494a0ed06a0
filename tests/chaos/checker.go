package chaos

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/krabka/krabka-coord/core"
)

// Ack is a command a member reported acknowledged (its DISPATCHED event):
// the guarded write returned success with this partition and offset.
type Ack struct {
	Member    string
	Token     core.FencingToken
	Seq       int64
	Partition int32
	Offset    int64
	At        time.Time // the member's clock when it printed the event
}

func (a Ack) String() string {
	return fmt.Sprintf("%s seq=%d token=%s at %d/%d (%s)", a.Member, a.Seq, a.Token, a.Partition, a.Offset, a.At.UTC().Format("15:04:05.000"))
}

// Record is one committed data record of the command topic (read with
// read_committed): where it is, the producer that wrote it (from the batch
// header: what the broker accepted) and the command in its value.
type Record struct {
	Partition int32
	Offset    int64
	Producer  core.FencingToken // batch ProducerID and ProducerEpoch
	Value     string
	Member    string
	Token     core.FencingToken // token= in the value (what the member claimed)
	TokenOK   bool
	Seq       int64
}

func (r Record) String() string {
	return fmt.Sprintf("%d/%d producer=%s value=%q", r.Partition, r.Offset, r.Producer, r.Value)
}

// ParseRecord fills the command fields from the value
// "seq=<n> member=<m> token=<id>:<epoch> at=<ms>".
func ParseRecord(partition int32, offset int64, producer core.FencingToken, value string) Record {
	r := Record{Partition: partition, Offset: offset, Producer: producer, Value: value, Seq: -1}
	for _, f := range strings.Fields(value) {
		k, v, ok := strings.Cut(f, "=")
		if !ok {
			continue
		}
		switch k {
		case "seq":
			if n, err := strconv.ParseInt(v, 10, 64); err == nil {
				r.Seq = n
			}
		case "member":
			r.Member = v
		case "token":
			if t, err := core.ParseFencingToken(v); err == nil {
				r.Token, r.TokenOK = t, true
			}
		}
	}
	return r
}

// Violation is one broken property with the records that show it.
type Violation struct {
	Property string // "order", "lost", "duplicate", "stale-token", "token-mismatch"
	Detail   string
	Records  []string
}

func (v Violation) String() string {
	return fmt.Sprintf("%s: %s\n    %s", v.Property, v.Detail, strings.Join(v.Records, "\n    "))
}

// Result is the checker's verdict and figures.
type Result struct {
	Records       int // committed command records read
	Acked         int // commands members saw acknowledged
	Found         int // acknowledged commands present exactly once where acknowledged
	Lost          int // acknowledged but not in the committed log (goal 0)
	Duplicated    int // acknowledged command values present more than once (goal 0)
	OrderBreaks   int // producer tokens going backwards in log order (goal 0)
	StaleTokens   int // commands carrying a token below one committed before (goal 0)
	TokenMismatch int // value token different from the producer that wrote it (goal 0)
	Resent        int // extra copies of a (member, token, seq) that a member re-sent after an unacknowledged attempt
	Unacked       int // committed commands no member saw acknowledged (ambiguous outcomes; allowed)
	Tokens        int // distinct producer tokens in the log
	Violations    []Violation
	Availability  Availability
}

// OK is true when no property is violated.
func (r *Result) OK() bool { return len(r.Violations) == 0 }

// Availability is computed from the acknowledged commands' times: the
// writer is "unavailable" during any gap between consecutive acknowledged
// commands longer than Slack (the dispatch pace plus scheduling slack).
type Availability struct {
	Span     time.Duration   // first to last acknowledged command
	Slack    time.Duration   // gaps up to this are normal pacing
	Down     time.Duration   // sum over gaps of (gap - Slack)
	Fraction float64         // 1 - Down/Span
	Gaps     []time.Duration // every gap longer than Slack, sorted
	P50, P90 time.Duration
	P99, Max time.Duration
}

const maxListed = 20

// Check evaluates the committed log (recs, in partition then offset order
// as read) against the acknowledged commands.
//
//	(a) order: in each partition, in log order, the producer token
//	    (ProducerID, ProducerEpoch) of the batches never goes backwards;
//	(b) every acknowledged command is at the partition and offset it was
//	    acknowledged at, with the same member, token and sequence, and its
//	    value appears exactly once;
//	(c) no command carries (in its value) a token lower than a token
//	    committed before it, and the value's token is the producer's;
//	(d) availability (figures only).
func Check(recs []Record, acks []Ack, slack time.Duration) *Result {
	res := &Result{Records: len(recs), Acked: len(acks)}
	add := func(v Violation) {
		res.Violations = append(res.Violations, v)
	}
	byPos := map[[2]int64]int{}
	valueCount := map[string]int{}
	cmdCount := map[string]int{}
	tokens := map[core.FencingToken]bool{}
	var last map[int32]int = map[int32]int{}
	var maxSoFar map[int32]core.FencingToken = map[int32]core.FencingToken{}
	var haveMax = map[int32]bool{}
	for i, r := range recs {
		byPos[[2]int64{int64(r.Partition), r.Offset}] = i
		valueCount[r.Value]++
		cmdCount[fmt.Sprintf("%s|%s|%d", r.Member, r.Token, r.Seq)]++
		tokens[r.Producer] = true
		if j, ok := last[r.Partition]; ok && r.Producer.Compare(recs[j].Producer) < 0 {
			res.OrderBreaks++
			if res.OrderBreaks <= maxListed {
				add(Violation{"order", fmt.Sprintf("partition %d: producer token %s after %s", r.Partition, r.Producer, recs[j].Producer),
					[]string{recs[j].String(), r.String()}})
			}
		}
		last[r.Partition] = i
		if !r.TokenOK || r.Token != r.Producer {
			res.TokenMismatch++
			if res.TokenMismatch <= maxListed {
				add(Violation{"token-mismatch", "the command's token is not the token of the producer that wrote it", []string{r.String()}})
			}
		}
		if haveMax[r.Partition] && r.TokenOK && r.Token.Compare(maxSoFar[r.Partition]) < 0 {
			res.StaleTokens++
			if res.StaleTokens <= maxListed {
				add(Violation{"stale-token", fmt.Sprintf("token %s committed after token %s", r.Token, maxSoFar[r.Partition]), []string{r.String()}})
			}
		}
		if !haveMax[r.Partition] || r.Producer.Compare(maxSoFar[r.Partition]) > 0 {
			maxSoFar[r.Partition], haveMax[r.Partition] = r.Producer, true
		}
	}
	res.Tokens = len(tokens)
	for k, n := range cmdCount {
		_ = k
		if n > 1 {
			res.Resent += n - 1
		}
	}
	ackedPos := map[[2]int64]bool{}
	for _, a := range acks {
		pos := [2]int64{int64(a.Partition), a.Offset}
		i, ok := byPos[pos]
		if !ok || recs[i].Member != a.Member || recs[i].Seq != a.Seq || !recs[i].TokenOK || recs[i].Token != a.Token {
			res.Lost++
			if res.Lost <= maxListed {
				got := "nothing committed there"
				if ok {
					got = recs[i].String()
				}
				add(Violation{"lost", "acknowledged command not in the committed log where it was acknowledged", []string{a.String(), "log: " + got}})
			}
			continue
		}
		ackedPos[pos] = true
		if n := valueCount[recs[i].Value]; n != 1 {
			res.Duplicated++
			if res.Duplicated <= maxListed {
				add(Violation{"duplicate", fmt.Sprintf("acknowledged command present %d times", n), []string{a.String(), recs[i].String()}})
			}
			continue
		}
		res.Found++
	}
	res.Unacked = len(recs) - len(ackedPos)
	res.Availability = availability(acks, slack)
	return res
}

func availability(acks []Ack, slack time.Duration) Availability {
	av := Availability{Slack: slack, Fraction: 1}
	if len(acks) < 2 {
		av.Fraction = 0
		return av
	}
	ts := make([]time.Time, len(acks))
	for i, a := range acks {
		ts[i] = a.At
	}
	sort.Slice(ts, func(i, j int) bool { return ts[i].Before(ts[j]) })
	av.Span = ts[len(ts)-1].Sub(ts[0])
	for i := 1; i < len(ts); i++ {
		if g := ts[i].Sub(ts[i-1]); g > slack {
			av.Gaps = append(av.Gaps, g)
			av.Down += g - slack
		}
	}
	if av.Span > 0 {
		av.Fraction = 1 - float64(av.Down)/float64(av.Span)
	}
	sort.Slice(av.Gaps, func(i, j int) bool { return av.Gaps[i] < av.Gaps[j] })
	av.P50, av.P90, av.P99 = pct(av.Gaps, 50), pct(av.Gaps, 90), pct(av.Gaps, 99)
	if n := len(av.Gaps); n > 0 {
		av.Max = av.Gaps[n-1]
	}
	return av
}

// pct is the nearest-rank percentile of sorted durations.
func pct(sorted []time.Duration, p int) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := (p*len(sorted) + 99) / 100
	if i < 1 {
		i = 1
	}
	return sorted[i-1]
}
