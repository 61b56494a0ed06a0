// Package chaos is the randomized fault campaign of krabka-coord (`make
// chaos`): three brokers (replication 3, min.insync.replicas=2), three
// members in three languages (the C device host, the Python host and the
// Node host of demo/) leading one role and writing numbered commands through
// guarded writes, a seeded schedule of faults, and a checker over the
// committed command log (see checker.go and docs/RELIABILITY.md).
//
// Each member reaches the brokers only through its own fault proxies
// (tests/kafka/faultproxy), one per broker: the brokers advertise a listener
// per member (cluster.sh --extra-listeners) whose address is that member's
// proxy, so every connection of a member, bootstrap or not, goes through
// the proxies the campaign cuts, delays and heals.
package chaos

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/krabka/krabka-coord/core"
	"github.com/krabka/krabka-coord/demo"
	"github.com/krabka/krabka-coord/tests/kafka/faultproxy"
)

// Options of one campaign.
type Options struct {
	Repo     string        // repository root
	Lib      string        // build/libkrabka_coord.so
	CHost    string        // build/examples/device_host
	Seed     uint64        // the schedule's seed (0: from the clock; printed)
	Duration time.Duration // how long faults are injected
	PortBase int           // the cluster's base port; proxies at PortBase+100
	Dir      string        // cluster.sh dir (default $KRABKA_KAFKA_ROOT/chaos)
	LogDir   string        // host logs, events, result.json (default build/chaos/<seed>)
	Keep     bool          // keep the cluster running at the end
	Out      io.Writer     // the timeline
	Verbose  bool          // every host event

	LeaseMs, RenewMs, StaggerMs, DispatchMs, RequestTimeoutMs int64
}

func (o *Options) defaults() {
	if o.Seed == 0 {
		o.Seed = uint64(time.Now().UnixNano()) % 1_000_000_000
	}
	if o.Duration == 0 {
		o.Duration = 10 * time.Minute
	}
	if o.PortBase == 0 {
		off, _ := strconv.Atoi(os.Getenv("KRABKA_KAFKA_PORT_OFFSET"))
		o.PortBase = 24500 + off
	}
	if o.Dir == "" {
		root := os.Getenv("KRABKA_KAFKA_ROOT")
		if root == "" {
			root = filepath.Join(os.TempDir(), "krabka-kafka")
		}
		o.Dir = filepath.Join(root, "chaos")
	}
	if o.LogDir == "" {
		o.LogDir = filepath.Join(o.Repo, "build", "chaos", strconv.FormatUint(o.Seed, 10))
	}
	if o.Out == nil {
		o.Out = os.Stdout
	}
	def := func(p *int64, v int64) {
		if *p == 0 {
			*p = v
		}
	}
	def(&o.LeaseMs, 3000)
	def(&o.RenewMs, 1000)
	def(&o.StaggerMs, 1000)
	def(&o.DispatchMs, 100)
	def(&o.RequestTimeoutMs, 2500)
}

// Report is the outcome of a campaign.
type Report struct {
	Seed       uint64           `json:"seed"`
	Duration   string           `json:"duration"`
	Faults     map[string]int   `json:"faults"`       // faults that took effect, by kind
	Drawn      map[string]int   `json:"faults_drawn"` // faults the schedule drew, by kind
	Minimums   Minimums         `json:"minimums"`     // what the run had to see (minimums.go)
	Shortfalls []string         `json:"shortfalls"`   // the minimums it missed (the run fails)
	Events     map[string]int   `json:"events"`       // host events by kind (ACQUIRED, FENCED, ...)
	Result     *Result          `json:"result"`
	Violations []string         `json:"violations"`
	Replay     string           `json:"replay"`
	Members    map[string]int   `json:"acked_by_member"`
	Started    time.Time        `json:"started"`
	Elapsed    string           `json:"elapsed"`
	Extra      map[string]int64 `json:"extra,omitempty"`
}

// OK is true when the checker found no violation and the run saw at least
// its minimums of acknowledged commands, takeovers and faults.
func (r *Report) OK() bool { return r.Result != nil && r.Result.OK() && len(r.Shortfalls) == 0 }

