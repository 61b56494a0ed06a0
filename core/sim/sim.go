package sim

import (
	"fmt"
	"math/rand/v2"
	"strings"

	"github.com/krabka/krabka-coord/core"
)

// Bugs are test-only switches that break one rule on purpose, so that a
// test can show the checker reports the violation (and its seed). All false
// in a real run.
type Bugs struct {
	// AcceptStaleEpoch: the coordinator forgets to reject a produce or
	// EndTxn that carries a superseded epoch.
	AcceptStaleEpoch bool
	// FailBack: a member that held the role before challenges a live lease
	// of another member instead of waiting.
	FailBack bool
	// NoPrune: a winner writes its first lease without the registration
	// tombstones of docs/PROTOCOL.md 10.3.
	NoPrune bool
	// SkipSync: a member acts on its view without first bringing it to the
	// last stable offset.
	SkipSync bool
	// AckBeforeCommit: the guarded write reports success once its records
	// are produced, without waiting for the commit.
	AckBeforeCommit bool
	// ReadUncommitted: the live view folds every record of its fetches at
	// once, without resolving transactions (undecided and aborted records
	// too).
	ReadUncommitted bool
	// RegisterAgain: a member registers again whenever its view does not
	// show its registration yet (instead of at most once per acquire call),
	// and decides again right after registering, without a sync (with one,
	// a view that reads past the last stable offset always shows it).
	RegisterAgain bool
	// LateChallenge: a member whose turn has come waits one more stagger
	// before it challenges (its decisions are right; it acts late).
	LateChallenge bool
	// ReadCommitted: the reading before issue 34. The live view fetches
	// read_committed up to the partition's last stable offset, and the sync
	// before acting lists the last stable offset, waits (at most 1 s, and
	// at most half the request timeout) for it to reach the high watermark
	// listed with it, then brings the view there; lease transactions carry
	// the lease as their transaction timeout. A transaction of any role left
	// open freezes every view of the partition until it is aborted.
	ReadCommitted bool
}

// BugNames are the test-only switches by name (-sim.bug).
var BugNames = map[string]func(*Bugs){
	"accept-stale-epoch": func(b *Bugs) { b.AcceptStaleEpoch = true },
	"fail-back":          func(b *Bugs) { b.FailBack = true },
	"no-prune":           func(b *Bugs) { b.NoPrune = true },
	"skip-sync":          func(b *Bugs) { b.SkipSync = true },
	"ack-before-commit":  func(b *Bugs) { b.AckBeforeCommit = true },
	"read-uncommitted":   func(b *Bugs) { b.ReadUncommitted = true },
	"register-again":     func(b *Bugs) { b.RegisterAgain = true },
	"late-challenge":     func(b *Bugs) { b.LateChallenge = true },
	"read-committed":     func(b *Bugs) { b.ReadCommitted = true },
}

// Config is one scenario. Random draws it from a seed.
type Config struct {
	Seed uint64
	// Roles: how many roles share the coordination partition, each with
	// its own transactional.id, command partition, members and faults.
	Roles int
	// Members: how many members each role has.
	Members int
	// Reference is how many of a role's members behave like the reference
	// implementations (docs/PROTOCOL.md 11.6): no krabka.rejoin, the
	// krabka.successor header ignored, at most one registration per
	// acquire call, no pruning.
	Reference int
	Lease     core.LeaseConfig
	Poll      int64 // krabka.poll.interval.ms
	Timeout   int64 // request.timeout.ms
	SkewBound int64 // every member's clock is off by at most this (either way)
	// TxnTimeout: krabka.txn.timeout.ms, the transaction timeout of every
	// transactional producer (never more than the lease; the lease with
	// the read-committed switch, as before issue 34).
	TxnTimeout int64
	// AbortScan: the coordinator looks for transactions past their timeout
	// this often (transaction.abort.timed.out.transaction.cleanup.interval.ms):
	// a transaction left open stays open up to TxnTimeout+AbortScan.
	AbortScan int64
	// Dispatch: the leader writes a command every Dispatch ms.
	Dispatch int64
	// EagerRejoin: after a resign the host campaigns again at once
	// (otherwise, as after every loss, after a poll interval).
	EagerRejoin bool
	// Network: every message takes LatencyMin..LatencyMax ms; with
	// DropRequest / DropResponse a request or an answer is lost; with Spike
	// a message is delayed SpikeMin..SpikeMax ms (so it overtakes or is
	// overtaken).
	LatencyMin, LatencyMax int64
	DropRequest            float64
	DropResponse           float64
	Spike                  float64
	SpikeMin, SpikeMax     int64
	// FaultEvery: a member fault (crash, pause, resign, link cut, skewed
	// restart, fence) every FaultMin..FaultMax ms.
	FaultMin, FaultMax int64
	// FirstEpoch > 0: the role's transactional.id was used before and its
	// epoch starts there (near 32766 the coordinator hands out new
	// producer ids).
	FirstEpoch int16
	// Failovers: the scenario ends after this many failovers, or after
	// MaxTime ms of simulated time.
	Failovers int
	MaxTime   int64
	// Bug names one test-only switch of BugNames ("": none).
	Bug string
}

