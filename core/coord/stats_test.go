package coord_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/krabka/krabka-coord/core"
	"github.com/krabka/krabka-coord/core/coord"
)

// syncBuf is a bytes.Buffer safe for the client's goroutines.
type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// lines returns the JSON records logged so far.
func (s *syncBuf) lines(t *testing.T) []map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []map[string]any
	for _, ln := range strings.Split(strings.TrimSpace(s.b.String()), "\n") {
		if ln == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(ln), &m); err != nil {
			t.Fatalf("log line %q: %v", ln, err)
		}
		out = append(out, m)
	}
	return out
}

func (e *env) loggedClient(buf *syncBuf, kv ...string) *coord.Client {
	cfg := e.config(kv...)
	cfg.Logger = slog.New(slog.NewJSONHandler(buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	c, err := coord.NewClient(cfg, e.cluster.Transport(cfg.Topic), e.clock)
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { c.Close() })
	return c
}

func TestStatsCountAcquisitionsRenewalsWritesHandoffsAndEnds(t *testing.T) {
	e := newEnv(t)
	ca, _ := e.client()
	cb, _ := e.client()
	la, err := ca.Acquire(bg(), role, ma)
	if err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(10 * time.Second)
	if err := la.Renew(bg()); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2; i++ {
		if _, err := la.Produce(bg(), coord.Message{Topic: "cmds", Partition: 0, Value: []byte("x")}); err != nil {
			t.Fatal(err)
		}
	}
	// Describe brings the client's view up to the end of the partition: the
	// view heard from the broker at the current instant.
	if _, err := ca.Describe(bg(), role); err != nil {
		t.Fatal(err)
	}
	s := ca.Stats()
	rs := s.Roles["controller"]
	if s.Leaders != 1 || !rs.IsLeader || rs.Member != "node-a" || rs.Token != la.Token().String() ||
		rs.LeaseRemainingMs != 30000 || rs.ViewLagMs != 0 || s.Reads < 1 || s.RecordsFolded < 3 {
		t.Fatalf("gauges while leader: %+v %+v", s, rs)
	}
	if rs.Acquisitions != 1 || rs.ChallengesWon != 1 || rs.Handoffs != 0 || rs.RenewalsOK != 1 ||
		rs.GuardedWrites != 2 || rs.GuardedWriteLatency.Count != 2 || s.Acquisitions != 1 || s.GuardedWrites != 2 {
		t.Fatalf("counters while leader: %+v", s)
	}
	var inBuckets int64
	for _, n := range rs.GuardedWriteLatency.Buckets {
		inBuckets += n
	}
	if inBuckets != 2 || len(rs.GuardedWriteLatency.Buckets) != len(coord.LatencyBucketsMs)+1 {
		t.Fatalf("histogram %+v", rs.GuardedWriteLatency)
	}
	if s.Reads == 0 || s.RecordsFolded == 0 {
		t.Fatalf("reads %d folded %d", s.Reads, s.RecordsFolded)
	}

	// b waits out a's lease and takes over: a handoff for b; a is fenced.
	e.clock.Advance(31 * time.Second)
	ch := acquireAsync(cb, bg(), mb) // the live view may wait on the clock
	e.advanceUntil(time.Second, time.Minute, ready(ch))
	got := <-ch
	lb, err := got.l, got.err
	if err != nil {
		t.Fatal(err)
	}
	if err := la.Renew(bg()); !errors.Is(err, coord.ErrFenced) {
		t.Fatalf("renew after takeover: %v", err)
	}
	sa, sb := ca.Stats(), cb.Stats()
	ra, rb := sa.Roles["controller"], sb.Roles["controller"]
	if rb.Acquisitions != 1 || rb.Handoffs != 1 || !rb.IsLeader || rb.Token != lb.Token().String() {
		t.Fatalf("b: %+v", rb)
	}
	// a may learn the fence from its view before the renewal is sent (then
	// the renewal is refused locally and not counted as failed).
	if ra.IsLeader || ra.LeaseRemainingMs != -1 || ra.EndsFenced != 1 || ra.RenewalsFailed > 1 || sa.Leaders != 0 || sa.EndsFenced != 1 {
		t.Fatalf("a after the fence: %+v", ra)
	}
	if err := lb.Resign(bg()); err != nil {
		t.Fatal(err)
	}
	if r := cb.Stats().Roles["controller"]; r.EndsResigned != 1 || r.IsLeader {
		t.Fatalf("b after resign: %+v", r)
	}
	if b, err := json.Marshal(sa); err != nil || !bytes.Contains(b, []byte(`"ends_fenced":1`)) || !bytes.Contains(b, []byte(`"roles":{"controller":`)) {
		t.Fatalf("json %s %v", b, err)
	}
}

// rivalTransport lets a rival mint right after this client's first mint,
// so that the lease write of that mint is fenced (a lost challenge).
type rivalTransport struct {
	coord.Transport
	rival coord.Transport
	once  sync.Once
}

func (r *rivalTransport) Mint(ctx context.Context, id string, d time.Duration) (coord.TxnProducer, error) {
	p, err := r.Transport.Mint(ctx, id, d)
	r.once.Do(func() {
		if rp, err := r.rival.Mint(ctx, id, d); err == nil {
			rp.Close()
		}
	})
	return p, err
}

func TestChallengeLostIsCounted(t *testing.T) {
	e := newEnv(t)
	cfg := e.config()
	tr := &rivalTransport{Transport: e.cluster.Transport(cfg.Topic), rival: e.cluster.Transport(cfg.Topic)}
	c, err := coord.NewClient(cfg, tr, e.clock)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	l, _, err := c.TryAcquire(bg(), role, ma)
	if err != nil || l != nil {
		t.Fatalf("try: %v %v", l, err)
	}
	if r := c.Stats().Roles["controller"]; r.ChallengesLost != 1 || r.ChallengesWon != 0 || r.Acquisitions != 0 {
		t.Fatalf("%+v", r)
	}
	if l, _, err = c.TryAcquire(bg(), role, ma); err != nil || l == nil {
		t.Fatalf("second try: %v %v", l, err)
	}
	if r := c.Stats().Roles["controller"]; r.ChallengesLost != 1 || r.ChallengesWon != 1 || r.Acquisitions != 1 {
		t.Fatalf("%+v", r)
	}
}

func TestLogsAtTheirLevelsAndFilteredByKrabkaLogLevel(t *testing.T) {
	e := newEnv(t)
	var buf syncBuf
	ca := e.loggedClient(&buf, "client.id", "host-a")
	cb, _ := e.client()
	la, _ := ca.Acquire(bg(), role, ma)
	e.clock.Advance(31 * time.Second)
	ch := acquireAsync(cb, bg(), mb)
	e.advanceUntil(time.Second, time.Minute, ready(ch))
	if got := <-ch; got.err != nil {
		t.Fatal(got.err)
	}
	if err := la.Renew(bg()); !errors.Is(err, coord.ErrFenced) {
		t.Fatal(err)
	}
	// The holder may learn the fence from its view of the log before the
	// renewal's answer: its end (and the line) can come a moment later.
	for deadline := time.Now().Add(5 * time.Second); !strings.Contains(buf.String(), `"state":"FENCED"`) && time.Now().Before(deadline); {
		time.Sleep(5 * time.Millisecond)
	}
	// The default level is warn: the loss is logged, the win is not.
	var fenced bool
	for _, m := range buf.lines(t) {
		if m["level"] == "DEBUG" || m["level"] == "INFO" {
			t.Fatalf("%s line at the default level warn: %v", m["level"], m)
		}
		if m["client"] != "host-a" {
			t.Fatalf("line without the client attribute: %v", m)
		}
		if m["msg"] == "krabka: leadership ended" && m["level"] == "WARN" && m["state"] == "FENCED" &&
			strings.Contains(m["reason"].(string), "fenced") {
			fenced = true
		}
	}
	if !fenced {
		t.Fatalf("fenced %v in %v", fenced, buf.lines(t))
	}

	var dbuf syncBuf
	cd := e.loggedClient(&dbuf, "krabka.log.level", "debug")
	ld, err := cd.Acquire(bg(), core.MustRole("other"), ma)
	if err != nil {
		t.Fatal(err)
	}
	var registered, won bool
	for _, m := range dbuf.lines(t) {
		registered = registered || (m["msg"] == "krabka: registered" && m["level"] == "DEBUG")
		won = won || (m["msg"] == "krabka: role won" && m["level"] == "INFO" && m["token"] == ld.Token().String())
	}
	if !registered || !won {
		t.Fatalf("registered (debug) %v, won (info) %v: %v", registered, won, dbuf.lines(t))
	}

	var wbuf syncBuf
	cw := e.loggedClient(&wbuf, "krabka.log.level", "warn")
	if _, err := cw.Acquire(bg(), core.MustRole("third"), ma); err != nil {
		t.Fatal(err)
	}
	if n := len(wbuf.lines(t)); n != 0 {
		t.Fatalf("%d lines below warn were logged: %v", n, wbuf.lines(t))
	}
}

func TestLoggerNeverShowsTheSASLPassword(t *testing.T) {
	var buf syncBuf
	cfg := coord.DefaultConfig()
	cfg.SASLPassword = "s3cr3t-pw"
	cfg.Logger = slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	cfg.Debug = true
	lg := coord.NewLogger(cfg)
	lg.Debug("auth with s3cr3t-pw failed", "pass", "s3cr3t-pw", "err", errors.New("bad s3cr3t-pw"),
		slog.Group("g", slog.String("x", "s3cr3t-pw")))
	lg.With("attr", "pre-s3cr3t-pw").Info("again")
	out := buf.b.String()
	if strings.Contains(out, "s3cr3t-pw") || strings.Count(out, "[redacted]") != 5 {
		t.Fatalf("%s", out)
	}
}

func (b *syncBuf) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// A client that only watches a role lists it in Stats with its live view's
// lag (the exporter's krabka_role_view_lag_seconds comes from there); it
// once listed only roles it had read, acquired or written through.
func TestStatsListAWatchedRoleWithItsViewLag(t *testing.T) {
	e := newEnv(t)
	ca, _ := e.client()
	cw, _ := e.client()
	if _, err := ca.Acquire(bg(), role, ma); err != nil {
		t.Fatal(err)
	}
	if _, ok := cw.Stats().Roles["controller"]; ok {
		t.Fatalf("a client that never touched the role lists it: %+v", cw.Stats())
	}
	w, err := cw.Watch(bg(), role)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	rs, ok := cw.Stats().Roles["controller"]
	if !ok || rs.ViewLagMs < 0 || rs.ViewLagMs > 1000 || rs.IsLeader || rs.LeaseRemainingMs != -1 || rs.Acquisitions != 0 {
		t.Fatalf("the watched role in Stats: %v %+v", ok, rs)
	}
}
