package main

// The child processes of the scale bench: the holder, the standby and the
// fresh folder. Each writes its events to stdout (one JSON object a line,
// bench/internal/childproc) and reads its commands from stdin.

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/krabka/krabka-coord/bench/internal/childproc"
	"github.com/krabka/krabka-coord/core"
	"github.com/krabka/krabka-coord/core/coord"
	"github.com/krabka/krabka-coord/core/kafka"
)

// event is one line a child writes.
type event struct {
	Ev  string `json:"ev"`
	Msg string `json:"msg,omitempty"`

	// A sample of the process (after a GC).
	HeapBytes  uint64         `json:"heap_bytes,omitempty"`
	StackBytes uint64         `json:"stack_bytes,omitempty"`
	Goroutines int            `json:"goroutines,omitempty"`
	Sockets    map[string]int `json:"sockets,omitempty"` // remote address -> TCP sockets of the process
	CPUMs      float64        `json:"cpu_ms,omitempty"`  // user + system CPU since the process started
	RenewOK    int64          `json:"renew_ok,omitempty"`
	RenewFail  int64          `json:"renew_failed,omitempty"`
	Held       int            `json:"held,omitempty"`       // leaderships ACTIVE
	ViewWaits  int64          `json:"view_waits,omitempty"` // Stats.ViewWaits: waits on the live views, one per start and wake-up of a waiter
	AtMs       int64          `json:"at_ms,omitempty"`      // when the sample was taken (epoch ms)

	// The holder's acquisitions.
	AcquireMs []float64 `json:"acquire_ms,omitempty"`
	TotalMs   float64   `json:"total_ms,omitempty"`

	// The holder's renewals seen by its scan: the gaps between two grants of
	// one role, late and missed renewals, leaderships ended.
	GapMs  []float64 `json:"gap_ms,omitempty"`
	Late   int       `json:"late,omitempty"`
	Missed int       `json:"missed,omitempty"`
	Ended  int       `json:"ended,omitempty"`

	// The standby's wins (role -> epoch ms) and failures.
	Wins     map[string]int64 `json:"wins,omitempty"`
	Failures int              `json:"failures,omitempty"`

	// The fresh folder: the dead holder's last deadline per role.
	Deadlines map[string]int64 `json:"deadlines,omitempty"`
	Records   int64            `json:"records,omitempty"`
	FoldMs    float64          `json:"fold_ms,omitempty"`
	ClientMs  float64          `json:"client_ms,omitempty"` // the transport built and the partitions listed
	Parts     int              `json:"partitions,omitempty"`

	// A renewer's closed-loop run (-mode tput).
	Run *tputRun `json:"run,omitempty"`
}

func (e event) Kind() string    { return e.Ev }
func (e event) Failure() string { return e.Msg }

// childFlags are the settings the driver hands its children.
type childFlags struct {
	bootstrap string
	topic     string
	prefix    string
	roles     int
	lease     time.Duration
	renew     time.Duration
	parts     int
	conc      int
	logLevel  string
	// standbyAPI: how the standby waits: "each" (one Client.AcquireEach
	// for every role: no goroutine per waiting role) or "acquire" (one
	// goroutine per role blocked in Client.Acquire).
	standbyAPI string
}

func (c *childFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&c.bootstrap, "bootstrap", "", "bootstrap.servers")
	fs.StringVar(&c.topic, "topic", "", "coordination topic")
	fs.StringVar(&c.prefix, "prefix", "", "role names: <prefix>-<i>")
	fs.IntVar(&c.roles, "roles", 1000, "roles")
	fs.DurationVar(&c.lease, "lease", 30*time.Second, "krabka.lease.ms")
	fs.DurationVar(&c.renew, "renew", 10*time.Second, "krabka.renew.interval.ms")
	fs.IntVar(&c.parts, "partitions", 16, "krabka.topic.partitions")
	fs.IntVar(&c.conc, "concurrency", 64, "acquisitions in flight (holder)")
	fs.StringVar(&c.logLevel, "log-level", "warn", "krabka.log.level")
	fs.StringVar(&c.standbyAPI, "standby-api", "each", "how the standby waits: each (one Client.AcquireEach for every role) | acquire (a goroutine per role in Client.Acquire)")
}

func (c *childFlags) args() []string {
	return []string{"-bootstrap", c.bootstrap, "-topic", c.topic, "-prefix", c.prefix,
		"-roles", strconv.Itoa(c.roles), "-lease", c.lease.String(), "-renew", c.renew.String(),
		"-partitions", strconv.Itoa(c.parts), "-concurrency", strconv.Itoa(c.conc), "-log-level", c.logLevel, "-standby-api", c.standbyAPI}
}

