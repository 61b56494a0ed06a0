package main

import (
	"encoding/base64"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/krabka/krabka-coord/core"
	"github.com/krabka/krabka-coord/core/coord"
)

var describeCommand = &command{
	name: "describe", args: "ROLE...", summary: "who holds a role: holder, token, lease, roster",
	help: `For each ROLE: the member the last lease names (holder), the transaction
coordinator's current token for the role and whether the lease carries it
(current), the lease's grant, deadline and remaining time, the role's
partition of the coordination topic, the roster in succession order with
ranks, and the number of undecodable records skipped. It joins no group and
takes no epoch (DescribeTransactions plus one read of the role's partition).

current=false means nobody holds the role, or a challenger minted a newer
token and has not written its lease yet: either way the broker already
rejects every write of the lease's member.`,
	example: `krabka-coord -b kafka-1:9092 describe controller
krabka-coord -F client.properties describe -o json controller scheduler | jq '.[0].holder'`,
	flags: func(fs *flag.FlagSet, o *options) {
		fs.StringVar(&o.output, "o", o.output, "output `FORMAT`: table or json")
	},
	run: runDescribe,
}

func checkOutput(o *options) error {
	switch o.output {
	case "table", "json":
		return nil
	}
	return usagef("-o %q: the output format is table or json", o.output)
}

func runDescribe(e *env, args []string) int {
	if err := checkOutput(e.o); err != nil {
		e.errorf("%v", err)
		return exitUsage
	}
	if len(args) == 0 {
		e.errorf("describe needs at least one ROLE (krabka-coord describe --help)")
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
	var out []*coord.Status
	for _, r := range roles {
		st, err := c.Describe(e.ctx, r)
		if err != nil {
			e.errorf("describe %s: %v", r, err)
			return exitFailed
		}
		out = append(out, st)
	}
	now := time.Now()
	if e.o.output == "json" {
		js := make([]statusJSON, len(out))
		for i, s := range out {
			js[i] = toStatusJSON(s, now)
		}
		return writeJSON(e, js)
	}
	for i, s := range out {
		if i > 0 {
			fmt.Fprintln(e.stdout)
		}
		printStatus(e.stdout, s, now)
	}
	return exitOK
}

func writeJSON(e *env, v any) int {
	enc := json.NewEncoder(e.stdout)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		e.errorf("writing JSON: %v", err)
		return exitFailed
	}
	return exitOK
}

// fmtTime renders epoch milliseconds as RFC 3339 UTC with milliseconds.
func fmtTime(ms int64) string {
	return time.UnixMilli(ms).UTC().Format("2006-01-02T15:04:05.000Z07:00")
}

// fmtRemaining renders a lease's remaining time at now: "12.3s", or
// "expired 4.1s ago".
func fmtRemaining(l *core.Lease, now time.Time) string {
	if l == nil {
		return "-"
	}
	d := time.Duration(l.Deadline-now.UnixMilli()) * time.Millisecond
	if d > 0 {
		return d.Round(100 * time.Millisecond).String()
	}
	return "expired " + (-d).Round(100*time.Millisecond).String() + " ago"
}

func printStatus(w io.Writer, s *coord.Status, now time.Time) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	holder := "(none)"
	if s.HasHolder {
		holder = s.Holder.String()
	}
	token := s.Token.String()
	if s.Token == core.NoEpoch {
		token += " (never taken)"
	}
	fmt.Fprintf(tw, "role\t%s\n", s.Role)
	fmt.Fprintf(tw, "partition\t%d\n", s.Partition)
	fmt.Fprintf(tw, "holder\t%s\n", holder)
	fmt.Fprintf(tw, "token\t%s\n", token)
	fmt.Fprintf(tw, "current\t%t\n", s.Current)
	if s.Lease != nil {
		fmt.Fprintf(tw, "lease token\t%s\n", s.Lease.Token)
		fmt.Fprintf(tw, "lease granted\t%s\n", fmtTime(s.Lease.GrantedAt))
		fmt.Fprintf(tw, "lease deadline\t%s\n", fmtTime(s.Lease.Deadline))
		fmt.Fprintf(tw, "lease remaining\t%s\n", fmtRemaining(s.Lease, now))
	} else {
		fmt.Fprintf(tw, "lease\t(none)\n")
	}
	if s.Metadata != nil {
		fmt.Fprintf(tw, "metadata\t%s\n", fmtMeta(s.Metadata))
	}
	fmt.Fprintf(tw, "skipped records\t%d\n", s.Skipped)
	tw.Flush()
	if len(s.Roster) == 0 {
		fmt.Fprintln(w, "roster: (empty)")
		return
	}
	fmt.Fprintln(w, "roster:")
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  RANK\tMEMBER\tOFFSET\tREGISTERED\tMETADATA")
	for _, r := range s.Roster {
		mark := ""
		if s.HasHolder && r.Member == s.Holder {
			mark = " (holder)"
		}
		meta := "-"
		if r.Metadata != nil {
			meta = fmtMeta(r.Metadata)
		}
		fmt.Fprintf(tw, "  %d\t%s%s\t%d\t%s\t%s\n", r.Rank, r.Member, mark, r.Offset, fmtTime(r.RegisteredAt), meta)
	}
	tw.Flush()
}

