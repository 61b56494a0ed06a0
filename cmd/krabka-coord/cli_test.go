package main

// Tests of the command line that need no broker: configuration flags and
// files through the library's parser, help, version, exit codes of bad
// command lines, and the judgement rules of check.

import (
	"bytes"
	"context"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/krabka/krabka-coord/core"
	"github.com/krabka/krabka-coord/core/coord"
	"github.com/krabka/krabka-coord/core/kafka"
)

// runCLI runs the command line in-process.
func runCLI(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = run(context.Background(), args, &out, &errb)
	return code, out.String(), errb.String()
}

func TestConfigFlagsGoThroughTheLibraryTable(t *testing.T) {
	code, out, errs := runCLI(t, "-b", "k1:9092,k2:9093", "config", "-X", "krabka.lease.ms=12000", "-X", "krabka.renew.interval.ms=4000",
		"-X", "security.protocol=sasl_plaintext", "-X", "sasl.username=ops", "-X", "sasl.password=hunter2")
	if code != exitOK {
		t.Fatalf("exit %d, stderr %s", code, errs)
	}
	for _, want := range []string{"bootstrap.servers=k1:9092,k2:9093\n", "krabka.lease.ms=12000\n", "krabka.renew.interval.ms=4000\n",
		"security.protocol=SASL_PLAINTEXT\n", "sasl.username=ops\n", "sasl.password=[redacted]\n", "krabka.topic=__coordination_state\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("config output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out+errs, "hunter2") {
		t.Fatalf("the password was printed:\n%s%s", out, errs)
	}
}

func TestLaterSettingsWin(t *testing.T) {
	code, out, errs := runCLI(t, "-X", "bootstrap.servers=a:1", "-b", "b:2", "config")
	if code != exitOK || !strings.Contains(out, "bootstrap.servers=b:2\n") {
		t.Fatalf("exit %d, out %s, err %s", code, out, errs)
	}
	code, out, _ = runCLI(t, "-b", "b:2", "config", "-X", "bootstrap.servers=c:3")
	if code != exitOK || !strings.Contains(out, "bootstrap.servers=c:3\n") {
		t.Fatalf("exit %d, out %s", code, out)
	}
}

// The messages are the library's own (coord.Config.Set / Validate), with
// where the setting came from in front.
func TestBadPropertiesGiveTheLibraryMessageAndExit2(t *testing.T) {
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"-b", "k:1", "-X", "krabka.lease.ms=abc", "config"},
			`-X krabka.lease.ms: krabka: invalid configuration value: krabka.lease.ms="abc": not an integer number of milliseconds`},
		{[]string{"-b", "k:1", "-X", "krabka.no.such=1", "config"},
			`-X krabka.no.such: krabka: unknown configuration property: "krabka.no.such"`},
		{[]string{"-b", "k", "config"},
			`-b: krabka: invalid configuration value: bootstrap.servers="k": entry "k" is not host:port`},
		{[]string{"config"}, `bootstrap.servers="": required`},
		{[]string{"-b", "k:1", "-X", "krabka.lease.ms=3000", "-X", "krabka.renew.interval.ms=3000", "config"},
			"krabka.renew.interval.ms"},
		{[]string{"-b", "k:1", "-X", "security.protocol=SASL_SSL", "config"},
			`sasl.username="": required with security.protocol=SASL_SSL`},
		{[]string{"-b", "k:1", "-X", "s3cr3t-without-key", "config"}, "-X (setting 2): expected KEY=VALUE"},
		// mem://NAME is an in-process cluster of one process (docs/TESTING.md):
		// a bad name is named; the commands need a real cluster and say so.
		{[]string{"-b", "mem://a b", "config"}, `in-process cluster name "a b" has the character ' '`},
		{[]string{"-b", "mem://x", "check"}, "check needs a real Kafka cluster"},
		{[]string{"-b", "mem://x", "describe", "r"}, "this call needs a real Kafka cluster"},
	}
	for _, c := range cases {
		code, out, errs := runCLI(t, c.args...)
		if code != exitUsage {
			t.Errorf("%v: exit %d, want %d (out %q)", c.args, code, exitUsage, out)
		}
		if !strings.Contains(errs, c.want) {
			t.Errorf("%v: stderr %q does not contain %q", c.args, errs, c.want)
		}
		if strings.Contains(errs, "s3cr3t") {
			t.Errorf("%v: stderr echoes the argument: %q", c.args, errs)
		}
	}
}

