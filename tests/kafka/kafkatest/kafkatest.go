// Package kafkatest gives tests a running real Apache Kafka cluster.
//
// A test asks for a cluster with Start. If the environment names one (see
// below; tests/kafka/with-clusters.sh and `make kafka-up` + `cluster.sh env`
// set these), that cluster is used. Otherwise the cluster is started through
// tests/kafka/cluster.sh once per test binary and per Name, on free ports in a
// private directory, and stopped when the binary exits: call Main from
// TestMain. Clusters are shared by all tests of a binary, so nothing stops
// them in t.Cleanup. A cluster started here also carries a watchdog (cluster.sh
// --owner) that stops it if the test binary dies without running Main's stop.
//
// A cluster that cannot be had fails the test with the reason; it never skips.
//
// Environment variables (one per cluster kind):
//
//	KRABKA_BOOTSTRAP         1 node, PLAINTEXT, transaction.version=2 (the default cluster)
//	KRABKA_BOOTSTRAP_TV1     1 node, PLAINTEXT, transaction.version=1
//	KRABKA_SASL_BOOTSTRAP    1 node, SASL_PLAINTEXT (SCRAM-SHA-256) listener, tv2, ACLs
//	KRABKA_SASL_PLAIN_BOOTSTRAP  the PLAINTEXT listener of that SASL cluster (ANONYMOUS is super user)
//	KRABKA_TLS_BOOTSTRAP, KRABKA_TLS_SASL_BOOTSTRAP, KRABKA_TLS_MTLS_BOOTSTRAP, KRABKA_TLS_CERTS
//	                         the TLS listeners of that SASL cluster (SSL, SASL_SSL, SSL with a
//	                         required client certificate) and the test PKI (tests/kafka/certs.sh)
//	KRABKA_BOOTSTRAP_3N      3 nodes, PLAINTEXT, tv2, RF 3, min.insync.replicas=2
//	KRABKA_BOOTSTRAP_3N_DIR  its cluster.sh dir (needed by KillNode/StartNode)
//	(KRABKA_BOOTSTRAP_DIR, KRABKA_BOOTSTRAP_TV1_DIR, KRABKA_SASL_DIR likewise)
//
// A cluster with ExtraListeners is never taken from the environment: it is
// always started here, because its brokers advertise addresses where the
// test puts fault proxies (tests/kafka/faultproxy) to cut a client's link.
package kafkatest

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// SCRAM-SHA-256 users of the SASL cluster (created at format time).
const (
	SASLMechanism   = "SCRAM-SHA-256"
	AdminUser       = "admin" // super user
	AdminPassword   = "admin-secret"
	AliceUser       = "alice" // TransactionalId prefix "alice." WRITE+DESCRIBE, topics (see README)
	AlicePassword   = "alice-secret"
	MalloryUser     = "mallory" // topic READ/DESCRIBE only: no TransactionalId rights
	MalloryPassword = "mallory-secret"
)

// Options selects a cluster. Zero values mean: Nodes 1, TxnVersion 2, no SASL,
// Name derived from the options ("tv2", "tv1", "sasl", "3n", ...).
type Options struct {
	Name       string
	Nodes      int  // 1 or 3
	SASL       bool // add a SCRAM-SHA-256 SASL_PLAINTEXT listener, authorizer and ACLs
	TxnVersion int  // 1 or 2
	// ExtraListeners (0 to 4): more PLAINTEXT listeners per node
	// (cluster.sh --extra-listeners), each advertised at an address of its
	// own where the test listens with a fault proxy to the listener
	// (Cluster.Extra). A client bootstrapped on the advertised addresses of
	// listener k reaches every broker through those proxies only.
	ExtraListeners int
}

// ExtraListener is one extra listener of one node: the broker listens at
// Listen and tells clients of that listener to connect to Advertised.
type ExtraListener struct {
	Listen, Advertised string
}

// Cluster is a running cluster.
type Cluster struct {
	Name          string
	Bootstrap     string // PLAINTEXT listener(s), comma separated; on a SASL cluster: super user ANONYMOUS
	SASLBootstrap string // SASL_PLAINTEXT listener(s); empty without SASL
	// The SASL cluster's TLS listeners (cluster.sh --tls) and its test PKI
	// (the files of tests/kafka/certs.sh): SSL, SASL_SSL (SCRAM-SHA-256),
	// and SSL requiring a client certificate signed by CertDir/ca.pem.
	TLSBootstrap, SASLSSLBootstrap, MTLSBootstrap, CertDir string
	Dir                                                    string // cluster.sh state dir (empty if given by env without *_DIR)
	Nodes                                                  int
	TxnVersion                                             int
	FromEnv                                                bool // true when the environment named it (not started by this binary)
	// Extra[k][i] is extra listener k+1 of node i+1 (Options.ExtraListeners).
	Extra [][]ExtraListener
}

