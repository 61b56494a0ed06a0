package main

// krabka-coord run: hold a role and run a program only while holding it.
//
// The pieces: run.go (the command, its flags, the campaign loop and one term
// of holding the role), run_child.go (starting the child so that it dies
// with run, and the watchdog's feed), run_watchdog.go (the watchdog process
// that kills the child before the lease deadline even when run itself is not
// scheduled), run_write.go (the guarded write channel of the child).

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/krabka/krabka-coord/core"
	"github.com/krabka/krabka-coord/core/coord"
)

// Exit codes of run besides the child's own (docs/CLI.md).
const (
	exitCannotStart = 126 // CMD was found but could not be started
	exitNotFoundCmd = 127 // CMD is not an executable file, nor found on PATH
	exitLostFenced  = 200 // the leadership ended FENCED: another holder took the role
	exitLostExpired = 201 // the leadership ended EXPIRED: renewals failed until the lease deadline
	exitLostAtRisk  = 202 // the child was stopped because the deadline came near without a renewal; nobody took the role over
)

// runOptions are run's flags.
type runOptions struct {
	margin    durationFlag
	grace     durationFlag
	stay      bool
	requeue   bool
	onLost    string
	topic     string
	partition int
	keySep    string
}

// durationFlag is a duration flag whose unset value prints no default
// (the default is computed from the lease).
type durationFlag struct {
	d   time.Duration
	set bool
}

func (f *durationFlag) String() string {
	if f == nil || !f.set {
		return ""
	}
	return f.d.String()
}

func (f *durationFlag) Set(s string) error {
	d, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("not a duration (e.g. 800ms, 2s): %q", s)
	}
	f.d, f.set = d, true
	return nil
}

var runCommand = &command{
	name: "run", args: "ROLE MEMBER -- CMD [ARGS]", summary: "run a program only while holding a role (fenced)",
	help: `Campaigns for ROLE as MEMBER (like any member of the library) and, once it
holds the role, starts CMD with these variables in its environment:

  KRABKA_ROLE, KRABKA_MEMBER      the role and the member id
  KRABKA_TRANSACTIONAL_ID         the role's transactional.id (with krabka.role.prefix)
  KRABKA_TOKEN                    the fencing token, producer_id:epoch
  KRABKA_LEASE_DEADLINE_MS        the lease deadline when CMD started (Unix ms);
                                  the write channel's answers carry later ones
  KRABKA_WRITE                    with --topic: the write channel's Unix socket

run is the library's elector (it campaigns again only as told below) and
renews the lease in the background. When the leadership is lost (FENCED,
EXPIRED), or the deadline comes within the stop margin without a
successful renewal (--margin, which sets krabka.lease.stop.margin.ms;
default half the risk margin: docs/CONFIGURATION.md), CMD's process group
gets SIGTERM and, --grace later, SIGKILL; the SIGKILL lands at least
margin-grace before the lease deadline, so a standby (which waits for the
deadline) never runs its copy while this one still runs. A separate watchdog process enforces these instants, so
they hold even when run itself is paused. CMD dies with run (SIGKILL when
run dies). SIGINT, SIGTERM and SIGHUP are forwarded to CMD's process group.

When CMD exits by itself, what is left of its process group is killed, run
resigns (the next standby takes over at once) and exits with CMD's code; with
--stay it campaigns again instead and restarts CMD when it wins again (a
second later at the earliest). After a loss, --on-lost runs a shell command,
and --requeue campaigns again instead of exiting.

--topic TOPIC opens the write channel: CMD connects to the Unix socket in
KRABKA_WRITE and sends one line per record (the line is the value; with
--key-sep the part before the first separator is the key). Each line gets
one answer line, in order:
  OK <partition> <offset> <token> <lease_deadline_ms>
  ERR <CODE> <message>        (ERR FENCED ... once another holder took over)
Every record goes through the leadership's guarded write: the broker
refuses it once the token is superseded.

Exit codes of run: CMD's own when it exits by itself (128+N when a signal
N ended it); 126 CMD cannot be started, 127 CMD not found (nothing was
campaigned for); 200 lost: FENCED (another holder took over), 201 lost:
EXPIRED (no renewal had succeeded by the deadline: cut off, or paused with
a renewal in flight), 202 lost: CMD stopped at risk
(the deadline came near without a renewal; nobody took over); 0 stopped by
a signal while waiting for the role; 1 the campaign failed (the cluster
refused or could not be reached for good); 2 bad command line.`,
	example: `krabka-coord -b kafka-1:9092 run controller node-1 -- /usr/bin/controller --serve
krabka-coord -b kafka-1:9092 -X krabka.lease.ms=10000 -X krabka.renew.interval.ms=3000 \
    run --requeue --on-lost 'logger -t ctl "lost $KRABKA_ROLE: $KRABKA_LOST"' controller node-1 -- ./ctl.sh
krabka-coord -b kafka-1:9092 run --topic commands --key-sep ' ' dispatcher d-1 -- ./dispatch.py`,
	flags: func(fs *flag.FlagSet, o *options) {
		r := &o.run
		fs.Var(&r.margin, "margin", "stop CMD when the lease has less than `DURATION` left and no renewal succeeded (sets krabka.lease.stop.margin.ms; default: that key's, half the risk margin)")
		fs.Var(&r.grace, "grace", "SIGTERM to SIGKILL `DURATION` (default margin/2; below the margin)")
		fs.BoolVar(&r.stay, "stay", false, "when CMD exits by itself, resign and campaign again instead of exiting")
		fs.BoolVar(&r.requeue, "requeue", false, "after a loss, campaign again instead of exiting")
		fs.StringVar(&r.onLost, "on-lost", "", "shell `COMMAND` run (sh -c) after a loss, once CMD is dead; KRABKA_LOST says how")
		fs.StringVar(&r.topic, "topic", "", "open the write channel to `TOPIC` (socket in KRABKA_WRITE)")
		fs.IntVar(&r.partition, "partition", -1, "write channel: the `PARTITION` of every record (-1: Kafka's key hashing)")
		fs.StringVar(&r.keySep, "key-sep", "", "write channel: split each line at the first `SEP` into key and value")
	},
	run: runRun,
}

