package main

// run's child: started on a locked OS thread so that it dies with run
// (PR_SET_PDEATHSIG fires when the thread that forked it ends), in its own
// process group (the watchdog and run signal the group), and guarded by the
// watchdog process (run_watchdog.go) from before it exists until after it
// is dead.

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// plan is what the watchdog enforces: SIGTERM to the child's process group
// at term, SIGKILL at kill (Unix ms), for a lease that ends at deadline.
type plan struct {
	term, kill, deadline int64
}

func (p plan) line() string { return fmt.Sprintf("sched %d %d %d", p.term, p.kill, p.deadline) }

// schedule turns lease deadlines into plans: SIGTERM margin before the
// deadline, SIGKILL grace after the SIGTERM (so at least margin-grace
// before the deadline).
type schedule struct {
	margin, grace int64 // ms
	cur           plan
	stopping      bool
}

func newSchedule(margin, grace time.Duration) *schedule {
	return &schedule{margin: margin.Milliseconds(), grace: grace.Milliseconds()}
}

// forDeadline is the plan of a lease that ends at deadline.
func (s *schedule) forDeadline(deadline int64) plan {
	t := deadline - s.margin
	s.cur = plan{term: t, kill: t + s.grace, deadline: deadline}
	return s.cur
}

// stopNow is the plan of a stop that begins at now (or at the planned
// SIGTERM, if that is earlier): never later than the current plan.
func (s *schedule) stopNow(now int64) plan {
	t := min(now, s.cur.term)
	s.cur = plan{term: t, kill: t + s.grace, deadline: s.cur.deadline}
	s.stopping = true
	return s.cur
}

// errWatchdog marks a failure of the watchdog itself.
var errWatchdog = errors.New("watchdog")

// wdEvent is one report of the watchdog: "term", "kill" or "gone" at a
// Unix ms instant.
type wdEvent struct {
	kind string
	at   int64
}

// watchdog is run's end of the watchdog process: its stdin is the feed
// (plans, the child's pid, done), its stdout the reports.
type watchdog struct {
	cmd *exec.Cmd
	in  io.WriteCloser

	// The feed is written by one goroutine (writeFeed), so that run's event
	// loop never blocks on the pipe: control lines (pid, done) in order, and
	// only the newest plan (each plan replaces the one before).
	mu      sync.Mutex
	ctl     []string
	plan    string
	closing bool
	kick    chan struct{}
	flushed chan struct{} // closed when writeFeed returns

	events chan wdEvent
	armed  chan error
	bye    chan struct{}
	dead   chan struct{} // closed when the report pipe ends
	exited chan struct{}
	// finishing: finish was called (the child is dead), so the watchdog's
	// end is expected.
	finishing atomic.Bool
}

// startWatchdog starts the watchdog: this binary again, with the hidden
// first argument, in a process group of its own (signals meant for run's
// group do not reach it) and with run's stderr.
func startWatchdog(stderr io.Writer) (*watchdog, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(exe, watchdogArg)
	cmd.Stderr = stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	w := &watchdog{cmd: cmd, in: in, events: make(chan wdEvent, 16), armed: make(chan error, 1),
		bye: make(chan struct{}), dead: make(chan struct{}), exited: make(chan struct{}),
		kick: make(chan struct{}, 1), flushed: make(chan struct{})}
	go w.writeFeed()
	go func() {
		defer close(w.dead)
		sc := bufio.NewScanner(out)
		byeOnce := sync.Once{}
		for sc.Scan() {
			f := strings.Fields(sc.Text())
			if len(f) == 0 {
				continue
			}
			switch f[0] {
			case "armed":
				w.armed <- nil
			case "error":
				w.armed <- fmt.Errorf("%w: %s", errWatchdog, strings.Join(f[1:], " "))
			case "bye":
				byeOnce.Do(func() { close(w.bye) })
			case "term", "kill", "gone":
				at, _ := strconv.ParseInt(f[len(f)-1], 10, 64)
				select {
				case w.events <- wdEvent{f[0], at}:
				default:
				}
			}
		}
		byeOnce.Do(func() { close(w.bye) })
	}()
	go func() {
		<-w.dead
		cmd.Wait()
		close(w.exited)
	}()
	return w, nil
}

// send hands the watchdog a new plan; never blocks.
func (w *watchdog) send(p plan) {
	w.mu.Lock()
	w.plan = p.line()
	w.mu.Unlock()
	w.nudge()
}

// sendLine queues a control line; never blocks.
func (w *watchdog) sendLine(s string) {
	w.mu.Lock()
	w.ctl = append(w.ctl, s)
	w.mu.Unlock()
	w.nudge()
}

func (w *watchdog) nudge() {
	select {
	case w.kick <- struct{}{}:
	default:
	}
}

