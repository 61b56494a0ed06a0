//go:build bench

package kafka_test

import (
	"fmt"
	"os"
	"sort"
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

// TestClientBench measures client latencies on each cluster of
// KRABKA_CLIENT_BENCH_CLUSTERS (default "1n-tv2,1n-tv1"; "3n-tv2" is the
// production profile: three brokers, replication 3, min.insync.replicas 2,
// transaction state replication 3), prints p50/p99 and writes one results
// file per cluster (client-<cluster>-<date>-<commit>.json, bench/README.md).
// It builds only with -tags bench (make client-bench); KRABKA_CLIENT_BENCH_N
// sets the operations per measure (default 200) and
// KRABKA_CLIENT_BENCH_FAILOVERS the failovers (default 40); the group-commit
// measure runs KRABKA_CLIENT_BENCH_SECONDS (default 5) per writer count
// (KRABKA_CLIENT_BENCH_WRITERS, default 1,8,64,256), and
// KRABKA_CLIENT_BENCH_ONLY_GROUP=1 skips everything else
// (KRABKA_CLIENT_BENCH_LINGER_MS sets krabka.produce.group.linger.ms).
func TestClientBench(t *testing.T) {
	n := envInt("KRABKA_CLIENT_BENCH_N", 200)
	failovers := envInt("KRABKA_CLIENT_BENCH_FAILOVERS", 40)
	dur := time.Duration(envInt("KRABKA_CLIENT_BENCH_SECONDS", 5)) * time.Second
	writers := writerCounts("KRABKA_CLIENT_BENCH_WRITERS", []int{1, 8, 64, 256})
	if os.Getenv("KRABKA_CLIENT_BENCH_ONLY_GROUP") == "1" {
		n, failovers = 0, 0
	}
	for _, o := range benchClusters(t, "KRABKA_CLIENT_BENCH_CLUSTERS", "1n-tv2,1n-tv1") {
		c := kafkatest.Start(t, o)
		f := perfdoc.NewFile("client")
		f.Kafka = kafkaInfo(t, c)
		f.Settings = map[string]string{"n": strconv.Itoa(n), "failovers": strconv.Itoa(failovers),
			"group_seconds": strconv.Itoa(int(dur / time.Second)), "linger_ms": os.Getenv("KRABKA_CLIENT_BENCH_LINGER_MS"),
			"ops": "lease 60 s, renew 20 s, stagger 5 s", "failover": "lease 1 s, renew 300 ms, stagger 300 ms, poll 50 ms",
			"group": "one leadership, one-partition topic, 200-byte value, one command per call"}
		fmt.Printf("client bench: %s (%d brokers, RF %d, min.insync.replicas %d) at %s, %d ops per measure, load %v\n",
			f.Kafka.Label(), f.Kafka.Nodes, f.Kafka.ReplicationFactor, f.Kafka.MinInsyncReplicas, c.Bootstrap, n, f.LoadBefore)
		f.Measures = append(f.Measures, benchOps(t, c, n)...)
		f.Measures = append(f.Measures, benchFailover(t, c, failovers)...)
		for _, w := range writers {
			f.Measures = append(f.Measures, benchGroup(t, c, w, dur))
		}
		writeResults(t, f)
	}
}

// writerCounts parses a list of writer counts ("1,64,256") from the
// variable name (def when unset).
func writerCounts(name string, def []int) []int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	var out []int
	for _, f := range strings.Split(v, ",") {
		if n, err := strconv.Atoi(strings.TrimSpace(f)); err == nil && n > 0 {
			out = append(out, n)
		}
	}
	return out
}

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

func report(name string, d []time.Duration) {
	if len(d) == 0 {
		return
	}
	sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
	pct := func(p float64) time.Duration { return d[int(p*float64(len(d)-1)+0.5)] }
	fmt.Printf("  %-34s n=%-4d p50=%-10v p99=%-10v max=%v\n", name, len(d),
		pct(0.50).Round(10*time.Microsecond), pct(0.99).Round(10*time.Microsecond), d[len(d)-1].Round(10*time.Microsecond))
}

