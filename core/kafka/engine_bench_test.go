//go:build bench

package kafka_test

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/krabka/krabka-coord/core"
	"github.com/krabka/krabka-coord/core/coord"
	"github.com/krabka/krabka-coord/internal/perfdoc"
	"github.com/krabka/krabka-coord/tests/kafka/kafkatest"
)

// TestEngineBench compares the two ways a role's transactions reach Kafka
// (krabka.engine=client, the per-role franz-go client, before; =shared,
// the shared engine of engine.go, after) in one run on one cluster
// (KRABKA_ENGINE_BENCH_CLUSTER, default 1n-tv2), engine by engine: the
// client bench's operations (acquire, renew, one guarded write, describe),
// the crash failover overhead, guarded writes with 64 and 256 writers, and
// one client holding KRABKA_ENGINE_BENCH_ROLES roles (default 1,000) with
// background renewal at the default lease and renew interval: goroutines,
// Go heap plus goroutine stacks and sockets, per held role and per
// process. One results file engine-<cluster>-*.json, every measure named
// with its engine (-client, -shared). Build tag bench (make engine-bench);
// KRABKA_ENGINE_BENCH_ONLY_ROLES=1 measures only the held roles and
// KRABKA_ENGINE_BENCH_ENGINES (default client,shared) picks the engines.
func TestEngineBench(t *testing.T) {
	n := envInt("KRABKA_ENGINE_BENCH_N", 200)
	failovers := envInt("KRABKA_ENGINE_BENCH_FAILOVERS", 30)
	roles := envInt("KRABKA_ENGINE_BENCH_ROLES", 1000)
	dur := time.Duration(envInt("KRABKA_ENGINE_BENCH_SECONDS", 5)) * time.Second
	onlyRoles := os.Getenv("KRABKA_ENGINE_BENCH_ONLY_ROLES") == "1" // only the held roles' costs
	o := benchClusters(t, "KRABKA_ENGINE_BENCH_CLUSTER", "1n-tv2")[0]
	c := kafkatest.Start(t, o)
	f := perfdoc.NewFile("engine")
	f.Kafka = kafkaInfo(t, c)
	f.Settings = map[string]string{"n": strconv.Itoa(n), "failovers": strconv.Itoa(failovers), "roles": strconv.Itoa(roles),
		"group_seconds": strconv.Itoa(int(dur / time.Second)),
		"engines":       "client (per-role franz-go client, before), shared (engine.go, after), one after the other on the same cluster",
		"roles_setup":   "one client, background renewal, default lease 30 s and renew 10 s, acquired 32 at a time, measured after a full renewal round and GC"}
	fmt.Printf("engine bench: %s at %s, load %s\n", f.Kafka.Label(), c.Bootstrap, loadAvg())
	engines := []string{"client", "shared"}
	if v := os.Getenv("KRABKA_ENGINE_BENCH_ENGINES"); v != "" {
		engines = strings.Split(v, ",") // e.g. "shared" alone
	}
	f.Settings["engines_run"] = strings.Join(engines, ",")
	for _, engine := range engines {
		t.Setenv(coord.EngineEnv, engine)
		var ms []perfdoc.Measure
		if !onlyRoles {
			ms = append(ms, benchOps(t, c, n)...)
			ms = append(ms, benchFailover(t, c, failovers)...)
			for _, w := range []int{64, 256} {
				ms = append(ms, benchGroup(t, c, w, dur))
			}
		}
		ms = append(ms, benchHeldRoles(t, c, roles)...)
		for i := range ms {
			ms[i].Name += "-" + engine
			ms[i].What = "krabka.engine=" + engine + ": " + ms[i].What
		}
		f.Measures = append(f.Measures, ms...)
	}
	writeResults(t, f)
}