type member struct {
	name    string
	host    demo.Host
	proxies faultproxy.Group
	mu      sync.Mutex
	cmd     *exec.Cmd
	pid     int
	exited  chan struct{}
	paused  bool
	skewMs  int64
	log     *os.File
}

type campaign struct {
	opts    Options
	rng     *rand.Rand
	start   time.Time
	role    string
	topic   string
	members []*member
	admin   *kgo.Client
	adm     *kadm.Client

	mu         sync.Mutex
	acks       []Ack
	leader     string         // member that last ACQUIRED and has not lost it since (best knowledge)
	faults     map[string]int // took effect
	drawn      map[string]int
	events     map[string]int
	brokerBusy bool
	down       map[int]bool
	evlog      *os.File
	stopping   bool
	wg         sync.WaitGroup
}

func (c *campaign) say(format string, a ...any) {
	line := fmt.Sprintf("[%7.1fs] ", time.Since(c.start).Seconds()) + fmt.Sprintf(format, a...)
	fmt.Fprintln(c.opts.Out, line)
	c.mu.Lock()
	if c.evlog != nil {
		fmt.Fprintln(c.evlog, line)
	}
	c.mu.Unlock()
}

func (c *campaign) script(ctx context.Context, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "bash", append([]string{filepath.Join(c.opts.Repo, "tests", "kafka", "cluster.sh")}, args...)...)
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 30 * time.Second
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return out.String(), fmt.Errorf("cluster.sh %s: %v\n%s", strings.Join(args, " "), err, errb.String())
	}
	return out.String(), nil
}

func (c *campaign) plainBootstrap() string {
	var s []string
	for i := 0; i < 3; i++ {
		s = append(s, fmt.Sprintf("127.0.0.1:%d", c.opts.PortBase+10*i))
	}
	return strings.Join(s, ",")
}

