//go:build bench

package kafka_test

import (
	"fmt"
	"sort"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/krabka/krabka-coord/core"
	"github.com/krabka/krabka-coord/core/coord"
	"github.com/krabka/krabka-coord/core/kafka"
	"github.com/krabka/krabka-coord/internal/perfdoc"
	"github.com/krabka/krabka-coord/tests/kafka/kafkatest"
)

// TestPipelineBench measures guarded writes per second with consumed offsets
// carried (Leadership.ProduceOffsets) beside the same writes without
// (Produce), with 1, 64 and 256 writers on one leadership (issue 38), on
// each cluster of KRABKA_PIPELINE_BENCH_CLUSTERS (default "1n-tv2,1n-tv1"),
// KRABKA_PIPELINE_BENCH_SECONDS (default 5) per measure
// (KRABKA_PIPELINE_BENCH_WRITERS: other writer counts). Writer i owns input
// partition i of a topic of as many partitions (filled before, read into
// memory before the clock starts) and commits, with each command, the
// offset after the request it answers.
//
// Besides the library's form of the offsets steps ("offsets-N"), the same
// writes run in the other forms (pipeline.go, WithOffsetsForm), one after
// the other on the same cluster: "classic-N" (AddOffsetsToTxn and
// TxnOffsetCommit version 4, before the records; on a transaction.version
// 1 cluster that is the library's form and is not measured twice) and
// "overlap-N" (the library's form with TxnOffsetCommit beside the produce).
// Every measure records its transactions: the producer's requests are
// traced (WithRequestTrace) and counted during the measure
// (transactions_per_s, calls_per_transaction, per request name its count
// per transaction and mean round trip).
//
// Writes one results file per cluster
// (pipeline-<cluster>-<date>-<commit>.json). Builds only with -tags bench
// (make pipeline-bench).
func TestPipelineBench(t *testing.T) {
	dur := time.Duration(envInt("KRABKA_PIPELINE_BENCH_SECONDS", 5)) * time.Second
	for _, o := range benchClusters(t, "KRABKA_PIPELINE_BENCH_CLUSTERS", "1n-tv2,1n-tv1") {
		c := kafkatest.Start(t, o)
		f := perfdoc.NewFile("pipeline")
		f.Kafka = kafkaInfo(t, c)
		f.Settings = map[string]string{"seconds": strconv.Itoa(int(dur / time.Second)),
			"setup": "one leadership (lease 60 s), one-partition command topic, 200-byte value, one command per call; offsets: writer i commits input partition i, one offset per call",
			"forms": "offsets: the library's form (transaction.version 2: TxnOffsetCommit v5 without AddOffsetsToTxn; 1: AddOffsetsToTxn + TxnOffsetCommit v4), before the records; classic: AddOffsetsToTxn + TxnOffsetCommit v4 before the records; overlap: the library's form with TxnOffsetCommit beside the produce"}
		tv2 := f.Kafka.TransactionVersion >= 2
		fmt.Printf("pipeline bench: %s at %s, %v per measure, load %v\n", f.Kafka.Label(), c.Bootstrap, dur, f.LoadBefore)
		for _, w := range writerCounts("KRABKA_PIPELINE_BENCH_WRITERS", []int{1, 64, 256}) {
			// Enough requests per partition for the writer's calls of one
			// measure (a writer that runs out stops early: "exhausted").
			per := 300000 / w
			if w == 1 {
				per = 5000
			}
			forms := []benchForm{{name: "plain"}, {name: "offsets", offsets: true}}
			if tv2 {
				forms = append(forms, benchForm{name: "classic", offsets: true, classic: true})
			}
			forms = append(forms, benchForm{name: "overlap", offsets: true, overlap: true})
			var plain perfdoc.Measure
			line := fmt.Sprintf("  %3d writers:", w)
			for _, bf := range forms {
				in := ""
				if bf.offsets {
					// A topic of its own per measure: each starts at
					// offset 0 with all its requests unread.
					in = requestTopic(t, c.Bootstrap, int32(w), per*w)
				}
				m := benchPipeline(t, c, w, dur, in, bf)
				if bf.name == "plain" {
					plain = m
				} else {
					ratio := m.PerSecond / plain.PerSecond
					m.Extra["ratio_to_plain"] = float64(int(ratio*1000+0.5)) / 1000
				}
				line += fmt.Sprintf(" %s %.0f/s (%.1f txn/s, %.1f calls/txn);", bf.name, m.PerSecond, m.Extra["transactions_per_s"], m.Extra["calls_per_transaction"])
				f.Measures = append(f.Measures, m)
			}
			fmt.Println(line)
		}
		writeResults(t, f)
	}
}

// benchForm is one measure's kind of write: plain guarded writes, or
// ProduceOffsets in a form of the offsets steps.
type benchForm struct {
	name                      string
	offsets, classic, overlap bool
}

