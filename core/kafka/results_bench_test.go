//go:build bench

package kafka_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/krabka/krabka-coord/internal/perfdoc"
	"github.com/krabka/krabka-coord/tests/kafka/kafkatest"
)

// Results files (bench/README.md): every bench run writes one per cluster
// into KRABKA_BENCH_RESULTS (default: the repository's bench/results).

// benchClusters parses a list such as "1n-tv2,1n-tv1,3n-tv2" (the default
// def) from the variable name.
func benchClusters(t *testing.T, name, def string) []kafkatest.Options {
	v := os.Getenv(name)
	if v == "" {
		v = def
	}
	var out []kafkatest.Options
	re := regexp.MustCompile(`^([13])n-tv([12])$`)
	for _, f := range strings.Split(v, ",") {
		m := re.FindStringSubmatch(strings.TrimSpace(f))
		if m == nil {
			t.Fatalf("%s: %q is not a cluster (1n-tv2, 1n-tv1, 3n-tv2, 3n-tv1)", name, f)
		}
		nodes, _ := strconv.Atoi(m[1])
		tv, _ := strconv.Atoi(m[2])
		out = append(out, kafkatest.Options{Nodes: nodes, TxnVersion: tv})
	}
	return out
}

func resultsDir() string {
	if d := os.Getenv("KRABKA_BENCH_RESULTS"); d != "" {
		return d
	}
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "bench", "results")
}

// kafkaInfo asks the cluster what it runs (perfdoc.AskKafka).
func kafkaInfo(t *testing.T, c *kafkatest.Cluster) *perfdoc.Kafka {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	k, err := perfdoc.AskKafka(ctx, strings.Split(c.Bootstrap, ","), perfdoc.KafkaVersion(filepath.Join(filepath.Dir(kafkatest.ScriptPath()), "lib")))
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// writeResults finishes f (load after) and writes it, printing the path.
func writeResults(t *testing.T, f *perfdoc.File) {
	p, err := f.Finish(resultsDir(), f.Kafka.Label())
	if err != nil {
		t.Fatalf("writing results: %v", err)
	}
	fmt.Printf("results file: %s\n", p)
}

// ms summarizes durations in milliseconds and prints the usual line.
func ms(name, what string, d []time.Duration) perfdoc.Measure {
	report(what, d)
	return perfdoc.Summarize(name, what, "ms", perfdoc.Durations(d, "ms"))
}
