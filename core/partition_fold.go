package core

import "slices"

// PartitionFolder folds every role of one partition at once: a reader that
// follows a partition (docs/PROTOCOL.md 10.1) keeps one and answers any role that hashes
// to it without reading the partition again. Records are routed by the role
// in their key; a record whose key is null or does not decode belongs to no
// role and counts as skipped for every role (as Folder.AddRaw counts it).
// Use NewPartitionFolder; the zero value is unusable. Not safe for
// concurrent use.
type PartitionFolder struct {
	roles      map[string]*Folder
	keySkipped int
	skipped    int // keySkipped plus the values every role's folder skipped
}

// NewPartitionFolder returns an empty PartitionFolder.
func NewPartitionFolder() *PartitionFolder {
	return &PartitionFolder{roles: make(map[string]*Folder)}
}

// AddRaw folds one raw record into the state of the role its key names.
func (f *PartitionFolder) AddRaw(rec RawRecord) { f.AddRawRole(rec) }

// AddRawRole is AddRaw, returning the role the record was folded into;
// false when its key is null or does not decode (the record counts as
// skipped for every role). Its cost does not grow with the roles of the
// partition.
func (f *PartitionFolder) AddRawRole(rec RawRecord) (Role, bool) {
	if rec.Key == nil {
		f.keySkipped++
		f.skipped++
		return Role{}, false
	}
	kv, err := decodeKeyView(rec.Key)
	if err != nil {
		f.keySkipped++
		f.skipped++
		return Role{}, false
	}
	rf, ok := f.roles[string(kv.role)]
	if !ok {
		// decodeKeyView accepted the role: it is a valid name.
		rf = NewFolder(Role{string(kv.role)})
		f.roles[rf.role.s] = rf
	}
	before := rf.skipped
	rf.AddRaw(rec)
	f.skipped += rf.skipped - before
	return rf.role, true
}

// State returns role r's state: the same as FoldRaw(r, records) over every
// record added so far.
func (f *PartitionFolder) State(r Role) State {
	rf, ok := f.roles[r.s]
	if !ok {
		return State{Roster: []RosterEntry{}, Skipped: f.keySkipped}
	}
	s := rf.State()
	s.Skipped += f.keySkipped
	return s
}

// Skipped returns how many records of the partition were skipped: keys that
// do not decode, and values of a role that do not decode. It is counted as
// the records are folded (no walk over the roles).
func (f *PartitionFolder) Skipped() int { return f.skipped }

// Roles returns every role that has a record in the partition, sorted by name.
func (f *PartitionFolder) Roles() []Role {
	out := make([]Role, 0, len(f.roles))
	for _, rf := range f.roles {
		out = append(out, rf.role)
	}
	slices.SortFunc(out, func(a, b Role) int {
		switch {
		case a.s < b.s:
			return -1
		case a.s > b.s:
			return 1
		}
		return 0
	})
	return out
}