// Random draws the scenario of seed.
func Random(seed uint64, failovers int) Config {
	r := rand.New(rand.NewPCG(seed, 0x6b7261626b61))
	c := Config{Seed: seed, Failovers: failovers, MaxTime: int64(failovers) * 20000}
	c.Roles = 2 + r.IntN(2)
	c.Members = 3 + r.IntN(3)
	if r.IntN(3) == 0 {
		c.Reference = 1
	}
	d := []int64{2000, 3000, 4000}[r.IntN(3)]
	c.Lease = core.LeaseConfig{DurationMs: d, RenewIntervalMs: d / 3, ChallengeStaggerMs: 500 + 100*r.Int64N(6)}
	g := c.Lease.ChallengeStaggerMs
	c.Poll = g/3 + r.Int64N(2*g/3+1)
	c.Timeout = 200 + 50*r.Int64N(9)
	c.SkewBound = r.Int64N(g/5 + 1)
	c.Dispatch = 250 + 50*r.Int64N(8)
	c.LatencyMin = 1
	c.LatencyMax = 2 + r.Int64N(5)
	if r.IntN(5) != 0 {
		c.DropRequest = float64(r.IntN(8)) / 1000
		c.DropResponse = float64(r.IntN(8)) / 1000
		c.Spike = float64(r.IntN(8)) / 1000
	}
	c.SpikeMin, c.SpikeMax = 50, 1500
	c.FaultMin = 300
	c.FaultMax = 1500 + r.Int64N(2000)
	if r.IntN(4) == 0 {
		// A calm scenario: a fault every few seconds and a clean network,
		// so that many handovers are quiet enough to be judged.
		c.DropRequest, c.DropResponse, c.Spike = 0, 0, 0
		c.FaultMin, c.FaultMax = 2000, 2000+2*d
	}
	if r.IntN(4) == 0 {
		c.FirstEpoch = epochExhausted - int16(r.IntN(4))
	}
	c.EagerRejoin = r.IntN(3) == 0
	// krabka.txn.timeout.ms: about a third of the lease (10 s to a 30 s
	// lease by default) up to the lease.
	c.TxnTimeout = min(d, d/3+r.Int64N(2*d/3+1))
	c.AbortScan = []int64{500, 1000, 2000}[r.IntN(3)]
	return c
}

// txnTimeout is the transaction timeout the members' producers ask for.
func (s *Sim) txnTimeout() int64 {
	if s.bugs.ReadCommitted {
		return s.cfg.Lease.DurationMs
	}
	return min(s.cfg.TxnTimeout, s.cfg.Lease.DurationMs)
}

func (c Config) String() string {
	bug := ""
	if c.Bug != "" {
		bug = " bug=" + c.Bug
	}
	return fmt.Sprintf("seed=%d failovers=%d%s roles=%d members=%d reference=%d lease=%d/%d/%d poll=%d timeout=%d skew<=%d txn_timeout=%d abort_scan=%d dispatch=%d latency=%d-%d drop=%.3f/%.3f spike=%.3f faults every %d-%d first_epoch=%d eager_rejoin=%v",
		c.Seed, c.Failovers, bug, c.Roles, c.Members, c.Reference, c.Lease.DurationMs, c.Lease.RenewIntervalMs, c.Lease.ChallengeStaggerMs,
		c.Poll, c.Timeout, c.SkewBound, c.TxnTimeout, c.AbortScan, c.Dispatch, c.LatencyMin, c.LatencyMax, c.DropRequest, c.DropResponse, c.Spike,
		c.FaultMin, c.FaultMax, c.FirstEpoch, c.EagerRejoin)
}

// Sim is one scenario being run.
type Sim struct {
	cfg  Config
	bugs Bugs
	rng  *rand.Rand
	s    *sched
	cl   *cluster
	chk  *checker

	roles   []*roleSim
	byName  map[string]int // role name -> index in roles
	members []*member      // every member of every role
	admin   *member        // the operator's tool (administrative fences)
	oldRead bool           // Bugs.ReadCommitted: the reading before issue 34

	attempts int64 // command attempts, for unique command values

	trace   *strings.Builder
	verbose bool // trace every answer too

	faults  map[string]int
	stopped bool
}

