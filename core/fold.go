package core

import (
	"slices"
)

// RawRecord is one record of the role's partition as read from Kafka. Key may
// be nil; a nil or empty Value is a tombstone. Headers are the record's Kafka
// headers: the one extension point of the frozen format (docs/PROTOCOL.md
// section 11). A reader ignores every header it does not know, and no header
// changes what the key or the value means.
type RawRecord struct {
	Offset  int64
	Key     []byte
	Value   []byte
	Headers []RecordHeader
}

// RecordHeader is one Kafka record header.
type RecordHeader struct {
	Key   string
	Value []byte
}

// The headers of the coordination topic this implementation reads
// (docs/PROTOCOL.md 11.3, 11.4). Names starting with "krabka." are reserved.
const (
	// HeaderSuccessor on the expired lease of a resign or an administrative
	// fence names the member handed over to.
	HeaderSuccessor = "krabka.successor"
	// HeaderFencedBy on the expired lease of an administrative fence names
	// who fenced (free text).
	HeaderFencedBy = "krabka.fenced-by"
	// HeaderMeta is the metadata of a term (on every lease record of it) or
	// of a member (on its registration): opaque bytes, at most
	// MaxMetadataBytes (11.1, 11.2).
	HeaderMeta = "krabka.meta"
	// HeaderRejoin ("1") on a registration: its writer registers again by
	// itself when it sees its registration tombstoned, so a winner may
	// prune it when it let its turn pass (11.6). The reference members
	// write no such header and are not pruned for a passed turn.
	HeaderRejoin = "krabka.rejoin"
	// HeaderToken on a guarded write: "<producer id>:<epoch>" of the writer
	// (11.5), for consumers to compare with the batch's producer id and
	// epoch (see Verifier).
	HeaderToken = "krabka.token"
)

// MaxMetadataBytes bounds krabka.meta (docs/PROTOCOL.md 11.1).
const MaxMetadataBytes = 4096

// DecodedRecord is a record whose key and value are already decoded. Exactly
// one of Registration or Lease is set, matching Key.Kind; both nil is a
// tombstone.
type DecodedRecord struct {
	Offset       int64
	Key          Key
	Registration *Registration
	Lease        *Lease
}

// RosterEntry is one registered member: its registration offset (its place in
// the succession order) and the registered_at it wrote.
type RosterEntry struct {
	Member       MemberID
	Offset       int64
	RegisteredAt int64
	// Metadata is the registration's krabka.meta (nil: none).
	Metadata []byte
	// Rejoins: the registration carries krabka.rejoin (its writer registers
	// again by itself when pruned, section 11.6).
	Rejoins bool
}

// State is the folded state of one role: the roster sorted by offset, the
// current lease (nil when there is none) and the number of records of the
// partition that were skipped because they did not decode.
type State struct {
	Roster  []RosterEntry
	Lease   *Lease
	Skipped int
	// Removed counts the members whose latest registration record is a
	// tombstone: they resigned, were pruned by a winner or left (docs/PROTOCOL.md 10).
	Removed int
	// Successor is the member the current lease record names in its
	// krabka.successor header (zero: none, or not a valid member id).
	Successor MemberID
	// FencedBy is the current lease record's krabka.fenced-by header (""
	// when none): an administrative fence wrote it.
	FencedBy string
	// Metadata is the current lease record's krabka.meta: the metadata of
	// the term (nil: none). It commits with the lease, in the same record.
	Metadata []byte
}

type memberSlot struct {
	offset       int64
	registeredAt int64
	member       MemberID
	removed      bool
	meta         []byte
	rejoins      bool
}

// Folder folds records of one role incrementally (docs/PROTOCOL.md section 5). Records
// may be added in any order: each slot keeps the record with the greatest
// offset. Use NewFolder; the zero value is unusable.
type Folder struct {
	role      Role
	members   map[string]*memberSlot
	leaseSet  bool
	leaseOff  int64
	lease     Lease
	leaseLive bool // false after a tombstone
	successor MemberID
	fencedBy  string
	meta      []byte
	skipped   int
}

// NewFolder returns an empty Folder for role r.
func NewFolder(r Role) *Folder {
	return &Folder{role: r, members: make(map[string]*memberSlot)}
}

// AddRaw decodes and folds one raw record. A record whose key is null or does
// not decode, or whose key is of this role but whose value does not decode,
// is skipped and counted; a record of another role is ignored and not counted.
func (f *Folder) AddRaw(rec RawRecord) {
	if rec.Key == nil {
		f.skipped++
		return
	}
	kv, err := decodeKeyView(rec.Key)
	if err != nil {
		f.skipped++
		return
	}
	if string(kv.role) != f.role.s {
		return
	}
	switch kv.kind {
	case KindRegistration:
		if IsTombstone(rec.Value) {
			f.register(rec.Offset, kv.member, nil)
			return
		}
		// The value's member is not used: identity comes from the key.
		_, at, err := decodeRegistrationView(rec.Value)
		if err != nil {
			f.skipped++
			return
		}
		if f.register(rec.Offset, kv.member, &Registration{RegisteredAt: at}) {
			slot := f.members[string(kv.member)]
			for _, h := range rec.Headers {
				switch h.Key {
				case HeaderMeta:
					if len(h.Value) <= MaxMetadataBytes {
						slot.meta = append([]byte{}, h.Value...)
					}
				case HeaderRejoin:
					slot.rejoins = string(h.Value) == "1"
				}
			}
		}
	case KindLease:
		if IsTombstone(rec.Value) {
			f.setLease(rec.Offset, nil)
			return
		}
		m, v, err := decodeLeaseView(rec.Value)
		if err != nil {
			f.skipped++
			return
		}
		if f.leaseSet && rec.Offset <= f.leaseOff {
			return // older than the lease already folded: no need to copy the name
		}
		v.Member = MemberID{string(m)}
		f.setLease(rec.Offset, &v)
		for _, h := range rec.Headers {
			switch h.Key {
			case HeaderSuccessor:
				if s, err := NewMemberID(string(h.Value)); err == nil {
					f.successor = s
				}
			case HeaderFencedBy:
				f.fencedBy = string(h.Value)
			case HeaderMeta:
				if len(h.Value) <= MaxMetadataBytes {
					f.meta = append([]byte{}, h.Value...)
				}
			}
		}
	}
}

