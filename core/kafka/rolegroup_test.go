package kafka_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/krabka/krabka-coord/core"
	"github.com/krabka/krabka-coord/core/coord"
	"github.com/krabka/krabka-coord/core/kafka"
	"github.com/krabka/krabka-coord/internal/perfdoc"
	"github.com/krabka/krabka-coord/tests/kafka/kafkatest"
)

// Role groups on real brokers (docs/GROUPS.md): four member processes, N
// shards (KRABKA_GROUP_SHARDS, default 16; `make group-bench`: 256), each
// shard's holder writing guarded commands to partition k of a command
// topic while it holds shard k. The scenario: three members, a fourth
// joins, turns ineligible and eligible again, leaves, comes back; one is
// SIGKILLed and restarted; one is SIGSTOPped past its lease and continued.
// After each event: the moves, the time until every shard is held by its
// target, the balance; at the end the verifier over every partition of the
// command topic (no record of an older token after a newer one). With
// KRABKA_GROUP_RESULTS=1 the figures go to a results file (bench/results).

const (
	groupChildEnv = "KRABKA_GROUP_CHILD"
	grpMaxMoves   = 8
)

// groupTiming is the lease of every shard (KRABKA_GROUP_LEASE_MS, default
// 10 s: long enough for a loaded machine, where renewal transactions of
// several seconds were seen under a load average of 40 on two cores), the
// renewal a quarter of it, and each holder's command interval a third of it.
type groupTiming struct{ LeaseMs, RenewMs, WriteMs int }

func groupTimingFromEnv(t *testing.T) groupTiming {
	lease := 10000
	if s := os.Getenv("KRABKA_GROUP_LEASE_MS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1000 {
			t.Fatalf("KRABKA_GROUP_LEASE_MS=%q: want milliseconds, at least 1000", s)
		}
		lease = n
	}
	return groupTiming{LeaseMs: lease, RenewMs: lease / 4, WriteMs: lease / 3}
}

// groupChild is what a member process is told.
type groupChild struct {
	WriteMs  int
	Config   []string
	Group    string
	Shards   int
	Member   string
	CmdTopic string
	// Semaphore: join a semaphore of Shards slots (NewSemaphore).
	Semaphore bool
}

// groupChildEvent is one line of a member process.
type groupChildEvent struct {
	Ev    string `json:"ev"`
	Shard int    `json:"shard"`
	Err   string `json:"err,omitempty"`
	Token string `json:"token,omitempty"` // assigned: the term's token
}

func init() {
	spec := os.Getenv(groupChildEnv)
	if spec == "" {
		return
	}
	os.Exit(runGroupChild(spec))
}

