// krabka-member is a campaign member that takes part in several roles with
// one client (tests/chaos, docs/RELIABILITY.md): the roles of a process
// share its client, its connections and its fate (a kill, a pause or a cut
// hits every role it holds or stands by for).
//
//	krabka-member <bootstrap> <member> <role>=<topic>[:<input topic>] ... [group:<group>:<shards>=<topic>] ...
//
// For each role it does what the demo hosts do for theirs (demo/hosts): it
// acquires the role, and while it leads it dispatches numbered commands to
// the role's command topic through guarded writes from KRABKA_WRITERS
// writers (each command "seq=<n> member=<m> token=<t> writer=<w> try=<k>
// at=<ms>", numbers from 1 in each leadership, a failed number re-sent
// until the leadership ends), renews its lease when due, stops on FENCED or
// an expired lease and tries again after KRABKA_REJOIN_DELAY_MS. Lease
// settings, the pace and the test-only clock offset come from the same
// variables as the demo hosts'. SIGTERM resigns every role held.
//
// Its events are the demo line protocol (demo/events.go) with the role:
//
//	EVENT <unix_ms> <member> <KIND> role=<role> key=value ...
//
// plus MINTED (every producer epoch the library minted or recovered, with
// at_ms, from the library's own log line) and MIDTXN (below).
//
// A role given as <role>=<topic>:<input topic> is a pipeline role
// (pipeline.go): while it leads, the process reads the input topic under
// its term (Leadership.Consume) and turns each request into one command on
// the role's command topic with Leadership.ProduceOffsets, one writer per
// input partition, reporting each as PIPED.
//
// An argument group:<group>:<shards>=<topic> joins a role group instead
// (group.go): the process writes commands for each shard k it is given to
// partition k of the topic.
//
// Mid-transaction faults. A line "ARM" on stdin arms the process: at its
// next renewal whose Produce request was answered (the lease record is
// appended; the transaction is open until its EndTxn), it prints
//
//	EVENT <unix_ms> <member> MIDTXN role=<role> token=<t> broker=<node>
//
// and holds the answer back from the producer (the library's request
// trace, core/kafka WithRequestTrace, runs before the answer is handed on:
// on the connection's goroutine of the role's own producer with
// krabka.engine=client, on the role's transaction goroutine with the shared
// engine), so no EndTxn is sent until the campaign
// writes "GO" (after it killed, stopped or cut off the process). "DISARM"
// withdraws an arm that did not fire. While a role renews, its writers wait
// (the renewal is the only transaction of the role's producer in flight),
// so the Produce answered is the renewal's.
package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/krabka/krabka-coord/core"
	"github.com/krabka/krabka-coord/core/coord"
	"github.com/krabka/krabka-coord/core/kafka"
)

func envMs(name string, def int64) int64 {
	if v := strings.TrimSpace(os.Getenv(name)); v != "" {
		if n, err := strconv.ParseInt(v, 10, 64); err == nil {
			return n
		}
	}
	return def
}

type host struct {
	member  string
	client  *coord.Client
	pace    time.Duration
	rejoin  time.Duration
	poll    time.Duration
	writers int
	// maxMoves is the group mode's move bound (KRABKA_GROUP_MAX_MOVES,
	// default 4).
	maxMoves int

	out   io.Writer // the event lines (stdout)
	outMu sync.Mutex

	armed    atomic.Bool
	mu       sync.Mutex
	renewing map[string]bool
	leads    map[string]*coord.Leadership
	release  chan struct{} // closed by GO
}

func (h *host) emit(kind, role string, kv ...any) {
	var b strings.Builder
	fmt.Fprintf(&b, "EVENT %d %s %s", time.Now().UnixMilli(), h.member, kind)
	if role != "" {
		fmt.Fprintf(&b, " role=%s", role)
	}
	for i := 0; i+1 < len(kv); i += 2 {
		v := fmt.Sprint(kv[i+1])
		if v == "" || strings.ContainsAny(v, " \"\\=\n\t") {
			v = strconv.Quote(v)
		}
		fmt.Fprintf(&b, " %s=%s", kv[i], v)
	}
	h.outMu.Lock()
	fmt.Fprintln(h.out, b.String())
	h.outMu.Unlock()
}

func (h *host) errorEvent(kind, role, op string, err error, kv ...any) {
	code := "ERROR"
	if k := coord.ClientErrorKind(err); k != nil {
		var e *coord.Error
		if errors.As(k, &e) {
			code = e.Name
		}
	} else if errors.Is(err, context.DeadlineExceeded) {
		code = "TIMEOUT"
	}
	msg := err.Error()
	if len(msg) > 300 {
		msg = msg[:300]
	}
	h.emit(kind, role, append([]any{"op", op, "code", code, "msg", msg}, kv...)...)
}

