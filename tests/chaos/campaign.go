// Package chaos is the randomized fault campaign of krabka-coord (`make
// chaos`): three brokers (replication 3, min.insync.replicas=2), each in a
// network namespace of its own; three members in three languages (the C
// device host, the Python host and the Node host of demo/) leading the
// primary role and writing numbered commands from several concurrent
// writers through guarded writes; two Go member processes taking part in
// five more roles with one client each, on the primary role's partition of
// the coordination topic and on one more (roles.go); a baseline writer
// beside them that needs no election; a seeded schedule of faults; a
// checker over each role's committed command log (checker.go,
// linearize.go) and over the coordination topic (deposed.go); see
// docs/RELIABILITY.md.
//
// The network (network.go, netlab): every broker, every member's link, the
// baseline's link and the campaign's own admin client have a namespace with
// a port on one bridge. Broker-to-broker connections go through proxies on
// each broker's own loopback (cluster.sh --peer-proxies), and each member
// runs in the namespace of its link and reaches the brokers only through its
// own fault proxies (tests/kafka/faultproxy) on that namespace's loopback:
// the brokers advertise a listener per member whose address is that
// member's proxy (cluster.sh --extra-listeners). So every
// connection of the campaign crosses links it controls: packet filters in
// the namespaces (partitions, one-way and partial loss) and the proxies
// (cuts that hold data, delays).
package chaos

import (
	"bufio"
	"context"
	"encoding/json"
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

	"github.com/krabka/krabka-coord/core"
	"github.com/krabka/krabka-coord/core/coord"
	"github.com/krabka/krabka-coord/demo"
	"github.com/krabka/krabka-coord/tests/chaos/netlab"
	"github.com/krabka/krabka-coord/tests/kafka/faultproxy"
)

// BaselineMember is the member name the baseline writer's commands carry.
const BaselineMember = "baseline"

// Options of one campaign.
type Options struct {
	Repo       string        // repository root
	Lib        string        // build/libkrabka_coord.so
	CHost      string        // build/examples/device_host
	Seed       uint64        // the schedule's seed (0: from the clock; printed)
	Duration   time.Duration // how long faults are injected
	PortBase   int           // the brokers' base port (inside their namespaces); proxies at PortBase+100, +200
	Dir        string        // cluster.sh dir (default $KRABKA_KAFKA_ROOT/chaos-<PortBase>)
	LogDir     string        // host logs, events, result.json (default build/chaos/<seed>)
	Keep       bool          // keep the cluster running at the end
	Out        io.Writer     // the timeline
	Verbose    bool          // every host event
	TxnVersion int           // transaction.version of the cluster: 1, 2, or 0 from the seed (odd seeds 1, even 2)
	Writers    int           // concurrent writers per leadership (default 8)
	Subnet     string        // the lab's /24, first three octets (default 10.213.0)

	CoordPartitions int32 // partitions of the coordination topic the campaign creates (default 4)
	RoleWriters     int   // concurrent writers per leadership of an extra role (default 2)
	RolePaceMs      int64 // an extra role's writer's pause between commands (default 200)
	NoPipeline      bool  // leave out the pipeline role (pipeline.go)
	RequestMs       int64 // the pipeline's request writer's interval (default 100)
	NoGroup         bool  // leave out the group mode (group.go)
	GroupShards     int   // the group's shards (default 16)
	GroupMembers    int   // the group's member processes (default 3)
	GroupMaxMoves   int   // the group's bound on moves in flight (default 4)
	GroupPaceMs     int64 // a group member's pause between two commands of one shard (default 1000; one writer per shard)
	GroupLeaseMs    int64 // the group members' lease (default 10000; renewal every third of it)

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
		o.Dir = filepath.Join(root, fmt.Sprintf("chaos-%d", o.PortBase))
	}
	if o.LogDir == "" {
		o.LogDir = filepath.Join(o.Repo, "build", "chaos", strconv.FormatUint(o.Seed, 10))
	}
	if o.Out == nil {
		o.Out = os.Stdout
	}
	if o.TxnVersion == 0 {
		o.TxnVersion = 2 - int(o.Seed%2)
	}
	if o.Writers == 0 {
		o.Writers = 8
	}
	if o.Subnet == "" {
		o.Subnet = "10.213.0"
	}
	if o.CoordPartitions == 0 {
		o.CoordPartitions = 4
	}
	if o.RoleWriters == 0 {
		o.RoleWriters = 2
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
	def(&o.RolePaceMs, 200)
	def(&o.RequestMs, 100)
	if o.GroupShards == 0 {
		o.GroupShards = 16
	}
	if o.GroupMembers == 0 {
		o.GroupMembers = 3
	}
	if o.GroupMaxMoves == 0 {
		o.GroupMaxMoves = 4
	}
	def(&o.GroupPaceMs, 1000)
	def(&o.GroupLeaseMs, 10000)
}

// SkewBound is the largest clock offset of the clock-skew fault (faults.go).
const SkewBound = 8 * time.Second

