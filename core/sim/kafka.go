package sim

import (
	"math"
	"strconv"

	"github.com/krabka/krabka-coord/core"
)

// The model of Kafka: the parts that fencing and the succession rules rely
// on, and nothing else.
//
//   - One transaction coordinator per role (the role's transactional.id):
//     it mints (producer id, epoch) on InitProducerId, a new producer id once
//     the epoch is exhausted (32766, Kafka's
//     TransactionMetadata.isEpochExhausted; producer ids come from one
//     counter of the cluster, so no two roles share one), keeps the previous
//     epoch for KIP-360 retries (cleared by every fresh InitProducerId and
//     every fence, as Kafka clears lastProducerEpoch), aborts an ongoing
//     transaction with an epoch bump when a fresh InitProducerId arrives or
//     when its periodic scan finds it past its transaction timeout, and
//     answers PRODUCER_FENCED / INVALID_PRODUCER_EPOCH to a produce or EndTxn
//     that carries a superseded epoch (INVALID_PRODUCER_ID_MAPPING for an
//     older producer id: not a fence code).
//   - The coordination partition, shared by every role (compacted now and
//     then below its last stable offset: the last record of each key stays,
//     aborted data and old tombstones go, a marker stays while a record of
//     its transaction does or it is young; offsets never change), and one
//     command partition per role. A transaction's records are appended when
//     produced and decided atomically at EndTxn (commit or abort) with a
//     control marker in each partition it touched. Each coordinator has at
//     most one ongoing transaction, so a partition has at most one undecided
//     transaction per role; its last stable offset is the first offset of
//     the oldest of them (the high watermark when none is open).
//   - Fetches of the coordination partition read_uncommitted (the reading
//     of issue 34): every batch below the high watermark, each with its
//     producer id and transactional flag, and the COMMIT/ABORT markers.
//     With Bugs.ReadCommitted they read_committed: committed data below the
//     last stable offset. A fetch is a long poll: it parks until there is
//     something to read or its max wait passes.
//
// The cluster answers at the instant a request arrives; the network (sim.go)
// adds latency, drops and holds requests and answers.

type topicID uint8

// topicCoord is the coordination partition; the command partition of role i
// is cmdsOf(i).
const topicCoord topicID = 0

func cmdsOf(role int) topicID { return topicID(1 + role) }

func (t topicID) String() string {
	if t == topicCoord {
		return "coord"
	}
	return "cmds" + strconv.Itoa(int(t)-1)
}

type entryState uint8

const (
	statePending entryState = iota
	stateCommitted
	stateAborted
)

// entry is one offset of a partition.
type entry struct {
	off     int64
	topic   topicID
	key     []byte
	value   []byte
	headers []core.RecordHeader
	txn     *txn // nil: a plain append; the transaction of a marker
	marker  bool
	state   entryState
	at      int64 // true time appended
}

// txn is one transaction of a coordinator.
type txn struct {
	id          uint64
	co          int // its coordinator (the role's index)
	token       core.FencingToken
	from        *incarnation
	tag         txnTag
	started     int64
	entries     []*entry
	coordMarker int64 // the offset of its marker in the coordination partition (-1: none yet)
}

// txnTag says what a member meant a transaction for (the checker applies
// the rules of that kind to it).
type txnTag uint8

const (
	tagCommand txnTag = iota
	tagWin            // the first lease of a term, with the pruning
	tagRenew
	tagResign
	tagFence // an administrative fence (docs/PROTOCOL.md 11.4)
)

func (t txnTag) String() string {
	return [...]string{"command", "win", "renew", "resign", "fence"}[t]
}

type partition struct {
	topic   topicID
	entries []*entry // served entries in offset order (the coordination partition is compacted)
	end     int64    // the next offset (the high watermark)
	parked  []*parkedFetch
}

type parkedFetch struct {
	p      *proc
	gen    uint64
	offset int64
	live   bool
	until  int64 // its max wait ends then (answered by the next sweep)
}

// tickEvery: the cluster's housekeeping runs this often: it answers the
// parked fetches whose max wait is over (one event instead of a timer per
// fetch, most of which would be moot).
const tickEvery = 500