// trace is the request trace of the client's transport: at an armed
// renewal's answered Produce it reports MIDTXN and holds the answer until
// GO.
func (h *host) trace(tr kafka.RequestTrace) {
	// The role's Produce: its own producer's (krabka.engine=client), or
	// the shared engine's, which names the role's transactional id too.
	if (tr.Client != "producer" && tr.Client != "engine-control" && tr.Client != "engine-data") ||
		tr.Key != "Produce" || tr.Err != nil || !h.armed.Load() {
		return
	}
	h.mu.Lock()
	renewing := h.renewing[tr.TxnID]
	l := h.leads[tr.TxnID]
	if !renewing || !h.armed.CompareAndSwap(true, false) {
		h.mu.Unlock()
		return
	}
	ch := make(chan struct{})
	h.release = ch
	h.mu.Unlock()
	token := ""
	if l != nil {
		token = l.Token().String()
	}
	h.emit("MIDTXN", tr.TxnID, "token", token, "broker", tr.Broker)
	<-ch
}

func (h *host) control(in io.Reader) {
	sc := bufio.NewScanner(in)
	for sc.Scan() {
		switch strings.TrimSpace(sc.Text()) {
		case "ARM":
			h.armed.Store(true)
		case "DISARM":
			h.armed.Store(false)
		case "GO":
			h.mu.Lock()
			if h.release != nil {
				close(h.release)
				h.release = nil
			}
			h.mu.Unlock()
		}
	}
}

func (h *host) setRenewing(role string, on bool) {
	h.mu.Lock()
	h.renewing[role] = on
	h.mu.Unlock()
}

func (h *host) setLead(role string, l *coord.Leadership) {
	h.mu.Lock()
	if l == nil {
		delete(h.leads, role)
	} else {
		h.leads[role] = l
	}
	h.mu.Unlock()
}

// sleep waits d or until ctx ends; false when ctx ended.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

func (h *host) runRole(ctx context.Context, roleName, topic, input string) {
	role, err := core.NewRole(roleName)
	if err != nil {
		h.emit("ERROR", roleName, "op", "acquire", "code", "INVALID_ARG", "msg", err.Error())
		return
	}
	member, err := core.NewMemberID(h.member)
	if err != nil {
		h.emit("ERROR", roleName, "op", "acquire", "code", "INVALID_ARG", "msg", err.Error())
		return
	}
	standby := false
	for ctx.Err() == nil {
		actx, cancel := context.WithTimeout(ctx, 5*time.Second)
		l, retryAt, err := h.client.TryAcquire(actx, role, member)
		cancel()
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			h.errorEvent("ERROR", roleName, "acquire", err)
			sleep(ctx, h.poll)
			continue
		}
		if l == nil {
			if !standby {
				h.emit("STANDBY", roleName, "retry_at", retryAt.UnixMilli())
				standby = true
			}
			d := time.Until(retryAt)
			if d > h.poll {
				d = h.poll
			}
			if d < 10*time.Millisecond {
				d = 10 * time.Millisecond
			}
			sleep(ctx, d)
			continue
		}
		standby = false
		h.lead(ctx, roleName, topic, input, l)
		if ctx.Err() != nil {
			return
		}
		sleep(ctx, h.rejoin)
	}
}

// term is what the writers and the renewer of one leadership share.
type term struct {
	mu       sync.Mutex
	seq      int64
	reported bool
	stop     chan struct{}
	once     sync.Once
}

func (t *term) end() { t.once.Do(func() { close(t.stop) }) }

func (t *term) stopped() bool {
	select {
	case <-t.stop:
		return true
	default:
		return false
	}
}

// ended reports the end of the leadership once (the first report wins) and
// stops the writers.
func (h *host) ended(t *term, role, op string, err error, token string) {
	kind := "ERROR"
	switch {
	case errors.Is(err, coord.ErrFenced):
		kind = "FENCED"
	case errors.Is(err, coord.ErrLeaseExpired):
		kind = "EXPIRED"
	}
	t.mu.Lock()
	first := !t.reported
	t.reported = true
	t.mu.Unlock()
	t.end()
	if first {
		h.errorEvent(kind, role, op, err, "token", token)
	}
}

