package chaos

import (
	"fmt"
	"sort"
	"time"

	"github.com/krabka/krabka-coord/core"
)

// Healthy holders deposed (issue 34).
//
// Every role of a coordination partition shares the partition's last
// stable offset: a transaction left open on the partition (a holder killed,
// paused or cut off between its renewal's Produce and its EndTxn) hides
// every later record of the partition from a read_committed reader until
// the transaction ends. A standby of another role on that partition then
// sees its holder's lease run out in a view that no longer moves while the
// holder's renewals keep committing, challenges, and deposes a healthy
// holder. Safety holds (the broker fences the deposed holder); the cost is
// a needless failover, and the figure below counts them.
//
// The definition uses only what the campaign can observe afterwards: the
// coordination topic read back read_committed (every lease record, in
// partition order, and the commit marker that ended its transaction) and
// the campaign's own fault log. A takeover is a lease record of role R by a
// member other than the member of R's current term, under another token.
// It counts as a healthy holder deposed when
//
//   - its grant (granted_at, the new holder's lease clock) comes before the
//     deadline of the previous holder's last committed live lease, by more
//     than the clock-skew tolerance: the campaign's clock-skew bound for each
//     of the two members that ran with a skewed clock (the clock-skew fault)
//     between that lease and the takeover, 0 when neither did;
//   - the first lease of the previous term whose deadline was that much
//     past the grant (the lease that, seen, would have stopped the
//     challenge; "the unseen lease") was committed at least RaceWindow
//     before the new holder's lease record was written (its commit
//     marker's timestamp against the record's). Otherwise the challenger
//     may have decided before that lease was committed (two members of
//     rank 0 challenging at once, or a renewal whose EndTxn was still under
//     way): the race every lease has, counted as raced, not as deposed;
//   - and the unseen lease was still below the partition's last stable
//     offset, held there by another transaction open since before it,
//     within RaceWindow of the takeover's record (Visible, from the topic
//     read read_uncommitted with its markers). A challenger brings its view
//     up to the last stable offset before it decides (docs/PROTOCOL.md
//     10.1), so had the lease been visible earlier, the challenger decided
//     before it became visible and took longer than RaceWindow from its
//     decision to its lease record (a slow InitProducerId): counted as a
//     slow challenge, not as deposed;
//   - the previous term did not end by a resign or an administrative fence
//     (an expired lease, granted_at equal to deadline, written by the
//     holder's resign or by a fence: docs/PROTOCOL.md 10.2 and 11.4); and
//   - the previous holder was under no member fault (the campaign's kills,
//     pauses, cuts, delays, minority partitions, clock-skew restarts and
//     mid-transaction faults of that member's process) at any instant from
//     its last committed live lease to the takeover (the records' own
//     timestamps: the writing processes' system clock, which all processes
//     of the campaign share; the clock-skew fault offsets only the lease
//     clock).
//
// A grant at or after the previous deadline is an ordinary takeover of an
// expired lease. Goal 0: a campaign with any fails, like a lost command.

// LeaseRecord is one lease record of the coordination topic, read back
// read_committed after the campaign.
type LeaseRecord struct {
	Role      string            `json:"role"`
	Partition int32             `json:"partition"`
	Offset    int64             `json:"offset"`
	Member    string            `json:"member"`
	Token     core.FencingToken `json:"token"`
	Granted   int64             `json:"granted_ms"`          // granted_at: the writer's lease clock (ms)
	Deadline  int64             `json:"deadline_ms"`         // deadline: the writer's lease clock (ms)
	At        time.Time         `json:"at"`                  // the record's timestamp (CreateTime: the writing process's system clock)
	Committed time.Time         `json:"committed"`           // the timestamp of its transaction's commit marker (zero: unknown, At is used)
	Visible   time.Time         `json:"visible"`             // when the partition's last stable offset passed it (zero: unknown)
	HiddenBy  string            `json:"hidden_by,omitempty"` // the transaction that held the last stable offset below it after its commit
	FencedBy  string            `json:"fenced_by,omitempty"`
}

// committedAt is when the record's transaction committed (its marker), or
// when it was written if that is unknown.
func (l LeaseRecord) committedAt() time.Time {
	if l.Committed.IsZero() {
		return l.At
	}
	return l.Committed
}

// visibleAfter is true when the record became visible (the last stable
// offset passed it) after t; an unknown instant counts as after.
func (l LeaseRecord) visibleAfter(t time.Time) bool { return l.Visible.IsZero() || l.Visible.After(t) }