func benchOps(t *testing.T, c *kafkatest.Cluster, n int) []perfdoc.Measure {
	if n == 0 {
		return nil
	}
	var out []perfdoc.Measure
	cl := newClient(t, c.Bootstrap, "krabka.lease.ms", "60000", "krabka.renew.interval.ms", "20000", "krabka.challenge.stagger.ms", "5000")
	topic, _ := dataTopic(t, c.Bootstrap)
	var acq []time.Duration
	for i := 0; i < n; i++ {
		role := core.MustRole(uniq("bench-acq-"))
		start := time.Now()
		l := acquire(t, cl, role, "m")
		acq = append(acq, time.Since(start))
		l.Close()
	}
	out = append(out, ms("acquire", "uncontended acquire (new role)", acq))

	role := core.MustRole(uniq("bench-"))
	l := acquire(t, cl, role, "m")
	var ren, prod, desc []time.Duration
	for i := 0; i < n; i++ {
		start := time.Now()
		if err := l.Renew(ctxFor(t, 10*time.Second)); err != nil {
			t.Fatal(err)
		}
		ren = append(ren, time.Since(start))
	}
	out = append(out, ms("renew", "renew", ren))
	for i := 0; i < n; i++ {
		start := time.Now()
		if _, err := l.Produce(ctxFor(t, 10*time.Second), coord.Message{Topic: topic, Partition: -1, Key: []byte(strconv.Itoa(i)), Value: []byte("cmd")}); err != nil {
			t.Fatal(err)
		}
		prod = append(prod, time.Since(start))
	}
	out = append(out, ms("produce", "guarded produce (1 record, one writer)", prod))
	for i := 0; i < n; i++ {
		start := time.Now()
		st, err := cl.Describe(ctxFor(t, 10*time.Second), role)
		if err != nil || !st.Current {
			t.Fatalf("%+v %v", st, err)
		}
		desc = append(desc, time.Since(start))
	}
	out = append(out, ms("describe-view", "describe (from the holder's live view)", desc))
	// One-shot: a client that follows nothing reads the partition to the
	// end each time.
	oneShot := newClient(t, c.Bootstrap, "krabka.lease.ms", "60000", "krabka.renew.interval.ms", "20000", "krabka.challenge.stagger.ms", "5000")
	var once []time.Duration
	for i := 0; i < n; i++ {
		start := time.Now()
		st, err := oneShot.Describe(ctxFor(t, 10*time.Second), role)
		if err != nil || !st.Current {
			t.Fatalf("%+v %v", st, err)
		}
		once = append(once, time.Since(start))
	}
	out = append(out, ms("describe-oneshot", "describe (one-shot read, no view)", once))
	l.Close()
	return out
}

// benchFailover: the holder stops renewing; the standby's first committed
// guarded write minus the deadline it waited for.
func benchFailover(t *testing.T, c *kafkatest.Cluster, n int) []perfdoc.Measure {
	if n == 0 {
		return nil
	}
	kv := []string{"krabka.lease.ms", "1000", "krabka.renew.interval.ms", "300", "krabka.challenge.stagger.ms", "300", "krabka.poll.interval.ms", "50"}
	ca, cb := newClient(t, c.Bootstrap, kv...), newClient(t, c.Bootstrap, kv...)
	topic, _ := dataTopic(t, c.Bootstrap)
	role := core.MustRole(uniq("bench-failover-"))
	holder := acquire(t, ca, role, "a")
	standby, standbyName := cb, "b"
	holderClient := ca
	var over []time.Duration
	for i := 0; i < n; i++ {
		ch := acquireAsync(ctxFor(t, 30*time.Second), standby, role, standbyName)
		time.Sleep(100 * time.Millisecond)
		deadline := holder.Lease().Deadline
		holder.Close() // stops renewing, no resign
		got := <-ch
		if got.err != nil {
			t.Fatal(got.err)
		}
		if _, err := got.l.Produce(ctxFor(t, 10*time.Second), coord.Message{Topic: topic, Partition: 0, Key: []byte("k"), Value: []byte("first")}); err != nil {
			t.Fatal(err)
		}
		over = append(over, time.Duration(time.Now().UnixMilli()-deadline)*time.Millisecond)
		holder = got.l
		if standbyName == "b" {
			standby, standbyName, holderClient = holderClient, "a", cb
		} else {
			standby, standbyName, holderClient = holderClient, "b", ca
		}
	}
	holder.Close()
	return []perfdoc.Measure{ms("failover", "crash failover overhead (lease 1 s)", over)}
}

