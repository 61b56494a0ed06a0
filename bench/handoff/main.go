// Command handoff is the separate-process handoff benchmark of
// krabka-coord (issue 25): a driver that starts three fresh candidate
// processes per trial (this same binary, "handoff candidate ..."), each a
// Go program on core/kafka's client that calls Acquire for the trial's role
// on the default coordination topic, lets one win, and then either hands the
// role off by a Resign 0.7 s after the election (-mode handoff) or SIGKILLs
// the holder (-mode crash), or has the holder make guarded writes (-mode
// write). The processes share the machine's clock and report their
// timestamps over their stdout pipes.
//
//	go run ./bench/handoff -bootstrap 127.0.0.1:47092 -mode handoff -n 30
//
// It prints the figures, writes them as JSON to bench/results (-out-dir)
// and, with -trace, the ledger of the path (every Kafka request of the
// holder and the successor between the resign call and the successor's
// acquire returning, or of one guarded write) to -ledger.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math"
	"os"
	"os/exec"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/krabka/krabka-coord/bench/internal/childproc"
	"github.com/krabka/krabka-coord/core"
	"github.com/krabka/krabka-coord/core/coord"
	"github.com/krabka/krabka-coord/core/kafka"
	"github.com/krabka/krabka-coord/internal/perfdoc"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "candidate" {
		runCandidate(os.Args[2:])
		return
	}
	if len(os.Args) > 1 && os.Args[1] == "version" {
		fmt.Println(gitCommit())
		return
	}
	bootstrap := flag.String("bootstrap", os.Getenv("KRABKA_BOOTSTRAP"), "bootstrap.servers")
	mode := flag.String("mode", "handoff", "handoff | crash | write")
	n := flag.Int("n", 30, "trials (handoff, crash) or guarded writes (write)")
	warm := flag.Int("warmup", 0, "trials or writes run first and not counted (a fresh broker's JVM compiles its hot paths during the first hundreds of requests); their double mints are counted")
	after := flag.Duration("after", 700*time.Millisecond, "handoff or kill this long after the election")
	lease := flag.Int("lease-ms", 5000, "krabka.lease.ms")
	renew := flag.Int("renew-ms", 1670, "krabka.renew.interval.ms")
	stagger := flag.Int("stagger-ms", 5000, "krabka.challenge.stagger.ms")
	extra := flag.String("props", "", "more client properties k=v,k=v")
	trace := flag.Bool("trace", false, "trace the Kafka requests and write the ledger")
	ledger := flag.String("ledger", "", "ledger output file (with -trace; default stdout)")
	outDir := flag.String("out-dir", "bench/results", "directory of the results files (bench/README.md; '' = none)")
	tag := flag.String("tag", "", "tag in the results file names after the cluster (e.g. before, after)")
	dataTopic := flag.String("data-topic", "ho-data", "topic of the guarded writes (-mode write; created with one partition and the cluster's default replication if missing)")
	instants := flag.Bool("instants", false, "-mode handoff: also the successor's InitProducerId answered, its lease seen by the third candidate's live view (Watch), and its first guarded write (one record to -data-topic) committed, each from the resign call")
	benchName := flag.String("bench", "procs", "bench name of the results files (procs-engine for the engine A/B, so the tables of procs stay on the default engine)")
	bins := flag.String("candidates", "", "label=binary,label=binary: candidate binaries used in turn, trial by trial "+
		"(A/B comparison under the same load; each label gets its own results); default this binary")
	flag.Parse()
	if *bootstrap == "" {
		die("no -bootstrap (or KRABKA_BOOTSTRAP)")
	}
	props := fmt.Sprintf("krabka.lease.ms=%d,krabka.renew.interval.ms=%d,krabka.challenge.stagger.ms=%d", *lease, *renew, *stagger)
	if *mode == "write" {
		// The holder writes for longer than a lease on three brokers: it
		// renews in the background, as a writing leader does (without it
		// the lease expires mid-run and a standby takes over).
		props += ",krabka.renew.background=true"
	}
	if *extra != "" {
		props += "," + *extra
	}
	b := &bench{bootstrap: *bootstrap, props: props, after: *after, trace: *trace, run: time.Now().Unix()}
	if *instants {
		if err := ensureTopic(*bootstrap, *dataTopic); err != nil {
			die("creating -data-topic %s: %v", *dataTopic, err)
		}
		b.instants = *dataTopic
	}
	type variant struct{ label, bin, commit string }
	variants := []variant{{label: "", bin: os.Args[0], commit: gitCommit()}}
	if *bins != "" {
		variants = nil
		for _, lb := range strings.Split(*bins, ",") {
			l, bin, ok := strings.Cut(lb, "=")
			if !ok {
				die("-candidates: %q is not label=binary", lb)
			}
			out, err := exec.Command(bin, "version").Output()
			if err != nil {
				die("-candidates: %s version: %v", bin, err)
			}
			variants = append(variants, variant{label: l, bin: bin, commit: strings.TrimSpace(string(out))})
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	kinfo, err := perfdoc.AskKafka(ctx, strings.Split(*bootstrap, ","), perfdoc.KafkaVersion("tests/kafka/lib"))
	cancel()
	if err != nil {
		die("asking the cluster what it runs: %v", err)
	}
	date, loadBefore := time.Now().UTC().Format(time.RFC3339), perfdoc.LoadAvg()
	settings := map[string]string{
		"mode": *mode, "krabka.lease.ms": fmt.Sprint(*lease), "krabka.renew.interval.ms": fmt.Sprint(*renew),
		"krabka.challenge.stagger.ms": fmt.Sprint(*stagger), "topic": coord.DefaultTopic + " (default, 16 partitions)",
		"processes": "3 fresh candidate processes per trial, one Go client (core/kafka) each", "after_election": after.String(),
		"warmup": fmt.Sprintf("%d trials or writes first, not counted (the broker's JVM warms up)", *warm),
	}
	if *extra != "" {
		settings["props"] = *extra
	}
	if *mode == "write" {
		settings["krabka.renew.background"] = "true"
	}
	type acc struct {
		resign, handoff []float64
		mint, seen, w1  []float64
		doubles         int
		led             ledgerSet
	}
	accs := make([]*acc, len(variants))
	for i := range accs {
		accs[i] = &acc{}
	}
	switch *mode {
	case "handoff", "crash":
		for i := 0; i < (*warm+*n)*len(variants); i++ {
			k := i % len(variants)
			b.bin = variants[k].bin
			var tr trialResult
			var err error
			if *mode == "handoff" {
				tr, err = b.handoffTrial(i)
			} else {
				tr, err = b.crashTrial(i)
			}
			if err != nil {
				die("trial %d: %v", i, err)
			}
			a := accs[k]
			a.doubles += tr.doubles
			if i < *warm*len(variants) {
				fmt.Printf("warm-up %2d %s: %6.2f ms, double mints %d\n", i, variants[k].label, tr.handoffMs, tr.doubles)
				continue
			}
			a.resign = append(a.resign, tr.resignMs)
			a.handoff = append(a.handoff, tr.handoffMs)
			if b.instants != "" {
				a.mint, a.seen, a.w1 = append(a.mint, tr.mintMs), append(a.seen, tr.seenMs), append(a.w1, tr.writeMs)
				fmt.Printf("          instants: InitProducerId answered %6.2f ms, lease seen by a standby %6.2f ms, first guarded write committed %6.2f ms\n", tr.mintMs, tr.seenMs, tr.writeMs)
			}
			a.led.add(tr.steps)
			if *mode == "handoff" {
				fmt.Printf("trial %2d %s: resign call %6.2f ms, resign -> successor's acquire returned %6.2f ms, double mints %d\n", i, variants[k].label, tr.resignMs, tr.handoffMs, tr.doubles)
			} else {
				fmt.Printf("trial %2d %s: successor's acquire returned %6.2f ms after the killed holder's deadline, double mints %d\n", i, variants[k].label, tr.handoffMs, tr.doubles)
			}
		}
	case "write":
		if err := ensureTopic(*bootstrap, *dataTopic); err != nil {
			die("creating -data-topic %s: %v", *dataTopic, err)
		}
		for k, v := range variants {
			b.bin = v.bin
			ws, steps, err := b.writes(*warm+*n, *dataTopic)
			if err != nil {
				die("%v", err)
			}
			ws = ws[*warm:]
			if steps != nil {
				steps = steps[*warm:]
			}
			accs[k].handoff = ws
			accs[k].led.sets = steps
		}
	default:
		die("unknown -mode %q", *mode)
	}
	loadAfter := perfdoc.LoadAvg()
	for k, v := range variants {
		a := accs[k]
		extra := map[string]float64{"minted_more_than_once": float64(a.doubles)}
		var ms []perfdoc.Measure
		switch *mode {
		case "handoff":
			ms = []perfdoc.Measure{
				perfdoc.Summarize("resign-call", "the holder's resign call (separate processes)", "ms", a.resign),
				perfdoc.Summarize("handoff", "planned handoff, resign call -> the successor's acquire returned (separate processes)", "ms", a.handoff),
			}
			ms[1].Extra = extra
			if b.instants != "" {
				ms = append(ms,
					perfdoc.Summarize("handoff-mint", "planned handoff, resign call -> the successor's InitProducerId answered (its token enforced by the broker)", "ms", a.mint),
					perfdoc.Summarize("handoff-seen", "planned handoff, resign call -> the successor's lease seen by another standby's live view (Watch, a third process)", "ms", a.seen),
					perfdoc.Summarize("handoff-first-write", "planned handoff, resign call -> the successor's first guarded write (one record) committed", "ms", a.w1))
			}
		case "crash":
			ms = []perfdoc.Measure{perfdoc.Summarize("crash-overhead", "crash failover, the killed holder's deadline -> the successor's acquire returned (separate processes)", "ms", a.handoff)}
			ms[0].Extra = extra
		case "write":
			ms = []perfdoc.Measure{perfdoc.Summarize("write-1", "one guarded write of one record, one writer, after the holder's acquire", "ms", a.handoff)}
		}
		commit, dirty := strings.CutSuffix(v.commit, "-dirty")
		f := &perfdoc.File{Schema: perfdoc.Schema, Bench: *benchName, Commit: commit[:min(7, len(commit))], Dirty: dirty, Date: date,
			Machine: perfdoc.ThisMachine(), LoadBefore: loadBefore, Kafka: kinfo, Settings: settings, Measures: ms}
		for _, m := range ms {
			fmt.Printf("%s %-12s n=%d p50=%.2f p90=%.2f p99=%.2f max=%.2f min=%.2f mean=%.2f ms; double mints %d (load %v -> %v)\n",
				v.label, m.Name, m.N, m.P50, m.P90, m.P99, m.Max, m.Min, m.Mean, a.doubles, loadBefore, loadAfter)
		}
		if *outDir != "" {
			label := kinfo.Label()
			for _, t := range []string{*tag, v.label} {
				if t != "" {
					label += "-" + t
				}
			}
			p, err := f.Finish(*outDir, label)
			if err != nil {
				die("%v", err)
			}
			fmt.Println("results file:", p)
		}
	}
	if *trace {
		w := os.Stdout
		if *ledger != "" {
			f, err := os.Create(*ledger)
			if err != nil {
				die("%v", err)
			}
			defer f.Close()
			w = f
		}
		for k, v := range variants {
			led := accs[k].led
			fmt.Fprintf(w, "\n# ledger %s: %s, %d trials/writes, %s, commit %s, load %v -> %v\n\n", v.label, *mode, len(led.sets), date, v.commit, loadBefore, loadAfter)
			led.print(w)
		}
	}
}

func die(f string, a ...any) {
	fmt.Fprintf(os.Stderr, "handoff: "+f+"\n", a...)
	os.Exit(1)
}

type bench struct {
	instants         string // -instants: the topic of the successor's first guarded write ("" = off)
	bin              string // the candidate binary
	bootstrap, props string
	after            time.Duration
	trace            bool
	run              int64
}

// proc is one candidate process.
type proc struct {
	*childproc.Proc[event]
	member string

	mu   sync.Mutex
	seen []event // seen events read while waiting for something else (-instants)
}

func (p *proc) keep(e event) {
	p.mu.Lock()
	p.seen = append(p.seen, e)
	p.mu.Unlock()
}

func (b *bench) start(role, member string) (*proc, error) {
	args := []string{"candidate", "-bootstrap", b.bootstrap, "-role", role, "-member", member, "-props", b.props}
	if b.trace {
		args = append(args, "-trace")
	}
	if b.instants != "" {
		args = append(args, "-instants", b.instants)
	}
	cmd := exec.Command(b.bin, args...)
	cmd.Stderr = os.Stderr
	c, err := childproc.Start[event](cmd, childproc.Options{Events: 64, BufStart: 1 << 20, BufMax: 256 << 20,
		Err: func(w childproc.WaitError) error {
			switch w.Reason {
			case childproc.Exited:
				return fmt.Errorf("%s exited waiting for %s", member, w.Want)
			case childproc.TimedOut:
				return fmt.Errorf("%s: no %s within %v", member, w.Want, w.Within)
			}
			return fmt.Errorf("%s: %s", member, w.Msg)
		}})
	if err != nil {
		return nil, err
	}
	return &proc{Proc: c, member: member}, nil
}

// waitSeen returns when p's watch first saw a lease with token (the
// instant, Unix ns); other events before it are dropped, except an acq,
// which is an error (p was to stay a standby).
func (p *proc) waitSeen(token string, d time.Duration) (int64, error) {
	p.mu.Lock()
	kept := p.seen
	p.seen = nil
	p.mu.Unlock()
	for _, e := range kept {
		if e.Token == token {
			return e.T, nil
		}
	}
	tm := time.NewTimer(d)
	defer tm.Stop()
	for {
		select {
		case e, ok := <-p.Events:
			if !ok {
				return 0, fmt.Errorf("%s exited before seeing %s", p.member, token)
			}
			switch {
			case e.Ev == "err":
				return 0, fmt.Errorf("%s: %s", p.member, e.Err)
			case e.Ev == "acq":
				return 0, fmt.Errorf("%s acquired while waiting to see %s (a double mint)", p.member, token)
			case e.Ev == "seen" && e.Token == token:
				return e.T, nil
			}
		case <-tm.C:
			return 0, fmt.Errorf("%s: did not see %s within %v", p.member, token, d)
		}
	}
}

// firstAcq waits for the first acq event of any of ps.
func firstAcq(ps []*proc, d time.Duration) (*proc, event, error) {
	type got struct {
		p *proc
		e event
	}
	ch := make(chan got, len(ps))
	stop := make(chan struct{})
	defer close(stop)
	for _, p := range ps {
		go func() {
			for {
				select {
				case e, ok := <-p.Events:
					if !ok {
						return
					}
					if e.Ev == "acq" || e.Ev == "err" {
						ch <- got{p, e}
						return
					}
					if e.Ev == "seen" {
						p.keep(e)
					}
				case <-stop:
					return
				}
			}
		}()
	}
	select {
	case g := <-ch:
		if g.e.Ev == "err" {
			return nil, event{}, fmt.Errorf("%s: %s", g.p.member, g.e.Err)
		}
		return g.p, g.e, nil
	case <-time.After(d):
		return nil, event{}, fmt.Errorf("no candidate acquired within %v", d)
	}
}

// finish asks every live process to dump its trace and exit.
func finish(ps []*proc) map[string][]req {
	traces := map[string][]req{}
	for _, p := range ps {
		if p.Cmd.ProcessState != nil {
			continue
		}
		p.Send("trace")
	}
	for _, p := range ps {
		if p.Cmd.ProcessState != nil {
			continue
		}
		if e, err := p.Wait("trace", 10*time.Second); err == nil {
			traces[p.member] = e.Reqs
		}
		p.Send("exit")
	}
	for _, p := range ps {
		done := make(chan struct{})
		go func() { p.Cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(15 * time.Second):
			p.Cmd.Process.Kill()
			<-done
		}
	}
	return traces
}

type trialResult struct {
	resignMs, handoffMs     float64
	mintMs, seenMs, writeMs float64 // -instants
	doubles                 int
	steps                   []step
}

func (b *bench) candidates(i int) (string, []*proc, error) {
	role := fmt.Sprintf("ho-%d-%d", b.run, i)
	var ps []*proc
	for k := 0; k < 3; k++ {
		p, err := b.start(role, fmt.Sprintf("c%d", k))
		if err != nil {
			return "", nil, err
		}
		ps = append(ps, p)
	}
	for _, p := range ps {
		if _, err := p.Wait("ready", 30*time.Second); err != nil {
			return "", nil, err
		}
	}
	return role, ps, nil
}

func others(ps []*proc, not *proc) []*proc {
	var o []*proc
	for _, p := range ps {
		if p != not {
			o = append(o, p)
		}
	}
	return o
}

// elected starts trial i's candidates and waits for the first to acquire
// (the holder), then b.after more. The caller finishes ps.
func (b *bench) elected(i int) (role string, ps []*proc, holder *proc, acq event, err error) {
	if role, ps, err = b.candidates(i); err != nil {
		return "", nil, nil, event{}, err
	}
	if holder, acq, err = firstAcq(ps, 30*time.Second); err != nil {
		finish(ps)
		return "", nil, nil, event{}, err
	}
	time.Sleep(b.after)
	return role, ps, holder, acq, nil
}

func (b *bench) handoffTrial(i int) (trialResult, error) {
	role, ps, holder, acq1, err := b.elected(i)
	if err != nil {
		return trialResult{}, err
	}
	defer finish(ps)
	holder.Send("resign")
	rs, err := holder.Wait("resigned", 30*time.Second)
	if err != nil {
		return trialResult{}, err
	}
	if rs.Err != "" {
		return trialResult{}, fmt.Errorf("resign: %s", rs.Err)
	}
	succ, acq2, err := firstAcq(others(ps, holder), 30*time.Second)
	if err != nil {
		return trialResult{}, err
	}
	tr := trialResult{resignMs: ms(rs.T1 - rs.T0), handoffMs: ms(acq2.T - rs.T0)}
	var seenBy *proc // the standby that is neither holder nor successor
	for _, p := range others(ps, holder) {
		if p != succ {
			seenBy = p
		}
	}
	if b.instants != "" {
		if acq2.Err != "" || acq2.TM == 0 || acq2.TW == 0 {
			return trialResult{}, fmt.Errorf("%s: no mint or first-write instant (%+v)", succ.member, acq2)
		}
		tr.mintMs, tr.writeMs = ms(acq2.TM-rs.T0), ms(acq2.TW-rs.T0)
		seen, err := seenBy.waitSeen(acq2.Token, 10*time.Second)
		if err != nil {
			return trialResult{}, err
		}
		tr.seenMs = ms(seen - rs.T0)
	}
	// Overlapping terms: the successor's term began before the holder's
	// resign call did, or the two hold the same token, or the order of the
	// tokens is not the order of the terms.
	tr.doubles = b.checkTerms(role, []event{acq1, acq2}, []int64{rs.T0})
	// A third acquisition within the trial would be a double mint too.
	time.Sleep(50 * time.Millisecond)
	for _, p := range others(ps, holder) {
		if p == succ {
			continue
		}
	drain:
		for {
			select {
			case e := <-p.Events:
				if e.Ev == "acq" {
					tr.doubles++
				}
				if e.Ev == "seen" && p == seenBy && e.Token != acq1.Token && e.Token != acq2.Token {
					tr.doubles++ // a third token within the trial
				}
			default:
				break drain
			}
		}
	}
	traces := finish(ps)
	if b.trace {
		tr.steps = append(tr.steps, window("holder", traces[holder.member], rs.T0, rs.T1, rs.T0)...)
		tr.steps = append(tr.steps, window("successor", traces[succ.member], rs.T0, acq2.T, rs.T0)...)
		tr.steps = append(tr.steps, step{label: "holder: resign call returned", start: ms(rs.T1 - rs.T0)},
			step{label: "successor: Acquire returned", start: ms(acq2.T - rs.T0)})
	}
	return tr, nil
}

func (b *bench) crashTrial(i int) (trialResult, error) {
	role, ps, holder, acq1, err := b.elected(i)
	if err != nil {
		return trialResult{}, err
	}
	defer finish(ps)
	holder.Kill()
	killed := time.Now().UnixNano()
	succ, acq2, err := firstAcq(others(ps, holder), 30*time.Second)
	if err != nil {
		return trialResult{}, err
	}
	// The deadline the successor waited for: the killed holder's last lease
	// in the log (no renewal ran: background renew is off by default and
	// the kill comes before the renew interval).
	deadline := b.lastDeadline(role, acq1.Token)
	if deadline == 0 {
		deadline = acq1.Deadline
	}
	tr := trialResult{handoffMs: ms(acq2.T - deadline*1e6)}
	tr.doubles = b.checkTerms(role, []event{acq1, acq2}, []int64{deadline * 1e6})
	_ = killed
	traces := finish(ps)
	if b.trace {
		t0 := deadline * 1e6
		tr.steps = append(tr.steps, window("successor", traces[succ.member], t0, acq2.T, t0)...)
		tr.steps = append(tr.steps, step{label: "successor: Acquire returned", start: ms(acq2.T - t0)})
	}
	return tr, nil
}

// writes: one trial's holder makes n guarded writes of one record, back to
// back, after the election.
func (b *bench) writes(n int, topic string) ([]float64, [][]step, error) {
	_, ps, holder, _, err := b.elected(0)
	if err != nil {
		return nil, nil, err
	}
	defer finish(ps)
	holder.Send(fmt.Sprintf("produce %d %s", n, topic))
	e, err := holder.Wait("produced", 10*time.Minute)
	if err != nil {
		return nil, nil, err
	}
	if e.Err != "" {
		return nil, nil, fmt.Errorf("produce: %s", e.Err)
	}
	traces := finish(ps)
	var out []float64
	var sets [][]step
	for i, d := range e.Samples {
		out = append(out, ms(d))
		if b.trace {
			s := e.Starts[i]
			st := window("holder", traces[holder.member], s, s+d, s)
			st = append(st, step{label: "holder: Produce returned", start: ms(d)})
			sets = append(sets, st)
		}
	}
	return out, sets, nil
}

// checkTerms counts the double mints of one trial: acqs in the order the
// terms began, ends[i] the instant term i ended (its resign call began, or
// its lease deadline). A term that began before the previous one ended, a
// token that does not supersede the previous term's, or a log whose lease
// records go back to an older token each count one.
func (b *bench) checkTerms(role string, acqs []event, ends []int64) int {
	d := 0
	for i := 1; i < len(acqs); i++ {
		if acqs[i].T < ends[i-1] {
			d++
		}
		a, e1 := core.ParseFencingToken(acqs[i-1].Token)
		c, e2 := core.ParseFencingToken(acqs[i].Token)
		if e1 != nil || e2 != nil || !c.Supersedes(a) {
			d++
		}
	}
	toks, err := b.leaseTokens(role)
	if err != nil {
		fmt.Fprintln(os.Stderr, "handoff: reading the log:", err)
		return d + 1
	}
	for i := 1; i < len(toks); i++ {
		if toks[i-1].Supersedes(toks[i]) {
			d++ // an older token's lease after a newer one's
		}
	}
	seen := map[string]bool{}
	for _, t := range toks {
		seen[t.String()] = true
	}
	for _, a := range acqs {
		if !seen[a.Token] {
			d++ // a term whose lease is not in the log
		}
	}
	return d
}

// leaseTokens reads the role's lease records from the log, in offset order.
func (b *bench) leaseTokens(role string) ([]core.FencingToken, error) {
	recs, err := b.leases(role)
	if err != nil {
		return nil, err
	}
	var out []core.FencingToken
	for _, l := range recs {
		out = append(out, l.Token)
	}
	return out, nil
}

func (b *bench) leases(role string) ([]core.Lease, error) {
	cfg, err := coord.ConfigFromMap(map[string]string{"bootstrap.servers": b.bootstrap})
	if err != nil {
		return nil, err
	}
	t, err := kafka.New(cfg)
	if err != nil {
		return nil, err
	}
	defer t.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	np, err := t.Partitions(ctx)
	if err != nil {
		return nil, err
	}
	r := core.MustRole(role)
	p, err := core.RolePartition(r, np)
	if err != nil {
		return nil, err
	}
	recs, err := t.Read(ctx, p)
	if err != nil {
		return nil, err
	}
	var out []core.Lease
	for _, rec := range recs {
		k, err := core.DecodeKey(rec.Key)
		if err != nil || k.Kind != core.KindLease || k.Role != r || len(rec.Value) == 0 {
			continue
		}
		l, err := core.DecodeLease(rec.Value)
		if err != nil {
			return nil, err
		}
		out = append(out, l)
	}
	return out, nil
}

// lastDeadline returns the deadline of the last lease of token tok (0: none).
func (b *bench) lastDeadline(role, tok string) int64 {
	ls, err := b.leases(role)
	if err != nil {
		return 0
	}
	var d int64
	for _, l := range ls {
		if l.Token.String() == tok {
			d = l.Deadline
		}
	}
	return d
}

func ms(ns int64) float64 { return float64(ns) / 1e6 }

// step is one entry of a ledger: a request (start and duration, ms from
// the origin of the trial) or an instant (dur < 0).
type step struct {
	label      string
	start, dur float64
}

// window returns who's requests that overlap [from, to], relative to origin.
// The successor's long poll that delivers the record began long before: it
// is kept, with its end as the instant that matters.
func window(who string, reqs []req, from, to, origin int64) []step {
	var out []step
	for _, r := range reqs {
		if r.End < from || r.Start > to {
			continue
		}
		label := fmt.Sprintf("%s %s %s", who, r.Client, r.Key)
		if r.Err != "" {
			label += " (error)"
		}
		st := step{label: label, start: ms(r.Start - origin), dur: ms(r.End - r.Start)}
		if r.Start < from && r.Key == "Fetch" {
			st = step{label: label + " (long poll) answered", start: ms(r.End - origin), dur: -1}
		}
		out = append(out, st)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].start < out[j].start })
	return out
}