// runGroupChild is a member process: it joins the group and, for each shard
// it is assigned, writes a guarded command to the shard's partition every
// WriteMs until the term ends. Commands on stdin: "elig 0", "elig 1",
// "leave" (Close, then exit 0).
func runGroupChild(spec string) int {
	var s groupChild
	if err := json.Unmarshal([]byte(spec), &s); err != nil {
		fmt.Fprintln(os.Stderr, "group child:", err)
		return 2
	}
	cfg := coord.DefaultConfig()
	for i := 0; i+1 < len(s.Config); i += 2 {
		if err := cfg.Set(s.Config[i], s.Config[i+1]); err != nil {
			fmt.Fprintln(os.Stderr, "group child:", err)
			return 2
		}
	}
	cl, err := kafka.NewClient(cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, "group child:", err)
		return 2
	}
	glog, err := kafka.NewGroupLog(cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, "group child:", err)
		return 2
	}
	var outMu sync.Mutex
	say := func(e groupChildEvent) {
		b, _ := json.Marshal(e)
		outMu.Lock()
		os.Stdout.Write(append(b, '\n'))
		outMu.Unlock()
	}
	join := coord.NewGroup
	if s.Semaphore {
		join = coord.NewSemaphore
	}
	g, err := join(cl, glog, s.Group, s.Shards, core.MustMemberID(s.Member), coord.WithMaxMoves(grpMaxMoves))
	if err != nil {
		say(groupChildEvent{Ev: "err", Err: err.Error()})
		return 2
	}
	go func() {
		sc := bufio.NewScanner(os.Stdin)
		for sc.Scan() {
			switch sc.Text() {
			case "elig 0":
				g.SetEligible(false)
			case "elig 1":
				g.SetEligible(true)
			case "leave":
				ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
				err := g.Close(ctx)
				cancel()
				if err != nil {
					say(groupChildEvent{Ev: "err", Err: "close: " + err.Error()})
				}
				cl.Close()
				say(groupChildEvent{Ev: "left"})
				os.Exit(0)
			}
		}
	}()
	profileGroupChild(s.Member)
	say(groupChildEvent{Ev: "ready"})
	for {
		ev, err := g.Next(context.Background())
		if err != nil {
			select {}
		}
		switch ev.Kind {
		case coord.ShardAssigned:
			say(groupChildEvent{Ev: "assigned", Shard: ev.Shard, Token: ev.Leadership.Token().String()})
			go func(k int, l *coord.Leadership) {
				for seq := 0; ; seq++ {
					ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
					_, err := l.Produce(ctx, coord.Message{Topic: s.CmdTopic, Partition: int32(k),
						Value: []byte(s.Member + " " + strconv.Itoa(seq))})
					cancel()
					if l.Err() != nil {
						return // the term ended: stop the shard's work
					}
					_ = err
					select {
					case <-l.Done():
						return
					case <-time.After(time.Duration(s.WriteMs) * time.Millisecond):
					}
				}
			}(ev.Shard, ev.Leadership)
		case coord.ShardRevoked:
			say(groupChildEvent{Ev: "revoked", Shard: ev.Shard, Err: fmt.Sprint(ev.Err)})
		}
	}
}

// profileGroupChild writes a CPU profile of the member process to
// $KRABKA_GROUP_CPUPROFILE/<member>.prof for the first
// $KRABKA_GROUP_CPUPROFILE_S seconds (default 120) after it joined: a
// diagnosis aid for the group bench (go tool pprof), off unless set.
func profileGroupChild(member string) {
	dir := os.Getenv("KRABKA_GROUP_CPUPROFILE")
	if dir == "" {
		return
	}
	secs := 120
	if n, err := strconv.Atoi(os.Getenv("KRABKA_GROUP_CPUPROFILE_S")); err == nil && n > 0 {
		secs = n
	}
	f, err := os.Create(filepath.Join(dir, member+".prof"))
	if err != nil {
		fmt.Fprintln(os.Stderr, "group child: cpu profile:", err)
		return
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		fmt.Fprintln(os.Stderr, "group child: cpu profile:", err)
		f.Close()
		return
	}
	time.AfterFunc(time.Duration(secs)*time.Second, func() {
		pprof.StopCPUProfile()
		f.Close()
	})
}

// groupRun is one scenario on one cluster.
type groupRun struct {
	t        *testing.T
	c        *kafkatest.Cluster
	kv       []string
	group    string
	shards   int
	cmdTopic string
	log      coord.GroupLog
	sem      bool // a semaphore: the members hold at most one slot each
	procs    map[string]*exec.Cmd
	timing   groupTiming
	steps    []groupStepResult
	// evHeld is what each member process's events say it holds
	// (assigned minus revoked).
	evMu    sync.Mutex
	evHeld  map[string]map[int]bool
	stopped map[string]bool // members SIGSTOPped now
	// lastStatus is the group at the last convergence.
	lastStatus *coord.GroupStatus
	verdict    groupVerdict
	// results is the results file, begun with the run (its date and load
	// before), when KRABKA_GROUP_RESULTS=1.
	results *perfdoc.File
}

// groupStepResult is what one event did.
type groupStepResult struct {
	Name        string
	Moves       int            // shards whose owner changed
	Converge    time.Duration  // from the event until every shard was held by its target
	Balance     map[string]int // shards per member after it
	MaxInFlight int            // the most moves in flight seen while converging
}

func groupShards(t *testing.T) int {
	if s := os.Getenv("KRABKA_GROUP_SHARDS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 4 {
			t.Fatalf("KRABKA_GROUP_SHARDS=%q: want a count of at least 4", s)
		}
		return n
	}
	return 16
}