func (c *childFlags) config(clientID string, background bool) (coord.Config, error) {
	return coord.ConfigFromMap(map[string]string{
		"bootstrap.servers":        c.bootstrap,
		"client.id":                clientID,
		"krabka.topic":             c.topic,
		"krabka.topic.partitions":  strconv.Itoa(c.parts),
		"krabka.lease.ms":          strconv.FormatInt(c.lease.Milliseconds(), 10),
		"krabka.renew.interval.ms": strconv.FormatInt(c.renew.Milliseconds(), 10),
		"krabka.renew.background":  strconv.FormatBool(background),
		"krabka.log.level":         c.logLevel,
	})
}

func (c *childFlags) role(i int) core.Role { return core.MustRole(fmt.Sprintf("%s-%d", c.prefix, i)) }

// client builds the child's client (background renewal on or off) and
// reports the process before any role as "base"; false (reported as "err")
// when the client cannot be built.
func (c *childFlags) client(out *childproc.Out[event], clientID string, background bool) (*coord.Client, bool) {
	cfg, err := c.config(clientID, background)
	var cl *coord.Client
	if err == nil {
		cl, err = kafka.NewClient(cfg)
	}
	if err != nil {
		out.Send(event{Ev: "err", Msg: err.Error()})
		return nil, false
	}
	base := sample(nil)
	base.Ev = "base"
	out.Send(base)
	return cl, true
}

func parseChild(args []string) childFlags {
	var c childFlags
	fs := flag.NewFlagSet("child", flag.ExitOnError)
	c.register(fs)
	fs.Parse(args)
	return c
}

// sample measures the process after a GC: heap in use by live objects,
// goroutine stacks, goroutines, TCP sockets by remote address, CPU.
func sample(cl *coord.Client) event {
	dumpGoroutines()
	runtime.GC()
	dumpHeap()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	e := event{Ev: "sample", HeapBytes: ms.HeapAlloc, StackBytes: ms.StackInuse,
		Goroutines: runtime.NumGoroutine(), Sockets: sockets(), CPUMs: cpuMs(), AtMs: time.Now().UnixMilli()}
	if cl != nil {
		st := cl.Stats()
		e.RenewOK, e.RenewFail, e.Held, e.ViewWaits = st.RenewalsOK, st.RenewalsFailed, st.Leaders, st.ViewWaits
	}
	return e
}

// dumpGoroutines writes the process's goroutines, grouped by stack, to
// $KRABKA_SCALE_GOROUTINES/<pid>-<n>.txt at each sample when that names a
// directory: a diagnosis aid (which goroutines a process of many roles
// keeps), off unless set.
func dumpGoroutines() { dumpProfile("KRABKA_SCALE_GOROUTINES", "goroutine", "txt", 1, &dumps) }

// dumpHeap writes the process's heap profile (after the sample's GC) to
// $KRABKA_SCALE_HEAP/<pid>-<n>.pb.gz at each sample when that names a
// directory: a diagnosis aid (what the bytes per role are), off unless
// set. Read it with `go tool pprof -sample_index=inuse_space`.
func dumpHeap() { dumpProfile("KRABKA_SCALE_HEAP", "heap", "pb.gz", 0, &heaps) }

var (
	dumps int // goroutine dumps written (dumpGoroutines)
	heaps int // heap profiles written (dumpHeap)
)

// dumpProfile writes the pprof profile name (debug level debug) to
// $env/<pid>-<n>.ext when env names a directory (n counts the files).
func dumpProfile(env, name, ext string, debug int, n *int) {
	dir := os.Getenv(env)
	if dir == "" {
		return
	}
	*n++
	f, err := os.Create(filepath.Join(dir, fmt.Sprintf("%d-%d.%s", os.Getpid(), *n, ext)))
	if err != nil {
		fmt.Fprintln(os.Stderr, "scale: "+name+" profile:", err)
		return
	}
	defer f.Close()
	if err := pprof.Lookup(name).WriteTo(f, debug); err != nil {
		fmt.Fprintln(os.Stderr, "scale: "+name+" profile:", err)
	}
}

func cpuMs() float64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e6
}

// sockets counts the process's TCP sockets by remote address (ip:port), from
// its file descriptors and /proc/self/net/tcp{,6}.
func sockets() map[string]int {
	inodes := map[string]bool{}
	ents, _ := os.ReadDir("/proc/self/fd")
	for _, e := range ents {
		l, err := os.Readlink("/proc/self/fd/" + e.Name())
		if err == nil && strings.HasPrefix(l, "socket:[") {
			inodes[strings.TrimSuffix(strings.TrimPrefix(l, "socket:["), "]")] = true
		}
	}
	out := map[string]int{}
	for _, f := range []string{"/proc/self/net/tcp", "/proc/self/net/tcp6"} {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(b), "\n")[1:] {
			fs := strings.Fields(line)
			if len(fs) < 10 || !inodes[fs[9]] || fs[3] == "0A" { // 0A: LISTEN
				continue
			}
			out[remoteAddr(fs[2])]++
		}
	}
	return out
}

