// Command scale measures issue 35: what one process holding N roles and a
// second process waiting as standby for all of them cost, and how the
// standby takes them all over when the holder dies.
//
// One run, on a coordination topic of its own (created by the holder with
// -partitions partitions and the library's settings for new topics):
//
//   - the holder (a child process, "scale holder") acquires the N free roles
//     (-concurrency acquisitions in flight) with background renewal, and
//     reports the time each acquisition took and the whole;
//   - the standby (a child process, "scale standby") calls Acquire for every
//     role (one goroutine per role: the Go API blocks per role) and waits;
//   - for -duration both run; the holder scans its leaderships every 200 ms
//     and counts renewals late (granted more than a second after they were
//     due) and missed (a renew interval past the due instant without a
//     grant), the standby counts takeovers (a role won while the holder
//     lived);
//   - each process is measured after a GC before the roles and at the end
//     of the window: Go heap (HeapAlloc) plus goroutine stacks (StackInuse),
//     goroutines, TCP sockets per broker, CPU; per held and per standby role
//     from the difference;
//   - a fresh process ("scale fold") folds the whole topic while both run
//     (Transport.Read of every partition into a core.PartitionFolder, what a
//     new client's views do), timed;
//   - the holder is SIGKILLed; another fresh process folds the topic again
//     and reports the holder's last lease deadline per role; the standby
//     reports when it won each role, and the bench takes win - deadline per
//     role.
//
// It uses only the library's Go API (core/coord through core/kafka), so the
// same program measures the library before and after a change.
//
//	go run ./bench/scale -bootstrap 127.0.0.1:27400 -roles 1000 -duration 2m -label before
//
// -mode tput measures instead the lease transactions a second a cluster
// sustains (tput.go):
//
//	go run ./bench/scale -mode tput -bootstrap 127.0.0.1:27600 -roles 2000 -renewers 64,256 -window 30s
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/krabka/krabka-coord/bench/internal/childproc"
	"github.com/krabka/krabka-coord/core/coord"
	"github.com/krabka/krabka-coord/internal/perfdoc"
)

