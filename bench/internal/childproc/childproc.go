// Package childproc is the child-process protocol of the benchmarks that run
// members in processes of their own (bench/handoff, bench/crossrole): the
// driver starts a child (its own binary again, with a subcommand), writes
// commands to the child's stdin one a line, and reads the child's events
// from its stdout, one JSON object a line. Out is the child's side.
package childproc

import (
	"bufio"
	"encoding/json"
	"io"
	"os/exec"
	"sync"
	"syscall"
	"time"
)

// Event is what a child reports. An event of kind "err" fails a Wait.
type Event interface {
	// Kind is the event's kind (its "ev").
	Kind() string
	// Failure is what an "err" event says.
	Failure() string
}

// Reason is why a Wait returned no event of the kind it waited for.
type Reason int

const (
	Failed   Reason = iota // the child reported an "err" event
	Exited                 // the child's stdout ended first
	TimedOut               // no such event within the time given
)

// WaitError is a failed Wait: what it waited for, how long, and why.
type WaitError struct {
	Reason Reason
	Want   string        // the kind waited for
	Within time.Duration // how long Wait waited
	Msg    string        // Failed: what the err event said
}

func (e *WaitError) Error() string {
	switch e.Reason {
	case Exited:
		return "the child exited waiting for " + e.Want
	case TimedOut:
		return "no " + e.Want + " from the child within " + e.Within.String()
	}
	return e.Msg
}

// Options are how a driver reads its child.
type Options struct {
	// Events is the capacity of Proc.Events.
	Events int
	// With BufMax > 0, the events are read with a buffer of BufStart bytes
	// that grows to BufMax (bufio.Scanner.Buffer); else with bufio's
	// default (lines up to bufio.MaxScanTokenSize).
	BufStart, BufMax int
	// Err words Wait's failures (nil: the *WaitError itself).
	Err func(WaitError) error
}

// Proc is a running child.
type Proc[E Event] struct {
	Cmd *exec.Cmd
	// Events are the child's events in order; closed when its stdout ends
	// (a line that is not an E is passed over).
	Events <-chan E
	stdin  *bufio.Writer
	err    func(WaitError) error
	once   sync.Once
}

// Start starts cmd (set up but not started) with pipes to its stdin and
// from its stdout.
func Start[E Event](cmd *exec.Cmd, o Options) (*Proc[E], error) {
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
	events := make(chan E, o.Events)
	p := &Proc[E]{Cmd: cmd, Events: events, stdin: bufio.NewWriter(in), err: o.Err}
	go func() {
		sc := bufio.NewScanner(out)
		if o.BufMax > 0 {
			sc.Buffer(make([]byte, o.BufStart), o.BufMax)
		}
		for sc.Scan() {
			var e E
			if json.Unmarshal(sc.Bytes(), &e) == nil {
				events <- e
			}
		}
		close(events)
	}()
	return p, nil
}

// Send writes one command line to the child.
func (p *Proc[E]) Send(line string) {
	p.stdin.WriteString(line + "\n")
	p.stdin.Flush()
}

// Wait returns the child's next event of kind ev, passing over the others
// (an err event fails).
func (p *Proc[E]) Wait(ev string, d time.Duration) (E, error) {
	tm := time.NewTimer(d)
	defer tm.Stop()
	var zero E
	for {
		select {
		case e, ok := <-p.Events:
			if !ok {
				return zero, p.fail(WaitError{Reason: Exited, Want: ev, Within: d})
			}
			if e.Kind() == "err" {
				return e, p.fail(WaitError{Reason: Failed, Want: ev, Within: d, Msg: e.Failure()})
			}
			if e.Kind() == ev {
				return e, nil
			}
		case <-tm.C:
			return zero, p.fail(WaitError{Reason: TimedOut, Want: ev, Within: d})
		}
	}
}

func (p *Proc[E]) fail(w WaitError) error {
	if p.err != nil {
		return p.err(w)
	}
	return &w
}

// Kill SIGKILLs the child and reaps it; only the first call does.
func (p *Proc[E]) Kill() {
	p.once.Do(func() {
		p.Cmd.Process.Signal(syscall.SIGKILL)
		p.Cmd.Wait()
	})
}

// Out is a child's side: it writes the child's events, one JSON object a
// line, from any goroutine.
type Out[E any] struct {
	mu sync.Mutex
	w  *bufio.Writer
}

// NewOut writes events to w (the child's stdout).
func NewOut[E any](w io.Writer) *Out[E] {
	return &Out[E]{w: bufio.NewWriter(w)}
}

// Send writes e and flushes it.
func (o *Out[E]) Send(e E) {
	b, _ := json.Marshal(e)
	o.mu.Lock()
	o.w.Write(b)
	o.w.WriteByte('\n')
	o.w.Flush()
	o.mu.Unlock()
}
