package main

// The "dead" role's holder runs in a child process (this binary re-executed
// as "crossrole dead-holder ..."), so that its end is a real crash: the
// driver SIGKILLs it. It renews by hand (not krabka.renew.background) so
// that the kill can be placed between two renewals: on "freeze" it waits for
// a renewal in flight to finish, stops renewing, reports the deadline of its
// last lease and waits to be killed. A kill in the middle of a renewal would
// leave a second open transaction on the partition (a second intruder, also
// in the control runs).

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/krabka/krabka-coord/bench/internal/childproc"
	"github.com/krabka/krabka-coord/core"
	"github.com/krabka/krabka-coord/core/coord"
	"github.com/krabka/krabka-coord/core/kafka"
)

// event is one line a child writes to its stdout (JSON). Times are Unix
// nanoseconds, lease instants Unix milliseconds of the system clock, which
// every process on the machine shares.
type event struct {
	Ev       string `json:"ev"`
	T        int64  `json:"t,omitempty"`
	Token    string `json:"token,omitempty"`
	Deadline int64  `json:"deadline,omitempty"` // ms
	Granted  int64  `json:"granted,omitempty"`  // ms
	State    string `json:"state,omitempty"`
	Renewals int    `json:"renewals,omitempty"`
	Err      string `json:"err,omitempty"`
}

func (e event) Kind() string    { return e.Ev }
func (e event) Failure() string { return e.Err }

// parseProps turns k=v,k=v into a map.
func parseProps(s string) (map[string]string, error) {
	m := map[string]string{}
	if s == "" {
		return m, nil
	}
	for _, kv := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return nil, fmt.Errorf("bad property %q", kv)
		}
		m[k] = v
	}
	return m, nil
}

func runDeadHolder(args []string) {
	fs := flag.NewFlagSet("dead-holder", flag.ExitOnError)
	props := fs.String("props", "", "client properties k=v,k=v (bootstrap.servers included)")
	roleName := fs.String("role", "", "role")
	memberName := fs.String("member", "holder", "member id")
	fs.Parse(args)
	o := childproc.NewOut[event](os.Stdout)
	fail := func(err error) {
		o.Send(event{Ev: "err", Err: err.Error()})
		os.Exit(1)
	}
	m, err := parseProps(*props)
	if err != nil {
		fail(err)
	}
	cfg, err := coord.ConfigFromMap(m)
	if err != nil {
		fail(err)
	}
	cl, err := kafka.NewClient(cfg)
	if err != nil {
		fail(err)
	}
	role, err := core.NewRole(*roleName)
	if err != nil {
		fail(err)
	}
	member, err := core.NewMemberID(*memberName)
	if err != nil {
		fail(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	l, err := cl.Acquire(ctx, role, member)
	cancel()
	if err != nil {
		fail(fmt.Errorf("acquire: %w", err))
	}
	ls := l.Lease()
	o.Send(event{Ev: "acq", T: time.Now().UnixNano(), Token: l.Token().String(), Deadline: ls.Deadline, Granted: ls.GrantedAt})

	var mu sync.Mutex // held during a renewal and, after "freeze", for ever
	renewals := 0
	interval := time.Duration(cfg.Lease.RenewIntervalMs) * time.Millisecond
	go func() {
		for {
			at := time.UnixMilli(l.Lease().GrantedAt).Add(interval)
			time.Sleep(time.Until(at))
			mu.Lock()
			if l.State() != coord.Active {
				mu.Unlock()
				o.Send(event{Ev: "ended", T: time.Now().UnixNano(), State: l.State().String(), Err: fmt.Sprint(l.Err())})
				return
			}
			rctx, rcancel := context.WithTimeout(context.Background(), cfg.RequestTimeout)
			err := l.Renew(rctx)
			rcancel()
			if err == nil {
				renewals++
				ls := l.Lease()
				o.Send(event{Ev: "renewed", T: time.Now().UnixNano(), Deadline: ls.Deadline, Granted: ls.GrantedAt})
			}
			mu.Unlock()
			if err != nil {
				o.Send(event{Ev: "renew-failed", T: time.Now().UnixNano(), State: l.State().String(), Err: err.Error()})
				time.Sleep(interval / 10)
			}
		}
	}()

	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() {
		if strings.TrimSpace(sc.Text()) != "freeze" {
			continue
		}
		mu.Lock() // never released: no renewal from now on
		ls := l.Lease()
		o.Send(event{Ev: "frozen", T: time.Now().UnixNano(), Token: l.Token().String(), Deadline: ls.Deadline,
			Granted: ls.GrantedAt, State: l.State().String(), Renewals: renewals})
		select {} // wait for SIGKILL
	}
	// The driver went away: leave without a word (no resign).
	os.Exit(0)
}
