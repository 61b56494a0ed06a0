package main

// The lease throughput mode of the scale bench (-mode tput; issue 35, "the
// three-broker profile"): how many lease transactions a second the cluster
// sustains, T of docs/OPERATIONS.md's sizing rule (renew interval
// I >= 2·R/T).
//
// -procs renewer processes (children, "scale renewer", default 1) each
// acquire their share of -roles roles (on the topic's -partitions
// partitions, -concurrency acquisitions in flight) with background renewal
// OFF, so that only the bench renews. Then, for each count C of -renewers
// (for example 64,256; split over the processes), every process renews its
// roles in a closed loop with its share of C goroutines, each taking the
// next role round-robin (a role another renewer is renewing is passed
// over) and calling Leadership.Renew, the public Go API, on the library's
// default engine. After -warmup (-first-warmup for the first count: a
// fresh broker's JVM is slow until its code is compiled; on three fresh
// brokers a first 5 s warm-up left the next 10 s at a third of the rate of
// a later run) the bench counts, for -window, the
// renewals that completed (T = completed / window), their latencies, the
// failed ones, the leaderships that ended, the renewer processes' CPU, the
// whole machine's (/proc/stat: what else ran, and the hypervisor's steal)
// and, with -broker-pids, the brokers' CPU (/proc/PID/stat; also for -idle
// before the first run, every role held and none renewed). One results file
// per run: lease-tput-<cluster>[-<label>]-...json.

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/krabka/krabka-coord/bench/internal/childproc"
	"github.com/krabka/krabka-coord/core/coord"
	"github.com/krabka/krabka-coord/internal/perfdoc"
)

// tputFlags are the settings of the throughput mode.
type tputFlags struct {
	window, warmup time.Duration
	firstWarmup    time.Duration // the warm-up of the first renewer count (fresh brokers' JIT)
	idle           time.Duration // the brokers' CPU measured this long with no renewal
	renewers       []int
	procs          int
	brokerPids     []int
}

// parseInts reads a comma-separated list of positive integers.
func parseInts(flagName, s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		n, err := strconv.Atoi(f)
		if err != nil || n < 1 {
			return nil, fmt.Errorf("-%s: %q is not a positive integer", flagName, f)
		}
		out = append(out, n)
	}
	return out, nil
}

// tputRun is what one renewer process reports of one closed-loop run.
type tputRun struct {
	LatMs    []float64 `json:"lat_ms,omitempty"`    // renewals that completed in the window
	Failed   int       `json:"failed,omitempty"`    // renewals that failed in the window
	FailMsg  string    `json:"fail_msg,omitempty"`  // the first failure of the run (warm-up included)
	Ended    int       `json:"ended,omitempty"`     // leaderships that ended during the run
	Live     int       `json:"live,omitempty"`      // leaderships still active at its end
	WindowMs float64   `json:"window_ms,omitempty"` // the window as this process timed it
	CPUMs    float64   `json:"cpu_ms,omitempty"`    // user + system CPU of the process in the window
	StatsOK  int64     `json:"stats_ok,omitempty"`  // Stats.RenewalsOK grew by this in the window
}

// runRenewer is a renewer process: it acquires its roles with background
// renewal off, reports "acq", then answers each "run C WARMUP_MS WINDOW_MS"
// with a closed loop of C renewers ("run" event).
func runRenewer(args []string) {
	_, out, cl, ls, ok := hold(args, "scale-renewer", "renewer", false)
	if !ok {
		return
	}
	dead := make([]atomic.Bool, len(ls))
	commands(func(cmd string) {
		var conc int
		var warmMs, winMs int64
		if n, _ := fmt.Sscanf(cmd, "run %d %d %d", &conc, &warmMs, &winMs); n != 3 || conc < 1 || winMs < 1 || warmMs < 0 {
			out.Send(event{Ev: "err", Msg: fmt.Sprintf("renewer: command %q is not run C WARMUP_MS WINDOW_MS", cmd)})
			return
		}
		r := renewLoop(cl, ls, dead, conc, time.Duration(warmMs)*time.Millisecond, time.Duration(winMs)*time.Millisecond)
		out.Send(event{Ev: "run", Run: &r})
	})
}