// runner is one run command: an elector (coord.Elector, the library's one
// leader loop) whose terms run CMD under the watchdog.
type runner struct {
	e       *env
	cfg     coord.Config
	client  *coord.Client
	role    core.Role
	member  core.MemberID
	argv    []string // CMD and its arguments as given
	path    string   // CMD resolved
	margin  time.Duration
	grace   time.Duration
	o       runOptions
	sigs    chan os.Signal
	stopped os.Signal // a terminating signal arrived: no --stay, no --requeue

	events <-chan coord.TermEvent
	runErr chan error
	leases chan coord.LeaseEvent // the newest renewal of the current term (ElectOnLease)
}

func runRun(e *env, args []string) int {
	r := &runner{e: e, o: e.o.run}
	if code := r.parse(args); code != exitOK {
		return code
	}
	_, c, code := e.connect()
	if code != exitOK {
		return code
	}
	r.client = c
	defer c.Close()
	r.sigs = make(chan os.Signal, 8)
	signal.Notify(r.sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	defer signal.Stop(r.sigs)
	return r.loop()
}

// stopMarginKey is the one configuration key of the stop margin; --margin
// sets it.
const stopMarginKey = "krabka.lease.stop.margin.ms"

// parse checks the command line; exitOK or the code to exit with (after
// an error line).
func (r *runner) parse(args []string) int {
	e := r.e
	if e.dash < 0 {
		if len(args) > 2 {
			e.errorf("run: put -- between MEMBER and the command: krabka-coord run ROLE MEMBER -- %s", strings.Join(args[2:], " "))
		} else {
			e.errorf("run needs ROLE MEMBER -- CMD [ARGS] (krabka-coord run --help)")
		}
		return exitUsage
	}
	if e.dash != 2 {
		e.errorf("run takes exactly ROLE and MEMBER before --, got %d argument(s): %q", e.dash, args[:e.dash])
		return exitUsage
	}
	if len(args) == 2 {
		e.errorf("run: no command after -- (krabka-coord run ROLE MEMBER -- CMD [ARGS])")
		return exitUsage
	}
	role, err := roleArg(args[0])
	if err != nil {
		e.errorf("%v", err)
		return exitUsage
	}
	member, err := core.NewMemberID(args[1])
	if err != nil {
		e.errorf("member %q: %v", args[1], err)
		return exitUsage
	}
	r.role, r.member, r.argv = role, member, args[2:]
	cfg, err := e.o.config()
	if err != nil {
		e.errorf("%v", err)
		return exitUsage
	}
	if r.o.margin.set {
		// --margin is krabka.lease.stop.margin.ms, set after every -X and -F.
		lease := time.Duration(cfg.Lease.DurationMs) * time.Millisecond
		interval := time.Duration(cfg.Lease.RenewIntervalMs) * time.Millisecond
		room := lease - interval // how long a lease lasts after its regular renewal was due
		if m := r.o.margin.d; m < time.Millisecond || m >= room {
			e.errorf("run: --margin %s must be above 0 and below krabka.lease.ms - krabka.renew.interval.ms = %s (else CMD would be stopped before every regular renewal)", m, room)
			return exitUsage
		}
		e.o.settings = append(e.o.settings, setting{'X', stopMarginKey + "=" + strconv.FormatInt(r.o.margin.d.Milliseconds(), 10)})
		if cfg, err = e.o.config(); err != nil {
			e.errorf("run: --margin %s: %v", r.o.margin.d, err)
			return exitUsage
		}
	}
	r.cfg = cfg
	r.margin = cfg.StopMargin()
	r.grace = r.o.grace.d
	if !r.o.grace.set {
		r.grace = r.margin / 2
	}
	if r.grace < 0 || r.grace >= r.margin {
		e.errorf("run: --grace %s must be at least 0 and below --margin %s (the SIGKILL must land before the lease deadline)", r.grace, r.margin)
		return exitUsage
	}
	if r.o.topic != "" {
		probe := coord.DefaultConfig()
		if err := probe.Set("krabka.topic", r.o.topic); err != nil {
			e.errorf("run: --topic %q is not a legal Kafka topic name", r.o.topic)
			return exitUsage
		}
	} else if r.o.keySep != "" || r.o.partition != -1 {
		e.errorf("run: --key-sep and --partition need --topic (the write channel)")
		return exitUsage
	}
	if r.o.partition < -1 || r.o.partition > 1<<31-1 {
		e.errorf("run: --partition %d: give a partition number, or -1 for Kafka's key hashing", r.o.partition)
		return exitUsage
	}
	// Resolve CMD now: a command that cannot be found never takes the role.
	path, err := exec.LookPath(r.argv[0])
	if err != nil {
		e.errorf("run: CMD %s: %v (nothing was campaigned for)", r.argv[0], err)
		if errors.Is(err, exec.ErrNotFound) || errors.Is(err, os.ErrNotExist) {
			return exitNotFoundCmd
		}
		return exitCannotStart
	}
	r.path = path
	return exitOK
}

func (r *runner) logf(format string, args ...any) {
	fmt.Fprintf(r.e.stderr, "krabka-coord run: %s: "+format+"\n", append([]any{r.role}, args...)...)
}

// loop runs the elector and holds the role, term after term, until there
// is something to exit with.
//
// The elector campaigns, renews and reports; run adds what a program in
// another process needs. Its watchdog stops CMD at the stop margin
// (Config.StopMargin, the elector's own default), and once CMD is dead run
// ends the term itself by resigning: the resignation's answer tells a loss
// to a newer token (FENCED) or to the deadline (EXPIRED) from one nobody
// took over, and lets a standby in at once. So the elector gets
// ElectStopMargin(0): it never closes a term at risk on its own, which
// would end it before run knows how it was lost. With ElectManualRelease
// no term starts before run has dealt with the last one.
func (r *runner) loop() int {
	r.leases = make(chan coord.LeaseEvent, 1)
	el, err := coord.NewElector(r.client, r.role, r.member,
		coord.ElectManualRelease(), coord.ElectStopMargin(0),
		coord.ElectOnLease(func(ev coord.LeaseEvent) { offerNewest(r.leases, ev) }))
	if err != nil {
		r.e.errorf("run: %v", err)
		return exitFailed
	}
	ctx, cancel := context.WithCancel(context.Background())
	r.runErr = make(chan error, 1)
	go func() { r.runErr <- el.Run(ctx) }()
	r.events = el.C()
	defer func() {
		cancel() // a held term is resigned, a campaign ends
		<-el.Done()
	}()
	for {
		r.logf("campaigning as %s", r.member)
		start, code := r.waitStarted(cancel)
		if start == nil {
			return code
		}
		res := r.term(*start)
		switch {
		case res.code != exitOK && !res.lost && !res.childExited:
			return res.code // could not start CMD, or the watchdog failed
		case res.lost:
			if r.o.requeue && r.stopped == nil {
				r.logf("--requeue: campaigning again")
				el.Release(start.Term)
				continue
			}
			return res.code
		default:
			if r.o.stay && r.stopped == nil {
				// Let the next standby (if any) take over, and never restart
				// CMD in a tight loop.
				if r.pause(time.Second) {
					r.logf("--stay: campaigning again")
					el.Release(start.Term)
					continue
				}
			}
			return res.code
		}
	}
}

// offerNewest puts ev in the one-slot ch, replacing what is there; never
// blocks (one sender).
func offerNewest(ch chan coord.LeaseEvent, ev coord.LeaseEvent) {
	for {
		select {
		case ch <- ev:
			return
		default:
		}
		select {
		case <-ch:
		default:
		}
	}
}

// pause waits d unless a terminating signal comes first (false then).
func (r *runner) pause(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case s := <-r.sigs:
		r.stopped = s
		return false
	}
}

