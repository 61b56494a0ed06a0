package coord

import (
	"github.com/krabka/krabka-coord/core"

	"sort"
	"sync"
	"sync/atomic"
	"time"
)

// Stats is a snapshot of a client's counters and gauges (Client.Stats). The
// JSON form (json tags below) is the schema of krabka_client_stats_json, of
// Python's client.stats() and of Node's client.stats(); docs/STATISTICS.md
// documents it. Fields are only ever added, never renamed or removed.
//
// Counters count since the client was created. The client-wide counters are
// the sums of the per-role counters, except RecordsFolded/RecordsSkipped and
// Reads, which count every read of the coordination topic.
type Stats struct {
	// TimeMs: when the snapshot was taken (epoch milliseconds, client clock).
	TimeMs int64 `json:"ts_ms"`
	// ClientID: client.id of the client.
	ClientID string `json:"client_id"`
	// Leaders: roles this client holds now (leaderships that are ACTIVE).
	Leaders int `json:"leaders"`
	// Counters summed over the roles.
	Counters
	// Reads: completed reads (folds) of a coordination partition.
	Reads int64 `json:"reads"`
	// RecordsFolded: records read and folded, over every read.
	RecordsFolded int64 `json:"records_folded"`
	// RecordsSkipped: records of the folded roles that could not be decoded
	// (a poisoned or foreign record), over every read.
	RecordsSkipped int64 `json:"records_skipped"`
	// ViewWaits: times an Acquire, a leadership's fence watcher or a Watch
	// read its role's state from the client's live view of the partition to
	// wait for the role's next change: once when it starts waiting, then once
	// per wake-up (a folded record of its role, the fold restarting, or the
	// waiter's own timer). Its rate is the wake-up cost of the waiting roles
	// (issue 35: a fetch answer wakes only the waiters of the roles it
	// folded).
	ViewWaits int64 `json:"view_waits"`
	// Roles: one entry per role this client acquired, tried, renewed, wrote
	// through, read or watched, keyed by role name.
	Roles map[string]RoleStats `json:"roles"`
}

// Counters are the event counts kept per role and summed per client.
type Counters struct {
	// Acquisitions: leaderships won (acquire and try_acquire).
	Acquisitions int64 `json:"acquisitions"`
	// Handoffs: acquisitions that took the role over from another member
	// (the log held a lease naming someone else).
	Handoffs int64 `json:"handoffs"`
	// ChallengesWon, ChallengesLost: mints followed by a lease write that
	// succeeded, or that failed (a competitor minted after this client, or
	// the cluster answered an error).
	ChallengesWon  int64 `json:"challenges_won"`
	ChallengesLost int64 `json:"challenges_lost"`
	// RenewalsOK, RenewalsFailed: lease renewals.
	RenewalsOK     int64 `json:"renewals_ok"`
	RenewalsFailed int64 `json:"renewals_failed"`
	// GuardedWrites, GuardedWritesFailed: Produce calls that committed, or
	// that failed (FENCED included).
	GuardedWrites       int64 `json:"guarded_writes"`
	GuardedWritesFailed int64 `json:"guarded_writes_failed"`
	// GuardedWriteLatency: latency of the guarded writes that committed.
	GuardedWriteLatency Histogram `json:"guarded_write_latency"`
	// Ends by state: how leaderships ended.
	EndsFenced   int64 `json:"ends_fenced"`
	EndsExpired  int64 `json:"ends_expired"`
	EndsResigned int64 `json:"ends_resigned"`
	EndsClosed   int64 `json:"ends_closed"`
}

// RoleStats are the counters and gauges of one role.
type RoleStats struct {
	Counters
	// IsLeader: this client holds an ACTIVE leadership of the role.
	IsLeader bool `json:"is_leader"`
	// Member and Token of that leadership ("" when not leader).
	Member string `json:"member"`
	Token  string `json:"token"`
	// LeaseRemainingMs: time left until the deadline of that leadership's
	// lease (0 past it; -1 when not leader).
	LeaseRemainingMs int64 `json:"lease_remaining_ms"`
	// ViewLagMs: how old this client's newest view of the role's partition
	// is: ms since the client's live view of the partition last heard from
	// the broker (its long poll answers at least every 5 s) or since the
	// last one-shot read of it; -1 when never read.
	ViewLagMs int64 `json:"view_lag_ms"`
}

