// Package demo is the orchestrator of `make demo`: one role, three members in
// three languages (the C device host, a Python host and a Node host) as
// separate processes, each dispatching numbered commands through guarded
// writes while it leads. The orchestrator crashes the leader (SIGKILL), then
// pauses the next leader past its lease (SIGSTOP) and resumes it (SIGCONT),
// prints a timeline of who led when with which token and how long each
// failover took, and finally reads the command topic with read_committed to
// check that the tokens never go backwards in log order.
//
// Run is the whole scenario as a function, so the Go test can run a shorter
// one against a cluster of its own.
package demo

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/krabka/krabka-coord/core"
)

// Host is one member process. The orchestrator runs
//
//	Argv... <bootstrap> <role> <member> <topic>
//
// from Options.Dir with the environment plus Env plus the lease settings
// (KRABKA_LEASE_MS, KRABKA_RENEW_INTERVAL_MS, KRABKA_CHALLENGE_STAGGER_MS,
// KRABKA_DISPATCH_INTERVAL_MS), and reads the event lines it prints.
type Host struct {
	Member string   // member id
	Name   string   // name in the timeline (default Member); a restart of a member can differ
	Lang   string   // "C", "Python", "Node"
	Argv   []string // program and leading arguments
	Env    []string // extra KEY=VALUE entries
}

// Options describe one run.
type Options struct {
	Bootstrap string // bootstrap.servers
	Role      string // default "krabka-demo-<unix ms>" (a fresh role every run)
	Topic     string // the command topic; default "krabka-demo-commands-<unix ms>"
	Hosts     []Host // three hosts; Hosts[0] is started first and leads first
	Dir       string // working directory of the hosts (the repository root)
	LogDir    string // where host logs go; default a fresh temporary folder

	LeaseMs, RenewIntervalMs, StaggerMs, DispatchIntervalMs int64 // defaults 3000, 1000, 1000, 250

	LeadFor     time.Duration // how long a leader dispatches before the next fault (default 3s)
	StepTimeout time.Duration // bound on each wait for a host (default 30s)
	Zombie      bool          // also freeze a leader, restart its member at once, and resume the old process while its lease is live
	Recover     bool          // restart the crashed host at the end: it must not pre-empt (no failback)
	KeepTopic   bool          // keep the command topic (default: delete it at the end)

	Out     io.Writer // the timeline (default os.Stdout)
	Verbose bool      // print every host event, including each command and renewal
}

func (o *Options) defaults() error {
	if o.Bootstrap == "" {
		return errors.New("demo: no bootstrap servers")
	}
	if len(o.Hosts) < 3 {
		return fmt.Errorf("demo: need three hosts, have %d", len(o.Hosts))
	}
	stamp := strconv.FormatInt(time.Now().UnixMilli(), 10)
	if o.Role == "" {
		o.Role = "krabka-demo-" + stamp
	}
	if o.Topic == "" {
		o.Topic = "krabka-demo-commands-" + stamp
	}
	def := func(v *int64, d int64) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&o.LeaseMs, 3000)
	def(&o.RenewIntervalMs, 1000)
	def(&o.StaggerMs, 1000)
	def(&o.DispatchIntervalMs, 250)
	if o.LeadFor <= 0 {
		o.LeadFor = 3 * time.Second
	}
	if o.StepTimeout <= 0 {
		o.StepTimeout = 30 * time.Second
	}
	if o.Out == nil {
		o.Out = os.Stdout
	}
	if o.LogDir == "" {
		d, err := os.MkdirTemp("", "krabka-demo-")
		if err != nil {
			return err
		}
		o.LogDir = d
	}
	return os.MkdirAll(o.LogDir, 0o755)
}

// Term is one leadership as the hosts reported it.
type Term struct {
	Member       string
	Lang         string
	Token        core.FencingToken
	Acquired     time.Time
	FirstCommand time.Time // zero if it dispatched nothing
	LastCommand  time.Time
	Commands     int
	Renewals     int
	Deadline     time.Time // the last lease deadline it reported
	End          time.Time // zero while it lasts (or when the host never noticed)
	EndKind      string    // FENCED, EXPIRED, RESIGNED, ..., "KILLED" (by the orchestrator)
}

