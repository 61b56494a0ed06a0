package sim

import (
	"strconv"

	"github.com/krabka/krabka-coord/core"
)

// The members: each runs the decision code of the library (core's fold of
// the partition, core.Evaluate, the lease clock, core.PruneList) inside a
// model of coord.Client's control flow (acquire, the live view, the
// leadership's renewer and watchers, the transactional producer's
// settlement after a failure as core/kafka does it), and a host loop like
// the demo's: campaign, write a numbered command every Dispatch ms through
// the guarded write, campaign again after a loss.

// member is one member id: it survives its incarnations (processes).
type member struct {
	sim       *Sim
	rs        *roleSim // its role (nil: the operator's tool)
	id        core.MemberID
	reference bool
	skew      int64
	cutUntil  int64        // the link holds every message until then
	inc       *incarnation // nil while down
	incs      int
	seq       int64 // the next command number (a device's counter: kept across restarts)
	everHeld  bool  // held the role once (the fail-back switch)
}

// incarnation is one process of a member: its view, its acquire calls and
// at most one leadership at a time.
type incarnation struct {
	sim         *Sim
	m           *member
	n           int
	name        string
	dead        bool
	pausedUntil int64
	skew        int64
	procs       []*proc
	view        *view
	lead        *leadership
	resignTo    *core.MemberID // a planned resign is asked for (zero MemberID: no named successor)
	calls       int            // acquire calls so far
	inAcquire   bool
	acting      bool // between a decision to challenge and the end of the challenge
	// listedHWM: the coordination partition's high watermark (the truth,
	// whatever the sync listed) when its last sync listed its offsets.
	listedHWM int64
	trap      trapKind // a fault armed to strike inside its next lease transaction
}

// campaigning: the incarnation runs an acquire call and is not paused.
func (inc *incarnation) campaigning() bool {
	return inc.inAcquire && inc.pausedUntil <= inc.sim.s.now
}

func (inc *incarnation) String() string { return inc.name }

// now is the incarnation's clock: true time plus its skew.
func (inc *incarnation) now() int64 { return inc.sim.s.now + inc.skew }

func (s *Sim) start(m *member) {
	m.incs++
	inc := &incarnation{sim: s, m: m, n: m.incs, skew: m.skew}
	inc.name = m.rs.prefix + m.id.String() + "#" + strconv.Itoa(inc.n)
	m.inc = inc
	inc.view = newView(inc)
	inc.spawn("follower", inc.view.follow)
	inc.spawn("host", inc.host)
	s.tracef("%s: started (skew %+d ms)", inc, inc.skew)
}

// crash kills every process of the incarnation at once. Its requests
// already on the network still arrive.
func (inc *incarnation) crash() {
	inc.dead = true
	inc.m.inc = nil
	for _, p := range inc.procs {
		p.kill()
	}
}

// view is the incarnation's live view of the coordination partition
// (coord's partView): a follower fetches from the next offset with long
// polls. It reads past the last stable offset (docs/PROTOCOL.md 12.1): a
// core.TxnFolder resolves the batches of each producer and hands the
// committed records to a core.PartitionFolder, so that a transaction
// another producer left open hides nothing committed after it. With
// Bugs.ReadCommitted it reads committed records up to the last stable
// offset and folds them as they come (the reading before issue 34).
type view struct {
	inc     *incarnation
	fold    *core.PartitionFolder
	txns    *core.TxnFolder
	next    int64
	changed waitList
	// The role's state as last computed, valid while cached == folded+1.
	folded, cached int64
	st             core.State
}

const followWait = 5000

func newView(inc *incarnation) *view {
	v := &view{inc: inc, fold: core.NewPartitionFolder()}
	role := inc.m.rs.role.String()
	v.txns = core.NewTxnFolder(func(r core.RawRecord) {
		v.fold.AddRaw(r)
		if !otherRole(r.Key, role) {
			v.folded++
		}
	})
	return v
}

