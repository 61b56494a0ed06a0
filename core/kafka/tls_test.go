package kafka_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/krabka/krabka-coord/core"
	"github.com/krabka/krabka-coord/core/coord"
	"github.com/krabka/krabka-coord/core/kafka"
	"github.com/krabka/krabka-coord/tests/kafka/kafkatest"
)

// tlsCluster is the SASL cluster with its TLS listeners (cluster.sh --tls).
func tlsCluster(t *testing.T) *kafkatest.Cluster {
	t.Helper()
	c := kafkatest.Start(t, kafkatest.Options{SASL: true})
	if c.TLSBootstrap == "" || c.MTLSBootstrap == "" || c.SASLSSLBootstrap == "" || c.CertDir == "" {
		t.Fatalf("kafkatest: the SASL cluster has no TLS listeners (set KRABKA_TLS_* or let the test start it): %+v", c)
	}
	return c
}

func cert(c *kafkatest.Cluster, name string) string { return filepath.Join(c.CertDir, name) }

func keyPassword(t *testing.T, c *kafkatest.Cluster) string {
	t.Helper()
	b, err := os.ReadFile(cert(c, "client.password"))
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

// The whole cycle (acquire, renew, guarded write, describe, takeover with
// fencing) over SSL with ssl.ca.location, over SASL_SSL, and over an SSL
// listener that requires a client certificate (mutual TLS with an
// encrypted key).
func TestTLSListenersRunTheProtocol(t *testing.T) {
	c := tlsCluster(t)
	cases := []struct {
		name string
		kv   []string
		boot string
	}{
		{"SSL", []string{"security.protocol", "SSL", "ssl.ca.location", cert(c, "ca.pem")}, c.TLSBootstrap},
		{"SASL_SSL", []string{"security.protocol", "SASL_SSL", "ssl.ca.location", cert(c, "ca.pem"),
			"sasl.mechanism", "SCRAM-SHA-256", "sasl.username", "alice", "sasl.password", "alice-secret",
			"krabka.role.prefix", "alice."}, c.SASLSSLBootstrap},
		{"mTLS", []string{"security.protocol", "SSL", "ssl.ca.location", cert(c, "ca.pem"),
			"ssl.certificate.location", cert(c, "client.pem"), "ssl.key.location", cert(c, "client.key"),
			"ssl.key.password", keyPassword(t, c)}, c.MTLSBootstrap},
		{"mTLS-plain-key", []string{"security.protocol", "SSL", "ssl.ca.location", cert(c, "ca.pem"),
			"ssl.certificate.location", cert(c, "client.pem"), "ssl.key.location", cert(c, "client-plain.key")}, c.MTLSBootstrap},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			role := core.MustRole(uniq("it-tls-"))
			a := newClient(t, tc.boot, tc.kv...)
			b := newClient(t, tc.boot, tc.kv...)
			la := acquire(t, a, role, "tls-a")
			if err := la.Renew(ctxFor(t, 10*time.Second)); err != nil {
				t.Fatalf("renew: %v", err)
			}
			topic := aliceTopic(t, c)
			if _, err := la.Produce(ctxFor(t, 10*time.Second), coord.Message{Topic: topic, Partition: 0, Value: []byte("x"), Key: []byte("k")}); err != nil {
				t.Fatalf("guarded write: %v", err)
			}
			st, err := b.Describe(ctxFor(t, 10*time.Second), role)
			if err != nil || !st.Current || st.Holder.String() != "tls-a" || st.Token != la.Token() {
				t.Fatalf("describe: %+v %v", st, err)
			}
			// Takeover: a fresh acquire by the same member mints a new epoch;
			// the old leadership's next write is fenced by the broker.
			lb := acquire(t, b, role, "tls-a")
			if !lb.Token().Supersedes(la.Token()) {
				t.Fatalf("takeover token %v not after %v", lb.Token(), la.Token())
			}
			_, err = la.Produce(ctxFor(t, 10*time.Second), coord.Message{Topic: topic, Partition: 0, Value: []byte("y"), Key: []byte("k")})
			if !errors.Is(err, coord.ErrFenced) {
				t.Fatalf("old leadership's write after takeover: %v, want FENCED", err)
			}
		})
	}
}