func TestGroupFourMemberProcesses(t *testing.T) {
	eachTV(t, func(t *testing.T, c *kafkatest.Cluster) {
		r := newGroupRun(t, c, groupShards(t))
		r.scenario()
	})
}

func newGroupRun(t *testing.T, c *kafkatest.Cluster, shards int) *groupRun {
	return newGroupRunWith(t, c, shards, groupTimingFromEnv(t), false)
}

// newGroupRunWith is newGroupRun with the timing given, of a semaphore
// of shards slots when sem.
func newGroupRunWith(t *testing.T, c *kafkatest.Cluster, shards int, timing groupTiming, sem bool) *groupRun {
	topic := uniq("it-grp-")
	r := &groupRun{t: t, c: c, group: "fleet", shards: shards, cmdTopic: topic + "-cmd", procs: map[string]*exec.Cmd{},
		timing: timing, sem: sem, evHeld: map[string]map[int]bool{}, stopped: map[string]bool{}}
	r.kv = []string{"bootstrap.servers", c.Bootstrap, "krabka.topic", topic, "krabka.lease.ms", fmt.Sprint(r.timing.LeaseMs),
		"krabka.renew.interval.ms", fmt.Sprint(r.timing.RenewMs), "krabka.challenge.stagger.ms", "300",
		"krabka.poll.interval.ms", "100", "request.timeout.ms", "5000"}
	if os.Getenv("KRABKA_GROUP_RESULTS") == "1" {
		r.results = perfdoc.NewFile("group")
	}
	if _, err := admin(t, c.Bootstrap).CreateTopic(ctxFor(t, 30*time.Second), int32(shards), 1, nil, r.cmdTopic); err != nil {
		t.Fatal(err)
	}
	var err error
	r.log, err = kafka.NewGroupLog(testConfig(t, c.Bootstrap, r.kv...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, p := range r.procs {
			p.Process.Signal(syscall.SIGCONT)
			p.Process.Kill()
			p.Wait()
		}
		r.log.Transport.Close()
	})
	return r
}

// start starts member m's process and waits for it to be ready.
func (r *groupRun) start(m string) {
	r.t.Helper()
	spec, _ := json.Marshal(groupChild{WriteMs: r.timing.WriteMs, Config: r.kv, Group: r.group, Shards: r.shards, Member: m, CmdTopic: r.cmdTopic, Semaphore: r.sem})
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), groupChildEnv+"="+string(spec))
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		r.t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		r.t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		r.t.Fatal(err)
	}
	r.procs[m] = cmd
	r.evMu.Lock()
	r.evHeld[m] = map[int]bool{} // a new process holds nothing yet
	r.evMu.Unlock()
	ready := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		first := true
		for sc.Scan() {
			var e groupChildEvent
			if json.Unmarshal(sc.Bytes(), &e) != nil {
				continue
			}
			if first {
				first = false
				ready <- e.Ev + " " + e.Err
			}
			if e.Ev == "err" {
				r.t.Errorf("member %s: %s", m, e.Err)
			}
			r.evMu.Lock()
			if r.evHeld[m] == nil {
				r.evHeld[m] = map[int]bool{}
			}
			switch e.Ev {
			case "assigned":
				if r.sem && len(r.evHeld[m]) > 0 {
					r.t.Errorf("member %s was assigned slot %d while it holds %v: a member holds at most one slot", m, e.Shard, r.evHeld[m])
				}
				r.evHeld[m][e.Shard] = true
			case "revoked":
				delete(r.evHeld[m], e.Shard)
			}
			r.evMu.Unlock()
		}
	}()
	stdins.Store(cmd, in)
	select {
	case s := <-ready:
		if !strings.HasPrefix(s, "ready") {
			r.t.Fatalf("member %s: %s", m, s)
		}
	case <-time.After(60 * time.Second):
		r.t.Fatalf("member %s: not ready within 60 s", m)
	}
}

var stdins sync.Map // *exec.Cmd -> io.WriteCloser

func (r *groupRun) send(m, line string) {
	in, _ := stdins.Load(r.procs[m])
	if _, err := fmt.Fprintln(in.(interface{ Write([]byte) (int, error) }), line); err != nil {
		r.t.Fatalf("member %s: %v", m, err)
	}
}