// Failover is one change of leader caused by the orchestrator.
type Failover struct {
	Cause        string    // "SIGKILL" or "SIGSTOP"
	From, To     string    // members
	Fault        time.Time // when the orchestrator struck
	OldDeadline  time.Time // the old leader's last reported lease deadline
	Acquired     time.Time // the new leader's ACQUIRED
	FirstCommand time.Time // the new leader's first DISPATCHED
}

// FaultToAcquired is the time from the fault to the new leader's ACQUIRED.
func (f Failover) FaultToAcquired() time.Duration { return f.Acquired.Sub(f.Fault) }

// FaultToFirstCommand is the time from the fault to the new leader's first command.
func (f Failover) FaultToFirstCommand() time.Duration { return f.FirstCommand.Sub(f.Fault) }

// DeadlineToAcquired is the time from the old lease's deadline to the new ACQUIRED.
func (f Failover) DeadlineToAcquired() time.Duration { return f.Acquired.Sub(f.OldDeadline) }

// Report is the outcome of a run.
type Report struct {
	Role, Topic string
	Terms       []*Term
	Failovers   []Failover

	Resumed        string // the member paused with SIGSTOP and resumed
	ResumedOutcome *Event // its first FENCED / EXPIRED / ERROR after SIGCONT
	BrokerProbe    string // the broker's answer to a write under the resumed leader's token
	CoordinatorNow string // the coordinator's token for the role after the resume

	Zombie        string // the leader frozen and restarted by a "supervisor" (Options.Zombie)
	ZombieOutcome *Event // what the old process reported after SIGCONT: FENCED by the broker

	FencedObserved bool // a host reported FENCED, or the broker fenced the stale token
	NoFailback     *bool
	Check          *Check
	LogDir         string
}

// OK reports whether the run proved what it set out to: the log check
// passed, both failovers happened and the resumed leader stopped.
func (r *Report) OK() bool {
	want := 2
	if r.Zombie != "" {
		want = 3
		if r.ZombieOutcome == nil || r.ZombieOutcome.Kind != Fenced {
			return false
		}
	}
	return r.Check != nil && r.Check.OK() && len(r.Failovers) == want && r.ResumedOutcome != nil && r.ResumedOutcome.Kind == Fenced &&
		(r.NoFailback == nil || *r.NoFailback)
}

func (h Host) name() string {
	if h.Name != "" {
		return h.Name
	}
	return h.Member
}

type hostProc struct {
	Host
	cmd     *exec.Cmd
	pid     int
	log     *os.File
	exited  chan struct{}
	stopped bool // SIGSTOPped and not yet resumed
	dead    bool
}

type hostEvent struct {
	host *hostProc
	ev   Event
	exit error // set for the synthetic "process exited" event
}

type runner struct {
	opts   Options
	t0     time.Time
	events chan hostEvent
	hosts  []*hostProc
	rep    *Report
	active map[string]*Term // the term each member believes it holds
	outMu  sync.Mutex
	admin  *kadm.Client
	kcl    *kgo.Client
	acks   []Ack // every DISPATCHED a host reported: acknowledged by the broker

	stopping bool // the run is over: host exits are expected
}