// otherRole reports whether key names another role than role (a record
// that cannot change role's state, its count of skipped records aside,
// which no decision reads: the view's cache of that state stays valid).
func otherRole(key []byte, role string) bool {
	// A key: version (2 bytes), kind (2), the role's length (2), the role.
	if len(key) < 6 {
		return false
	}
	n := int(key[4])<<8 | int(key[5])
	if len(key) < 6+n {
		return false
	}
	return string(key[6:6+n]) != role
}

func (v *view) follow(p *proc) {
	s := p.sim
	backoff := int64(20)
	for {
		r := p.call(&request{kind: reqFetch, offset: v.next, maxWait: followWait}, followWait+s.cfg.Timeout)
		if r.err != errOK {
			p.sleep(backoff)
			backoff = min(2*backoff, 1000)
			continue
		}
		backoff = 20
		for _, rec := range r.recs {
			v.fold.AddRaw(rec)
		}
		v.folded += int64(len(r.recs))
		for _, b := range r.batches {
			if s.bugs.ReadUncommitted {
				// The broken reading: every data record counts at once.
				for _, rec := range b.Records {
					v.fold.AddRaw(rec)
					v.folded++
				}
				continue
			}
			v.txns.Add(b)
		}
		if r.next > v.next {
			v.next = r.next
			v.changed.wakeAll(s.s)
		}
	}
}

// state is the role's state in the view. The caller must not modify it.
func (v *view) state() core.State {
	if v.cached != v.folded+1 {
		v.st = v.fold.State(v.inc.m.rs.role)
		v.cached = v.folded + 1
	}
	return v.st
}

// markerWait bounds how long a sync waits for the markers of open
// transactions (coord's openTxnWait; core/kafka's markerWait before issue
// 34).
const markerWait = 1000

// sync brings the view up to date before the member acts (partView.sync)
// and returns the offset it was bound to reach (so that the checker can
// judge the view the member then acts on). It lists the high watermark and
// brings the view there; then, while a transaction the view reads as open
// holds a record of the member's role (a write answered just before whose
// marker is not read yet), it waits for the view to change, at most
// markerWait from its start. Open transactions of other roles are not
// waited for. With Bugs.ReadCommitted it is the sync before issue 34 (see
// syncCommitted).
func (inc *incarnation) sync(p *proc) (int64, bool) {
	s := inc.sim
	if s.bugs.SkipSync {
		inc.listedHWM = s.cl.parts[topicCoord].end
		return s.chk.syncTarget(), true
	}
	if s.oldRead {
		return inc.syncCommitted(p)
	}
	start := s.s.now
	r := p.call(&request{kind: reqListOffsets}, s.cfg.Timeout)
	if r.err != errOK {
		return 0, false
	}
	inc.listedHWM = r.hwm
	v := inc.view
	for v.next < r.hwm {
		p.waitOn(&v.changed, 0)
	}
	for v.txns.OpenHolds(inc.m.rs.role) {
		wait := start + markerWait - s.s.now
		if wait <= 0 {
			if s.tracing() {
				s.tracef("%s: a transaction of the role is still open after the marker wait; deciding on the view as it is", inc)
			}
			break
		}
		p.waitOn(&v.changed, wait)
	}
	return r.hwm, true
}

// syncCommitted is the sync before issue 34 (core/kafka's StableOffset and
// partView.sync): list the last stable offset and the high watermark, list
// the last stable offset again every 5 ms while it is short of that high
// watermark, at most markerWait and at most half the request timeout, then
// bring the view to the last stable offset listed last.
func (inc *incarnation) syncCommitted(p *proc) (int64, bool) {
	s := inc.sim
	r := p.call(&request{kind: reqListOffsets}, s.cfg.Timeout)
	if r.err != errOK {
		return 0, false
	}
	inc.listedHWM = r.hwm
	lso, hwm := r.lso, r.hwm
	until := s.s.now + min(markerWait, s.cfg.Timeout/2)
	for lso < hwm && s.s.now < until {
		p.sleep(5)
		r := p.call(&request{kind: reqListOffsets}, s.cfg.Timeout)
		if r.err != errOK {
			return 0, false
		}
		lso = r.lso
	}
	for inc.view.next < lso {
		p.waitOn(&inc.view.changed, 0)
	}
	return lso, true
}