// Report is the outcome of a campaign.
type Report struct {
	Seed        uint64           `json:"seed"`
	Duration    string           `json:"duration"`
	TxnVersion  int              `json:"transaction_version"`
	Writers     int              `json:"writers_per_leadership"`
	Commit      string           `json:"commit,omitempty"`
	Faults      map[string]int   `json:"faults"`       // faults that took effect, by kind
	Drawn       map[string]int   `json:"faults_drawn"` // faults the schedule drew, by kind
	Minimums    Minimums         `json:"minimums"`     // what the run had to see (minimums.go)
	Shortfalls  []string         `json:"shortfalls"`   // the minimums it missed (the run fails)
	Events      map[string]int   `json:"events"`       // host events by kind (ACQUIRED, FENCED, ...)
	Result      *Result          `json:"result"`
	Violations  []string         `json:"violations"`
	Replay      string           `json:"replay"`
	Members     map[string]int   `json:"acked_by_member"`
	Groups      GroupStats       `json:"group_commit"`
	LongGaps    []GapReport      `json:"long_gaps"` // every members' gap longer than 10 s, explained
	BaseLong    []GapReport      `json:"baseline_long_gaps"`
	FaultLog    []FaultRecord    `json:"fault_log"`
	Started     time.Time        `json:"started"`
	Elapsed     string           `json:"elapsed"`
	BrokerReady []string         `json:"broker_restarts,omitempty"`
	Extra       map[string]int64 `json:"extra,omitempty"`

	// The roles on shared partitions (roles.go): the coordination topic's
	// layout, each extra role's checker verdict, the healthy holders
	// deposed (deposed.go) and what it was judged on.
	Coordination CoordLayout            `json:"coordination"`
	Roles        map[string]*RoleReport `json:"roles"`
	Deposed      *DeposeResult          `json:"healthy_holders_deposed"`
	MidTxn       []MidTxnRecord         `json:"midtxn_faults"`
	Pipeline     *PipeResult            `json:"pipeline,omitempty"`   // the exactly-once figures (pipeline.go)
	RoleGroup    *GroupResult           `json:"role_group,omitempty"` // the group mode: per-shard checks, moves, convergence (group.go)
	MemberFaults []MemberFault          `json:"member_faults"`
	Skews        []SkewSpan             `json:"clock_skews"`
}

// CoordLayout is the coordination topic and which roles share which of its
// partitions.
type CoordLayout struct {
	Topic      string             `json:"topic"`
	Partitions int32              `json:"partitions"`
	Roles      map[int32][]string `json:"roles_by_partition"`
	BadRecords int                `json:"undecodable_records"`
}

// GroupStats says how far concurrent writers shared transactions: the
// committed member records per batch (records of one producer in one
// transaction land in consecutive offsets of one batch per produce request).
type GroupStats struct {
	Transactions int     `json:"transactions"`        // distinct (producer, commit) groups seen in the log
	Shared       int     `json:"shared"`              // of those, carrying commands of two or more writers
	MaxWriters   int     `json:"max_writers"`         // the most writers in one transaction
	MeanRecords  float64 `json:"mean_records"`        // records per transaction
	UnderFaults  int     `json:"shared_under_faults"` // shared transactions committed while a fault was active
}

// OK is true when the checker found no violation in any role, no healthy
// holder was deposed and the run saw at least its minimums of acknowledged
// commands, takeovers and faults.
func (r *Report) OK() bool {
	if r.Result == nil || !r.Result.OK() || len(r.Shortfalls) > 0 || r.Deposed == nil || r.Deposed.Count > 0 {
		return false
	}
	for _, x := range r.Roles {
		if x.Result == nil || !x.Result.OK() {
			return false
		}
	}
	if r.RoleGroup != nil && (r.RoleGroup.Check == nil || !r.RoleGroup.Check.OK()) {
		return false
	}
	return r.Pipeline == nil || r.Pipeline.ExactlyOnce()
}

type member struct {
	name     string
	host     demo.Host
	ep       *netlab.Endpoint // the namespace its links dial from
	proxies  faultproxy.Group // one per broker
	baseline bool
	mu       sync.Mutex
	cmd      *exec.Cmd
	pid      int
	exited   chan struct{}
	paused   bool
	skewMs   int64
	log      *os.File
	multi    bool              // a Go process of several roles (cmd/krabka-member)
	group    bool              // a Go process of the group mode (group.go)
	stdin    io.WriteCloser    // its control pipe (multi)
	mid      chan MidTxnRecord // a mid-transaction fault waits for its MIDTXN (under c.mu)
}

// hostEvent is a host event the gap explanations read.
type hostEvent struct {
	At     time.Time
	Member string
	Kind   string
	Op     string
	Code   string
	Msg    string
}