// Run runs the whole scenario and returns its report. The error is non-nil
// when the scenario could not be carried out (a host never led, a broker
// was unreachable); a failed log check is reported in Report.Check and
// Report.OK, not as an error. Everything Run starts, it stops, on every
// return path.
func Run(ctx context.Context, opts Options) (*Report, error) {
	if err := opts.defaults(); err != nil {
		return nil, err
	}
	r := &runner{
		opts:   opts,
		t0:     time.Now(),
		events: make(chan hostEvent, 1024),
		rep:    &Report{Role: opts.Role, Topic: opts.Topic, LogDir: opts.LogDir},
		active: map[string]*Term{},
	}
	defer r.stopHosts()
	var err error
	r.kcl, err = kgo.NewClient(kgo.SeedBrokers(strings.Split(opts.Bootstrap, ",")...), kgo.RequestRetries(3))
	if err != nil {
		return nil, fmt.Errorf("demo: kafka client: %w", err)
	}
	defer r.kcl.Close()
	r.admin = kadm.NewClient(r.kcl)

	r.say("role %q, command topic %q, lease %dms, renew every %dms, challenge stagger %dms",
		opts.Role, opts.Topic, opts.LeaseMs, opts.RenewIntervalMs, opts.StaggerMs)
	if err := r.createTopic(ctx); err != nil {
		return r.rep, err
	}
	if !opts.KeepTopic {
		defer r.deleteTopic()
	}
	if err := r.scenario(ctx); err != nil {
		r.say("scenario stopped: %v", err)
		r.stopHosts()
		r.summary()
		return r.rep, err
	}
	r.stopHosts()
	check, err := CheckLog(ctx, opts.Bootstrap, opts.Topic, r.acked())
	if err != nil {
		return r.rep, fmt.Errorf("demo: reading the command topic: %w", err)
	}
	r.rep.Check = check
	r.summary()
	return r.rep, nil
}

func (r *runner) scenario(ctx context.Context) error {
	h := r.opts.Hosts
	// 1. The first host takes the role alone; the other two queue behind it.
	r.say("starting %s (%s): it registers first and takes the role", h[0].name(), h[0].Lang)
	first, err := r.start(ctx, h[0])
	if err != nil {
		return err
	}
	if _, err := r.waitFor(ctx, "the first host to lead", func(e hostEvent) bool {
		return e.host == first && e.ev.Kind == Acquired
	}); err != nil {
		return err
	}
	for _, spec := range h[1:3] {
		r.say("starting %s (%s): it registers and waits its turn", spec.name(), spec.Lang)
		p, err := r.start(ctx, spec)
		if err != nil {
			return err
		}
		// Registration order is succession order: let it register before the next.
		r.waitFor(ctx, "", func(e hostEvent) bool { //nolint:errcheck // a host may not report STANDBY
			return e.host == p && e.ev.Kind == Standby
		}, 3*time.Second)
	}
	if err := r.runFor(ctx, r.opts.LeadFor); err != nil {
		return err
	}

	// 2. Crash the leader.
	leader := r.leader()
	if leader == nil {
		return errors.New("demo: nobody leads before the crash")
	}
	if err := r.fault(ctx, leader, "SIGKILL", syscall.SIGKILL); err != nil {
		return err
	}
	if err := r.runFor(ctx, r.opts.LeadFor); err != nil {
		return err
	}

	// 3. Pause the next leader past its lease, let a third take over, resume it.
	paused := r.leader()
	if paused == nil {
		return errors.New("demo: nobody leads before the pause")
	}
	pausedTerm := r.active[paused.name()]
	if err := r.fault(ctx, paused, "SIGSTOP", syscall.SIGSTOP); err != nil {
		return err
	}
	if err := r.runFor(ctx, time.Duration(r.opts.DispatchIntervalMs)*2*time.Millisecond+500*time.Millisecond); err != nil {
		return err
	}
	r.rep.Resumed = paused.name()
	r.signal(paused, syscall.SIGCONT)
	paused.stopped = false
	r.say("SIGCONT %s: it resumes believing it still holds %s", paused.name(), pausedTerm.Token)
	resumedAt := time.Now()
	ev, err := r.waitFor(ctx, paused.name()+" to notice it lost the role", func(e hostEvent) bool {
		return e.host == paused && (e.ev.Kind == Fenced || e.ev.Kind == Expired || e.ev.Kind == Error) && !e.ev.At.Before(resumedAt.Add(-time.Second))
	}, 15*time.Second)
	if err == nil {
		r.rep.ResumedOutcome = &ev.ev
	} else {
		r.say("%s reported no FENCED/EXPIRED within 15s of SIGCONT", paused.name())
	}
	r.probeStaleToken(ctx, paused.name(), pausedTerm.Token)
	if err := r.runFor(ctx, r.opts.LeadFor); err != nil {
		return err
	}

	// 4. A zombie: freeze the leader with its lease live, let a supervisor
	// restart its member id at once, then resume the old process.
	if r.opts.Zombie {
		if err := r.zombie(ctx); err != nil {
			return err
		}
		if err := r.runFor(ctx, r.opts.LeadFor); err != nil {
			return err
		}
	}

	// 5. Optionally bring the crashed host back: it queues at the tail.
	if r.opts.Recover {
		crashed := r.rep.Failovers[0].From
		for _, spec := range h {
			if spec.name() != crashed {
				continue
			}
			before := r.leader()
			r.say("restarting %s: a recovered member registers again at the tail and must not take the role back", crashed)
			if _, err := r.start(ctx, spec); err != nil {
				return err
			}
			if err := r.runFor(ctx, r.opts.LeadFor); err != nil {
				return err
			}
			after := r.leader()
			ok := before != nil && after != nil && before.name() == after.name()
			r.rep.NoFailback = &ok
			if ok {
				r.say("no failback: %s still leads", after.name())
			} else {
				r.say("FAILBACK: the leader changed after %s came back", crashed)
			}
		}
	}
	return nil
}