// rideThrough is coord's retry of transport failures in acquire: 50 ms
// doubling up to the poll interval.
type rideThrough struct{ backoff int64 }

func (r *rideThrough) retry(p *proc) {
	poll := p.sim.cfg.Poll
	if r.backoff == 0 {
		r.backoff = 50
	} else if r.backoff *= 2; r.backoff > poll {
		r.backoff = poll
	}
	p.sleep(r.backoff)
}

// evaluate is the member's succession decision: core.Evaluate (a reference
// member does not read krabka.successor).
func (inc *incarnation) evaluate(st core.State, now int64) core.Decision {
	s := inc.sim
	if inc.m.reference {
		st.Successor = core.MemberID{}
	}
	d := core.Evaluate(st, inc.m.id, now, s.cfg.Lease)
	if s.bugs.FailBack && d.Kind == core.Wait && inc.m.everHeld && st.Lease != nil && st.Lease.Member != inc.m.id {
		d = core.Decision{Kind: core.Challenge}
	}
	return d
}

// acquire is coord.Client.acquire: register at most once (again only when
// the view shows the registration removed after it), wait for the turn,
// sync, decide again on the synced view, mint and write the lease with the
// pruning. A reference member's call gives up after a while (its host then
// calls again).
func (inc *incarnation) acquire(p *proc) *leadership {
	s := inc.sim
	inc.calls++
	call := inc.calls
	start := s.s.now
	inc.inAcquire = true
	defer func() { inc.inAcquire = false }()
	var rt rideThrough
	regOffset := int64(-1)
	registered := 0
	synced := false
	v := inc.view
	for {
		if inc.m.reference && s.s.now-start > 4*s.cfg.Lease.DurationMs {
			return nil
		}
		if !synced {
			if _, ok := inc.sync(p); !ok {
				rt.retry(p)
				continue
			}
			synced = true
			rt = rideThrough{}
		}
		st, next := v.state(), v.next
		now := inc.now()
		d := inc.evaluate(st, now)
		s.chk.onDecision(inc, call, next, now, st, d, -1)
		switch d.Kind {
		case core.NotRegistered:
			if regOffset >= 0 && next <= regOffset && !s.bugs.RegisterAgain {
				p.waitOn(&v.changed, s.cfg.Poll)
				continue
			}
			if inc.m.reference && registered > 0 {
				p.waitOn(&v.changed, s.cfg.Poll)
				continue
			}
			s.chk.onRegister(inc, call, next, regOffset)
			hdrs := []core.RecordHeader(nil)
			if !inc.m.reference {
				// coord's registration headers: krabka.rejoin, and the
				// member's metadata (11.2).
				hdrs = []core.RecordHeader{{Key: core.HeaderRejoin, Value: []byte("1")},
					{Key: core.HeaderMeta, Value: []byte("member " + inc.name)}}
			}
			reg := core.Registration{Member: inc.m.id, RegisteredAt: now}
			r := p.call(&request{kind: reqAppend, recs: []outRecord{{topic: topicCoord,
				key: core.EncodeKey(core.RegistrationKey(inc.m.rs.role, inc.m.id)), value: core.EncodeRegistration(reg), headers: hdrs}}}, s.cfg.Timeout)
			if r.err != errOK {
				rt.retry(p)
				continue
			}
			regOffset = r.offsets[0]
			registered++
			s.chk.onRegistered(inc, call, regOffset)
			// Decide again after a sync: the view then reaches past the
			// registration (RegisterAgain decides at once, on the view as
			// it is).
			synced = s.bugs.RegisterAgain
		case core.Wait:
			wait := min(core.SatSub(d.WaitUntil, now), s.cfg.Poll)
			p.waitOn(&v.changed, wait)
		case core.Hold, core.Challenge:
			if s.bugs.LateChallenge {
				p.sleep(s.cfg.Lease.ChallengeStaggerMs)
			}
			synced = false
			target, ok := inc.sync(p)
			if !ok {
				rt.retry(p)
				continue
			}
			st, next = v.state(), v.next
			now = inc.now()
			d2 := inc.evaluate(st, now)
			s.chk.onDecision(inc, call, next, now, st, d2, target)
			if d2.Kind != core.Hold && d2.Kind != core.Challenge {
				synced = true
				continue
			}
			var meta []byte
			if !inc.m.reference {
				meta = []byte("term of " + inc.name + " call " + strconv.Itoa(call)) // WithMetadata (11.1)
			}
			inc.acting = true
			l, code := inc.challenge(p, st, now, next, meta)
			inc.acting = false
			if code == errOK {
				return l
			}
			if code != errFenced {
				rt.retry(p)
				continue
			}
			p.waitOn(&v.changed, min(s.cfg.Poll, s.cfg.Lease.ChallengeStaggerMs))
		}
	}
}