// leave makes member m leave the group and waits for its process to end.
func (r *groupRun) leave(m string) {
	r.t.Helper()
	r.send(m, "leave")
	done := make(chan error, 1)
	go func() { done <- r.procs[m].Wait() }()
	select {
	case err := <-done:
		if err != nil {
			r.t.Fatalf("member %s left with %v", m, err)
		}
	case <-time.After(90 * time.Second):
		r.t.Fatalf("member %s: did not leave within 90 s", m)
	}
	delete(r.procs, m)
}

func (r *groupRun) kill(m string) {
	r.procs[m].Process.Kill()
	r.procs[m].Wait()
	delete(r.procs, m)
}

// describe reads the group; a failed read (a broker slow to answer on a
// loaded machine) is retried for up to two minutes.
func (r *groupRun) describe() *coord.GroupStatus {
	r.t.Helper()
	var err error
	for end := time.Now().Add(2 * time.Minute); time.Now().Before(end); time.Sleep(time.Second) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		var st *coord.GroupStatus
		st, err = coord.DescribeGroup(ctx, r.log, r.group, nil)
		cancel()
		if err == nil {
			return st
		}
		r.t.Logf("describe %s (retrying): %v", r.group, err)
	}
	r.t.Fatalf("describe %s: %v", r.group, err)
	return nil
}