// Run runs one campaign: it starts the cluster and the members, injects
// faults for opts.Duration, stops everything and checks the log. The error
// is for a campaign that could not run; a violation is in the report.
func Run(ctx context.Context, opts Options) (*Report, error) {
	opts.defaults()
	c := &campaign{opts: opts, rng: rand.New(rand.NewPCG(opts.Seed, opts.Seed^0x9e3779b97f4a7c15)),
		faults: map[string]int{}, drawn: map[string]int{}, events: map[string]int{}, down: map[int]bool{}}
	rep := &Report{Seed: opts.Seed, Duration: opts.Duration.String(), Faults: c.faults, Drawn: c.drawn, Events: c.events,
		Minimums: MinimumsFor(opts.Duration), Members: map[string]int{}, Started: time.Now().UTC(),
		Replay: fmt.Sprintf("make chaos CHAOS_SEED=%d CHAOS_DURATION=%s", opts.Seed, opts.Duration)}
	if err := os.MkdirAll(opts.LogDir, 0o755); err != nil {
		return nil, err
	}
	evlog, err := os.Create(filepath.Join(opts.LogDir, "timeline.log"))
	if err != nil {
		return nil, err
	}
	defer evlog.Close()
	c.evlog = evlog
	c.start = time.Now()
	c.say("chaos: seed=%d duration=%s (replay: %s); logs in %s", opts.Seed, opts.Duration, rep.Replay, opts.LogDir)

	// Proxies first: one per (member, broker), at the addresses the brokers
	// advertise on the member's listener.
	hosts := demo.DefaultHosts(opts.Repo, opts.Lib, opts.CHost)
	adv := opts.PortBase + 100
	for k, h := range hosts {
		m := &member{name: h.Member, host: h}
		for i := 0; i < 3; i++ {
			p, err := faultproxy.Listen(fmt.Sprintf("127.0.0.1:%d", adv+10*i+k), fmt.Sprintf("127.0.0.1:%d", opts.PortBase+10*i+6+k))
			if err != nil {
				for _, m2 := range c.members {
					m2.proxies.Close()
				}
				m.proxies.Close()
				return nil, err
			}
			m.proxies = append(m.proxies, p)
		}
		c.members = append(c.members, m)
	}
	defer func() {
		for _, m := range c.members {
			m.proxies.Close()
		}
	}()

	// A fresh three-node cluster.
	_, _ = c.script(context.Background(), "stop", "--dir", opts.Dir)
	c.say("starting 3 brokers (RF 3, min.insync.replicas=2) in %s", opts.Dir)
	if _, err := c.script(ctx, "start", "--dir", opts.Dir, "--name", "chaos", "--nodes", "3",
		"--port", strconv.Itoa(opts.PortBase), "--extra-listeners", fmt.Sprintf("3:%d", adv),
		"--owner", strconv.Itoa(os.Getpid())); err != nil {
		return nil, err
	}
	if !opts.Keep {
		defer func() {
			if _, err := c.script(context.Background(), "stop", "--dir", opts.Dir); err != nil {
				c.say("stopping the cluster: %v", err)
			}
		}()
	}
	c.admin, err = kgo.NewClient(kgo.SeedBrokers(strings.Split(c.plainBootstrap(), ",")...), kgo.RequestTimeoutOverhead(5*time.Second))
	if err != nil {
		return nil, err
	}
	defer c.admin.Close()
	c.adm = kadm.NewClient(c.admin)
	c.role = fmt.Sprintf("chaos-%d", opts.Seed)
	c.topic = fmt.Sprintf("chaos-commands-%d-%d", opts.Seed, time.Now().Unix())
	if err := c.createTopic(ctx); err != nil {
		return nil, err
	}
	c.say("role %s, command topic %s (1 partition, RF 3, min.insync.replicas=2)", c.role, c.topic)

	for _, m := range c.members {
		if err := c.startMember(m, 0); err != nil {
			c.stopMembers()
			return nil, err
		}
	}
	faultCtx, cancel := context.WithTimeout(ctx, opts.Duration)
	c.schedule(faultCtx)
	cancel()
	c.wg.Wait() // a broker fault in flight ends (its node restarted)
	c.say("faults over: healing every link, resuming, restarting what is down")
	for _, m := range c.members {
		m.proxies.Heal()
	}
	c.restartDownBrokers()
	// A short quiet period: the role settles, commands flow again.
	c.say("quiet period (10s)")
	quiet := time.NewTimer(10 * time.Second)
	select {
	case <-quiet.C:
	case <-ctx.Done():
	}
	c.stopMembers()

	recs, err := c.readLog(context.Background())
	if err != nil {
		return nil, fmt.Errorf("reading the command log: %w", err)
	}
	c.mu.Lock()
	acks := append([]Ack(nil), c.acks...)
	c.mu.Unlock()
	for _, a := range acks {
		rep.Members[a.Member]++
	}
	res := Check(recs, acks, time.Duration(opts.DispatchMs)*time.Millisecond+time.Second)
	rep.Result = res
	for _, v := range res.Violations {
		rep.Violations = append(rep.Violations, v.String())
	}
	rep.Shortfalls = Shortfalls(rep.Minimums, opts.Duration, res.Acked, res.Tokens, c.drawn, c.faults)
	rep.Elapsed = time.Since(c.start).Round(time.Second).String()
	c.summary(rep)
	if b, err := json.MarshalIndent(rep, "", "  "); err == nil {
		_ = os.WriteFile(filepath.Join(opts.LogDir, "result.json"), b, 0o644)
	}
	return rep, nil
}

func (c *campaign) createTopic(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	isr := "2"
	resp, err := c.adm.CreateTopic(ctx, 1, 3, map[string]*string{"min.insync.replicas": &isr}, c.topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		return fmt.Errorf("creating %s: %w", c.topic, err)
	}
	return nil
}