// metaHeader is the krabka.meta header of a term's lease records (none
// without metadata).
func metaHeader(meta []byte) []core.RecordHeader {
	if meta == nil {
		return nil
	}
	return []core.RecordHeader{{Key: core.HeaderMeta, Value: meta}}
}

func leaseRecord(r core.Role, l core.Lease, hdrs []core.RecordHeader) outRecord {
	return outRecord{topic: topicCoord, key: core.EncodeKey(core.LeaseKey(r)), value: core.EncodeLease(l), headers: hdrs}
}

func tombstone(r core.Role, m core.MemberID) outRecord {
	return outRecord{topic: topicCoord, key: core.EncodeKey(core.RegistrationKey(r, m))}
}

// challenge is coord.Client.challenge: mint, then one transaction with the
// lease and the pruning.
func (inc *incarnation) challenge(p *proc, st core.State, now, viewNext int64, meta []byte) (*leadership, errCode) {
	s := inc.sim
	role := inc.m.rs.role
	r := p.call(&request{kind: reqInitPID, co: inc.m.rs.idx, listed: inc.listedHWM}, s.cfg.Timeout)
	if r.err != errOK {
		return nil, r.err
	}
	prod := &producer{inc: inc, co: inc.m.rs.idx, token: r.token}
	lease := s.cfg.Lease.Grant(inc.m.id, prod.token, inc.now())
	msgs := []outRecord{leaseRecord(role, lease, metaHeader(meta))}
	var pruned []core.MemberID
	if !inc.m.reference && !s.bugs.NoPrune {
		pruned = core.PruneList(st, inc.m.id, now)
	}
	for _, m := range pruned {
		msgs = append(msgs, tombstone(role, m))
	}
	s.chk.onWinAttempt(inc, prod.token, viewNext, now)
	if _, code := prod.transact(p, msgs, tagWin); code != errOK {
		prod.close()
		return nil, code
	}
	l := &leadership{inc: inc, prod: prod, lease: lease, meta: meta}
	l.procs = append(l.procs,
		inc.spawn("renewer", l.renewLoop),
		inc.spawn("deadline", l.watchDeadline),
		inc.spawn("view-watcher", l.watchView))
	s.tracef("%s: won with token %s (lease to %d, pruned %v)", inc, prod.token, lease.Deadline, pruned)
	return l, errOK
}

