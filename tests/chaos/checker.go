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
	Writer    int
	Partition int32
	Offset    int64
	At        time.Time // the member's clock when it printed the event (after the call returned)
}

func (a Ack) String() string {
	return fmt.Sprintf("%s seq=%d writer=%d token=%s at %d/%d (%s)", a.Member, a.Seq, a.Writer, a.Token, a.Partition, a.Offset, a.At.UTC().Format("15:04:05.000"))
}

// Record is one committed data record of the command topic (read with
// read_committed): where it is, the producer that wrote it (from the batch
// header: what the broker accepted), when the partition leader appended it
// (the topic's timestamps are LogAppendTime) and the command in its value.
type Record struct {
	Partition int32
	Offset    int64
	Producer  core.FencingToken // batch ProducerID and ProducerEpoch
	Appended  time.Time         // the batch's LogAppendTime (zero: unknown)
	Value     string
	Member    string
	Token     core.FencingToken // token= in the value (what the member claimed)
	TokenOK   bool
	Seq       int64
	Writer    int
	Try       int
	At        int64 // at= in the value: the member's clock (ms) just before it called the write
}

func (r Record) String() string {
	app := ""
	if !r.Appended.IsZero() {
		app = " appended " + r.Appended.UTC().Format("15:04:05.000")
	}
	return fmt.Sprintf("%d/%d producer=%s%s value=%q", r.Partition, r.Offset, r.Producer, app, r.Value)
}

// ParseRecord fills the command fields from the value
// "seq=<n> member=<m> token=<id>:<epoch> [writer=<w> try=<t>] at=<ms>".
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
		case "writer":
			r.Writer, _ = strconv.Atoi(v)
		case "try":
			r.Try, _ = strconv.Atoi(v)
		case "at":
			r.At, _ = strconv.ParseInt(v, 10, 64)
		}
	}
	return r
}

// Mint is a producer epoch a member minted: its InitProducerId returned
// token at At (the library's own clock reading, logged with the token).
type Mint struct {
	Member string
	Token  core.FencingToken
	At     time.Time
}

func (m Mint) String() string {
	return fmt.Sprintf("%s minted %s at %s", m.Member, m.Token, m.At.UTC().Format("15:04:05.000"))
}

// Window is a stretch of time in which no command can be acknowledged:
// two of the three brokers were killed (min.insync.replicas=2).
type Window struct {
	Start, End time.Time // after the second kill returned; before the first restart
	What       string
}

// Violation is one broken property with the records that show it.
type Violation struct {
	Property string // "order", "lost", "duplicate", "stale-token", "token-mismatch", "real-time", "resent-after-ack", "linearizability", "acked-two-down"
	Detail   string
	Records  []string
}

func (v Violation) String() string {
	return fmt.Sprintf("%s: %s\n    %s", v.Property, v.Detail, strings.Join(v.Records, "\n    "))
}

// Input is what the checker judges.
type Input struct {
	Records  []Record        // every committed record of the command topic, in partition then offset order
	Acks     []Ack           // the members' acknowledged commands
	Mints    []Mint          // the epochs the members minted (the role's producer)
	Acquired map[string]bool // "member|token" of every ACQUIRED (a leadership's first token)
	TwoDown  []Window        // two brokers down: nothing may be acknowledged
	Slack    time.Duration   // availability: gaps up to this are the dispatch pace
	Baseline string          // the baseline writer's member name ("": none)
	BaseAcks []Ack           // its acknowledged commands
}

