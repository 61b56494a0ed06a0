package main

// Tests of run that need no broker: its command line, the watchdog on its
// own (a child it is never fed about again dies before the deadline it was
// given), the stop plan, and the write channel's line reader.

import (
	"bufio"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestRunBadCommandLines(t *testing.T) {
	dir := t.TempDir()
	plain := filepath.Join(dir, "not-executable")
	os.WriteFile(plain, []byte("#!/bin/sh\n"), 0o644)
	cases := []struct {
		args []string
		code int
		want string
	}{
		{[]string{"run", "r", "m", "echo", "hi"}, exitUsage, "put -- between MEMBER and the command"},
		{[]string{"run", "r"}, exitUsage, "run needs ROLE MEMBER -- CMD"},
		{[]string{"run", "r", "m", "--"}, exitUsage, "no command after --"},
		{[]string{"run", "r", "m", "x", "--", "true"}, exitUsage, "exactly ROLE and MEMBER before --"},
		{[]string{"run", "--no-such-flag", "r", "m", "--", "true"}, exitUsage, "flag provided but not defined"},
		{[]string{"run", "", "m", "--", "true"}, exitUsage, "role"},
		{[]string{"run", "r", "", "--", "true"}, exitUsage, "member"},
		{[]string{"run", "--margin", "soon", "r", "m", "--", "true"}, exitUsage, "not a duration"},
		// Default lease 30 s, renew interval 10 s: the margin must stay below 20 s.
		{[]string{"run", "--margin", "20s", "r", "m", "--", "true"}, exitUsage, "--margin 20s must be above 0 and below"},
		{[]string{"run", "--margin", "1s", "--grace", "1s", "r", "m", "--", "true"}, exitUsage, "--grace 1s must be at least 0 and below --margin 1s"},
		{[]string{"run", "--grace", "-1s", "r", "m", "--", "true"}, exitUsage, "--grace -1s"},
		// The margin is krabka.lease.stop.margin.ms: set by the key, --margin
		// sets the key, and the key's rules apply to --margin.
		{[]string{"-X", "krabka.lease.stop.margin.ms=1000", "run", "--grace", "1s", "r", "m", "--", "true"}, exitUsage, "--grace 1s must be at least 0 and below --margin 1s"},
		{[]string{"run", "--grace", "5s", "r", "m", "--", "true"}, exitUsage, "--grace 5s must be at least 0 and below --margin 5s"},
		{[]string{"-X", "krabka.lease.risk.margin.ms=3000", "run", "--margin", "4s", "r", "m", "--", "true"}, exitUsage, "krabka.lease.stop.margin.ms"},
		{[]string{"run", "--key-sep", ",", "r", "m", "--", "true"}, exitUsage, "need --topic"},
		{[]string{"run", "--topic", "no spaces", "r", "m", "--", "true"}, exitUsage, "not a legal Kafka topic name"},
		{[]string{"run", "--topic", "t", "--partition", "-2", "r", "m", "--", "true"}, exitUsage, "--partition -2"},
		{[]string{"run", "r", "m", "--", "/nonexistent/krabka-cmd"}, exitNotFoundCmd, "CMD /nonexistent/krabka-cmd"},
		{[]string{"run", "r", "m", "--", "krabka-no-such-command"}, exitNotFoundCmd, "executable file not found"},
		{[]string{"run", "r", "m", "--", plain}, exitCannotStart, "permission denied"},
	}
	for _, c := range cases {
		code, _, errs := runCLI(t, append([]string{"-b", "127.0.0.1:1"}, c.args...)...)
		if code != c.code || !strings.Contains(errs, c.want) {
			t.Errorf("%q: exit %d, stderr %q; want %d and %q", c.args, code, errs, c.code, c.want)
		}
	}
}

func TestScheduleNeverMovesTheKillLater(t *testing.T) {
	s := newSchedule(800*time.Millisecond, 400*time.Millisecond)
	if p := s.forDeadline(10_000); p != (plan{9_200, 9_600, 10_000}) {
		t.Fatalf("%+v", p)
	}
	// A loss long before the margin: SIGTERM now, SIGKILL a grace later.
	if p := s.stopNow(5_000); p != (plan{5_000, 5_400, 10_000}) {
		t.Fatalf("%+v", p)
	}
	// A loss after the planned SIGTERM: the plan stands.
	s.forDeadline(10_000)
	if p := s.stopNow(9_500); p != (plan{9_200, 9_600, 10_000}) {
		t.Fatalf("%+v", p)
	}
}

// The watchdog given a plan and never fed again (what a paused run looks
// like from its side) ends a child that ignores SIGTERM with SIGKILL, before
// the deadline it was given.
func TestWatchdogKillsAChildItIsNotFedAbout(t *testing.T) {
	errf, err := os.Create(filepath.Join(t.TempDir(), "watchdog.err"))
	if err != nil {
		t.Fatal(err)
	}
	defer errf.Close()
	wd, err := startWatchdog(errf)
	if err != nil {
		t.Fatal(err)
	}
	defer wd.close()
	now := time.Now().UnixMilli()
	p := plan{term: now + 300, kill: now + 700, deadline: now + 1200}
	wd.send(p)
	// The shell and its sleep both ignore SIGTERM (an ignored signal stays
	// ignored across exec).
	c, err := startChild("/bin/sh", []string{"sh", "-c", "trap '' TERM; sleep 60; exit 0"}, os.Environ(), wd, os.Stdout, os.Stderr)
	if err != nil {
		t.Fatal(err)
	}
	var st childStatus
	select {
	case st = <-c.status:
	case <-time.After(bound):
		t.Fatal("the child was not ended")
	}
	ws, ok := st.state.Sys().(syscall.WaitStatus)
	if !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("child ended %s, want by SIGKILL", st.describe())
	}
	b, _ := os.ReadFile(errf.Name())
	m := regexp.MustCompile(`child \d+ ended at=(\d+) stop_began=(\d+) deadline=(\d+) `).FindStringSubmatch(string(b))
	if m == nil {
		t.Fatalf("no end report:\n%s", b)
	}
	if at := mustInt(t, m[1]); at >= p.deadline || mustInt(t, m[3]) != p.deadline || mustInt(t, m[2]) < p.term {
		t.Fatalf("report %q for plan %+v", m[0], p)
	}
	if st.code() != 128+9 {
		t.Fatalf("code %d", st.code())
	}
}

