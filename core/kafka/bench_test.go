package kafka_test

import (
	"fmt"
	"os"
	"sort"
	"strconv"
	"testing"
	"time"

	"github.com/krabka/krabka-coord/core"
	"github.com/krabka/krabka-coord/core/coord"
	"github.com/krabka/krabka-coord/tests/kafka/kafkatest"
)

// TestClientBench measures client latencies on the local single-node broker
// and prints p50/p99. It runs only with KRABKA_CLIENT_BENCH=1 (make
// client-bench); KRABKA_CLIENT_BENCH_N sets the operations per measure
// (default 200) and KRABKA_CLIENT_BENCH_FAILOVERS the failovers (default 20).
func TestClientBench(t *testing.T) {
	if os.Getenv("KRABKA_CLIENT_BENCH") != "1" {
		t.Skip("set KRABKA_CLIENT_BENCH=1 (make client-bench)")
	}
	n := envInt("KRABKA_CLIENT_BENCH_N", 200)
	failovers := envInt("KRABKA_CLIENT_BENCH_FAILOVERS", 20)
	for _, tv := range []int{2, 1} {
		c := kafkatest.Start(t, kafkatest.Options{TxnVersion: tv})
		fmt.Printf("client bench: transaction.version=%d, single local broker %s, %d ops per measure\n", tv, c.Bootstrap, n)
		benchOps(t, c, n)
		benchFailover(t, c, failovers)
	}
}

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

func report(name string, d []time.Duration) {
	sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
	pct := func(p float64) time.Duration { return d[int(p*float64(len(d)-1)+0.5)] }
	fmt.Printf("  %-34s n=%-4d p50=%-10v p99=%-10v max=%v\n", name, len(d),
		pct(0.50).Round(10*time.Microsecond), pct(0.99).Round(10*time.Microsecond), d[len(d)-1].Round(10*time.Microsecond))
}

func benchOps(t *testing.T, c *kafkatest.Cluster, n int) {
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
	report("uncontended acquire (new role)", acq)

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
	report("renew", ren)
	for i := 0; i < n; i++ {
		start := time.Now()
		if _, err := l.Produce(ctxFor(t, 10*time.Second), coord.Message{Topic: topic, Partition: -1, Key: []byte(strconv.Itoa(i)), Value: []byte("cmd")}); err != nil {
			t.Fatal(err)
		}
		prod = append(prod, time.Since(start))
	}
	report("guarded produce (1 record)", prod)
	for i := 0; i < n; i++ {
		start := time.Now()
		st, err := cl.Describe(ctxFor(t, 10*time.Second), role)
		if err != nil || !st.Current {
			t.Fatalf("%+v %v", st, err)
		}
		desc = append(desc, time.Since(start))
	}
	report("describe", desc)
	l.Close()
}

// benchFailover: the holder stops renewing; the standby's first committed
// guarded write minus the deadline it waited for.
func benchFailover(t *testing.T, c *kafkatest.Cluster, n int) {
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
	report("failover overhead (lease 1 s)", over)
}