func (c *cluster) tick() {
	c.sim.s.after(tickEvery, c.tick)
	c.sweep(topicCoord)
}

// abortScan is each coordinator's periodic scan for transactions past their
// timeout (Kafka's abortTimedOutTransactions): they are aborted with an
// epoch bump, so a transaction its producer left open ends between its
// timeout and its timeout plus the scan interval.
func (c *cluster) abortScan() {
	s := c.sim
	s.s.after(s.cfg.AbortScan, c.abortScan)
	for _, co := range c.coords {
		if t := co.ongoing; t != nil && s.s.now-t.started >= s.txnTimeout() {
			s.tracef("coordinator %d: transaction %d of %s timed out: aborted, epoch bumped", co.idx, t.id, t.token)
			c.abortOngoing(co, mintTimeout)
		}
	}
}

func (c *cluster) sweep(t topicID) {
	p := c.parts[t]
	now := c.sim.s.now
	kept := p.parked[:0]
	for _, f := range p.parked {
		if !f.live {
			continue
		}
		if f.until <= now {
			f.live = false
			c.sim.reply(f.p, f.gen, &response{next: f.offset, lso: c.lso(t), hwm: p.end})
			continue
		}
		kept = append(kept, f)
	}
	for i := len(kept); i < len(p.parked); i++ {
		p.parked[i] = nil
	}
	p.parked = kept
}

// epochExhausted is Kafka's TransactionMetadata.isEpochExhausted bound.
const epochExhausted = math.MaxInt16 - 1

// coordinator is the transaction coordinator's state of one role's
// transactional.id.
type coordinator struct {
	idx       int
	minted    bool
	pid       int64
	epoch     int16
	lastEpoch int16 // KIP-360: the epoch before the last own bump (-1 none)
	prevPid   int64
	ongoing   *txn
}

type cluster struct {
	sim    *Sim
	parts  []*partition // topicCoord, then each role's command partition
	coords []*coordinator
	// nextPID: the cluster's producer id counter (one for all coordinators).
	nextPID int64
	txnSeq  uint64
}

func newCluster(s *Sim, firstPID int64, firstEpoch int16) *cluster {
	c := &cluster{sim: s, nextPID: firstPID}
	for i := range s.roles {
		co := &coordinator{idx: i, lastEpoch: -1, prevPid: -1}
		if firstEpoch > 0 {
			// The id was used before (an earlier deployment): the first mint
			// continues from there.
			co.minted, co.pid, co.epoch = true, c.nextPID, firstEpoch-1
			c.nextPID++
		}
		c.coords = append(c.coords, co)
	}
	for i := range 1 + len(s.roles) {
		c.parts = append(c.parts, &partition{topic: topicID(i)})
	}
	return c
}

func (co *coordinator) token() core.FencingToken {
	if !co.minted {
		return core.NoEpoch
	}
	return core.FencingToken{ProducerID: co.pid, ProducerEpoch: co.epoch}
}

// lso is the last stable offset of a partition: the first offset of the
// oldest transaction open on it, or its high watermark.
func (c *cluster) lso(t topicID) int64 {
	lso := c.parts[t].end
	for _, co := range c.coords {
		if tx := co.ongoing; tx != nil {
			for _, e := range tx.entries {
				if e.topic == t {
					lso = min(lso, e.off)
					break
				}
			}
		}
	}
	return lso
}

// readTo is where a fetch of the coordination partition reads to: the high
// watermark (read_uncommitted), or the last stable offset (read_committed,
// Bugs.ReadCommitted).
func (c *cluster) readTo() int64 {
	if c.sim.oldRead {
		return c.lso(topicCoord)
	}
	return c.parts[topicCoord].end
}

func (c *cluster) appendEntry(e *entry) {
	p := c.parts[e.topic]
	e.off = p.end
	e.at = c.sim.s.now
	p.end++
	p.entries = append(p.entries, e)
	c.sim.chk.onAppend(e)
}