// Each misconfiguration fails with an error that names it: not a timeout,
// not a generic transport error.
func TestTLSMisconfigurationsNameTheProblem(t *testing.T) {
	c := tlsCluster(t)
	ca := cert(c, "ca.pem")
	cases := []struct {
		name    string
		boot    string
		kv      []string
		kind    error
		mention string
		atNew   bool // refused when the client is built
	}{
		{"wrong-ca", c.TLSBootstrap, []string{"security.protocol", "SSL", "ssl.ca.location", cert(c, "other-ca.pem")},
			coord.ErrTLS, "the broker's certificate is not signed by a CA in ssl.ca.location", false},
		{"plaintext-on-tls-port", c.TLSBootstrap, nil, coord.ErrTransport, "plaintext client (security.protocol=PLAINTEXT or SASL_PLAINTEXT) on a TLS listener", false},
		{"tls-on-plaintext-port", c.Bootstrap, []string{"security.protocol", "SSL", "ssl.ca.location", ca},
			coord.ErrTransport, "not a TLS listener", false},
		{"no-client-certificate", c.MTLSBootstrap, []string{"security.protocol", "SSL", "ssl.ca.location", ca},
			coord.ErrTLS, "refused the TLS handshake", false},
		{"client-certificate-from-another-ca", c.MTLSBootstrap, []string{"security.protocol", "SSL", "ssl.ca.location", ca,
			"ssl.certificate.location", cert(c, "stranger.pem"), "ssl.key.location", cert(c, "stranger.key")},
			coord.ErrTLS, "refused the TLS handshake", false},
		{"expired-client-certificate", c.MTLSBootstrap, []string{"security.protocol", "SSL", "ssl.ca.location", ca,
			"ssl.certificate.location", cert(c, "expired.pem"), "ssl.key.location", cert(c, "expired.key")},
			coord.ErrInvalidConfig, "expired at 2021-01-01T00:00:00Z", true},
		{"encrypted-key-without-password", c.MTLSBootstrap, []string{"security.protocol", "SSL", "ssl.ca.location", ca,
			"ssl.certificate.location", cert(c, "client.pem"), "ssl.key.location", cert(c, "client.key")},
			coord.ErrInvalidConfig, "set ssl.key.password", true},
		{"wrong-key-password", c.MTLSBootstrap, []string{"security.protocol", "SSL", "ssl.ca.location", ca,
			"ssl.certificate.location", cert(c, "client.pem"), "ssl.key.location", cert(c, "client.key"), "ssl.key.password", "nope"},
			coord.ErrInvalidConfig, "wrong ssl.key.password", true},
		{"key-of-another-certificate", c.MTLSBootstrap, []string{"security.protocol", "SSL", "ssl.ca.location", ca,
			"ssl.certificate.location", cert(c, "client.pem"), "ssl.key.location", cert(c, "stranger.key")},
			coord.ErrInvalidConfig, "ssl.certificate.location", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cl, err := kafka.NewClient(testConfig(t, tc.boot, tc.kv...))
			if tc.atNew {
				if !errors.Is(err, tc.kind) || !strings.Contains(err.Error(), tc.mention) {
					t.Fatalf("NewClient: %v; want %v mentioning %q", err, tc.kind, tc.mention)
				}
				t.Logf("NewClient: %v", err)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer cl.Close()
			start := time.Now()
			_, err = cl.Describe(ctxFor(t, 30*time.Second), core.MustRole(uniq("it-tlsbad-")))
			if !errors.Is(err, tc.kind) || errors.Is(err, coord.ErrTimeout) || !strings.Contains(err.Error(), tc.mention) {
				t.Fatalf("describe: %v; want %v mentioning %q", err, tc.kind, tc.mention)
			}
			t.Logf("describe after %v: %v", time.Since(start).Round(time.Millisecond), err)
		})
	}
}

// aliceTopic creates a one-partition topic that alice may write (prefix
// "alice.", see tests/kafka/cmd/kacl).
func aliceTopic(t *testing.T, c *kafkatest.Cluster) string {
	t.Helper()
	topic := uniq("alice.it-tls-")
	tr, err := kafka.New(testConfig(t, c.Bootstrap, "krabka.topic", topic, "krabka.topic.partitions", "1"))
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	if _, err := tr.Partitions(ctxFor(t, 20*time.Second)); err != nil {
		t.Fatal(err)
	}
	return topic
}
