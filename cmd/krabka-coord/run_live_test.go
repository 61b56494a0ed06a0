package main

// krabka-coord run on real brokers: two run processes on one role across a
// SIGKILL of the holding run, a SIGSTOP of it past the lease and a cut link
// between it and the brokers (never two children alive at once, checked
// from the timestamps the children write), and the write channel of a
// child deposed mid-stream (its later writes refused, none in the log).
//
// The children are this test binary again (KRABKA_RUN_TEST_CHILD selects
// the helper in init): they append timestamped lines with their pid to a
// file, and the writer uses the write channel.

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/krabka/krabka-coord/tests/kafka/faultproxy"
	"github.com/krabka/krabka-coord/tests/kafka/kafkatest"
)

func init() {
	if mode := os.Getenv("KRABKA_RUN_TEST_CHILD"); mode != "" {
		os.Exit(testChild(mode))
	}
}

// testChild is the child that run starts in these tests. Every line it
// writes is one write(2) on a file opened O_APPEND, with a microsecond
// timestamp and its pid:
//
//	start US PID MEMBER TOKEN DEADLINE_MS WRITE_SOCKET
//	alive US PID                        every 20 ms
//	term US PID                         SIGTERM arrived (ignored: it goes on)
//	send US PID VALUE                   (writer) a line sent on the write channel
//	ack US PID VALUE ANSWER...          (writer) its answer
//	closed US PID ERROR                 (writer) the channel failed
func testChild(mode string) int {
	f, err := os.OpenFile(os.Getenv("KRABKA_RUN_TEST_FILE"), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		fmt.Fprintln(os.Stderr, "test child:", err)
		return 3
	}
	pid := os.Getpid()
	now := func() int64 { return time.Now().UnixMicro() }
	say := func(format string, args ...any) { f.WriteString(fmt.Sprintf(format, args...) + "\n") }
	terms := make(chan os.Signal, 8)
	signal.Notify(terms, syscall.SIGTERM)
	go func() {
		for range terms {
			say("term %d %d", now(), pid)
		}
	}()
	orDash := func(s string) string {
		if s == "" {
			return "-"
		}
		return s
	}
	member := os.Getenv("KRABKA_MEMBER")
	say("start %d %d %s %s %s %s", now(), pid, orDash(member), orDash(os.Getenv("KRABKA_TOKEN")),
		orDash(os.Getenv("KRABKA_LEASE_DEADLINE_MS")), orDash(os.Getenv("KRABKA_WRITE")))
	if mode == "writer" {
		conn, err := net.Dial("unix", os.Getenv("KRABKA_WRITE"))
		if err != nil {
			say("closed %d %d %v", now(), pid, err)
		} else {
			r := bufio.NewReader(conn)
			for n := 0; ; n++ {
				v := fmt.Sprintf("v-%s-%d-%d", member, pid, n)
				say("send %d %d %s", now(), pid, v)
				if _, err := conn.Write([]byte(v + "\n")); err != nil {
					say("closed %d %d %v", now(), pid, err)
					break
				}
				ans, err := r.ReadString('\n')
				if err != nil {
					say("closed %d %d %v", now(), pid, err)
					break
				}
				say("ack %d %d %s %s", now(), pid, v, strings.TrimSpace(ans))
				time.Sleep(10 * time.Millisecond)
			}
		}
	}
	for {
		say("alive %d %d", now(), pid)
		time.Sleep(20 * time.Millisecond)
	}
}

// childLife is what one child wrote.
type childLife struct {
	pid            int
	member, token  string
	deadline       int64 // KRABKA_LEASE_DEADLINE_MS
	write          string
	start, last    int64 // µs
	terms          []int64
	sends          []string
	acks           []childAck
	firstErr, errs int // index in acks of the first ERR (-1: none), number of ERRs
}

type childAck struct {
	value  string
	answer []string // "OK" p o token deadline, or "ERR" CODE ...
}