// moved answers the fetches parked on the coordination partition that
// have something to read now (its high watermark or, read_committed, its
// last stable offset may have moved).
func (c *cluster) moved() {
	p := c.parts[topicCoord]
	if len(p.parked) == 0 {
		return
	}
	to := c.readTo()
	kept := p.parked[:0]
	// Followers that caught up wait at the same offset: they get the same
	// answer (nobody modifies an answer).
	var last *response
	lastOff := int64(-1)
	for _, f := range p.parked {
		if !f.live {
			continue
		}
		if f.offset < to {
			f.live = false
			if last == nil || f.offset != lastOff {
				last, lastOff = c.fetchAnswer(f.offset), f.offset
			}
			c.sim.reply(f.p, f.gen, last)
			continue
		}
		kept = append(kept, f)
	}
	for i := len(kept); i < len(p.parked); i++ {
		p.parked[i] = nil
	}
	p.parked = kept
}

// fetchAnswer is a fetch of the coordination partition from offset:
// read_uncommitted, or read_committed with Bugs.ReadCommitted.
func (c *cluster) fetchAnswer(offset int64) *response {
	if c.sim.oldRead {
		return c.fetchCommitted(offset)
	}
	return c.fetchBatches(offset)
}

// fetchCommitted is a read_committed fetch from offset: the committed data
// below the last stable offset.
func (c *cluster) fetchCommitted(offset int64) *response {
	p := c.parts[topicCoord]
	lso := c.lso(topicCoord)
	r := &response{next: lso, lso: lso, hwm: p.end}
	i := searchOffset(p.entries, offset)
	if n := searchOffset(p.entries, lso) - i; n > 0 {
		r.recs = make([]core.RawRecord, 0, n)
	}
	for ; i < len(p.entries); i++ {
		e := p.entries[i]
		if e.off >= lso {
			break
		}
		if e.marker || e.state != stateCommitted {
			continue
		}
		r.recs = append(r.recs, core.RawRecord{Offset: e.off, Key: e.key, Value: e.value, Headers: e.headers})
	}
	return r
}

// fetchBatches is a read_uncommitted fetch from offset: every batch below
// the high watermark (one record each here), with its producer id and
// transactional flag, and the markers.
func (c *cluster) fetchBatches(offset int64) *response {
	p := c.parts[topicCoord]
	r := &response{next: p.end, lso: c.lso(topicCoord), hwm: p.end}
	i := searchOffset(p.entries, offset)
	n := len(p.entries) - i
	if n <= 0 {
		return r
	}
	r.batches = make([]core.Batch, 0, n)
	recs := make([]core.RawRecord, 0, n)
	for ; i < len(p.entries); i++ {
		e := p.entries[i]
		b := core.Batch{ProducerID: -1}
		if e.txn != nil {
			b.ProducerID, b.Transactional = e.txn.token.ProducerID, true
		}
		switch {
		case e.marker && e.state == stateCommitted:
			b.Control = core.ControlCommit
		case e.marker:
			b.Control = core.ControlAbort
		default:
			recs = append(recs, core.RawRecord{Offset: e.off, Key: e.key, Value: e.value, Headers: e.headers})
			b.Records = recs[len(recs)-1 : len(recs) : len(recs)]
		}
		r.batches = append(r.batches, b)
	}
	return r
}

