package coord_test

import (
	"context"
	"errors"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/krabka/krabka-coord/core"
	"github.com/krabka/krabka-coord/core/coord"
)

func TestConfigDefaults(t *testing.T) {
	c := coord.DefaultConfig()
	if c.Lease != core.DefaultLeaseConfig() || c.Topic != coord.DefaultTopic || c.TopicPartitions != 16 ||
		c.TopicReplication != -1 || c.SecurityProtocol != "PLAINTEXT" || c.RequestTimeout.Milliseconds() != 30000 ||
		c.PollInterval.Milliseconds() != 1000 || c.BackgroundRenew || c.ClientID != "krabka-coord" {
		t.Fatalf("%+v", c)
	}
	for _, k := range coord.ConfigKeys() {
		got, err := c.Get(k.Name)
		want := k.Default
		if v, ok := os.LookupEnv(coord.EngineEnv); ok && k.Name == "krabka.engine" {
			want = strings.ToLower(strings.TrimSpace(v)) // the environment's default (the engine suites set it)
		}
		if err != nil || got != want {
			t.Errorf("%s: get %q (%v), table default %q", k.Name, got, err, k.Default)
		}
	}
}

func TestConfigSetGetRoundTrip(t *testing.T) {
	c := coord.DefaultConfig()
	cases := map[string]string{
		"bootstrap.servers": "a:1,b:2", "client.id": "x", "security.protocol": "SASL_SSL",
		"sasl.mechanism": "SCRAM-SHA-512", "sasl.username": "u", "ssl.ca.location": "/ca.pem",
		"request.timeout.ms": "1234", "krabka.lease.ms": "9000", "krabka.renew.interval.ms": "3000",
		"krabka.challenge.stagger.ms": "700", "krabka.poll.interval.ms": "50", "krabka.role.prefix": "env1.",
		"krabka.topic": "coord_x", "krabka.topic.partitions": "3", "krabka.topic.replication": "2",
		"krabka.renew.background": "true", "ssl.certificate.location": "/c.pem", "ssl.key.location": "/k.pem",
		"krabka.log.level": "debug", "krabka.debug": "true",
		"krabka.produce.group.max.messages": "64",
		"krabka.produce.group.max.bytes":    "65536", "krabka.produce.group.linger.ms": "0", "krabka.leave.on.close": "false",
		"krabka.produce.token.header": "false", "krabka.lease.risk.margin.ms": "2500",
		"krabka.txn.timeout.ms": "4000", "krabka.lease.stop.margin.ms": "1200",
		"krabka.elector.ride.outage": "true", "krabka.engine": "client",
	}
	for k, v := range cases {
		if err := c.Set(k, v); err != nil {
			t.Fatalf("%s: %v", k, err)
		}
		if got, _ := c.Get(k); got != v {
			t.Errorf("%s: got %q want %q", k, got, v)
		}
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if err := c.Set("sasl.password", "hunter2"); err != nil {
		t.Fatal(err)
	}
	if got, _ := c.Get("sasl.password"); got != "[redacted]" || c.SASLPassword != "hunter2" {
		t.Fatalf("password reads back %q", got)
	}
	if err := c.Set("ssl.key.password", "pw"); err != nil {
		t.Fatal(err)
	}
	if got, _ := c.Get("ssl.key.password"); got != "[redacted]" || c.SSLKeyPassword != "pw" {
		t.Fatalf("key password reads back %q", got)
	}
	if len(coord.ConfigKeys()) != len(cases)+2 {
		t.Fatalf("table has %d keys, test covers %d", len(coord.ConfigKeys()), len(cases)+2)
	}
}

// TestConfigEngineFromEnvironment: KRABKA_ENGINE replaces the default of
// krabka.engine, and a bad value there is refused by Validate with an error
// naming the key and the variable.
func TestConfigEngineFromEnvironment(t *testing.T) {
	if c := coord.DefaultConfig(); c.Engine != "shared" && os.Getenv(coord.EngineEnv) == "" {
		t.Fatalf("default engine %q, want shared", c.Engine)
	}
	t.Setenv(coord.EngineEnv, " Client ")
	c := coord.DefaultConfig()
	if c.Engine != "client" {
		t.Fatalf("engine %q from %s= Client ", c.Engine, coord.EngineEnv)
	}
	t.Setenv(coord.EngineEnv, "turbo")
	c = coord.DefaultConfig()
	c.BootstrapServers = []string{"localhost:9092"}
	err := c.Validate()
	if !errors.Is(err, coord.ErrInvalidConfig) || !strings.Contains(err.Error(), "krabka.engine") || !strings.Contains(err.Error(), coord.EngineEnv) {
		t.Fatalf("bad engine from the environment: %v", err)
	}
	if err := c.Set("krabka.engine", "shared"); err != nil || c.Validate() != nil {
		t.Fatalf("set shared: %v", err)
	}
}

func TestConfigErrorsNameTheKey(t *testing.T) {
	c := coord.DefaultConfig()
	err := c.Set("no.such.key", "1")
	if !errors.Is(err, coord.ErrUnknownConfig) || !strings.Contains(err.Error(), "no.such.key") {
		t.Fatalf("unknown: %v", err)
	}
	if _, err := c.Get("nope"); !errors.Is(err, coord.ErrUnknownConfig) {
		t.Fatal(err)
	}
	bad := [][2]string{
		{"bootstrap.servers", ""}, {"bootstrap.servers", "nohost"}, {"bootstrap.servers", "h:0"},
		{"security.protocol", "TLS"}, {"sasl.mechanism", "GSSAPI"}, {"request.timeout.ms", "0"},
		{"krabka.lease.ms", "-5"}, {"krabka.lease.ms", "1.5"}, {"krabka.renew.interval.ms", "x"},
		{"krabka.challenge.stagger.ms", "0"}, {"krabka.poll.interval.ms", ""}, {"krabka.topic", "a b"},
		{"krabka.topic.partitions", "0"}, {"krabka.topic.replication", "0"}, {"krabka.renew.background", "yes"},
		{"krabka.produce.group.max.messages", "0"}, {"krabka.produce.group.max.bytes", "2147483648"},
		{"krabka.produce.group.linger.ms", "-1"},
		{"krabka.txn.timeout.ms", "0"}, {"krabka.txn.timeout.ms", "-1000"}, {"krabka.txn.timeout.ms", "10s"},
		{"krabka.txn.timeout.ms", "2147483648"},
		// Issue 16.5: what can never work is refused at Set, naming the value.
		{"request.timeout.ms", "9223372036854775807"}, {"request.timeout.ms", "2147483648"},
		{"krabka.lease.ms", "9223372036854775807"}, {"krabka.lease.ms", "2147483648"},
		{"krabka.poll.interval.ms", "9223372036854775807"},
		{"krabka.role.prefix", "env\xff."}, {"krabka.role.prefix", strings.Repeat("p", 249)},
		{"krabka.topic", "__consumer_offsets"}, {"krabka.topic", "__transaction_state"},
		{"krabka.topic", "__cluster_metadata"},
	}
	for _, kv := range bad {
		err := c.Set(kv[0], kv[1])
		if !errors.Is(err, coord.ErrInvalidConfig) || !strings.Contains(err.Error(), kv[0]) {
			t.Errorf("%s=%q: %v", kv[0], kv[1], err)
		}
		if len(kv[1]) > 8 && len(kv[1]) < 40 && strings.ToValidUTF8(kv[1], "") == kv[1] && !strings.Contains(err.Error(), kv[1]) {
			t.Errorf("%s=%q: the message does not quote the value: %v", kv[0], kv[1], err)
		}
	}
	_, err = coord.ConfigFromMap(map[string]string{"bootstrap.servers": "h:1", "krabka.lease.ms": "1000", "krabka.renew.interval.ms": "1000"})
	if !errors.Is(err, coord.ErrInvalidConfig) || !strings.Contains(err.Error(), "krabka.renew.interval.ms") {
		t.Fatalf("renew >= lease: %v", err)
	}
	_, err = coord.ConfigFromMap(map[string]string{"bootstrap.servers": "h:1", "security.protocol": "SASL_PLAINTEXT"})
	if !errors.Is(err, coord.ErrInvalidConfig) || !strings.Contains(err.Error(), "sasl.username") {
		t.Fatalf("sasl without user: %v", err)
	}
	_, err = coord.ConfigFromMap(map[string]string{"bootstrap.servers": "h:1", "ssl.certificate.location": "/c.pem"})
	if !errors.Is(err, coord.ErrInvalidConfig) || !strings.Contains(err.Error(), "ssl.key.location") {
		t.Fatalf("certificate without key: %v", err)
	}
	// The test-only clock hook: settable, hidden from the documented table.
	if err := c.Set("krabka.test.clock.offset.ms", "-4000"); err != nil || c.TestClockOffsetMs != -4000 {
		t.Fatalf("clock offset: %v %d", err, c.TestClockOffsetMs)
	}
	if err := c.Set("krabka.test.clock.offset.ms", "soon"); !errors.Is(err, coord.ErrInvalidConfig) {
		t.Fatalf("clock offset: %v", err)
	}
	for _, k := range coord.ConfigKeys() {
		if strings.HasPrefix(k.Name, "krabka.test.") {
			t.Fatalf("test-only key %s is in the documented table", k.Name)
		}
	}
	if _, err := coord.ConfigFromMap(map[string]string{"bootstrap.servers": "h:1"}); err != nil {
		t.Fatal(err)
	}
	// The largest values that can work are accepted.
	for _, kv := range [][2]string{{"request.timeout.ms", "2147483647"}, {"krabka.lease.ms", "2147483647"}, {"krabka.txn.timeout.ms", "2147483647"},
		{"krabka.role.prefix", strings.Repeat("p", 248)}, {"krabka.role.prefix", "zürich."}, {"krabka.topic", "__coordination_state"}} {
		if err := c.Set(kv[0], kv[1]); err != nil {
			t.Errorf("%s=%q: %v", kv[0], kv[1], err)
		}
	}
}

// Issue 34: lease transactions carry krabka.txn.timeout.ms (10 s by
// default), capped at the lease, not the lease itself.
func TestConfigTxnTimeoutDefaultParseAndCap(t *testing.T) {
	c := coord.DefaultConfig()
	if c.TxnTimeout != 10*time.Second || c.LeaseTxnTimeout() != 10*time.Second {
		t.Fatalf("default: field %v, effective %v, want 10s", c.TxnTimeout, c.LeaseTxnTimeout())
	}
	if err := c.Set("krabka.txn.timeout.ms", "2500"); err != nil || c.TxnTimeout != 2500*time.Millisecond || c.LeaseTxnTimeout() != 2500*time.Millisecond {
		t.Fatalf("set 2500: %v %v %v", err, c.TxnTimeout, c.LeaseTxnTimeout())
	}
	// Never more than the lease: the default under a short lease, and a
	// value set above the lease, are the lease, and neither is an error.
	c = coord.DefaultConfig()
	for _, kv := range [][2]string{{"bootstrap.servers", "h:1"}, {"krabka.lease.ms", "3000"}, {"krabka.renew.interval.ms", "1000"}} {
		if err := c.Set(kv[0], kv[1]); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Validate(); err != nil || c.LeaseTxnTimeout() != 3*time.Second {
		t.Fatalf("default under a 3 s lease: %v, effective %v, want 3s", err, c.LeaseTxnTimeout())
	}
	if err := c.Set("krabka.txn.timeout.ms", "60000"); err != nil {
		t.Fatal(err)
	}
	if got, _ := c.Get("krabka.txn.timeout.ms"); got != "60000" || c.Validate() != nil || c.LeaseTxnTimeout() != 3*time.Second {
		t.Fatalf("60000 under a 3 s lease: reads %q, validate %v, effective %v", got, c.Validate(), c.LeaseTxnTimeout())
	}
	// Validate refuses a field filled directly with no positive number of
	// milliseconds, naming the key.
	for _, d := range []time.Duration{0, -time.Second, 500 * time.Microsecond} {
		c.TxnTimeout = d
		if err := c.Validate(); !errors.Is(err, coord.ErrInvalidConfig) || !strings.Contains(err.Error(), "krabka.txn.timeout.ms") {
			t.Errorf("TxnTimeout %v: %v", d, err)
		}
	}
}

// timeoutRecorder records the transaction timeout of every Mint and Prepare.
type timeoutRecorder struct {
	coord.Transport
	mu               sync.Mutex
	minted, prepared []time.Duration
}

func (r *timeoutRecorder) Mint(ctx context.Context, id string, d time.Duration) (coord.TxnProducer, error) {
	r.mu.Lock()
	r.minted = append(r.minted, d)
	r.mu.Unlock()
	return r.Transport.Mint(ctx, id, d)
}

func (r *timeoutRecorder) Prepare(id string, d time.Duration) {
	r.mu.Lock()
	r.prepared = append(r.prepared, d)
	r.mu.Unlock()
}

func (r *timeoutRecorder) Unprepare(string) {}

func TestLeaseTransactionsCarryTheTxnTimeout(t *testing.T) {
	for _, c := range []struct {
		name string
		kv   []string
		want time.Duration
	}{
		{"default", nil, 10 * time.Second},
		{"set", []string{"krabka.txn.timeout.ms", "2500"}, 2500 * time.Millisecond},
		{"capped at the lease", []string{"krabka.lease.ms", "6000", "krabka.renew.interval.ms", "2000", "krabka.challenge.stagger.ms", "1000"}, 6 * time.Second},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t)
			cfg := e.config(c.kv...)
			rec := &timeoutRecorder{Transport: e.cluster.Transport(cfg.Topic)}
			cl, err := coord.NewClient(cfg, rec, e.clock)
			if err != nil {
				t.Fatal(err)
			}
			defer cl.Close()
			if _, err := cl.Acquire(bg(), role, ma); err != nil { // Prepare, then Mint
				t.Fatal(err)
			}
			if _, err := cl.Fence(bg(), role, "config_test", nil); err != nil { // Mint
				t.Fatal(err)
			}
			rec.mu.Lock()
			defer rec.mu.Unlock()
			if len(rec.prepared) != 1 || rec.prepared[0] != c.want {
				t.Errorf("Prepare got %v, want [%v]", rec.prepared, c.want)
			}
			if len(rec.minted) != 2 || rec.minted[0] != c.want || rec.minted[1] != c.want {
				t.Errorf("Mint got %v, want [%v %v] (acquire, fence)", rec.minted, c.want, c.want)
			}
		})
	}
}