// fault strikes the current leader and waits for another host to lead and
// dispatch its first command.
func (r *runner) fault(ctx context.Context, leader *hostProc, cause string, sig syscall.Signal) error {
	term := r.active[leader.name()]
	what := "the leader crashes"
	if sig == syscall.SIGSTOP {
		what = "the leader freezes (a long GC pause, a stalled VM) past its lease"
	}
	r.say("%s %s (pid %d): %s; its lease (token %s) runs until %s", cause, leader.name(), leader.pid, what, term.Token, r.rel(term.Deadline))
	f := Failover{Cause: cause, From: leader.name(), Fault: time.Now(), OldDeadline: term.Deadline}
	r.signal(leader, sig)
	if sig == syscall.SIGKILL {
		leader.dead = true
		<-leader.exited
	} else {
		leader.stopped = true
	}
	acq, err := r.waitFor(ctx, "a new leader after "+cause, func(e hostEvent) bool {
		return e.host != leader && e.ev.Kind == Acquired
	})
	if err != nil {
		return err
	}
	f.To = acq.host.name()
	f.Acquired = acq.ev.At
	first, err := r.waitFor(ctx, "the new leader's first command", func(e hostEvent) bool {
		return e.host == acq.host && e.ev.Kind == Dispatched
	})
	if err != nil {
		return err
	}
	f.FirstCommand = first.ev.At
	r.rep.Failovers = append(r.rep.Failovers, f)
	line := fmt.Sprintf("failover %d (%s %s -> %s): fault -> ACQUIRED %s, fault -> first command %s",
		len(r.rep.Failovers), cause, f.From, f.To, secs(f.FaultToAcquired()), secs(f.FaultToFirstCommand()))
	if d := f.DeadlineToAcquired(); !f.OldDeadline.IsZero() && d >= 0 {
		line += fmt.Sprintf(", old lease deadline -> ACQUIRED %s", secs(d))
	}
	r.say("%s", line)
	return nil
}