// startMember starts (or restarts) a member's process, with a clock offset
// when skewMs is not 0.
func (c *campaign) startMember(m *member, skewMs int64) error {
	argv := append(append([]string{}, m.host.Argv...), m.proxies.Bootstrap(), c.role, m.name, c.topic)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = c.opts.Repo
	cmd.Env = append(append(os.Environ(), m.host.Env...),
		fmt.Sprintf("KRABKA_LEASE_MS=%d", c.opts.LeaseMs),
		fmt.Sprintf("KRABKA_RENEW_INTERVAL_MS=%d", c.opts.RenewMs),
		fmt.Sprintf("KRABKA_CHALLENGE_STAGGER_MS=%d", c.opts.StaggerMs),
		fmt.Sprintf("KRABKA_DISPATCH_INTERVAL_MS=%d", c.opts.DispatchMs),
		fmt.Sprintf("KRABKA_REQUEST_TIMEOUT_MS=%d", c.opts.RequestTimeoutMs),
		"KRABKA_REJOIN_DELAY_MS=500",
	)
	if skewMs != 0 {
		cmd.Env = append(cmd.Env, fmt.Sprintf("KRABKA_TEST_CLOCK_OFFSET_MS=%d", skewMs))
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if m.log == nil {
		f, err := os.OpenFile(filepath.Join(c.opts.LogDir, m.name+".log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return err
		}
		m.log = f
	}
	cmd.Stderr = m.log
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting %s: %w", m.name, err)
	}
	exited := make(chan struct{})
	m.mu.Lock()
	m.cmd, m.pid, m.exited, m.paused, m.skewMs = cmd, cmd.Process.Pid, exited, false, skewMs
	m.mu.Unlock()
	fmt.Fprintf(m.log, "# %s: pid %d skew %d ms: %s\n", time.Now().Format(time.RFC3339Nano), cmd.Process.Pid, skewMs, strings.Join(argv, " "))
	go func() {
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 64*1024), 1024*1024)
		for sc.Scan() {
			line := sc.Text()
			fmt.Fprintln(m.log, line)
			if ev, ok := demo.ParseEvent(line, m.name, time.Now()); ok && ev.Strict {
				c.handle(m, ev)
			}
		}
		_ = cmd.Wait()
		close(exited)
	}()
	return nil
}

func (c *campaign) handle(m *member, ev demo.Event) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.events[ev.Kind]++
	switch ev.Kind {
	case demo.Dispatched:
		t, ok1 := ev.Token()
		seq, ok2 := ev.Int("seq")
		part, ok3 := ev.Int("partition")
		off, ok4 := ev.Int("offset")
		if ok1 && ok2 && ok3 && ok4 {
			c.acks = append(c.acks, Ack{Member: m.name, Token: t, Seq: seq, Partition: int32(part), Offset: off, At: ev.At})
		} else {
			c.events["DISPATCHED-unparsed"]++
		}
		if c.opts.Verbose {
			fmt.Fprintf(c.opts.Out, "[%7.1fs]   %s %s\n", time.Since(c.start).Seconds(), m.name, ev.Raw)
		}
		return
	case demo.Acquired:
		c.leader = m.name
	case demo.Fenced, demo.Expired, demo.Resigned, demo.Stopped:
		if c.leader == m.name {
			c.leader = ""
		}
	case demo.Renewed:
		if !c.opts.Verbose {
			return
		}
	}
	if ev.Kind != demo.Renewed || c.opts.Verbose {
		line := fmt.Sprintf("[%7.1fs]   %s %s %s", time.Since(c.start).Seconds(), m.name, ev.Kind, fieldsText(ev))
		fmt.Fprintln(c.opts.Out, line)
		if c.evlog != nil {
			fmt.Fprintln(c.evlog, line)
		}
	}
}

func fieldsText(ev demo.Event) string {
	keys := make([]string, 0, len(ev.Fields))
	for k := range ev.Fields {
		if k == "msg" && len(ev.Fields[k]) > 160 {
			continue
		}
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "%s=%s ", k, ev.Fields[k])
	}
	return strings.TrimSpace(b.String())
}

// leaderOr is the current leader when toLeader and one is known, else the
// member drawn (drawn is always drawn, so the generator's sequence does not
// depend on what happened).
func (c *campaign) leaderOr(toLeader bool, drawn int) *member {
	c.mu.Lock()
	l := c.leader
	c.mu.Unlock()
	if toLeader && l != "" {
		for _, m := range c.members {
			if m.name == l {
				return m
			}
		}
	}
	return c.members[drawn%len(c.members)]
}