// remoteAddr decodes /proc/net/tcp's hex address (little-endian words).
func remoteAddr(hex string) string {
	host, port, ok := strings.Cut(hex, ":")
	if !ok {
		return hex
	}
	p, _ := strconv.ParseUint(port, 16, 32)
	if len(host) == 8 {
		v, _ := strconv.ParseUint(host, 16, 32)
		return fmt.Sprintf("%d.%d.%d.%d:%d", v&0xff, v>>8&0xff, v>>16&0xff, v>>24, p)
	}
	if strings.HasPrefix(host, "0000000000000000FFFF0000") { // v4-mapped
		v, _ := strconv.ParseUint(host[24:], 16, 32)
		return fmt.Sprintf("%d.%d.%d.%d:%d", v&0xff, v>>8&0xff, v>>16&0xff, v>>24, p)
	}
	return "[" + host + "]:" + strconv.FormatUint(p, 10)
}

// commands calls fn for each command line on stdin until it ends.
func commands(fn func(string)) {
	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() {
		fn(strings.TrimSpace(sc.Text()))
	}
}

// acquireAll acquires every role of c as member with c.conc acquisitions
// in flight, and returns the leaderships, each acquisition's time (ms) and
// the whole; the first failure is the error.
func acquireAll(cl *coord.Client, c childFlags, member string) ([]*coord.Leadership, []float64, time.Duration, error) {
	ls := make([]*coord.Leadership, c.roles)
	lat := make([]float64, c.roles)
	var next atomic.Int64
	var wg sync.WaitGroup
	var firstErr atomic.Value
	start := time.Now()
	for w := 0; w < c.conc; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= c.roles {
					return
				}
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
				t0 := time.Now()
				l, err := cl.Acquire(ctx, c.role(i), core.MustMemberID(member))
				cancel()
				if err != nil {
					firstErr.CompareAndSwap(nil, fmt.Sprintf("acquiring %s: %v", c.role(i), err))
					return
				}
				lat[i] = float64(time.Since(t0).Microseconds()) / 1000
				ls[i] = l
			}
		}()
	}
	wg.Wait()
	if e, _ := firstErr.Load().(string); e != "" {
		return nil, nil, 0, errors.New(e)
	}
	return ls, lat, time.Since(start), nil
}

// hold starts a child that holds roles: its client (background renewal on
// or off; "base" reported), then every role of its flags acquired as
// member ("acq" reported). ok is false when either failed (reported as
// "err").
func hold(args []string, clientID, member string, background bool) (childFlags, *childproc.Out[event], *coord.Client, []*coord.Leadership, bool) {
	c := parseChild(args)
	out := childproc.NewOut[event](os.Stdout)
	cl, ok := c.client(out, clientID, background)
	if !ok {
		return c, out, nil, nil, false
	}
	ls, lat, total, err := acquireAll(cl, c, member)
	if err != nil {
		out.Send(event{Ev: "err", Msg: err.Error()})
		return c, out, nil, nil, false
	}
	acq := sample(cl)
	acq.Ev, acq.AcquireMs, acq.TotalMs = "acq", lat, float64(total.Microseconds())/1000
	out.Send(acq)
	return c, out, cl, ls, true
}

// runHolder acquires every role with background renewal, then scans the
// leaderships every 200 ms for the renewal gaps, and answers "sample".
func runHolder(args []string) {
	c, out, cl, ls, ok := hold(args, "scale-holder", "holder", true)
	if !ok {
		return
	}

	// The renewal scan.
	var mu sync.Mutex
	var gaps []float64
	late, missed, ended := 0, 0, 0
	granted := make([]int64, c.roles)
	due := make([]int64, c.roles) // the instant the next renewal is missed
	done := make([]bool, c.roles)
	for i, l := range ls {
		granted[i] = l.Lease().GrantedAt
		due[i] = granted[i] + 2*c.renew.Milliseconds()
	}
	go func() {
		for range time.Tick(200 * time.Millisecond) {
			now := time.Now().UnixMilli()
			mu.Lock()
			for i, l := range ls {
				if done[i] {
					continue
				}
				if l.State() != coord.Active {
					done[i] = true
					ended++
					continue
				}
				g := l.Lease().GrantedAt
				if g != granted[i] {
					gap := g - granted[i]
					gaps = append(gaps, float64(gap))
					// Late: granted more than a second after it was due.
					if gap > c.renew.Milliseconds()+1000 {
						late++
					}
					granted[i] = g
					due[i] = g + 2*c.renew.Milliseconds()
				} else if now > due[i] {
					// A whole renew interval past the due instant without a grant.
					missed++
					due[i] += c.renew.Milliseconds()
				}
			}
			mu.Unlock()
		}
	}()
	commands(func(cmd string) {
		if cmd != "sample" {
			return
		}
		e := sample(cl)
		mu.Lock()
		e.GapMs, e.Late, e.Missed, e.Ended = gaps, late, missed, ended
		gaps = nil
		mu.Unlock()
		out.Send(e)
	})
}

