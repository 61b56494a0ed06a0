package main

import (
	"flag"
	"fmt"
	"time"

	"github.com/krabka/krabka-coord/core"
)

var leaveCommand = &command{
	name: "leave", args: "ROLE MEMBER", summary: "remove a member's registration (admin)",
	help: `Removes MEMBER from ROLE's roster by writing a tombstone of its registration
(docs/PROTOCOL.md section 10.4), for example for a device that was replaced
and will not come back under that id. Everyone behind it moves up one rank.

A member that is still running sees itself unregistered and registers again
at the tail of the roster; stop it first. If MEMBER holds the lease (a live
lease names it), leave refuses (exit 4) unless --yes is given: removing the
registration does not end that leadership (only the broker's fence does), the
role passes on when the lease ends.

Exit 5 when MEMBER is not registered (nothing is written).`,
	example: `krabka-coord -b kafka-1:9092 leave controller node-7
krabka-coord -b kafka-1:9092 leave --yes controller node-1`,
	flags: func(fs *flag.FlagSet, o *options) {
		fs.BoolVar(&o.yes, "yes", false, "also remove the member when it holds the lease")
	},
	run: runLeave,
}

func runLeave(e *env, args []string) int {
	if len(args) != 2 {
		e.errorf("leave needs ROLE MEMBER (krabka-coord leave --help)")
		return exitUsage
	}
	role, err := roleArg(args[0])
	if err != nil {
		e.errorf("%v", err)
		return exitUsage
	}
	member, err := core.NewMemberID(args[1])
	if err != nil {
		e.errorf("member %q: %v", args[1], err)
		return exitUsage
	}
	c, code := e.connectExisting()
	if code != exitOK {
		return code
	}
	defer c.Close()
	st, err := c.Describe(e.ctx, role)
	if err != nil {
		e.errorf("describe %s: %v", role, err)
		return exitFailed
	}
	registered := false
	for _, r := range st.Roster {
		if r.Member == member {
			registered = true
		}
	}
	if !registered {
		e.errorf("%s is not registered in role %s: nothing written (roster: %s)", member, role, orNone(memberList(st.Roster)))
		return exitNotFound
	}
	now := time.Now()
	if st.Lease != nil && st.Lease.Member == member && st.Lease.LiveAt(now.UnixMilli()) && !e.o.yes {
		e.errorf("%s holds the lease of %s (token %s, deadline %s, %s left): removing its registration does not end its leadership; the role passes on when the lease ends. Nothing written; give --yes to remove it anyway",
			member, role, st.Lease.Token, fmtTime(st.Lease.Deadline), fmtRemaining(st.Lease, now))
		return exitRefused
	}
	if err := c.Leave(e.ctx, role, member); err != nil {
		e.errorf("leave %s %s: %v", role, member, err)
		return exitFailed
	}
	after, err := c.Describe(e.ctx, role)
	if err != nil {
		e.errorf("removed %s from %s, but reading the role back failed: %v", member, role, err)
		return exitFailed
	}
	fmt.Fprintf(e.stdout, "removed %s from role %s; roster now: %s\n", member, role, orNone(memberList(after.Roster)))
	return exitOK
}

func orNone(s string) string {
	if s == "" {
		return "(empty)"
	}
	return s
}