func (c *campaign) sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

func between(r *rand.Rand, lo, hi time.Duration) time.Duration {
	return lo + time.Duration(r.Int64N(int64(hi-lo)+1))
}

// drawn counts a fault the schedule chose; injected counts it again once it
// took effect (the minimums compare the two).
func (c *campaign) draw(kind string) {
	c.mu.Lock()
	c.drawn[kind]++
	c.mu.Unlock()
}

func (c *campaign) injected(kind string) {
	c.mu.Lock()
	c.faults[kind]++
	c.mu.Unlock()
}

// linksAre is true when every proxy of g holds the fault (cut, or delayed
// by delay); a proxy to a broker that is down keeps it for when it is up.
func linksAre(cut bool, delay time.Duration, g ...*faultproxy.Proxy) bool {
	for _, p := range g {
		if c, d := p.Armed(); c != cut || d != delay {
			return false
		}
	}
	return len(g) > 0
}

// schedule draws faults until ctx ends. Member and link faults run one at a
// time in this loop; a broker fault runs beside them (at most one broker
// down at any time: with RF 3 and min.insync.replicas=2 the cluster stays
// writable). Every draw comes from the seeded generator, in a fixed order.
func (c *campaign) schedule(ctx context.Context) {
	lease := time.Duration(c.opts.LeaseMs) * time.Millisecond
	for ctx.Err() == nil {
		gap := between(c.rng, 2*time.Second, 6*time.Second)
		kind := c.rng.IntN(100)
		toLeader := c.rng.IntN(100) < 75
		d1 := between(c.rng, 500*time.Millisecond, 3*time.Second)
		d2 := between(c.rng, 1*time.Second, 4*time.Second)
		pick := c.rng.IntN(3)
		skew := between(c.rng, 2*time.Second, 8*time.Second)
		if c.rng.IntN(2) == 0 {
			skew = -skew
		}
		delay := between(c.rng, 100*time.Millisecond, 1500*time.Millisecond)
		drawnMember := c.rng.IntN(len(c.members))
		drawnNode := 1 + c.rng.IntN(3)
		if !c.sleep(ctx, gap) {
			return
		}
		switch {
		case kind < 20: // member SIGKILL and restart
			m := c.leaderOr(toLeader, drawnMember)
			c.draw("member-kill")
			c.say("FAULT member-kill: SIGKILL %s (pid %d), restart in %s", m.name, m.pid, d1.Round(time.Millisecond))
			if c.kill(m) {
				c.injected("member-kill")
			} else {
				c.say("(member-kill: %s was not running)", m.name)
			}
			c.sleep(context.Background(), d1)
			if err := c.startMember(m, 0); err != nil {
				c.say("restart %s: %v", m.name, err)
			}
		case kind < 38: // SIGSTOP past the lease, SIGCONT
			m := c.leaderOr(toLeader, drawnMember)
			d := lease + d2
			c.draw("member-pause")
			c.say("FAULT member-pause: SIGSTOP %s for %s (lease %s), then SIGCONT", m.name, d.Round(time.Millisecond), lease)
			if c.signal(m, syscall.SIGSTOP) {
				c.injected("member-pause")
			} else {
				c.say("(member-pause: %s was not running)", m.name)
			}
			c.sleep(context.Background(), d)
			c.signal(m, syscall.SIGCONT)
		case kind < 56: // broker SIGKILL and restart, beside the member faults
			target := []string{"random", "partition-leader", "txn-coordinator"}[pick]
			c.mu.Lock()
			busy := c.brokerBusy
			if !busy {
				c.brokerBusy = true
			}
			c.mu.Unlock()
			if busy {
				c.say("(broker fault skipped: one broker fault at a time)")
				continue
			}
			kind := "broker-kill(" + target + ")"
			c.draw(kind)
			node := c.brokerFor(target, drawnNode)
			down := d1 + d2
			c.say("FAULT broker-kill(%s): SIGKILL broker %d, restart after %s", target, node, down.Round(time.Millisecond))
			c.wg.Add(1)
			go func() {
				defer c.wg.Done()
				defer func() { c.mu.Lock(); c.brokerBusy = false; c.mu.Unlock() }()
				if c.brokerKill(node, down) {
					c.injected(kind)
				}
			}()
		case kind < 76: // client-to-broker cut, then heal
			m := c.leaderOr(toLeader, drawnMember)
			d := d1 + d2
			if pick == 0 {
				node := c.brokerFor("partition-leader", drawnNode)
				c.draw("link-cut(one broker)")
				c.say("FAULT link-cut: %s to broker %d (command partition leader) cut for %s", m.name, node, d.Round(time.Millisecond))
				m.proxies[node-1].Cut()
				if linksAre(true, 0, m.proxies[node-1]) {
					c.injected("link-cut(one broker)")
				}
				c.sleep(context.Background(), d)
				m.proxies[node-1].Heal()
			} else {
				c.draw("link-cut(all brokers)")
				c.say("FAULT link-cut: %s cut from every broker for %s", m.name, d.Round(time.Millisecond))
				m.proxies.Cut()
				if linksAre(true, 0, m.proxies...) {
					c.injected("link-cut(all brokers)")
				}
				c.sleep(context.Background(), d)
				m.proxies.Heal()
			}
			c.say("healed %s", m.name)
		case kind < 88: // client-to-broker delay
			m := c.leaderOr(toLeader, drawnMember)
			d := d1 + d2 + lease
			c.draw("link-delay")
			c.say("FAULT link-delay: %s's links delayed by %s for %s", m.name, delay.Round(time.Millisecond), d.Round(time.Millisecond))
			m.proxies.Delay(delay)
			if linksAre(false, delay, m.proxies...) {
				c.injected("link-delay")
			}
			c.sleep(context.Background(), d)
			m.proxies.Heal()
		default: // one member's clock offset by seconds (restart with the test-only hook)
			m := c.leaderOr(toLeader, drawnMember)
			c.draw("clock-skew")
			c.say("FAULT clock-skew: restart %s with its lease clock offset by %+ds", m.name, skew/time.Second)
			c.kill(m)
			c.sleep(context.Background(), d1)
			if err := c.startMember(m, skew.Milliseconds()); err != nil {
				c.say("restart %s: %v", m.name, err)
			} else {
				c.injected("clock-skew")
			}
		}
	}
}