// runStandby waits for every role (-standby-api: one AcquireEach for all
// of them, or a goroutine per role blocked in Acquire), answers "sample",
// and on "wins <seconds>" waits up to that long for every role to be won
// and reports when each was.
func runStandby(args []string) {
	c := parseChild(args)
	out := childproc.NewOut[event](os.Stdout)
	cl, ok := c.client(out, "scale-standby", true)
	if !ok {
		return
	}
	var mu sync.Mutex
	wins := map[string]int64{}
	failures := 0
	all := make(chan struct{})
	ended := func(l *coord.Leadership, err error) {
		now := time.Now().UnixMilli()
		mu.Lock()
		defer mu.Unlock()
		if err != nil {
			failures++
			if failures <= 3 { // the first few, named (the results count them all)
				fmt.Fprintln(os.Stderr, "scale: standby: a role failed:", err)
			}
		} else {
			wins[l.Role().String()] = now
		}
		if len(wins)+failures == c.roles {
			close(all)
		}
	}
	me := core.MustMemberID("standby")
	switch c.standbyAPI {
	case "each":
		roles := make([]core.Role, c.roles)
		for i := range roles {
			roles[i] = c.role(i)
		}
		go cl.AcquireEach(context.Background(), roles, me, func(_ int, l *coord.Leadership, err error) { ended(l, err) })
	case "acquire":
		for i := 0; i < c.roles; i++ {
			go func() { ended(cl.Acquire(context.Background(), c.role(i), me)) }()
		}
	default:
		out.Send(event{Ev: "err", Msg: "-standby-api " + c.standbyAPI + ": want each or acquire"})
		return
	}
	started := sample(cl) // the window's start: CPU and view waits
	started.Ev = "started"
	out.Send(started)
	commands(func(cmd string) {
		switch {
		case cmd == "sample":
			e := sample(cl)
			mu.Lock()
			e.Failures = failures
			e.Wins = map[string]int64{}
			for k, v := range wins {
				e.Wins[k] = v
			}
			mu.Unlock()
			out.Send(e)
		case strings.HasPrefix(cmd, "wins "):
			s, _ := strconv.Atoi(strings.TrimPrefix(cmd, "wins "))
			select {
			case <-all:
			case <-time.After(time.Duration(s) * time.Second):
			}
			e := event{Ev: "wins", Wins: map[string]int64{}}
			mu.Lock()
			for k, v := range wins {
				e.Wins[k] = v
			}
			e.Failures = failures
			mu.Unlock()
			out.Send(e)
		}
	})
}

// runFold is a fresh process folding the whole coordination topic the way
// a new client's views do (Transport.Read of every partition into a
// core.PartitionFolder), and reporting the holder's last lease deadline per
// role.
func runFold(args []string) {
	c := parseChild(args)
	out := childproc.NewOut[event](os.Stdout)
	cfg, err := c.config("scale-fold", false)
	if err != nil {
		out.Send(event{Ev: "err", Msg: err.Error()})
		return
	}
	start := time.Now()
	t, err := kafka.New(cfg)
	if err != nil {
		out.Send(event{Ev: "err", Msg: err.Error()})
		return
	}
	defer t.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	n, err := t.Partitions(ctx)
	if err != nil {
		out.Send(event{Ev: "err", Msg: err.Error()})
		return
	}
	clientMs := float64(time.Since(start).Microseconds()) / 1000
	e := event{Ev: "fold", Deadlines: map[string]int64{}, Parts: int(n), ClientMs: clientMs}
	for p := int32(0); p < n; p++ {
		recs, err := t.Read(ctx, p)
		if err != nil {
			out.Send(event{Ev: "err", Msg: err.Error()})
			return
		}
		e.Records += int64(len(recs))
		f := core.NewPartitionFolder()
		for _, r := range recs {
			f.AddRaw(r)
		}
		for _, r := range f.Roles() {
			st := f.State(r)
			if st.Lease != nil && st.Lease.Member.String() == "holder" {
				e.Deadlines[r.String()] = st.Lease.Deadline
			}
		}
	}
	e.FoldMs = float64(time.Since(start).Microseconds()) / 1000
	out.Send(e)
}
