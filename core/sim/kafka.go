package sim

import (
	"math"

	"github.com/krabka/krabka-coord/core"
)

// The model of Kafka: the parts that fencing and the succession rules rely
// on, and nothing else.
//
//   - One transaction coordinator for the role's transactional.id: it mints
//     (producer id, epoch) on InitProducerId, a new producer id once the
//     epoch is exhausted (32766, Kafka's TransactionMetadata.isEpochExhausted),
//     keeps the previous epoch for KIP-360 retries (cleared by every fresh
//     InitProducerId and every fence, as Kafka clears lastProducerEpoch),
//     aborts an ongoing transaction with an epoch bump when a fresh
//     InitProducerId arrives or the transaction times out, and answers
//     PRODUCER_FENCED / INVALID_PRODUCER_EPOCH to a produce or EndTxn that
//     carries a superseded epoch (INVALID_PRODUCER_ID_MAPPING for an older
//     producer id: not a fence code).
//   - Two partitions: the role's partition of the coordination topic
//     (compacted now and then: the last record of each key stays, aborted
//     data and old tombstones go, offsets never change) and one partition of
//     the command topic. A transaction's records are appended when produced
//     and decided atomically at EndTxn (commit or abort) with a control
//     marker; the last stable offset is the first offset of the ongoing
//     transaction, and read_committed fetches return committed data below it.
//     One transactional.id has at most one ongoing transaction, so there is
//     at most one undecided transaction in the whole model.
//   - Fetch is a long poll: it parks until the last stable offset moves or
//     its max wait passes.
//
// The cluster answers at the instant a request arrives; the network (sim.go)
// adds latency, drops and holds requests and answers.

type topicID uint8

const (
	topicCoord topicID = iota
	topicCmds
)

func (t topicID) String() string {
	if t == topicCoord {
		return "coord"
	}
	return "cmds"
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
	txn     *txn // nil: a plain append or a marker
	marker  bool
	state   entryState
	at      int64 // true time appended
}

