package main

// The command line against real Kafka brokers (tests/kafka): members are the
// C example device host (build/examples/device_host, a real program on the
// C ABI); the command line runs as its own process, as an operator runs it.
// Uses the clusters named by KRABKA_BOOTSTRAP / KRABKA_SASL_BOOTSTRAP (make
// test exports them); without them kafkatest starts its own.

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/krabka/krabka-coord/core/coord"
	"github.com/krabka/krabka-coord/core/kafka"
	"github.com/krabka/krabka-coord/tests/kafka/kafkatest"
)

func TestMain(m *testing.M) { kafkatest.Main(m) }

// bound is the longest any single wait of these tests may take before the
// test fails (it never decides a pass).
const bound = 90 * time.Second

func repoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

var (
	binOnce sync.Once
	binPath string
	binErr  error
)

// cliBin is the binary under test: $KRABKA_CLI_BIN (make cli-test sets it to
// build/bin/krabka-coord), else one built from this source.
func cliBin(t *testing.T) string {
	t.Helper()
	binOnce.Do(func() {
		if p := os.Getenv("KRABKA_CLI_BIN"); p != "" {
			binPath = p
			return
		}
		// One fixed place, overwritten by every run (kafkatest.Main exits the
		// test binary, so a per-run temporary directory would be left behind).
		// One place per checkout.
		h := fnv.New32a()
		h.Write([]byte(repoRoot()))
		dir := filepath.Join(os.TempDir(), fmt.Sprintf("krabka-cli-test-%08x", h.Sum32()))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			binErr = err
			return
		}
		binPath = filepath.Join(dir, "krabka-coord")
		out, err := exec.Command("go", "build", "-o", binPath, ".").CombinedOutput()
		if err != nil {
			binErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if binErr != nil {
		t.Fatal(binErr)
	}
	return binPath
}

func cHost(t *testing.T) string {
	t.Helper()
	p := os.Getenv("KRABKA_CLI_C_HOST")
	if p == "" {
		p = filepath.Join(repoRoot(), "build", "examples", "device_host")
	}
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("the C member %s is missing (make cli-test builds it with make examples): %v", p, err)
	}
	return p
}

// cli runs the command line to its end.
func cli(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	cmd := exec.CommandContext(ctx, cliBin(t), args...)
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		code = ee.ExitCode()
	default:
		t.Fatalf("krabka-coord %q: %v", args, err)
	}
	return code, out.String(), errb.String()
}

var roleSeq int

func uniqueRole(prefix string) string {
	roleSeq++
	return fmt.Sprintf("%s-%d-%d", prefix, os.Getpid(), roleSeq)
}

// lineProc is a process whose stdout lines are collected.
type lineProc struct {
	cmd   *exec.Cmd
	lines chan string
	done  chan struct{}
	err   error
	mu    sync.Mutex
	all   []string
}

func startProc(t *testing.T, env []string, name string, args ...string) *lineProc {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stderr = &prefixWriter{t: t, prefix: filepath.Base(name) + ": "}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &lineProc{cmd: cmd, lines: make(chan string, 1000), done: make(chan struct{})}
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			p.mu.Lock()
			p.all = append(p.all, sc.Text())
			p.mu.Unlock()
			p.lines <- sc.Text()
		}
		p.err = cmd.Wait()
		close(p.lines)
		close(p.done)
	}()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			cmd.Process.Kill()
			<-p.done
		}
	})
	return p
}

// next returns the next line that matches re, failing the test at the bound.
func (p *lineProc) next(t *testing.T, re *regexp.Regexp) []string {
	t.Helper()
	timer := time.NewTimer(bound)
	defer timer.Stop()
	for {
		select {
		case l, ok := <-p.lines:
			if !ok {
				t.Fatalf("%s ended (%v) before a line matching %s", p.cmd.Path, p.err, re)
			}
			if m := re.FindStringSubmatch(l); m != nil {
				return m
			}
		case <-timer.C:
			t.Fatalf("no line matching %s from %s", re, p.cmd.Path)
		}
	}
}