// Ended is true for the expired lease a resign or a fence writes
// (granted_at = deadline = now).
func (l LeaseRecord) Ended() bool { return l.Granted == l.Deadline }

func (l LeaseRecord) String() string {
	return fmt.Sprintf("%d/%d %s member=%s token=%s granted=%s deadline=%s (record %s)", l.Partition, l.Offset, l.Role, l.Member, l.Token,
		msText(l.Granted), msText(l.Deadline), l.At.UTC().Format("15:04:05.000"))
}

func msText(ms int64) string { return time.UnixMilli(ms).UTC().Format("15:04:05.000") }

// MemberFault is a stretch during which a member's process suffered a
// fault of the campaign (a kill until its restart, a pause, a cut, ...).
type MemberFault struct {
	Member string    `json:"member"`
	Kind   string    `json:"kind"`
	From   time.Time `json:"from"`
	To     time.Time `json:"to"`
}

// SkewSpan is a stretch during which a member's process ran with its lease
// clock offset (the clock-skew fault: from its restart to its next one).
type SkewSpan struct {
	Member   string    `json:"member"`
	OffsetMs int64     `json:"offset_ms"`
	From     time.Time `json:"from"`
	To       time.Time `json:"to"`
}

// DeposeInput is what the detection judges.
type DeposeInput struct {
	Leases    []LeaseRecord // every lease record of the coordination topic, each partition in offset order
	Faults    []MemberFault // the member faults of the campaign
	Skews     []SkewSpan    // the processes that ran with a skewed lease clock
	SkewBound time.Duration // the campaign's largest clock offset
	// RaceWindow: a lease committed less than this before the takeover's
	// record was written may have been committing while the challenger
	// decided (default DefaultRaceWindow).
	RaceWindow time.Duration
}

// DefaultRaceWindow is the RaceWindow of the campaign: the time from a
// challenger's last read of the partition to the record of its lease (its
// InitProducerId, which waits for a transaction of the role still
// committing, and the lease's produce), generously.
const DefaultRaceWindow = time.Second

// Deposition is one healthy holder deposed.
type Deposition struct {
	Role      string      `json:"role"`
	Prev      LeaseRecord `json:"previous"` // the deposed holder's last committed live lease
	Stop      LeaseRecord `json:"unseen"`   // its first lease whose deadline was past the grant: committed, yet not seen
	Next      LeaseRecord `json:"next"`     // the new holder's first lease
	Early     string      `json:"early"`    // Prev.Deadline - Next.Granted
	Tolerance string      `json:"tolerance,omitempty"`
	Text      string      `json:"text"`
}

// DeposeResult counts the takeovers of every role by how they came about.
type DeposeResult struct {
	Leases        int            `json:"lease_records"`
	Takeovers     int            `json:"takeovers"`      // a lease by another member under another token
	AfterDeadline int            `json:"after_deadline"` // granted at or after the previous deadline: ordinary
	AfterResign   int            `json:"after_resign"`   // the previous term ended by a resign
	AfterFence    int            `json:"after_fence"`    // ... by an administrative fence
	UnderFault    int            `json:"under_fault"`    // early, but the previous holder was under a member fault
	WithinSkew    int            `json:"within_skew"`    // early by no more than the clock-skew tolerance
	Raced         int            `json:"raced"`          // early, but the lease that would have stopped it was committed less than RaceWindow before
	Slow          int            `json:"slow_challenge"` // early, but that lease was visible RaceWindow or more before the takeover's record
	Count         int            `json:"deposed"`        // healthy holders deposed (goal 0)
	ByRole        map[string]int `json:"deposed_by_role,omitempty"`
	Deposed       []Deposition   `json:"depositions,omitempty"`
	RacedList     []Deposition   `json:"raced_takeovers,omitempty"` // the raced ones, for the record
	SlowList      []Deposition   `json:"slow_challenges,omitempty"` // the slow ones, for the record
}

