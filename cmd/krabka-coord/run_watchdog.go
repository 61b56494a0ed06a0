package main

// The watchdog of run: a small process (this binary, started with a hidden
// first argument) that holds the instants at which run's child must get
// SIGTERM and SIGKILL, and enforces them on its own. run keeps moving them
// later as renewals succeed; when run stops feeding it (run is paused,
// stalled, or cannot renew), the instants it last got still hold, so the
// child dies before the lease deadline whether or not run is scheduled.
//
// Feed (stdin, one line each):
//
//	sched TERM KILL DEADLINE   Unix ms instants; before the SIGTERM was sent they
//	                           replace the current ones, afterwards only an
//	                           earlier KILL counts
//	pid PID                    the child to guard (its process group is PID)
//	done                       the child is dead: stop, answer "bye", exit
//
// End of the feed (run died): SIGKILL the group at once and exit.
//
// Reports (stdout): "armed", "error MESSAGE", "term MS", "kill MS",
// "gone MS", "bye". On stderr it says what it did, with the instants the
// tests read: "child PID ended at=... stop_began=... deadline=...".
//
// When no pid has arrived by the SIGKILL instant (run was stopped between
// forking the child and handing it over), it SIGKILLs run instead: the
// child's parent-death signal then ends the child.

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

const watchdogArg = "__krabka-run-watchdog"

func init() {
	if len(os.Args) >= 2 && os.Args[1] == watchdogArg {
		os.Exit(watchdogMain(os.Stdin, os.Stdout, os.Stderr))
	}
}

type wdState struct {
	out, errw io.Writer
	parent    int
	pid       int // 0 until armed
	pidfd     int // -1 without
	plan      plan
	havePlan  bool
	termSent  bool
	killSent  bool
	stopBegan int64 // when the SIGTERM (or the kill at the feed's end) was sent
	goneAt    int64
}

func nowMs() int64 { return time.Now().UnixMilli() }

func watchdogMain(in io.Reader, out, errw io.Writer) int {
	// Terminal and operator signals are run's to forward, not ours: the
	// watchdog ends only with its feed.
	signal.Ignore(syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGTSTP, syscall.SIGPIPE)
	s := &wdState{out: out, errw: errw, parent: os.Getppid(), pidfd: -1}
	lines := make(chan string)
	go func() {
		sc := bufio.NewScanner(in)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	gone := make(chan int64, 1)
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		// Re-read the wall clock at least once a second (the plan is in
		// wall-clock ms, the timer runs on the monotonic clock).
		wait := time.Second
		if next, ok := s.next(); ok {
			wait = min(wait, time.Duration(next-nowMs())*time.Millisecond)
		}
		if !timer.Stop() {
			select {
			case <-timer.C:
			default:
			}
		}
		timer.Reset(max(wait, 0))
		select {
		case l, ok := <-lines:
			if !ok {
				s.feedEnded()
				return 0
			}
			if s.handle(l, gone) {
				// run saw the child exit (it says "done" only then): if a
				// stop was under way, report when it ended.
				if s.termSent && s.goneAt == 0 {
					select {
					case s.goneAt = <-gone:
					case <-time.After(time.Second):
						s.goneAt = nowMs()
					}
					fmt.Fprintf(s.out, "gone %d\n", s.goneAt)
					s.reportEnd()
				}
				fmt.Fprintln(s.out, "bye")
				return 0
			}
		case at := <-gone:
			s.goneAt = at
			fmt.Fprintf(s.out, "gone %d\n", at)
			if s.termSent {
				s.reportEnd()
			}
		case <-timer.C:
			s.fire()
		}
	}
}

// next is the instant of the next action, if any.
func (s *wdState) next() (int64, bool) {
	switch {
	case !s.havePlan || s.killSent:
		return 0, false
	case !s.termSent:
		return s.plan.term, true
	default:
		return s.plan.kill, true
	}
}