type entry struct {
	once sync.Once
	c    *Cluster
	err  error
}

var (
	mu       sync.Mutex
	clusters = map[string]*entry{}
	started  []*Cluster
)

func (o Options) norm() Options {
	if o.Nodes == 0 {
		o.Nodes = 1
	}
	if o.TxnVersion == 0 {
		o.TxnVersion = 2
	}
	return o
}

// DefaultName is the name cluster.sh derives from the options.
func (o Options) DefaultName() string {
	o = o.norm()
	var parts []string
	if o.SASL {
		parts = append(parts, "sasl")
	}
	if o.Nodes == 3 {
		parts = append(parts, "3n")
	}
	if o.TxnVersion == 1 {
		parts = append(parts, "tv1")
	}
	if o.ExtraListeners > 0 {
		if len(parts) == 0 {
			parts = append(parts, "tv2")
		}
		parts = append(parts, fmt.Sprintf("x%d", o.ExtraListeners))
	}
	if len(parts) == 0 {
		return "tv2"
	}
	return strings.Join(parts, "-")
}

// EnvVar is the variable that names an already running cluster for o, and
// the variable naming its cluster.sh dir.
func (o Options) EnvVar() (bootstrap, dir string) {
	o = o.norm()
	if o.SASL {
		return "KRABKA_SASL_BOOTSTRAP", "KRABKA_SASL_DIR"
	}
	s := "KRABKA_BOOTSTRAP"
	if o.Nodes == 3 {
		s += "_3N"
	}
	if o.TxnVersion == 1 {
		s += "_TV1"
	}
	return s, s + "_DIR"
}

// Start returns a running cluster for o, or fails t with the reason.
func Start(t testing.TB, o Options) *Cluster {
	t.Helper()
	o = o.norm()
	if o.Nodes != 1 && o.Nodes != 3 {
		t.Fatalf("kafkatest: Nodes must be 1 or 3, got %d", o.Nodes)
	}
	if o.TxnVersion != 1 && o.TxnVersion != 2 {
		t.Fatalf("kafkatest: TxnVersion must be 1 or 2, got %d", o.TxnVersion)
	}
	if o.ExtraListeners < 0 || o.ExtraListeners > 4 {
		t.Fatalf("kafkatest: ExtraListeners must be 0 to 4, got %d", o.ExtraListeners)
	}
	if o.Name == "" {
		o.Name = o.DefaultName()
	}
	mu.Lock()
	e := clusters[o.Name]
	if e == nil {
		e = &entry{}
		clusters[o.Name] = e
	}
	mu.Unlock()
	e.once.Do(func() { e.c, e.err = get(o) })
	if e.err != nil {
		t.Fatalf("kafkatest: cluster %q unavailable: %v", o.Name, e.err)
	}
	if e.c.Nodes != o.Nodes || e.c.TxnVersion != o.TxnVersion || (e.c.SASLBootstrap != "") != o.SASL || len(e.c.Extra) != o.ExtraListeners {
		t.Fatalf("kafkatest: cluster name %q reused with different options", o.Name)
	}
	return e.c
}

func get(o Options) (*Cluster, error) {
	envB, envD := o.EnvVar()
	if o.Name == o.DefaultName() && o.ExtraListeners == 0 {
		if b := os.Getenv(envB); b != "" {
			c := &Cluster{Name: o.Name, Nodes: o.Nodes, TxnVersion: o.TxnVersion, Dir: os.Getenv(envD), FromEnv: true}
			if o.SASL {
				c.SASLBootstrap = b
				c.TLSBootstrap, c.SASLSSLBootstrap = os.Getenv("KRABKA_TLS_BOOTSTRAP"), os.Getenv("KRABKA_TLS_SASL_BOOTSTRAP")
				c.MTLSBootstrap, c.CertDir = os.Getenv("KRABKA_TLS_MTLS_BOOTSTRAP"), os.Getenv("KRABKA_TLS_CERTS")
				c.Bootstrap = os.Getenv("KRABKA_SASL_PLAIN_BOOTSTRAP")
				if c.Bootstrap == "" {
					return nil, fmt.Errorf("%s is set but KRABKA_SASL_PLAIN_BOOTSTRAP is not", envB)
				}
			} else {
				c.Bootstrap = b
			}
			if err := check(c); err != nil {
				return nil, fmt.Errorf("cluster from $%s=%s: %w", envB, b, err)
			}
			return c, nil
		}
	}
	return startScript(o)
}