// wait waits for the process to end and returns its exit code.
func (p *lineProc) wait(t *testing.T) int {
	t.Helper()
	select {
	case <-p.done:
	case <-time.After(bound):
		t.Fatalf("%s did not end", p.cmd.Path)
	}
	var ee *exec.ExitError
	if errors.As(p.err, &ee) {
		return ee.ExitCode()
	}
	if p.err != nil {
		t.Fatalf("%s: %v", p.cmd.Path, p.err)
	}
	return 0
}

func (p *lineProc) output() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return strings.Join(p.all, "\n")
}

type prefixWriter struct {
	t      *testing.T
	prefix string
}

func (w *prefixWriter) Write(b []byte) (int, error) {
	for _, l := range strings.Split(strings.TrimRight(string(b), "\n"), "\n") {
		w.t.Log(w.prefix + l)
	}
	return len(b), nil
}

const commandTopic = "krabka-cli-commands"

// member starts a C device host for role as member with a short lease, so
// that a failover after SIGKILL takes a few seconds.
func member(t *testing.T, bootstrap, role, name string) *lineProc {
	t.Helper()
	return startProc(t, []string{"KRABKA_LEASE_MS=4000", "KRABKA_RENEW_INTERVAL_MS=1000", "KRABKA_CHALLENGE_STAGGER_MS=500",
		"KRABKA_DISPATCH_INTERVAL_MS=500", "KRABKA_REJOIN_DELAY_MS=500"},
		cHost(t), bootstrap, role, name, commandTopic)
}

var (
	reAcquired = regexp.MustCompile(`^EVENT \d+ (\S+) ACQUIRED token=(\S+)`)
	reStandby  = regexp.MustCompile(`^EVENT \d+ (\S+) STANDBY`)
)

func admin(t *testing.T, bootstrap string) *kadm.Client {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(bootstrap, ",")...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return kadm.NewClient(cl)
}