// host is the member's main loop.
func (inc *incarnation) host(p *proc) {
	s := inc.sim
	for {
		l := inc.acquire(p)
		if l == nil {
			continue
		}
		inc.lead = l
		inc.m.everHeld = true
		for l.state == active {
			if to := inc.resignTo; to != nil {
				inc.resignTo = nil
				l.resign(p, *to)
				break
			}
			tok := l.prod.token
			s.attempts++
			value := commandValue(inc.m.seq, inc.m.id, tok, s.attempts)
			offs, code := l.produce(p, []outRecord{{topic: inc.m.rs.cmds, value: value}})
			if code == errOK {
				s.chk.onAck(inc, tok, inc.m.seq, offs[0], value)
				inc.m.seq++
			}
			if l.state != active {
				break
			}
			p.sleep(s.cfg.Dispatch)
		}
		s.tracef("%s: leadership %s ended %s", inc, l.prod.token, l.state)
		inc.lead = nil
		if l.state != resigned || !s.cfg.EagerRejoin {
			p.sleep(s.cfg.Poll)
		}
	}
}

// commandValue is "seq=<n> member=<m> token=<id>:<epoch> a=<attempt>" (the
// chaos campaign's form; the attempt makes every value unique).
func commandValue(seq int64, m core.MemberID, t core.FencingToken, attempt int64) []byte {
	b := make([]byte, 0, 64)
	b = append(b, "seq="...)
	b = strconv.AppendInt(b, seq, 10)
	b = append(b, " member="...)
	b = append(b, m.String()...)
	b = append(b, " token="...)
	b = strconv.AppendInt(b, t.ProducerID, 10)
	b = append(b, ':')
	b = strconv.AppendInt(b, int64(t.ProducerEpoch), 10)
	b = append(b, " a="...)
	b = strconv.AppendInt(b, attempt, 10)
	return b
}

// producer is the role's transactional producer of one leadership (core/kafka's
// txnProducer): one transaction at a time; after a failed step it settles
// the transaction (EndTxn abort, DescribeTransactions, InitProducerId with
// its own id and epoch) and continues under the next epoch only when nobody
// else minted.
type producer struct {
	inc      *incarnation
	co       int // its transactional.id's coordinator (the role's index)
	token    core.FencingToken
	open     bool // a transaction is begun and not ended
	pending  bool // a failure is not settled yet
	broken   bool // fenced: never used again
	closing  bool
	inFlight bool     // a transaction or a settlement runs (core/kafka's semaphore)
	idle     waitList // woken when it ends

	// The worker that runs bounded steps (one per producer, started on
	// the first: a process per step would cost a goroutine each).
	worker *proc
	job    func(w *proc)
	jobs   waitList
}

// runWorker is the producer's worker: it runs the job it is handed.
func (pr *producer) runWorker(w *proc) {
	for {
		for pr.job == nil {
			if pr.closing {
				return
			}
			w.waitOn(&pr.jobs, 0)
		}
		job := pr.job
		pr.job = nil
		job(w)
	}
}

// bounded runs step (a transaction or a settlement) the way core/kafka runs
// its kgo calls: in a worker that holds the producer until the step ends,
// while the caller returns when its own bound (p.cutoff, a renewal's lease
// deadline) passes, leaving the worker to finish. Without a bound it runs
// in the caller.
func (pr *producer) bounded(p *proc, step func(w *proc, gaveUp *bool) errCode) errCode {
	s := pr.inc.sim
	for pr.inFlight {
		if p.cutoff > 0 {
			rem := p.cutoff - s.s.now
			if rem <= 0 {
				return errTimeout
			}
			p.waitOn(&pr.idle, rem)
		} else {
			p.waitOn(&pr.idle, 0)
		}
	}
	gaveUp := false
	if p.cutoff == 0 {
		return step(p, &gaveUp)
	}
	done, code := false, errOK
	var ended waitList
	pr.job = func(w *proc) {
		code = step(w, &gaveUp)
		done = true
		ended.wakeAll(s.s)
	}
	if pr.worker == nil {
		pr.worker = pr.inc.spawn("txn-worker", pr.runWorker)
	} else {
		pr.jobs.wakeAll(s.s)
	}
	for !done {
		rem := p.cutoff - s.s.now
		if rem <= 0 {
			gaveUp = true
			return errTimeout
		}
		p.waitOn(&ended, rem)
	}
	return code
}

