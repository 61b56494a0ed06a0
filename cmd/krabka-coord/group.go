package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/krabka/krabka-coord/core"
	"github.com/krabka/krabka-coord/core/coord"
	"github.com/krabka/krabka-coord/core/kafka"
)

var groupInterval time.Duration

var groupCommand = &command{
	name: "group", args: "describe|watch GROUP", summary: "a role group: members, weights, shards per member, moves in flight",
	help: `Reads the group log (<krabka.topic>.groups, docs/GROUPS.md) and prints the
group's members (weight, eligible, live, shards held, owned in the plan and
targeted by the balance), the plan's sequence number and leader, the moves in
flight (shards whose live holder is not their owner), the shards nobody live
holds, the moves the bound holds back, and whether the group converged (every
shard held by its target). It joins nothing and takes no epoch.

  describe GROUP   print the state once
  watch GROUP      print it again whenever it changes, every --interval at
                   most, until SIGINT (Ctrl-C) or SIGTERM, then exit 0

-o json prints one JSON object (watch: one per line).`,
	example: `krabka-coord -b kafka-1:9092 group describe dispatch
krabka-coord -b kafka-1:9092 group watch -o json dispatch | jq -c '{seq, moves_in_flight, converged}'`,
	flags: func(fs *flag.FlagSet, o *options) {
		fs.StringVar(&o.output, "o", o.output, "output `FORMAT`: table or json")
		fs.DurationVar(&groupInterval, "interval", time.Second, "watch: read the group log this often")
	},
	run: runGroup,
}

// groupJSON is the -o json form of group describe and watch (docs/CLI.md).
type groupJSON struct {
	At            string            `json:"at"`
	Group         string            `json:"group"`
	Kind          string            `json:"kind"`
	Shards        int               `json:"shards"`
	Seq           int64             `json:"seq"`
	Leader        string            `json:"leader"`
	Token         string            `json:"token"`
	Members       []groupMemberJSON `json:"members"`
	MovesInFlight int               `json:"moves_in_flight"`
	Unheld        int               `json:"unheld"`
	Orphaned      int               `json:"orphaned"`
	Pending       int               `json:"pending"`
	Converged     bool              `json:"converged"`
	Moves         int64             `json:"moves"`
}

type groupMemberJSON struct {
	Member   string `json:"member"`
	Weight   int    `json:"weight"`
	Eligible bool   `json:"eligible"`
	Live     bool   `json:"live"`
	Held     int    `json:"held"`
	Owned    int    `json:"owned"`
	Target   int    `json:"target"`
	Moves    int64  `json:"moves"`
}

func toGroupJSON(st *coord.GroupStatus, now time.Time) groupJSON {
	j := groupJSON{At: now.UTC().Format(time.RFC3339Nano), Group: st.Group, Kind: st.Kind, Shards: st.Shards, Seq: st.Seq,
		Leader: st.Leader, Token: st.Token, Members: []groupMemberJSON{}, MovesInFlight: st.MovesInFlight,
		Unheld: st.Unheld, Orphaned: st.Orphaned, Pending: st.Pending, Converged: st.Converged, Moves: st.Moves}
	for _, m := range st.Members {
		j.Members = append(j.Members, groupMemberJSON{Member: m.Member, Weight: m.Weight, Eligible: m.Eligible, Live: m.Live,
			Held: len(m.Held), Owned: m.Owned, Target: m.Target, Moves: m.Moves})
	}
	return j
}

func runGroup(e *env, args []string) int {
	if err := checkOutput(e.o); err != nil {
		e.errorf("%v", err)
		return exitUsage
	}
	if len(args) != 2 || (args[0] != "describe" && args[0] != "watch") {
		e.errorf("group needs describe|watch and a GROUP (krabka-coord group --help)")
		return exitUsage
	}
	if groupInterval <= 0 {
		e.errorf("--interval %v: must be positive", groupInterval)
		return exitUsage
	}
	group := args[1]
	if _, err := coord.GroupLeaderRole(group); err != nil {
		e.errorf("%v", err)
		return exitUsage
	}
	log, code := e.groupLog()
	if code != exitOK {
		return code
	}
	defer log.Transport.Close()
	if ti, err := log.Transport.(*kafka.Transport).Topic(e.ctx); err != nil {
		e.errorf("%v", err)
		return exitFailed
	} else if !ti.Exists {
		e.errorf("the group log %s does not exist on this cluster: no group has run here yet, or krabka.topic is wrong (nothing was created)", ti.Name)
		return exitFailed
	}
	var last string
	for {
		st, err := coord.DescribeGroup(e.ctx, log, group, core.SystemClock)
		if err != nil {
			if e.ctx.Err() != nil {
				return exitOK
			}
			e.errorf("group %s: %v", group, err)
			return exitFailed
		}
		j := toGroupJSON(st, time.Now())
		j.At = ""
		key, _ := json.Marshal(j)
		if string(key) != last {
			last = string(key)
			printGroup(e, st)
		}
		if args[0] == "describe" {
			return exitOK
		}
		select {
		case <-e.ctx.Done():
			return exitOK
		case <-time.After(groupInterval):
		}
	}
}

// groupLog opens the group log of the configured cluster (no connection
// yet); exitUsage after an error line for a bad configuration.
func (e *env) groupLog() (coord.GroupLog, int) {
	cfg, err := e.o.config()
	if err != nil {
		e.errorf("%v", err)
		return coord.GroupLog{}, exitUsage
	}
	log, err := kafka.NewGroupLog(cfg)
	if err != nil {
		e.errorf("%v", err)
		return coord.GroupLog{}, exitUsage
	}
	return log, exitOK
}

func printGroup(e *env, st *coord.GroupStatus) {
	if e.o.output == "json" {
		b, _ := json.Marshal(toGroupJSON(st, time.Now()))
		fmt.Fprintln(e.stdout, string(b))
		return
	}
	if st.Shards == 0 && len(st.Members) == 0 {
		fmt.Fprintf(e.stdout, "group %s: no member and no plan\n", st.Group)
		return
	}
	fmt.Fprintf(e.stdout, "group %s  %s=%d  plan=%d  leader=%s  token=%s\n", st.Group, orDash(st.Kind), st.Shards, st.Seq, orDash(st.Leader), orDash(st.Token))
	fmt.Fprintf(e.stdout, "converged=%v  moves_in_flight=%d  unheld=%d  orphaned=%d  pending=%d  moves=%d\n", st.Converged, st.MovesInFlight, st.Unheld, st.Orphaned, st.Pending, st.Moves)
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "MEMBER\tWEIGHT\tELIGIBLE\tLIVE\tHELD\tOWNED\tTARGET")
	for _, m := range st.Members {
		fmt.Fprintf(tw, "%s\t%d\t%v\t%v\t%d\t%d\t%d\n", m.Member, m.Weight, m.Eligible, m.Live, len(m.Held), m.Owned, m.Target)
	}
	tw.Flush()
	if e.o.output == "table" && st.Kind != "" {
		var moving []string
		for k := range st.Owner {
			if st.Holder[k] != "" && st.Holder[k] != st.Owner[k] {
				moving = append(moving, fmt.Sprintf("%d:%s->%s", k, st.Holder[k], st.Owner[k]))
			}
		}
		if len(moving) > 0 {
			fmt.Fprintf(e.stdout, "moving: %s\n", strings.Join(moving, " "))
		}
	}
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
