package sim

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
	"testing"
	"time"
)

var (
	flagSeed      = flag.Uint64("sim.seed", 0, "run only this seed, with its event trace (the replay of a failure)")
	flagFailovers = flag.Int("sim.failovers", 100000, "TestSimulation runs seeds until this many failovers")
	flagPerSeed   = flag.Int("sim.per-seed", DefaultPerSeed, "failovers per scenario")
	flagBug       = flag.String("sim.bug", "", "with -sim.seed: replay with this test-only switch (see BugNames)")
	flagTrace     = flag.String("sim.trace", "", "with -sim.seed: write the whole trace there ('-': stdout); default a file in the temporary directory")
)

// The simulation tier of make test: seeds 1, 2, ... until at least
// -sim.failovers failovers (100,000), each scenario a whole run of members,
// faults and the checker. -short changes nothing. A failing seed is run
// again with its trace, which goes to a file; the tail and the replay
// command are printed.
func TestSimulation(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(400)) // scenarios are small; collect less often
	if *flagSeed != 0 {
		replay(t, *flagSeed)
		return
	}
	if *flagBug != "" {
		t.Fatal("-sim.bug needs -sim.seed")
	}
	target := *flagFailovers
	per := *flagPerSeed
	if target < 100000 {
		t.Logf("NOTE: -sim.failovers=%d, below the 100,000 of make test", target)
	}
	workers := runtime.GOMAXPROCS(0)
	start := time.Now()

	var (
		mu       sync.Mutex
		total    Result
		seeds    int
		failed   []Result
		faults   = map[string]int{}
		nextSeed uint64
	)
	total.Faults = faults
	// Seeds 1..ceil(target/per) always; more only if some scenario ended
	// short of its failovers (at its simulated time limit).
	planned := uint64((target + per - 1) / per)
	take := func() (uint64, bool) {
		mu.Lock()
		defer mu.Unlock()
		if len(failed) >= 3 || (nextSeed >= planned && total.Failovers >= target) {
			return 0, false
		}
		nextSeed++
		return nextSeed, true
	}
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				seed, ok := take()
				if !ok {
					return
				}
				r := Run(Random(seed, per), false)
				mu.Lock()
				seeds++
				total.Failovers += r.Failovers
				total.Handovers += r.Handovers
				total.Deposed += r.Deposed
				total.Recoveries += r.Recoveries
				total.Retokened += r.Retokened
				total.Commands += r.Commands
				total.Acked += r.Acked
				total.Judged += r.Judged
				total.Unjudged += r.Unjudged
				total.Decisions += r.Decisions
				total.Events += r.Events
				total.SimTime += r.SimTime
				for k, n := range r.Faults {
					faults[k] += n
				}
				if len(r.Violations) > 0 {
					failed = append(failed, r)
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	wall := time.Since(start)
	fmt.Printf("simulation: %d failovers (%d to another member; %d own epoch recoveries besides) in %d seeds, %.1f s of simulated time\n",
		total.Failovers, total.Handovers, total.Recoveries, seeds, float64(total.SimTime)/1000)
	fmt.Printf("simulation: %d commands committed, %d acknowledged (%d name the token before an own recovery); %d succession decisions and %d quiet handovers judged (%d left unjudged); %d events\n",
		total.Commands, total.Acked, total.Retokened, total.Decisions, total.Judged, total.Unjudged, total.Events)
	fmt.Printf("simulation: %d healthy holders deposed\n", total.Deposed)
	fmt.Printf("simulation: faults: %s\n", FaultList(faults))
	fmt.Printf("simulation: %.1f s wall, %.0f failovers/s (GOMAXPROCS %d)\n", wall.Seconds(), float64(total.Failovers)/wall.Seconds(), workers)
	for _, r := range failed {
		t.Errorf("%s", r.Report())
		showTrace(t, r.Config)
	}
	if len(failed) == 0 && total.Failovers < target {
		t.Fatalf("only %d failovers in %d seeds, want %d", total.Failovers, seeds, target)
	}
}

// replay runs one seed with its trace.
func replay(t *testing.T, seed uint64) {
	cfg := Random(seed, *flagPerSeed)
	cfg.Bug = *flagBug
	r := run(cfg, true, true)
	fmt.Printf("scenario: %s\n%d failovers, %d commands, %d decisions, %d quiet handovers judged, %d healthy holders deposed; faults: %s\n",
		cfg, r.Failovers, r.Commands, r.Decisions, r.Judged, r.Deposed, FaultList(r.Faults))
	writeTrace(t, cfg, r.Trace, *flagTrace)
	if *flagTrace != "-" {
		fmt.Print(tail(r.Trace, 40))
	}
	if len(r.Violations) > 0 {
		t.Fatalf("%s", r.Report())
	}
}

// showTrace runs a failed seed again with its trace (one seed is one run),
// writes the trace to a file and prints its last lines.
func showTrace(t *testing.T, cfg Config) {
	r := run(cfg, true, true)
	path := writeTrace(t, cfg, r.Trace, "")
	t.Logf("seed %d: the last lines of its trace (all of it in %s):\n%s", cfg.Seed, path, tail(r.Trace, 40))
}