// handle applies one feed line; true on "done".
func (s *wdState) handle(l string, gone chan<- int64) bool {
	f := strings.Fields(l)
	if len(f) == 0 {
		return false
	}
	switch f[0] {
	case "sched":
		if len(f) != 4 {
			return false
		}
		var p plan
		var err error
		if p.term, err = strconv.ParseInt(f[1], 10, 64); err != nil {
			return false
		}
		if p.kill, err = strconv.ParseInt(f[2], 10, 64); err != nil {
			return false
		}
		if p.deadline, err = strconv.ParseInt(f[3], 10, 64); err != nil {
			return false
		}
		if !s.havePlan || !s.termSent {
			s.plan, s.havePlan = p, true
		} else if p.kill < s.plan.kill {
			s.plan.kill = p.kill
		}
		s.fire()
	case "pid":
		if len(f) != 2 {
			fmt.Fprintf(s.out, "error bad pid line %q\n", l)
			return false
		}
		pid, err := strconv.Atoi(f[1])
		if err != nil || pid <= 0 {
			fmt.Fprintf(s.out, "error bad pid line %q\n", l)
			return false
		}
		s.pid = pid
		if fd, err := unix.PidfdOpen(pid, 0); err == nil {
			s.pidfd = fd
			go func() {
				fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
				for {
					if _, err := unix.Poll(fds, -1); err != unix.EINTR {
						break
					}
				}
				gone <- nowMs()
			}()
		} else {
			// No pidfd (Linux before 5.3): watch /proc. run reaps the child
			// only after "done", so the pid stays the child's meanwhile.
			go func() {
				for !exited(pid) {
					time.Sleep(5 * time.Millisecond)
				}
				gone <- nowMs()
			}()
		}
		fmt.Fprintln(s.out, "armed")
		if s.termSent {
			// The stop began before the child was handed over.
			s.signal(syscall.SIGTERM)
		}
		s.fire()
	case "done":
		return true
	}
	return false
}

// exited reports whether pid is gone or a zombie (from /proc).
func exited(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	st := string(b)
	if i := strings.LastIndexByte(st, ')'); i >= 0 && i+2 < len(st) {
		return st[i+2] == 'Z' || st[i+2] == 'X'
	}
	return false
}

// fire takes the actions that are due.
func (s *wdState) fire() {
	if !s.havePlan {
		return
	}
	now := nowMs()
	if !s.termSent && now >= s.plan.term {
		s.termSent, s.stopBegan = true, now
		s.signal(syscall.SIGTERM)
		fmt.Fprintf(s.out, "term %d\n", now)
		fmt.Fprintf(s.errw, "krabka-coord run: watchdog: SIGTERM to process group %d at %d, %d ms before the lease deadline %d\n",
			s.pid, now, s.plan.deadline-now, s.plan.deadline)
	}
	if s.termSent && !s.killSent && now >= s.plan.kill {
		s.killSent = true
		if s.pid == 0 {
			// run forked the child but stopped before handing it over:
			// end run, and the child's parent-death signal ends the child.
			fmt.Fprintf(s.errw, "krabka-coord run: watchdog: no child handed over by the SIGKILL instant: SIGKILL to run (pid %d)\n", s.parent)
			syscall.Kill(s.parent, syscall.SIGKILL)
			return
		}
		s.signal(syscall.SIGKILL)
		fmt.Fprintf(s.out, "kill %d\n", now)
		fmt.Fprintf(s.errw, "krabka-coord run: watchdog: SIGKILL to process group %d at %d, %d ms before the lease deadline %d\n",
			s.pid, now, s.plan.deadline-now, s.plan.deadline)
	}
}

// signal signals the child's process group, and the child itself through
// its pidfd (in case it left the group).
func (s *wdState) signal(sig syscall.Signal) {
	if s.pid == 0 {
		return
	}
	syscall.Kill(-s.pid, sig)
	if pg, err := unix.Getpgid(s.pid); s.pidfd >= 0 && err == nil && pg != s.pid {
		unix.PidfdSendSignal(s.pidfd, sig, nil, 0) // it left its group: signal it once more, directly
	}
}

// feedEnded: run is gone (it died, or closed the feed): SIGKILL now.
func (s *wdState) feedEnded() {
	if s.pid == 0 {
		return
	}
	now := nowMs()
	if !s.termSent {
		s.termSent, s.stopBegan = true, now
	}
	s.signal(syscall.SIGKILL)
	fmt.Fprintf(s.errw, "krabka-coord run: watchdog: run is gone: SIGKILL to process group %d at %d, %d ms before the lease deadline %d\n",
		s.pid, now, s.plan.deadline-now, s.plan.deadline)
	// Report when the child ended (it is no longer anyone's to reap
	// once run is gone, so this is soon).
	deadline := time.Now().Add(5 * time.Second)
	for s.goneAt == 0 && time.Now().Before(deadline) {
		if exited(s.pid) {
			s.goneAt = nowMs()
			break
		}
		time.Sleep(time.Millisecond)
	}
	if s.goneAt != 0 {
		s.reportEnd()
	}
}

// reportEnd says when the child ended relative to the stop and the lease
// deadline (the tests read this line).
func (s *wdState) reportEnd() {
	fmt.Fprintf(s.errw, "krabka-coord run: watchdog: child %d ended at=%d stop_began=%d deadline=%d loss_to_death_ms=%d before_deadline_ms=%d\n",
		s.pid, s.goneAt, s.stopBegan, s.plan.deadline, s.goneAt-s.stopBegan, s.plan.deadline-s.goneAt)
}