// lead holds one leadership: it renews the lease when due and, for a plain
// role, runs the writers; for a pipeline role (input not empty), the
// pipeline (pipeline.go).
func (h *host) lead(ctx context.Context, role, topic, input string, l *coord.Leadership) {
	defer l.Close()
	h.emit("ACQUIRED", role, "token", l.Token().String(), "deadline", l.Lease().Deadline)
	h.setLead(role, l)
	defer h.setLead(role, nil)
	t := &term{stop: make(chan struct{})}
	var gate sync.RWMutex // writers share it; a renewal takes it alone
	var wg sync.WaitGroup
	if input != "" {
		wg.Add(1)
		go func() {
			defer wg.Done()
			h.pipeline(l, t, &gate, role, topic, input)
		}()
	}
	for w := 1; input == "" && w <= h.writers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			h.writer(l, t, &gate, role, topic, 0, "", w)
		}(w)
	}
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for !t.stopped() {
		select {
		case <-ctx.Done():
			t.end()
			continue
		case <-l.Done():
			h.ended(t, role, "renew", l.Err(), l.Token().String())
			continue
		case <-t.stop:
			continue
		case <-tick.C:
		}
		if !l.RenewDue() {
			continue
		}
		gate.Lock()
		h.setRenewing(role, true)
		rctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err := l.Renew(rctx)
		cancel()
		h.setRenewing(role, false)
		gate.Unlock()
		switch {
		case err == nil:
			h.emit("RENEWED", role, "token", l.Token().String(), "deadline", l.Lease().Deadline)
		case errors.Is(err, coord.ErrFenced), errors.Is(err, coord.ErrLeaseExpired):
			h.ended(t, role, "renew", err, l.Token().String())
		default:
			h.errorEvent("ERROR", role, "renew", err, "token", l.Token().String())
			if l.State() != coord.Active {
				h.ended(t, role, "renew", err, l.Token().String())
			}
		}
	}
	wg.Wait()
	if ctx.Err() != nil && l.State() == coord.Active {
		rctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		err := l.Resign(rctx)
		cancel()
		if err != nil {
			h.errorEvent("ERROR", role, "resign", err)
		}
		h.emit("RESIGNED", role, "token", l.Token().String())
	}
}

// writer dispatches numbered commands to partition part of topic while the
// term lasts; extra (" key=value ...") goes into each command before at=.
func (h *host) writer(l *coord.Leadership, t *term, gate *sync.RWMutex, role, topic string, part int32, extra string, w int) {
	for !t.stopped() {
		t.mu.Lock()
		t.seq++
		seq := t.seq
		t.mu.Unlock()
		for attempt := 1; !t.stopped(); attempt++ {
			gate.RLock()
			token := l.Token().String() // read again: an own epoch recovery changes it
			value := fmt.Sprintf("seq=%d member=%s token=%s writer=%d try=%d%s at=%d", seq, h.member, token, w, attempt, extra, time.Now().UnixMilli())
			pctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			res, err := l.Produce(pctx, coord.Message{Topic: topic, Partition: part, Key: []byte(h.member), Value: []byte(value)})
			cancel()
			gate.RUnlock()
			if err == nil && len(res) != 1 {
				err = fmt.Errorf("produce returned %d results", len(res))
			}
			if err != nil {
				if errors.Is(err, coord.ErrFenced) || errors.Is(err, coord.ErrLeaseExpired) {
					h.ended(t, role, "dispatch", err, token)
					return
				}
				h.errorEvent("ERROR", role, "dispatch", err, "token", token, "writer", w)
				if l.State() != coord.Active {
					h.ended(t, role, "dispatch", err, token)
					return
				}
				select {
				case <-t.stop:
				case <-time.After(h.pace):
				}
				continue
			}
			h.emit("DISPATCHED", role, "seq", seq, "token", token, "partition", res[0].Partition, "offset", res[0].Offset, "writer", w)
			break
		}
		select {
		case <-t.stop:
		case <-time.After(h.pace):
		}
	}
}

// mintLog forwards the library's log records to stderr and reports each
// minted or recovered producer epoch as MINTED.
type mintLog struct {
	inner slog.Handler
	h     *host
}

func (m mintLog) Enabled(ctx context.Context, l slog.Level) bool { return m.inner.Enabled(ctx, l) }

func (m mintLog) Handle(ctx context.Context, r slog.Record) error {
	key := ""
	switch {
	case strings.HasPrefix(r.Message, "krabka: minted a producer epoch"):
		key = "token"
	case strings.HasPrefix(r.Message, "krabka: own epoch recovery"):
		key = "new_token"
	}
	if key != "" {
		var txn, token, at string
		r.Attrs(func(a slog.Attr) bool {
			switch a.Key {
			case "transactional_id":
				txn = a.Value.String()
			case key:
				token = a.Value.String()
			case "at_ms":
				at = a.Value.String()
			}
			return true
		})
		if token != "" {
			m.h.emit("MINTED", txn, "token", token, "at_ms", at)
		}
	}
	return m.inner.Handle(ctx, r)
}