// Result is the checker's verdict and figures.
type Result struct {
	Records        int    // committed command records of the members
	Acked          int    // commands members saw acknowledged
	Found          int    // acknowledged commands present exactly once where acknowledged
	Lost           int    // acknowledged but not in the committed log (goal 0)
	Duplicated     int    // acknowledged command values present more than once (goal 0)
	OrderBreaks    int    // producer tokens going backwards in log order (goal 0)
	StaleTokens    int    // commands carrying a token below one committed before (goal 0)
	TokenMismatch  int    // value token different from the producer that wrote it (goal 0)
	RealTime       int    // commands appended after a newer token was minted (goal 0)
	Resent         int    // extra copies of a (member, token, seq) in the log
	ResentOfAcked  int    // of those, copies of a command that was acknowledged (the earlier attempt committed after all)
	ResentAfterAck int    // copies committed after the acknowledged one: re-sent although acknowledged (goal 0)
	SeqGaps        int    // sequence numbers of a leadership missing from the log below its highest one
	GapTerms       int    // leaderships (member, token) with such gaps
	GapsAcked      int    // missing numbers that a member saw acknowledged (also counted lost)
	Unacked        int    // committed commands no member saw acknowledged (ambiguous outcomes; allowed)
	Tokens         int    // distinct producer tokens of the members in the log
	Mints          int    // epochs minted (MINTED events)
	TwoDownAcked   int    // commands appended and acknowledged while two brokers were down (goal 0)
	Linearizable   string // "yes", "NO", or "unknown" (porcupine timed out on a segment)
	LinOps         int    // guarded writes in the history checked
	LinSegments    int    // independent segments it was cut into
	Violations     []Violation
	Availability   Availability
	Baseline       *BaselineResult `json:",omitempty"`
	Ratio          float64         // Availability.Fraction / Baseline.Availability.Fraction (0: no baseline)
	// OwnDown is the time in the members' gaps (beyond the slack) during
	// which the baseline was writing: what an election cost beyond what
	// Kafka itself lost (BaseOwnDown: the other way round).
	OwnDown, BaseOwnDown time.Duration
}

// BaselineResult is the baseline writer's part of the log.
type BaselineResult struct {
	Records      int
	Acked        int
	Found        int
	Lost         int
	Availability Availability
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
	Long     []Gap `json:",omitempty"` // the gaps longer than 10 s, in time order
	All      []Gap `json:"-"`          // every gap longer than Slack, in time order
}

// Gap is one stretch without acknowledged commands.
type Gap struct {
	From, To time.Time
}

// Len is the gap's length.
func (g Gap) Len() time.Duration { return g.To.Sub(g.From) }

const maxListed = 20

// LongGap is the length above which a gap is listed (and explained in the
// campaign's report).
const LongGap = 10 * time.Second

// Check evaluates the committed log (recs, in partition then offset order
// as read) against the acknowledged commands, without mints or a baseline
// (the checks of the first campaign; see CheckAll).
func Check(recs []Record, acks []Ack, slack time.Duration) *Result {
	return CheckAll(Input{Records: recs, Acks: acks, Slack: slack})
}