func TestPropertiesFile(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "client.properties")
	os.WriteFile(good, []byte(`# a comment
! another
bootstrap.servers = k1:9092,\
    k2:9092
security.protocol: SASL_SSL
sasl.mechanism SCRAM-SHA-512
sasl.username=ops
sasl.password=pa\=ss:word

krabka.role.prefix=prod.
`), 0o600)
	code, out, errs := runCLI(t, "-F", good, "config")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, want := range []string{"bootstrap.servers=k1:9092,k2:9092\n", "security.protocol=SASL_SSL\n",
		"sasl.mechanism=SCRAM-SHA-512\n", "sasl.password=[redacted]\n", "krabka.role.prefix=prod.\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "pa=ss") {
		t.Fatal("password printed")
	}

	bad := filepath.Join(dir, "bad.properties")
	os.WriteFile(bad, []byte("bootstrap.servers=k:1\n\nkrabka.lease.ms=soon\n"), 0o600)
	code, _, errs = runCLI(t, "-F", bad, "config")
	if code != exitUsage || !strings.Contains(errs, bad+":3: krabka: invalid configuration value: krabka.lease.ms=\"soon\"") {
		t.Fatalf("exit %d, stderr %q", code, errs)
	}
	code, _, errs = runCLI(t, "-F", filepath.Join(dir, "missing.properties"), "config")
	if code != exitUsage || !strings.Contains(errs, "missing.properties") {
		t.Fatalf("exit %d, stderr %q", code, errs)
	}
}

func TestHelpOfEveryCommandHasAnExampleAndExitCodes(t *testing.T) {
	for _, c := range commands {
		for _, args := range [][]string{{c.name, "--help"}, {"help", c.name}, {c.name, "-h"}} {
			code, out, _ := runCLI(t, args...)
			if code != exitOK {
				t.Errorf("%v: exit %d", args, code)
			}
			if !strings.Contains(out, "Usage: krabka-coord "+c.name) || !strings.Contains(out, "Example:\n  krabka-coord") ||
				!strings.Contains(out, "Exit codes:") {
				t.Errorf("%v: help lacks usage, example or exit codes:\n%s", args, out)
			}
		}
	}
	code, out, _ := runCLI(t, "--help")
	if code != exitOK || !strings.Contains(out, "describe") || !strings.Contains(out, "exporter") {
		t.Fatalf("main help: exit %d\n%s", code, out)
	}
}

func TestVersion(t *testing.T) {
	code, out, _ := runCLI(t, "version")
	if code != exitOK || !strings.HasPrefix(out, "krabka-coord "+version+" (go") || !strings.Contains(out, "franz-go") {
		t.Fatalf("exit %d: %q", code, out)
	}
}

func TestBadCommandLinesExit2(t *testing.T) {
	cases := [][]string{
		{},
		{"frobnicate"},
		{"-b", "k:1", "describe"},
		{"-b", "k:1", "describe", ""},
		{"-b", "k:1", "describe", "-o", "yaml", "r"},
		{"-b", "k:1", "describe", "--no-such-flag", "r"},
		{"-b", "k:1", "leave", "r"},
		{"-b", "k:1", "exporter"},
		{"-b", "k:1", "exporter", "--all-roles", "r"},
		{"-b", "k:1", "watch"},
		{"-b", "k:1", "check", "extra"},
		{"-b", "k:1", "check", "--role", ""},
	}
	for _, args := range cases {
		code, _, errs := runCLI(t, args...)
		if code != exitUsage {
			t.Errorf("%q: exit %d, want %d (stderr %q)", args, code, exitUsage, errs)
		}
		if errs == "" {
			t.Errorf("%q: no message", args)
		}
	}
}

