// Command crossrole measures issue 34: every role of a coordination
// partition shares the partition's last stable offset (LSO), so one
// transaction left open on the partition (a holder killed or cut off between
// its renewal's Produce and its EndTxn) freezes the read_committed view of
// every member of every role there until the broker aborts it (the
// transaction's timeout plus the broker's scan,
// transaction.abort.timed.out.transaction.cleanup.interval.ms). Standbys of
// other roles then see their healthy holders' leases run out in the frozen
// view, challenge and depose them.
//
// One run: a coordination topic of its own with ONE partition (krabka.topic,
// krabka.topic.partitions=1), so every role shares it. Per round:
//
//   - -roles healthy roles (fresh names per round), each with a holder in a
//     client of its own renewing in the background (krabka.renew.background,
//     renew interval = lease/3) and a standby in another client of its own,
//     waiting in Acquire for the same role;
//   - one "dead" role whose holder runs in a child process (this binary,
//     "crossrole dead-holder"), renews by hand, and is SIGKILLed between two
//     renewals at a random instant; its standby waits in this process;
//   - at another random instant (both uniform in [0, lease) after every
//     standby is in its role's roster), with -intruder, a franz-go producer
//     with a transactional.id of its own and a transaction timeout of one
//     lease (what a killed holder of the current release leaves) begins a
//     transaction, produces one record (a valid lease record of a role nobody
//     else uses) to the coordination partition, waits for the broker's ack,
//     and never ends the transaction;
//   - the run then observes for lease + the broker's scan interval + 2
//     challenge staggers + -margin after the later of the two instants.
//
// A healthy holder is deposed when its standby's Acquire returned while the
// holder's last renewed lease (Leadership.Lease, which only a successful
// renewal moves) was still live and the leadership had not ended as expired
// or closed: its renewals were succeeding, and the standby took the role
// anyway. The dead role's replacement time is the standby's win minus the
// deadline of the dead holder's last lease (as the child reported it when it
// stopped renewing).
//
// It uses only core/coord's client API (through core/kafka.NewClient, the
// client on real Kafka) and franz-go, so the same program measures the
// library before and after a change of how members read the log.
//
//	go run ./bench/crossrole -bootstrap 127.0.0.1:27300 -lease 6s -roles 4 -rounds 4 -label before
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/krabka/krabka-coord/bench/internal/childproc"
	"github.com/krabka/krabka-coord/core"
	"github.com/krabka/krabka-coord/core/coord"
	"github.com/krabka/krabka-coord/core/kafka"
	"github.com/krabka/krabka-coord/internal/perfdoc"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

const scanKey = "transaction.abort.timed.out.transaction.cleanup.interval.ms"

type options struct {
	bootstrap  string
	lease      time.Duration
	renew      time.Duration
	stagger    time.Duration
	poll       time.Duration
	scan       time.Duration // the broker's scan for timed-out transactions (0: ask the broker)
	margin     time.Duration
	roles      int
	rounds     int
	intruder   bool
	intrTxnTO  time.Duration // the intruder's transaction timeout (0: the lease)
	topic      string
	logLevel   string
	props      string
	seed       uint64
	label      string
	out        string
	outDir     string
	commit     string
	kafkaLib   string
	extraProps map[string]string
}