// txn is one transaction of the coordinator.
type txn struct {
	id      uint64
	token   core.FencingToken
	from    *incarnation
	tag     txnTag
	started int64
	entries []*entry
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
	end     int64    // the next offset
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
// parked fetches whose max wait is over and aborts a transaction that ran
// past its timeout (Kafka's coordinator also finds those periodically).
// One event instead of a timer per fetch and per transaction, most of
// which would be moot.
const tickEvery = 500

func (c *cluster) tick() {
	c.sim.s.after(tickEvery, c.tick)
	if t := c.ongoing; t != nil && c.sim.s.now-t.started >= c.sim.cfg.Lease.DurationMs {
		c.sim.tracef("coordinator: transaction %d of %s timed out: aborted, epoch bumped", t.id, t.token)
		c.abortOngoing(mintTimeout)
	}
	c.sweep(topicCoord)
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
			c.sim.reply(f.p, f.gen, &response{next: f.offset, lso: c.lso(t)})
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

type cluster struct {
	sim   *Sim
	parts [2]*partition

	// The transaction coordinator of the role's transactional.id.
	minted    bool
	pid       int64
	epoch     int16
	lastEpoch int16 // KIP-360: the epoch before the last own bump (-1 none)
	prevPid   int64
	nextPID   int64
	ongoing   *txn
	txnSeq    uint64
}

func newCluster(s *Sim, firstPID int64, firstEpoch int16) *cluster {
	c := &cluster{sim: s, nextPID: firstPID, lastEpoch: -1, prevPid: -1}
	if firstEpoch > 0 {
		// The id was used before (an earlier deployment): the first mint
		// continues from there.
		c.minted, c.pid, c.epoch = true, firstPID, firstEpoch-1
		c.nextPID = firstPID + 1
	}
	for i := range c.parts {
		c.parts[i] = &partition{topic: topicID(i)}
	}
	return c
}

func (c *cluster) token() core.FencingToken {
	if !c.minted {
		return core.NoEpoch
	}
	return core.FencingToken{ProducerID: c.pid, ProducerEpoch: c.epoch}
}

// lso is the last stable offset of a partition.
func (c *cluster) lso(t topicID) int64 {
	if c.ongoing != nil {
		for _, e := range c.ongoing.entries {
			if e.topic == t {
				return e.off
			}
		}
	}
	return c.parts[t].end
}

func (c *cluster) appendEntry(e *entry) {
	p := c.parts[e.topic]
	e.off = p.end
	e.at = c.sim.s.now
	p.end++
	p.entries = append(p.entries, e)
	c.sim.chk.onAppend(e)
}

// stableMoved answers the fetches parked on a partition whose last stable
// offset may have moved.
func (c *cluster) stableMoved(t topicID) {
	p := c.parts[t]
	if len(p.parked) == 0 {
		return
	}
	lso := c.lso(t)
	kept := p.parked[:0]
	for _, f := range p.parked {
		if !f.live {
			continue
		}
		if f.offset < lso {
			f.live = false
			c.sim.reply(f.p, f.gen, c.fetchAnswer(t, f.offset, lso))
			continue
		}
		kept = append(kept, f)
	}
	for i := len(kept); i < len(p.parked); i++ {
		p.parked[i] = nil
	}
	p.parked = kept
}

// fetchAnswer is a read_committed fetch from offset: the committed data
// below the last stable offset.
func (c *cluster) fetchAnswer(t topicID, offset, lso int64) *response {
	p := c.parts[t]
	if c.sim.bugs.ReadUncommitted {
		lso = p.end
	}
	r := &response{next: lso, lso: lso}
	i := searchOffset(p.entries, offset)
	if n := searchOffset(p.entries, lso) - i; n > 0 {
		r.recs = make([]core.RawRecord, 0, n)
	}
	for ; i < len(p.entries); i++ {
		e := p.entries[i]
		if e.off >= lso {
			break
		}
		if e.marker || (e.state != stateCommitted && !c.sim.bugs.ReadUncommitted) {
			continue
		}
		r.recs = append(r.recs, core.RawRecord{Offset: e.off, Key: e.key, Value: e.value, Headers: e.headers})
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
		lso := c.lso(topicCoord)
		s.chk.onListOffsets(lso)
		s.reply(p, gen, &response{lso: lso, ver: s.chk.lsoVersion()})
	case reqFetch:
		lso := c.lso(topicCoord)
		if rq.offset < lso {
			s.reply(p, gen, c.fetchAnswer(topicCoord, rq.offset, lso))
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
		c.stableMoved(topicCoord)
		s.reply(p, gen, &response{offsets: []int64{e.off}})
	case reqDescribe:
		s.reply(p, gen, &response{token: c.token()})
	case reqInitPID:
		s.reply(p, gen, c.initProducerID(p.inc, rq))
	case reqProduce:
		s.reply(p, gen, c.produce(p.inc, rq))
	case reqEndTxn:
		s.reply(p, gen, c.endTxn(rq.token, rq.commit))
	}
}

// bump moves the coordinator to its next token (a new producer id once the
// epoch is exhausted) and reports the mint.
func (c *cluster) bump(to *incarnation, kind mintKind, last int16) core.FencingToken {
	switch {
	case !c.minted:
		c.minted, c.pid, c.epoch = true, c.nextPID, 0
		c.nextPID++
	case c.epoch >= epochExhausted:
		c.prevPid = c.pid
		c.pid, c.epoch = c.nextPID, 0
		c.nextPID++
	default:
		c.epoch++
	}
	c.lastEpoch = last
	t := c.token()
	c.sim.chk.onMint(t, to, kind)
	return t
}

// abortOngoing aborts the ongoing transaction with an epoch bump (Kafka's
// prepareFenceProducerEpoch): nobody holds the bumped epoch.
func (c *cluster) abortOngoing(why mintKind) {
	if c.ongoing == nil {
		return
	}
	c.decide(c.ongoing, false)
	c.bump(nil, why, -1)
}

// decide ends t: commit or abort, with a control marker in each partition
// it touched.
func (c *cluster) decide(t *txn, commit bool) {
	st := stateAborted
	if commit {
		st = stateCommitted
	}
	var touched [2]bool
	for _, e := range t.entries {
		e.state = st
		touched[e.topic] = true
	}
	c.ongoing = nil
	for i, ok := range touched {
		if ok {
			c.appendEntry(&entry{topic: topicID(i), marker: true, state: st, txn: t})
		}
	}
	c.sim.chk.onDecide(t, commit)
	for i, ok := range touched {
		if ok {
			c.stableMoved(topicID(i))
		}
	}
}

func (c *cluster) initProducerID(from *incarnation, rq *request) *response {
	if !rq.recover {
		// A fresh InitProducerId: an ongoing transaction is aborted with a
		// fence first (Kafka answers CONCURRENT_TRANSACTIONS and the
		// client's retry mints; both bumps are folded into this answer).
		c.abortOngoing(mintFenceOngoing)
		return &response{token: c.bump(from, mintFresh, -1)}
	}
	// KIP-360: InitProducerId carrying the producer's id and epoch.
	want := rq.token
	validPid := want.ProducerID == c.pid || (want.ProducerID == c.prevPid && want.ProducerEpoch >= epochExhausted)
	if !c.minted || !validPid {
		return &response{err: errFenced}
	}
	if c.ongoing != nil {
		// Kafka fences the ongoing transaction (CONCURRENT_TRANSACTIONS);
		// the client's retry then carries an epoch that is neither the
		// current nor the last one.
		c.abortOngoing(mintFenceOngoing)
		return &response{err: errFenced}
	}
	switch {
	case want == c.token():
		t := c.bump(from, mintRecovery, want.ProducerEpoch)
		c.sim.chk.recoveredOf[t] = want
		return &response{token: t}
	case want.ProducerEpoch == c.lastEpoch:
		// A retry of a bump whose answer was lost: the current epoch,
		// unbumped.
		return &response{token: c.token()}
	}
	return &response{err: errFenced}
}

// checkToken is the broker's check of a transactional request's token.
func (c *cluster) checkToken(t core.FencingToken) errCode {
	if c.sim.bugs.AcceptStaleEpoch {
		return errOK
	}
	cur := c.token()
	switch {
	case !c.minted:
		return errInvalidMapping
	case t.ProducerID != cur.ProducerID:
		return errInvalidMapping
	case t.ProducerEpoch != cur.ProducerEpoch:
		return errFenced
	}
	return errOK
}

func (c *cluster) produce(from *incarnation, rq *request) *response {
	if code := c.checkToken(rq.token); code != errOK {
		return &response{err: code}
	}
	t := c.ongoing
	if t == nil || t.token != rq.token {
		if t != nil {
			// Only reachable with AcceptStaleEpoch: a stale producer's
			// records join a transaction of its own.
			c.decide(t, false)
		}
		c.txnSeq++
		t = &txn{id: c.txnSeq, token: rq.token, from: from, tag: rq.tag, started: c.sim.s.now}
		c.ongoing = t
	}
	r := &response{}
	for _, m := range rq.recs {
		e := &entry{topic: m.topic, key: m.key, value: m.value, headers: m.headers, txn: t, state: statePending}
		c.appendEntry(e)
		t.entries = append(t.entries, e)
		r.offsets = append(r.offsets, e.off)
	}
	c.sim.chk.onProduce(from, rq.token, rq.tag, t)
	return r
}

func (c *cluster) endTxn(tok core.FencingToken, commit bool) *response {
	if code := c.checkToken(tok); code != errOK {
		return &response{err: code}
	}
	t := c.ongoing
	if t == nil || t.token != tok {
		if commit {
			return &response{err: errInvalidTxnState}
		}
		return &response{} // nothing to abort
	}
	c.sim.chk.onEndAccepted(tok, commit)
	c.decide(t, commit)
	return &response{}
}

// compact cleans the coordination partition below its last stable offset:
// the last committed record of each key stays (with its headers), aborted
// data and markers go, and a tombstone goes once it is older than the
// retention.
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
	kept := p.entries[:0]
	for _, e := range p.entries {
		if e.off < lso {
			if e.marker || e.state != stateCommitted || last[string(e.key)] != e.off {
				continue
			}
			if core.IsTombstone(e.value) && now-e.at > retention {
				continue
			}
		}
		kept = append(kept, e)
	}
	for i := len(kept); i < len(p.entries); i++ {
		p.entries[i] = nil
	}
	p.entries = kept
}
