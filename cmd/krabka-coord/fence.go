package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/user"
	"strings"
	"time"

	"github.com/krabka/krabka-coord/core"
	"github.com/krabka/krabka-coord/core/coord"
)

// fenceFlags are fence's own flags (set per run by the flags function).
var fenceFlags struct {
	to, by string
	yes    bool
	wait   durationFlag
}

var fenceCommand = &command{
	name: "fence", args: "ROLE", summary: "depose the holder through the broker (admin)",
	help: `Deposes ROLE's holder without its cooperation (docs/PROTOCOL.md 11.4):
InitProducerId on the role's
transactional.id mints a new epoch, so the broker refuses every later write
of the holder's token at once; then, in one transaction under the new token,
an expired lease naming the deposed holder (header krabka.fenced-by, and
krabka.successor with --to) and a tombstone of its registration. The next
standby (or the --to member) is expected to take over at once; the deposed
holder ends FENCED and, if it campaigns again, lands at the tail of the
roster. fence then watches the role (--wait) and prints who actually took
over.

--to is a preference, not a promise (docs/PROTOCOL.md 11.3): a member of
another implementation (its registration lacks krabka.rejoin) ignores
krabka.successor and challenges at its own rank. When the --to member is
one, or one ranks ahead of it, fence says so, and the role may go to
another member; one mint wins either way, so nothing unsafe happens.

Refuses without --yes (exit 4), printing what it would do. Exit 5 when the
role has no lease or the --to member is not registered (nothing written).`,
	example: `krabka-coord -b kafka-1:9092 fence --yes controller
krabka-coord -b kafka-1:9092 fence --yes --to node-3 --by "ops: stuck holder, ticket 4711" controller`,
	flags: func(fs *flag.FlagSet, o *options) {
		fenceFlags.to, fenceFlags.by, fenceFlags.yes = "", "", false
		fs.StringVar(&fenceFlags.to, "to", "", "hand the role to this registered member (krabka.successor)")
		fs.StringVar(&fenceFlags.by, "by", "", "who fences, written in krabka.fenced-by (default: krabka-coord fence by USER@HOST)")
		fs.BoolVar(&fenceFlags.yes, "yes", false, "really fence (without it, print what would happen and exit 4)")
		fenceFlags.wait = durationFlag{}
		fs.Var(&fenceFlags.wait, "wait", "watch the role up to `DURATION` for the member that takes over (default: one krabka.challenge.stagger.ms per registered member, plus 2s; 0: do not watch)")
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
	st, err := c.Describe(e.ctx, role)
	if err != nil {
		e.errorf("describe %s: %v", role, err)
		return exitFailed
	}
	var caveats []string
	if to != nil && st.HasHolder {
		caveats = handoffCaveats(st, *to)
	}
	if !fenceFlags.yes {
		if st.Lease == nil {
			e.errorf("role %s has no lease: nobody to fence", role)
			return exitNotFound
		}
		target := "the next standby"
		if to != nil {
			target = to.String()
		}
		pref := ""
		if len(caveats) > 0 {
			pref = " (a preference only: " + strings.Join(caveats, "; ") + ")"
		}
		e.errorf("fence would mint a new epoch for %s (the broker then refuses every write of %s, token %s) and hand the role to %s%s. Nothing written; give --yes to fence",
			role, st.Lease.Member, st.Token, target, pref)
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
	fencedAt := time.Now()
	for _, cv := range caveats {
		e.errorf("fence: the handoff to %s is a preference: %s", to, cv)
	}
	live := ""
	if !res.LeaseWasLive {
		live = " (its lease had already run out)"
	}
	head := fmt.Sprintf("fenced %s from role %s%s: token %s -> %s; ", res.Deposed, role, live, res.OldToken, res.NewToken)
	wait := fenceFlags.wait.d
	if !fenceFlags.wait.set {
		stagger := time.Duration(c.Config().Lease.ChallengeStaggerMs) * time.Millisecond
		wait = time.Duration(len(st.Roster)+1)*stagger + 2*time.Second
	}
	if wait <= 0 {
		next := "the next standby is expected to take over"
		if to != nil {
			next = to.String() + " is expected to take over"
		}
		fmt.Fprintf(e.stdout, "%s%s (not watched)\n", head, next)
		return exitOK
	}
	tk, err := watchTakeover(e.ctx, c, role, res.NewToken, wait)
	if err != nil {
		fmt.Fprintf(e.stdout, "%swho took over is unknown: %v\n", head, err)
		return exitOK
	}
	switch {
	case tk == nil:
		fmt.Fprintf(e.stdout, "%snobody took over within %s\n", head, wait)
	case to != nil && tk.holder != *to:
		fmt.Fprintf(e.stdout, "%s%s took over, token %s, %d ms after the fence; not %s, the named successor (the handoff is a preference: docs/PROTOCOL.md 11.3)\n",
			head, tk.holder, tk.token, tk.at.Sub(fencedAt).Milliseconds(), to)
	default:
		fmt.Fprintf(e.stdout, "%s%s took over, token %s, %d ms after the fence\n", head, tk.holder, tk.token, tk.at.Sub(fencedAt).Milliseconds())
	}
	return exitOK
}

// handoffCaveats says why a handoff to the named member to can only be a
// preference (docs/PROTOCOL.md 11.3), from the roster before the handoff:
// the member, or a member ranked ahead of it (the holder aside), registered
// without krabka.rejoin, so it is of another implementation that ignores
// krabka.successor and challenges at its own rank. Empty when every
// member that could come first honours the header.
func handoffCaveats(st *coord.Status, to core.MemberID) []string {
	var out []string
	for _, r := range st.Roster {
		if r.Member == st.Holder {
			continue
		}
		if r.Member == to {
			if !r.Rejoins {
				out = append(out, fmt.Sprintf("%s registered without krabka.rejoin (a member of another implementation): it ignores krabka.successor and challenges at its own rank (%d)", to, r.Rank))
			}
			return out
		}
		if !r.Rejoins {
			out = append(out, fmt.Sprintf("%s ranks ahead of %s and registered without krabka.rejoin (a member of another implementation): it ignores krabka.successor and may take the role first", r.Member, to))
		}
	}
	return out
}

// takeover is a member that took the role over after a handoff.
type takeover struct {
	holder core.MemberID
	token  core.FencingToken
	at     time.Time
}

// watchTakeover watches role until a member writes a live lease under a
// token newer than after (the handoff's), at most for wait: nil when
// nobody did by then.
func watchTakeover(ctx context.Context, c *coord.Client, role core.Role, after core.FencingToken, wait time.Duration) (*takeover, error) {
	wctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	w, err := c.Watch(wctx, role)
	if err != nil {
		if wctx.Err() != nil && ctx.Err() == nil {
			return nil, nil
		}
		return nil, err
	}
	defer w.Close()
	for {
		ev, err := w.Next(wctx)
		if err != nil {
			if wctx.Err() != nil && ctx.Err() == nil {
				return nil, nil
			}
			return nil, err
		}
		if ev.HasHolder && ev.Lease != nil && ev.Token.Supersedes(after) && ev.Lease.Deadline > ev.Lease.GrantedAt {
			return &takeover{holder: ev.Holder, token: ev.Token, at: ev.At}, nil
		}
	}
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