func TestFlagsAfterPositionalArguments(t *testing.T) {
	o := newOptions()
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	describeCommand.flags(fs, o)
	pos, err := parseInterleaved(fs, []string{"r1", "-o", "json", "r2", "--", "-r3"})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(pos, ",") != "r1,r2,-r3" || o.output != "json" {
		t.Fatalf("pos %q output %q", pos, o.output)
	}
}

func TestUnreachableBootstrapFailsCheck(t *testing.T) {
	// Port 1 on the loopback: nothing listens there.
	code, out, _ := runCLI(t, "-b", "127.0.0.1:1", "check")
	if code != exitCheck {
		t.Fatalf("exit %d, want %d:\n%s", code, exitCheck, out)
	}
	if !strings.HasPrefix(out, "FAIL  reachable") || !strings.Contains(out, "connection refused") || !strings.Contains(out, "fix: check bootstrap.servers") {
		t.Fatalf("output:\n%s", out)
	}
}

func TestACLJudgement(t *testing.T) {
	acl := func(principal, perm, pattern, name, op string) kafka.ACL {
		return kafka.ACL{Principal: principal, Host: "*", ResourceType: "TRANSACTIONAL_ID", ResourceName: name,
			Pattern: pattern, Operation: op, Permission: perm}
	}
	cases := []struct {
		name    string
		acls    []kafka.ACL
		granted string
		missing string
	}{
		{"prefixed WRITE implies DESCRIBE", []kafka.ACL{acl("User:alice", "ALLOW", "PREFIXED", "alice.", "WRITE")}, "WRITE,DESCRIBE", ""},
		{"a shorter prefix covers", []kafka.ACL{acl("User:alice", "ALLOW", "PREFIXED", "al", "ALL")}, "WRITE,DESCRIBE", ""},
		{"a longer prefix does not", []kafka.ACL{acl("User:alice", "ALLOW", "PREFIXED", "alice.x", "ALL")}, "", "WRITE,DESCRIBE"},
		{"a literal id does not cover the prefix", []kafka.ACL{acl("User:alice", "ALLOW", "LITERAL", "alice.", "ALL")}, "", "WRITE,DESCRIBE"},
		{"wildcard literal", []kafka.ACL{acl("User:*", "ALLOW", "LITERAL", "*", "DESCRIBE")}, "DESCRIBE", "WRITE"},
		{"other principal", []kafka.ACL{acl("User:bob", "ALLOW", "PREFIXED", "alice.", "ALL")}, "", "WRITE,DESCRIBE"},
		{"deny wins", []kafka.ACL{acl("User:alice", "ALLOW", "PREFIXED", "alice.", "ALL"), acl("User:alice", "DENY", "PREFIXED", "a", "WRITE")}, "DESCRIBE", "WRITE"},
	}
	for _, c := range cases {
		g, m, _ := allowed(c.acls, "User:alice", "TRANSACTIONAL_ID", "alice.", true, []string{"WRITE", "DESCRIBE"})
		if strings.Join(g, ",") != c.granted || strings.Join(m, ",") != c.missing {
			t.Errorf("%s: granted %v missing %v, want %q %q", c.name, g, m, c.granted, c.missing)
		}
	}
}

