package coord

import "github.com/krabka/krabka-coord/core"

// PruneList returns the members whose registrations a member that wins a
// challenge at now on state st removes in the transaction of its first
// lease (docs/PROTOCOL.md 10.3 and 11.6): the member of the previous lease
// when that lease had expired, and every member ranked ahead of the winner
// whose registration carries krabka.rejoin, unless the winner was named
// successor. It is the rule Acquire applies, exported so that the broker-free
// simulation (core/sim) runs the library's rule rather than a copy of it.
func PruneList(st core.State, me core.MemberID, now int64) []core.MemberID {
	return pruneList(st, me, now)
}