// roleSim is one role of the coordination partition: its members, its
// command partition and its quiet mark. Its transactional.id is the
// cluster's coordinator of the same index.
type roleSim struct {
	idx     int
	role    core.Role
	prefix  string // of its incarnations' names in the trace ("" for the first role)
	members []*member
	cmds    topicID
	// quietFrom: no fault and no effect of one before this instant is
	// pending in the role (the succession checks judge only handovers
	// after it).
	quietFrom int64
}

// request is what a member sends to the cluster.
type request struct {
	kind    reqKind
	offset  int64
	maxWait int64
	recs    []outRecord
	token   core.FencingToken
	recover bool // InitProducerId carrying token (KIP-360)
	commit  bool
	tag     txnTag
	co      int // the transaction coordinator (role index) of a transactional request
	// listed: the high watermark when the sync before a challenge's
	// InitProducerId listed its offsets (the checker's truth).
	listed int64
}

type reqKind uint8

const (
	reqListOffsets reqKind = iota
	reqFetch
	reqAppend
	reqInitPID
	reqProduce
	reqEndTxn
	reqDescribe
)

func (k reqKind) String() string {
	return [...]string{"ListOffsets", "Fetch", "Produce(plain)", "InitProducerId", "Produce(txn)", "EndTxn", "DescribeTransactions"}[k]
}

type outRecord struct {
	topic   topicID
	key     []byte
	value   []byte
	headers []core.RecordHeader
}

type errCode uint8

const (
	errOK errCode = iota
	errTimeout
	errFenced          // PRODUCER_FENCED / INVALID_PRODUCER_EPOCH
	errInvalidMapping  // INVALID_PRODUCER_ID_MAPPING
	errInvalidTxnState // INVALID_TXN_STATE
)

func (e errCode) String() string {
	return [...]string{"OK", "TIMEOUT", "FENCED", "INVALID_PRODUCER_ID_MAPPING", "INVALID_TXN_STATE"}[e]
}

// response is the cluster's answer.
type response struct {
	err     errCode
	at      int64 // true time the cluster answered
	offsets []int64
	lso     int64 // the last stable offset
	hwm     int64 // the high watermark
	token   core.FencingToken
	recs    []core.RawRecord // a read_committed fetch: committed records
	batches []core.Batch     // a read_uncommitted fetch: every batch below the high watermark
	next    int64
}

var timeoutResponse = &response{err: errTimeout}

func (s *Sim) tracef(format string, args ...any) {
	if s.trace == nil {
		return
	}
	fmt.Fprintf(s.trace, "%9d ", s.s.now)
	fmt.Fprintf(s.trace, format, args...)
	s.trace.WriteByte('\n')
}

func (s *Sim) tracing() bool { return s.trace != nil }

// fault counts an injected fault and moves the quiet mark of rs (nil: of
// every role) past its effects.
func (s *Sim) fault(rs *roleSim, kind string, effectsUntil int64) {
	s.faults[kind]++
	s.quiet(rs, effectsUntil)
}

// quiet moves the quiet mark of rs (nil: of every role) to until. With the
// reading before issue 34 a fault of one role can hold every view of the
// partition (a transaction it leaves open holds the last stable offset):
// every role's mark moves.
func (s *Sim) quiet(rs *roleSim, until int64) {
	for _, r := range s.roles {
		if (r == rs || rs == nil || s.oldRead) && until > r.quietFrom {
			r.quietFrom = until
		}
	}
}

// latency draws the delay of one message of a member of rs (nil: the
// operator's) and whether it is lost.
func (s *Sim) latency(rs *roleSim, drop float64, timeout int64) (int64, bool) {
	c := &s.cfg
	if drop > 0 && s.rng.Float64() < drop {
		return 0, true
	}
	d := c.LatencyMin + s.rng.Int64N(c.LatencyMax-c.LatencyMin+1)
	if c.Spike > 0 && s.rng.Float64() < c.Spike {
		d = c.SpikeMin + s.rng.Int64N(c.SpikeMax-c.SpikeMin+1)
		s.fault(rs, "message-delayed", s.s.now+d+s.settleCall(timeout))
	}
	return d, false
}

// settle is how long the effects of a lost or late message can last: the
// sender's timeout and one backoff.
func (s *Sim) settle() int64 { return s.cfg.Timeout + 2*s.cfg.Poll }

// settleCall is settle for a message of a call that waits up to timeout.
func (s *Sim) settleCall(timeout int64) int64 { return max(timeout, s.cfg.Timeout) + 2*s.cfg.Poll }