// running is true while the member's current process has not exited.
func (m *member) running() bool {
	if m.pid <= 0 || m.exited == nil {
		return false
	}
	select {
	case <-m.exited:
		return false
	default:
		return true
	}
}

// signal sends sig to the member's process; true when it was running and
// the signal was delivered.
func (c *campaign) signal(m *member, sig syscall.Signal) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.pid <= 0 {
		return false
	}
	alive := m.running()
	err := syscall.Kill(m.pid, sig)
	switch sig {
	case syscall.SIGSTOP:
		m.paused = true
	case syscall.SIGCONT:
		m.paused = false
	}
	return alive && err == nil
}

// kill SIGKILLs a member's process and waits until it is gone; true when it
// was running and the signal was delivered.
func (c *campaign) kill(m *member) bool {
	m.mu.Lock()
	pid, exited := m.pid, m.exited
	alive := m.running()
	m.mu.Unlock()
	if pid <= 0 {
		return false
	}
	err := syscall.Kill(pid, syscall.SIGKILL)
	<-exited
	c.mu.Lock()
	if c.leader == m.name {
		c.leader = ""
	}
	c.mu.Unlock()
	return alive && err == nil
}

// brokerFor names the node (1-based) a broker fault aims at.
func (c *campaign) brokerFor(target string, drawn int) int {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	switch target {
	case "partition-leader":
		md, err := c.adm.Metadata(ctx, c.topic)
		if err == nil {
			if t, ok := md.Topics[c.topic]; ok {
				if p, ok := t.Partitions[0]; ok && p.Leader >= 1 && p.Leader <= 3 {
					return int(p.Leader)
				}
			}
		}
	case "txn-coordinator":
		req := kmsg.NewPtrFindCoordinatorRequest()
		req.CoordinatorType = 1
		req.CoordinatorKeys = []string{c.role}
		req.CoordinatorKey = c.role
		if resp, err := req.RequestWith(ctx, c.admin); err == nil {
			for _, co := range resp.Coordinators {
				if co.ErrorCode == 0 && co.NodeID >= 1 && co.NodeID <= 3 {
					return int(co.NodeID)
				}
			}
			if resp.ErrorCode == 0 && resp.NodeID >= 1 && resp.NodeID <= 3 {
				return int(resp.NodeID)
			}
		}
	}
	return drawn
}