// ledgerSet aggregates the ledgers of many trials: the k-th occurrence of
// each label, its median start and median duration.
type ledgerSet struct{ sets [][]step }

func (l *ledgerSet) add(s []step) {
	if len(s) > 0 {
		l.sets = append(l.sets, s)
	}
}

func (l *ledgerSet) print(w *os.File) {
	type agg struct {
		label        string
		starts, durs []float64
	}
	byKey := map[string]*agg{}
	var order []string
	for _, set := range l.sets {
		count := map[string]int{}
		for _, s := range set {
			count[s.label]++
			k := fmt.Sprintf("%s #%d", s.label, count[s.label])
			a := byKey[k]
			if a == nil {
				a = &agg{label: k}
				byKey[k] = a
				order = append(order, k)
			}
			a.starts = append(a.starts, s.start)
			if s.dur >= 0 {
				a.durs = append(a.durs, s.dur)
			}
		}
	}
	sort.Slice(order, func(i, j int) bool { return median(byKey[order[i]].starts) < median(byKey[order[j]].starts) })
	fmt.Fprintf(w, "| step (who, client, request, occurrence) | seen in | median start (ms from origin) | median duration (ms) | p90 duration |\n|---|---:|---:|---:|---:|\n")
	for _, k := range order {
		a := byKey[k]
		dur, p90 := "", ""
		if len(a.durs) > 0 {
			dur = fmt.Sprintf("%.3f", median(a.durs))
			p90 = fmt.Sprintf("%.3f", pct(a.durs, 0.9))
		}
		fmt.Fprintf(w, "| %s | %d/%d | %.3f | %s | %s |\n", a.label, len(a.starts), len(l.sets), median(a.starts), dur, p90)
	}
	// One trial in full: the median one by its last step.
	if len(l.sets) > 0 {
		idx := make([]int, len(l.sets))
		for i := range idx {
			idx[i] = i
		}
		last := func(s []step) float64 { return s[len(s)-1].start }
		sort.Slice(idx, func(i, j int) bool { return last(l.sets[idx[i]]) < last(l.sets[idx[j]]) })
		set := l.sets[idx[len(idx)/2]]
		fmt.Fprintf(w, "\nThe median trial in full (ms from origin):\n\n| start | duration | step |\n|---:|---:|---|\n")
		for _, s := range set {
			d := ""
			if s.dur >= 0 {
				d = fmt.Sprintf("%.3f", s.dur)
			}
			fmt.Fprintf(w, "| %.3f | %s | %s |\n", s.start, d, s.label)
		}
	}
}