// CheckAll evaluates the log (docs/RELIABILITY.md, "The checker"):
//
//	(a) order: in each partition, in log order, the producer token of the
//	    members' batches never goes backwards;
//	(b) lost / duplicated: every acknowledged command is at the partition
//	    and offset it was acknowledged at, with the same member, token and
//	    sequence, and its value appears exactly once;
//	(c) stale token: no command carries a token lower than a token
//	    committed before it; the value's token is the producer's;
//	(d) real time: no command with token T was appended (LogAppendTime)
//	    after a token T' > T was minted (the instant InitProducerId
//	    returned T'); all processes share one clock;
//	(e) re-sent copies: a copy of an acknowledged command committed after
//	    it is a violation; earlier copies (the earlier attempt committed
//	    after all) are counted; so are gaps in a leadership's numbers;
//	(f) two brokers down: no command appended while two brokers were down
//	    is acknowledged before the first of them restarts;
//	(g) linearizability of the guarded writes (porcupine; linearize.go);
//	(h) availability (figures), the members' and the baseline's.
func CheckAll(in Input) *Result {
	res := &Result{Acked: len(in.Acks), Mints: len(in.Mints), Linearizable: "yes"}
	add := func(v Violation) { res.Violations = append(res.Violations, v) }
	var recs, base []Record
	for _, r := range in.Records {
		if in.Baseline != "" && r.Member == in.Baseline {
			base = append(base, r)
		} else {
			recs = append(recs, r)
		}
	}
	res.Records = len(recs)

	byPos := map[[2]int64]int{}
	valueCount := map[string]int{}
	cmdCopies := map[string][]int{}
	tokens := map[core.FencingToken]bool{}
	last := map[int32]int{}
	maxSoFar := map[int32]core.FencingToken{}
	haveMax := map[int32]bool{}
	for i, r := range recs {
		byPos[[2]int64{int64(r.Partition), r.Offset}] = i
		valueCount[r.Value]++
		key := cmdKey(r.Member, r.Token, r.Seq)
		cmdCopies[key] = append(cmdCopies[key], i)
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
	for _, idx := range cmdCopies {
		res.Resent += len(idx) - 1
	}

	// (d) real time.
	for _, v := range realTime(recs, in.Mints) {
		res.RealTime++
		if res.RealTime <= maxListed {
			add(v)
		}
	}

	// (b) and (e).
	ackedPos := map[[2]int64]bool{}
	ackedRec := map[int]Ack{}
	for _, a := range in.Acks {
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
		ackedRec[i] = a
		if n := valueCount[recs[i].Value]; n != 1 {
			res.Duplicated++
			if res.Duplicated <= maxListed {
				add(Violation{"duplicate", fmt.Sprintf("acknowledged command present %d times", n), []string{a.String(), recs[i].String()}})
			}
			continue
		}
		res.Found++
		for _, j := range cmdCopies[cmdKey(recs[i].Member, recs[i].Token, recs[i].Seq)] {
			if j == i {
				continue
			}
			res.ResentOfAcked++
			if recs[j].Partition == recs[i].Partition && recs[j].Offset > recs[i].Offset {
				res.ResentAfterAck++
				if res.ResentAfterAck <= maxListed {
					add(Violation{"resent-after-ack", "a copy of an acknowledged command committed after it (re-sent although acknowledged)",
						[]string{a.String(), recs[i].String(), recs[j].String()}})
				}
			}
		}
	}
	res.Unacked = len(recs) - len(ackedPos)
	seqGaps(res, recs, in)

	// (f) two brokers down.
	for _, w := range in.TwoDown {
		check := func(acks []Ack, list []Record, pos map[[2]int64]int) {
			for _, a := range acks {
				i, ok := pos[[2]int64{int64(a.Partition), a.Offset}]
				if !ok || list[i].Appended.IsZero() {
					continue
				}
				if list[i].Appended.UnixMilli() > w.Start.UnixMilli() && a.At.UnixMilli() < w.End.UnixMilli() {
					res.TwoDownAcked++
					if res.TwoDownAcked <= maxListed {
						add(Violation{"acked-two-down", fmt.Sprintf("appended and acknowledged while two brokers were down (%s, %s to %s)",
							w.What, w.Start.UTC().Format("15:04:05.000"), w.End.UTC().Format("15:04:05.000")), []string{a.String(), list[i].String()}})
					}
				}
			}
		}
		check(in.Acks, recs, byPos)
		if in.Baseline != "" {
			bpos := map[[2]int64]int{}
			for i, r := range base {
				bpos[[2]int64{int64(r.Partition), r.Offset}] = i
			}
			check(in.BaseAcks, base, bpos)
		}
	}

	// (g) linearizability of the members' guarded writes.
	lin := linearize(recs, ackedRec)
	res.Linearizable, res.LinOps, res.LinSegments = lin.verdict, lin.ops, lin.segments
	for _, v := range lin.violations {
		add(v)
	}

	res.Availability = availability(in.Acks, in.Slack)
	if in.Baseline != "" {
		b := &BaselineResult{Records: len(base), Acked: len(in.BaseAcks)}
		bpos := map[[2]int64]int{}
		for i, r := range base {
			bpos[[2]int64{int64(r.Partition), r.Offset}] = i
		}
		for _, a := range in.BaseAcks {
			i, ok := bpos[[2]int64{int64(a.Partition), a.Offset}]
			if !ok || base[i].Member != a.Member || base[i].Seq != a.Seq {
				b.Lost++
				res.Lost++
				if res.Lost <= maxListed {
					got := "nothing committed there"
					if ok {
						got = base[i].String()
					}
					add(Violation{"lost", "the baseline's acknowledged command is not in the committed log where it was acknowledged", []string{a.String(), "log: " + got}})
				}
				continue
			}
			b.Found++
		}
		b.Availability = availability(in.BaseAcks, in.Slack)
		res.Baseline = b
		if b.Availability.Fraction > 0 {
			res.Ratio = res.Availability.Fraction / b.Availability.Fraction
		}
		res.OwnDown = exclusive(res.Availability.All, b.Availability.All, in.Slack)
		res.BaseOwnDown = exclusive(b.Availability.All, res.Availability.All, in.Slack)
	}
	return res
}

func cmdKey(member string, t core.FencingToken, seq int64) string {
	return fmt.Sprintf("%s|%s|%d", member, t, seq)
}

// realTime returns a violation for every member command whose producer
// token T was appended after the earliest mint of a token greater than T.
func realTime(recs []Record, mints []Mint) []Violation {
	if len(mints) == 0 {
		return nil
	}
	ms := append([]Mint(nil), mints...)
	// Descending by token; after, minLater[i] is the earliest mint among
	// ms[0..i] (tokens >= ms[i].Token).
	sort.Slice(ms, func(i, j int) bool { return ms[i].Token.Compare(ms[j].Token) > 0 })
	earliest := make([]int, len(ms))
	for i := range ms {
		earliest[i] = i
		if i > 0 && ms[earliest[i-1]].At.Before(ms[i].At) {
			earliest[i] = earliest[i-1]
		}
	}
	// firstAbove(T): the earliest mint of a token strictly greater than T.
	firstAbove := func(t core.FencingToken) (Mint, bool) {
		// ms is descending: the tokens > t are a prefix.
		n := sort.Search(len(ms), func(i int) bool { return ms[i].Token.Compare(t) <= 0 })
		if n == 0 {
			return Mint{}, false
		}
		return ms[earliest[n-1]], true
	}
	var out []Violation
	for _, r := range recs {
		if r.Appended.IsZero() {
			continue
		}
		m, ok := firstAbove(r.Producer)
		if ok && r.Appended.UnixMilli() > m.At.UnixMilli() {
			out = append(out, Violation{"real-time", fmt.Sprintf("a command of token %s appended %s after token %s was minted",
				r.Producer, r.Appended.Sub(m.At).Round(time.Millisecond), m.Token), []string{m.String(), r.String()}})
		}
	}
	return out
}

// seqGaps counts, for every leadership (member, token) in the log, the
// sequence numbers below its highest one that are missing: from 1 when
// the token is the one the member acquired with, else from its lowest
// (a token that an own epoch recovery continued a leadership under).
func seqGaps(res *Result, recs []Record, in Input) {
	seqs := map[string]map[int64]bool{}
	keyOf := map[string][2]string{}
	for _, r := range recs {
		if r.Seq < 0 {
			continue
		}
		k := r.Member + "|" + r.Token.String()
		if seqs[k] == nil {
			seqs[k] = map[int64]bool{}
			keyOf[k] = [2]string{r.Member, r.Token.String()}
		}
		seqs[k][r.Seq] = true
	}
	acked := map[string]bool{}
	for _, a := range in.Acks {
		acked[cmdKey(a.Member, a.Token, a.Seq)] = true
	}
	for k, set := range seqs {
		lo, hi := int64(-1), int64(-1)
		for s := range set {
			if lo < 0 || s < lo {
				lo = s
			}
			if s > hi {
				hi = s
			}
		}
		if in.Acquired[k] {
			lo = 1
		}
		missing := 0
		for s := lo; s <= hi; s++ {
			if !set[s] {
				missing++
				t, _ := core.ParseFencingToken(keyOf[k][1])
				if acked[cmdKey(keyOf[k][0], t, s)] {
					res.GapsAcked++
				}
			}
		}
		if missing > 0 {
			res.SeqGaps += missing
			res.GapTerms++
		}
	}
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
			av.All = append(av.All, Gap{From: ts[i-1], To: ts[i]})
			if g > LongGap {
				av.Long = append(av.Long, Gap{From: ts[i-1], To: ts[i]})
			}
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

// exclusive is the length of the union of gaps a (each shortened by
// slack at its start: the pace) outside the union of gaps b (also
// shortened): the time only one of the two writers could not write.
func exclusive(a, b []Gap, slack time.Duration) time.Duration {
	shorten := func(gs []Gap) []Gap {
		var out []Gap
		for _, g := range gs {
			if g.Len() > slack {
				out = append(out, Gap{From: g.From.Add(slack), To: g.To})
			}
		}
		sort.Slice(out, func(i, j int) bool { return out[i].From.Before(out[j].From) })
		return out
	}
	as, bs := shorten(a), shorten(b)
	var total time.Duration
	j := 0
	for _, g := range as {
		cur := g.From
		for j < len(bs) && !bs[j].To.After(cur) {
			j++
		}
		for k := j; k < len(bs) && bs[k].From.Before(g.To); k++ {
			if bs[k].From.After(cur) {
				total += bs[k].From.Sub(cur)
			}
			if bs[k].To.After(cur) {
				cur = bs[k].To
			}
		}
		if g.To.After(cur) {
			total += g.To.Sub(cur)
		}
	}
	return total
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