func TestExporterCountsFailoversBetweenLeases(t *testing.T) {
	s := newExporterState(nil)
	at := time.UnixMilli(1_000_000)
	lease := func(m string, id int64, epoch int16, deadline int64) *core.Lease {
		return &core.Lease{Member: core.MustMemberID(m), Token: core.FencingToken{ProducerID: id, ProducerEpoch: epoch}, GrantedAt: deadline - 30000, Deadline: deadline}
	}
	step := func(l *core.Lease, wantFailovers float64, wantChange time.Time) {
		t.Helper()
		at = at.Add(time.Second)
		s.observe("r", l, 2, at)
		v := s.roles["r"]
		if v.failovers != wantFailovers || !v.lastChange.Equal(wantChange) {
			t.Fatalf("after %+v: failovers %v last change %v, want %v %v", l, v.failovers, v.lastChange, wantFailovers, wantChange)
		}
	}
	first := at.Add(time.Second)
	step(lease("a", 7, 0, 5000), 0, first)                // first look: no failover
	step(lease("a", 7, 0, 9000), 0, first)                // a renewal
	step(lease("b", 7, 2, 12000), 1, at.Add(time.Second)) // b took over
	step(nil, 1, at.Add(time.Second))                     // lease cleared
	step(lease("b", 7, 4, 20000), 2, at.Add(time.Second)) // b again, new token: a failover
	step(lease("b", 7, 4, 25000), 2, at)                  // renewal
}

// The txn freeze line of check (issue 34): the freeze an abandoned lease
// transaction causes (the transaction timeout, capped at the lease and by
// the broker's transaction.max.timeout.ms, plus the broker's scan for
// timed-out transactions) against krabka.lease.ms - krabka.renew.interval.ms.
func TestTxnFreezeJudgement(t *testing.T) {
	conf := func(kv ...string) coord.Config {
		c := coord.DefaultConfig()
		for i := 0; i+1 < len(kv); i += 2 {
			if err := c.Set(kv[i], kv[i+1]); err != nil {
				t.Fatal(err)
			}
		}
		return c
	}
	cases := []struct {
		name          string
		cfg           coord.Config
		maxMs, scanMs int64
		status        string
		has           []string // in the detail
		fix           []string // in the fix (none: no fix)
	}{
		{"defaults on a 1 s scan", conf(), 900000, 1000, "OK",
			[]string{"up to 11000 ms: krabka.txn.timeout.ms=10000, plus transaction.abort.timed.out.transaction.cleanup.interval.ms=1000;", "= 20000"}, nil},
		{"defaults on Kafka's 10 s scan", conf(), 900000, 10000, "WARN",
			[]string{"up to 20000 ms", "not below krabka.lease.ms - krabka.renew.interval.ms = 20000"},
			[]string{"transaction.abort.timed.out.transaction.cleanup.interval.ms=1000 in every broker's server.properties", "lower krabka.txn.timeout.ms below 10000"}},
		{"one millisecond below the room", conf("krabka.txn.timeout.ms", "18999"), 900000, 1000, "OK", []string{"up to 19999 ms"}, nil},
		{"exactly the room", conf("krabka.txn.timeout.ms", "19000"), 900000, 1000, "WARN", []string{"up to 20000 ms"},
			[]string{"lower krabka.txn.timeout.ms below 19000"}},
		{"the old behaviour: the lease as the timeout", conf("krabka.txn.timeout.ms", "30000"), 900000, 1000, "WARN", []string{"up to 31000 ms"}, nil},
		{"capped at the lease", conf("krabka.lease.ms", "3000", "krabka.renew.interval.ms", "1000"), 900000, 1000, "WARN",
			[]string{"krabka.txn.timeout.ms=10000 capped at krabka.lease.ms=3000, plus ", "up to 4000 ms", "= 2000"},
			[]string{"lower krabka.txn.timeout.ms below 1000"}},
		{"capped by the broker's maximum", conf("krabka.lease.ms", "90000", "krabka.renew.interval.ms", "30000", "krabka.txn.timeout.ms", "60000"), 15000, 1000, "OK",
			[]string{"krabka.txn.timeout.ms=60000 capped by the broker's transaction.max.timeout.ms=15000, plus ", "up to 16000 ms", "= 60000"}, nil},
		{"capped at the lease and by the broker's maximum", conf("krabka.lease.ms", "20000", "krabka.renew.interval.ms", "5000", "krabka.txn.timeout.ms", "60000"), 12000, 1000, "OK",
			[]string{"krabka.txn.timeout.ms=60000 capped at krabka.lease.ms=20000 and by the broker's transaction.max.timeout.ms=12000, plus ", "up to 13000 ms", "= 15000"}, nil},
		{"no room left for a shorter timeout", conf("krabka.lease.ms", "3000", "krabka.renew.interval.ms", "1000"), 900000, 5000, "WARN",
			[]string{"up to 8000 ms"}, []string{"=1000 in every broker's", "lengthen krabka.lease.ms or shorten krabka.renew.interval.ms"}},
		{"not readable: Kafka's defaults", conf(), -1, -1, "WARN",
			[]string{"up to 20000 ms", "transaction.max.timeout.ms and transaction.abort.timed.out.transaction.cleanup.interval.ms not readable"}, []string{"=1000 in every broker's"}},
	}
	for _, c := range cases {
		l := judgeTxnFreeze(c.cfg, c.maxMs, c.scanMs)
		if l.Status != c.status || l.Check != "txn freeze" {
			t.Errorf("%s: %s %s, want %s: %s", c.name, l.Status, l.Check, c.status, l.Detail)
		}
		for _, h := range c.has {
			if !strings.Contains(l.Detail, h) {
				t.Errorf("%s: detail lacks %q: %s", c.name, h, l.Detail)
			}
		}
		if (l.Fix == "") != (c.status == "OK") {
			t.Errorf("%s: %s with fix %q", c.name, l.Status, l.Fix)
		}
		for _, f := range c.fix {
			if !strings.Contains(l.Fix, f) {
				t.Errorf("%s: fix lacks %q: %s", c.name, f, l.Fix)
			}
		}
	}
	// A scan already at 1 s is not advised again.
	if l := judgeTxnFreeze(conf("krabka.txn.timeout.ms", "19000"), 900000, 1000); strings.Contains(l.Fix, "server.properties") {
		t.Errorf("fix with a 1 s scan: %s", l.Fix)
	}
}