func main() {
	if len(os.Args) > 1 && os.Args[1] == "dead-holder" {
		runDeadHolder(os.Args[2:])
		return
	}
	var o options
	flag.StringVar(&o.bootstrap, "bootstrap", os.Getenv("KRABKA_BOOTSTRAP"), "bootstrap.servers (default $KRABKA_BOOTSTRAP)")
	flag.DurationVar(&o.lease, "lease", 6*time.Second, "krabka.lease.ms (6s, 10s, 30s)")
	flag.DurationVar(&o.renew, "renew", 0, "krabka.renew.interval.ms (0: lease/3)")
	flag.DurationVar(&o.stagger, "stagger", 5*time.Second, "krabka.challenge.stagger.ms (the library's default)")
	flag.DurationVar(&o.poll, "poll", time.Second, "krabka.poll.interval.ms (the library's default)")
	flag.DurationVar(&o.scan, "scan", 0, "the broker's "+scanKey+" used for the observation window (0: read it from the broker)")
	flag.DurationVar(&o.margin, "margin", 2*time.Second, "observation margin after lease + scan + 2 staggers")
	flag.IntVar(&o.roles, "roles", 4, "healthy roles per round (plus one dead role)")
	flag.IntVar(&o.rounds, "rounds", 4, "rounds")
	flag.BoolVar(&o.intruder, "intruder", true, "leave one transaction open on the partition (false: the control)")
	flag.DurationVar(&o.intrTxnTO, "intruder-timeout", 0, "the intruder's transaction timeout (0: the lease, as a killed holder of the current release leaves it)")
	flag.StringVar(&o.topic, "topic", "", "coordination topic (default crossrole-<label>-<unix time>, one partition, created here)")
	flag.StringVar(&o.logLevel, "log-level", "warn", "krabka.log.level of every client")
	flag.StringVar(&o.props, "props", "", "more client properties k=v,k=v (every client)")
	flag.Uint64Var(&o.seed, "seed", 0, "seed of the random instants (0: from the clock)")
	flag.StringVar(&o.label, "label", "", "before | after (in the results file's name and settings)")
	flag.StringVar(&o.out, "out", "", "results file (default: -out-dir/crossrole-<label>-<setting>-<date>-<commit>.json)")
	flag.StringVar(&o.outDir, "out-dir", "bench/results", "directory of the results file when -out is not given ('' with no -out: write none)")
	flag.StringVar(&o.commit, "commit", "", "commit recorded in the results (default: git rev-parse --short HEAD of the working directory)")
	flag.StringVar(&o.kafkaLib, "kafka-lib", "tests/kafka/lib", "directory of the broker jars (their name gives the Kafka version)")
	flag.Parse()
	if o.bootstrap == "" {
		die("no -bootstrap (or KRABKA_BOOTSTRAP)")
	}
	if o.roles < 1 || o.rounds < 1 {
		die("-roles and -rounds must be at least 1")
	}
	if o.renew == 0 {
		o.renew = o.lease / 3
	}
	if o.intrTxnTO == 0 {
		o.intrTxnTO = o.lease
	}
	if o.seed == 0 {
		o.seed = uint64(time.Now().UnixNano())
	}
	var err error
	if o.extraProps, err = parseProps(o.props); err != nil {
		die("-props: %v", err)
	}
	run := time.Now().Unix()
	if o.topic == "" {
		l := o.label
		if l == "" {
			l = "run"
		}
		o.topic = fmt.Sprintf("crossrole-%s-%d", l, run)
	}

	f := perfdoc.NewFile("crossrole")
	if o.commit != "" {
		f.Commit, f.Dirty = o.commit, false
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	kinfo, err := perfdoc.AskKafka(ctx, strings.Split(o.bootstrap, ","), perfdoc.KafkaVersion(o.kafkaLib))
	cancel()
	if err != nil {
		die("asking the cluster what it runs: %v", err)
	}
	adm, admCl, err := newAdmin(o.bootstrap)
	if err != nil {
		die("%v", err)
	}
	defer admCl.Close()
	brokerCfg := brokerSettings(adm)
	for k, v := range brokerCfg {
		kinfo.Settings[k] = v
	}
	f.Kafka = kinfo
	if o.scan == 0 {
		ms, err := strconv.Atoi(brokerCfg[scanKey])
		if err != nil {
			die("cannot read the broker's %s (%q); give -scan", scanKey, brokerCfg[scanKey])
		}
		o.scan = time.Duration(ms) * time.Millisecond
	}
	if err := createTopic(adm, o.topic); err != nil {
		die("creating the topic %s: %v", o.topic, err)
	}
	rng := rand.New(rand.NewPCG(o.seed, o.seed^0x9e3779b97f4a7c15))
	fmt.Printf("crossrole: topic %s (1 partition), lease %v, renew %v, stagger %v, scan %v, %d roles x %d rounds, intruder %v, seed %d, commit %s (dirty %v), load %v\n",
		o.topic, o.lease, o.renew, o.stagger, o.scan, o.roles, o.rounds, o.intruder, o.seed, f.Commit, f.Dirty, f.LoadBefore)

	obs, err := newClient(o, "crossrole-observer", false)
	if err != nil {
		die("observer client: %v", err)
	}
	defer obs.Close()

	var all []roundResult
	for r := 0; r < o.rounds; r++ {
		rr, err := runRound(o, rng, obs, adm, run, r)
		if err != nil {
			die("round %d: %v", r, err)
		}
		all = append(all, rr)
		// Nothing may hold the stable offset when the next round begins
		// (the intruder, or a client closed in the middle of a renewal).
		d, err := settle(adm, o.topic, o.lease+o.scan+30*time.Second)
		if err != nil {
			die("after round %d: %v", r, err)
		}
		if d > 100*time.Millisecond {
			fmt.Printf("  (waited %.1f s for the stable offset to reach the end of the partition)\n", d.Seconds())
		}
	}
	writeResults(o, f, all)
}

func die(f string, a ...any) {
	fmt.Fprintf(os.Stderr, "crossrole: "+f+"\n", a...)
	os.Exit(1)
}

// clientProps is the property map of every client of the run.
func clientProps(o options, clientID string, background bool) map[string]string {
	m := map[string]string{
		"bootstrap.servers":           o.bootstrap,
		"client.id":                   clientID,
		"krabka.topic":                o.topic,
		"krabka.topic.partitions":     "1",
		"krabka.lease.ms":             strconv.FormatInt(o.lease.Milliseconds(), 10),
		"krabka.renew.interval.ms":    strconv.FormatInt(o.renew.Milliseconds(), 10),
		"krabka.challenge.stagger.ms": strconv.FormatInt(o.stagger.Milliseconds(), 10),
		"krabka.poll.interval.ms":     strconv.FormatInt(o.poll.Milliseconds(), 10),
		"krabka.renew.background":     strconv.FormatBool(background),
		"krabka.log.level":            o.logLevel,
	}
	for k, v := range o.extraProps {
		m[k] = v
	}
	return m
}

func newClient(o options, clientID string, background bool) (*coord.Client, error) {
	cfg, err := coord.ConfigFromMap(clientProps(o, clientID, background))
	if err != nil {
		return nil, err
	}
	return kafka.NewClient(cfg)
}

func newAdmin(bootstrap string) (*kadm.Client, *kgo.Client, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(bootstrap, ",")...))
	if err != nil {
		return nil, nil, err
	}
	return kadm.NewClient(cl), cl, nil
}