func readLives(t *testing.T, file string) []*childLife {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	// A line being appended while the file is read may show in part: read
	// up to the last complete line.
	b = b[:bytes.LastIndexByte(b, '\n')+1]
	by := map[int]*childLife{}
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if l == "" {
			continue
		}
		f := strings.Fields(l)
		if len(f) < 3 {
			t.Fatalf("bad child line %q", l)
		}
		us, _ := strconv.ParseInt(f[1], 10, 64)
		pid, _ := strconv.Atoi(f[2])
		c := by[pid]
		if c == nil {
			c = &childLife{pid: pid, firstErr: -1}
			by[pid] = c
		}
		// Lines of one child come from two goroutines (the SIGTERM
		// handler's may be written after a later "alive"): keep the latest.
		c.last = max(c.last, us)
		switch f[0] {
		case "start":
			c.start, c.member, c.token, c.write = us, f[3], f[4], f[6]
			c.deadline, _ = strconv.ParseInt(f[5], 10, 64)
		case "term":
			c.terms = append(c.terms, us)
		case "send":
			c.sends = append(c.sends, f[3])
		case "ack":
			a := childAck{value: f[3], answer: f[4:]}
			if f[4] == "ERR" {
				if c.firstErr < 0 {
					c.firstErr = len(c.acks)
				}
				c.errs++
			}
			c.acks = append(c.acks, a)
		}
	}
	var out []*childLife
	for _, c := range by {
		if c.start == 0 {
			t.Fatalf("child %d has no start line", c.pid)
		}
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].start < out[j].start })
	return out
}

// runProc is a krabka-coord run process; its stderr lines are collected
// (the child's and the watchdog's lines go there too).
type runProc struct {
	name string
	cmd  *exec.Cmd
	ch   chan string
	done chan struct{}
	err  error
	mu   sync.Mutex
	all  []string
}

func startRun(t *testing.T, name string, env []string, args ...string) *runProc {
	t.Helper()
	cmd := exec.Command(cliBin(t), args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout = &prefixWriter{t: t, prefix: name + " stdout: "}
	errp, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &runProc{name: name, cmd: cmd, ch: make(chan string, 10000), done: make(chan struct{})}
	go func() {
		sc := bufio.NewScanner(errp)
		for sc.Scan() {
			l := sc.Text()
			t.Logf("%s: %s", name, l)
			p.mu.Lock()
			p.all = append(p.all, l)
			p.mu.Unlock()
			select {
			case p.ch <- l:
			default:
			}
		}
		p.err = cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		syscall.Kill(cmd.Process.Pid, syscall.SIGCONT)
		select {
		case <-p.done:
		default:
			cmd.Process.Kill()
			<-p.done
		}
	})
	return p
}

// next returns the next stderr line matching re (failing at the bound).
func (p *runProc) next(t *testing.T, re *regexp.Regexp) []string {
	t.Helper()
	timer := time.NewTimer(bound)
	defer timer.Stop()
	for {
		select {
		case l := <-p.ch:
			if m := re.FindStringSubmatch(l); m != nil {
				return m
			}
		case <-p.done:
			// Drain what is left, then give up.
			for {
				select {
				case l := <-p.ch:
					if m := re.FindStringSubmatch(l); m != nil {
						return m
					}
				default:
					t.Fatalf("%s ended (%v) before a line matching %s", p.name, p.err, re)
				}
			}
		case <-timer.C:
			t.Fatalf("%s: no line matching %s", p.name, re)
		}
	}
}

func (p *runProc) signal(t *testing.T, sig syscall.Signal) {
	t.Helper()
	if err := syscall.Kill(p.cmd.Process.Pid, sig); err != nil {
		t.Fatalf("%s: %s: %v", p.name, sig, err)
	}
}

// exit waits for the process and returns its exit code (-1 for a signal).
func (p *runProc) exit(t *testing.T) int {
	t.Helper()
	select {
	case <-p.done:
	case <-time.After(bound):
		t.Fatalf("%s did not end", p.name)
	}
	if p.cmd.ProcessState == nil {
		t.Fatalf("%s: %v", p.name, p.err)
	}
	return p.cmd.ProcessState.ExitCode()
}

// saw reports whether a stderr line so far matches re.
func (p *runProc) saw(re *regexp.Regexp) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, l := range p.all {
		if re.MatchString(l) {
			return true
		}
	}
	return false
}

// ends are the watchdog's reports of the children's deaths, by pid.
type childEnd struct {
	at, stopBegan, deadline int64 // ms
}

var reEnded = regexp.MustCompile(`watchdog: child (\d+) ended at=(\d+) stop_began=(\d+) deadline=(\d+) `)

