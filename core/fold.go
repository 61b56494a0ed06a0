package core

import (
	"slices"
)

// RawRecord is one record of the role's partition as read from Kafka. Key may
// be nil; a nil or empty Value is a tombstone.
type RawRecord struct {
	Offset int64
	Key    []byte
	Value  []byte
}

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
}

// State is the folded state of one role: the roster sorted by offset, the
// current lease (nil when there is none) and the number of records of the
// partition that were skipped because they did not decode.
type State struct {
	Roster  []RosterEntry
	Lease   *Lease
	Skipped int
	// Removed counts the members whose latest registration record is a
	// tombstone: they resigned, were pruned by a winner or left (spec 10).
	Removed int
}

type memberSlot struct {
	offset       int64
	registeredAt int64
	member       MemberID
	removed      bool
}

// Folder folds records of one role incrementally (spec section 5). Records
// may be added in any order: each slot keeps the record with the greatest
// offset. Use NewFolder; the zero value is unusable.
type Folder struct {
	role      Role
	members   map[string]*memberSlot
	leaseSet  bool
	leaseOff  int64
	lease     Lease
	leaseLive bool // false after a tombstone
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
		f.register(rec.Offset, kv.member, &Registration{RegisteredAt: at})
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
func (f *Folder) register(offset int64, keyMember []byte, v *Registration) {
	slot, ok := f.members[string(keyMember)]
	if ok && offset <= slot.offset {
		return
	}
	if !ok {
		slot = &memberSlot{member: MemberID{string(keyMember)}}
		f.members[slot.member.s] = slot
	}
	slot.offset = offset
	slot.removed = v == nil
	if v != nil {
		slot.registeredAt = v.RegisteredAt
	}
}

func (f *Folder) setLease(offset int64, v *Lease) {
	if f.leaseSet && offset <= f.leaseOff {
		return
	}
	f.leaseSet = true
	f.leaseOff = offset
	f.leaseLive = v != nil
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
		s.Roster = append(s.Roster, RosterEntry{Member: m.member, Offset: m.offset, RegisteredAt: m.registeredAt})
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
	}
	return s
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

// Rank returns m's place in the succession order (spec 5.7): none when m is
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