// brokerSettings reads the broker settings that bound how long an open
// transaction holds the stable offset.
func brokerSettings(adm *kadm.Client) map[string]string {
	out := map[string]string{}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	md, err := adm.BrokerMetadata(ctx)
	if err != nil || len(md.Brokers) == 0 {
		return out
	}
	rcs, err := adm.DescribeBrokerConfigs(ctx, md.Brokers[0].NodeID)
	if err != nil {
		return out
	}
	want := map[string]bool{scanKey: true, "transaction.max.timeout.ms": true,
		"transaction.remove.expired.transaction.cleanup.interval.ms": true}
	for _, rc := range rcs {
		for _, c := range rc.Configs {
			if want[c.Key] && c.Value != nil {
				out[c.Key] = *c.Value
			}
		}
	}
	return out
}

// createTopic creates the run's coordination topic: one partition, the
// cluster's default replication, and the compaction settings the library
// asks of a coordination topic (so it logs no warning about them).
func createTopic(adm *kadm.Client, topic string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	seg, ratio, pol := "3600000", "0.1", "compact"
	res, err := adm.CreateTopic(ctx, 1, -1, map[string]*string{
		"cleanup.policy": &pol, "segment.ms": &seg, "min.cleanable.dirty.ratio": &ratio}, topic)
	if err == nil {
		err = res.Err
	}
	if err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
		return err
	}
	return nil
}

// ---- one round ----

// healthy is one healthy role of a round: its holder and its standby.
type healthy struct {
	name      string
	holderCl  *coord.Client
	standbyCl *coord.Client
	holder    *coord.Leadership

	mu           sync.Mutex
	holderEndNs  int64
	holderEnd    coord.LeadershipState
	holderEndErr string
	sb           standbyResult
}

// standbyResult is what a standby's Acquire ended with.
type standbyResult struct {
	returned bool
	won      bool
	winNs    int64
	err      error
	l        *coord.Leadership
	// The holder as the standby's win found it (healthy roles only).
	holderLease core.Lease
	holderState coord.LeadershipState
}

// roleOutcome is one healthy role's result.
type roleOutcome struct {
	name          string
	deposed       bool
	healthy       bool // the holder's renewals were succeeding throughout (or until it was deposed)
	leaseLeftMs   float64
	winAfterMs    float64 // the standby's win after the observation origin
	renewOK       int64
	renewFailed   int64
	holderEnd     string
	standbyReturn string
}