func (m mintLog) WithAttrs(as []slog.Attr) slog.Handler {
	return mintLog{inner: m.inner.WithAttrs(as), h: m.h}
}

func (m mintLog) WithGroup(name string) slog.Handler {
	return mintLog{inner: m.inner.WithGroup(name), h: m.h}
}

func main() {
	if len(os.Args) < 4 {
		fmt.Fprintln(os.Stderr, "usage: krabka-member <bootstrap> <member> <role>=<topic>[:<input topic>] ... [group:<group>:<shards>=<topic>] ...")
		os.Exit(2)
	}
	h := &host{member: os.Args[2], out: os.Stdout, renewing: map[string]bool{}, leads: map[string]*coord.Leadership{},
		pace:     time.Duration(envMs("KRABKA_DISPATCH_INTERVAL_MS", 250)) * time.Millisecond,
		rejoin:   time.Duration(envMs("KRABKA_REJOIN_DELAY_MS", 1000)) * time.Millisecond,
		poll:     250 * time.Millisecond,
		writers:  int(max(1, envMs("KRABKA_WRITERS", 1))),
		maxMoves: int(max(1, envMs("KRABKA_GROUP_MAX_MOVES", 4)))}
	type roleTopic struct{ role, topic, input string }
	var roles []roleTopic
	var groups []groupSpec
	for _, a := range os.Args[3:] {
		if g, ok, err := parseGroupArg(a); err != nil {
			fmt.Fprintf(os.Stderr, "krabka-member: %v\n", err)
			os.Exit(2)
		} else if ok {
			groups = append(groups, g)
			continue
		}
		r, t, ok := strings.Cut(a, "=")
		t, in, pipe := strings.Cut(t, ":")
		if !ok || r == "" || t == "" || (pipe && in == "") {
			fmt.Fprintf(os.Stderr, "krabka-member: %q is not <role>=<topic> or <role>=<topic>:<input topic>\n", a)
			os.Exit(2)
		}
		roles = append(roles, roleTopic{r, t, in})
	}
	cfg := coord.DefaultConfig()
	set := func(k, v string) {
		if err := cfg.Set(k, v); err != nil {
			fmt.Fprintf(os.Stderr, "krabka-member: %s: %v\n", k, err)
			os.Exit(2)
		}
	}
	set("bootstrap.servers", os.Args[1])
	set("client.id", "krabka-chaos-"+h.member)
	set("krabka.lease.ms", strconv.FormatInt(envMs("KRABKA_LEASE_MS", 3000), 10))
	set("krabka.renew.interval.ms", strconv.FormatInt(envMs("KRABKA_RENEW_INTERVAL_MS", 1000), 10))
	set("krabka.challenge.stagger.ms", strconv.FormatInt(envMs("KRABKA_CHALLENGE_STAGGER_MS", 1000), 10))
	set("krabka.poll.interval.ms", "250")
	set("krabka.log.level", "info")
	if v := envMs("KRABKA_REQUEST_TIMEOUT_MS", 0); v > 0 {
		set("request.timeout.ms", strconv.FormatInt(v, 10))
	}
	if v := envMs("KRABKA_TEST_CLOCK_OFFSET_MS", 0); v != 0 {
		set("krabka.test.clock.offset.ms", strconv.FormatInt(v, 10))
	}
	cfg.Logger = slog.New(mintLog{inner: slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}), h: h})
	client, err := kafka.NewClient(cfg, kafka.WithRequestTrace(h.trace))
	if err != nil {
		fmt.Fprintf(os.Stderr, "krabka-member: %v\n", err)
		os.Exit(2)
	}
	h.client = client
	var glog coord.GroupLog
	if len(groups) > 0 {
		if glog, err = kafka.NewGroupLog(cfg); err != nil {
			fmt.Fprintf(os.Stderr, "krabka-member: %v\n", err)
			os.Exit(2)
		}
		defer glog.Transport.Close()
	}
	h.emit("STARTED", "", "lang", "go", "pid", os.Getpid(), "roles", len(roles), "groups", len(groups))
	go h.control(os.Stdin)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var wg sync.WaitGroup
	for _, rt := range roles {
		wg.Add(1)
		go func() {
			defer wg.Done()
			h.runRole(ctx, rt.role, rt.topic, rt.input)
		}()
	}
	for _, g := range groups {
		wg.Add(1)
		go func() {
			defer wg.Done()
			h.runGroup(ctx, glog, g)
		}()
	}
	wg.Wait()
	h.emit("STOPPED", "")
	client.Close()
}