// zombie freezes the leader just after a renewal, so its lease stays live
// for a while on its own clock; restarts its member id in a new process,
// which takes the role at once by minting a new epoch (a fresh acquire that
// finds its own member's lease fences the earlier incarnation); and resumes
// the old process before its lease deadline. The old process's next renew
// or dispatch reaches the broker, which rejects it: FENCED.
func (r *runner) zombie(ctx context.Context) error {
	old := r.leader()
	if old == nil {
		return errors.New("demo: nobody leads before the zombie step")
	}
	if _, err := r.waitFor(ctx, old.name()+" to renew", func(e hostEvent) bool {
		return e.host == old && e.ev.Kind == Renewed
	}, 10*time.Second); err != nil {
		return err
	}
	term := r.active[old.name()]
	r.say("SIGSTOP %s (pid %d) right after a renewal: frozen, its lease (token %s) live until %s", old.name(), old.pid, term.Token, r.rel(term.Deadline))
	f := Failover{Cause: "SIGSTOP+restart", From: old.name(), Fault: time.Now(), OldDeadline: term.Deadline}
	r.signal(old, syscall.SIGSTOP)
	old.stopped = true
	spec := old.Host
	spec.Name = old.Member + "#2"
	r.say("a supervisor takes %s for dead and restarts member %q at once as %s", old.name(), old.Member, spec.Name)
	fresh, err := r.start(ctx, spec)
	if err != nil {
		return err
	}
	acq, err := r.waitFor(ctx, spec.Name+" to take the role", func(e hostEvent) bool {
		return e.host == fresh && e.ev.Kind == Acquired
	})
	if err != nil {
		return err
	}
	f.To, f.Acquired = spec.Name, acq.ev.At
	r.signal(old, syscall.SIGCONT)
	old.stopped = false
	left := time.Until(term.Deadline)
	r.say("SIGCONT %s: on its own clock its lease has %s left, so its next renew or dispatch goes to the broker", old.name(), secs(left))
	r.rep.Zombie = old.name()
	var gotFirst bool
	for !gotFirst || r.rep.ZombieOutcome == nil {
		e, err := r.waitFor(ctx, "the restarted member's first command and the old process's answer", func(e hostEvent) bool {
			return (e.host == fresh && e.ev.Kind == Dispatched) ||
				(e.host == old && (e.ev.Kind == Fenced || e.ev.Kind == Expired || e.ev.Kind == Error || e.ev.Kind == "EXITED"))
		}, 15*time.Second)
		if err != nil {
			return err
		}
		if e.host == fresh {
			if !gotFirst {
				gotFirst = true
				f.FirstCommand = e.ev.At
			}
			continue
		}
		if e.ev.Kind == Error || r.rep.ZombieOutcome != nil { // wait for the final answer; keep the first
			continue
		}
		ev := e.ev
		r.rep.ZombieOutcome = &ev
		if ev.Kind != "EXITED" {
			// Two live processes with one member id would take the role from
			// each other: the supervisor ends the old one now.
			r.say("the supervisor ends the old %s process (SIGKILL)", old.name())
			r.signal(old, syscall.SIGKILL)
			old.dead = true
		}
	}
	r.rep.Failovers = append(r.rep.Failovers, f)
	r.say("failover %d (%s %s -> %s): fault -> ACQUIRED %s, fault -> first command %s",
		len(r.rep.Failovers), f.Cause, f.From, f.To, secs(f.FaultToAcquired()), secs(f.FaultToFirstCommand()))
	return nil
}

// leader is the host whose latest ACQUIRED is the newest and that is not
// known to have lost the role.
func (r *runner) leader() *hostProc {
	var best *Term
	for _, t := range r.active {
		if best == nil || t.Acquired.After(best.Acquired) {
			best = t
		}
	}
	if best == nil {
		return nil
	}
	for _, p := range r.hosts {
		if p.name() == best.Member && !p.dead {
			return p
		}
	}
	return nil
}

// ---- processes ----

