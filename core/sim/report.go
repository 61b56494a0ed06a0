package sim

import (
	"fmt"
	"sort"
	"strings"
)

// DefaultPerSeed is how many failovers one scenario runs by default.
const DefaultPerSeed = 250

// Replay is the command that runs the scenario of cfg again, alone and with
// its event trace.
func Replay(cfg Config) string {
	cmd := fmt.Sprintf("go test ./core/sim -run 'TestSimulation$' -sim.seed=%d", cfg.Seed)
	if cfg.Failovers != DefaultPerSeed {
		cmd += fmt.Sprintf(" -sim.per-seed=%d", cfg.Failovers)
	}
	if cfg.Bug != "" {
		cmd += " -sim.bug=" + cfg.Bug
	}
	return cmd + " -v"
}

// Report describes a scenario that found violations: the seed, what broke,
// and the command that replays it.
func (r Result) Report() string {
	var b strings.Builder
	fmt.Fprintf(&b, "seed %d: %d violation(s) after %d failovers (simulated time %d ms)\n", r.Config.Seed, len(r.Violations), r.Failovers, r.SimTime)
	fmt.Fprintf(&b, "  scenario: %s\n", r.Config)
	for i, v := range r.Violations {
		if i == 5 {
			fmt.Fprintf(&b, "  ... %d more\n", len(r.Violations)-i)
			break
		}
		fmt.Fprintf(&b, "  %s\n", v)
	}
	fmt.Fprintf(&b, "  replay: %s", Replay(r.Config))
	return b.String()
}

// Faults lists the fault counts, sorted by name.
func FaultList(faults map[string]int) string {
	keys := make([]string, 0, len(faults))
	for k := range faults {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for i, k := range keys {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s %d", k, faults[k])
	}
	return b.String()
}