type campaign struct {
	opts    Options
	rng     *rand.Rand
	start   time.Time
	role    string
	topic   string
	members []*member // the three members, then the baseline
	base    *member
	gos     []*member    // the Go processes of the extra roles
	roles   []*extraRole // the extra roles
	pipe    *pipeRole    // the pipeline role (nil: NoPipeline)
	grp     []*member    // the group members (also in gos)
	group   *GroupResult // the group mode (nil: NoGroup)
	p0      int32        // the primary role's partition of the coordination topic
	admin   *kgo.Client
	adm     *kadm.Client
	net     *network
	baseTxn string

	mu         sync.Mutex
	acks       []Ack
	baseAcks   []Ack
	mints      []Mint
	acquired   map[string]bool
	hostEvents []hostEvent
	leader     string         // member that last ACQUIRED and has not lost it since (best knowledge)
	faults     map[string]int // took effect
	drawn      map[string]int
	events     map[string]int
	brokerBusy bool
	down       map[int]bool
	paused     map[int]bool // brokers SIGSTOPped
	twoDown    []Window
	faultLog   []FaultRecord
	readyLog   []string
	evlog      *os.File
	stopping   bool

	roleAcks     map[string][]Ack           // the extra roles' acknowledged commands
	roleMints    map[string][]Mint          // ... epochs minted
	roleAcquired map[string]map[string]bool // ... "member|token" of every ACQUIRED
	holders      map[string]string          // extra role -> the Go process that holds it (best knowledge)
	midLog       []MidTxnRecord
	skews        []SkewSpan
	gtrack       *GroupTracker // moves and convergence of the group (nil: NoGroup)
	wg           sync.WaitGroup
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

// Run runs one campaign: it builds the network, starts the cluster, the
// members and the baseline, injects faults for opts.Duration, stops
// everything and checks the log. The error is for a campaign that could
// not run (one sentence first); a violation is in the report. Everything it
// made is removed on every way out: the watchdogs of cluster.sh and of the
// network remove the brokers and the namespaces even if this process dies.
func Run(ctx context.Context, opts Options) (rep *Report, err error) {
	opts.defaults()
	if !opts.NoGroup {
		switch {
		case opts.GroupShards < 1 || opts.GroupShards > coord.MaxGroupShards:
			return nil, fmt.Errorf("the group mode's shard count %d is out of range [1, %d]", opts.GroupShards, coord.MaxGroupShards)
		case opts.GroupMembers < 1 || opts.GroupMembers > 20:
			return nil, fmt.Errorf("the group mode's member count %d is out of range [1, 20]", opts.GroupMembers)
		case opts.GroupMaxMoves < 1:
			return nil, fmt.Errorf("the group mode's move bound %d is below 1", opts.GroupMaxMoves)
		}
	}
	c := &campaign{opts: opts, rng: rand.New(rand.NewPCG(opts.Seed, opts.Seed^0x9e3779b97f4a7c15)),
		faults: map[string]int{}, drawn: map[string]int{}, events: map[string]int{}, down: map[int]bool{}, paused: map[int]bool{},
		acquired: map[string]bool{}, roleAcks: map[string][]Ack{}, roleMints: map[string][]Mint{},
		roleAcquired: map[string]map[string]bool{}, holders: map[string]string{}}
	rep = &Report{Seed: opts.Seed, Duration: opts.Duration.String(), TxnVersion: opts.TxnVersion, Writers: opts.Writers,
		Faults: c.faults, Drawn: c.drawn, Events: c.events, Commit: gitCommit(opts.Repo),
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
	defer func() {
		if p := recover(); p != nil {
			rep, err = nil, fmt.Errorf("the campaign panicked: %v", p)
		}
	}()
	c.say("chaos: seed=%d duration=%s transaction.version=%d writers=%d (replay: %s); logs in %s", opts.Seed, opts.Duration,
		opts.TxnVersion, opts.Writers, rep.Replay, opts.LogDir)

	baseBin := filepath.Join(opts.LogDir, "krabka-baseline")
	build := exec.Command("go", "build", "-o", baseBin, "./tests/chaos/cmd/krabka-baseline")
	build.Dir = opts.Repo
	if out, err := build.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("building the baseline writer: %v\n%s", err, out)
	}
	goBin := filepath.Join(opts.LogDir, "krabka-member")
	build = exec.Command("go", "build", "-o", goBin, "./tests/chaos/cmd/krabka-member")
	build.Dir = opts.Repo
	if out, err := build.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("building the Go member: %v\n%s", err, out)
	}

	// The network first: namespaces, the bridge, the proxies.
	hosts := demo.DefaultHosts(opts.Repo, opts.Lib, opts.CHost)
	for _, h := range hosts {
		c.members = append(c.members, &member{name: h.Member, host: h})
	}
	c.base = &member{name: BaselineMember, baseline: true,
		host: demo.Host{Member: BaselineMember, Lang: "Go", Argv: []string{baseBin}}}
	c.members = append(c.members, c.base)
	for _, n := range goMembers {
		c.gos = append(c.gos, &member{name: n, multi: true, host: demo.Host{Member: n, Lang: "Go", Argv: []string{goBin}}})
	}
	if !opts.NoGroup {
		c.setupGroup(goBin)
	}
	nw, err := newNetwork(opts, c.members, c.gos)
	if err != nil {
		return nil, err
	}
	c.net = nw
	defer func() {
		if cerr := nw.close(); cerr != nil {
			c.say("removing the network: %v", cerr)
		}
		if left := netlab.Namespaces(nw.prefix); len(left) > 0 {
			c.say("namespaces left behind: %v", left)
		}
	}()
	c.say("network: %d namespaces on a bridge (%s.0/24, prefix %s): brokers %s; members' and the baseline's links; the admin's",
		len(netlab.Namespaces(nw.prefix)), opts.Subnet, nw.prefix, strings.Join(nw.brokerAddrs(), " "))

	// A fresh three-node cluster inside the brokers' namespaces.
	_, _ = c.script(context.Background(), "stop", "--dir", opts.Dir)
	c.say("starting 3 brokers (RF 3, min.insync.replicas=2, transaction.version=%d) in %s", opts.TxnVersion, opts.Dir)
	if _, err := c.script(ctx, nw.clusterArgs(opts, "start", "--dir", opts.Dir, "--name", "chaos", "--nodes", "3",
		"--port", strconv.Itoa(opts.PortBase), "--extra-listeners", fmt.Sprintf("%d:%d", len(c.members), nw.advBase),
		"--txn-version", strconv.Itoa(opts.TxnVersion), "--owner", strconv.Itoa(os.Getpid()))...); err != nil {
		return nil, err
	}
	if !opts.Keep {
		defer func() {
			if _, err := c.script(context.Background(), "stop", "--dir", opts.Dir); err != nil {
				c.say("stopping the cluster: %v", err)
			}
		}()
	}
	c.admin, err = kgo.NewClient(kgo.SeedBrokers(nw.brokerBootstrap()...), kgo.Dialer(nw.ctl.Dialer()),
		kgo.RequestTimeoutOverhead(5*time.Second))
	if err != nil {
		return nil, err
	}
	defer c.admin.Close()
	c.adm = kadm.NewClient(c.admin)
	c.role = fmt.Sprintf("chaos-%d", opts.Seed)
	c.topic = fmt.Sprintf("chaos-commands-%d-%d", opts.Seed, time.Now().Unix())
	if err := c.createTopic(ctx, c.topic); err != nil {
		return nil, err
	}
	if err := c.createCoordTopic(ctx); err != nil {
		return nil, err
	}
	if c.p0, c.roles, err = layoutRoles(c.role, opts.CoordPartitions, c.topic); err != nil {
		return nil, err
	}
	rep.Coordination = CoordLayout{Topic: CoordTopic, Partitions: opts.CoordPartitions, Roles: map[int32][]string{}}
	for _, r := range c.allRoles() {
		rep.Coordination.Roles[r.Partition] = append(rep.Coordination.Roles[r.Partition], r.Name)
		if r.Label == "primary" {
			continue
		}
		if err := c.createTopic(ctx, r.Topic); err != nil {
			return nil, err
		}
		c.say("extra role %s on partition %d of %s: %s; command topic %s", r.Name, r.Partition, CoordTopic, strings.Join(r.Members, ", "), r.Topic)
	}
	if !opts.NoPipeline {
		if err := c.setupPipe(ctx); err != nil {
			return nil, err
		}
		rep.Coordination.Roles[c.pipe.Partition] = append(rep.Coordination.Roles[c.pipe.Partition], c.pipe.Name)
	}
	if c.group != nil {
		if err := c.createGroupTopic(ctx); err != nil {
			return nil, err
		}
		c.gtrack = NewGroupTracker(c.group.Shards, c.group.Members, time.Now())
	}
	c.baseTxn, err = c.baselineTxnID(ctx)
	if err != nil {
		return nil, err
	}
	c.say("role %s (partition %d of %s, %d partitions), command topic %s (1 partition, RF 3, min.insync.replicas=2, message.timestamp.type=LogAppendTime); baseline transactional.id %s (the role's transaction coordinator)",
		c.role, c.p0, CoordTopic, opts.CoordPartitions, c.topic, c.baseTxn)

	for _, m := range append(append([]*member{}, c.members...), c.gos...) {
		if err := c.startMember(m, 0); err != nil {
			c.stopMembers()
			return nil, err
		}
	}
	faultCtx, cancel := context.WithTimeout(ctx, opts.Duration)
	var reqSent, reqFailed int
	reqDone := make(chan struct{})
	if c.pipe != nil {
		go func() {
			defer close(reqDone)
			reqSent, reqFailed = c.writeRequests(faultCtx)
		}()
	} else {
		close(reqDone)
	}
	c.schedule(faultCtx)
	cancel()
	<-reqDone
	c.wg.Wait() // a broker fault in flight ends (its nodes restarted, its filters removed)
	c.say("faults over: healing every link, resuming, restarting what is down")
	c.healAll()
	// A short quiet period: the role settles, commands flow again.
	c.say("quiet period (10s)")
	quiet := time.NewTimer(10 * time.Second)
	select {
	case <-quiet.C:
	case <-ctx.Done():
	}
	var drained bool
	var drainTook time.Duration
	if c.pipe != nil {
		c.say("pipeline: %d requests written (%d writes failed); letting the last leader drain the input (%s at most)", reqSent, reqFailed, PipeDrainWait)
		drained, drainTook = c.drainPipe(ctx)
		c.say("pipeline: drained=%v after %s", drained, drainTook.Round(100*time.Millisecond))
	}
	if c.gtrack != nil {
		c.mu.Lock()
		c.gtrack.Freeze()
		c.group.GroupFigures = c.gtrack.Figures()
		c.mu.Unlock()
	}
	c.stopMembers()

	recs, err := c.commandRecords(context.Background(), c.topic)
	if err != nil {
		return nil, fmt.Errorf("reading the command log: %w", err)
	}
	leases, bad, err := c.leaseRecords(context.Background())
	if err != nil {
		return nil, fmt.Errorf("reading the coordination topic: %w", err)
	}
	rep.Coordination.BadRecords = bad
	rep.Roles = map[string]*RoleReport{}
	for _, r := range c.roles {
		rrecs, err := c.commandRecords(context.Background(), r.Topic)
		if err != nil {
			return nil, fmt.Errorf("reading the command log of %s: %w", r.Name, err)
		}
		c.mu.Lock()
		rin := Input{Records: rrecs, Acks: append([]Ack(nil), c.roleAcks[r.Name]...), Mints: append([]Mint(nil), c.roleMints[r.Name]...),
			Acquired: c.roleAcquired[r.Name], TwoDown: append([]Window(nil), c.twoDown...),
			Slack: time.Duration(opts.RolePaceMs)*time.Millisecond + time.Second}
		c.mu.Unlock()
		rr := &RoleReport{extraRole: *r, Acked: map[string]int{}, Result: CheckAll(rin)}
		for _, a := range rin.Acks {
			rr.Acked[a.Member]++
		}
		rep.Roles[r.Name] = rr
		for _, v := range rr.Result.Violations {
			rep.Violations = append(rep.Violations, r.Name+": "+v.String())
		}
	}
	if c.pipe != nil {
		pr, err := c.checkPipe(context.Background())
		if err != nil {
			return nil, err
		}
		pr.RequestsSent, pr.SendErrors, pr.Drained, pr.DrainTook = reqSent, reqFailed, drained, drainTook.Round(100*time.Millisecond).String()
		rep.Pipeline = pr
		if !pr.ExactlyOnce() {
			rep.Violations = append(rep.Violations, fmt.Sprintf("pipeline-not-exactly-once: %d missing, %d duplicated, %d out of order, %d unknown of %d requests (drained: %v): %s",
				pr.Missing, pr.Duplicated, pr.OutOfOrder, pr.Unknown, pr.Requests, pr.Drained, strings.Join(pr.Examples, "; ")))
		}
	}
	if c.group != nil {
		if err := c.checkGroup(context.Background()); err != nil {
			return nil, err
		}
		rep.RoleGroup = c.group
		for _, v := range c.group.Check.Violations {
			rep.Violations = append(rep.Violations, "group "+c.group.Group+": "+v)
		}
	}
	c.mu.Lock()
	in := Input{Records: recs, Acks: append([]Ack(nil), c.acks...), Mints: append([]Mint(nil), c.mints...),
		Acquired: c.acquired, TwoDown: append([]Window(nil), c.twoDown...),
		Slack: time.Duration(opts.DispatchMs)*time.Millisecond + time.Second, Baseline: BaselineMember,
		BaseAcks: append([]Ack(nil), c.baseAcks...)}
	faultLog := append([]FaultRecord(nil), c.faultLog...)
	events := append([]hostEvent(nil), c.hostEvents...)
	now := time.Now()
	for i := range c.skews {
		if c.skews[i].To.IsZero() {
			c.skews[i].To = now
		}
	}
	rep.Skews = append([]SkewSpan(nil), c.skews...)
	rep.MidTxn = append([]MidTxnRecord(nil), c.midLog...)
	rep.BrokerReady = append([]string(nil), c.readyLog...)
	c.mu.Unlock()
	for _, a := range in.Acks {
		rep.Members[a.Member]++
	}
	rep.Members[BaselineMember] = len(in.BaseAcks)
	res := CheckAll(in)
	rep.Result = res
	for _, v := range res.Violations {
		rep.Violations = append(rep.Violations, v.String())
	}
	rep.FaultLog = faultLog
	rep.Groups = groupStats(recs, faultLog)
	rep.LongGaps = explainGaps(res.Availability.Long, faultLog, events, res.Baseline, c.start)
	if res.Baseline != nil {
		rep.BaseLong = explainGaps(res.Baseline.Availability.Long, faultLog, nil, nil, c.start)
	}
	rep.MemberFaults = memberFaults(faultLog)
	dep := HealthyDeposed(DeposeInput{Leases: leases, Faults: rep.MemberFaults, Skews: rep.Skews, SkewBound: SkewBound,
		RaceWindow: DefaultRaceWindow})
	rep.Deposed = &dep
	for _, d := range dep.Deposed {
		rep.Violations = append(rep.Violations, "healthy-holder-deposed: "+d.Text)
	}
	rep.Shortfalls = Shortfalls(rep.Minimums, opts.Duration, res.Acked, res.Tokens, c.drawn, c.faults)
	acked := map[string]int{}
	for name, x := range rep.Roles {
		acked[name] = x.Result.Acked
	}
	rep.Shortfalls = append(rep.Shortfalls, RoleShortfalls(rep.Minimums, opts.Duration, acked)...)
	if p := rep.Pipeline; p != nil && p.Requests < rep.Minimums.Acked {
		// A run with no requests would pass the exactly-once check.
		rep.Shortfalls = append(rep.Shortfalls, fmt.Sprintf("minimum missed: %d pipeline requests written, want at least %d in a %s campaign", p.Requests, rep.Minimums.Acked, opts.Duration))
	}
	if g := rep.RoleGroup; g != nil && g.Check.Acked < rep.Minimums.Acked {
		rep.Shortfalls = append(rep.Shortfalls, fmt.Sprintf("minimum missed: %d acknowledged commands of group %s, want at least %d in a %s campaign", g.Check.Acked, g.Group, rep.Minimums.Acked, opts.Duration))
	}
	rep.Elapsed = time.Since(c.start).Round(time.Second).String()
	c.summary(rep)
	if b, err := json.MarshalIndent(rep, "", "  "); err == nil {
		_ = os.WriteFile(filepath.Join(opts.LogDir, "result.json"), b, 0o644)
	}
	return rep, nil
}