// waitStarted waits for the elector's next term. A nil event comes with
// the exit code: 0 after a terminating signal (the elector was stopped: it
// left the roster, or resigned a role won just then), 1 when the elector
// stopped for good (the cluster refused the member).
func (r *runner) waitStarted(cancel context.CancelFunc) (*coord.TermEvent, int) {
	for {
		select {
		case ev, ok := <-r.events:
			if !ok {
				err := <-r.runErr
				if err == nil {
					err = errors.New("the elector stopped")
				}
				r.e.errorf("run: campaign for %s as %s: %v", r.role, r.member, err)
				return nil, exitFailed
			}
			if ev.Kind == coord.TermStarted {
				return &ev, exitOK
			}
		case s := <-r.sigs:
			r.stopped = s
			r.logf("%s while waiting for the role: leaving the roster", s)
			cancel()
			for ev := range r.events {
				if ev.Kind == coord.TermStopped {
					// Won just as the signal came: the elector resigned.
					r.logf("resigned (%s)", ev.Reason)
				}
			}
			return nil, exitOK
		}
	}
}

// termResult is how one term of holding the role ended.
type termResult struct {
	code        int
	lost        bool // the role was lost (code is 200-202)
	childExited bool // CMD exited by itself (code is its own)
}

// term holds the role with CMD running, until CMD is dead and the term
// has stopped.
func (r *runner) term(start coord.TermEvent) termResult {
	l, n := start.Leadership, start.Term
	tok := start.Token
	deadline := start.Deadline.UnixMilli()
	env := append(os.Environ(),
		"KRABKA_ROLE="+r.role.String(),
		"KRABKA_MEMBER="+r.member.String(),
		"KRABKA_TRANSACTIONAL_ID="+r.client.TransactionalID(r.role),
		"KRABKA_TOKEN="+tok.String(),
		"KRABKA_LEASE_DEADLINE_MS="+strconv.FormatInt(deadline, 10),
	)
	var wc *writeChannel
	if r.o.topic != "" {
		var err error
		wc, err = openWriteChannel(l, r.o.topic, int32(r.o.partition), r.o.keySep, r.cfg.RequestTimeout)
		if err != nil {
			r.e.errorf("run: the write channel: %v", err)
			r.resign(l)
			return termResult{code: exitFailed}
		}
		defer wc.close()
		env = append(env, "KRABKA_WRITE="+wc.path)
	}

	wd, err := startWatchdog(r.e.stderr)
	if err != nil {
		r.e.errorf("run: starting the watchdog: %v", err)
		r.resign(l)
		return termResult{code: exitFailed}
	}
	defer wd.close()
	sched := newSchedule(r.margin, r.grace)
	// The watchdog knows the deadline before CMD exists.
	wd.send(sched.forDeadline(deadline))

	ch, err := startChild(r.path, r.argv, env, wd, r.e.stdout, r.e.stderr)
	if err != nil {
		code := exitCannotStart
		if errors.Is(err, exec.ErrNotFound) || errors.Is(err, os.ErrNotExist) {
			code = exitNotFoundCmd
		}
		if errors.Is(err, errWatchdog) {
			code = exitFailed
		}
		r.e.errorf("run: %v", err)
		r.resign(l)
		return termResult{code: code}
	}
	r.logf("won as %s, token %s, lease deadline %d (%s); started %s, pid %d",
		r.member, tok, deadline, fmtTime(deadline), r.argv[0], ch.pid)

	var (
		stopWhy string           // why the stop began, once it began
		stopped *coord.TermEvent // the term's TermStopped, once it came
		st      childStatus
		dead    bool // CMD is dead
		wdDead  = wd.dead
	)
	beginStop := func(why string) {
		if stopWhy != "" {
			return
		}
		stopWhy = why
		plan := sched.stopNow(time.Now().UnixMilli())
		wd.send(plan)
		r.logf("%s: stopping %s (SIGTERM now, SIGKILL at %d, lease deadline %d)", why, r.argv[0], plan.kill, plan.deadline)
	}
	// termEvent handles one event of the elector; false once the events
	// ended (Run returned: never while run holds a term it did not release).
	termEvent := func(ev coord.TermEvent, ok bool) bool {
		if !ok {
			return false
		}
		if ev.Term != n {
			return true // NEW_LEADER
		}
		if dead {
			// CMD is dead: only the term's end matters now.
			if ev.Kind == coord.TermStopped {
				stopped = &ev
			}
			return true
		}
		switch ev.Kind {
		case coord.TermAtRisk:
			r.logf("at risk: no renewal succeeded and the lease deadline %d is %d ms away", ev.Deadline.UnixMilli(), time.Until(ev.Deadline).Milliseconds())
		case coord.TermRecovered:
			r.logf("renewal succeeded again, lease deadline %d", ev.Deadline.UnixMilli())
		case coord.TermStopped:
			stopped = &ev
			beginStop(fmt.Sprintf("leadership %s (%v)", ev.Reason, ev.Err))
		}
		return true
	}
	events := r.events
wait:
	for {
		select {
		case st = <-ch.status:
			dead = true
			break wait
		case ev := <-r.leases:
			if ev.Term == n && stopWhy == "" {
				wd.send(sched.forDeadline(ev.Deadline.UnixMilli()))
			}
		case ev, ok := <-events:
			if !termEvent(ev, ok) {
				events = nil
			}
		case ev := <-wd.events:
			switch ev.kind {
			case "term":
				if stopWhy == "" {
					stopWhy = "at risk"
					r.logf("at risk: no renewal succeeded and the lease deadline %d is %d ms away: the watchdog sent SIGTERM",
						sched.cur.deadline, sched.cur.deadline-ev.at)
				}
			case "kill":
				r.logf("the watchdog sent SIGKILL to %s's process group, %d ms before the lease deadline %d", r.argv[0], sched.cur.deadline-ev.at, sched.cur.deadline)
			}
		case <-wdDead:
			wdDead = nil
			if wd.finishing.Load() {
				continue // the child is dead and the watchdog said goodbye
			}
			// Never expected: the watchdog is gone, so nobody else would
			// enforce the deadline. Stop CMD now.
			if stopWhy == "" {
				stopWhy = "the watchdog ended"
			}
			r.e.errorf("run: the watchdog process ended unexpectedly: killing %s", r.argv[0])
			ch.signal(syscall.SIGKILL)
		case s := <-r.sigs:
			r.stopped = s
			r.logf("forwarding %s to %s (pid %d)", s, r.argv[0], ch.pid)
			ch.signal(s.(syscall.Signal))
		}
	}
	if wc != nil {
		wc.close() // CMD is dead: nothing writes under this leadership any more
	}
	r.logf("%s (pid %d) %s", r.argv[0], ch.pid, st.describe())

	// Killed by a signal once the watchdog's SIGTERM instant had passed:
	// the watchdog's stop, not an exit of CMD's own, even when the
	// watchdog's report of it is not read yet. A paused run (SIGSTOP) that
	// resumes finds the child's status and that report ready at once, and
	// select may take the status first; the leadership may still read
	// Active until its deadline timer runs.
	if stopWhy == "" && st.signaled() && time.Now().UnixMilli() >= sched.cur.term {
		stopWhy = "at risk (the watchdog's SIGTERM instant had passed)"
	}
	// CMD is dead. A term still running is ended by resigning: that lets
	// the next standby in at once, and its answer says whether the role was
	// lost meanwhile (FENCED, EXPIRED).
	exitedItself := stopWhy == "" && stopped == nil && l.State() == coord.Active
	if stopped == nil {
		r.resign(l)
		if l.State() == coord.Active {
			l.Close() // the resignation did not get through: end the term here
		}
		for stopped == nil && events != nil {
			ev, ok := <-events
			if !termEvent(ev, ok) {
				events = nil
			}
		}
	}
	if exitedItself {
		return termResult{code: st.code(), childExited: true}
	}
	if stopWhy == "" {
		// The leadership ended just as CMD exited by itself.
		stopWhy = fmt.Sprintf("leadership %s (%v)", l.State(), l.Err())
		if stopped != nil {
			stopWhy = fmt.Sprintf("leadership %s (%v)", stopped.Reason, stopped.Err)
		}
	}
	// A loss: report how the term ended.
	res := termResult{lost: true}
	var lost string
	reason := coord.StopLostAtRisk
	if stopped != nil {
		reason = stopped.Reason
	}
	switch reason {
	case coord.StopFenced:
		res.code, lost = exitLostFenced, "FENCED"
	case coord.StopExpired:
		res.code, lost = exitLostExpired, "EXPIRED"
	default: // resigned or closed by run after an at-risk stop
		res.code, lost = exitLostAtRisk, "AT_RISK"
	}
	r.logf("lost the role (%s; the stop began on: %s); exit code %d", lost, stopWhy, res.code)
	if r.o.onLost != "" {
		r.runOnLost(lost, tok, st)
	}
	return res
}

// resign gives the role up (bounded by the request timeout).
func (r *runner) resign(l *coord.Leadership) {
	ctx, cancel := context.WithTimeout(context.Background(), r.cfg.RequestTimeout)
	defer cancel()
	if err := l.Resign(ctx); err != nil {
		r.logf("resign: %v (state %s)", err, l.State())
		return
	}
	r.logf("resigned")
}

// runOnLost runs the --on-lost command after a loss, once CMD is dead.
func (r *runner) runOnLost(lost string, tok core.FencingToken, st childStatus) {
	cmd := exec.Command("sh", "-c", r.o.onLost)
	cmd.Env = append(os.Environ(),
		"KRABKA_ROLE="+r.role.String(),
		"KRABKA_MEMBER="+r.member.String(),
		"KRABKA_TOKEN="+tok.String(),
		"KRABKA_LOST="+lost,
		"KRABKA_CHILD_EXIT="+strconv.Itoa(st.code()),
	)
	cmd.Stdout, cmd.Stderr = r.e.stdout, r.e.stderr
	if err := cmd.Run(); err != nil {
		r.logf("--on-lost: %v", err)
	}
}
