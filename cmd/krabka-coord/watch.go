package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/krabka/krabka-coord/core/coord"
)

var watchCommand = &command{
	name: "watch", args: "ROLE...", summary: "follow roles live: holder changes, roster changes",
	help: `Follows the roles' partitions as a standby would (no epoch, no registration)
and prints one line per event until SIGINT (Ctrl-C) or SIGTERM, then exits 0.
The first lines describe the current state.

  HOLDER_CHANGED   the lease names another member or token: holder, token,
                   prev_holder, prev_token
  ROSTER_CHANGED   the roster (members or order) changed: roster in succession
                   order as member:rank
  ROLE_FREE        the lease expired by the clock, or was cleared, and nobody
                   took the role yet
  LEASE_RENEWED    the holder renewed (only with --renewals)

Events of one role come in log order; lines of different roles interleave.
-o json prints one JSON object per line.`,
	example: `krabka-coord -b kafka-1:9092 watch controller scheduler
krabka-coord -b kafka-1:9092 watch -o json controller | jq -c 'select(.event == "HOLDER_CHANGED")'`,
	flags: func(fs *flag.FlagSet, o *options) {
		fs.StringVar(&o.output, "o", o.output, "output `FORMAT`: table (one line per event) or json (one object per line)")
		fs.BoolVar(&o.renewals, "renewals", false, "also print LEASE_RENEWED events")
	},
	run: runWatch,
}

// eventJSON is one -o json line of watch (documented in docs/CLI.md).
type eventJSON struct {
	At         string       `json:"at"`
	Role       string       `json:"role"`
	Event      string       `json:"event"`
	Holder     *string      `json:"holder"`
	Token      string       `json:"token"`
	PrevHolder *string      `json:"prev_holder,omitempty"`
	PrevToken  string       `json:"prev_token,omitempty"`
	Lease      *leaseJSON   `json:"lease"`
	Roster     []rosterJSON `json:"roster"`
	Offset     int64        `json:"offset"`
	// Metadata of the term (see statusJSON).
	Metadata       *string `json:"metadata,omitempty"`
	MetadataBase64 *string `json:"metadata_base64,omitempty"`
}

func runWatch(e *env, args []string) int {
	if err := checkOutput(e.o); err != nil {
		e.errorf("%v", err)
		return exitUsage
	}
	if len(args) == 0 {
		e.errorf("watch needs at least one ROLE (krabka-coord watch --help)")
		return exitUsage
	}
	roles, code := e.roleArgs(args)
	if code != exitOK {
		return code
	}
	c, code := e.connectExisting()
	if code != exitOK {
		return code
	}
	defer c.Close()
	var opts []coord.WatchOption
	if e.o.renewals {
		opts = append(opts, coord.WatchRenewals())
	}
	var watches []*coord.Watch
	for _, r := range roles {
		w, err := c.Watch(e.ctx, r, opts...)
		if err != nil {
			for _, w := range watches {
				w.Close()
			}
			if e.ctx.Err() != nil {
				return exitOK
			}
			e.errorf("watch %s: %v", r, err)
			return exitFailed
		}
		watches = append(watches, w)
	}
	var (
		mu   sync.Mutex
		wg   sync.WaitGroup
		fail error
	)
	for _, w := range watches {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer w.Close()
			for {
				ev, err := w.Next(e.ctx)
				if err != nil {
					if e.ctx.Err() == nil && !errors.Is(err, coord.ErrClosed) {
						mu.Lock()
						if fail == nil {
							fail = err
						}
						mu.Unlock()
					}
					return
				}
				mu.Lock()
				printEvent(e, ev)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if fail != nil {
		e.errorf("watch: %v", fail)
		return exitFailed
	}
	return exitOK
}

func printEvent(e *env, ev coord.Event) {
	at := ev.At.UTC().Format("2006-01-02T15:04:05.000Z07:00")
	if e.o.output == "json" {
		j := eventJSON{At: at, Role: ev.Role.String(), Event: ev.Kind.String(), Token: ev.Token.String(),
			Lease: toLeaseJSON(ev.Lease, time.Now()), Roster: []rosterJSON{}, Offset: ev.Offset}
		if ev.HasHolder {
			h := ev.Holder.String()
			j.Holder = &h
		}
		if ev.Kind == coord.EventHolderChanged {
			j.PrevToken = ev.PrevToken.String()
			if ev.HasPrevHolder {
				p := ev.PrevHolder.String()
				j.PrevHolder = &p
			}
		}
		j.Metadata, j.MetadataBase64 = metaJSON(ev.Metadata)
		for _, r := range ev.Roster {
			rj := rosterJSON{Rank: r.Rank, Member: r.Member.String(), Offset: r.Offset,
				RegisteredAt: fmtTime(r.RegisteredAt), RegisteredAtMs: r.RegisteredAt}
			rj.Metadata, rj.MetadataBase64 = metaJSON(r.Metadata)
			j.Roster = append(j.Roster, rj)
		}
		b, _ := json.Marshal(j)
		fmt.Fprintf(e.stdout, "%s\n", b)
		return
	}
	var f []string
	holder := "(none)"
	if ev.HasHolder {
		holder = ev.Holder.String()
	}
	switch ev.Kind {
	case coord.EventHolderChanged:
		prev := "(none)"
		if ev.HasPrevHolder {
			prev = ev.PrevHolder.String()
		}
		f = append(f, "holder="+holder, "token="+ev.Token.String(), "prev_holder="+prev, "prev_token="+ev.PrevToken.String())
		if ev.Lease != nil {
			f = append(f, "deadline="+fmtTime(ev.Lease.Deadline))
		}
	case coord.EventLeaseRenewed:
		f = append(f, "holder="+holder, "token="+ev.Token.String())
		if ev.Lease != nil {
			f = append(f, "deadline="+fmtTime(ev.Lease.Deadline))
		}
	case coord.EventRosterChanged:
		rs := make([]string, len(ev.Roster))
		for i, r := range ev.Roster {
			rs[i] = fmt.Sprintf("%s:%d", r.Member, r.Rank)
		}
		f = append(f, "roster="+strings.Join(rs, ","))
	case coord.EventRoleFree:
		if ev.Lease != nil {
			f = append(f, "last_holder="+ev.Lease.Member.String(), "last_token="+ev.Lease.Token.String(), "deadline="+fmtTime(ev.Lease.Deadline))
		} else {
			f = append(f, "lease=cleared")
		}
	}
	if ev.Metadata != nil && (ev.Kind == coord.EventHolderChanged || ev.Kind == coord.EventLeaseRenewed) {
		f = append(f, "metadata="+fmtMeta(ev.Metadata))
	}
	if ev.Offset >= 0 {
		f = append(f, fmt.Sprintf("offset=%d", ev.Offset))
	}
	fmt.Fprintf(e.stdout, "%s %s %s %s\n", at, ev.Role, ev.Kind, strings.Join(f, " "))
}