// check asks the cluster for its brokers and finalized transaction.version.
func check(c *Cluster) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(c.Bootstrap, ",")...))
	if err != nil {
		return err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	req := kmsg.NewPtrApiVersionsRequest()
	req.ClientSoftwareName, req.ClientSoftwareVersion = "kafkatest", "1"
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return fmt.Errorf("ApiVersions: %w", err)
	}
	tv := 0
	for _, f := range resp.FinalizedFeatures {
		if f.Name == "transaction.version" {
			tv = int(f.MaxVersionLevel)
		}
	}
	if tv != c.TxnVersion && !(c.TxnVersion == 1 && tv == 0) {
		return fmt.Errorf("cluster has transaction.version=%d, want %d", tv, c.TxnVersion)
	}
	md, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl)
	if err != nil {
		return fmt.Errorf("Metadata: %w", err)
	}
	if len(md.Brokers) < c.Nodes {
		return fmt.Errorf("%d brokers visible, want %d", len(md.Brokers), c.Nodes)
	}
	return nil
}

// ScriptPath is tests/kafka/cluster.sh (override: KRABKA_KAFKA_CLUSTER_SH).
func ScriptPath() string {
	if p := os.Getenv("KRABKA_KAFKA_CLUSTER_SH"); p != "" {
		return p
	}
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "cluster.sh")
}

func run(timeout time.Duration, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", append([]string{ScriptPath()}, args...)...)
	// SIGTERM (not SIGKILL) on timeout, so cluster.sh stops what it launched.
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 30 * time.Second
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if err != nil {
		return out.String(), fmt.Errorf("cluster.sh %s: %v\n%s%s", strings.Join(args, " "), err, out.String(), errb.String())
	}
	return out.String(), nil
}

// freeBase finds a port base whose ports (perNode per node, 10 apart) all
// listen-free, and none of them in avoid.
func freeBase(nodes, perNode int, avoid ...int) int {
	for range 50 {
		base := 25000 + rand.IntN(380)*10 // below the ephemeral range (32768+)
		ok := true
		for _, a := range avoid {
			if base >= a-10*nodes && base <= a+10*nodes {
				ok = false
			}
		}
		for i := 0; i < nodes && ok; i++ {
			for d := 0; d < perNode && ok; d++ {
				l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(base+10*i+d))
				if err != nil {
					ok = false
				} else {
					l.Close()
				}
			}
		}
		if ok {
			return base
		}
	}
	return 25000 + rand.IntN(380)*10
}

func root() string {
	if r := os.Getenv("KRABKA_KAFKA_ROOT"); r != "" {
		return r
	}
	return filepath.Join(os.TempDir(), "krabka-kafka")
}

func startScript(o Options) (*Cluster, error) {
	dir := filepath.Join(root(), fmt.Sprintf("go-%s-%d", o.Name, os.Getpid()))
	var lastErr error
	for attempt := 0; attempt < 3; attempt++ {
		base := freeBase(o.Nodes, 6+o.ExtraListeners)
		args := []string{"start", "--name", o.Name, "--dir", dir,
			"--nodes", strconv.Itoa(o.Nodes), "--txn-version", strconv.Itoa(o.TxnVersion),
			"--port", strconv.Itoa(base), "--owner", strconv.Itoa(os.Getpid())}
		if o.SASL {
			args = append(args, "--sasl", "--tls")
		}
		adv := 0
		if o.ExtraListeners > 0 {
			adv = freeBase(o.Nodes, o.ExtraListeners, base)
			args = append(args, "--extra-listeners", fmt.Sprintf("%d:%d", o.ExtraListeners, adv))
		}
		out, err := run(5*time.Minute, args...)
		if err != nil {
			lastErr = err
			// Belt and braces: nothing of a failed start may keep running.
			_, _ = run(time.Minute, "stop", "--dir", dir)
			if strings.Contains(err.Error(), "is busy") {
				continue // lost a port race: try other ports
			}
			return nil, err
		}
		c := &Cluster{Name: o.Name, Dir: dir, Nodes: o.Nodes, TxnVersion: o.TxnVersion}
		c.Bootstrap = strings.TrimSpace(lastLine(out))
		// cluster.sh: extra listener k of node i listens at base+10(i-1)+5+k
		// and is advertised at adv+10(i-1)+k-1.
		for k := 1; k <= o.ExtraListeners; k++ {
			var l []ExtraListener
			for i := 1; i <= o.Nodes; i++ {
				l = append(l, ExtraListener{
					Listen:     fmt.Sprintf("127.0.0.1:%d", base+10*(i-1)+5+k),
					Advertised: fmt.Sprintf("127.0.0.1:%d", adv+10*(i-1)+k-1),
				})
			}
			c.Extra = append(c.Extra, l)
		}
		mu.Lock()
		started = append(started, c)
		mu.Unlock()
		if o.SASL {
			b, err := run(30*time.Second, "env", "--dir", dir)
			if err != nil {
				return nil, err
			}
			for _, l := range strings.Split(b, "\n") {
				for k, p := range map[string]*string{"KRABKA_SASL_BOOTSTRAP": &c.SASLBootstrap,
					"KRABKA_TLS_BOOTSTRAP": &c.TLSBootstrap, "KRABKA_TLS_SASL_BOOTSTRAP": &c.SASLSSLBootstrap,
					"KRABKA_TLS_MTLS_BOOTSTRAP": &c.MTLSBootstrap, "KRABKA_TLS_CERTS": &c.CertDir} {
					if v, ok := strings.CutPrefix(l, "export "+k+"="); ok {
						*p = v
					}
				}
			}
			if c.SASLBootstrap == "" {
				return nil, fmt.Errorf("cluster.sh env gave no SASL bootstrap:\n%s", b)
			}
		}
		return c, nil
	}
	return nil, lastErr
}