// converge waits until the plan gives shards to exactly the members in
// want (live, eligible) and every shard is held by its target, sampling
// the moves in flight meanwhile.
func (r *groupRun) converge(name string, since time.Time, before *coord.GroupStatus, want ...string) groupStepResult {
	r.t.Helper()
	res := groupStepResult{Name: name}
	deadline := time.Now().Add(5 * time.Minute)
	for {
		st := r.describe()
		if st.MovesInFlight > res.MaxInFlight && name != "resume" {
			res.MaxInFlight = st.MovesInFlight
			if st.MovesInFlight > grpMaxMoves {
				r.t.Logf("%s: %d moves in flight: %s", name, st.MovesInFlight, inFlight(st))
			}
		}
		if st.Converged && sameMembers(st, want) {
			res.Converge = time.Since(since)
			res.Balance = map[string]int{}
			for _, o := range st.Owner {
				res.Balance[o]++
			}
			if before != nil {
				for k := range st.Owner {
					if st.Owner[k] != before.Owner[k] {
						res.Moves++
					}
				}
			}
			r.steps = append(r.steps, res)
			r.t.Logf("%s: %d moves, converged in %v, balance %v, at most %d moves in flight seen", name, res.Moves, res.Converge.Round(time.Millisecond), res.Balance, res.MaxInFlight)
			r.checkBalance(res, want)
			if res.MaxInFlight > grpMaxMoves {
				r.t.Errorf("%s: %d moves in flight, the bound is %d", name, res.MaxInFlight, grpMaxMoves)
			}
			r.lastStatus = st
			r.eventsAgree(name, st)
			return res
		}
		if time.Now().After(deadline) {
			r.t.Fatalf("%s: no convergence within 5 minutes: converged %v inflight %d unheld %d pending %d members %+v",
				name, st.Converged, st.MovesInFlight, st.Unheld, st.Pending, st.Members)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// inFlight names the shards whose live holder is not their owner, with
// the members whose heartbeats report them (and those heartbeats'
// deadlines), and each member's liveness.
func inFlight(st *coord.GroupStatus) string {
	var b strings.Builder
	fmt.Fprintf(&b, "plan %d by %s, unheld %d, pending %d;", st.Seq, st.Leader, st.Unheld, st.Pending)
	for _, m := range st.Members {
		fmt.Fprintf(&b, " %s(live %v until %s)", m.Member, m.Live, m.Deadline.Format("15:04:05.000"))
	}
	for k := range st.Owner {
		if st.Holder[k] == "" || st.Holder[k] == st.Owner[k] {
			continue
		}
		fmt.Fprintf(&b, " [%d owner %s holder %s, reported by", k, st.Owner[k], st.Holder[k])
		for _, m := range st.Members {
			if slices.Contains(m.Held, k) {
				b.WriteString(" " + m.Member)
			}
		}
		b.WriteString("]")
	}
	return b.String()
}

// sameMembers: the members of want are live, eligible and given shards;
// every other member is given none.
// eventsAgree: what each member process's events say it holds comes to
// be what the group log says it owns (a member that lost a shard, even
// while it was stopped, was told so by a ShardRevoked event).
func (r *groupRun) eventsAgree(name string, st *coord.GroupStatus) {
	r.t.Helper()
	deadline := time.Now().Add(time.Duration(r.timing.LeaseMs) * time.Millisecond)
	for {
		var diff []string
		r.evMu.Lock()
		for m := range r.procs {
			if r.stopped[m] {
				continue // SIGSTOPped: it cannot hear anything yet
			}
			for k, o := range st.Owner {
				if (o == m) != r.evHeld[m][k] {
					diff = append(diff, fmt.Sprintf("%s shard %d: owner %s, events say held %v", m, k, o, r.evHeld[m][k]))
				}
			}
		}
		r.evMu.Unlock()
		if len(diff) == 0 {
			return
		}
		if time.Now().After(deadline) {
			r.t.Errorf("%s: the members' events disagree with the group log: %v", name, diff[:min(len(diff), 10)])
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func sameMembers(st *coord.GroupStatus, want []string) bool {
	got := map[string]bool{}
	for _, m := range st.Members {
		if m.Live && m.Eligible && m.Target > 0 {
			got[m.Member] = true
		} else if m.Target > 0 || m.Owned > 0 {
			return false
		}
	}
	if len(got) != len(want) {
		return false
	}
	for _, m := range want {
		if !got[m] {
			return false
		}
	}
	return true
}

// checkBalance: every member has floor or ceil of N/len(want).
func (r *groupRun) checkBalance(res groupStepResult, want []string) {
	lo := r.shards / len(want)
	hi := (r.shards + len(want) - 1) / len(want)
	total := 0
	for _, m := range want {
		if n := res.Balance[m]; n < lo || n > hi {
			r.t.Errorf("%s: %s owns %d shards, not within one of %d/%d (balance %v)", res.Name, m, n, r.shards, len(want), res.Balance)
		}
		total += res.Balance[m]
	}
	if total != r.shards {
		r.t.Errorf("%s: the members own %d of %d shards (%v)", res.Name, total, r.shards, res.Balance)
	}
}

// onlyFrom: every moved shard belonged to m before (a member that leaves or
// dies gives up only its own shards).
func (r *groupRun) onlyFrom(before, after *coord.GroupStatus, m string) {
	for k := range after.Owner {
		if after.Owner[k] != before.Owner[k] && before.Owner[k] != m {
			r.t.Errorf("shard %d moved from %s to %s, only %s's shards should move", k, before.Owner[k], after.Owner[k], m)
		}
	}
}

// onlyTo: every moved shard went to m, and at most its share plus one moved
// (a member that joins takes its share and no more: no failback storm).
func (r *groupRun) onlyTo(before, after *coord.GroupStatus, m string, members int) {
	n := 0
	for k := range after.Owner {
		if after.Owner[k] != before.Owner[k] {
			n++
			if after.Owner[k] != m {
				r.t.Errorf("shard %d moved from %s to %s, only moves to %s expected", k, before.Owner[k], after.Owner[k], m)
			}
		}
	}
	if share := (r.shards + members - 1) / members; n > share+1 {
		r.t.Errorf("%s joined: %d moves, more than its share %d plus one", m, n, share)
	}
}

func (r *groupRun) scenario() {
	t0 := time.Now()
	for _, m := range []string{"a", "b", "c"} {
		r.start(m)
	}
	r.converge("start", t0, nil, "a", "b", "c")

	step := func(name string, do func(), check func(before, after *coord.GroupStatus), want ...string) {
		before := r.lastStatus
		at := time.Now()
		do()
		r.converge(name, at, before, want...)
		check(before, r.lastStatus)
	}
	all := []string{"a", "b", "c", "d"}
	step("join", func() { r.start("d") }, func(b, a *coord.GroupStatus) { r.onlyTo(b, a, "d", 4) }, all...)
	step("ineligible", func() { r.send("d", "elig 0") }, func(b, a *coord.GroupStatus) { r.onlyFrom(b, a, "d") }, "a", "b", "c")
	step("eligible", func() { r.send("d", "elig 1") }, func(b, a *coord.GroupStatus) { r.onlyTo(b, a, "d", 4) }, all...)
	step("leave", func() { r.leave("d") }, func(b, a *coord.GroupStatus) { r.onlyFrom(b, a, "d") }, "a", "b", "c")
	step("rejoin", func() { r.start("d") }, func(b, a *coord.GroupStatus) { r.onlyTo(b, a, "d", 4) }, all...)
	step("kill", func() { r.kill("c") }, func(b, a *coord.GroupStatus) { r.onlyFrom(b, a, "c") }, "a", "b", "d")
	step("restart", func() { r.start("c") }, func(b, a *coord.GroupStatus) { r.onlyTo(b, a, "c", 4) }, all...)
	step("pause", func() {
		r.procs["b"].Process.Signal(syscall.SIGSTOP)
		r.stopped["b"] = true
	}, func(b, a *coord.GroupStatus) { r.onlyFrom(b, a, "b") }, "a", "c", "d")
	// Keep b stopped until its lease is certainly over, then continue it:
	// its terms end (fenced) and it comes back as a member that joins.
	time.Sleep(time.Duration(r.timing.LeaseMs) * time.Millisecond)
	step("resume", func() { r.procs["b"].Process.Signal(syscall.SIGCONT); delete(r.stopped, "b") }, func(b, a *coord.GroupStatus) { r.onlyTo(b, a, "b", 4) }, all...)
	for _, m := range all {
		r.leave(m)
	}
	r.checkResigned()
	r.verify()
	if r.results != nil {
		r.writeResults()
	}
}

// checkResigned: after every member left (Close), every shard and the
// leader role end resigned: the last lease of each is an expired one
// (deadline = granted_at, written by its holder's Close), not one left to
// run out. The last member to leave held every shard and had nobody to hand
// them to (the 256-shard bench's Close of it once timed out).
func (r *groupRun) checkResigned() {
	r.t.Helper()
	cl, err := kafka.NewClient(testConfig(r.t, r.c.Bootstrap, r.kv...))
	if err != nil {
		r.t.Fatal(err)
	}
	defer cl.Close()
	_, roles, err := cl.Roles(ctxFor(r.t, 3*time.Minute))
	if err != nil {
		r.t.Fatal(err)
	}
	want := map[string]bool{r.group + "/leader": true}
	for k := 0; k < r.shards; k++ {
		want[fmt.Sprintf("%s/shard/%d", r.group, k)] = true
	}
	var bad []string
	for _, st := range roles {
		if !want[st.Role.String()] {
			continue
		}
		delete(want, st.Role.String())
		// Current is not asked for: a member still campaigning for the
		// role when the holder resigned may mint and then leave before it
		// writes a lease (its Close ends the attempt); that epoch is newer
		// than the resign's token, and nobody holds the role.
		if st.Lease == nil || st.Lease.Deadline > st.Lease.GrantedAt {
			bad = append(bad, fmt.Sprintf("%s: lease %+v current %v", st.Role, st.Lease, st.Current))
		}
	}
	for role := range want {
		bad = append(bad, role+": not in the log")
	}
	sort.Strings(bad)
	if len(bad) > 0 {
		r.t.Errorf("after every member left, %d roles were not resigned: %v", len(bad), bad[:min(len(bad), 10)])
	} else {
		r.t.Logf("after every member left: all %d shards and the leader role resigned", r.shards)
	}
}

// verify reads every partition of the command topic and judges each record
// as a consumer would (core.Verifier, per partition: a shard).
func (r *groupRun) verify() {
	tr, err := kafka.New(testConfig(r.t, r.c.Bootstrap, r.kv...))
	if err != nil {
		r.t.Fatal(err)
	}
	defer tr.Close()
	v := core.NewVerifier()
	records, tokens, bad := 0, map[int32]map[core.FencingToken]bool{}, []string{}
	err = tr.ReadTopic(ctxFor(r.t, 2*time.Minute), r.cmdTopic, func(rec kafka.TopicRecord) error {
		records++
		var hdr []byte
		has := false
		for _, h := range rec.Headers {
			if h.Key == core.HeaderToken {
				hdr, has = h.Value, true
			}
		}
		scope := strconv.Itoa(int(rec.Partition))
		if verdict := v.Judge(scope, hdr, has, rec.Batch); verdict != core.VerdictOK {
			bad = append(bad, fmt.Sprintf("shard %d offset %d: %s (token %s)", rec.Partition, rec.Offset, verdict, rec.Batch))
		}
		if tokens[rec.Partition] == nil {
			tokens[rec.Partition] = map[core.FencingToken]bool{}
		}
		tokens[rec.Partition][rec.Batch] = true
		return nil
	})
	if err != nil {
		r.t.Fatal(err)
	}
	terms := 0
	for p := int32(0); p < int32(r.shards); p++ {
		if len(tokens[p]) == 0 {
			r.t.Errorf("shard %d: no command was written", p)
		}
		terms += len(tokens[p])
	}
	moves := 0
	for _, s := range r.steps {
		moves += s.Moves
	}
	r.t.Logf("verifier: %d records over %d shards, %d terms, %d problems", records, r.shards, terms, len(bad))
	if len(bad) > 0 {
		r.t.Errorf("verifier: %d records out of order (overlapping terms), first: %v", len(bad), bad[:min(len(bad), 10)])
	}
	// Every move starts a new term on the shard; a run where the terms do
	// not outnumber the shards moved nothing and proves nothing.
	if terms < r.shards+moves/2 {
		r.t.Errorf("verifier: %d terms over %d shards after %d moves: the commands do not show the moves", terms, r.shards, moves)
	}
	r.verdict = groupVerdict{records: records, terms: terms, overlaps: len(bad)}
}

type groupVerdict struct{ records, terms, overlaps int }

func (r *groupRun) writeResults() {
	f := r.results
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, file, _, _ := runtime.Caller(0)
	k, err := perfdoc.AskKafka(ctx, strings.Split(r.c.Bootstrap, ","), perfdoc.KafkaVersion(filepath.Join(filepath.Dir(kafkatest.ScriptPath()), "lib")))
	if err != nil {
		r.t.Fatal(err)
	}
	f.Kafka = k
	f.Settings = map[string]string{"shards": strconv.Itoa(r.shards), "members": "4", "max_moves": strconv.Itoa(grpMaxMoves),
		"krabka.lease.ms": strconv.Itoa(r.timing.LeaseMs), "krabka.renew.interval.ms": strconv.Itoa(r.timing.RenewMs),
		"command_interval_ms": strconv.Itoa(r.timing.WriteMs)}
	for _, s := range r.steps {
		m := perfdoc.Summarize(s.Name, "until every shard is held by its target after: "+s.Name, "ms", []float64{float64(s.Converge.Microseconds()) / 1000})
		m.Extra = map[string]float64{"moves": float64(s.Moves), "max_moves_in_flight_seen": float64(s.MaxInFlight)}
		names := make([]string, 0, len(s.Balance))
		for name := range s.Balance {
			names = append(names, name)
		}
		sort.Strings(names)
		for _, name := range names {
			m.Extra["shards_"+nameOr(name)] = float64(s.Balance[name])
		}
		f.Measures = append(f.Measures, m)
	}
	v := perfdoc.Summarize("verify", "the verifier over every shard's command partition", "records", []float64{float64(r.verdict.records)})
	v.Extra = map[string]float64{"overlaps": float64(r.verdict.overlaps), "terms": float64(r.verdict.terms)}
	f.Measures = append(f.Measures, v)
	f.Note = "core/kafka/rolegroup_test.go TestGroupFourMemberProcesses: 4 member processes; moves = shards whose owner changed; balance = shards per member after the event"
	dir := os.Getenv("KRABKA_BENCH_RESULTS")
	if dir == "" {
		dir = filepath.Join(filepath.Dir(file), "..", "..", "bench", "results")
	}
	p, err := f.Finish(dir, k.Label())
	if err != nil {
		r.t.Fatal(err)
	}
	fmt.Printf("results file: %s\n", p)
}

func nameOr(s string) string {
	if s == "" {
		return "none"
	}
	return s
}
