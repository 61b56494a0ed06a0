package perfdoc

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// AskKafka asks the cluster at bootstrap what it runs: brokers, the
// finalized transaction.version and the broker settings that decide
// durability. version is the Kafka version of the jars that run it
// (KafkaVersion).
func AskKafka(ctx context.Context, bootstrap []string, version string) (*Kafka, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(bootstrap...))
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	k := &Kafka{Version: version, Settings: map[string]string{}}
	av, err := kmsg.NewPtrApiVersionsRequest().RequestWith(ctx, cl)
	if err != nil {
		return nil, fmt.Errorf("ApiVersions: %w", err)
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
		return nil, fmt.Errorf("Metadata: %v (%d brokers)", err, len(md.Brokers))
	}
	k.Nodes = len(md.Brokers)
	req := kmsg.NewPtrDescribeConfigsRequest()
	res := kmsg.NewDescribeConfigsRequestResource()
	res.ResourceType = kmsg.ConfigResourceTypeBroker
	res.ResourceName = strconv.Itoa(int(md.Brokers[0].NodeID))
	req.Resources = append(req.Resources, res)
	dc, err := req.RequestWith(ctx, cl)
	if err != nil || len(dc.Resources) != 1 {
		return nil, fmt.Errorf("DescribeConfigs: %v", err)
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
	return k, nil
}

// KafkaVersion is the version of the Kafka jars that cluster.sh runs, read
// from the name of libDir's kafka_2.13-V.jar (tests/kafka/lib).
func KafkaVersion(libDir string) string {
	m, _ := filepath.Glob(filepath.Join(libDir, "kafka_2.*-*.jar"))
	if len(m) != 1 {
		return "unknown"
	}
	b := strings.TrimSuffix(filepath.Base(m[0]), ".jar")
	return b[strings.LastIndexByte(b, '-')+1:]
}