// brokerKill kills a broker and restarts it after down; true when the kill
// took effect.
func (c *campaign) brokerKill(node int, down time.Duration) bool {
	c.proxiesOf(node, false)
	if _, err := c.script(context.Background(), "kill-node", strconv.Itoa(node), "--dir", c.opts.Dir); err != nil {
		c.say("kill-node %d: %v", node, err)
		c.proxiesOf(node, true)
		return false
	}
	c.mu.Lock()
	c.down[node] = true
	c.mu.Unlock()
	time.Sleep(down)
	t0 := time.Now()
	if _, err := c.script(context.Background(), "start-node", strconv.Itoa(node), "--dir", c.opts.Dir); err != nil {
		c.say("start-node %d: %v", node, err)
		return true
	}
	c.proxiesOf(node, true)
	c.mu.Lock()
	delete(c.down, node)
	c.mu.Unlock()
	c.say("broker %d back (ready in %s)", node, time.Since(t0).Round(100*time.Millisecond))
	return true
}

func (c *campaign) restartDownBrokers() {
	c.mu.Lock()
	var nodes []int
	for n := range c.down {
		nodes = append(nodes, n)
	}
	c.mu.Unlock()
	for _, n := range nodes {
		if _, err := c.script(context.Background(), "start-node", strconv.Itoa(n), "--dir", c.opts.Dir); err != nil {
			c.say("start-node %d: %v", n, err)
		}
		c.proxiesOf(n, true)
	}
}

// proxiesOf takes the members' proxies to a broker down (a dead broker
// refuses connections; a proxy left listening would accept and then close
// them, which clients read differently) or up again.
func (c *campaign) proxiesOf(node int, up bool) {
	for _, m := range c.members {
		p := m.proxies[node-1]
		if !up {
			p.Down()
		} else if err := p.Up(); err != nil {
			c.say("%v", err)
		}
	}
}

// stopMembers resumes and terminates every member (SIGTERM: it resigns),
// SIGKILL after 10 s.
func (c *campaign) stopMembers() {
	c.mu.Lock()
	c.stopping = true
	c.mu.Unlock()
	for _, m := range c.members {
		c.signal(m, syscall.SIGCONT)
		c.signal(m, syscall.SIGTERM)
	}
	for _, m := range c.members {
		m.mu.Lock()
		exited := m.exited
		pid := m.pid
		m.mu.Unlock()
		if exited == nil {
			continue
		}
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			_ = syscall.Kill(pid, syscall.SIGKILL)
			<-exited
		}
		if m.log != nil {
			m.log.Close()
		}
	}
}