// statusJSON is the -o json form of a Status (documented in docs/CLI.md).
type statusJSON struct {
	Role      string       `json:"role"`
	Partition int32        `json:"partition"`
	Holder    *string      `json:"holder"`
	Token     string       `json:"token"`
	Current   bool         `json:"current"`
	Lease     *leaseJSON   `json:"lease"`
	Roster    []rosterJSON `json:"roster"`
	Skipped   int          `json:"skipped"`
	// Metadata of the term (krabka.meta): the bytes as text when they are
	// valid UTF-8, and always as base64. Absent without metadata.
	Metadata       *string `json:"metadata,omitempty"`
	MetadataBase64 *string `json:"metadata_base64,omitempty"`
}

type leaseJSON struct {
	Member      string `json:"member"`
	Token       string `json:"token"`
	GrantedAt   string `json:"granted_at"`
	Deadline    string `json:"deadline"`
	GrantedAtMs int64  `json:"granted_at_ms"`
	DeadlineMs  int64  `json:"deadline_ms"`
	RemainingMs int64  `json:"remaining_ms"` // 0 once expired
	Live        bool   `json:"live"`
}

type rosterJSON struct {
	Rank           int     `json:"rank"`
	Member         string  `json:"member"`
	Offset         int64   `json:"offset"`
	RegisteredAt   string  `json:"registered_at"`
	RegisteredAtMs int64   `json:"registered_at_ms"`
	Metadata       *string `json:"metadata,omitempty"`
	MetadataBase64 *string `json:"metadata_base64,omitempty"`
}

func toLeaseJSON(l *core.Lease, now time.Time) *leaseJSON {
	if l == nil {
		return nil
	}
	n := now.UnixMilli()
	return &leaseJSON{
		Member: l.Member.String(), Token: l.Token.String(),
		GrantedAt: fmtTime(l.GrantedAt), Deadline: fmtTime(l.Deadline),
		GrantedAtMs: l.GrantedAt, DeadlineMs: l.Deadline,
		RemainingMs: l.RemainingAt(n), Live: l.LiveAt(n),
	}
}

func toStatusJSON(s *coord.Status, now time.Time) statusJSON {
	j := statusJSON{
		Role: s.Role.String(), Partition: s.Partition, Token: s.Token.String(),
		Current: s.Current, Skipped: s.Skipped, Roster: []rosterJSON{},
		Lease: toLeaseJSON(s.Lease, now),
	}
	if s.HasHolder {
		h := s.Holder.String()
		j.Holder = &h
	}
	j.Metadata, j.MetadataBase64 = metaJSON(s.Metadata)
	for _, r := range s.Roster {
		rj := rosterJSON{Rank: r.Rank, Member: r.Member.String(), Offset: r.Offset,
			RegisteredAt: fmtTime(r.RegisteredAt), RegisteredAtMs: r.RegisteredAt}
		rj.Metadata, rj.MetadataBase64 = metaJSON(r.Metadata)
		j.Roster = append(j.Roster, rj)
	}
	return j
}

// metaJSON renders metadata for JSON: as text when it is valid UTF-8, and
// as base64 (nil, nil without metadata).
func metaJSON(b []byte) (text, b64 *string) {
	if b == nil {
		return nil, nil
	}
	e := base64.StdEncoding.EncodeToString(b)
	if utf8.Valid(b) {
		s := string(b)
		return &s, &e
	}
	return nil, &e
}

// fmtMeta renders metadata for a table: quoted text when it is printable
// UTF-8, otherwise base64.
func fmtMeta(b []byte) string {
	if utf8.Valid(b) && strings.IndexFunc(string(b), func(r rune) bool { return !unicode.IsPrint(r) }) < 0 {
		return strconv.Quote(string(b))
	}
	return "base64:" + base64.StdEncoding.EncodeToString(b)
}

// memberList renders a roster as "a,b,c" in succession order.
func memberList(rs []coord.RosterRank) string {
	names := make([]string, len(rs))
	for i, r := range rs {
		names[i] = r.Member.String()
	}
	return strings.Join(names, ",")
}
