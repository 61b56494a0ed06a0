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

run renews the lease in the background. When the leadership is lost
(FENCED, EXPIRED), or the deadline comes within --margin without a
successful renewal, CMD's process group gets SIGTERM and, --grace later,
SIGKILL; the SIGKILL lands at least margin-grace before the lease deadline,
so a standby (which waits for the deadline) never runs its copy while this
one still runs. A separate watchdog process enforces these instants, so
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
		fs.Var(&r.margin, "margin", "stop CMD when the lease has less than `DURATION` left and no renewal succeeded (default max(lease/5, 500ms))")
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

// runner is one run command: the campaign loop around terms of holding
// the role.
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
	// run renews itself (renewLoop below), so that every renewal reaches the
	// watchdog at once.
	cfg.BackgroundRenew = false
	r.cfg = cfg
	lease := time.Duration(cfg.Lease.DurationMs) * time.Millisecond
	interval := time.Duration(cfg.Lease.RenewIntervalMs) * time.Millisecond
	room := lease - interval // how long a lease lasts after its regular renewal was due
	r.margin = r.o.margin.d
	if !r.o.margin.set {
		r.margin = max(lease/5, 500*time.Millisecond)
		if r.margin >= room {
			r.margin = room / 2
		}
	}
	if r.margin <= 0 || r.margin >= room {
		e.errorf("run: --margin %s must be above 0 and below krabka.lease.ms - krabka.renew.interval.ms = %s (else CMD would be stopped before every regular renewal)", r.margin, room)
		return exitUsage
	}
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

// loop campaigns and holds the role, term after term, until there is
// something to exit with.
func (r *runner) loop() int {
	for {
		l, code := r.campaign()
		if l == nil {
			return code
		}
		res := r.term(l)
		switch {
		case res.code != exitOK && !res.lost && !res.childExited:
			return res.code // could not start CMD, or the watchdog failed
		case res.lost:
			if r.o.requeue && r.stopped == nil {
				r.logf("--requeue: campaigning again")
				continue
			}
			return res.code
		default:
			if r.o.stay && r.stopped == nil {
				// Let the next standby (if any) take over, and never restart
				// CMD in a tight loop.
				if r.pause(time.Second) {
					r.logf("--stay: campaigning again")
					continue
				}
			}
			return res.code
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

// campaign waits for the role. A nil leadership comes with the exit code:
// 0 after a terminating signal, 1 when the campaign failed for good.
func (r *runner) campaign() (*coord.Leadership, int) {
	r.logf("campaigning as %s", r.member)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	type result struct {
		l   *coord.Leadership
		err error
	}
	done := make(chan result, 1)
	go func() {
		l, err := r.client.Acquire(ctx, r.role, r.member)
		done <- result{l, err}
	}()
	for {
		select {
		case res := <-done:
			if res.err != nil {
				r.e.errorf("run: campaign for %s as %s: %v", r.role, r.member, res.err)
				return nil, exitFailed
			}
			return res.l, exitOK
		case s := <-r.sigs:
			r.stopped = s
			r.logf("%s while waiting for the role: leaving the roster", s)
			cancel()
			if res := <-done; res.l != nil {
				// Won just as the signal came: give the role up at once.
				r.resign(res.l)
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

// term holds the role with CMD running, until CMD is dead.
func (r *runner) term(l *coord.Leadership) termResult {
	lease := l.Lease()
	tok := l.Token()
	env := append(os.Environ(),
		"KRABKA_ROLE="+r.role.String(),
		"KRABKA_MEMBER="+r.member.String(),
		"KRABKA_TRANSACTIONAL_ID="+r.client.TransactionalID(r.role),
		"KRABKA_TOKEN="+tok.String(),
		"KRABKA_LEASE_DEADLINE_MS="+strconv.FormatInt(lease.Deadline, 10),
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
	wd.send(sched.forDeadline(lease.Deadline))

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
		r.member, tok, lease.Deadline, fmtTime(lease.Deadline), r.argv[0], ch.pid)

	renewCtx, stopRenew := context.WithCancel(context.Background())
	renewDone := make(chan struct{})
	renewed := make(chan core.Lease, 1)
	go func() {
		defer close(renewDone)
		r.renewLoop(renewCtx, l, func(nl core.Lease) {
			select {
			case <-renewed:
			default:
			}
			renewed <- nl
		})
	}()

	var (
		stopWhy  string // why the stop began, once it began
		st       childStatus
		leaseEnd = l.Done()
		wdDead   = wd.dead
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
wait:
	for {
		select {
		case st = <-ch.status:
			break wait
		case nl := <-renewed:
			if stopWhy == "" {
				wd.send(sched.forDeadline(nl.Deadline))
			}
		case <-leaseEnd:
			leaseEnd = nil
			beginStop(fmt.Sprintf("leadership %s (%v)", l.State(), l.Err()))
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

	if stopWhy == "" && l.State() == coord.Active {
		// CMD exited by itself while the role was held.
		stopRenew()
		<-renewDone
		r.resign(l)
		return termResult{code: st.code(), childExited: true}
	}
	if stopWhy == "" {
		// The leadership ended just as CMD exited by itself.
		stopWhy = fmt.Sprintf("leadership %s (%v)", l.State(), l.Err())
	}
	// A loss: give the role up if it is still held (CMD is dead), then
	// report how the leadership ended.
	stopRenew()
	<-renewDone
	if l.State() == coord.Active {
		r.resign(l)
	}
	res := termResult{lost: true}
	var lost string
	switch l.State() {
	case coord.Fenced:
		res.code, lost = exitLostFenced, "FENCED"
	case coord.Expired:
		res.code, lost = exitLostExpired, "EXPIRED"
	default:
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

// renewLoop renews the lease when due and retries failed renewals (the
// library's own background renewer does the same; run does it itself to
// hand every new deadline to the watchdog at once).
func (r *runner) renewLoop(ctx context.Context, l *coord.Leadership, renewed func(core.Lease)) {
	lc := r.cfg.Lease
	retry := min(time.Duration(lc.RenewIntervalMs)*time.Millisecond/4, r.cfg.PollInterval)
	retry = max(retry, 10*time.Millisecond)
	failing := false
	for {
		if l.State() != coord.Active || ctx.Err() != nil {
			return
		}
		at := lc.RenewAt(l.Lease())
		if wait := at - time.Now().UnixMilli(); wait > 0 {
			if !sleepCtx(ctx, time.Duration(wait)*time.Millisecond, l.Done()) {
				return
			}
			continue
		}
		rctx, cancel := context.WithTimeout(ctx, r.cfg.RequestTimeout)
		err := l.Renew(rctx)
		cancel()
		if err == nil {
			if failing {
				r.logf("renewal succeeded again, lease deadline %d", l.Lease().Deadline)
			}
			failing = false
			renewed(l.Lease())
			continue
		}
		if ctx.Err() != nil || l.State() != coord.Active {
			return
		}
		if !failing {
			r.logf("renewal failed (retrying every %s): %v", retry, err)
		}
		failing = true
		if !sleepCtx(ctx, retry, l.Done()) {
			return
		}
	}
}

// sleepCtx sleeps d; false when ctx or stop ended first.
func sleepCtx(ctx context.Context, d time.Duration, stop <-chan struct{}) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	case <-stop:
		return false
	}
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