func searchOffset(es []*entry, off int64) int {
	lo, hi := 0, len(es)
	for lo < hi {
		m := (lo + hi) / 2
		if es[m].off < off {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}

// handle answers one request that arrived from p (waiting in wait gen).
func (c *cluster) handle(p *proc, gen uint64, rq *request) {
	s := c.sim
	switch rq.kind {
	case reqListOffsets:
		lso, hwm := c.lso(topicCoord), c.parts[topicCoord].end
		s.chk.onListOffsets(lso, hwm)
		s.reply(p, gen, &response{lso: lso, hwm: hwm})
	case reqFetch:
		if rq.offset < c.readTo() {
			s.reply(p, gen, c.fetchAnswer(rq.offset))
			return
		}
		f := &parkedFetch{p: p, gen: gen, offset: rq.offset, live: true, until: s.s.now + rq.maxWait}
		part := c.parts[topicCoord]
		part.parked = append(part.parked, f)
		if rq.maxWait <= 0 {
			c.sweep(topicCoord)
		}
	case reqAppend:
		e := &entry{topic: topicCoord, key: rq.recs[0].key, value: rq.recs[0].value, headers: rq.recs[0].headers, state: stateCommitted}
		c.appendEntry(e)
		c.moved()
		s.reply(p, gen, &response{offsets: []int64{e.off}})
	case reqDescribe:
		s.reply(p, gen, &response{token: c.coords[rq.co].token()})
	case reqInitPID:
		s.reply(p, gen, c.initProducerID(c.coords[rq.co], p.inc, rq))
	case reqProduce:
		s.reply(p, gen, c.produce(c.coords[rq.co], p.inc, rq))
	case reqEndTxn:
		s.reply(p, gen, c.endTxn(c.coords[rq.co], rq.token, rq.commit))
	}
}

// bump moves the coordinator to its next token (a new producer id once the
// epoch is exhausted) and reports the mint.
func (c *cluster) bump(co *coordinator, to *incarnation, kind mintKind, last int16) core.FencingToken {
	switch {
	case !co.minted:
		co.minted, co.pid, co.epoch = true, c.nextPID, 0
		c.nextPID++
	case co.epoch >= epochExhausted:
		co.prevPid = co.pid
		co.pid, co.epoch = c.nextPID, 0
		c.nextPID++
	default:
		co.epoch++
	}
	co.lastEpoch = last
	t := co.token()
	c.sim.chk.onMint(co.idx, t, to, kind)
	return t
}

// abortOngoing aborts the coordinator's ongoing transaction with an epoch
// bump (Kafka's prepareFenceProducerEpoch): nobody holds the bumped epoch.
func (c *cluster) abortOngoing(co *coordinator, why mintKind) {
	if co.ongoing == nil {
		return
	}
	c.decide(co.ongoing, false)
	c.bump(co, nil, why, -1)
}

// decide ends t: commit or abort, with a control marker in each partition
// it touched.
func (c *cluster) decide(t *txn, commit bool) {
	st := stateAborted
	if commit {
		st = stateCommitted
	}
	touched := make([]bool, len(c.parts))
	for _, e := range t.entries {
		e.state = st
		touched[e.topic] = true
	}
	if co := c.coords[t.co]; co.ongoing == t {
		co.ongoing = nil
	}
	for i, ok := range touched {
		if ok {
			m := &entry{topic: topicID(i), marker: true, state: st, txn: t}
			if m.topic == topicCoord {
				t.coordMarker = c.parts[topicCoord].end
			}
			c.appendEntry(m)
		}
	}
	c.sim.chk.onDecide(t, commit)
	if touched[topicCoord] {
		c.moved()
	}
}

func (c *cluster) initProducerID(co *coordinator, from *incarnation, rq *request) *response {
	if !rq.recover {
		// A fresh InitProducerId: an ongoing transaction is aborted with a
		// fence first (Kafka answers CONCURRENT_TRANSACTIONS and the
		// client's retry mints; both bumps are folded into this answer).
		if from != nil && from.m.rs != nil {
			c.sim.chk.onChallengeMint(co.idx, from, rq.listed)
		}
		c.abortOngoing(co, mintFenceOngoing)
		return &response{token: c.bump(co, from, mintFresh, -1)}
	}
	// KIP-360: InitProducerId carrying the producer's id and epoch.
	want := rq.token
	validPid := want.ProducerID == co.pid || (want.ProducerID == co.prevPid && want.ProducerEpoch >= epochExhausted)
	if !co.minted || !validPid {
		return &response{err: errFenced}
	}
	if co.ongoing != nil {
		// Kafka fences the ongoing transaction (CONCURRENT_TRANSACTIONS);
		// the client's retry then carries an epoch that is neither the
		// current nor the last one.
		c.abortOngoing(co, mintFenceOngoing)
		return &response{err: errFenced}
	}
	switch {
	case want == co.token():
		t := c.bump(co, from, mintRecovery, want.ProducerEpoch)
		c.sim.chk.recoveredOf[t] = want
		return &response{token: t}
	case want.ProducerEpoch == co.lastEpoch:
		// A retry of a bump whose answer was lost: the current epoch,
		// unbumped.
		return &response{token: co.token()}
	}
	return &response{err: errFenced}
}

// checkToken is the broker's check of a transactional request's token.
func (c *cluster) checkToken(co *coordinator, t core.FencingToken) errCode {
	if c.sim.bugs.AcceptStaleEpoch {
		return errOK
	}
	cur := co.token()
	switch {
	case !co.minted:
		return errInvalidMapping
	case t.ProducerID != cur.ProducerID:
		return errInvalidMapping
	case t.ProducerEpoch != cur.ProducerEpoch:
		return errFenced
	}
	return errOK
}

func (c *cluster) produce(co *coordinator, from *incarnation, rq *request) *response {
	if code := c.checkToken(co, rq.token); code != errOK {
		return &response{err: code}
	}
	t := co.ongoing
	if t == nil || t.token != rq.token {
		if t != nil {
			// Only reachable with AcceptStaleEpoch: a stale producer's
			// records join a transaction of its own.
			c.decide(t, false)
		}
		c.txnSeq++
		t = &txn{id: c.txnSeq, co: co.idx, token: rq.token, from: from, tag: rq.tag, started: c.sim.s.now, coordMarker: -1}
		co.ongoing = t
	}
	r := &response{}
	coord := false
	for _, m := range rq.recs {
		e := &entry{topic: m.topic, key: m.key, value: m.value, headers: m.headers, txn: t, state: statePending}
		c.appendEntry(e)
		t.entries = append(t.entries, e)
		r.offsets = append(r.offsets, e.off)
		coord = coord || m.topic == topicCoord
	}
	c.sim.chk.onProduce(co.idx, from, rq.token, rq.tag, t)
	if coord && !c.sim.oldRead {
		c.moved()
	}
	if from.trap != trapNone && (rq.tag == tagWin || rq.tag == tagRenew) {
		// A fault armed to strike inside a lease transaction: the produce
		// is in the log, the EndTxn is not sent yet.
		c.sim.springTrap(from)
	}
	return r
}

func (c *cluster) endTxn(co *coordinator, tok core.FencingToken, commit bool) *response {
	if code := c.checkToken(co, tok); code != errOK {
		return &response{err: code}
	}
	t := co.ongoing
	if t == nil || t.token != tok {
		if commit {
			return &response{err: errInvalidTxnState}
		}
		return &response{} // nothing to abort
	}
	c.sim.chk.onEndAccepted(co.idx, tok, commit)
	c.decide(t, commit)
	return &response{}
}

// compact cleans the coordination partition below its last stable offset:
// the last committed record of each key stays (with its headers), aborted
// data goes, a tombstone goes once it is older than the retention, and a
// marker goes once no record of its transaction is left and it is older
// than the retention (Kafka keeps markers as long as a batch of their
// transaction is left, and then for delete.retention.ms, so that a reader
// that lags never meets a transaction's records without its marker).
func (c *cluster) compact(retention int64) {
	p := c.parts[topicCoord]
	lso := c.lso(topicCoord)
	last := map[string]int64{}
	for _, e := range p.entries {
		if e.off >= lso {
			break
		}
		if !e.marker && e.state == stateCommitted {
			last[string(e.key)] = e.off
		}
	}
	now := c.sim.s.now
	keptTxn := map[*txn]bool{}
	kept := p.entries[:0]
	for _, e := range p.entries {
		if e.off < lso {
			switch {
			case e.marker:
				if !keptTxn[e.txn] && now-e.at > retention {
					continue
				}
			case e.state != stateCommitted || last[string(e.key)] != e.off:
				continue
			case core.IsTombstone(e.value) && now-e.at > retention:
				continue
			}
			if e.txn != nil && !e.marker {
				keptTxn[e.txn] = true
			}
		}
		kept = append(kept, e)
	}
	for i := len(kept); i < len(p.entries); i++ {
		p.entries[i] = nil
	}
	p.entries = kept
}