// Add folds one decoded record; records of other roles are ignored.
func (f *Folder) Add(rec DecodedRecord) {
	if rec.Key.Role != f.role {
		return
	}
	switch rec.Key.Kind {
	case KindRegistration:
		f.register(rec.Offset, []byte(rec.Key.Member.s), rec.Registration)
	case KindLease:
		f.setLease(rec.Offset, rec.Lease)
	}
}

// register applies a registration (v non-nil) or a deregistration (v nil) of
// the member named by the key.
// register folds a registration record (v nil: a tombstone) and reports
// whether it became the member's current one (its headers then apply).
func (f *Folder) register(offset int64, keyMember []byte, v *Registration) bool {
	slot, ok := f.members[string(keyMember)]
	if ok && offset <= slot.offset {
		return false
	}
	if !ok {
		slot = &memberSlot{member: MemberID{string(keyMember)}}
		f.members[slot.member.s] = slot
	}
	slot.offset = offset
	slot.removed = v == nil
	slot.meta, slot.rejoins = nil, false
	if v != nil {
		slot.registeredAt = v.RegisteredAt
	}
	return true
}

func (f *Folder) setLease(offset int64, v *Lease) {
	if f.leaseSet && offset <= f.leaseOff {
		return
	}
	f.leaseSet = true
	f.leaseOff = offset
	f.leaseLive = v != nil
	f.successor, f.fencedBy, f.meta = MemberID{}, "", nil // the headers of the newer record, if any, follow
	if v != nil {
		f.lease = *v
	}
}

// State returns the folded state: live registrations sorted by offset, the
// lease (kept even if its member is no longer registered) and the skip count.
func (f *Folder) State() State {
	s := State{Skipped: f.skipped}
	s.Roster = make([]RosterEntry, 0, len(f.members))
	for _, m := range f.members {
		if m.removed {
			s.Removed++
			continue
		}
		s.Roster = append(s.Roster, RosterEntry{Member: m.member, Offset: m.offset, RegisteredAt: m.registeredAt, Metadata: m.meta, Rejoins: m.rejoins})
	}
	slices.SortFunc(s.Roster, func(a, b RosterEntry) int {
		switch {
		case a.Offset < b.Offset:
			return -1
		case a.Offset > b.Offset:
			return 1
		}
		return 0
	})
	if f.leaseSet && f.leaseLive {
		l := f.lease
		s.Lease = &l
		s.Successor, s.FencedBy, s.Metadata = f.successor, f.fencedBy, f.meta
	}
	return s
}

// NamedSuccessor returns the member the current lease hands over to
// (docs/PROTOCOL.md 11.3): its krabka.successor header names a member that is
// registered and is not the lease's own member, on a lease that is written
// expired (granted_at = deadline: a resign or an administrative fence).
// Otherwise the header is ignored and ok is false.
func (s State) NamedSuccessor() (MemberID, bool) {
	if s.Lease == nil || s.Successor.IsZero() || s.Lease.GrantedAt != s.Lease.Deadline || s.Successor == s.Lease.Member {
		return MemberID{}, false
	}
	if _, ok := s.Registered(s.Successor); !ok {
		return MemberID{}, false
	}
	return s.Successor, true
}

// FoldRaw folds raw records of role r (see Folder.AddRaw).
func FoldRaw(r Role, recs []RawRecord) State {
	f := NewFolder(r)
	for _, rec := range recs {
		f.AddRaw(rec)
	}
	return f.State()
}

// Fold folds decoded records of role r (see Folder.Add).
func Fold(r Role, recs []DecodedRecord) State {
	f := NewFolder(r)
	for _, rec := range recs {
		f.Add(rec)
	}
	return f.State()
}

// Holder returns the member the lease names (live or expired), if any.
func (s State) Holder() (MemberID, bool) {
	if s.Lease == nil {
		return MemberID{}, false
	}
	return s.Lease.Member, true
}

// Rank returns m's place in the succession order (docs/PROTOCOL.md 5.7): none when m is
// not in the roster; 0 when the lease names m (live or expired); otherwise
// m's index in the roster with the lease's member left out. The first standby
// and an expired holder therefore both rank 0.
func (s State) Rank(m MemberID) (int, bool) {
	holder, hasHolder := s.Holder()
	rank := 0
	for _, e := range s.Roster {
		if e.Member == m {
			if hasHolder && holder == m {
				return 0, true
			}
			return rank, true
		}
		if !hasHolder || e.Member != holder {
			rank++
		}
	}
	return 0, false
}

// Registered returns m's roster entry, if m is registered.
func (s State) Registered(m MemberID) (RosterEntry, bool) {
	for _, e := range s.Roster {
		if e.Member == m {
			return e, true
		}
	}
	return RosterEntry{}, false
}
