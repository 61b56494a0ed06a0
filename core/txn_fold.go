package core

import "slices"

// Reading past a held last stable offset (docs/PROTOCOL.md 12.1).
//
// A read_committed reader of a partition sees nothing past the first
// transaction still open on it: the broker serves committed data only up to
// the last stable offset, which stays at that transaction's first offset
// until the transaction ends. One producer that dies between its Produce and
// its EndTxn therefore hides every later record of every role of the
// partition, committed or not, until the coordinator aborts its transaction.
//
// A read_uncommitted fetch returns every batch below the high watermark with
// its producer id and its transactional flag, and the transaction markers
// (COMMIT and ABORT control batches) too. That is enough to decide, per
// producer, what is committed, which is what the broker itself does to
// compute the stable offset: a producer has at most one transaction open on
// a partition; its transactional batches belong to that transaction until
// the producer's next marker on the partition, which commits or aborts them
// all. TxnFolder keeps each producer's open transaction aside and hands its
// records on when its COMMIT marker is read; records written outside
// transactions (registrations) are handed on at once.
//
// Compaction keeps a transaction's marker as long as any batch of the
// transaction is left, and a marker always follows its batches, so a
// reader that starts at the log start never sees a marker's batches without
// the marker. A marker whose batches it did not see (they were below where
// it started) finds no open transaction and is ignored.

// ControlType says whether a batch is a transaction marker, and which.
type ControlType int8

const (
	// NotControl: a batch of data records.
	NotControl ControlType = iota
	// ControlCommit: the COMMIT marker of the producer's open transaction.
	ControlCommit
	// ControlAbort: the ABORT marker of the producer's open transaction.
	ControlAbort
)

// Batch is one run of records of one producer in a partition, in the order
// a read_uncommitted fetch returns them.
type Batch struct {
	// ProducerID is the batch's producer id (-1 for a producer that is
	// neither idempotent nor transactional).
	ProducerID int64
	// Transactional: the batch belongs to the producer's open transaction
	// (its records count only once the COMMIT marker is read).
	Transactional bool
	// Control says whether the batch is a transaction marker; a marker has
	// no Records.
	Control ControlType
	// Records are the batch's data records in offset order.
	Records []RawRecord
}

// TxnFolder resolves batches read with read_uncommitted into committed
// records, per producer, and hands each committed record to emit (in the
// order the records became committed; a record of an open transaction
// reaches emit after records written after it by other producers, so emit
// must not assume offset order: the folders of this package do not).
// Use NewTxnFolder; not safe for concurrent use.
type TxnFolder struct {
	emit func(RawRecord)
	open map[int64]*openTxn
}

type openTxn struct {
	first int64 // the offset of its first record
	recs  []RawRecord
	roles []string // roles named by the keys of its records (few: a slice)
}

// NewTxnFolder returns a TxnFolder that hands committed records to emit.
func NewTxnFolder(emit func(RawRecord)) *TxnFolder {
	return &TxnFolder{emit: emit, open: make(map[int64]*openTxn)}
}

// Add takes the next batch of the partition, in log order.
func (f *TxnFolder) Add(b Batch) {
	switch b.Control {
	case ControlCommit:
		if t, ok := f.open[b.ProducerID]; ok {
			delete(f.open, b.ProducerID)
			for _, r := range t.recs {
				f.emit(r)
			}
		}
		return
	case ControlAbort:
		delete(f.open, b.ProducerID)
		return
	}
	if !b.Transactional {
		for _, r := range b.Records {
			f.emit(r)
		}
		return
	}
	if len(b.Records) == 0 {
		return
	}
	t, ok := f.open[b.ProducerID]
	if !ok {
		t = &openTxn{first: b.Records[0].Offset}
		f.open[b.ProducerID] = t
	}
	for _, r := range b.Records {
		t.recs = append(t.recs, r)
		if r.Key == nil {
			continue
		}
		if kv, err := decodeKeyView(r.Key); err == nil && !slices.Contains(t.roles, string(kv.role)) {
			t.roles = append(t.roles, string(kv.role))
		}
	}
}

// Open returns how many transactions are open (read, not yet ended).
func (f *TxnFolder) Open() int { return len(f.open) }

// OpenHolds reports whether an open transaction holds a record of role r:
// a write of the role that is not decided yet.
func (f *TxnFolder) OpenHolds(r Role) bool {
	for _, t := range f.open {
		if slices.Contains(t.roles, r.s) {
			return true
		}
	}
	return false
}

// OpenLease returns the latest deadline of the leases of role r that open
// transactions hold, leaving out the leases of member skip (a caller's own
// earlier attempt), and whether there is one. A lease of an open
// transaction is a renewal or a challenge whose marker this reader has not
// read: it may be committed already (docs/PROTOCOL.md 12.1), so a challenger
// honours it until its deadline.
func (f *TxnFolder) OpenLease(r Role, skip MemberID) (int64, bool) {
	var deadline int64
	found := false
	for _, t := range f.open {
		if !slices.Contains(t.roles, r.s) {
			continue
		}
		for _, rec := range t.recs {
			if rec.Key == nil || IsTombstone(rec.Value) {
				continue
			}
			kv, err := decodeKeyView(rec.Key)
			if err != nil || kv.kind != KindLease || string(kv.role) != r.s {
				continue
			}
			m, l, lerr := decodeLeaseView(rec.Value)
			if lerr != nil || string(m) == skip.s {
				continue
			}
			if !found || l.Deadline > deadline {
				deadline, found = l.Deadline, true
			}
		}
	}
	return deadline, found
}

// Stable returns the offset of the first record of the oldest open
// transaction (the last stable offset as this reader sees it), or -1 when
// no transaction is open.
func (f *TxnFolder) Stable() int64 {
	lso := int64(-1)
	for _, t := range f.open {
		if lso < 0 || t.first < lso {
			lso = t.first
		}
	}
	return lso
}