// benchPipeline runs w writers for dur on one new leadership: plain guarded
// writes when in is "", else ProduceOffsets committing partition i of in
// with writer i's commands, in bf's form.
func benchPipeline(t *testing.T, c *kafkatest.Cluster, w int, dur time.Duration, in string, bf benchForm) perfdoc.Measure {
	// The ledger: the requests of the measure, by name (the producer's, and
	// the admin client's TxnOffsetCommit of the classic form).
	var (
		ledgerMu sync.Mutex
		counting bool
		reqs     = map[string]int{}
		rtt      = map[string]time.Duration{}
	)
	trace := kafka.WithRequestTrace(func(r kafka.RequestTrace) {
		if r.Client != "producer" && r.Key != "TxnOffsetCommit" {
			return
		}
		ledgerMu.Lock()
		if counting {
			reqs[r.Key]++
			rtt[r.Key] += r.End.Sub(r.Start)
		}
		ledgerMu.Unlock()
	})
	cl, err := kafka.NewClient(testConfig(t, c.Bootstrap, "request.timeout.ms", "30000", "krabka.lease.ms", "60000", "krabka.renew.interval.ms", "20000", "krabka.challenge.stagger.ms", "5000"),
		trace, kafka.WithOffsetsForm(bf.classic, bf.overlap))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	topic, _ := dataTopic(t, c.Bootstrap)
	l := acquire(t, cl, core.MustRole(uniq("bench-pipe-")), "m")
	defer l.Close()
	value := make([]byte, 200)
	for i := range value {
		value[i] = 'a' + byte(i%26)
	}
	offs := make([][]int64, w) // writer i: the offsets of its partition's requests
	if in != "" {
		input, err := l.Consume(ctxFor(t, 30*time.Second), in)
		if err != nil {
			t.Fatal(err)
		}
		total := 0
		for _, o := range endOffsets(t, c.Bootstrap, in) {
			total += int(o.Offset)
		}
		for _, r := range pollN(t, input, total) {
			offs[r.Partition] = append(offs[r.Partition], r.Offset)
		}
		input.Close()
	}
	if _, err := l.Produce(ctxFor(t, 10*time.Second), coord.Message{Topic: topic, Partition: 0, Key: []byte("warm-up"), Value: value}); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var lat []time.Duration
	exhausted := 0
	var wg sync.WaitGroup
	ledgerMu.Lock()
	counting = true
	ledgerMu.Unlock()
	start := time.Now()
	stop := start.Add(dur)
	for i := 0; i < w; i++ {
		wg.Add(1)
		key := []byte(fmt.Sprintf("writer-%d", i))
		go func() {
			defer wg.Done()
			var my []time.Duration
			out := false
			for k := 0; time.Now().Before(stop); k++ {
				msg := coord.Message{Topic: topic, Partition: 0, Key: key, Value: value}
				s := time.Now()
				var err error
				if in == "" {
					_, err = l.Produce(ctxFor(t, 30*time.Second), msg)
				} else {
					if k >= len(offs[i]) {
						out = true
						break
					}
					_, err = l.ProduceOffsets(ctxFor(t, 30*time.Second), []coord.Offset{{Topic: in, Partition: int32(i), Offset: offs[i][k] + 1}}, msg)
				}
				if err != nil {
					t.Error(err)
					return
				}
				my = append(my, time.Since(s))
			}
			mu.Lock()
			lat = append(lat, my...)
			if out {
				exhausted++
			}
			mu.Unlock()
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	ledgerMu.Lock()
	counting = false
	ledgerMu.Unlock()
	if len(lat) == 0 {
		t.Fatal("no command committed")
	}
	what := fmt.Sprintf("guarded writes, %d writers, no offsets", w)
	if in != "" {
		what = fmt.Sprintf("guarded writes carrying consumed offsets (%s), %d writers", bf.name, w)
	}
	perS := float64(len(lat)) / elapsed.Seconds()
	m := ms(fmt.Sprintf("%s-%d", bf.name, w), what, lat)
	m.PerSecond = float64(int(perS*10+0.5)) / 10
	m.Extra = map[string]float64{"writers": float64(w), "seconds": elapsed.Seconds(), "exhausted_writers": float64(exhausted)}
	ledgerMu.Lock()
	defer ledgerMu.Unlock()
	if txns := reqs["EndTxn"]; txns > 0 {
		round := func(v float64) float64 { return float64(int(v*100+0.5)) / 100 }
		m.Extra["transactions_per_s"] = round(float64(txns) / elapsed.Seconds())
		m.Extra["calls_per_transaction"] = round(float64(len(lat)) / float64(txns))
		for k, n := range reqs {
			m.Extra[k+"_per_transaction"] = round(float64(n) / float64(txns))
			m.Extra[k+"_mean_ms"] = round(float64(rtt[k]) / float64(n) / 1e6)
		}
	}
	return m
}

// endOffsets lists the end offsets of topic's partitions, sorted.
func endOffsets(t *testing.T, bootstrap, topic string) []coord.Offset {
	adm := adminFor(t, bootstrap)
	ends, err := adm.ListEndOffsets(ctxFor(t, 30*time.Second), topic)
	if err == nil {
		err = ends.Error()
	}
	if err != nil {
		t.Fatal(err)
	}
	var out []coord.Offset
	for _, o := range ends[topic] {
		out = append(out, coord.Offset{Topic: topic, Partition: o.Partition, Offset: o.Offset})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Partition < out[j].Partition })
	return out
}
