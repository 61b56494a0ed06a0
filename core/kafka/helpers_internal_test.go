package kafka

import (
	"crypto/rand"
	"encoding/hex"
	"sync"
	"testing"

	"github.com/krabka/krabka-coord/core/coord"
	"github.com/krabka/krabka-coord/tests/kafka/kafkatest"
)

// internalConfig is a configuration for an internal test on cluster c:
// a coordination topic of its own (prefix and a random id, which is
// returned too) and the settings kv (key, value, ...).
func internalConfig(t *testing.T, c *kafkatest.Cluster, prefix string, kv ...string) (coord.Config, string) {
	t.Helper()
	var b [5]byte
	_, _ = rand.Read(b[:])
	id := hex.EncodeToString(b[:])
	cfg := coord.DefaultConfig()
	kv = append([]string{"bootstrap.servers", c.Bootstrap, "krabka.topic", prefix + id}, kv...)
	for i := 0; i+1 < len(kv); i += 2 {
		if err := cfg.Set(kv[i], kv[i+1]); err != nil {
			t.Fatal(err)
		}
	}
	return cfg, id
}

// tracedTransport is a Transport on cfg that records every Kafka request
// it sends; the function returns a copy of the records so far.
func tracedTransport(t *testing.T, cfg coord.Config) (*Transport, func() []RequestTrace) {
	t.Helper()
	var (
		mu   sync.Mutex
		reqs []RequestTrace
	)
	tr, err := New(cfg, WithRequestTrace(func(r RequestTrace) {
		mu.Lock()
		reqs = append(reqs, r)
		mu.Unlock()
	}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tr.Close() })
	return tr, func() []RequestTrace {
		mu.Lock()
		defer mu.Unlock()
		return append([]RequestTrace(nil), reqs...)
	}
}