func median(v []float64) float64 { return pct(v, 0.5) }

// pct is the nearest-rank percentile.
func pct(v []float64, p float64) float64 {
	if len(v) == 0 {
		return math.NaN()
	}
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	i := int(math.Ceil(p*float64(len(s)))) - 1
	if i < 0 {
		i = 0
	}
	return s[i]
}

// buildCommit is set with -ldflags "-X main.buildCommit=..." when the
// binary is built from another tree than the one it runs in.
var buildCommit string

func gitCommit() string {
	if buildCommit != "" {
		return buildCommit
	}
	out, err := exec.Command("git", "rev-parse", "HEAD").Output()
	if err != nil {
		return "unknown"
	}
	c := strings.TrimSpace(string(out))
	if st, err := exec.Command("git", "status", "--porcelain", "--untracked-files=no").Output(); err == nil && len(strings.TrimSpace(string(st))) > 0 {
		c += "-dirty"
	}
	return c
}

// ensureTopic creates topic (one partition, the cluster's default
// replication factor) unless it exists.
func ensureTopic(bootstrap, topic string) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(bootstrap, ",")...))
	if err != nil {
		return err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := kadm.NewClient(cl).CreateTopic(ctx, 1, -1, nil, topic)
	if err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
		return err
	}
	if res.Err != nil && !errors.Is(res.Err, kerr.TopicAlreadyExists) {
		return res.Err
	}
	return nil
}