func mustInt(t *testing.T, s string) int64 {
	t.Helper()
	var n int64
	for _, c := range s {
		if c < '0' || c > '9' {
			t.Fatalf("not a number: %q", s)
		}
		n = n*10 + int64(c-'0')
	}
	return n
}

func TestWriteChannelLineReader(t *testing.T) {
	long := strings.Repeat("x", maxLine+1)
	exact := strings.Repeat("y", maxLine)
	in := "a\n\nkey value\n" + long + "\n" + exact + "\nlast"
	r := bufio.NewReaderSize(strings.NewReader(in), 64<<10)
	type got struct {
		line    string
		tooLong bool
		err     bool
	}
	var all []got
	for {
		line, tooLong, err := readLine(r)
		if line == nil && !tooLong {
			break
		}
		all = append(all, got{string(line), tooLong, err != nil})
	}
	want := []got{{"a", false, false}, {"", false, false}, {"key value", false, false}, {"", true, false}, {exact, false, false}, {"last", false, true}}
	if len(all) != len(want) {
		t.Fatalf("%d lines, want %d", len(all), len(want))
	}
	for i := range want {
		if all[i] != want[i] {
			t.Errorf("line %d: %q %t %t, want %q %t %t", i, trunc(all[i].line), all[i].tooLong, all[i].err, trunc(want[i].line), want[i].tooLong, want[i].err)
		}
	}
}

func trunc(s string) string {
	if len(s) > 20 {
		return s[:20] + "..."
	}
	return s
}