func gitCommit(repo string) string {
	out, err := exec.Command("git", "-C", repo, "rev-parse", "--short", "HEAD").Output()
	if err != nil {
		return ""
	}
	s := strings.TrimSpace(string(out))
	if st, err := exec.Command("git", "-C", repo, "status", "--porcelain", "--untracked-files=no").Output(); err == nil && len(st) > 0 {
		s += "+changes"
	}
	return s
}

func (c *campaign) createTopic(ctx context.Context, topic string) error {
	return c.createTopicN(ctx, topic, 1)
}

// createTopicN creates a command topic of n partitions (RF 3,
// min.insync.replicas=2, LogAppendTime).
func (c *campaign) createTopicN(ctx context.Context, topic string, n int32) error {
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	isr, ts := "2", "LogAppendTime"
	resp, err := c.adm.CreateTopic(ctx, n, 3, map[string]*string{"min.insync.replicas": &isr, "message.timestamp.type": &ts}, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		return fmt.Errorf("creating %s: %w", topic, err)
	}
	return nil
}

// startMember starts (or restarts) a member's process, with a clock offset
// when skewMs is not 0.
func (c *campaign) startMember(m *member, skewMs int64) error {
	var argv []string
	if m.group {
		argv = append(append([]string{}, m.host.Argv...), c.groupArgs(m)...)
	} else if m.multi {
		argv = append(append([]string{}, m.host.Argv...), c.goArgs(m)...)
	} else if m.baseline {
		argv = append(append([]string{}, m.host.Argv...), m.proxies.Bootstrap(), c.baseTxn, m.name, c.topic)
	} else {
		argv = append(append([]string{}, m.host.Argv...), m.proxies.Bootstrap(), c.role, m.name, c.topic)
	}
	// In the namespace of its link: its proxies listen on that loopback.
	argv = append([]string{"ip", "netns", "exec", m.ep.NS}, argv...)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = c.opts.Repo
	cmd.Env = append(append(os.Environ(), m.host.Env...),
		fmt.Sprintf("KRABKA_LEASE_MS=%d", c.opts.LeaseMs),
		fmt.Sprintf("KRABKA_RENEW_INTERVAL_MS=%d", c.opts.RenewMs),
		fmt.Sprintf("KRABKA_CHALLENGE_STAGGER_MS=%d", c.opts.StaggerMs),
		fmt.Sprintf("KRABKA_REQUEST_TIMEOUT_MS=%d", c.opts.RequestTimeoutMs),
		// Node: one libuv pool thread per writer, and some for the rest.
		fmt.Sprintf("UV_THREADPOOL_SIZE=%d", c.opts.Writers+8),
		"KRABKA_REJOIN_DELAY_MS=500",
	)
	switch {
	case m.group:
		cmd.Env = append(cmd.Env, fmt.Sprintf("KRABKA_DISPATCH_INTERVAL_MS=%d", c.opts.GroupPaceMs), "KRABKA_WRITERS=1",
			fmt.Sprintf("KRABKA_GROUP_MAX_MOVES=%d", c.opts.GroupMaxMoves),
			fmt.Sprintf("KRABKA_LEASE_MS=%d", c.opts.GroupLeaseMs), fmt.Sprintf("KRABKA_RENEW_INTERVAL_MS=%d", c.opts.GroupLeaseMs/3))
	case m.multi:
		cmd.Env = append(cmd.Env, fmt.Sprintf("KRABKA_DISPATCH_INTERVAL_MS=%d", c.opts.RolePaceMs), fmt.Sprintf("KRABKA_WRITERS=%d", c.opts.RoleWriters))
	default:
		cmd.Env = append(cmd.Env, fmt.Sprintf("KRABKA_DISPATCH_INTERVAL_MS=%d", c.opts.DispatchMs), fmt.Sprintf("KRABKA_WRITERS=%d", c.opts.Writers))
	}
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
	var stdin io.WriteCloser
	if m.multi {
		if stdin, err = cmd.StdinPipe(); err != nil {
			return err
		}
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting %s: %w", m.name, err)
	}
	exited := make(chan struct{})
	m.mu.Lock()
	if m.stdin != nil {
		m.stdin.Close()
	}
	m.cmd, m.pid, m.exited, m.paused, m.skewMs, m.stdin = cmd, cmd.Process.Pid, exited, false, skewMs, stdin
	m.mu.Unlock()
	// The stretches of a skewed lease clock: one ends at the next start.
	now := time.Now()
	c.mu.Lock()
	for i := range c.skews {
		if c.skews[i].Member == m.name && c.skews[i].To.IsZero() {
			c.skews[i].To = now
		}
	}
	if skewMs != 0 {
		c.skews = append(c.skews, SkewSpan{Member: m.name, OffsetMs: skewMs, From: now})
	}
	c.mu.Unlock()
	c.groupUp(m, "restart")
	fmt.Fprintf(m.log, "# %s: pid %d skew %d ms: %s\n", time.Now().Format(time.RFC3339Nano), cmd.Process.Pid, skewMs, strings.Join(argv, " "))
	go func() {
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 64*1024), 1024*1024)
		for sc.Scan() {
			line := sc.Text()
			fmt.Fprintln(m.log, line)
			if m.multi {
				c.goLine(m, line)
			} else if ev, ok := demo.ParseEvent(line, m.name, time.Now()); ok && ev.Strict {
				c.handle(m, ev)
			} else if f := strings.Fields(line); len(f) >= 4 && f[0] == "EVENT" && f[3] == "MINTED" {
				c.handleMint(m, line)
			}
		}
		_ = cmd.Wait()
		close(exited)
	}()
	return nil
}