// createTopic creates a topic (an existing one is left as it is).
func createTopic(t *testing.T, bootstrap, topic string, partitions int32, configs map[string]*string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	res, err := admin(t, bootstrap).CreateTopic(ctx, partitions, -1, configs, topic)
	if err == nil {
		err = res.Err
	}
	if err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
		t.Fatalf("creating %s: %v", topic, err)
	}
	// The broker answers CreateTopics before its metadata lists the topic.
	for {
		md, err := admin(t, bootstrap).Metadata(ctx, topic)
		if err == nil {
			if td, ok := md.Topics[topic]; ok && td.Err == nil && len(td.Partitions) == int(partitions) {
				return
			}
		}
		if ctx.Err() != nil {
			t.Fatalf("%s never appeared in the metadata: %v", topic, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func tv2(t *testing.T) string {
	t.Helper()
	c := kafkatest.Start(t, kafkatest.Options{})
	createTopic(t, c.Bootstrap, commandTopic, 1, nil)
	return c.Bootstrap
}

// leaderOf starts a C member and waits until it holds role; returns its
// token as text.
func leaderOf(t *testing.T, bootstrap, role, name string) (*lineProc, string) {
	t.Helper()
	p := member(t, bootstrap, role, name)
	m := p.next(t, reAcquired)
	if m[1] != name {
		t.Fatalf("ACQUIRED by %s, want %s", m[1], name)
	}
	return p, m[2]
}

func standby(t *testing.T, bootstrap, role, name string) *lineProc {
	t.Helper()
	p := member(t, bootstrap, role, name)
	p.next(t, reStandby)
	return p
}

func describeJSON(t *testing.T, bootstrap, role string) statusJSON {
	t.Helper()
	code, out, errs := cli(t, "-b", bootstrap, "describe", "-o", "json", role)
	if code != exitOK {
		t.Fatalf("describe: exit %d: %s", code, errs)
	}
	var sts []statusJSON
	if err := json.Unmarshal([]byte(out), &sts); err != nil || len(sts) != 1 {
		t.Fatalf("describe -o json: %v: %s", err, out)
	}
	return sts[0]
}

func TestDescribeShowsTheHolderACMemberHolds(t *testing.T) {
	bs := tv2(t)
	role := uniqueRole("cli-describe")
	_, tok := leaderOf(t, bs, role, "c-node-1")
	standby(t, bs, role, "c-node-2")

	st := describeJSON(t, bs, role)
	if st.Holder == nil || *st.Holder != "c-node-1" || st.Token != tok || !st.Current || st.Role != role {
		t.Fatalf("describe: holder %v token %s current %t, want c-node-1 %s true: %+v", st.Holder, st.Token, st.Current, tok, st)
	}
	if st.Lease == nil || st.Lease.Member != "c-node-1" || st.Lease.Token != tok || st.Lease.DeadlineMs <= st.Lease.GrantedAtMs {
		t.Fatalf("lease: %+v", st.Lease)
	}
	// Spec 5.7: the lease's member ranks 0, and so does the first standby.
	if len(st.Roster) != 2 || st.Roster[0].Member != "c-node-1" || st.Roster[0].Rank != 0 ||
		st.Roster[1].Member != "c-node-2" || st.Roster[1].Rank != 0 || st.Roster[1].Offset <= st.Roster[0].Offset {
		t.Fatalf("roster: %+v", st.Roster)
	}
	// The partition is the library's for the role (the coordination topic
	// has the library's 16 partitions on the test cluster).
	cfg := coord.DefaultConfig()
	cfg.Set("bootstrap.servers", bs)
	c, err := kafka.NewClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	lib, err := c.Describe(context.Background(), mustRole(t, role))
	if err != nil {
		t.Fatal(err)
	}
	if lib.Partition != st.Partition || lib.Token.String() != st.Token {
		t.Fatalf("library says partition %d token %s; the command line %d %s", lib.Partition, lib.Token, st.Partition, st.Token)
	}

	// The table form says the same.
	code, out, errs := cli(t, "-b", bs, "describe", role)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, re := range []string{`(?m)^holder\s+c-node-1$`, `(?m)^token\s+` + regexp.QuoteMeta(tok) + `$`, `(?m)^current\s+true$`,
		`(?m)^partition\s+\d+$`, `(?m)^lease deadline\s+\d{4}-`, `(?m)^lease remaining\s+\S+s$`,
		`(?m)^\s+0\s+c-node-1 \(holder\)\s+\d+`, `(?m)^\s+0\s+c-node-2\s+\d+`, `(?m)^skipped records\s+0$`} {
		if !regexp.MustCompile(re).MatchString(out) {
			t.Errorf("table lacks %s:\n%s", re, out)
		}
	}
}

func TestDescribeOfARoleNobodyTook(t *testing.T) {
	bs := tv2(t)
	// The topic exists (other tests' members created it), the role does not.
	member(t, bs, uniqueRole("cli-any"), "c-any").next(t, reAcquired)
	st := describeJSON(t, bs, uniqueRole("cli-never"))
	if st.Holder != nil || st.Token != "-1:-1" || st.Current || st.Lease != nil || len(st.Roster) != 0 {
		t.Fatalf("%+v", st)
	}
}

func TestReadCommandsNeverCreateTheTopic(t *testing.T) {
	bs := tv2(t)
	topic := uniqueRole("krabka-cli-absent")
	code, _, errs := cli(t, "-b", bs, "-X", "krabka.topic="+topic, "describe", "r")
	if code != exitFailed || !strings.Contains(errs, "does not exist") {
		t.Fatalf("exit %d: %s", code, errs)
	}
	md, err := admin(t, bs).Metadata(context.Background(), topic)
	if err != nil {
		t.Fatal(err)
	}
	if td, ok := md.Topics[topic]; ok && td.Err == nil {
		t.Fatalf("describe created %s", topic)
	}
}

func checkLines(t *testing.T, out string) []checkLine {
	t.Helper()
	var lines []checkLine
	if err := json.Unmarshal([]byte(out), &lines); err != nil {
		t.Fatalf("check -o json: %v: %s", err, out)
	}
	return lines
}

func TestCheckPassesOnTheTestCluster(t *testing.T) {
	bs := tv2(t)
	// A coordination topic created by the library, as the first member does.
	topic := uniqueRole("krabka-cli-check")
	cfg := coord.DefaultConfig()
	cfg.Set("bootstrap.servers", bs)
	cfg.Set("krabka.topic", topic)
	tr, err := kafka.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tr.Partitions(context.Background()); err != nil {
		t.Fatal(err)
	}
	// Three records in partition 0: the cold start line counts them.
	for i := 0; i < 3; i++ {
		if _, err := tr.Append(context.Background(), 0, []byte(fmt.Sprintf("not-a-role-%d", i)), []byte("x"), nil); err != nil {
			t.Fatal(err)
		}
	}
	tr.Close()

	code, out, errs := cli(t, "-b", bs, "-X", "krabka.topic="+topic, "check", "-o", "json")
	if code != exitOK {
		t.Fatalf("exit %d: %s %s", code, out, errs)
	}
	seen := map[string]bool{}
	for _, l := range checkLines(t, out) {
		seen[l.Check] = true
		if l.Status != "OK" {
			t.Errorf("%s %s: %s (fix: %s)", l.Status, l.Check, l.Detail, l.Fix)
		}
	}
	for _, c := range []string{"reachable", "authentication", "cluster", "transactions", "txn timeout", "txn freeze", "describe", "topic", "cold start", "acl"} {
		if !seen[c] {
			t.Errorf("no %s line", c)
		}
	}
	code, out, _ = cli(t, "-b", bs, "-X", "krabka.topic="+topic, "check")
	if code != exitOK || !regexp.MustCompile(`(?m)^OK\s+transactions\s.*transaction\.version=2`).MatchString(out) ||
		!regexp.MustCompile(`(?m)^check: \d+ OK, 0 WARN, 0 FAIL$`).MatchString(out) ||
		!regexp.MustCompile(`(?m)^OK\s+topic\s+\S+: segment\.ms=300000 \(5m0s\)`).MatchString(out) ||
		!regexp.MustCompile(`(?m)^OK\s+cold start\s+\S+: a new member reads up to 3 offsets over 16 partitions; the largest, partition 0 \(3 offsets, 3 records of \d+ roles\), read and folded in \d+ ms \(segment\.ms=300000, segment\.bytes=8388608\)$`).MatchString(out) ||
		!regexp.MustCompile(`(?m)^OK\s+topic\s+\S+: min\.cleanable\.dirty\.ratio=0\.1$`).MatchString(out) ||
		// The test brokers scan for timed-out transactions every second
		// (Kafka's default is 10 s): read from the broker, not assumed.
		!regexp.MustCompile(`(?m)^OK\s+txn freeze\s+a lease transaction left open holds its partition's stable offset for up to 11000 ms: krabka\.txn\.timeout\.ms=10000, plus transaction\.abort\.timed\.out\.transaction\.cleanup\.interval\.ms=1000; below krabka\.lease\.ms - krabka\.renew\.interval\.ms = 20000,`).MatchString(out) {
		t.Fatalf("exit %d:\n%s", code, out)
	}
}

func TestCheckWarnsOnATopicWithoutTheCompactionSettings(t *testing.T) {
	bs := tv2(t)
	topic := uniqueRole("krabka-cli-plain")
	createTopic(t, bs, topic, 4, map[string]*string{"cleanup.policy": kadm.StringPtr("compact")})
	code, out, errs := cli(t, "-b", bs, "-X", "krabka.topic="+topic, "check")
	if code != exitOK {
		t.Fatalf("a WARN is not a FAIL: exit %d: %s %s", code, out, errs)
	}
	for _, re := range []string{
		`(?m)^WARN\s+topic\s+` + topic + `: segment\.ms=604800000 \(168h0m0s\)`,
		`(?m)^\s+fix: kafka-configs\.sh .*--entity-name ` + topic + ` --add-config segment\.ms=300000$`,
		`(?m)^WARN\s+topic\s+` + topic + `: min\.cleanable\.dirty\.ratio=0\.5`,
		`(?m)^\s+fix: kafka-configs\.sh .*--add-config min\.cleanable\.dirty\.ratio=0\.1$`,
		`(?m)^OK\s+topic\s+` + topic + `: cleanup\.policy=compact$`,
		`(?m)^check: \d+ OK, 2 WARN, 0 FAIL$`,
	} {
		if !regexp.MustCompile(re).MatchString(out) {
			t.Errorf("check output lacks %s:\n%s", re, out)
		}
	}

	// A topic that is not compacted at all is a FAIL.
	del := uniqueRole("krabka-cli-delete")
	createTopic(t, bs, del, 1, map[string]*string{"cleanup.policy": kadm.StringPtr("delete")})
	code, out, _ = cli(t, "-b", bs, "-X", "krabka.topic="+del, "check")
	if code != exitCheck || !regexp.MustCompile(`(?m)^FAIL\s+topic\s+`+del+`: cleanup\.policy=delete`).MatchString(out) {
		t.Fatalf("exit %d:\n%s", code, out)
	}
}

func saslArgs(c *kafkatest.Cluster, user, password string) []string {
	return []string{"-b", c.SASLBootstrap, "-X", "security.protocol=SASL_PLAINTEXT", "-X", "sasl.mechanism=" + kafkatest.SASLMechanism,
		"-X", "sasl.username=" + user, "-X", "sasl.password=" + password}
}

func TestCheckFailsClearlyWithAWrongPassword(t *testing.T) {
	c := kafkatest.Start(t, kafkatest.Options{SASL: true})
	code, out, errs := cli(t, append(saslArgs(c, kafkatest.AliceUser, "not-"+kafkatest.AlicePassword), "check")...)
	if code != exitCheck {
		t.Fatalf("exit %d, want %d: %s %s", code, exitCheck, out, errs)
	}
	if !regexp.MustCompile(`(?m)^OK\s+reachable`).MatchString(out) ||
		!regexp.MustCompile(`(?m)^FAIL\s+authentication\s+SASL_PLAINTEXT SCRAM-SHA-256 login as User:alice was refused: .*SASL_AUTHENTICATION_FAILED`).MatchString(out) ||
		!regexp.MustCompile(`(?m)^\s+fix: check sasl\.username, sasl\.password and sasl\.mechanism`).MatchString(out) {
		t.Fatalf("output:\n%s", out)
	}
	if strings.Contains(out+errs, "not-"+kafkatest.AlicePassword) {
		t.Fatal("the password was printed")
	}
}

func TestCheckReadsThePrincipalsACLs(t *testing.T) {
	c := kafkatest.Start(t, kafkatest.Options{SASL: true})
	// alice: WRITE and DESCRIBE on TransactionalId prefix "alice." (tests/kafka/cmd/kacl).
	code, out, _ := cli(t, append(saslArgs(c, kafkatest.AliceUser, kafkatest.AlicePassword), "check", "--prefix", "alice.")...)
	if !regexp.MustCompile(`(?m)^OK\s+acl\s+User:alice may WRITE, DESCRIBE on TransactionalId prefix "alice\."$`).MatchString(out) ||
		!regexp.MustCompile(`(?m)^OK\s+authentication\s+SASL_PLAINTEXT SCRAM-SHA-256 login as User:alice accepted`).MatchString(out) ||
		!regexp.MustCompile(`(?m)^OK\s+describe\s+DescribeTransactions allowed on "alice\.krabka-check"`).MatchString(out) {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	// Outside her prefix she has nothing: FAIL with the kafka-acls.sh fix.
	code, out, _ = cli(t, append(saslArgs(c, kafkatest.AliceUser, kafkatest.AlicePassword), "check", "--prefix", "bob.")...)
	if code != exitCheck ||
		!regexp.MustCompile(`(?m)^FAIL\s+describe\s+User:alice may not DescribeTransactions on "bob\.krabka-check"`).MatchString(out) ||
		!regexp.MustCompile(`(?m)^FAIL\s+acl\s+User:alice lacks WRITE, DESCRIBE on TransactionalId prefix "bob\."`).MatchString(out) ||
		!strings.Contains(out, "fix: kafka-acls.sh --bootstrap-server "+c.SASLBootstrap+" --add --allow-principal User:alice --operation Describe --operation Write --transactional-id bob. --resource-pattern-type prefixed") {
		t.Fatalf("exit %d:\n%s", code, out)
	}
}

// exporter starts the exporter on a free port and returns its /metrics URL.
func exporter(t *testing.T, args ...string) (*lineProc, string) {
	t.Helper()
	cmd := exec.Command(cliBin(t), append(args, "--listen", "127.0.0.1:0", "--interval", "500ms")...)
	errPipe, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout = io.Discard
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &lineProc{cmd: cmd, lines: make(chan string, 1000), done: make(chan struct{})}
	go func() {
		sc := bufio.NewScanner(errPipe)
		for sc.Scan() {
			t.Log("exporter: " + sc.Text())
			p.lines <- sc.Text()
		}
		p.err = cmd.Wait()
		close(p.lines)
		close(p.done)
	}()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			cmd.Process.Kill()
			<-p.done
		}
	})
	m := p.next(t, regexp.MustCompile(`serving (http://\S+/metrics)`))
	return p, m[1]
}

func stopWith(t *testing.T, p *lineProc, sig syscall.Signal) {
	t.Helper()
	if err := p.cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
}

func TestCheckJudgesTheTransactionTimeoutAgainstTheBroker(t *testing.T) {
	bs := tv2(t)
	// The test brokers keep Kafka's default transaction.max.timeout.ms, 15 min.
	code, out, _ := cli(t, "-b", bs, "-X", "krabka.lease.ms=1200000", "-X", "krabka.renew.interval.ms=10000", "-X", "krabka.txn.timeout.ms=1200000", "check")
	if code != exitCheck || !regexp.MustCompile(`(?m)^FAIL\s+txn timeout\s+krabka\.txn\.timeout\.ms=1200000 is above the broker's transaction\.max\.timeout\.ms=900000`).MatchString(out) ||
		!regexp.MustCompile(`(?m)^\s+fix: lower krabka\.txn\.timeout\.ms to at most 900000 or raise transaction\.max\.timeout\.ms`).MatchString(out) ||
		// The freeze counts the broker's cap, not the 20 min asked for.
		!regexp.MustCompile(`(?m)^OK\s+txn freeze\s+.* for up to 901000 ms: krabka\.txn\.timeout\.ms=1200000 capped by the broker's transaction\.max\.timeout\.ms=900000, plus `).MatchString(out) {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	// The lease is no longer the transaction timeout: a lease above the
	// broker's maximum works (the default krabka.txn.timeout.ms is 10 s).
	code, out, _ = cli(t, "-b", bs, "-X", "krabka.lease.ms=1200000", "-X", "krabka.renew.interval.ms=10000", "check")
	if code != exitOK || !regexp.MustCompile(`(?m)^OK\s+txn timeout\s+krabka\.txn\.timeout\.ms=10000 within transaction\.max\.timeout\.ms=900000$`).MatchString(out) {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	// A freeze that reaches krabka.lease.ms - krabka.renew.interval.ms
	// (19500 + the brokers' 1000 >= 20000) is a WARN whose only fix is the
	// client's (the brokers already scan every second).
	code, out, _ = cli(t, "-b", bs, "-X", "krabka.txn.timeout.ms=19500", "check")
	if code != exitOK || !regexp.MustCompile(`(?m)^WARN\s+txn freeze\s+.* for up to 20500 ms: .*; not below krabka\.lease\.ms - krabka\.renew\.interval\.ms = 20000: `).MatchString(out) ||
		!regexp.MustCompile(`(?m)^\s+fix: lower krabka\.txn\.timeout\.ms below 19000$`).MatchString(out) {
		t.Fatalf("exit %d:\n%s", code, out)
	}
}