func main() {
	if len(os.Args) > 1 {
		switch os.Args[1] {
		case "holder":
			runHolder(os.Args[2:])
			return
		case "standby":
			runStandby(os.Args[2:])
			return
		case "fold":
			runFold(os.Args[2:])
			return
		case "renewer":
			runRenewer(os.Args[2:])
			return
		}
	}
	var (
		c        childFlags
		duration time.Duration
		label    string
		outDir   string
		kafkaLib string
		commit   string
		mode     string
		tput     tputFlags
		renewers string
		pids     string
	)
	c.register(flag.CommandLine)
	flag.StringVar(&mode, "mode", "scale", "scale (a holder and a standby of -roles roles) | tput (lease transactions a second, tput.go)")
	flag.DurationVar(&duration, "duration", 10*time.Minute, "how long both processes run before the holder is killed")
	flag.DurationVar(&tput.window, "window", 30*time.Second, "tput: the measured window of each renewer count")
	flag.DurationVar(&tput.warmup, "warmup", 5*time.Second, "tput: the closed loop runs this long before each window but the first")
	flag.DurationVar(&tput.firstWarmup, "first-warmup", 30*time.Second, "tput: the closed loop runs this long before the first window (fresh brokers)")
	flag.DurationVar(&tput.idle, "idle", 5*time.Second, "tput: with -broker-pids, the brokers' CPU is measured this long before the first run, every role held and none renewed (0: not)")
	flag.StringVar(&renewers, "renewers", "64,256", "tput: renewer counts (concurrent Renew calls), one closed-loop run each, in order")
	flag.IntVar(&tput.procs, "procs", 1, "tput: renewer processes (roles and renewers split over them)")
	flag.StringVar(&pids, "broker-pids", "", "tput: pids of the brokers whose CPU to measure (comma-separated; '': not measured)")
	flag.StringVar(&label, "label", "", "scale: before | after; tput: any, or none for the generated table (in the results file's name and settings)")
	flag.StringVar(&outDir, "out-dir", "bench/results", "directory of the results file ('': write none)")
	flag.StringVar(&kafkaLib, "kafka-lib", "tests/kafka/lib", "directory of the broker jars (their name gives the Kafka version)")
	flag.StringVar(&commit, "commit", "", "commit of the library recorded in the results (default: git rev-parse --short HEAD of the working directory)")
	flag.Parse()
	if c.bootstrap == "" {
		c.bootstrap = os.Getenv("KRABKA_BOOTSTRAP")
	}
	if c.bootstrap == "" {
		die("no -bootstrap (or KRABKA_BOOTSTRAP)")
	}
	if c.roles < 1 || c.conc < 1 || c.parts < 1 {
		die("-roles, -concurrency and -partitions must be at least 1")
	}
	if mode != "scale" && mode != "tput" {
		die("-mode %q is not scale or tput", mode)
	}
	var err error
	if tput.renewers, err = parseInts("renewers", renewers); err != nil {
		die("%v", err)
	}
	if tput.brokerPids, err = parseInts("broker-pids", pids); err != nil {
		die("%v", err)
	}
	if mode == "tput" && (len(tput.renewers) == 0 || tput.procs < 1 || tput.window <= 0 || tput.warmup < 0 || tput.firstWarmup < 0 || tput.idle < 0) {
		die("-mode tput needs -renewers, -procs >= 1, -window > 0, and -warmup, -first-warmup and -idle >= 0")
	}
	run := time.Now().Unix()
	if c.topic == "" {
		c.topic = fmt.Sprintf("scale-%d", run)
	}
	if c.prefix == "" {
		c.prefix = fmt.Sprintf("sc%d", run)
	}
	bench := "scale"
	if mode == "tput" {
		bench = "lease-tput"
	}
	f := perfdoc.NewFile(bench)
	if commit != "" {
		f.Commit, f.Dirty = commit, false
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	kinfo, err := perfdoc.AskKafka(ctx, strings.Split(c.bootstrap, ","), perfdoc.KafkaVersion(kafkaLib))
	cancel()
	if err != nil {
		die("asking the cluster what it runs: %v", err)
	}
	f.Kafka = kinfo
	if mode == "tput" {
		runTput(c, tput, label, outDir, f)
		return
	}
	fmt.Printf("scale: %d roles on %s (%d partitions), lease %v, renew %v, window %v, commit %s (dirty %v), load %v\n",
		c.roles, c.topic, c.parts, c.lease, c.renew, duration, f.Commit, f.Dirty, f.LoadBefore)

	holder := start(c, "holder")
	defer holder.Kill()
	hBase := must(holder.Wait("base", 2*time.Minute))
	acq := must(holder.Wait("acq", 60*time.Minute))
	fmt.Printf("  holder: %d roles acquired in %.1f s\n", c.roles, acq.TotalMs/1000)

	standby := start(c, "standby")
	defer standby.Kill()
	sBase := must(standby.Wait("base", 2*time.Minute))
	sStart := must(standby.Wait("started", 2*time.Minute))
	fmt.Printf("  standby: waiting for %d roles; running for %v\n", c.roles, duration)
	time.Sleep(duration)

	holder.Send("sample")
	hEnd := must(holder.Wait("sample", 5*time.Minute))
	standby.Send("sample")
	sEnd := must(standby.Wait("sample", 5*time.Minute))

	// A fresh process folds the topic while both run.
	folder := start(c, "fold")
	defer folder.Kill()
	fold := must(folder.Wait("fold", 30*time.Minute))
	fmt.Printf("  fold: %d records of %d partitions in %.1f s\n", fold.Records, fold.Parts, fold.FoldMs/1000)

	// The holder dies; another fresh process folds the topic for the
	// holder's last deadlines (its reads wait up to a second a partition
	// for the markers of the transactions the kill left open).
	killedMs := time.Now().UnixMilli()
	holder.Kill()
	folder2 := start(c, "fold")
	defer folder2.Kill()
	last := must(folder2.Wait("fold", 30*time.Minute))
	fmt.Printf("  fold after the kill: %d records in %.1f s\n", last.Records, last.FoldMs/1000)
	standby.Send("wins " + strconv.Itoa(int((c.lease + 3*time.Minute).Seconds())))
	wins := must(standby.Wait("wins", c.lease+5*time.Minute))

	var past []float64
	notTaken, noDeadline := 0, 0
	for i := 0; i < c.roles; i++ {
		r := c.role(i).String()
		d, ok := last.Deadlines[r]
		if !ok {
			noDeadline++
			continue
		}
		w, ok := wins.Wins[r]
		if !ok {
			notTaken++
			continue
		}
		past = append(past, float64(w-d))
	}
	takeovers := 0
	for _, w := range sEnd.Wins {
		if w < killedMs {
			takeovers++
		}
	}

	n := float64(c.roles)
	kib := func(b uint64) float64 { return float64(b) / 1024 }
	perRole := func(end, base event) float64 {
		return (kib(end.HeapBytes+end.StackBytes) - kib(base.HeapBytes+base.StackBytes)) / n
	}
	maxPerBroker := func(e event) float64 {
		m := 0
		for _, v := range e.Sockets {
			m = max(m, v)
		}
		return float64(m)
	}
	total := func(e event) float64 {
		t := 0
		for _, v := range e.Sockets {
			t += v
		}
		return float64(t)
	}
	renewals := hEnd.RenewOK - acq.RenewOK
	// The bench's goroutines still blocked in Acquire (the others returned:
	// a role won while the holder lived, or an error); none with
	// AcquireEach.
	blocked := 0
	if c.standbyAPI == "acquire" {
		blocked = c.roles - len(sEnd.Wins) - sEnd.Failures
	}
	ms := []perfdoc.Measure{
		perfdoc.Summarize("acquire", "one Acquire of a free role by the holder process ("+strconv.Itoa(c.conc)+" in flight)", "ms", acq.AcquireMs),
		perfdoc.Value("acquire-all", "the holder process acquires every free role (first call to last return)", "s", acq.TotalMs/1000),
		perfdoc.Value("held-mem-per-role", "holder process: Go heap (HeapAlloc) + goroutine stacks after a GC, end of the window minus before the first Acquire, per held role", "KiB", perRole(hEnd, hBase)),
		perfdoc.Value("standby-mem-per-role", "standby process: Go heap + goroutine stacks after a GC, end of the window minus before the first Acquire, per standby role (standby "+c.standbyAPI+": with acquire it includes the bench's goroutine blocked in Acquire per role)", "KiB", perRole(sEnd, sBase)),
		perfdoc.Value("standby-heap-per-role", "standby process: the Go heap part of standby-mem-per-role", "KiB", (kib(sEnd.HeapBytes)-kib(sBase.HeapBytes))/n),
		perfdoc.Value("standby-stacks-per-role", "standby process: the goroutine-stack part of standby-mem-per-role (standby "+c.standbyAPI+": with acquire mostly the bench's own goroutine blocked in Acquire per role, the Go API blocking its caller)", "KiB", (kib(sEnd.StackBytes)-kib(sBase.StackBytes))/n),
		perfdoc.Value("held-goroutines-per-role", "holder process: goroutines at the end of the window minus before the first Acquire, per held role", "goroutines", float64(hEnd.Goroutines-hBase.Goroutines)/n),
		perfdoc.Value("standby-goroutines-per-role", "standby process: goroutines at the end minus before, per standby role, without the bench's own goroutine per role still blocked in Acquire", "goroutines", float64(sEnd.Goroutines-sBase.Goroutines-blocked)/n),
		perfdoc.Value("holder-goroutines", "holder process: goroutines at the end of the window", "goroutines", float64(hEnd.Goroutines)),
		perfdoc.Value("standby-goroutines", "standby process: goroutines at the end of the window, without the bench's own goroutine per role still blocked in Acquire", "goroutines", float64(sEnd.Goroutines-blocked)),
		perfdoc.Value("holder-sockets-per-broker", "holder process: TCP sockets to the busiest broker at the end of the window", "sockets", maxPerBroker(hEnd)),
		perfdoc.Value("standby-sockets-per-broker", "standby process: TCP sockets to the busiest broker at the end of the window", "sockets", maxPerBroker(sEnd)),
		perfdoc.Value("holder-sockets", "holder process: TCP sockets at the end of the window", "sockets", total(hEnd)),
		perfdoc.Value("standby-sockets", "standby process: TCP sockets at the end of the window", "sockets", total(sEnd)),
	}
	if renewals > 0 {
		ms = append(ms, perfdoc.Value("cpu-per-renewal", "holder process: user + system CPU over the window divided by the renewals granted in it", "ms", (hEnd.CPUMs-acq.CPUMs)/float64(renewals)))
	}
	// The wake-up cost (issue 35, item 2): every wait of a waiter on the
	// live view (the holder's leadership watchers, the standby's Acquire
	// calls) per second of the window, and the standby's CPU.
	perS := func(d float64, from, to event) float64 {
		if to.AtMs <= from.AtMs {
			return 0
		}
		return d / (float64(to.AtMs-from.AtMs) / 1000)
	}
	ms = append(ms,
		perfdoc.Value("holder-view-waits", "holder process: waits of its waiters on the live views (Stats.ViewWaits: one per start and per wake-up) per second, from the last acquisition to the end of the window", "waits/s", perS(float64(hEnd.ViewWaits-acq.ViewWaits), acq, hEnd)),
		perfdoc.Value("standby-view-waits", "standby process: the same per second, from its Acquire calls started to the end of the window", "waits/s", perS(float64(sEnd.ViewWaits-sStart.ViewWaits), sStart, sEnd)),
		perfdoc.Value("standby-cpu", "standby process: user + system CPU per second, from its Acquire calls started to the end of the window", "ms/s", perS(sEnd.CPUMs-sStart.CPUMs, sStart, sEnd)),
		perfdoc.Value("holder-cpu", "holder process: user + system CPU per second, from the last acquisition to the end of the window", "ms/s", perS(hEnd.CPUMs-acq.CPUMs, acq, hEnd)),
	)
	if len(hEnd.GapMs) > 0 {
		m := perfdoc.Summarize("renew-gap", "holder: time between two grants of one role's lease (the renew interval when on time)", "ms", hEnd.GapMs)
		m.Extra = map[string]float64{"late": float64(hEnd.Late), "missed": float64(hEnd.Missed), "ended": float64(hEnd.Ended),
			"renewals_ok": float64(renewals), "renewals_failed": float64(hEnd.RenewFail - acq.RenewFail)}
		ms = append(ms, m)
	}
	ms = append(ms,
		perfdoc.Value("renewals-late", "holder: renewals granted more than a second after they were due, over the window", "renewals", float64(hEnd.Late)),
		perfdoc.Value("renewals-missed", "holder: renew intervals that passed a due instant without a grant, plus leaderships that ended, over the window", "renewals", float64(hEnd.Missed+hEnd.Ended)),
		perfdoc.Value("takeovers", "standby: roles it won while the holder lived", "roles", float64(takeovers)),
		perfdoc.Value("fold", "a fresh process, at the end of the window while both run: transport built, then every partition of the topic read and folded", "s", fold.FoldMs/1000),
		perfdoc.Value("fold-after-kill", "a fresh process right after the holder's SIGKILL: the same fold, whose reads wait up to 1 s a partition for the markers of the transactions the kill left open", "s", last.FoldMs/1000),
	)
	ms[len(ms)-2].Extra = map[string]float64{"records": float64(fold.Records), "partitions": float64(fold.Parts), "connect_ms": fold.ClientMs}
	ms[len(ms)-1].Extra = map[string]float64{"records": float64(last.Records), "partitions": float64(last.Parts), "connect_ms": last.ClientMs}
	if len(past) > 0 {
		m := perfdoc.Summarize("takeover-past-deadline", "after the holder's SIGKILL: the standby's Acquire returned minus the holder's last lease deadline, per role", "ms", past)
		m.Extra = map[string]float64{"not_taken": float64(notTaken), "no_deadline": float64(noDeadline), "failed": float64(wins.Failures)}
		ms = append(ms, m)
	}
	f.Measures = ms
	f.Settings = map[string]string{
		"label": label, "roles": strconv.Itoa(c.roles), "partitions": strconv.Itoa(c.parts),
		"krabka.lease.ms": strconv.FormatInt(c.lease.Milliseconds(), 10), "krabka.renew.interval.ms": strconv.FormatInt(c.renew.Milliseconds(), 10),
		"krabka.renew.background": "true", "window": duration.String(), "concurrency": strconv.Itoa(c.conc),
		"krabka.engine": coord.DefaultConfig().Engine + " (the default of this build, or KRABKA_ENGINE; builds before issue 35 item 1 had only the per-role client)",
		"topic":         c.topic + " (created by the holder's client with the library's settings for new topics)",
		"processes":     "holder (child), standby (child), fresh folder (child, started after the holder's SIGKILL)",
		"standby.api":   c.standbyAPI + " (each: one Client.AcquireEach for every role; acquire: a goroutine per role blocked in Client.Acquire, the only way before AcquireEach)",
	}
	f.Note = fmt.Sprintf("issue 35: %d roles; holder %d goroutines, %v sockets; standby (%s) %d goroutines (with %d of the bench), %v sockets",
		c.roles, hEnd.Goroutines, hEnd.Sockets, c.standbyAPI, sEnd.Goroutines, blocked, sEnd.Sockets)
	fmt.Printf("scale: %s\n", f.Note)
	for _, m := range f.Measures {
		fmt.Printf("  %-28s n=%d p50=%.2f p99=%.2f max=%.2f %s\n", m.Name, m.N, m.P50, m.P99, m.Max, m.Unit)
	}
	if outDir == "" {
		return
	}
	l := fmt.Sprintf("%dn", c.roles)
	if label != "" {
		l = label + "-" + l
	}
	p, err := f.Finish(outDir, l)
	if err != nil {
		die("%v", err)
	}
	fmt.Println("results file:", p)
}

func die(f string, a ...any) {
	fmt.Fprintf(os.Stderr, "scale: "+f+"\n", a...)
	os.Exit(1)
}

func must(e event, err error) event {
	if err != nil {
		die("%v", err)
	}
	return e
}

// start starts this binary as the child of the given kind.
func start(c childFlags, kind string) *childproc.Proc[event] {
	self, err := os.Executable()
	if err != nil {
		die("%v", err)
	}
	cmd := exec.Command(self, append([]string{kind}, c.args()...)...)
	cmd.Stderr = os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	p, err := childproc.Start[event](cmd, childproc.Options{Events: 16, BufStart: 1 << 16, BufMax: 256 << 20,
		Err: func(w childproc.WaitError) error { return fmt.Errorf("%s: %w", kind, &w) }})
	if err != nil {
		die("starting the %s: %v", kind, err)
	}
	return p
}