// benchGroup: w writers on one leadership, each producing one command
// (200-byte value, 8-9 byte key) at a time to a one-partition topic for dur. Prints commands per
// second, the latency of each call and the distribution of transaction
// sizes (from the offsets: each commit marker takes one offset).
func benchGroup(t *testing.T, c *kafkatest.Cluster, w int, dur time.Duration) perfdoc.Measure {
	kv := []string{"request.timeout.ms", "30000", "krabka.lease.ms", "60000", "krabka.renew.interval.ms", "20000", "krabka.challenge.stagger.ms", "5000"}
	if v := os.Getenv("KRABKA_CLIENT_BENCH_LINGER_MS"); v != "" {
		kv = append(kv, "krabka.produce.group.linger.ms", v)
	}
	cl := newClient(t, c.Bootstrap, kv...)
	defer cl.Close()
	topic, _ := dataTopic(t, c.Bootstrap)
	l := acquire(t, cl, core.MustRole(uniq("bench-group-")), "m")
	defer l.Close()
	value := make([]byte, 200)
	for i := range value {
		value[i] = 'a' + byte(i%26)
	}
	// Warm-up: connections and the partition's metadata.
	if _, err := l.Produce(ctxFor(t, 10*time.Second), coord.Message{Topic: topic, Partition: 0, Key: []byte("warm-up"), Value: value}); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var lat []time.Duration
	var offsets []int64
	var wg sync.WaitGroup
	start := time.Now()
	stop := start.Add(dur)
	for i := 0; i < w; i++ {
		wg.Add(1)
		key := []byte(fmt.Sprintf("writer-%d", i)) // the topic is compacted: keys required
		go func() {
			defer wg.Done()
			var my []time.Duration
			var offs []int64
			for time.Now().Before(stop) {
				s := time.Now()
				res, err := l.Produce(ctxFor(t, 30*time.Second), coord.Message{Topic: topic, Partition: 0, Key: key, Value: value})
				if err != nil {
					t.Error(err)
					return
				}
				my = append(my, time.Since(s))
				offs = append(offs, res[0].Offset)
			}
			mu.Lock()
			lat = append(lat, my...)
			offsets = append(offsets, offs...)
			mu.Unlock()
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	if len(lat) == 0 {
		t.Fatal("no command committed")
	}
	sizes := txnSizes(offsets)
	sort.Ints(sizes)
	mean := float64(len(offsets)) / float64(len(sizes))
	perS := float64(len(lat)) / elapsed.Seconds()
	fmt.Printf("  group commit, %3d writers: %7.0f commands/s (%d in %v)\n", w, perS, len(lat), elapsed.Round(time.Millisecond))
	m := ms(fmt.Sprintf("group-%d", w), fmt.Sprintf("  guarded writes, %d writers on one leadership", w), lat)
	fmt.Printf("    transactions %d, commands per transaction: mean %.1f p10 %d p50 %d p90 %d max %d\n",
		len(sizes), mean, sizes[len(sizes)/10], sizes[len(sizes)/2], sizes[len(sizes)*9/10], sizes[len(sizes)-1])
	m.What = strings.TrimSpace(m.What)
	m.PerSecond = float64(int(perS*10+0.5)) / 10
	m.Extra = map[string]float64{"writers": float64(w), "seconds": elapsed.Seconds(), "transactions": float64(len(sizes)),
		"commands_per_txn_mean": float64(int(mean*10+0.5)) / 10, "commands_per_txn_p10": float64(sizes[len(sizes)/10]),
		"commands_per_txn_p50": float64(sizes[len(sizes)/2]), "commands_per_txn_p90": float64(sizes[len(sizes)*9/10]),
		"commands_per_txn_max": float64(sizes[len(sizes)-1])}
	return m
}