// transact writes msgs in one transaction (TxnProducer.Transact).
func (pr *producer) transact(p *proc, msgs []outRecord, tag txnTag) ([]int64, errCode) {
	var offs []int64
	code := pr.bounded(p, func(w *proc, gaveUp *bool) errCode {
		var c errCode
		offs, c = pr.transactNow(w, msgs, tag, gaveUp)
		return c
	})
	return offs, code
}

// recover completes a settlement left pending (TokenRecoverer.Recover).
func (pr *producer) recover(p *proc) errCode {
	return pr.bounded(p, func(w *proc, _ *bool) errCode {
		pr.inFlight = true
		defer pr.finish()
		return pr.settle(w)
	})
}

func (pr *producer) transactNow(p *proc, msgs []outRecord, tag txnTag, gaveUp *bool) ([]int64, errCode) {
	s := pr.inc.sim
	pr.inFlight = true
	defer pr.finish()
	if code := pr.settle(p); code != errOK {
		return nil, code
	}
	tok := pr.token
	pr.open = true
	if tag == tagCommand {
		// core/kafka stamps every guarded write with the token its
		// records are written with (krabka.token, docs/PROTOCOL.md 11.5).
		stamped := make([]outRecord, len(msgs))
		for i, m := range msgs {
			m.headers = append(m.headers[:len(m.headers):len(m.headers)], core.RecordHeader{Key: core.HeaderToken, Value: []byte(tok.String())})
			stamped[i] = m
		}
		msgs = stamped
	}
	r := p.call(&request{kind: reqProduce, co: pr.co, token: tok, recs: msgs, tag: tag}, s.cfg.Timeout)
	if r.err != errOK {
		return nil, pr.failed(p, r.err)
	}
	if *gaveUp {
		// The caller gave up before the commit (it was told TIMEOUT):
		// abort cleanly instead.
		if r := p.call(&request{kind: reqEndTxn, co: pr.co, token: tok}, s.cfg.Timeout); r.err != errOK {
			pr.pending = true
			pr.recoverAfterFailure(p)
		} else {
			pr.open = false
		}
		return nil, errTimeout
	}
	if s.bugs.AckBeforeCommit && tag == tagCommand {
		s.sendOneWay(pr.inc.m, &request{kind: reqEndTxn, co: pr.co, token: tok, commit: true})
		pr.open = false
		return r.offsets, errOK
	}
	r2 := p.call(&request{kind: reqEndTxn, co: pr.co, token: tok, commit: true}, s.cfg.Timeout)
	if r2.err != errOK {
		return nil, pr.failed(p, r2.err)
	}
	pr.open = false
	return r.offsets, errOK
}

// finish ends a transaction call; a close that came meanwhile aborts what
// the call left open.
func (pr *producer) finish() {
	pr.inFlight = false
	if pr.closing && pr.open {
		pr.abortOnClose()
	}
	pr.idle.wakeAll(pr.inc.sim.s)
}

func (pr *producer) settle(p *proc) errCode {
	if pr.broken {
		return errFenced
	}
	if pr.open || pr.pending {
		pr.recoverAfterFailure(p)
		if pr.broken {
			return errFenced
		}
		if pr.open || pr.pending {
			return errTimeout
		}
	}
	return errOK
}

func (pr *producer) failed(p *proc, code errCode) errCode {
	if code == errFenced {
		pr.broken = true
		return code
	}
	pr.pending = true
	pr.recoverAfterFailure(p)
	if pr.broken {
		return errFenced
	}
	return code
}