func (r *runner) start(ctx context.Context, h Host) (*hostProc, error) {
	argv := append(append([]string{}, h.Argv...), r.opts.Bootstrap, r.opts.Role, h.Member, r.opts.Topic)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = r.opts.Dir
	cmd.Env = append(append(os.Environ(), h.Env...),
		fmt.Sprintf("KRABKA_LEASE_MS=%d", r.opts.LeaseMs),
		fmt.Sprintf("KRABKA_RENEW_INTERVAL_MS=%d", r.opts.RenewIntervalMs),
		fmt.Sprintf("KRABKA_CHALLENGE_STAGGER_MS=%d", r.opts.StaggerMs),
		fmt.Sprintf("KRABKA_DISPATCH_INTERVAL_MS=%d", r.opts.DispatchIntervalMs),
	)
	// Own process group (signals reach the whole host); killed if we die.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	logPath := filepath.Join(r.opts.LogDir, h.name()+".log")
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	cmd.Stderr = logf
	out, err := cmd.StdoutPipe()
	if err != nil {
		logf.Close()
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("demo: starting %s (%s): %w", h.name(), strings.Join(argv, " "), err)
	}
	p := &hostProc{Host: h, cmd: cmd, pid: cmd.Process.Pid, log: logf, exited: make(chan struct{})}
	r.hosts = append(r.hosts, p)
	fmt.Fprintf(logf, "# %s: %s\n", time.Now().Format(time.RFC3339Nano), strings.Join(argv, " "))
	go func() {
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 64*1024), 1024*1024)
		for sc.Scan() {
			line := sc.Text()
			fmt.Fprintln(logf, line)
			if ev, ok := ParseEvent(line, h.name(), time.Now()); ok {
				if ev.Member != h.Member && ev.Member != h.name() { // the process is the authority on who it is
					ev.Fields["said_member"] = ev.Member
				}
				ev.Member = h.name()
				r.events <- hostEvent{host: p, ev: ev}
			}
		}
		err := cmd.Wait()
		if err == nil {
			err = errors.New("exit status 0")
		}
		close(p.exited)
		r.events <- hostEvent{host: p, exit: err, ev: Event{At: time.Now(), Member: h.name(), Kind: "EXITED"}}
	}()
	return p, nil
}

func (r *runner) signal(p *hostProc, sig syscall.Signal) {
	if err := syscall.Kill(-p.pid, sig); err != nil {
		syscall.Kill(p.pid, sig) //nolint:errcheck
	}
}

// stopHosts ends every host this run started: SIGCONT (in case it is
// paused), SIGTERM, and SIGKILL after two seconds. Idempotent.
func (r *runner) stopHosts() {
	r.stopping = true
	for _, p := range r.hosts {
		select {
		case <-p.exited:
			continue
		default:
		}
		r.signal(p, syscall.SIGCONT)
		r.signal(p, syscall.SIGTERM)
	}
	deadline := time.After(2 * time.Second)
	for _, p := range r.hosts {
		select {
		case <-p.exited:
		case <-deadline:
			r.signal(p, syscall.SIGKILL)
			<-p.exited
		}
	}
	for _, p := range r.hosts {
		<-p.exited
		p.dead = true
		p.log.Close()
	}
	// Drain what the hosts printed before they went.
	for {
		select {
		case e := <-r.events:
			r.handle(e)
		default:
			return
		}
	}
}

// ---- events ----

// waitFor handles events until pred matches one (returned) or the timeout
// (default StepTimeout) passes. what names the wait in the error.
func (r *runner) waitFor(ctx context.Context, what string, pred func(hostEvent) bool, timeout ...time.Duration) (hostEvent, error) {
	d := r.opts.StepTimeout
	if len(timeout) > 0 {
		d = timeout[0]
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return hostEvent{}, ctx.Err()
		case <-timer.C:
			return hostEvent{}, fmt.Errorf("demo: waited %s for %s", d, what)
		case e := <-r.events:
			r.handle(e)
			if pred(e) {
				return e, nil
			}
		}
	}
}

// runFor handles events for d.
func (r *runner) runFor(ctx context.Context, d time.Duration) error {
	_, err := r.waitFor(ctx, "", func(hostEvent) bool { return false }, d)
	if err != nil && ctx.Err() != nil {
		return ctx.Err()
	}
	return nil
}