// handleMint records a MINTED line: "EVENT <ms> <member> MINTED token=<t> at_ms=<ms>".
func (c *campaign) handleMint(m *member, line string) {
	f := strings.Fields(line)
	at, _ := strconv.ParseInt(f[1], 10, 64)
	var tok core.FencingToken
	ok := false
	for _, kv := range f[4:] {
		k, v, _ := strings.Cut(kv, "=")
		switch k {
		case "token":
			if t, err := core.ParseFencingToken(v); err == nil {
				tok, ok = t, true
			}
		case "at_ms":
			if n, err := strconv.ParseInt(v, 10, 64); err == nil && n > 0 {
				at = n
			}
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.events["MINTED"]++
	if !ok {
		c.events["MINTED-unparsed"]++
		return
	}
	if !m.baseline {
		c.mints = append(c.mints, Mint{Member: m.name, Token: tok, At: time.UnixMilli(at)})
	}
	if c.opts.Verbose {
		fmt.Fprintf(c.opts.Out, "[%7.1fs]   %s MINTED %s\n", time.Since(c.start).Seconds(), m.name, tok)
	}
}

func (c *campaign) handle(m *member, ev demo.Event) {
	c.mu.Lock()
	defer c.mu.Unlock()
	kind := ev.Kind
	if m.baseline {
		kind = "baseline-" + kind
	}
	c.events[kind]++
	switch ev.Kind {
	case demo.Dispatched:
		t, ok1 := ev.Token()
		seq, ok2 := ev.Int("seq")
		part, ok3 := ev.Int("partition")
		off, ok4 := ev.Int("offset")
		w, _ := ev.Int("writer")
		if ok1 && ok2 && ok3 && ok4 {
			a := Ack{Member: m.name, Token: t, Seq: seq, Writer: int(w), Partition: int32(part), Offset: off, At: ev.At}
			if m.baseline {
				c.baseAcks = append(c.baseAcks, a)
			} else {
				c.acks = append(c.acks, a)
			}
		} else {
			c.events["DISPATCHED-unparsed"]++
		}
		if c.opts.Verbose {
			fmt.Fprintf(c.opts.Out, "[%7.1fs]   %s %s\n", time.Since(c.start).Seconds(), m.name, ev.Raw)
		}
		return
	case demo.Acquired:
		c.leader = m.name
		if t, ok := ev.Token(); ok {
			c.acquired[m.name+"|"+t.String()] = true
		}
	case demo.Fenced, demo.Expired, demo.Resigned, demo.Stopped:
		if c.leader == m.name {
			c.leader = ""
		}
	case demo.Renewed:
		if !c.opts.Verbose {
			return
		}
	}
	switch ev.Kind {
	case demo.Error, demo.Fenced, demo.Expired, demo.Acquired, demo.Started, demo.Standby:
		c.hostEvents = append(c.hostEvents, hostEvent{At: ev.At, Member: m.name, Kind: ev.Kind, Op: ev.Fields["op"], Code: ev.Fields["code"], Msg: ev.Fields["msg"]})
	}
	if ev.Kind == demo.Error && !c.opts.Verbose {
		return // many under faults: counted, in the host's log and in the gap explanations
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
	if m.pid <= 0 {
		m.mu.Unlock()
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
	m.mu.Unlock()
	switch {
	case sig == syscall.SIGSTOP && alive && err == nil:
		c.groupDown(m, "pause")
	case sig == syscall.SIGCONT:
		c.groupUp(m, "resume")
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
	c.groupDown(m, "kill")
	c.mu.Lock()
	if c.leader == m.name {
		c.leader = ""
	}
	for r, h := range c.holders {
		if h == m.name {
			delete(c.holders, r)
		}
	}
	c.mu.Unlock()
	return alive && err == nil
}

// stopMembers resumes and terminates every member (SIGTERM: it resigns),
// SIGKILL after 10 s.
func (c *campaign) stopMembers() {
	c.mu.Lock()
	c.stopping = true
	c.mu.Unlock()
	all := append(append([]*member{}, c.members...), c.gos...)
	for _, m := range all {
		c.signal(m, syscall.SIGCONT)
		c.signal(m, syscall.SIGTERM)
	}
	for _, m := range all {
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

// groupStats measures group commit from the log: the members' records of
// one producer between two other producers' records, or within one
// transaction's consecutive offsets, came from one transaction when their
// append times and offsets are contiguous (a transaction's records of one
// partition form one batch per produce request). Records of one batch
// share a LogAppendTime; consecutive offsets of one producer with the same
// append time are counted as one transaction.
func groupStats(recs []Record, faults []FaultRecord) GroupStats {
	var gs GroupStats
	total := 0
	for i := 0; i < len(recs); {
		r := recs[i]
		if r.Member == BaselineMember {
			i++
			continue
		}
		j := i + 1
		writers := map[int]bool{r.Writer: true}
		for j < len(recs) && recs[j].Partition == r.Partition && recs[j].Producer == r.Producer && recs[j].Member == r.Member &&
			recs[j].Offset == recs[j-1].Offset+1 && recs[j].Appended.Equal(r.Appended) {
			writers[recs[j].Writer] = true
			j++
		}
		gs.Transactions++
		total += j - i
		if len(writers) > 1 {
			gs.Shared++
			for _, f := range faults {
				if !r.Appended.Before(f.Start) && !r.Appended.After(f.End) {
					gs.UnderFaults++
					break
				}
			}
		}
		if len(writers) > gs.MaxWriters {
			gs.MaxWriters = len(writers)
		}
		i = j
	}
	if gs.Transactions > 0 {
		gs.MeanRecords = float64(total) / float64(gs.Transactions)
	}
	return gs
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
	c.say("==== chaos seed=%d (transaction.version=%d, %d writers per leadership): %d faults injected (of %d drawn) over %s: %s",
		rep.Seed, rep.TxnVersion, rep.Writers, total, drawn, rep.Duration, strings.Join(kinds, " "))
	c.say("host events: ACQUIRED=%d FENCED=%d EXPIRED=%d ERROR=%d STARTED=%d MINTED=%d", rep.Events[demo.Acquired], rep.Events[demo.Fenced],
		rep.Events[demo.Expired], rep.Events[demo.Error], rep.Events[demo.Started], rep.Events["MINTED"])
	c.say("commands: acknowledged=%d found=%d lost=%d duplicated=%d; committed records=%d (unacknowledged=%d, re-sent=%d of which copies of acknowledged commands=%d, after the acknowledgement=%d); sequence gaps=%d in %d leaderships (acknowledged among them=%d); tokens=%d",
		r.Acked, r.Found, r.Lost, r.Duplicated, r.Records, r.Unacked, r.Resent, r.ResentOfAcked, r.ResentAfterAck, r.SeqGaps, r.GapTerms, r.GapsAcked, r.Tokens)
	c.say("order violations=%d stale tokens=%d token mismatches=%d real-time violations=%d (against %d mints) acknowledged with two brokers down=%d linearizable=%s (%d writes, %d segments)",
		r.OrderBreaks, r.StaleTokens, r.TokenMismatch, r.RealTime, r.Mints, r.TwoDownAcked, r.Linearizable, r.LinOps, r.LinSegments)
	g := rep.Groups
	c.say("group commit: %d transactions, %d shared by 2+ writers (%d while a fault was active), at most %d writers, %.1f records per transaction",
		g.Transactions, g.Shared, g.UnderFaults, g.MaxWriters, g.MeanRecords)
	c.say("availability (members) %.2f%% over %s (gaps > %s: %d, p50 %s p90 %s p99 %s max %s)", av.Fraction*100, av.Span.Round(time.Second),
		av.Slack, len(av.Gaps), av.P50.Round(time.Millisecond), av.P90.Round(time.Millisecond), av.P99.Round(time.Millisecond), av.Max.Round(time.Millisecond))
	if b := r.Baseline; b != nil {
		bv := b.Availability
		c.say("availability (baseline) %.2f%% over %s (gaps > %s: %d, p50 %s p90 %s p99 %s max %s); acknowledged=%d lost=%d",
			bv.Fraction*100, bv.Span.Round(time.Second), bv.Slack, len(bv.Gaps), bv.P50.Round(time.Millisecond), bv.P90.Round(time.Millisecond),
			bv.P99.Round(time.Millisecond), bv.Max.Round(time.Millisecond), b.Acked, b.Lost)
		c.say("availability ratio members/baseline = %.3f (goal >= 0.9); members down while the baseline wrote %s, the baseline down while the members wrote %s",
			r.Ratio, r.OwnDown.Round(100*time.Millisecond), r.BaseOwnDown.Round(100*time.Millisecond))
	}
	for _, g := range rep.LongGaps {
		c.say("gap > 10s: %s", g.Text)
	}
	var parts []int32
	for p := range rep.Coordination.Roles {
		parts = append(parts, p)
	}
	sort.Slice(parts, func(i, j int) bool { return parts[i] < parts[j] })
	for _, p := range parts {
		c.say("coordination partition %d: %s", p, strings.Join(rep.Coordination.Roles[p], ", "))
	}
	for _, er := range c.roles {
		x := rep.Roles[er.Name]
		if x == nil {
			continue
		}
		rr := x.Result
		c.say("role %s (partition %d; %s): acknowledged=%d lost=%d duplicated=%d order=%d stale=%d mismatch=%d real-time=%d (against %d mints) acked-two-down=%d tokens=%d linearizable=%s availability %.2f%% (gaps > %s: %d, max %s)",
			er.Name, er.Partition, strings.Join(er.Members, "+"), rr.Acked, rr.Lost, rr.Duplicated, rr.OrderBreaks, rr.StaleTokens, rr.TokenMismatch,
			rr.RealTime, rr.Mints, rr.TwoDownAcked, rr.Tokens, rr.Linearizable, rr.Availability.Fraction*100, rr.Availability.Slack,
			len(rr.Availability.Gaps), rr.Availability.Max.Round(time.Millisecond))
	}
	mid := map[string]int{}
	midParts := map[int32]int{}
	for _, m := range rep.MidTxn {
		mid[m.Kind]++
		midParts[m.Partition]++
	}
	if p := rep.Pipeline; p != nil {
		c.say("pipeline %s (partition %d; %s): exactly once=%v: requests written=%d (acknowledged %d, failed writes %d), with their command=%d, missing=%d, duplicated=%d, out of order=%d, unknown commands=%d; commands=%d in %d terms; drained=%v after %s; requests by input partition %v",
			p.Name, p.Partition, strings.Join(p.Members, ", "), p.ExactlyOnce(), p.Requests, p.RequestsSent, p.SendErrors, p.Done, p.Missing, p.Duplicated,
			p.OutOfOrder, p.Unknown, p.Commands, p.Terms, p.Drained, p.DrainTook, p.PerPartition)
		for _, e := range p.Examples {
			c.say("  pipeline: %s", e)
		}
	}
	if g := rep.RoleGroup; g != nil && g.Check != nil {
		c.groupSummary(g)
	}
	c.say("mid-transaction faults that took effect: kill=%d pause=%d cut=%d (by partition: %v)", mid["midtxn-kill"], mid["midtxn-pause"], mid["midtxn-cut"], midParts)
	if d := rep.Deposed; d != nil {
		c.say("healthy holders deposed=%d (goal 0) by role %v; of %d takeovers in %d lease records: after the deadline %d, after a resign %d, after a fence %d, the holder under a member fault %d, within the clock-skew tolerance %d, raced (the lease that would have stopped it committed less than %s before) %d, slow challenges (that lease visible %s or more before) %d",
			d.Count, d.ByRole, d.Takeovers, d.Leases, d.AfterDeadline, d.AfterResign, d.AfterFence, d.UnderFault, d.WithinSkew,
			DefaultRaceWindow, d.Raced, DefaultRaceWindow, d.Slow)
		for i, x := range d.Deposed {
			if i >= maxListed {
				break
			}
			c.say("  deposed: %s", x.Text)
		}
		for i, x := range d.RacedList {
			if i >= maxListed {
				break
			}
			c.say("  raced: %s", x.Text)
		}
		for i, x := range d.SlowList {
			if i >= maxListed {
				break
			}
			c.say("  slow challenge: %s", x.Text)
		}
	}
	m := rep.Minimums
	c.say("minimums for %s: acknowledged >= %d, takeovers >= %d, faults >= %d, each drawn kind >= %d", rep.Duration, m.Acked, m.Takeovers, m.Faults, m.PerKind)
	if rep.OK() {
		c.say("PASS (seed %d)", rep.Seed)
		return
	}
	c.say("FAIL (seed %d, replay: %s): %d violation(s), %d minimum(s) missed:", rep.Seed, rep.Replay, len(rep.Violations), len(rep.Shortfalls))
	for i, v := range rep.Violations {
		if i >= 3*maxListed {
			c.say("  ... and %d more (result.json)", len(rep.Violations)-i)
			break
		}
		c.say("  %s", v)
	}
	for _, s := range rep.Shortfalls {
		c.say("  %s", s)
	}
}
