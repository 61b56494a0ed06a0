package core

// PruneList returns the members whose registrations a member that wins a
// challenge at now on state st removes in the transaction of its first
// lease (docs/PROTOCOL.md 10.3 and 11.6): the member of the previous lease
// when that lease had expired and the member is still registered, and
// every member ranked ahead of the winner whose registration carries
// krabka.rejoin. A winner that was handed the role by name (11.3) took it
// out of turn: the members ranked ahead of it did not let a turn pass, and
// stay. A pure rule: coord's Acquire applies it, and the broker-free
// simulation (core/sim) runs the same function.
func PruneList(st State, me MemberID, now int64) []MemberID {
	var out []MemberID
	holder, hasHolder := st.Holder()
	if hasHolder && holder != me && !st.Lease.LiveAt(now) {
		if _, ok := st.Registered(holder); ok {
			out = append(out, holder)
		}
	}
	if succ, named := st.NamedSuccessor(); named && succ == me {
		return out
	}
	myRank, ok := st.Rank(me)
	if !ok {
		return out
	}
	for _, e := range st.Roster {
		if e.Member == me || (hasHolder && e.Member == holder) || !e.Rejoins {
			// A registration without krabka.rejoin (a reference member's)
			// is not pruned for a passed turn: its writer would not
			// register again within its acquire call (11.6).
			continue
		}
		if r, _ := st.Rank(e.Member); r < myRank {
			out = append(out, e.Member)
		}
	}
	return out
}