// handle updates the terms and prints the timeline.
func (r *runner) handle(e hostEvent) {
	ev := e.ev
	m := ev.Member
	term := r.active[m]
	switch ev.Kind {
	case Acquired:
		tok, _ := ev.Token()
		t := &Term{Member: m, Lang: e.host.Lang, Token: tok, Acquired: ev.At}
		if d, ok := ev.Int("deadline"); ok {
			t.Deadline = time.UnixMilli(d)
		}
		if term != nil && term.End.IsZero() {
			term.End, term.EndKind = ev.At, "REACQUIRED"
		}
		r.active[m] = t
		r.rep.Terms = append(r.rep.Terms, t)
		note := ""
		for om, ot := range r.active {
			if om != m && ot.End.IsZero() && !ot.Token.Supersedes(tok) {
				note = fmt.Sprintf(" (supersedes %s of %s)", ot.Token, om)
			}
		}
		r.event(ev, "ACQUIRED   token %s, lease until %s%s", fieldOr(ev, "token", "?"), r.rel(t.Deadline), note)
	case Dispatched:
		if term == nil {
			r.event(ev, "DISPATCHED with no ACQUIRED before it: %s", ev.Raw)
			return
		}
		term.Commands++
		term.LastCommand = ev.At
		if off, ok := ev.Int("offset"); ok {
			r.acks = append(r.acks, Ack{Member: e.host.Member, Seq: ev.Fields["seq"], Offset: off, Token: ev.Fields["token"]})
		}
		if term.FirstCommand.IsZero() {
			term.FirstCommand = ev.At
			r.event(ev, "DISPATCHED command #%s under %s (offset %s) ... further commands of this term not shown",
				fieldOr(ev, "seq", "?"), fieldOr(ev, "token", "?"), fieldOr(ev, "offset", "?"))
		} else if r.opts.Verbose {
			r.event(ev, "DISPATCHED command #%s under %s (offset %s)", fieldOr(ev, "seq", "?"), fieldOr(ev, "token", "?"), fieldOr(ev, "offset", "?"))
		}
	case Renewed:
		if term != nil {
			term.Renewals++
			if d, ok := ev.Int("deadline"); ok {
				term.Deadline = time.UnixMilli(d)
			}
		}
		if r.opts.Verbose {
			r.event(ev, "RENEWED    lease until %s", r.rel(time.UnixMilli(must(ev.Int("deadline")))))
		}
	case Fenced, Expired, Resigned:
		if ev.Kind == Fenced {
			r.rep.FencedObserved = true
		}
		extra := ""
		if term != nil {
			term.End, term.EndKind = ev.At, ev.Kind
			extra = fmt.Sprintf(" [term of %s: %d commands, %d renewals]", term.Token, term.Commands, term.Renewals)
			delete(r.active, m)
		}
		r.event(ev, "%-10s on %s: %s %s%s", ev.Kind, fieldOr(ev, "op", "?"), fieldOr(ev, "code", ""), fieldOr(ev, "msg", ""), extra)
	case Error:
		r.event(ev, "ERROR      on %s: %s %s", fieldOr(ev, "op", "?"), fieldOr(ev, "code", ""), fieldOr(ev, "msg", ev.Raw))
	case Standby:
		r.event(ev, "STANDBY    registered, waiting for its turn")
	case Started:
		if r.opts.Verbose {
			r.event(ev, "STARTED    pid %d", e.host.pid)
		}
	case "EXITED":
		if term != nil && term.End.IsZero() {
			term.End, term.EndKind = ev.At, "KILLED"
			if r.stopping {
				term.EndKind = "stopped at the end of the demo"
			}
			delete(r.active, m)
			r.event(ev, "process ended (%v) [term of %s: %d commands, %d renewals]", e.exit, term.Token, term.Commands, term.Renewals)
		} else if r.opts.Verbose || !e.host.dead {
			r.event(ev, "process ended (%v)", e.exit)
		}
	default:
		if r.opts.Verbose {
			r.event(ev, "%s", ev.Raw)
		}
	}
}

// ---- output ----

func (r *runner) rel(t time.Time) string {
	if t.IsZero() {
		return "?"
	}
	return fmt.Sprintf("%.3fs", t.Sub(r.t0).Seconds())
}

