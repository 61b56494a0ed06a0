package kafka_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/krabka/krabka-coord/core"
	"github.com/krabka/krabka-coord/core/coord"
	"github.com/krabka/krabka-coord/core/kafka"
	"github.com/krabka/krabka-coord/tests/kafka/kafkatest"
)

func TestMain(m *testing.M) { kafkatest.Main(m) }

// Short leases so failovers take seconds.
const (
	leaseMs   = 2000
	renewMs   = 500
	staggerMs = 500
)

func uniq(prefix string) string {
	var b [5]byte
	_, _ = rand.Read(b[:])
	return prefix + hex.EncodeToString(b[:])
}

// eachTV runs fn as parallel subtests on the transaction.version 1 and 2
// clusters.
func eachTV(t *testing.T, fn func(t *testing.T, c *kafkatest.Cluster)) {
	t.Helper()
	for _, tv := range []int{1, 2} {
		t.Run(fmt.Sprintf("tv%d", tv), func(t *testing.T) {
			t.Parallel()
			c := kafkatest.Start(t, kafkatest.Options{TxnVersion: tv})
			fn(t, c)
		})
	}
}

func testConfig(t testing.TB, bootstrap string, kv ...string) coord.Config {
	t.Helper()
	cfg := coord.DefaultConfig()
	set := map[string]string{
		"bootstrap.servers":           bootstrap,
		"client.id":                   "krabka-it",
		"request.timeout.ms":          "5000",
		"krabka.lease.ms":             fmt.Sprint(leaseMs),
		"krabka.renew.interval.ms":    fmt.Sprint(renewMs),
		"krabka.challenge.stagger.ms": fmt.Sprint(staggerMs),
		"krabka.poll.interval.ms":     "100",
	}
	for i := 0; i+1 < len(kv); i += 2 {
		set[kv[i]] = kv[i+1]
	}
	for k, v := range set {
		if err := cfg.Set(k, v); err != nil {
			t.Fatal(err)
		}
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	return cfg
}

func newClient(t testing.TB, bootstrap string, kv ...string) *coord.Client {
	t.Helper()
	c, err := kafka.NewClient(testConfig(t, bootstrap, kv...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func ctxFor(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

func acquire(t testing.TB, c *coord.Client, role core.Role, member string) *coord.Leadership {
	t.Helper()
	l, err := c.Acquire(ctxFor(t, 30*time.Second), role, core.MustMemberID(member))
	if err != nil {
		t.Fatalf("%s: acquire %s: %v", member, role, err)
	}
	return l
}

type acquired struct {
	l   *coord.Leadership
	err error
	at  int64 // wall ms when Acquire returned
}

func acquireAsync(ctx context.Context, c *coord.Client, role core.Role, member string) <-chan acquired {
	ch := make(chan acquired, 1)
	go func() {
		l, err := c.Acquire(ctx, role, core.MustMemberID(member))
		ch <- acquired{l, err, time.Now().UnixMilli()}
	}()
	return ch
}

// skewedClock is the system clock moved by an offset (a member whose clock
// runs ahead).
type skewedClock struct{ offset time.Duration }

func (s skewedClock) NowMs() int64 { return time.Now().Add(s.offset).UnixMilli() }
func (s skewedClock) Sleep(ctx context.Context, d time.Duration) error {
	return core.SystemClock.Sleep(ctx, d)
}

func newSkewedClient(t testing.TB, bootstrap string, skew time.Duration, kv ...string) *coord.Client {
	t.Helper()
	cfg := testConfig(t, bootstrap, kv...)
	tr, err := kafka.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	c, err := coord.NewClient(cfg, tr, skewedClock{skew})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// dataTopic creates a one-partition topic for guarded writes and returns a
// function that reads its committed records (read_committed, to the LSO).
func dataTopic(t testing.TB, bootstrap string) (string, func() []core.RawRecord) {
	t.Helper()
	topic := uniq("it-data-")
	cfg := testConfig(t, bootstrap, "krabka.topic", topic, "krabka.topic.partitions", "1")
	tr, err := kafka.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tr.Close() })
	if _, err := tr.Partitions(ctxFor(t, 20*time.Second)); err != nil {
		t.Fatal(err)
	}
	return topic, func() []core.RawRecord {
		recs, err := tr.Read(ctxFor(t, 20*time.Second), 0)
		if err != nil {
			t.Fatalf("reading %s: %v", topic, err)
		}
		return recs
	}
}

func values(recs []core.RawRecord) []string {
	var out []string
	for _, r := range recs {
		out = append(out, string(r.Value))
	}
	return out
}

func wantErr(t testing.TB, err, kind error, what string) {
	t.Helper()
	if !errors.Is(err, kind) {
		t.Fatalf("%s: got %v, want %v", what, err, kind)
	}
}

// proxy forwards loopback TCP connections to their real destination until it
// is severed; afterwards it closes every open connection and leaves new ones
// hanging (a black hole, like a cut cable).
type proxy struct {
	mu      sync.Mutex
	severed bool
	conns   []net.Conn
	hold    chan struct{}
}

func newProxy() *proxy { return &proxy{hold: make(chan struct{})} }

// Dial is a kgo dialer: it connects to host through a loopback listener
// that forwards to host.
func (p *proxy) Dial(ctx context.Context, network, host string) (net.Conn, error) {
	if !strings.HasPrefix(host, "127.0.0.1:") && !strings.HasPrefix(host, "localhost:") {
		return nil, fmt.Errorf("proxy: loopback only, not %s", host)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	go func() {
		defer ln.Close()
		in, err := ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		severed := p.severed
		p.conns = append(p.conns, in)
		p.mu.Unlock()
		if severed {
			return // held open, never answered, closed on sever/cleanup
		}
		out, err := net.Dial("tcp", host)
		if err != nil {
			in.Close()
			return
		}
		p.mu.Lock()
		p.conns = append(p.conns, out)
		if p.severed {
			out.Close()
			in.Close()
		}
		p.mu.Unlock()
		go func() { io.Copy(out, in); out.Close() }()
		io.Copy(in, out)
		in.Close()
	}()
	var d net.Dialer
	return d.DialContext(ctx, "tcp", ln.Addr().String())
}

// Sever cuts every connection and black-holes new ones.
func (p *proxy) Sever() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.severed = true
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}

func (p *proxy) Close() { p.Sever() }

// Heal closes the connections held while severed and lets new ones
// through again.
func (p *proxy) Heal() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
	p.severed = false
}