func lastLine(s string) string {
	s = strings.TrimRight(s, "\n")
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return s[i+1:]
	}
	return s
}

// KillNode SIGKILLs node n (1-based) of the cluster.
func (c *Cluster) KillNode(t testing.TB, n int) {
	t.Helper()
	c.nodeVerb(t, "kill-node", n)
}

// StartNode restarts node n on its data and waits until all nodes are back:
// node n answers requests itself and the cluster lists every broker (the
// controller may still list a killed broker for a while, so the script's
// broker count alone does not prove the restart).
func (c *Cluster) StartNode(t testing.TB, n int) {
	t.Helper()
	c.nodeVerb(t, "start-node", n)
	addrs := strings.Split(c.Bootstrap, ",")
	if n < 1 || n > len(addrs) {
		t.Fatalf("kafkatest: no node %d in %s", n, c.Bootstrap)
	}
	deadline := time.Now().Add(3 * time.Minute)
	for {
		err := check(&Cluster{Bootstrap: addrs[n-1], Nodes: c.Nodes, TxnVersion: c.TxnVersion})
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("kafkatest: node %d did not come back: %v", n, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func (c *Cluster) nodeVerb(t testing.TB, verb string, n int) {
	t.Helper()
	if c.Dir == "" {
		_, d := Options{Nodes: c.Nodes, TxnVersion: c.TxnVersion, SASL: c.SASLBootstrap != ""}.EnvVar()
		t.Fatalf("kafkatest: %s needs the cluster's dir: set %s", verb, d)
	}
	if _, err := run(3*time.Minute, verb, strconv.Itoa(n), "--dir", c.Dir); err != nil {
		t.Fatalf("kafkatest: %v", err)
	}
}

// StopAll stops the clusters this binary started. Safe to call more than once.
// With keep, their dirs (logs) stay; otherwise they are removed.
func StopAll(keep bool) error {
	mu.Lock()
	list := started
	started = nil
	mu.Unlock()
	var errs []string
	for _, c := range list {
		if _, err := run(2*time.Minute, "stop", "--dir", c.Dir); err != nil {
			errs = append(errs, err.Error())
			continue
		}
		if keep {
			fmt.Fprintf(os.Stderr, "kafkatest: logs of cluster %s kept in %s\n", c.Name, c.Dir)
		} else {
			os.RemoveAll(c.Dir)
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("%s", strings.Join(errs, "\n"))
	}
	return nil
}

// Main runs the tests and then stops every cluster this binary started
// (keeping their logs when a test failed). Use it as:
//
//	func TestMain(m *testing.M) { kafkatest.Main(m) }
func Main(m *testing.M) {
	code := m.Run()
	if err := StopAll(code != 0 || os.Getenv("KRABKA_KAFKA_KEEP") != ""); err != nil {
		fmt.Fprintln(os.Stderr, "kafkatest: stopping clusters:", err)
		if code == 0 {
			code = 1
		}
	}
	os.Exit(code)
}