// call sends rq to the cluster and waits for the answer, at most timeout ms
// (and never past p.cutoff). A lost answer looks like a timeout.
func (p *proc) call(rq *request, timeout int64) *response {
	s := p.sim
	if p.cutoff > 0 {
		if rem := p.cutoff - s.s.now; rem < timeout {
			timeout = rem
		}
	}
	if timeout <= 0 {
		return timeoutResponse
	}
	g := p.gen
	p.callTimeout, p.callEnd = timeout, s.s.now+timeout
	s.send(p, g, rq)
	p.block()
	if p.why == wakeResponse {
		if s.verbose {
			s.tracef("%s/%s: %s", p.inc, p.name, callString(rq, p.resp))
		}
		return p.resp
	}
	if s.verbose {
		s.tracef("%s/%s: %s", p.inc, p.name, callString(rq, timeoutResponse))
	}
	return timeoutResponse
}

// callString describes a call and its answer for the trace.
func callString(rq *request, r *response) string {
	what := rq.kind.String()
	switch rq.kind {
	case reqFetch:
		what += fmt.Sprintf("(from %d)", rq.offset)
	case reqInitPID, reqDescribe:
		what += fmt.Sprintf("[%d]", rq.co)
		if rq.recover {
			what += fmt.Sprintf("(own %s)", rq.token)
		}
	case reqProduce:
		what += fmt.Sprintf("(%s %s, %d records)", rq.tag, rq.token, len(rq.recs))
	case reqEndTxn:
		if rq.commit {
			what += fmt.Sprintf("(commit %s)", rq.token)
		} else {
			what += fmt.Sprintf("(abort %s)", rq.token)
		}
	}
	if r.err != errOK {
		return what + " -> " + r.err.String()
	}
	switch rq.kind {
	case reqListOffsets:
		return fmt.Sprintf("%s -> last stable offset %d, high watermark %d", what, r.lso, r.hwm)
	case reqFetch:
		if r.batches != nil {
			return fmt.Sprintf("%s -> %d batches, next %d", what, len(r.batches), r.next)
		}
		return fmt.Sprintf("%s -> %d records, next %d", what, len(r.recs), r.next)
	case reqAppend, reqProduce:
		return fmt.Sprintf("%s -> offsets %v", what, r.offsets)
	case reqInitPID, reqDescribe:
		return fmt.Sprintf("%s -> %s", what, r.token)
	}
	return what + " -> OK"
}

// send puts rq on the network from p's member (a request sent by an
// incarnation that crashes afterwards still arrives).
func (s *Sim) send(p *proc, gen uint64, rq *request) {
	m := p.inc.m
	d, lost := s.latency(m.rs, s.cfg.DropRequest, p.callTimeout)
	if lost {
		s.fault(m.rs, "request-lost", s.s.now+s.settleCall(p.callTimeout))
		if s.tracing() {
			s.tracef("%s: %s lost on the way", p.inc, rq.kind)
		}
		p.late(gen, -1)
		return
	}
	p.late(gen, s.s.now+d)
	s.s.push(s.s.now+d, event{p: p, gen: gen, rq: rq, link: m})
}

// reply sends the cluster's answer back to p.
func (s *Sim) reply(p *proc, gen uint64, r *response) {
	r.at = s.s.now
	if p == nil {
		return // a one-way request
	}
	m := p.inc.m
	d, lost := s.latency(m.rs, s.cfg.DropResponse, p.callTimeout)
	if lost {
		s.fault(m.rs, "response-lost", s.s.now+s.settleCall(p.callTimeout))
		if s.tracing() {
			s.tracef("%s: an answer (%s) lost on the way", p.inc, r.err)
		}
		p.late(gen, -1)
		return
	}
	p.late(gen, s.s.now+d)
	s.s.push(s.s.now+d, event{p: p, gen: gen, why: wakeResponse, resp: r, link: m})
}

// fire runs one event.
func (s *Sim) fire(ev event) {
	switch {
	case ev.fn != nil:
		ev.fn()
	case ev.link != nil && ev.link.cutUntil > s.s.now:
		// The link holds the message until it heals.
		t := ev.link.cutUntil + s.rng.Int64N(s.cfg.LatencyMax+1)
		if ev.p != nil {
			ev.p.late(ev.gen, t)
		}
		s.s.push(t, ev)
	case ev.rq != nil:
		s.cl.handle(ev.p, ev.gen, ev.rq)
	default:
		ev.p.wake(ev.gen, ev.why, ev.resp)
	}
}

// sendOneWay sends a request whose answer nobody waits for (a producer's
// abort at close).
func (s *Sim) sendOneWay(m *member, rq *request) {
	d, lost := s.latency(m.rs, s.cfg.DropRequest, 0)
	if lost {
		return
	}
	s.s.push(s.s.now+d, event{rq: rq, link: m})
}
