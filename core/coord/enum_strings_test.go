package coord_test

import (
	"fmt"
	"testing"

	"github.com/krabka/krabka-coord/core/coord"
)

// The generated String() of every enum of the package that crosses the ABI
// names a value as the header does without its prefix, and any other
// value as Type(n).
func TestEnumStringsAreTheHeaderNames(t *testing.T) {
	for _, c := range []struct {
		v    fmt.Stringer
		want string
	}{
		{coord.TermNewLeader, "NEW_LEADER"},
		{coord.TermEventKind(0), "TermEventKind(0)"},
		{coord.StopLostAtRisk, "LOST_AT_RISK"},
		{coord.StopNone, "NONE"},
		{coord.StopReason(-1), "StopReason(-1)"},
		{coord.EventRoleFree, "ROLE_FREE"},
		{coord.EventKind(99), "EventKind(99)"},
		{coord.Closed, "CLOSED"},
		{coord.LeadershipAtRisk, "AT_RISK"},
	} {
		if got := c.v.String(); got != c.want {
			t.Errorf("%T %d: String() = %q, want %q", c.v, c.v, got, c.want)
		}
	}
}