// readLog reads every committed record of the command topic (all
// partitions, read_committed) up to the last stable offset, once no
// transaction is open any more (a killed leader's open transaction is
// aborted by its successor or by its timeout).
func (c *campaign) readLog(ctx context.Context) ([]Record, error) {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	var lso map[int32]int64
	for {
		committed, err := c.adm.ListCommittedOffsets(ctx, c.topic)
		if err != nil {
			return nil, err
		}
		ends, err := c.adm.ListEndOffsets(ctx, c.topic)
		if err != nil {
			return nil, err
		}
		lso = map[int32]int64{}
		settled := true
		committed.Each(func(o kadm.ListedOffset) {
			lso[o.Partition] = o.Offset
			if e, ok := ends.Lookup(c.topic, o.Partition); !ok || e.Offset != o.Offset {
				settled = false
			}
		})
		if settled || ctx.Err() != nil {
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	parts := map[int32]kgo.Offset{}
	want := 0
	for p, o := range lso {
		if o > 0 {
			parts[p] = kgo.NewOffset().AtStart()
			want++
		}
	}
	if want == 0 {
		return nil, nil
	}
	rd, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(c.plainBootstrap(), ",")...),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{c.topic: parts}),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.KeepControlRecords())
	if err != nil {
		return nil, err
	}
	defer rd.Close()
	var recs []Record
	done := map[int32]bool{}
	for len(done) < want {
		fs := rd.PollFetches(ctx)
		if ctx.Err() != nil {
			return nil, fmt.Errorf("reading %s: %w (read %d records)", c.topic, ctx.Err(), len(recs))
		}
		for _, fe := range fs.Errors() {
			if fe.Err != nil && !errors.Is(fe.Err, context.Canceled) {
				return nil, fmt.Errorf("fetching %s: %w", c.topic, fe.Err)
			}
		}
		fs.EachRecord(func(r *kgo.Record) {
			end := lso[r.Partition]
			if r.Offset >= end-1 {
				done[r.Partition] = true
			}
			if r.Offset >= end || r.Attrs.IsControl() {
				return
			}
			recs = append(recs, ParseRecord(r.Partition, r.Offset,
				core.FencingToken{ProducerID: r.ProducerID, ProducerEpoch: r.ProducerEpoch}, string(r.Value)))
		})
	}
	sort.SliceStable(recs, func(i, j int) bool {
		if recs[i].Partition != recs[j].Partition {
			return recs[i].Partition < recs[j].Partition
		}
		return recs[i].Offset < recs[j].Offset
	})
	return recs, nil
}

func (c *campaign) summary(rep *Report) {
	r := rep.Result
	av := r.Availability
	var kinds []string
	total := 0
	for k, n := range rep.Faults {
		kinds = append(kinds, fmt.Sprintf("%s=%d", k, n))
		total += n
	}
	sort.Strings(kinds)
	drawn := 0
	for _, n := range rep.Drawn {
		drawn += n
	}
	c.say("==== chaos seed=%d: %d faults injected (of %d drawn) over %s: %s", rep.Seed, total, drawn, rep.Duration, strings.Join(kinds, " "))
	c.say("host events: ACQUIRED=%d FENCED=%d EXPIRED=%d ERROR=%d STARTED=%d", rep.Events[demo.Acquired], rep.Events[demo.Fenced],
		rep.Events[demo.Expired], rep.Events[demo.Error], rep.Events[demo.Started])
	c.say("commands: acknowledged=%d found=%d lost=%d duplicated=%d; committed records=%d (unacknowledged=%d, re-sent=%d); tokens=%d",
		r.Acked, r.Found, r.Lost, r.Duplicated, r.Records, r.Unacked, r.Resent, r.Tokens)
	c.say("order violations=%d stale tokens=%d token mismatches=%d", r.OrderBreaks, r.StaleTokens, r.TokenMismatch)
	c.say("availability %.2f%% over %s (gaps > %s: %d, p50 %s p90 %s p99 %s max %s)", av.Fraction*100, av.Span.Round(time.Second),
		av.Slack, len(av.Gaps), av.P50.Round(time.Millisecond), av.P90.Round(time.Millisecond), av.P99.Round(time.Millisecond), av.Max.Round(time.Millisecond))
	m := rep.Minimums
	c.say("minimums for %s: acknowledged >= %d, takeovers >= %d, faults >= %d, each drawn kind >= %d", rep.Duration, m.Acked, m.Takeovers, m.Faults, m.PerKind)
	if rep.OK() {
		c.say("PASS (seed %d)", rep.Seed)
		return
	}
	c.say("FAIL (seed %d, replay: %s): %d violation(s), %d minimum(s) missed:", rep.Seed, rep.Replay, len(r.Violations), len(rep.Shortfalls))
	for _, v := range r.Violations {
		c.say("  %s", v)
	}
	for _, s := range rep.Shortfalls {
		c.say("  %s", s)
	}
}