// recoverAfterFailure is core/kafka's: a raw EndTxn abort, then
// DescribeTransactions (another member minted: fenced, without sending
// InitProducerId), then InitProducerId with the producer's own id and
// epoch; only the next epoch of this producer is adopted.
func (pr *producer) recoverAfterFailure(p *proc) {
	s := pr.inc.sim
	if pr.broken || pr.closing {
		return
	}
	tok := pr.token
	if r := p.call(&request{kind: reqEndTxn, co: pr.co, token: tok}, s.cfg.Timeout); r.err == errFenced {
		pr.broken = true
		return
	}
	d := p.call(&request{kind: reqDescribe, co: pr.co}, s.cfg.Timeout)
	if d.err != errOK {
		return
	}
	if d.token != tok {
		pr.broken = true
		return
	}
	if pr.closing {
		return
	}
	r := p.call(&request{kind: reqInitPID, co: pr.co, recover: true, token: tok}, s.cfg.Timeout)
	switch r.err {
	case errOK:
	case errFenced:
		pr.broken = true
		return
	default:
		return
	}
	nt := r.token
	if nt != tok {
		own := nt.ProducerID == tok.ProducerID && int(nt.ProducerEpoch) == int(tok.ProducerEpoch)+1 ||
			nt.ProducerID != tok.ProducerID && nt.ProducerEpoch == 0 && tok.ProducerEpoch >= epochExhausted
		if !own {
			pr.broken = true
			return
		}
		s.tracef("%s: own epoch recovery: %s -> %s", pr.inc, tok, nt)
		pr.token = nt
	}
	pr.open, pr.pending = false, false
}

// close releases the producer: a transaction left open is aborted (one
// EndTxn, unanswered); one in flight is left to finish first.
func (pr *producer) close() {
	pr.closing = true
	if !pr.inFlight && pr.open {
		pr.abortOnClose()
	}
	pr.jobs.wakeAll(pr.inc.sim.s) // an idle worker returns
}

func (pr *producer) abortOnClose() {
	pr.open = false
	pr.inc.sim.sendOneWay(pr.inc.m, &request{kind: reqEndTxn, co: pr.co, token: pr.token})
}

type leadState uint8

const (
	active leadState = iota
	fenced
	expired
	resigned
)

func (s leadState) String() string {
	return [...]string{"ACTIVE", "FENCED", "EXPIRED", "RESIGNED"}[s]
}

// leadership is coord.Leadership: one token, one lease, the operation slot
// serialising renewals, guarded writes and the resign.
type leadership struct {
	inc          *incarnation
	prod         *producer
	lease        core.Lease
	meta         []byte // the term's metadata, on every lease record of it
	state        leadState
	renewFailing bool
	busy         bool
	slot         waitList
	nudge        waitList
	procs        []*proc
}

func (l *leadership) end(st leadState) {
	if l.state != active {
		return
	}
	l.state = st
	for _, p := range l.procs {
		p.cancel()
	}
	l.prod.close()
	s := l.inc.sim.s
	l.slot.wakeAll(s)
	l.nudge.wakeAll(s)
}

// begin takes the operation slot; a renewal that starts before the
// deadline is cut off at it.
func (l *leadership) begin(p *proc, renewal bool) bool {
	for l.busy && l.state == active {
		p.waitOn(&l.slot, 0)
	}
	if l.state != active {
		return false
	}
	l.busy = true
	now := l.inc.now()
	if now >= l.lease.Deadline {
		if l.renewFailing {
			l.release(p)
			l.end(expired)
			return false
		}
		return true // late, but the broker decides
	}
	if renewal {
		p.cutoff = p.sim.s.now + (l.lease.Deadline - now)
	}
	return true
}

func (l *leadership) release(p *proc) {
	l.busy = false
	p.cutoff = 0
	l.slot.wakeAll(p.sim.s)
}

// failure classifies a failed transactional step (Leadership.failure).
func (l *leadership) failure(code errCode, renewal bool) errCode {
	if code == errFenced {
		l.end(fenced)
		return code
	}
	if l.state != active || !renewal {
		return code
	}
	l.renewFailing = true
	l.nudge.wakeAll(l.inc.sim.s)
	if l.inc.now() >= l.lease.Deadline {
		l.end(expired)
	}
	return code
}