// LatencyBucketsMs are the upper bounds (inclusive, milliseconds) of the
// Histogram buckets; a last bucket counts everything slower.
var LatencyBucketsMs = []int64{1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000}

// Histogram counts latencies in the LatencyBucketsMs buckets.
type Histogram struct {
	Count int64 `json:"count"`
	SumUs int64 `json:"sum_us"` // sum of the latencies in microseconds
	MaxUs int64 `json:"max_us"`
	// Buckets[i] counts latencies <= LatencyBucketsMs[i] (and above the
	// previous bound); Buckets[len(LatencyBucketsMs)] counts the rest. Not
	// cumulative.
	Buckets []int64 `json:"buckets"`
	// BoundsMs repeats LatencyBucketsMs so that the JSON is self-describing.
	BoundsMs []int64 `json:"bounds_ms"`
}

// ---- recording (internal) ----

// roleCounters is the live, lock-free form of Counters for one role.
type roleCounters struct {
	acquisitions, handoffs        atomic.Int64
	challengesWon, challengesLost atomic.Int64
	renewalsOK, renewalsFailed    atomic.Int64
	writes, writesFailed          atomic.Int64
	endsFenced, endsExpired       atomic.Int64
	endsResigned, endsClosed      atomic.Int64
	latCount, latSumUs, latMaxUs  atomic.Int64
	latBuckets                    [14]atomic.Int64 // len(LatencyBucketsMs)+1
	lastReadMs                    atomic.Int64     // client clock; 0 = never
}

// clientStats holds the counters of a client.
type clientStats struct {
	reads, folded, skipped atomic.Int64
	viewWaits              atomic.Int64 // Stats.ViewWaits

	mu    sync.Mutex
	roles map[wireRole]*roleCounters
}

func newClientStats() *clientStats { return &clientStats{roles: map[wireRole]*roleCounters{}} }

// role returns the counters of r, creating them.
func (s *clientStats) role(r wireRole) *roleCounters {
	s.mu.Lock()
	defer s.mu.Unlock()
	rc := s.roles[r]
	if rc == nil {
		rc = &roleCounters{}
		s.roles[r] = rc
	}
	return rc
}

// read records one fold of a partition for role r.
func (s *clientStats) read(r wireRole, records int, st core.State, nowMs int64) {
	s.reads.Add(1)
	s.folded.Add(int64(records))
	s.skipped.Add(int64(st.Skipped))
	if nowMs <= 0 {
		nowMs = 1
	}
	s.role(r).lastReadMs.Store(nowMs)
}

// fetched records one answered fetch of a followed partition (the live
// view): records folded and, of them, skipped.
func (s *clientStats) fetched(records, skipped int) {
	s.reads.Add(1)
	s.folded.Add(int64(records))
	s.skipped.Add(int64(skipped))
}

// challenge records the outcome of a challenge; prev is the lease the
// challenger saw (nil: none).
func (rc *roleCounters) challenge(member core.MemberID, prev *core.Lease, err error) {
	if err != nil {
		rc.challengesLost.Add(1)
		return
	}
	rc.challengesWon.Add(1)
	rc.acquisitions.Add(1)
	if prev != nil && prev.Member != member {
		rc.handoffs.Add(1)
	}
}

func (rc *roleCounters) renewal(err error) {
	if err != nil {
		rc.renewalsFailed.Add(1)
	} else {
		rc.renewalsOK.Add(1)
	}
}

func (rc *roleCounters) write(d time.Duration, err error) {
	if err != nil {
		rc.writesFailed.Add(1)
		return
	}
	rc.writes.Add(1)
	us := d.Microseconds()
	rc.latCount.Add(1)
	rc.latSumUs.Add(us)
	for {
		m := rc.latMaxUs.Load()
		if us <= m || rc.latMaxUs.CompareAndSwap(m, us) {
			break
		}
	}
	i := sort.Search(len(LatencyBucketsMs), func(i int) bool { return us <= LatencyBucketsMs[i]*1000 })
	rc.latBuckets[i].Add(1)
}

func (rc *roleCounters) end(s LeadershipState) {
	switch s {
	case Fenced:
		rc.endsFenced.Add(1)
	case Expired:
		rc.endsExpired.Add(1)
	case Resigned:
		rc.endsResigned.Add(1)
	case Closed:
		rc.endsClosed.Add(1)
	}
}