type roundResult struct {
	roles        []roleOutcome
	deadReplMs   float64
	deadReplaced bool
	deadEarly    bool // the dead role's standby won before its holder was killed
	// deadSeen: (intruder runs) the dead holder's last renewal was granted
	// before the intruder's record was sent, so the frozen view held the
	// dead holder's last lease; false: it renewed after, and the frozen
	// view held an older lease of it.
	deadSeen  bool
	lsoHeldMs float64
	lsoHeldOK bool
}

func runRound(o options, rng *rand.Rand, obs *coord.Client, adm *kadm.Client, run int64, round int) (roundResult, error) {
	var rr roundResult
	prefix := fmt.Sprintf("xr-%d-r%d", run, round)
	deadName := prefix + "-dead"

	// The dead role's holder: a child process.
	child, err := startChild(o, deadName)
	if err != nil {
		return rr, err
	}
	defer child.Kill()
	acq, err := child.Wait("acq", 60*time.Second)
	if err != nil {
		return rr, fmt.Errorf("dead holder: %w", err)
	}
	_ = acq

	// The healthy holders, each in a client of its own.
	hs := make([]*healthy, o.roles)
	var wg sync.WaitGroup
	errs := make([]error, o.roles)
	for i := range hs {
		h := &healthy{name: fmt.Sprintf("%s-%c", prefix, 'a'+i)}
		hs[i] = h
		wg.Add(1)
		go func() {
			defer wg.Done()
			if h.holderCl, errs[i] = newClient(o, h.name+"-holder", true); errs[i] != nil {
				return
			}
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			h.holder, errs[i] = h.holderCl.Acquire(ctx, core.MustRole(h.name), mustMember("holder"))
		}()
	}
	wg.Wait()
	defer func() {
		for _, h := range hs {
			if h.holderCl != nil {
				h.holderCl.Close()
			}
		}
	}()
	for i, err := range errs {
		if err != nil {
			return rr, fmt.Errorf("holder of %s: %w", hs[i].name, err)
		}
	}
	for _, h := range hs {
		go func() {
			<-h.holder.Done()
			t := time.Now().UnixNano()
			h.mu.Lock()
			h.holderEndNs, h.holderEnd, h.holderEndErr = t, h.holder.State(), fmt.Sprint(h.holder.Err())
			h.mu.Unlock()
		}()
	}

	// The standbys, each in a client of its own, waiting in Acquire.
	sbCtx, sbCancel := context.WithCancel(context.Background())
	defer sbCancel()
	var sbWG sync.WaitGroup
	for _, h := range hs {
		if h.standbyCl, err = newClient(o, h.name+"-standby", true); err != nil {
			return rr, err
		}
		defer h.standbyCl.Close()
		sbWG.Add(1)
		go func() {
			defer sbWG.Done()
			l, err := h.standbyCl.Acquire(sbCtx, core.MustRole(h.name), mustMember("standby"))
			t := time.Now().UnixNano()
			// Read the holder at once: the standby's mint has fenced it.
			hl, hst := h.holder.Lease(), h.holder.State()
			h.mu.Lock()
			h.sb = standbyResult{returned: true, won: err == nil, winNs: t, err: err, l: l, holderLease: hl, holderState: hst}
			h.mu.Unlock()
		}()
	}
	deadSb, err := newClient(o, deadName+"-standby", true)
	if err != nil {
		return rr, err
	}
	defer deadSb.Close()
	var (
		deadMu  sync.Mutex
		deadRes standbyResult
	)
	sbWG.Add(1)
	go func() {
		defer sbWG.Done()
		l, err := deadSb.Acquire(sbCtx, core.MustRole(deadName), mustMember("standby"))
		t := time.Now().UnixNano()
		deadMu.Lock()
		deadRes = standbyResult{returned: true, won: err == nil, winNs: t, err: err, l: l}
		deadMu.Unlock()
	}()

	// Every standby in its role's roster before the clock starts.
	names := []string{deadName}
	for _, h := range hs {
		names = append(names, h.name)
	}
	if err := waitRosters(obs, names, 60*time.Second); err != nil {
		return rr, err
	}

	origin := time.Now()
	killAfter := time.Duration(rng.Int64N(int64(o.lease)))
	intrAfter := time.Duration(rng.Int64N(int64(o.lease)))
	var (
		killDone   = make(chan struct{})
		frozen     event
		killErr    error
		intrDone   = make(chan struct{})
		intrAckNs  int64
		intrSendNs int64
		intrOffset int64 = -1
		intrErr    error
		intrCl     *kgo.Client
	)
	go func() {
		defer close(killDone)
		time.Sleep(time.Until(origin.Add(killAfter)))
		child.Send("freeze")
		frozen, killErr = child.Wait("frozen", 30*time.Second)
		child.Kill()
	}()
	go func() {
		defer close(intrDone)
		if !o.intruder {
			return
		}
		time.Sleep(time.Until(origin.Add(intrAfter)))
		intrCl, intrSendNs, intrAckNs, intrOffset, intrErr = intrude(o, prefix+"-intruder")
	}()
	<-killDone
	<-intrDone
	defer func() {
		if intrCl != nil {
			intrCl.Close() // after the window: the broker has aborted the transaction by then
		}
	}()
	if killErr != nil {
		return rr, fmt.Errorf("dead holder: %w", killErr)
	}
	if intrErr != nil {
		return rr, fmt.Errorf("intruder: %w", intrErr)
	}
	last := max(killAfter, intrAfter)
	if !o.intruder {
		last = killAfter
	}
	windowEnd := origin.Add(last + o.lease + o.scan + 2*o.stagger + o.margin)

	// The stable offset: when does it pass the intruder's record?
	lsoCtx, lsoCancel := context.WithDeadline(context.Background(), windowEnd)
	lsoDone := make(chan struct{})
	var lsoPassNs int64
	go func() {
		defer close(lsoDone)
		if intrOffset < 0 {
			return
		}
		for lsoCtx.Err() == nil {
			if lso, _, err := offsets(lsoCtx, adm, o.topic); err == nil && lso > intrOffset {
				lsoPassNs = time.Now().UnixNano()
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
	}()

	// Observe until the window ends (or every standby returned).
	allReturned := func() bool {
		deadMu.Lock()
		ok := deadRes.returned
		deadMu.Unlock()
		for _, h := range hs {
			h.mu.Lock()
			ok = ok && h.sb.returned
			h.mu.Unlock()
		}
		return ok
	}
	for time.Now().Before(windowEnd) && !allReturned() {
		time.Sleep(20 * time.Millisecond)
	}
	<-lsoDone
	lsoCancel()
	cancelNs := time.Now().UnixNano()
	sbCancel()
	waitTimeout(&sbWG, 30*time.Second)

	// Count.
	deadMu.Lock()
	dr := deadRes
	deadMu.Unlock()
	if dr.won {
		rr.deadReplaced = true
		rr.deadReplMs = float64(dr.winNs)/1e6 - float64(frozen.Deadline)
		rr.deadEarly = dr.winNs < frozen.T
		rr.deadSeen = frozen.Granted*1e6 < intrSendNs
	}
	if lsoPassNs > 0 {
		rr.lsoHeldOK = true
		rr.lsoHeldMs = float64(lsoPassNs-intrAckNs) / 1e6
	}
	var deposed int
	for _, h := range hs {
		h.mu.Lock()
		sb, endNs, endSt, endErr := h.sb, h.holderEndNs, h.holderEnd, h.holderEndErr
		h.mu.Unlock()
		rs := h.holderCl.Stats().Roles[h.name]
		oc := roleOutcome{name: h.name, renewOK: rs.RenewalsOK, renewFailed: rs.RenewalsFailed}
		switch {
		case endNs == 0:
			oc.holderEnd = "ACTIVE"
		default:
			oc.holderEnd = fmt.Sprintf("%s at +%.0f ms (%s)", endSt, float64(endNs-origin.UnixNano())/1e6, endErr)
		}
		switch {
		case sb.won:
			oc.winAfterMs = float64(sb.winNs-origin.UnixNano()) / 1e6
			oc.standbyReturn = fmt.Sprintf("won at +%.0f ms", oc.winAfterMs)
			live := sb.holderLease.Deadline*1e6 > sb.winNs
			okState := sb.holderState == coord.Active || sb.holderState == coord.Fenced
			if live && okState {
				oc.deposed, oc.healthy = true, true
				oc.leaseLeftMs = float64(sb.holderLease.Deadline) - float64(sb.winNs)/1e6
			}
		case sb.returned && sb.winNs < cancelNs:
			oc.standbyReturn = "failed: " + sb.err.Error()
			oc.healthy = endNs == 0
		default:
			oc.standbyReturn = "still waiting at the window's end"
			oc.healthy = endNs == 0
		}
		if oc.deposed {
			deposed++
		}
		rr.roles = append(rr.roles, oc)
	}

	// Report the round.
	intr := "no intruder"
	if o.intruder {
		intr = fmt.Sprintf("intruder at +%.0f ms (offset %d)", float64(intrAckNs-origin.UnixNano())/1e6, intrOffset)
		if rr.lsoHeldOK {
			intr += fmt.Sprintf(", LSO held %.0f ms", rr.lsoHeldMs)
		} else {
			intr += ", LSO still held at the window's end"
		}
	}
	dead := "not replaced within the window"
	if rr.deadReplaced {
		dead = fmt.Sprintf("replaced %+.0f ms after its deadline", rr.deadReplMs)
		if rr.deadEarly {
			dead += " (its standby won before the kill)"
		}
		if o.intruder && rr.deadSeen {
			dead += " (its last renewal came before the intruder)"
		} else if o.intruder {
			dead += " (its last renewal came after the intruder)"
		}
	}
	fmt.Printf("round %d: dead holder killed at +%.0f ms (deadline +%.0f ms, %s), %s; %s; healthy holders deposed %d/%d (load %v)\n",
		round, float64(frozen.T-origin.UnixNano())/1e6, float64(frozen.Deadline)-float64(origin.UnixNano())/1e6, frozen.State, dead, intr,
		deposed, o.roles, perfdoc.LoadAvg())
	for _, oc := range rr.roles {
		mark := "kept"
		if oc.deposed {
			mark = fmt.Sprintf("DEPOSED with %.0f ms of its lease left", oc.leaseLeftMs)
		} else if !oc.healthy {
			mark = "holder unhealthy"
		}
		fmt.Printf("  %s: %s; standby %s; holder %s, renewals ok %d failed %d\n", oc.name, mark, oc.standbyReturn, oc.holderEnd, oc.renewOK, oc.renewFailed)
	}

	// Close this round's leaderships and clients, then wait until nothing
	// holds the stable offset (a client closed during a renewal, or the
	// intruder) before the next round.
	for _, h := range hs {
		h.mu.Lock()
		if h.sb.l != nil {
			h.sb.l.Close()
		}
		h.mu.Unlock()
		h.holder.Close()
	}
	if dr.l != nil {
		dr.l.Close()
	}
	return rr, nil
}

// settle waits until the partition's stable offset reaches its high
// watermark (nothing open on it).
func settle(adm *kadm.Client, topic string, bound time.Duration) (time.Duration, error) {
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	for {
		lso, hwm, err := offsets(ctx, adm, topic)
		if err == nil && lso == hwm {
			return time.Since(start), nil
		}
		select {
		case <-ctx.Done():
			return time.Since(start), fmt.Errorf("the stable offset of %s did not reach its end within %v (lso %d, end %d, %v)", topic, bound, lso, hwm, err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// offsets returns partition 0's last stable offset and high watermark.
func offsets(ctx context.Context, adm *kadm.Client, topic string) (int64, int64, error) {
	c, err := adm.ListCommittedOffsets(ctx, topic)
	if err != nil {
		return 0, 0, err
	}
	e, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		return 0, 0, err
	}
	lc, ok1 := c.Lookup(topic, 0)
	le, ok2 := e.Lookup(topic, 0)
	if !ok1 || !ok2 || lc.Err != nil || le.Err != nil {
		return 0, 0, fmt.Errorf("listing offsets of %s: %v %v", topic, lc.Err, le.Err)
	}
	return lc.Offset, le.Offset, nil
}

func waitTimeout(wg *sync.WaitGroup, d time.Duration) {
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(d):
		fmt.Fprintln(os.Stderr, "crossrole: a standby's Acquire did not return within", d, "of its cancellation")
	}
}

func mustMember(s string) core.MemberID {
	m, err := core.NewMemberID(s)
	if err != nil {
		panic(err)
	}
	return m
}

// waitRosters waits until every role's roster holds its holder and its
// standby.
func waitRosters(obs *coord.Client, names []string, bound time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	for _, n := range names {
		for {
			st, err := obs.Describe(ctx, core.MustRole(n))
			if err == nil {
				has := false
				for _, r := range st.Roster {
					if r.Member.String() == "standby" {
						has = true
					}
				}
				if has {
					break
				}
			}
			if ctx.Err() != nil {
				return fmt.Errorf("the standby of %s is not in its roster after %v (%v)", n, bound, err)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	return nil
}

// intrude begins a transaction with a transactional.id of its own, produces
// one record to the coordination partition, waits for the broker's ack and
// returns without ending the transaction (the client stays open, so nothing
// aborts it but the broker).
func intrude(o options, txnID string) (cl *kgo.Client, sendNs, ackNs, offset int64, err error) {
	cl, err = kgo.NewClient(kgo.SeedBrokers(strings.Split(o.bootstrap, ",")...),
		kgo.TransactionalID(txnID), kgo.TransactionTimeout(o.intrTxnTO),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.RequiredAcks(kgo.AllISRAcks()))
	if err != nil {
		return nil, 0, 0, -1, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	pid, epoch, err := cl.ProducerID(ctx)
	if err != nil {
		cl.Close()
		return nil, 0, 0, -1, fmt.Errorf("InitProducerId: %w", err)
	}
	if err := cl.BeginTransaction(); err != nil {
		cl.Close()
		return nil, 0, 0, -1, err
	}
	// A lease record of a role nobody else uses, as a killed holder's
	// renewal would leave it.
	role := core.MustRole(txnID)
	tok, err := core.NewFencingToken(pid, epoch)
	if err != nil {
		tok, _ = core.NewFencingToken(0, 0)
	}
	now := time.Now().UnixMilli()
	val := core.EncodeLease(core.Lease{Member: mustMember("intruder"), Token: tok, GrantedAt: now, Deadline: now + o.lease.Milliseconds()})
	rec := &kgo.Record{Topic: o.topic, Partition: 0, Key: core.EncodeKey(core.LeaseKey(role)), Value: val}
	sendNs = time.Now().UnixNano()
	res := cl.ProduceSync(ctx, rec)
	if err := res.FirstErr(); err != nil {
		cl.Close()
		return nil, 0, 0, -1, err
	}
	return cl, sendNs, time.Now().UnixNano(), rec.Offset, nil
}

// ---- the child process ----

// startChild starts the dead role's holder (this binary, "dead-holder").
func startChild(o options, role string) (*childproc.Proc[event], error) {
	var kv []string
	for k, v := range clientProps(o, role+"-holder", false) {
		kv = append(kv, k+"="+v)
	}
	sort.Strings(kv)
	cmd := exec.Command(os.Args[0], "dead-holder", "-props", strings.Join(kv, ","), "-role", role, "-member", "holder")
	cmd.Stderr = os.Stderr
	return childproc.Start[event](cmd, childproc.Options{Events: 256})
}

// ---- the results file ----

func writeResults(o options, f *perfdoc.File, all []roundResult) {
	var (
		perRound                      []float64
		deposed, healthyN, unhealthyN int
		left, repl, lso               []float64
		replSeen, replUnseen          []float64
		deadMissing, deadEarly        int
	)
	for _, rr := range all {
		n := 0
		for _, oc := range rr.roles {
			if oc.deposed {
				n++
				left = append(left, oc.leaseLeftMs)
			}
			if oc.healthy {
				healthyN++
			} else {
				unhealthyN++
			}
		}
		deposed += n
		perRound = append(perRound, float64(n))
		if rr.deadReplaced {
			repl = append(repl, rr.deadReplMs)
			if o.intruder && rr.deadSeen {
				replSeen = append(replSeen, rr.deadReplMs)
			} else if o.intruder {
				replUnseen = append(replUnseen, rr.deadReplMs)
			}
			if rr.deadEarly {
				deadEarly++
			}
		} else {
			deadMissing++
		}
		if rr.lsoHeldOK {
			lso = append(lso, rr.lsoHeldMs)
		}
	}
	holders := o.roles * o.rounds
	m := perfdoc.Summarize("healthy-deposed", "healthy holders deposed per round: the standby's Acquire returned while its holder's last renewed lease was live", "holders", perRound)
	m.Extra = map[string]float64{"deposed": float64(deposed), "healthy_holders": float64(healthyN), "unhealthy_holders": float64(unhealthyN),
		"holders": float64(holders), "roles": float64(o.roles), "rounds": float64(o.rounds)}
	if healthyN > 0 {
		m.Extra["deposed_pct"] = float64(int(1000*float64(deposed)/float64(healthyN)+0.5)) / 10
	}
	f.Measures = append(f.Measures, m)
	if len(repl) > 0 {
		m := perfdoc.Summarize("dead-replacement", "a killed holder (SIGKILLed child process, between two renewals): its deadline -> its standby's Acquire returned", "ms", repl)
		m.Extra = map[string]float64{"not_replaced": float64(deadMissing), "won_before_kill": float64(deadEarly)}
		f.Measures = append(f.Measures, m)
	}
	if len(replSeen) > 0 {
		f.Measures = append(f.Measures, perfdoc.Summarize("dead-replacement-last-seen", "dead-replacement of the rounds whose dead holder renewed last before the intruder's record was sent (the frozen view held its last lease)", "ms", replSeen))
	}
	if len(replUnseen) > 0 {
		f.Measures = append(f.Measures, perfdoc.Summarize("dead-replacement-last-unseen", "dead-replacement of the rounds whose dead holder renewed last after the intruder's record was sent (the frozen view held an older lease of it)", "ms", replUnseen))
	}
	if len(left) > 0 {
		f.Measures = append(f.Measures, perfdoc.Summarize("deposed-lease-left", "a deposed healthy holder's lease time left when its standby's Acquire returned", "ms", left))
	}
	if len(lso) > 0 {
		f.Measures = append(f.Measures, perfdoc.Summarize("lso-held", "the intruder's record acknowledged -> the partition's last stable offset passed it (the broker aborted the transaction)", "ms", lso))
	}
	mode := "intruder"
	if !o.intruder {
		mode = "control"
	}
	f.Settings = map[string]string{
		"label": o.label, "mode": mode,
		"krabka.lease.ms": strconv.FormatInt(o.lease.Milliseconds(), 10), "krabka.renew.interval.ms": strconv.FormatInt(o.renew.Milliseconds(), 10),
		"krabka.challenge.stagger.ms": strconv.FormatInt(o.stagger.Milliseconds(), 10), "krabka.poll.interval.ms": strconv.FormatInt(o.poll.Milliseconds(), 10),
		"krabka.renew.background": "true (healthy holders and every standby); the dead holder renews by hand",
		"roles":                   strconv.Itoa(o.roles), "rounds": strconv.Itoa(o.rounds),
		"topic":          o.topic + " (1 partition, created by the bench; every role of the run shares it)",
		"dead_role":      "one per round; its holder is a child process (this binary) renewing by hand, SIGKILLed between two renewals at a random instant",
		"intruder":       fmt.Sprintf("%v: a franz-go transactional producer of its own transactional.id, transaction timeout %v, one lease record of an unrelated role, acked, never ended", o.intruder, o.intrTxnTO),
		"instants":       "kill and intruder each uniform in [0, lease) after every standby is in its roster",
		"window":         fmt.Sprintf("lease + scan (%v) + 2 staggers + %v after the later instant", o.scan, o.margin),
		"broker_scan_ms": strconv.FormatInt(o.scan.Milliseconds(), 10),
		"seed":           strconv.FormatUint(o.seed, 10),
		"processes":      "one process: 2 clients per healthy role + the dead role's standby + an observer; the dead holder in a child process",
	}
	if o.props != "" {
		f.Settings["props"] = o.props
	}
	f.Note = fmt.Sprintf("issue 34: %d of %d healthy holders deposed (%d unhealthy, not counted); dead holder replaced in %d of %d rounds", deposed, healthyN, unhealthyN, len(repl), o.rounds)
	fmt.Printf("crossrole: %s\n", f.Note)
	for _, m := range f.Measures {
		fmt.Printf("  %-18s n=%d p50=%.1f p90=%.1f p99=%.1f max=%.1f min=%.1f mean=%.1f %s\n", m.Name, m.N, m.P50, m.P90, m.P99, m.Max, m.Min, m.Mean, m.Unit)
	}
	if o.out == "" && o.outDir == "" {
		return
	}
	if o.out == "" {
		label := o.label
		if label != "" {
			label += "-"
		}
		if !o.intruder {
			label += "control-"
		}
		label += fmt.Sprintf("%ds-%dx%d", int(o.lease.Seconds()), o.roles, o.rounds)
		p, err := f.Finish(o.outDir, label)
		if err != nil {
			die("%v", err)
		}
		fmt.Println("results file:", p)
		return
	}
	f.LoadAfter = perfdoc.LoadAvg()
	b, err := json.MarshalIndent(f, "", " ")
	if err != nil {
		die("%v", err)
	}
	if err := os.MkdirAll(filepath.Dir(o.out), 0o755); err != nil {
		die("%v", err)
	}
	if err := os.WriteFile(o.out, append(b, '\n'), 0o644); err != nil {
		die("%v", err)
	}
	fmt.Println("results file:", o.out)
}