// tail is the last n lines of a trace.
func tail(trace string, n int) string {
	lines := strings.Split(strings.TrimRight(trace, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n") + "\n"
}

func writeTrace(t *testing.T, cfg Config, trace, where string) string {
	if where == "-" {
		fmt.Print(trace)
		return "stdout"
	}
	if where == "" {
		name := fmt.Sprintf("krabka-sim-%d.trace", cfg.Seed)
		if cfg.Bug != "" {
			name = fmt.Sprintf("krabka-sim-%d-%s.trace", cfg.Seed, cfg.Bug)
		}
		where = filepath.Join(os.TempDir(), name)
	}
	if err := os.WriteFile(where, []byte(trace), 0o644); err != nil {
		t.Logf("writing the trace: %v", err)
	} else {
		fmt.Printf("trace: %s\n", where)
	}
	return where
}

// One seed is one run: the same seed gives the same trace, event for event.
func TestSimulationIsDeterministic(t *testing.T) {
	for _, seed := range []uint64{3, 17, 29} {
		a := Run(Random(seed, 40), true)
		b := Run(Random(seed, 40), true)
		if a.Trace != b.Trace || a.Events != b.Events || a.Failovers != b.Failovers {
			t.Fatalf("seed %d: two runs differ (%d and %d events)", seed, a.Events, b.Events)
		}
		if a.Failovers < 40 || a.Commands == 0 || a.Decisions == 0 {
			t.Fatalf("seed %d: a run that did nothing: %+v", seed, a)
		}
		if c := Run(Random(seed+1, 40), true); c.Trace == a.Trace {
			t.Fatalf("seeds %d and %d ran the same", seed, seed+1)
		}
	}
}

// The checker's power: each test-only switch breaks one rule, and within a
// few seeds the simulation reports that violation, naming the seed and the
// command that replays it. (TestSimulation runs the same seeds without the
// switches and finds nothing.)
func TestSimulationCatchesBrokenRules(t *testing.T) {
	cases := []struct {
		bug   string
		props []string // any of these
	}{
		{"accept-stale-epoch", []string{"stale-append", "stale-commit", "order"}},
		{"fail-back", []string{"succession"}},
		{"no-prune", []string{"prune"}},
		{"skip-sync", []string{"stale-view"}},
		// The acknowledged command's transaction is still open when the
		// next write of the leadership (a command, or a renewal that the
		// checker then finds inside a command transaction) joins it.
		{"ack-before-commit", []string{"lost", "lease-record"}},
		{"read-uncommitted", []string{"fold"}},
		{"register-again", []string{"register"}},
		{"late-challenge", []string{"handover"}},
		{"read-committed", []string{"healthy-holder-deposed"}},
	}
	if len(cases) != len(BugNames) {
		t.Fatalf("%d cases for %d switches", len(cases), len(BugNames))
	}
	for _, tc := range cases {
		t.Run(tc.bug, func(t *testing.T) {
			for seed := uint64(1); seed <= 40; seed++ {
				cfg := Random(seed, 60)
				cfg.Bug = tc.bug
				r := Run(cfg, false)
				if len(r.Violations) == 0 {
					continue
				}
				v := r.Violations[0]
				found := false
				for _, p := range tc.props {
					found = found || v.Property == p
				}
				if !found {
					t.Fatalf("seed %d reported %s, want one of %v", seed, v, tc.props)
				}
				rep := r.Report()
				want := fmt.Sprintf("-sim.seed=%d -sim.per-seed=60 -sim.bug=%s", seed, tc.bug)
				if !strings.Contains(rep, fmt.Sprintf("seed %d:", seed)) || !strings.Contains(rep, want) {
					t.Fatalf("the report does not name the seed and its replay:\n%s", rep)
				}
				t.Logf("seed %d: %s", seed, v)
				return
			}
			t.Fatalf("no violation in 40 seeds")
		})
	}
}

// Issue 34: a holder of one role killed, paused or cut off inside its lease
// transaction leaves it open until the coordinator aborts it. Read
// read_committed (the reading before the fix), that transaction hides every
// later record of every role of the partition, and the standbys of the
// other roles depose their healthy holders on the frozen view; read past
// the last stable offset, none does. The same seeds, both readings.
func TestSimulationOpenTransactionOfAnotherRole(t *testing.T) {
	const seeds, per = 12, 100
	var old, fixed, oldSeeds, txnFaults int
	for seed := uint64(1); seed <= seeds; seed++ {
		cfg := Random(seed, per)
		r := Run(cfg, false)
		if len(r.Violations) > 0 {
			t.Fatalf("%s", r.Report())
		}
		fixed += r.Deposed
		txnFaults += r.Faults["txn-crash"] + r.Faults["txn-pause"] + r.Faults["txn-cut"]
		cfg.Bug = "read-committed"
		r = Run(cfg, false)
		for _, v := range r.Violations {
			if v.Property != "healthy-holder-deposed" {
				t.Fatalf("the reading before the fix broke another property:\n%s", r.Report())
			}
		}
		old += r.Deposed
		if r.Deposed > 0 {
			oldSeeds++
		}
	}
	t.Logf("%d seeds of %d failovers, %d faults inside a lease transaction: read_committed deposed %d healthy holders (in %d seeds), read past the last stable offset %d",
		seeds, per, txnFaults, old, oldSeeds, fixed)
	if txnFaults < seeds {
		t.Errorf("only %d faults inside a lease transaction in %d seeds", txnFaults, seeds)
	}
	if oldSeeds < seeds/2 {
		t.Errorf("read_committed deposed healthy holders in %d of %d seeds only", oldSeeds, seeds)
	}
	if fixed != 0 {
		t.Errorf("read past the last stable offset, %d healthy holders deposed", fixed)
	}
}