func (rc *roleCounters) snapshot() Counters {
	h := Histogram{
		Count: rc.latCount.Load(), SumUs: rc.latSumUs.Load(), MaxUs: rc.latMaxUs.Load(),
		Buckets: make([]int64, len(rc.latBuckets)), BoundsMs: append([]int64(nil), LatencyBucketsMs...),
	}
	for i := range rc.latBuckets {
		h.Buckets[i] = rc.latBuckets[i].Load()
	}
	return Counters{
		Acquisitions: rc.acquisitions.Load(), Handoffs: rc.handoffs.Load(),
		ChallengesWon: rc.challengesWon.Load(), ChallengesLost: rc.challengesLost.Load(),
		RenewalsOK: rc.renewalsOK.Load(), RenewalsFailed: rc.renewalsFailed.Load(),
		GuardedWrites: rc.writes.Load(), GuardedWritesFailed: rc.writesFailed.Load(),
		GuardedWriteLatency: h,
		EndsFenced:          rc.endsFenced.Load(), EndsExpired: rc.endsExpired.Load(),
		EndsResigned: rc.endsResigned.Load(), EndsClosed: rc.endsClosed.Load(),
	}
}

func (c *Counters) add(o Counters) {
	c.Acquisitions += o.Acquisitions
	c.Handoffs += o.Handoffs
	c.ChallengesWon += o.ChallengesWon
	c.ChallengesLost += o.ChallengesLost
	c.RenewalsOK += o.RenewalsOK
	c.RenewalsFailed += o.RenewalsFailed
	c.GuardedWrites += o.GuardedWrites
	c.GuardedWritesFailed += o.GuardedWritesFailed
	c.EndsFenced += o.EndsFenced
	c.EndsExpired += o.EndsExpired
	c.EndsResigned += o.EndsResigned
	c.EndsClosed += o.EndsClosed
	h, g := &c.GuardedWriteLatency, o.GuardedWriteLatency
	if h.Buckets == nil {
		h.Buckets = make([]int64, len(g.Buckets))
		h.BoundsMs = g.BoundsMs
	}
	h.Count += g.Count
	h.SumUs += g.SumUs
	if g.MaxUs > h.MaxUs {
		h.MaxUs = g.MaxUs
	}
	for i := range g.Buckets {
		h.Buckets[i] += g.Buckets[i]
	}
}

// Stats returns a snapshot of the client's counters and gauges. Never
// blocks on the network; safe for concurrent use, also after Close.
func (c *Client) Stats() Stats {
	now := c.clock.NowMs()
	s := c.stats
	out := Stats{
		TimeMs: now, ClientID: c.cfg.ClientID,
		Reads: s.reads.Load(), RecordsFolded: s.folded.Load(), RecordsSkipped: s.skipped.Load(),
		ViewWaits: s.viewWaits.Load(),
		Roles:     map[string]RoleStats{},
	}
	out.GuardedWriteLatency = Histogram{
		Buckets: make([]int64, len(LatencyBucketsMs)+1), BoundsMs: append([]int64(nil), LatencyBucketsMs...),
	}
	s.mu.Lock()
	roles := make(map[wireRole]*roleCounters, len(s.roles))
	for r, rc := range s.roles {
		roles[r] = rc
	}
	s.mu.Unlock()
	c.mu.Lock()
	leaders := make(map[wireRole]*Leadership, len(c.byRole))
	for r, l := range c.byRole {
		leaders[r] = l
	}
	c.mu.Unlock()
	for r, rc := range roles {
		rs := RoleStats{Counters: rc.snapshot(), LeaseRemainingMs: -1, ViewLagMs: -1}
		at := rc.lastReadMs.Load()
		if v := c.viewOf(r); v != nil {
			at = max(at, v.heard())
		}
		if at > 0 {
			rs.ViewLagMs = core.SatSub(now, at)
			if rs.ViewLagMs < 0 {
				rs.ViewLagMs = 0
			}
		}
		if l := leaders[r]; l != nil && l.State() == Active {
			rs.IsLeader, rs.Member, rs.Token = true, l.member.String(), l.Token().String()
			rs.LeaseRemainingMs = l.Lease().RemainingAt(now)
			out.Leaders++
		}
		out.Counters.add(rs.Counters)
		out.Roles[r.String()] = rs
	}
	return out
}