// HealthyDeposed applies the definition above to every role of in.Leases.
func HealthyDeposed(in DeposeInput) DeposeResult {
	res := DeposeResult{Leases: len(in.Leases), ByRole: map[string]int{}}
	if in.RaceWindow == 0 {
		in.RaceWindow = DefaultRaceWindow
	}
	type term struct {
		member string
		token  core.FencingToken
		last   LeaseRecord   // the last committed live lease
		live   []LeaseRecord // every live lease of the term, in log order
		ended  string        // "resign", "fence" or ""
	}
	terms := map[string]*term{}
	for _, l := range in.Leases {
		cur := terms[l.Role]
		if l.Ended() {
			// A resign (the holder's own token) or a fence (a newer token,
			// krabka.fenced-by): the term ends here.
			if cur != nil {
				if l.FencedBy != "" || l.Token != cur.token {
					cur.ended = "fence"
				} else {
					cur.ended = "resign"
				}
			}
			continue
		}
		if cur != nil && l.Member == cur.member && l.Token == cur.token && cur.ended == "" {
			cur.last = l // a renewal
			cur.live = append(cur.live, l)
			continue
		}
		if cur == nil || l.Member == cur.member {
			// The first lease, an own epoch recovery or the same member's
			// next incarnation: not a takeover by another member.
			terms[l.Role] = &term{member: l.Member, token: l.Token, last: l, live: []LeaseRecord{l}}
			continue
		}
		if l.Token == cur.token {
			// Another member under the holder's token cannot happen; keep
			// the record as the term's latest and do not count it.
			cur.last = l
			cur.live = append(cur.live, l)
			continue
		}
		res.Takeovers++
		prev := cur.last
		early := time.Duration(prev.Deadline-l.Granted) * time.Millisecond
		switch {
		case cur.ended == "resign":
			res.AfterResign++
		case cur.ended == "fence":
			res.AfterFence++
		case early <= 0:
			res.AfterDeadline++
		case underFault(in.Faults, prev.Member, prev.At, l.At):
			res.UnderFault++
		default:
			tol := time.Duration(0)
			for _, m := range []string{prev.Member, l.Member} {
				if skewed(in.Skews, m, prev.At, l.At) {
					tol += in.SkewBound
				}
			}
			if early <= tol {
				res.WithinSkew++
				break
			}
			// The first lease of the term that, seen, would have stopped
			// the challenge.
			stop := prev
			for _, x := range cur.live {
				if time.Duration(x.Deadline-l.Granted)*time.Millisecond > tol {
					stop = x
					break
				}
			}
			before := l.At.Sub(stop.committedAt())
			d := Deposition{Role: l.Role, Prev: prev, Stop: stop, Next: l, Early: early.String()}
			if tol > 0 {
				d.Tolerance = tol.String()
			}
			d.Text = fmt.Sprintf("role %s: %s took over with token %s granted %s (written %s), %s before the deadline %s of %s's last committed lease (token %s, offset %d, written %s); %s's lease of offset %d (deadline %s) was committed %s before the takeover was written; the term did not end by a resign or a fence and %s was under no member fault",
				l.Role, l.Member, l.Token, msText(l.Granted), l.At.UTC().Format("15:04:05.000"), early, msText(prev.Deadline), prev.Member,
				prev.Token, prev.Offset, prev.At.UTC().Format("15:04:05.000"), stop.Member, stop.Offset, msText(stop.Deadline),
				before.Round(time.Millisecond), prev.Member)
			if tol > 0 {
				d.Text += fmt.Sprintf(" (clock-skew tolerance %s)", tol)
			}
			if stop.HiddenBy != "" {
				d.Text += fmt.Sprintf("; that lease stayed below the last stable offset until %s (%s after its commit), held by an open transaction of %s",
					stop.Visible.UTC().Format("15:04:05.000"), stop.Visible.Sub(stop.Committed).Round(time.Millisecond), stop.HiddenBy)
			}
			if before < in.RaceWindow {
				res.Raced++
				res.RacedList = append(res.RacedList, d)
				break
			}
			if !stop.visibleAfter(l.At.Add(-in.RaceWindow)) {
				res.Slow++
				res.SlowList = append(res.SlowList, d)
				break
			}
			res.Deposed = append(res.Deposed, d)
			res.Count++
			res.ByRole[l.Role]++
		}
		terms[l.Role] = &term{member: l.Member, token: l.Token, last: l, live: []LeaseRecord{l}}
	}
	sort.SliceStable(res.Deposed, func(i, j int) bool { return res.Deposed[i].Next.At.Before(res.Deposed[j].Next.At) })
	return res
}

// underFault is true when a fault of member overlaps [from, to].
func underFault(faults []MemberFault, member string, from, to time.Time) bool {
	for _, f := range faults {
		if f.Member == member && !f.From.After(to) && !f.To.Before(from) {
			return true
		}
	}
	return false
}

// skewed is true when member ran with a skewed lease clock at some instant
// of [from, to].
func skewed(spans []SkewSpan, member string, from, to time.Time) bool {
	for _, s := range spans {
		if s.Member == member && s.OffsetMs != 0 && !s.From.After(to) && !s.To.Before(from) {
			return true
		}
	}
	return false
}