// writeFeed writes what send and sendLine queued: the newest plan first
// (the first plan is queued before the pid), then the control lines. Write
// errors show as the watchdog's death on the report pipe.
func (w *watchdog) writeFeed() {
	defer close(w.flushed)
	for range w.kick {
		w.mu.Lock()
		plan, ctl, closing := w.plan, w.ctl, w.closing
		w.plan, w.ctl = "", nil
		w.mu.Unlock()
		var b strings.Builder
		if plan != "" {
			b.WriteString(plan + "\n")
		}
		for _, l := range ctl {
			b.WriteString(l + "\n")
		}
		if b.Len() > 0 {
			io.WriteString(w.in, b.String())
		}
		if closing {
			return
		}
	}
}

// arm hands the child's pid to the watchdog and waits until it watches it.
func (w *watchdog) arm(pid int) error {
	w.sendLine("pid " + strconv.Itoa(pid))
	t := time.NewTimer(10 * time.Second)
	defer t.Stop()
	select {
	case err := <-w.armed:
		return err
	case <-w.dead:
		return fmt.Errorf("%w: the watchdog ended before it watched pid %d", errWatchdog, pid)
	case <-t.C:
		return fmt.Errorf("%w: the watchdog did not answer in 10 s", errWatchdog)
	}
}

// finish tells the watchdog the child is dead and waits for its goodbye:
// after it the watchdog signals nothing, so the child may be reaped.
func (w *watchdog) finish() {
	w.finishing.Store(true)
	w.sendLine("done")
	t := time.NewTimer(10 * time.Second)
	defer t.Stop()
	select {
	case <-w.bye:
	case <-w.dead:
	case <-t.C:
		w.cmd.Process.Kill()
	}
}

// close ends the feed (after what is queued, unless the pipe is stuck) and
// waits for the watchdog to exit.
func (w *watchdog) close() {
	w.mu.Lock()
	w.closing = true
	w.mu.Unlock()
	w.nudge()
	select {
	case <-w.flushed:
	case <-time.After(time.Second):
	}
	w.in.Close()
	select {
	case <-w.exited:
	case <-time.After(10 * time.Second):
		w.cmd.Process.Kill()
		<-w.exited
	}
}

// childStatus is how the child ended.
type childStatus struct {
	state *os.ProcessState
	err   error // Wait's error other than the exit status
}

// signaled reports whether the child was ended by a signal.
func (s childStatus) signaled() bool {
	if s.state == nil {
		return false
	}
	ws, ok := s.state.Sys().(syscall.WaitStatus)
	return ok && ws.Signaled()
}

// code is the exit code that stands for the child's end: its own, or
// 128+N after signal N (as a shell reports it).
func (s childStatus) code() int {
	if s.state == nil {
		return exitFailed
	}
	if ws, ok := s.state.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return s.state.ExitCode()
}

func (s childStatus) describe() string {
	if s.state == nil {
		return fmt.Sprintf("could not be waited for: %v", s.err)
	}
	if ws, ok := s.state.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return fmt.Sprintf("was killed by signal %d (%s)", int(ws.Signal()), ws.Signal())
	}
	return fmt.Sprintf("exited with code %d", s.state.ExitCode())
}

// child is a running CMD.
type child struct {
	pid    int
	status chan childStatus // one value, once it is dead and reaped

	mu     sync.Mutex
	reaped bool
}

// signal sends sig to the child's process group, never after the child
// was reaped (its pid could then name another process).
func (c *child) signal(sig syscall.Signal) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.reaped {
		syscall.Kill(-c.pid, sig)
	}
}

// startChild starts CMD and hands it to the watchdog. The goroutine that
// forks stays locked to its OS thread until the child is dead: the child's
// parent-death signal (SIGKILL) is tied to that thread, not to the process.
func startChild(path string, argv, env []string, wd *watchdog, stdout, stderr io.Writer) (*child, error) {
	c := &child{status: make(chan childStatus, 1)}
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		// Never unlocked: when this goroutine returns, its thread ends with it.
		cmd := exec.Command(path)
		cmd.Args = argv
		cmd.Env = env
		cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, stdout, stderr
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
		if err := cmd.Start(); err != nil {
			started <- fmt.Errorf("starting %s: %w", argv[0], err)
			return
		}
		c.pid = cmd.Process.Pid
		if err := wd.arm(c.pid); err != nil {
			syscall.Kill(-c.pid, syscall.SIGKILL)
			cmd.Wait()
			started <- err
			return
		}
		started <- nil
		// Wait for its end without reaping it, so that its pid (and with it
		// its process group id) stays reserved while the group is killed.
		var info unix.Siginfo
		for {
			err := unix.Waitid(unix.P_PID, c.pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
			if err != unix.EINTR {
				break
			}
		}
		syscall.Kill(-c.pid, syscall.SIGKILL) // whatever is left of its process group
		wd.finish()
		c.mu.Lock()
		c.reaped = true
		c.mu.Unlock()
		err := cmd.Wait()
		var ee *exec.ExitError
		if errors.As(err, &ee) || err == nil {
			err = nil
		}
		c.status <- childStatus{state: cmd.ProcessState, err: err}
	}()
	if err := <-started; err != nil {
		return nil, err
	}
	return c, nil
}