func (l *leadership) renew(p *proc) errCode {
	s := l.inc.sim
	if !l.begin(p, true) {
		return errFenced
	}
	defer l.release(p)
	if code := l.prod.recover(p); code != errOK {
		return l.failure(code, true)
	}
	lease := s.cfg.Lease.Grant(l.inc.m.id, l.prod.token, l.inc.now())
	if _, code := l.prod.transact(p, []outRecord{leaseRecord(l.inc.m.rs.role, lease, metaHeader(l.meta))}, tagRenew); code != errOK {
		return l.failure(code, true)
	}
	if l.state != active {
		return errFenced
	}
	l.renewFailing = false
	if lease.Deadline > l.lease.Deadline || lease.Token != l.lease.Token {
		l.lease = lease
	}
	return errOK
}

func (l *leadership) renewLoop(p *proc) {
	s := l.inc.sim
	retry := max(min(s.cfg.Lease.RenewIntervalMs/4, s.cfg.Poll), 10)
	for l.state == active {
		at := s.cfg.Lease.RenewAt(l.lease)
		if now := l.inc.now(); now < at {
			p.sleep(at - now)
			continue
		}
		if l.renew(p) != errOK {
			if l.state != active {
				return
			}
			p.sleep(retry)
		}
	}
}

// watchDeadline ends the leadership as expired when the deadline comes
// while renewals are failing.
func (l *leadership) watchDeadline(p *proc) {
	for l.state == active {
		now := l.inc.now()
		if now >= l.lease.Deadline {
			if l.renewFailing {
				l.end(expired)
				return
			}
			p.waitOn(&l.nudge, 0)
			continue
		}
		p.sleep(l.lease.Deadline - now)
	}
}

// watchView ends the leadership as fenced once the view shows a lease with
// a newer token.
func (l *leadership) watchView(p *proc) {
	v := l.inc.view
	for l.state == active {
		if st := v.state(); st.Lease != nil && st.Lease.Token.Supersedes(l.prod.token) {
			l.end(fenced)
			return
		}
		p.waitOn(&v.changed, 0)
	}
}

// produce is the guarded write.
func (l *leadership) produce(p *proc, msgs []outRecord) ([]int64, errCode) {
	if !l.begin(p, false) {
		return nil, errFenced
	}
	offs, code := l.prod.transact(p, msgs, tagCommand)
	l.release(p)
	if code != errOK {
		l.failure(code, false)
	}
	return offs, code
}

// resign writes the expired lease (with krabka.successor when one is named)
// and the tombstone of the member's own registration in one transaction.
func (l *leadership) resign(p *proc, successor core.MemberID) {
	s := l.inc.sim
	if !l.begin(p, false) {
		return
	}
	// Like a renewal, settle a failure left pending first, so that the
	// expired lease carries the token its transaction is written with.
	if code := l.prod.recover(p); code != errOK {
		l.release(p)
		if code == errFenced {
			l.end(fenced)
		} else {
			l.end(resigned)
		}
		return
	}
	now := l.inc.now()
	expiredLease := core.Lease{Member: l.inc.m.id, Token: l.prod.token, GrantedAt: now, Deadline: now}
	var hdrs []core.RecordHeader
	if !successor.IsZero() {
		hdrs = []core.RecordHeader{{Key: core.HeaderSuccessor, Value: []byte(successor.String())}}
	}
	s.tracef("%s: resigns (successor %q)", l.inc, successor.String())
	role := l.inc.m.rs.role
	_, code := l.prod.transact(p, []outRecord{leaseRecord(role, expiredLease, hdrs), tombstone(role, l.inc.m.id)}, tagResign)
	l.release(p)
	if code == errFenced {
		l.end(fenced)
	} else {
		l.end(resigned)
	}
}
