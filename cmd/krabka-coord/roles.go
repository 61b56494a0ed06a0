package main

import (
	"flag"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/krabka/krabka-coord/core"
)

var rolesCommand = &command{
	name: "roles", summary: "every role in the coordination topic with holder, token, lease",
	help: `Reads every partition of the coordination topic once (read_committed, from
the log start to the last stable offset) and lists every role found in it,
with the member its last lease names, the coordinator's current token for the
role and whether that lease carries it (current, as in describe), the time left on
the lease and the roster size; then says how many records it read. With
krabka.role.prefix set, only that prefix's roles are listed, named without it
(as describe takes them).`,
	example: `krabka-coord -b kafka-1:9092 roles
krabka-coord -F client.properties roles -o json | jq -r '.roles[] | select(.holder == null) | .role'`,
	flags: func(fs *flag.FlagSet, o *options) {
		fs.StringVar(&o.output, "o", o.output, "output `FORMAT`: table or json")
	},
	run: runRoles,
}

type rolesJSON struct {
	Topic       string       `json:"topic"`
	Partitions  int32        `json:"partitions"`
	RecordsRead int64        `json:"records_read"`
	Roles       []statusJSON `json:"roles"`
}

func runRoles(e *env, args []string) int {
	if err := checkOutput(e.o); err != nil {
		e.errorf("%v", err)
		return exitUsage
	}
	if len(args) != 0 {
		e.errorf("roles takes no argument (describe ROLE... shows single roles)")
		return exitUsage
	}
	t, c, code := e.connect()
	if code != exitOK {
		return code
	}
	defer c.Close()
	ti, err := t.Topic(e.ctx)
	if err != nil {
		e.errorf("%v", err)
		return exitFailed
	}
	if !ti.Exists {
		e.errorf("the coordination topic %s does not exist on this cluster: no member has run here yet, or krabka.topic is wrong (nothing was created)", ti.Name)
		return exitFailed
	}
	n, sts, err := c.Roles(e.ctx)
	if err != nil {
		e.errorf("roles: %v", err)
		return exitFailed
	}
	now := time.Now()
	if e.o.output == "json" {
		out := rolesJSON{Topic: ti.Name, Partitions: ti.Partitions, RecordsRead: n, Roles: []statusJSON{}}
		for _, s := range sts {
			out.Roles = append(out.Roles, toStatusJSON(s, now))
		}
		return writeJSON(e, out)
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ROLE\tPARTITION\tHOLDER\tTOKEN\tCURRENT\tLEASE REMAINING\tMEMBERS")
	for _, s := range sts {
		holder, token := "-", "-"
		if s.HasHolder {
			holder = s.Holder.String()
		}
		switch {
		case s.Token != core.NoEpoch:
			token = s.Token.String()
		case s.Lease != nil:
			token = s.Lease.Token.String()
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%t\t%s\t%d\n", s.Role, s.Partition, holder, token, s.Current, fmtRemaining(s.Lease, now), len(s.Roster))
	}
	tw.Flush()
	fmt.Fprintf(e.stdout, "%d role(s); read %d record(s) from %d partition(s) of %s\n", len(sts), n, ti.Partitions, ti.Name)
	return exitOK
}