func (p *runProc) ends() map[int]childEnd {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := map[int]childEnd{}
	for _, l := range p.all {
		if m := reEnded.FindStringSubmatch(l); m != nil {
			pid, _ := strconv.Atoi(m[1])
			var e childEnd
			e.at, _ = strconv.ParseInt(m[2], 10, 64)
			e.stopBegan, _ = strconv.ParseInt(m[3], 10, 64)
			e.deadline, _ = strconv.ParseInt(m[4], 10, 64)
			out[pid] = e
		}
	}
	return out
}

// waitRegistered waits until member is in the role's roster.
func waitRegistered(t *testing.T, bs, role, member string) {
	t.Helper()
	deadline := time.Now().Add(bound)
	for {
		for _, r := range describeJSON(t, bs, role).Roster {
			if r.Member == member {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never registered in %s", member, role)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Short leases: a failover takes a few seconds. The stop margin is then
// 750 ms (krabka.lease.stop.margin.ms's default: half the risk margin,
// which is half of lease - renew) and the grace 375 ms: the watchdog's
// SIGKILL lands 375 ms before the deadline.
var runLease = []string{"-X", "krabka.lease.ms=4000", "-X", "krabka.renew.interval.ms=1000",
	"-X", "krabka.challenge.stagger.ms=500", "-X", "request.timeout.ms=1500"}

// The tests that assert the child's death before the deadline give the
// watchdog a wider lead, so that a loaded machine (make test on 2 shared
// cores) does not eat it: a 6 s lease, SIGTERM 2 s before the deadline,
// SIGKILL 500 ms later, 1.5 s before it. CMD is stopped at risk only after
// 3 s without a successful renewal.
var (
	safeLease = []string{"-X", "krabka.lease.ms=6000", "-X", "krabka.renew.interval.ms=1000",
		"-X", "krabka.challenge.stagger.ms=500", "-X", "request.timeout.ms=1500"}
	safeStop = []string{"--margin", "2s", "--grace", "500ms"}
)

// runArgs is -b BS, the lease settings, then run with flags.
func runArgs(bs string, lease []string, flags ...string) []string {
	args := append([]string{"-b", bs}, lease...)
	return append(append(args, "run"), flags...)
}

func selfExe(t *testing.T) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return exe
}

var (
	reWon  = regexp.MustCompile(`: won as (\S+), token (\S+), lease deadline (\d+) .*pid (\d+)$`)
	reLost = regexp.MustCompile(`: lost the role \((FENCED|EXPIRED|AT_RISK);`)
)

func reCampaign(member string) *regexp.Regexp {
	return regexp.MustCompile(`: campaigning as ` + regexp.QuoteMeta(member) + `$`)
}

// lossFigure is one measured loss: when the stop began, when the child was
// seen dead, the lease deadline then, and when the next child started.
type lossFigure struct {
	kind                    string
	stopBegan, died, dl     int64 // ms
	nextStart               int64 // ms
	lossToDeath, beforeDead int64
}

func TestRunNeverTwoChildrenAcrossKillStopAndCut(t *testing.T) {
	c := kafkatest.Start(t, kafkatest.Options{ExtraListeners: 1})
	// a reaches the brokers only through these proxies (the brokers
	// advertise them on the extra listener); b connects directly.
	var g faultproxy.Group
	for _, x := range c.Extra[0] {
		p, err := faultproxy.Listen(x.Advertised, x.Listen)
		if err != nil {
			t.Fatal(err)
		}
		g = append(g, p)
	}
	defer g.Close()
	role := uniqueRole("cli-run")
	file := filepath.Join(t.TempDir(), "children.log")
	env := []string{"KRABKA_RUN_TEST_CHILD=lines", "KRABKA_RUN_TEST_FILE=" + file}
	start := func(name, member, bs string) *runProc {
		args := runArgs(bs, safeLease, append(safeStop, "--requeue")...)
		return startRun(t, name, env, append(args, role, member, "--", selfExe(t))...)
	}

	a := start("a1", "a", g.Bootstrap())
	a.next(t, reWon)
	b := start("b1", "b", c.Bootstrap)
	waitRegistered(t, c.Bootstrap, role, "b")

	// 1. SIGKILL of the holding run: its child dies with it (parent-death
	// signal), b takes over at the lease deadline.
	a.signal(t, syscall.SIGKILL)
	a.exit(t)
	if m := b.next(t, reWon); m[1] != "b" {
		t.Fatalf("won by %s", m[1])
	}
	a2 := start("a2", "a", g.Bootstrap())
	waitRegistered(t, c.Bootstrap, role, "a")

	// 2. SIGSTOP of the holding run past the lease: its watchdog kills the
	// child before the deadline, a takes over; b, resumed, finds itself
	// fenced and queues again.
	b.signal(t, syscall.SIGSTOP)
	a2.next(t, reWon)
	b.signal(t, syscall.SIGCONT)
	// FENCED (its view shows a's lease, or the broker refuses it), or
	// EXPIRED when a renewal was in flight as it was stopped (it fails at
	// the deadline it was bounded by). Not AT_RISK: a took over.
	if m := b.next(t, reLost); m[1] != "FENCED" && m[1] != "EXPIRED" {
		t.Errorf("b after its pause: lost %s, want FENCED or EXPIRED", m[1])
	}
	b.next(t, reCampaign("b"))
	waitRegistered(t, c.Bootstrap, role, "b")

	// 3. The link between the holding run and the brokers is cut: its
	// renewals fail, the child is killed before the deadline, b takes over.
	g.Cut()
	b.next(t, reWon)
	if m := a2.next(t, reLost); m[1] != "EXPIRED" {
		t.Errorf("a after the cut: lost %s, want EXPIRED", m[1])
	}
	g.Heal()
	a2.next(t, reCampaign("a"))
	waitRegistered(t, c.Bootstrap, role, "a")

	b.signal(t, syscall.SIGKILL)
	a2.signal(t, syscall.SIGKILL)
	b.exit(t)
	a2.exit(t)

	lives := readLives(t, file)
	ends := map[int]childEnd{}
	for _, p := range []*runProc{a, b, a2} {
		for pid, e := range p.ends() {
			ends[pid] = e
		}
	}
	for _, l := range lives {
		t.Logf("child %d (%s, token %s): start %d, last line %d, SIGTERMs %d", l.pid, l.member, l.token, l.start/1000, l.last/1000, len(l.terms))
	}
	if len(lives) < 4 {
		t.Fatalf("%d children, want a1, b1, a2, b2 at least", len(lives))
	}
	want := []string{"a", "b", "a", "b"}
	for i, w := range want {
		if lives[i].member != w {
			t.Fatalf("child %d is %s's, want %s's (order a, b, a, b)", i, lives[i].member, w)
		}
	}
	// The safety property: never two children alive at once.
	kinds := []string{"SIGKILL of run", "SIGSTOP of run past the lease", "cut link"}
	var figs []lossFigure
	for i := 1; i < len(lives); i++ {
		prev, next := lives[i-1], lives[i]
		if next.start <= prev.last {
			t.Errorf("child %d (%s) started at %d µs, before child %d (%s) wrote its last line at %d µs",
				next.pid, next.member, next.start, prev.pid, prev.member, prev.last)
		}
		e, ok := ends[prev.pid]
		if !ok {
			t.Errorf("no watchdog report of the end of child %d", prev.pid)
			continue
		}
		if next.start/1000 <= e.at {
			t.Errorf("child %d started at %d ms, the watchdog saw child %d end at %d ms", next.pid, next.start/1000, prev.pid, e.at)
		}
		if e.at >= e.deadline {
			t.Errorf("child %d ended at %d ms, not before the lease deadline %d", prev.pid, e.at, e.deadline)
		}
		if i <= len(kinds) {
			figs = append(figs, lossFigure{kind: kinds[i-1], stopBegan: e.stopBegan, died: e.at, dl: e.deadline,
				nextStart: next.start / 1000, lossToDeath: e.at - e.stopBegan, beforeDead: e.deadline - e.at})
		}
	}
	for _, f := range figs {
		t.Logf("RUN-TIMING %-30s loss_to_death_ms=%d child_dead_before_deadline_ms=%d next_child_after_death_ms=%d",
			f.kind, f.lossToDeath, f.beforeDead, f.nextStart-f.died)
	}
	// The SIGSTOP and the cut: the watchdog sent SIGTERM at the margin
	// before the deadline, then SIGKILL (the child ignores SIGTERM).
	for i, l := range lives[1:3] {
		p := []*runProc{b, a2}[i]
		if !p.saw(regexp.MustCompile(`watchdog: SIGTERM to process group `+strconv.Itoa(l.pid)+` `)) ||
			!p.saw(regexp.MustCompile(`watchdog: SIGKILL to process group `+strconv.Itoa(l.pid)+` `)) {
			t.Errorf("child %d: no SIGTERM then SIGKILL from the watchdog", l.pid)
		}
	}
}

// waitAcked waits until the child holding token has a write acknowledged.
func waitAcked(t *testing.T, file, token string) {
	t.Helper()
	for deadline := time.Now().Add(bound); ; {
		for _, l := range readLives(t, file) {
			if l.token != token {
				continue
			}
			for _, a := range l.acks {
				if a.answer[0] == "OK" {
					return
				}
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the child with token %s had no write acknowledged", token)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// readTopic reads the committed data records of a one-partition topic
// (read_committed, up to the stable offset). Control records are kept so
// that every offset below the stable offset is seen (a transactional
// partition ends in a marker), then dropped.
func readTopic(t *testing.T, bs, topic string) []*kgo.Record {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	listed, err := admin(t, bs).ListCommittedOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	stable := listed[topic][0].Offset
	cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(bs, ",")...), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.KeepControlRecords(), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var out []*kgo.Record
	for next := int64(0); next < stable; {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("reading %s: %v (at %d of %d)", topic, err, next, stable)
		}
		fs.EachError(func(_ string, _ int32, err error) { t.Fatalf("reading %s: %v", topic, err) })
		fs.EachRecord(func(r *kgo.Record) {
			if r.Offset >= stable {
				return
			}
			next = r.Offset + 1
			if !r.Attrs.IsControl() {
				out = append(out, r)
			}
		})
	}
	return out
}

// checkLog checks the command log against what a deposed child was told:
// every OK value is in the log at its offset under the child's token, no
// value it got ERR for (nor one sent after its first ERR) is there, and
// every record of its token comes before the first record of the next.
func checkLog(t *testing.T, recs []*kgo.Record, old *childLife, newTok string) {
	t.Helper()
	byValue := map[string]*kgo.Record{}
	firstNew := int64(-1)
	lastOld := int64(-1)
	for _, r := range recs {
		v := string(r.Value)
		if _, dup := byValue[v]; dup {
			t.Errorf("value %s is in the log twice", v)
		}
		byValue[v] = r
		tok := fmt.Sprintf("%d:%d", r.ProducerID, r.ProducerEpoch)
		if tok == newTok && firstNew < 0 {
			firstNew = r.Offset
		}
		if tok == old.token {
			lastOld = r.Offset
		}
	}
	oks := 0
	for i, a := range old.acks {
		r := byValue[a.value]
		if a.answer[0] != "OK" {
			if r != nil {
				t.Errorf("%s was refused (%v) but is in the log at offset %d", a.value, a.answer, r.Offset)
			}
			continue
		}
		oks++
		if old.firstErr >= 0 && i > old.firstErr {
			t.Errorf("%s acknowledged OK after the first refusal", a.value)
		}
		if r == nil {
			t.Errorf("acknowledged %s (%v) is not in the log", a.value, a.answer)
			continue
		}
		if off := strconv.FormatInt(r.Offset, 10); off != a.answer[2] || fmt.Sprintf("%d:%d", r.ProducerID, r.ProducerEpoch) != old.token {
			t.Errorf("%s: log offset %s token %d:%d, answer %v, child token %s", a.value, off, r.ProducerID, r.ProducerEpoch, a.answer, old.token)
		}
	}
	// Values sent after the first refusal never reach the log.
	if old.firstErr >= 0 {
		refused := old.acks[old.firstErr].value
		after := false
		for _, v := range old.sends {
			if v == refused {
				after = true
			}
			if after {
				if r := byValue[v]; r != nil {
					t.Errorf("%s, sent after the first refusal, is in the log at offset %d", v, r.Offset)
				}
			}
		}
	}
	if oks == 0 {
		t.Errorf("the deposed child had no acknowledged write before its loss")
	}
	if firstNew < 0 {
		t.Errorf("no record under the new token %s", newTok)
	} else if lastOld >= firstNew {
		t.Errorf("a record of the deposed token %s at offset %d follows the new token's first record at %d", old.token, lastOld, firstNew)
	}
}

// A second run of the same member takes over at once (it mints, as a
// restarted member does): the first child, deposed mid-stream, ignores its
// SIGTERM and keeps writing through the channel during the grace period;
// every later write is refused with FENCED and none is in the log.
func TestRunWriteChannelRefusesADeposedChild(t *testing.T) {
	bs := tv2(t)
	topic := uniqueRole("krabka-cli-run-writes")
	createTopic(t, bs, topic, 1, nil)
	role := uniqueRole("cli-run-write")
	dir := t.TempDir()
	file := filepath.Join(dir, "children.log")
	lostFile := filepath.Join(dir, "lost.log")
	env := []string{"KRABKA_RUN_TEST_CHILD=writer", "KRABKA_RUN_TEST_FILE=" + file}
	args := []string{"-b", bs, "-X", "krabka.lease.ms=6000", "-X", "krabka.renew.interval.ms=1500", "-X", "request.timeout.ms=3000",
		"run", "--topic", topic, "--margin", "2s", "--grace", "1500ms",
		"--on-lost", `echo "$KRABKA_LOST $KRABKA_TOKEN $KRABKA_MEMBER" >> ` + lostFile,
		role, "w", "--", selfExe(t)}
	a := startRun(t, "a", env, args...)
	won := a.next(t, reWon)
	tokA := won[2]
	// Let it write for a while.
	for deadline := time.Now().Add(bound); ; {
		if b, _ := os.ReadFile(file); strings.Count(string(b), " OK ") >= 30 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the child wrote no 30 records")
		}
		time.Sleep(50 * time.Millisecond)
	}
	b := startRun(t, "b", env, args...)
	tokB := b.next(t, reWon)[2]
	if !mustToken(t, tokB).Supersedes(mustToken(t, tokA)) {
		t.Fatalf("b's token %s does not supersede a's %s", tokB, tokA)
	}
	if code := a.exit(t); code != exitLostFenced {
		t.Errorf("a exit %d, want %d (fenced)", code, exitLostFenced)
	}
	// b's child writes too; then stop it.
	waitAcked(t, file, tokB)
	b.signal(t, syscall.SIGKILL)
	b.exit(t)

	lives := readLives(t, file)
	var old *childLife
	for _, l := range lives {
		if l.token == tokA {
			old = l
		}
	}
	if old == nil {
		t.Fatalf("no child with token %s", tokA)
	}
	t.Logf("deposed child %d: %d answers, first refusal at %d, %d refusals, %d SIGTERM", old.pid, len(old.acks), old.firstErr, old.errs, len(old.terms))
	if old.firstErr < 0 {
		t.Fatalf("the deposed child got no refusal: %v", old.acks[len(old.acks)-3:])
	}
	for _, ack := range old.acks[old.firstErr:] {
		if ack.answer[0] != "ERR" || (ack.answer[1] != "FENCED" && ack.answer[1] != "NOT_LEADER") {
			t.Errorf("after the loss: %s answered %v, want ERR FENCED", ack.value, ack.answer)
		}
	}
	if !a.saw(regexp.MustCompile(`watchdog: SIGTERM to process group ` + strconv.Itoa(old.pid) + ` `)) {
		t.Errorf("the deposed child got no SIGTERM")
	}
	checkLog(t, readTopic(t, bs, topic), old, tokB)
	for pid, e := range a.ends() {
		t.Logf("RUN-TIMING %-30s loss_to_death_ms=%d child_dead_before_deadline_ms=%d (child %d)",
			"fenced by a second incarnation", e.at-e.stopBegan, e.deadline-e.at, pid)
	}
	lost, err := os.ReadFile(lostFile)
	if err != nil || strings.TrimSpace(string(lost)) != "FENCED "+tokA+" w" {
		t.Errorf("--on-lost wrote %q (%v), want \"FENCED %s w\"", lost, err, tokA)
	}
}

// The holding run is paused (SIGSTOP) past its lease while its child
// writes: the watchdog kills the child before the deadline, the standby
// takes over and writes; the resumed run exits FENCED, its channel is gone,
// and nothing the deposed child sent after the pause is in the log behind
// the new holder's records.
func TestRunWriteChannelOfAPausedRun(t *testing.T) {
	bs := tv2(t)
	topic := uniqueRole("krabka-cli-run-pause")
	createTopic(t, bs, topic, 1, nil)
	role := uniqueRole("cli-run-pause")
	file := filepath.Join(t.TempDir(), "children.log")
	env := []string{"KRABKA_RUN_TEST_CHILD=writer", "KRABKA_RUN_TEST_FILE=" + file}
	start := func(name, member string) *runProc {
		args := runArgs(bs, safeLease, append(safeStop, "--topic", topic)...)
		return startRun(t, name, env, append(args, role, member, "--", selfExe(t))...)
	}
	a := start("a", "wa")
	tokA := a.next(t, reWon)[2]
	b := start("b", "wb")
	waitRegistered(t, bs, role, "wb")
	time.Sleep(300 * time.Millisecond)
	a.signal(t, syscall.SIGSTOP)
	tokB := b.next(t, reWon)[2]
	// b's child writes under the new token.
	waitAcked(t, file, tokB)
	a.signal(t, syscall.SIGCONT)
	// Fenced, or expired when a renewal was in flight as it was stopped.
	if code := a.exit(t); code != exitLostFenced && code != exitLostExpired {
		t.Errorf("a exit %d after its pause, want %d (fenced) or %d (expired)", code, exitLostFenced, exitLostExpired)
	}
	b.signal(t, syscall.SIGKILL)
	b.exit(t)

	lives := readLives(t, file)
	var old *childLife
	for _, l := range lives {
		if l.token == tokA {
			old = l
		}
	}
	if old == nil || old.write == "-" {
		t.Fatalf("no child of a with a write channel: %+v", old)
	}
	// The deposed child's channel is gone: a later write cannot even start.
	if conn, err := net.Dial("unix", old.write); err == nil {
		conn.Write([]byte("late\n"))
		ans, rerr := bufio.NewReader(conn).ReadString('\n')
		conn.Close()
		if rerr == nil && !strings.HasPrefix(ans, "ERR ") {
			t.Errorf("a write on the deposed child's channel after the loss answered %q", ans)
		}
	}
	t.Logf("the deposed child sent %d lines and got %d answers", len(old.sends), len(old.acks))
	recs := readTopic(t, bs, topic)
	checkLog(t, recs, old, tokB)
	for _, r := range recs {
		if string(r.Value) == "late" {
			t.Errorf("the late write is in the log at %d", r.Offset)
		}
	}
	// The child was killed before the deadline, and b's child started after.
	e, ok := a.ends()[old.pid]
	if !ok {
		t.Fatalf("no watchdog report of child %d's end", old.pid)
	}
	if e.at >= e.deadline {
		t.Errorf("the paused run's child ended at %d, not before the deadline %d", e.at, e.deadline)
	}
	for _, l := range lives {
		if l.token == tokB && l.start/1000 <= e.at {
			t.Errorf("b's child started at %d ms, a's ended at %d ms", l.start/1000, e.at)
		}
	}
	t.Logf("RUN-TIMING %-30s loss_to_death_ms=%d child_dead_before_deadline_ms=%d", "SIGSTOP of a writing run", e.at-e.stopBegan, e.deadline-e.at)
}

// Exit codes and what the child gets: its own exit code, 128+N after a
// forwarded signal, the environment, the process group killed after the
// child exits, and 202 when run alone was paused past its lease (nobody
// took over; the child was killed before the deadline anyway).
func TestRunExitCodesEnvironmentAndCleanup(t *testing.T) {
	bs := tv2(t)
	role := uniqueRole("cli-run-codes")
	base := append([]string{"-b", bs}, runLease...)
	dir := t.TempDir()

	t.Run("child exit code and environment", func(t *testing.T) {
		envFile := filepath.Join(dir, "env")
		script := `echo "$KRABKA_ROLE $KRABKA_MEMBER $KRABKA_TRANSACTIONAL_ID $KRABKA_TOKEN $KRABKA_LEASE_DEADLINE_MS ${KRABKA_WRITE:-none}" > ` + envFile + `; exit 7`
		code, _, errs := cli(t, append(base, "run", role, "m1", "--", "sh", "-c", script)...)
		if code != 7 {
			t.Fatalf("exit %d, want the child's 7:\n%s", code, errs)
		}
		got, _ := os.ReadFile(envFile)
		f := strings.Fields(string(got))
		if len(f) != 6 || f[0] != role || f[1] != "m1" || f[2] != role || f[5] != "none" {
			t.Fatalf("environment %q", got)
		}
		mustToken(t, f[3])
		if ms, err := strconv.ParseInt(f[4], 10, 64); err != nil || ms < time.Now().Add(-time.Minute).UnixMilli() {
			t.Fatalf("KRABKA_LEASE_DEADLINE_MS %q", f[4])
		}
		if !regexp.MustCompile(`: resigned\n`).MatchString(errs) {
			t.Fatalf("no resignation:\n%s", errs)
		}
		// Resigned: an expired lease of m1 and an empty roster.
		st := describeJSON(t, bs, role)
		if st.Lease == nil || st.Lease.Live || len(st.Roster) != 0 || st.Lease.Token != f[3] {
			t.Fatalf("after the child exited: %+v", st)
		}
	})

	t.Run("process group killed after the child exits", func(t *testing.T) {
		pidFile := filepath.Join(dir, "bg.pid")
		code, _, errs := cli(t, append(base, "run", role, "m2", "--", "sh", "-c", "sleep 300 & echo $! > "+pidFile+"; exit 0")...)
		if code != 0 {
			t.Fatalf("exit %d:\n%s", code, errs)
		}
		b, _ := os.ReadFile(pidFile)
		pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil {
			t.Fatalf("pid file %q", b)
		}
		// run sent the group SIGKILL before it resigned: the sleep dies (it
		// may take a moment to be torn down on a loaded machine), gone or a
		// zombie waiting for its new parent.
		for deadline := time.Now().Add(bound); !exited(pid); time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				syscall.Kill(pid, syscall.SIGKILL)
				t.Fatalf("the child's background process %d still runs after run exited", pid)
			}
		}
	})

	t.Run("forwarded SIGTERM", func(t *testing.T) {
		p := startRun(t, "fwd", nil, append(base, "run", role, "m3", "--", "sleep", "300")...)
		p.next(t, reWon)
		p.signal(t, syscall.SIGTERM)
		if code := p.exit(t); code != 128+int(syscall.SIGTERM) {
			t.Fatalf("exit %d, want %d", code, 128+int(syscall.SIGTERM))
		}
	})

	t.Run("paused alone past the lease", func(t *testing.T) {
		file := filepath.Join(dir, "paused.log")
		p := startRun(t, "paused", []string{"KRABKA_RUN_TEST_CHILD=lines", "KRABKA_RUN_TEST_FILE=" + file},
			append(runArgs(bs, safeLease, safeStop...), role, "m4", "--", selfExe(t))...)
		dl, _ := strconv.ParseInt(p.next(t, reWon)[3], 10, 64)
		time.Sleep(200 * time.Millisecond)
		p.signal(t, syscall.SIGSTOP)
		m := p.next(t, reEnded)
		p.signal(t, syscall.SIGCONT)
		// At risk, nobody took over: run resigned after the child's death.
		// Expired instead when the pause caught a renewal in flight (it
		// fails at the deadline it was bounded by).
		switch code := p.exit(t); code {
		case exitLostAtRisk:
		case exitLostExpired:
			t.Logf("exit %d: the pause caught a renewal in flight", code)
		default:
			t.Errorf("exit %d, want %d (at risk, nobody took over)", code, exitLostAtRisk)
		}
		at, _ := strconv.ParseInt(m[2], 10, 64)
		deadline, _ := strconv.ParseInt(m[4], 10, 64)
		if at >= deadline || deadline < dl {
			t.Errorf("child ended at %d, deadline %d (first %d)", at, deadline, dl)
		}
		lives := readLives(t, file)
		if len(lives) != 1 || lives[0].last/1000 >= deadline {
			t.Errorf("the child's last line at %d ms, the deadline %d", lives[0].last/1000, deadline)
		}
		began, _ := strconv.ParseInt(m[3], 10, 64)
		t.Logf("RUN-TIMING %-30s loss_to_death_ms=%d child_dead_before_deadline_ms=%d", "SIGSTOP of a lone run", at-began, deadline-at)
	})
}
