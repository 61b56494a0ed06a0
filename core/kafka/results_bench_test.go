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

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

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

// kafkaInfo asks the cluster what it runs: brokers, the finalized
// transaction.version and the broker settings that decide durability.
func kafkaInfo(t *testing.T, c *kafkatest.Cluster) *perfdoc.Kafka {
	cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(c.Bootstrap, ",")...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	k := &perfdoc.Kafka{Version: kafkaVersion(), Settings: map[string]string{}}
	av, err := kmsg.NewPtrApiVersionsRequest().RequestWith(ctx, cl)
	if err != nil {
		t.Fatalf("ApiVersions: %v", err)
	}
	for _, f := range av.FinalizedFeatures {
		if f.Name == "transaction.version" {
			k.TransactionVersion = int(f.MaxVersionLevel)
		}
	}
	if k.TransactionVersion == 0 {
		k.TransactionVersion = 1
	}
	md, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl)
	if err != nil || len(md.Brokers) == 0 {
		t.Fatalf("Metadata: %v (%d brokers)", err, len(md.Brokers))
	}
	k.Nodes = len(md.Brokers)
	req := kmsg.NewPtrDescribeConfigsRequest()
	res := kmsg.NewDescribeConfigsRequestResource()
	res.ResourceType = kmsg.ConfigResourceTypeBroker
	res.ResourceName = strconv.Itoa(int(md.Brokers[0].NodeID))
	req.Resources = append(req.Resources, res)
	dc, err := req.RequestWith(ctx, cl)
	if err != nil || len(dc.Resources) != 1 {
		t.Fatalf("DescribeConfigs: %v", err)
	}
	want := map[string]*int{"default.replication.factor": &k.ReplicationFactor, "min.insync.replicas": &k.MinInsyncReplicas,
		"transaction.state.log.replication.factor": &k.TxnStateRF, "transaction.state.log.min.isr": &k.TxnStateMinISR}
	keep := []string{"offsets.topic.replication.factor", "num.network.threads", "num.io.threads", "log.flush.interval.messages", "unclean.leader.election.enable"}
	for _, e := range dc.Resources[0].Configs {
		if e.Value == nil {
			continue
		}
		if p, ok := want[e.Name]; ok {
			*p, _ = strconv.Atoi(*e.Value)
		}
		for _, kk := range keep {
			if e.Name == kk {
				k.Settings[kk] = *e.Value
			}
		}
	}
	return k
}

// kafkaVersion: the version of the Kafka jars cluster.sh runs
// (tests/kafka/lib/kafka_2.13-V.jar).
func kafkaVersion() string {
	m, _ := filepath.Glob(filepath.Join(filepath.Dir(kafkatest.ScriptPath()), "lib", "kafka_2.*-*.jar"))
	if len(m) != 1 {
		return "unknown"
	}
	b := strings.TrimSuffix(filepath.Base(m[0]), ".jar")
	return b[strings.LastIndexByte(b, '-')+1:]
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