func (r *runner) event(ev Event, format string, a ...any) {
	r.outMu.Lock()
	defer r.outMu.Unlock()
	fmt.Fprintf(r.opts.Out, "%9s  %-14s %s\n", r.rel(ev.At), ev.Member, fmt.Sprintf(format, a...))
}

func (r *runner) say(format string, a ...any) {
	r.outMu.Lock()
	defer r.outMu.Unlock()
	fmt.Fprintf(r.opts.Out, "%9s  %-14s %s\n", r.rel(time.Now()), "orchestrator", fmt.Sprintf(format, a...))
}

func (r *runner) summary() {
	w := r.opts.Out
	r.outMu.Lock()
	defer r.outMu.Unlock()
	fmt.Fprintf(w, "\nwho led when (times from the start of the run):\n")
	for _, t := range r.rep.Terms {
		end := "until the end"
		if !t.End.IsZero() {
			end = fmt.Sprintf("until %s (%s)", r.rel(t.End), t.EndKind)
		}
		fmt.Fprintf(w, "  %-12s %-7s token %-10s from %s %s: %d commands, %d renewals\n",
			t.Member, t.Lang, t.Token, r.rel(t.Acquired), end, t.Commands, t.Renewals)
	}
	fmt.Fprintf(w, "\nfailovers:\n")
	for i, f := range r.rep.Failovers {
		fmt.Fprintf(w, "  %d. %s %s -> %s: fault -> ACQUIRED %s, fault -> first command %s",
			i+1, f.Cause, f.From, f.To, secs(f.FaultToAcquired()), secs(f.FaultToFirstCommand()))
		switch d := f.DeadlineToAcquired(); {
		case f.OldDeadline.IsZero():
		case d < 0:
			fmt.Fprintf(w, ", ACQUIRED %s before the old lease's deadline", secs(-d))
		default:
			fmt.Fprintf(w, ", old deadline -> ACQUIRED %s", secs(d))
		}
		fmt.Fprintln(w)
	}
	if r.rep.Resumed != "" {
		fmt.Fprintf(w, "\nresumed leader %s:\n", r.rep.Resumed)
		if o := r.rep.ResumedOutcome; o != nil {
			fmt.Fprintf(w, "  after SIGCONT it reported %s on %s (%s %s)\n", o.Kind, fieldOr(*o, "op", "?"), fieldOr(*o, "code", ""), fieldOr(*o, "msg", ""))
		} else {
			fmt.Fprintf(w, "  it reported nothing after SIGCONT\n")
		}
		if r.rep.BrokerProbe != "" {
			fmt.Fprintf(w, "  broker: %s\n", r.rep.BrokerProbe)
		}
		if r.rep.CoordinatorNow != "" {
			fmt.Fprintf(w, "  coordinator: %s\n", r.rep.CoordinatorNow)
		}
	}
	if r.rep.Zombie != "" {
		fmt.Fprintf(w, "\nzombie %s (frozen, its member restarted, then resumed with a live lease):\n", r.rep.Zombie)
		if o := r.rep.ZombieOutcome; o != nil {
			fmt.Fprintf(w, "  after SIGCONT it reported %s on %s (%s %s)\n", o.Kind, fieldOr(*o, "op", "?"), fieldOr(*o, "code", ""), fieldOr(*o, "msg", ""))
		}
	}
	if c := r.rep.Check; c != nil {
		fmt.Fprintf(w, "\ncommand log check (read_committed, %s):\n%s", r.rep.Topic, c.String())
	}
	fmt.Fprintf(w, "\nhost logs: %s\n", r.rep.LogDir)
}

func (r *runner) acked() []Ack { return r.acks }

func fieldOr(ev Event, k, def string) string {
	if v, ok := ev.Fields[k]; ok && v != "" {
		return v
	}
	return def
}

func must(v int64, _ bool) int64 { return v }

func secs(d time.Duration) string { return fmt.Sprintf("%.2fs", d.Seconds()) }