// benchHeldRoles: one client with background renewal acquires n roles (32
// at a time) and renews them all once; then, after GC, the goroutines, the
// Go heap in use plus goroutine stacks, and the sockets of the process, as
// deltas per held role and as totals.
func benchHeldRoles(t *testing.T, c *kafkatest.Cluster, n int) []perfdoc.Measure {
	kv := []string{"krabka.topic", uniq("bench_held_"), "krabka.lease.ms", "30000", "krabka.renew.interval.ms", "10000",
		"krabka.challenge.stagger.ms", "5000", "request.timeout.ms", "30000", "krabka.renew.background", "true"}
	cl := newClient(t, c.Bootstrap, kv...)
	if _, err := cl.Describe(ctxFor(t, 30*time.Second), core.MustRole("warm-up")); err != nil {
		t.Fatal(err)
	}
	measure := func() (heap, stacks uint64, g, socks int) {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapInuse, m.StackInuse, runtime.NumGoroutine(), sockets()
	}
	h0, s0, g0, k0 := measure()
	ls, acq, ren := acquireAndRenew(t, cl, n, "held")
	h1, s1, g1, k1 := measure()
	per := func(a, b uint64) float64 { return float64(int64(b)-int64(a)) / 1024 / float64(n) }
	fmt.Printf("  %d held roles (%s): acquire all %v, renew all %v; heap %.1f KiB + stacks %.1f KiB per role; goroutines %d -> %d (%.2f per role); sockets %d -> %d (%.2f per role)\n",
		n, os.Getenv(coord.EngineEnv), acq.Round(time.Millisecond), ren.Round(time.Millisecond), per(h0, h1), per(s0, s1), g0, g1, float64(g1-g0)/float64(n), k0, k1, float64(k1-k0)/float64(n))
	for _, l := range ls {
		l.Close()
	}
	what := fmt.Sprintf("%d held roles on one client (background renewal)", n)
	return []perfdoc.Measure{
		perfdoc.Value("held-acquire-all", what+": acquire all, 32 at a time", "s", acq.Seconds()),
		perfdoc.Value("held-renew-all", what+": renew all once, 32 at a time", "s", ren.Seconds()),
		perfdoc.Value("held-heap-stacks-per-role", what+": Go heap in use plus goroutine stacks per held role", "KiB", per(h0, h1)+per(s0, s1)),
		perfdoc.Value("held-goroutines-per-role", what+": goroutines per held role", "goroutines", float64(g1-g0)/float64(n)),
		perfdoc.Value("held-sockets-per-role", what+": sockets per held role", "sockets", float64(k1-k0)/float64(n)),
		perfdoc.Value("held-goroutines-process", what+": goroutines of the process", "goroutines", float64(g1)),
		perfdoc.Value("held-sockets-process", what+": sockets of the process", "sockets", float64(k1)),
	}
}

// acquireAndRenew has cl acquire n fresh roles (named prefix-i-random), 32
// at a time, then renew each once, 32 at a time, and returns the
// leaderships and the two wall times.
func acquireAndRenew(t *testing.T, cl *coord.Client, n int, prefix string) ([]*coord.Leadership, time.Duration, time.Duration) {
	ls := make([]*coord.Leadership, n)
	each := func(fn func(i int) error) time.Duration {
		var wg sync.WaitGroup
		sem := make(chan struct{}, 32)
		start := time.Now()
		for i := 0; i < n; i++ {
			wg.Add(1)
			sem <- struct{}{}
			go func() {
				defer wg.Done()
				defer func() { <-sem }()
				if err := fn(i); err != nil {
					t.Error(err)
				}
			}()
		}
		wg.Wait()
		if t.Failed() {
			t.FailNow()
		}
		return time.Since(start)
	}
	acq := each(func(i int) (err error) {
		ls[i], err = cl.Acquire(ctxFor(t, 5*time.Minute), core.MustRole(fmt.Sprintf("%s-%d-%s", prefix, i, uniq(""))), core.MustMemberID("m"))
		return err
	})
	ren := each(func(i int) error { return ls[i].Renew(ctxFor(t, 5*time.Minute)) })
	return ls, acq, ren
}

// sockets counts the process's open socket descriptors.
func sockets() int {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return -1
	}
	n := 0
	for _, e := range ents {
		if l, err := os.Readlink("/proc/self/fd/" + e.Name()); err == nil && strings.HasPrefix(l, "socket:") {
			n++
		}
	}
	return n
}