// renewLoop renews ls in a closed loop with conc goroutines for warmup +
// window and reports the window. dead marks the leaderships that ended
// (across runs): they are passed over.
func renewLoop(cl *coord.Client, ls []*coord.Leadership, dead []atomic.Bool, conc int, warmup, window time.Duration) tputRun {
	n := len(ls)
	busy := make([]atomic.Bool, n)
	var next atomic.Int64
	start := time.Now()
	winStart, winEnd := start.Add(warmup), start.Add(warmup+window)

	// The window's CPU and Stats, taken at its two ends.
	var cpu0, cpu1 float64
	var ok0, ok1 int64
	var ends sync.WaitGroup
	ends.Add(1)
	go func() {
		defer ends.Done()
		time.Sleep(time.Until(winStart))
		cpu0, ok0 = cpuMs(), cl.Stats().RenewalsOK
		time.Sleep(time.Until(winEnd))
		cpu1, ok1 = cpuMs(), cl.Stats().RenewalsOK
	}()

	var mu sync.Mutex
	var r tputRun
	var wg sync.WaitGroup
	for w := 0; w < conc; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var lat []float64
			failed, ended := 0, 0
			firstFail := ""
			defer func() {
				mu.Lock()
				r.LatMs = append(r.LatMs, lat...)
				r.Failed += failed
				r.Ended += ended
				if r.FailMsg == "" {
					r.FailMsg = firstFail
				}
				mu.Unlock()
			}()
			for time.Now().Before(winEnd) {
				// The next role round-robin that is alive and not being
				// renewed by another renewer; none: every role is taken.
				i := -1
				for range n {
					j := int((next.Add(1) - 1) % int64(n))
					if !dead[j].Load() && busy[j].CompareAndSwap(false, true) {
						i = j
						break
					}
				}
				if i < 0 {
					time.Sleep(time.Millisecond)
					continue
				}
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				t0 := time.Now()
				err := ls[i].Renew(ctx)
				t1 := time.Now()
				cancel()
				if err != nil && ls[i].Err() != nil && !dead[i].Swap(true) {
					ended++
				}
				busy[i].Store(false)
				if err != nil && firstFail == "" {
					firstFail = fmt.Sprintf("renewing %s: %v", ls[i].Role(), err)
				}
				if t1.Before(winStart) || t1.After(winEnd) {
					continue // completed in the warm-up or after the window
				}
				if err != nil {
					failed++
				} else {
					lat = append(lat, float64(t1.Sub(t0).Microseconds())/1000)
				}
			}
		}()
	}
	wg.Wait()
	ends.Wait()
	r.WindowMs = float64(window.Microseconds()) / 1000
	r.CPUMs, r.StatsOK = cpu1-cpu0, ok1-ok0
	for i := range dead {
		if !dead[i].Load() {
			r.Live++
		}
	}
	return r
}

// brokerCPUMs is the user + system CPU (ms) the process pid has used, from
// /proc/PID/stat (clock ticks of USER_HZ, 100 a second on Linux).
func brokerCPUMs(pid int) (float64, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, fmt.Errorf("broker pid %d: %w", pid, err)
	}
	// The fields after the command name (which may hold spaces) start at
	// field 3 (state); utime and stime are fields 14 and 15.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	fs := strings.Fields(s[i+1:])
	if i < 0 || len(fs) < 13 {
		return 0, fmt.Errorf("broker pid %d: /proc/%d/stat has no utime and stime", pid, pid)
	}
	ut, err1 := strconv.ParseFloat(fs[11], 64)
	st, err2 := strconv.ParseFloat(fs[12], 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("broker pid %d: /proc/%d/stat: utime %q, stime %q", pid, pid, fs[11], fs[12])
	}
	return (ut + st) * 10, nil
}

// brokersCPUMs reads every broker's CPU (ms).
func brokersCPUMs(pids []int) []float64 {
	out := make([]float64, len(pids))
	for i, p := range pids {
		v, err := brokerCPUMs(p)
		if err != nil {
			die("%v", err)
		}
		out[i] = v
	}
	return out
}

// machineTicks is the whole machine's CPU from /proc/stat's first line, in
// ms: busy (user, nice, system, irq, softirq) and steal (the hypervisor
// ran something else).
type machineTicks struct{ busy, steal float64 }

func machineCPUMs() machineTicks {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		die("reading the machine's CPU: %v", err)
	}
	line, _, _ := strings.Cut(string(b), "\n")
	fs := strings.Fields(line)
	if len(fs) < 9 || fs[0] != "cpu" {
		die("/proc/stat: first line %q has no cpu figures", line)
	}
	v := make([]float64, 8)
	for i := range v {
		x, err := strconv.ParseFloat(fs[i+1], 64)
		if err != nil {
			die("/proc/stat: %q is not a tick count", fs[i+1])
		}
		v[i] = x * 10 // USER_HZ: 100 a second
	}
	// user nice system idle iowait irq softirq steal
	return machineTicks{busy: v[0] + v[1] + v[2] + v[5] + v[6], steal: v[7]}
}