func TestColdStartVerdict(t *testing.T) {
	ti := kafka.TopicInfo{Name: "coord", Partitions: 4, Configs: map[string]string{"segment.ms": "300000", "segment.bytes": "8388608"}}
	largest := kafka.PartitionSpan{Partition: 2, Start: 100, End: 5100}
	st, detail, fix := coldStartVerdict(ti, 9000, largest, 4000, 37, 800*time.Millisecond, 10000)
	want := "coord: a new member reads up to 9000 offsets over 4 partitions; the largest, partition 2 (5000 offsets, 4000 records of 37 roles), read and folded in 800 ms (segment.ms=300000, segment.bytes=8388608)"
	if st != "OK" || detail != want || fix != "" {
		t.Fatalf("fast fold: %s %q %q", st, detail, fix)
	}
	// A fold of the largest partition slower than the renew interval warns,
	// with the settings of a new topic as the fix.
	ti.Configs = map[string]string{"segment.ms": "604800000"}
	st, detail, fix = coldStartVerdict(ti, 9000, largest, 4000, 37, 12*time.Second, 10000)
	if st != "WARN" || !strings.Contains(detail, "read and folded in 12000 ms (segment.ms=604800000, segment.bytes=unknown): longer than krabka.renew.interval.ms=10000") ||
		!strings.Contains(fix, "--entity-name coord --add-config segment.ms="+kafka.TopicConfigs["segment.ms"]+",segment.bytes="+kafka.TopicConfigs["segment.bytes"]) {
		t.Fatalf("slow fold: %s %q %q", st, detail, fix)
	}
}
