package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"os/user"

	"github.com/krabka/krabka-coord/core"
	"github.com/krabka/krabka-coord/core/coord"
)

// fenceFlags are fence's own flags (set per run by the flags function).
var fenceFlags struct {
	to, by string
	yes    bool
}

var fenceCommand = &command{
	name: "fence", args: "ROLE", summary: "depose the holder through the broker (admin)",
	help: `Deposes ROLE's holder without its cooperation (docs/PROTOCOL.md 11.4):
InitProducerId on the role's
transactional.id mints a new epoch, so the broker refuses every later write
of the holder's token at once; then, in one transaction under the new token,
an expired lease naming the deposed holder (header krabka.fenced-by, and
krabka.successor with --to) and a tombstone of its registration. The next
standby (or the --to member) takes over at once; the deposed holder ends
FENCED and, if it campaigns again, lands at the tail of the roster.

Refuses without --yes (exit 4), printing what it would do. Exit 5 when the
role has no lease or the --to member is not registered (nothing written).`,
	example: `krabka-coord -b kafka-1:9092 fence --yes controller
krabka-coord -b kafka-1:9092 fence --yes --to node-3 --by "ops: stuck holder, ticket 4711" controller`,
	flags: func(fs *flag.FlagSet, o *options) {
		fenceFlags.to, fenceFlags.by, fenceFlags.yes = "", "", false
		fs.StringVar(&fenceFlags.to, "to", "", "hand the role to this registered member (krabka.successor)")
		fs.StringVar(&fenceFlags.by, "by", "", "who fences, written in krabka.fenced-by (default: krabka-coord fence by USER@HOST)")
		fs.BoolVar(&fenceFlags.yes, "yes", false, "really fence (without it, print what would happen and exit 4)")
	},
	run: runFence,
}

func runFence(e *env, args []string) int {
	if len(args) != 1 {
		e.errorf("fence needs ROLE (krabka-coord fence --help)")
		return exitUsage
	}
	role, err := roleArg(args[0])
	if err != nil {
		e.errorf("%v", err)
		return exitUsage
	}
	var to *core.MemberID
	if fenceFlags.to != "" {
		m, err := core.NewMemberID(fenceFlags.to)
		if err != nil {
			e.errorf("--to %q: %v", fenceFlags.to, err)
			return exitUsage
		}
		to = &m
	}
	by := fenceFlags.by
	if by == "" {
		by = "krabka-coord fence by " + whoAmI()
	}
	c, code := e.connectExisting()
	if code != exitOK {
		return code
	}
	defer c.Close()
	if !fenceFlags.yes {
		st, err := c.Describe(e.ctx, role)
		if err != nil {
			e.errorf("describe %s: %v", role, err)
			return exitFailed
		}
		if st.Lease == nil {
			e.errorf("role %s has no lease: nobody to fence", role)
			return exitNotFound
		}
		target := "the next standby"
		if to != nil {
			target = to.String()
		}
		e.errorf("fence would mint a new epoch for %s (the broker then refuses every write of %s, token %s) and hand the role to %s. Nothing written; give --yes to fence",
			role, st.Lease.Member, st.Token, target)
		return exitRefused
	}
	res, err := c.Fence(e.ctx, role, by, to)
	if err != nil {
		if errors.Is(err, coord.ErrNotLeader) || errors.Is(err, coord.ErrInvalidArgument) {
			e.errorf("fence %s: %v (nothing written)", role, err)
			return exitNotFound
		}
		e.errorf("fence %s: %v", role, err)
		return exitFailed
	}
	next := "the next standby takes over at once"
	if !res.Successor.IsZero() {
		next = res.Successor.String() + " takes over at once"
	}
	live := ""
	if !res.LeaseWasLive {
		live = " (its lease had already run out)"
	}
	fmt.Fprintf(e.stdout, "fenced %s from role %s%s: token %s -> %s; %s\n", res.Deposed, role, live, res.OldToken, res.NewToken, next)
	return exitOK
}

func whoAmI() string {
	name := "unknown"
	if u, err := user.Current(); err == nil && u.Username != "" {
		name = u.Username
	}
	host, _ := os.Hostname()
	if host == "" {
		host = "unknown-host"
	}
	return name + "@" + host
}