// brokerCPU is the brokers' CPU a second (ms/s) between the readings b0
// and b1, secs apart: all brokers together, each one and, when renewals
// completed in between, per renewal in Extra.
func brokerCPU(name, what string, b0, b1 []float64, secs float64, renewals int) perfdoc.Measure {
	sum := 0.0
	extra := map[string]float64{}
	for i := range b0 {
		d := b1[i] - b0[i]
		sum += d
		extra[fmt.Sprintf("broker_%d_ms_per_s", i+1)] = d / secs
	}
	if renewals > 0 {
		extra["cpu_per_renewal_ms"] = sum / float64(renewals)
	}
	m := perfdoc.Value(name, what, "ms/s", sum/secs)
	m.Extra = extra
	return m
}

// share is process k's part of total split over procs (the first ones take
// the remainder).
func share(total, procs, k int) int {
	n := total / procs
	if k < total%procs {
		n++
	}
	return n
}

// runTput is the driver of the throughput mode.
func runTput(c childFlags, t tputFlags, label, outDir string, f *perfdoc.File) {
	if t.procs > c.roles {
		die("-procs %d is more than -roles %d", t.procs, c.roles)
	}
	for _, n := range t.renewers {
		if n < t.procs {
			die("-renewers %d is fewer than -procs %d: every process needs a renewer", n, t.procs)
		}
	}
	if len(t.brokerPids) > 0 {
		brokersCPUMs(t.brokerPids) // every pid readable before the run
	}
	fmt.Printf("lease-tput: %d roles on %s (%d partitions), %d renewer process(es), renewers %v, warm-up %v, window %v, lease %v, commit %s (dirty %v), load %v\n",
		c.roles, c.topic, c.parts, t.procs, t.renewers, t.warmup, t.window, c.lease, f.Commit, f.Dirty, f.LoadBefore)

	procs := make([]*childproc.Proc[event], t.procs)
	for k := range procs {
		ck := c
		ck.roles = share(c.roles, t.procs, k)
		ck.prefix = fmt.Sprintf("%s-p%d", c.prefix, k)
		procs[k] = start(ck, "renewer")
		defer procs[k].Kill()
	}
	var acqLat []float64
	acqAll := 0.0
	for k, p := range procs {
		must(p.Wait("base", 2*time.Minute))
		a := must(p.Wait("acq", 60*time.Minute))
		acqLat = append(acqLat, a.AcquireMs...)
		acqAll = max(acqAll, a.TotalMs/1000)
		fmt.Printf("  renewer %d: %d roles acquired in %.1f s\n", k, len(a.AcquireMs), a.TotalMs/1000)
	}
	ms := []perfdoc.Measure{
		perfdoc.Summarize("acquire", fmt.Sprintf("one Acquire of a free role (%d in flight per process)", c.conc), "ms", acqLat),
		perfdoc.Value("acquire-all", "every renewer process acquires its free roles (first call to the last return of the slowest process)", "s", acqAll),
	}

	if len(t.brokerPids) > 0 && t.idle > 0 {
		b0 := brokersCPUMs(t.brokerPids)
		time.Sleep(t.idle)
		m := brokerCPU("broker-cpu-idle", "the brokers, user + system CPU a second with every role held and none renewed (all brokers together)",
			b0, brokersCPUMs(t.brokerPids), t.idle.Seconds(), 0)
		fmt.Printf("  brokers idle: %.0f ms/s\n", m.P50)
		ms = append(ms, m)
	}

	var notes []string
	for n, conc := range t.renewers {
		warm := t.warmup
		if n == 0 {
			warm = t.firstWarmup
		}
		for k, p := range procs {
			p.Send(fmt.Sprintf("run %d %d %d", share(conc, t.procs, k), warm.Milliseconds(), t.window.Milliseconds()))
		}
		// The brokers' and the machine's CPU over the same window (the
		// processes start their loops within a few milliseconds of these
		// sends).
		var b0, b1 []float64
		time.Sleep(warm)
		if len(t.brokerPids) > 0 {
			b0 = brokersCPUMs(t.brokerPids)
		}
		m0 := machineCPUMs()
		time.Sleep(t.window)
		m1 := machineCPUMs()
		if len(t.brokerPids) > 0 {
			b1 = brokersCPUMs(t.brokerPids)
		}
		var lat []float64
		failed, ended, live := 0, 0, 0
		perSec, cpu, statsOK := 0.0, 0.0, int64(0)
		firstFail := ""
		for k, p := range procs {
			e := must(p.Wait("run", warm+t.window+5*time.Minute))
			r := e.Run
			if r == nil {
				die("renewer %d: a run event without its run", k)
			}
			lat = append(lat, r.LatMs...)
			failed += r.Failed
			ended += r.Ended
			live += r.Live
			perSec += float64(len(r.LatMs)) / (r.WindowMs / 1000)
			cpu += r.CPUMs
			statsOK += r.StatsOK
			if firstFail == "" {
				firstFail = r.FailMsg
			}
		}
		if len(lat) == 0 {
			die("%d renewers: no renewal completed in the window (%d failed; first failure: %s)", conc, failed, firstFail)
		}
		win := t.window.Seconds()
		m := perfdoc.Summarize(fmt.Sprintf("renew-%d", conc),
			fmt.Sprintf("one Leadership.Renew (one lease transaction), %d renewers in a closed loop over %d held roles", conc, c.roles), "ms", lat)
		m.PerSecond = round1(perSec)
		m.Extra = map[string]float64{"renewers": float64(conc), "processes": float64(t.procs), "roles": float64(c.roles),
			"window_s": win, "renewals_ok": float64(len(lat)), "renewals_failed": float64(failed),
			"leaderships_ended": float64(ended), "leaderships_live": float64(live), "stats_renewals_ok": float64(statsOK)}
		ms = append(ms, m)
		cm := perfdoc.Value(fmt.Sprintf("client-cpu-%d", conc), fmt.Sprintf("the renewer process(es), user + system CPU a second of the window, %d renewers", conc), "ms/s", cpu/win)
		cm.Extra = map[string]float64{"cpu_per_renewal_ms": cpu / float64(len(lat))}
		ms = append(ms, cm)
		bs := "not measured"
		mach := perfdoc.Value(fmt.Sprintf("machine-cpu-%d", conc), fmt.Sprintf("the whole machine, CPU busy a second of the window (all cores: user, nice, system, irq, softirq; /proc/stat), %d renewers", conc),
			"ms/s", (m1.busy-m0.busy)/win)
		mach.Extra = map[string]float64{"steal_ms_per_s": (m1.steal - m0.steal) / win, "cores": float64(runtime.NumCPU())}
		if b0 != nil {
			bm := brokerCPU(fmt.Sprintf("broker-cpu-%d", conc), fmt.Sprintf("the brokers, user + system CPU a second of the window (all brokers together), %d renewers", conc),
				b0, b1, win, len(lat))
			ms = append(ms, bm)
			bs = fmt.Sprintf("%.0f ms/s", bm.P50)
			// What neither the brokers nor the renewer processes used: the
			// bench's driver, the kernel's own threads and any other work.
			mach.Extra["other_ms_per_s"] = mach.P50 - bm.P50 - cpu/win
		}
		ms = append(ms, mach)
		line := fmt.Sprintf("%d renewers: %.0f renewals/s, p50 %.1f ms, p99 %.1f ms, %d failed, %d ended, client CPU %.0f ms/s, brokers %s, machine %.0f ms/s (steal %.0f)",
			conc, perSec, m.P50, m.P99, failed, ended, cpu/win, bs, mach.P50, mach.Extra["steal_ms_per_s"])
		fmt.Println("  " + line)
		if firstFail != "" {
			fmt.Println("    first failure:", firstFail)
		}
		notes = append(notes, line)
	}

	f.Measures = ms
	pids := make([]string, len(t.brokerPids))
	for i, p := range t.brokerPids {
		pids[i] = strconv.Itoa(p)
	}
	rs := make([]string, len(t.renewers))
	for i, n := range t.renewers {
		rs[i] = strconv.Itoa(n)
	}
	f.Settings = map[string]string{
		"label": label, "roles": strconv.Itoa(c.roles), "partitions": strconv.Itoa(c.parts),
		"renewers": strings.Join(rs, ","), "processes": strconv.Itoa(t.procs),
		"window": t.window.String(), "warmup": t.warmup.String(), "first_warmup": t.firstWarmup.String(), "idle": t.idle.String(),
		"concurrency":     strconv.Itoa(c.conc),
		"krabka.lease.ms": strconv.FormatInt(c.lease.Milliseconds(), 10), "krabka.renew.interval.ms": strconv.FormatInt(c.renew.Milliseconds(), 10),
		"krabka.renew.background": "false (only the bench renews)",
		"krabka.engine":           coord.DefaultConfig().Engine + " (the default of this build, or KRABKA_ENGINE)",
		"topic":                   c.topic + " (created by the first renewer's client with the library's settings for new topics)",
		"broker_pids":             strings.Join(pids, ","),
	}
	f.Note = "issue 35, lease transactions a second: " + strings.Join(notes, "; ")
	if outDir == "" {
		return
	}
	l := f.Kafka.Label()
	if label != "" {
		l += "-" + label
	}
	p, err := f.Finish(outDir, l)
	if err != nil {
		die("%v", err)
	}
	fmt.Println("results file:", p)
}

func round1(v float64) float64 { return float64(int64(v*10+0.5)) / 10 }
