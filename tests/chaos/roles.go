package chaos

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/krabka/krabka-coord/core"
	"github.com/krabka/krabka-coord/core/coord"
	"github.com/krabka/krabka-coord/core/kafka"
	"github.com/krabka/krabka-coord/demo"
)

// Several roles on shared partitions (issue 34).
//
// Besides the primary role (the three language hosts and the baseline),
// the campaign runs extra roles held by two Go member processes
// (cmd/krabka-member), each taking part in several roles with one client.
// The coordination topic is created by the campaign with few partitions
// (CoordPartitions) and the role names are chosen by their partition
// (core.RolePartition), so that the primary role shares its partition with
// three extra roles and a second partition holds two more:
//
//	partition P0: the primary role (c-host, python-host, node-host),
//	              <role>-a (go-1, go-2), <role>-b (go-2, go-1),
//	              <role>-solo (go-1 alone: no live standby)
//	partition P1: <role>-c (go-1, go-2), <role>-d (go-2, go-1)
//
// Each extra role has a command topic of its own, checked like the primary
// role's (checker.go); the availability ratio against the baseline is the
// primary role's. The mid-transaction faults (midTxn) strike a Go process
// between its renewal's answered Produce and its EndTxn.

// CoordTopic is the coordination topic the members use (the default).
const CoordTopic = coord.DefaultTopic

// goMembers are the Go processes' member ids.
var goMembers = []string{"go-1", "go-2"}

// extraRole is one role the Go processes take part in.
type extraRole struct {
	Label     string   `json:"label"`
	Name      string   `json:"role"`
	Partition int32    `json:"partition"`
	Members   []string `json:"members"`
	Topic     string   `json:"command_topic"`
}

// extraLayout is the extra roles: a label, the partition (0: the primary
// role's, 1: the next one) and the Go processes taking part (in order of
// start, the first usually leads first).
var extraLayout = []struct {
	label   string
	part    int
	members []string
}{
	{"a", 0, []string{"go-1", "go-2"}},
	{"b", 0, []string{"go-2", "go-1"}},
	{"solo", 0, []string{"go-1"}},
	{"c", 1, []string{"go-1", "go-2"}},
	{"d", 1, []string{"go-2", "go-1"}},
}

// RoleOnPartition returns the first of base, base-1, base-2, ... whose
// partition among n is want.
func RoleOnPartition(base string, want, n int32) (string, error) {
	for i := 0; i < 10000; i++ {
		name := base
		if i > 0 {
			name = fmt.Sprintf("%s-%d", base, i)
		}
		r, err := core.NewRole(name)
		if err != nil {
			return "", err
		}
		p, err := core.RolePartition(r, n)
		if err != nil {
			return "", err
		}
		if p == want {
			return name, nil
		}
	}
	return "", fmt.Errorf("no role name from %s lands on partition %d of %d", base, want, n)
}

// layoutRoles names the extra roles for the primary role and n partitions.
func layoutRoles(primary string, n int32, topicBase string) (p0 int32, roles []*extraRole, err error) {
	r, err := core.NewRole(primary)
	if err != nil {
		return 0, nil, err
	}
	if p0, err = core.RolePartition(r, n); err != nil {
		return 0, nil, err
	}
	for _, l := range extraLayout {
		want := (p0 + int32(l.part)) % n
		name, err := RoleOnPartition(primary+"-"+l.label, want, n)
		if err != nil {
			return 0, nil, err
		}
		roles = append(roles, &extraRole{Label: l.label, Name: name, Partition: want, Members: l.members,
			Topic: topicBase + "-" + l.label})
	}
	return p0, roles, nil
}

// RoleReport is the checker's verdict on one extra role.
type RoleReport struct {
	extraRole
	Acked  map[string]int `json:"acked_by_member"`
	Result *Result        `json:"result"`
}

// MidTxnRecord is one mid-transaction fault that took effect: the Go
// process whose renewal's Produce was answered, the role and token of that
// renewal, the partition whose last stable offset its open transaction
// held, and when the answer came.
type MidTxnRecord struct {
	Kind      string    `json:"kind"`
	Member    string    `json:"member"`
	Role      string    `json:"role"`
	Partition int32     `json:"partition"`
	Token     string    `json:"token"`
	Broker    string    `json:"broker"`
	At        time.Time `json:"at"`
	For       string    `json:"for"`
}

// createCoordTopic creates the coordination topic with the library's
// settings (kafka.TopicConfigs, min.insync.replicas=2) on few partitions,
// and min.compaction.lag.ms of a day so that no lease record is compacted
// away before the campaign reads them all back.
func (c *campaign) createCoordTopic(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	cfg := map[string]*string{"min.insync.replicas": kadm.StringPtr("2"), "min.compaction.lag.ms": kadm.StringPtr("86400000")}
	for k, v := range kafka.TopicConfigs {
		cfg[k] = kadm.StringPtr(v)
	}
	resp, err := c.adm.CreateTopic(ctx, c.opts.CoordPartitions, 3, cfg, CoordTopic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		return fmt.Errorf("creating the coordination topic %s: %w", CoordTopic, err)
	}
	return nil
}

// goArgs is a Go process's command line after the binary.
func (c *campaign) goArgs(m *member) []string {
	args := []string{strings.Join(c.net.brokerBootstrap(), ","), m.name}
	for _, r := range c.roles {
		for _, x := range r.Members {
			if x == m.name {
				args = append(args, r.Name+"="+r.Topic)
			}
		}
	}
	if c.pipe != nil {
		args = append(args, c.pipeArg())
	}
	return args
}

// goLine handles one line of a Go process.
func (c *campaign) goLine(m *member, line string) {
	f := strings.Fields(line)
	if len(f) < 4 || f[0] != "EVENT" {
		return
	}
	kind := f[3]
	fields := map[string]string{}
	for _, kv := range f[4:] {
		if k, v, ok := strings.Cut(kv, "="); ok {
			if u, err := strconv.Unquote(v); err == nil {
				v = u
			}
			fields[k] = v
		}
	}
	at := time.Now()
	if ms, err := strconv.ParseInt(f[1], 10, 64); err == nil {
		at = time.UnixMilli(ms)
	}
	role := fields["role"]
	tokOf := func(k string) (core.FencingToken, bool) {
		t, err := core.ParseFencingToken(fields[k])
		return t, err == nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.events["go-"+kind]++
	if m.group && c.groupLine(m, kind, role, fields) {
		return
	}
	switch kind {
	case demo.Dispatched:
		t, ok1 := tokOf("token")
		seq, err2 := strconv.ParseInt(fields["seq"], 10, 64)
		part, err3 := strconv.ParseInt(fields["partition"], 10, 64)
		off, err4 := strconv.ParseInt(fields["offset"], 10, 64)
		w, _ := strconv.Atoi(fields["writer"])
		if !ok1 || err2 != nil || err3 != nil || err4 != nil {
			c.events["go-DISPATCHED-unparsed"]++
			return
		}
		c.roleAcks[role] = append(c.roleAcks[role], Ack{Member: m.name, Token: t, Seq: seq, Writer: w, Partition: int32(part), Offset: off, At: at})
		return
	case "MINTED":
		t, ok := tokOf("token")
		if !ok {
			c.events["go-MINTED-unparsed"]++
			return
		}
		if ms, err := strconv.ParseInt(fields["at_ms"], 10, 64); err == nil && ms > 0 {
			at = time.UnixMilli(ms)
		}
		c.roleMints[role] = append(c.roleMints[role], Mint{Member: m.name, Token: t, At: at})
		return
	case "MIDTXN":
		ev := MidTxnRecord{Member: m.name, Role: role, Token: fields["token"], Broker: fields["broker"], At: at}
		if m.mid != nil {
			select {
			case m.mid <- ev:
				return
			default:
			}
		}
		// Nobody waits for it (an arm given up just before it fired): let
		// the transaction go on.
		c.goWrite(m, "GO")
		return
	case demo.Acquired:
		c.holders[role] = m.name
		if t, ok := tokOf("token"); ok {
			if c.roleAcquired[role] == nil {
				c.roleAcquired[role] = map[string]bool{}
			}
			c.roleAcquired[role][m.name+"|"+t.String()] = true
		}
	case demo.Fenced, demo.Expired, demo.Resigned:
		if c.holders[role] == m.name {
			delete(c.holders, role)
		}
	case demo.Renewed, demo.Error, demo.Standby, "PIPED":
		return
	}
	if kind != demo.Stopped || c.opts.Verbose {
		line := fmt.Sprintf("[%7.1fs]   %s %s role=%s %s", time.Since(c.start).Seconds(), m.name, kind, role,
			strings.TrimSpace(fields["token"]+" "+fields["code"]))
		fmt.Fprintln(c.opts.Out, line)
		if c.evlog != nil {
			fmt.Fprintln(c.evlog, line)
		}
	}
}

// goWrite writes one control line to a Go process's stdin (c.mu or not).
func (c *campaign) goWrite(m *member, line string) {
	m.mu.Lock()
	w := m.stdin
	m.mu.Unlock()
	if w != nil {
		_, _ = fmt.Fprintln(w, line)
	}
}

// goHolding is the number of roles a Go process holds (best knowledge).
func (c *campaign) goHolding(name string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, h := range c.holders {
		if h == name {
			n++
		}
	}
	return n
}

// midTxnWait bounds the wait for a Go process that holds a role and for
// its next renewal.
const midTxnWait = 30 * time.Second

// holderOf is the drawn Go process when it holds a role, else the other
// one when it does, else nil.
func (c *campaign) holderOf(drawn int) *member {
	for i := 0; i < len(c.gos); i++ {
		if m := c.gos[(drawn+i)%len(c.gos)]; c.goHolding(m.name) > 0 {
			return m
		}
	}
	return nil
}

// midTxn runs one mid-transaction fault: it arms a Go process that holds a
// role (the drawn one when both do; it waits for one when neither does,
// and moves the arm when the armed one loses its roles), waits for its
// next renewal's answered Produce, and then, with the EndTxn held back,
// kills the process (restart after d), stops it (SIGCONT after d) or cuts
// it off from every broker (packet filters for d).
func (c *campaign) midTxn(kind string, drawn int, d time.Duration) {
	c.draw(kind)
	what := map[string]string{"midtxn-kill": "SIGKILL it and restart it after " + d.Round(time.Millisecond).String(),
		"midtxn-pause": "SIGSTOP it for " + d.Round(time.Millisecond).String(),
		"midtxn-cut":   "cut it off from every broker for " + d.Round(time.Millisecond).String()}[kind]
	deadline := time.Now().Add(midTxnWait)
	ch := make(chan MidTxnRecord, 1)
	var m *member
	arm := func(x *member) {
		if m != nil {
			c.goWrite(m, "DISARM")
			c.mu.Lock()
			m.mid = nil
			c.mu.Unlock()
		}
		m = x
		c.say("FAULT %s: arm %s (it holds %d role(s)): at its next renewal's answered Produce, %s", kind, m.name, c.goHolding(m.name), what)
		c.mu.Lock()
		m.mid = ch
		c.mu.Unlock()
		c.goWrite(m, "ARM")
	}
	var ev MidTxnRecord
	got := false
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for !got && time.Now().Before(deadline) {
		if h := c.holderOf(drawn); h != nil && (m == nil || (h != m && c.goHolding(m.name) == 0)) {
			arm(h)
		}
		select {
		case ev = <-ch:
			got = true
		case <-tick.C:
		}
	}
	// Withdraw every arm but the one that fired (a process disarmed after
	// it fired waits for GO: goLine sends it when nobody waits).
	for _, x := range c.gos {
		c.mu.Lock()
		armed := x.mid == ch
		x.mid = nil
		c.mu.Unlock()
		if armed && (!got || x.name != ev.Member) {
			c.goWrite(x, "DISARM")
		}
	}
	if !got {
		// It may have fired just now.
		select {
		case ev = <-ch:
			got = true
		default:
			c.say("(%s: no Go process renewed a role within %s)", kind, midTxnWait)
			return
		}
	}
	for _, x := range c.gos {
		if x.name == ev.Member {
			m = x
		}
	}
	ev.Kind, ev.For = kind, d.Round(time.Millisecond).String()
	for _, r := range c.allRoles() {
		if r.Name == ev.Role {
			ev.Partition = r.Partition
		}
	}
	c.say("MIDTXN: %s's renewal of %s (token %s, partition %d) was answered by broker %s: its transaction is open", m.name, ev.Role, ev.Token,
		ev.Partition, ev.Broker)
	f := &FaultRecord{Kind: kind, Target: fmt.Sprintf("%s (renewal of %s, partition %d)", m.name, ev.Role, ev.Partition), Start: ev.At,
		Members: []string{m.name}}
	took := false
	switch kind {
	case "midtxn-kill":
		took = c.kill(m)
		c.sleep(context.Background(), d)
		if err := c.startMember(m, 0); err != nil {
			c.say("restart %s: %v", m.name, err)
		}
	case "midtxn-pause":
		took = c.signal(m, syscall.SIGSTOP)
		waitStopped(m.pid, time.Second)
		c.goWrite(m, "GO") // read once it runs again
		c.sleep(context.Background(), d)
		c.signal(m, syscall.SIGCONT)
	case "midtxn-cut":
		id, err := c.net.lab.Apply(c.net.cut([]string{m.ep.Name}, []string{"b1", "b2", "b3"}))
		c.goWrite(m, "GO") // its EndTxn goes into the cut
		if err != nil {
			c.say("(%s: %v)", kind, err)
		} else {
			took = true
			c.sleep(context.Background(), d)
			if err := c.net.lab.Heal(id); err != nil {
				c.say("healing %s: %v", kind, err)
			}
		}
	}
	c.end(f)
	if took {
		c.injected(kind)
		c.mu.Lock()
		c.midLog = append(c.midLog, ev)
		c.mu.Unlock()
	}
	c.say("%s of %s over", kind, m.name)
}

// waitStopped waits until the process is in the stopped state (a SIGSTOP
// takes effect asynchronously), at most d.
func waitStopped(pid int, d time.Duration) {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			return
		}
		// pid (comm) S ...: the state follows the last ')'.
		if i := strings.LastIndexByte(string(b), ')'); i > 0 && i+2 < len(b) && (b[i+2] == 'T' || b[i+2] == 't') {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// allRoles is the primary role (as an extraRole) and the extra roles.
func (c *campaign) allRoles() []*extraRole {
	out := []*extraRole{{Label: "primary", Name: c.role, Partition: c.p0, Members: []string{"c-host", "python-host", "node-host"}, Topic: c.topic}}
	return append(out, c.roles...)
}

// readTopic reads every committed record of topic (all partitions,
// read_committed; with uncommitted, every record, aborted ones too) up to
// the last stable offset, once no transaction is open any more (a killed
// leader's open transaction is aborted by its successor or by its
// timeout), in partition then offset order, with the control records (the
// transactions' markers).
func (c *campaign) readTopic(ctx context.Context, topic string, uncommitted bool) ([]*kgo.Record, error) {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	var lso map[int32]int64
	for {
		committed, err := c.adm.ListCommittedOffsets(ctx, topic)
		if err != nil {
			return nil, err
		}
		ends, err := c.adm.ListEndOffsets(ctx, topic)
		if err != nil {
			return nil, err
		}
		lso = map[int32]int64{}
		settled := true
		committed.Each(func(o kadm.ListedOffset) {
			lso[o.Partition] = o.Offset
			if e, ok := ends.Lookup(topic, o.Partition); !ok || e.Offset != o.Offset {
				settled = false
			}
		})
		if settled || ctx.Err() != nil {
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	parts := map[int32]kgo.Offset{}
	for p, o := range lso {
		if o > 0 {
			parts[p] = kgo.NewOffset().AtStart()
		}
	}
	if len(parts) == 0 {
		return nil, nil
	}
	iso := kgo.ReadCommitted()
	if uncommitted {
		iso = kgo.ReadUncommitted()
	}
	rd, err := kgo.NewClient(kgo.SeedBrokers(c.net.brokerBootstrap()...), kgo.Dialer(c.net.ctl.Dialer()),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: parts}),
		kgo.FetchIsolationLevel(iso), kgo.KeepControlRecords())
	if err != nil {
		return nil, err
	}
	defer rd.Close()
	var recs []*kgo.Record
	done := map[int32]bool{}
	for len(done) < len(parts) {
		fs := rd.PollFetches(ctx)
		if ctx.Err() != nil {
			return nil, fmt.Errorf("reading %s: %w (read %d records)", topic, ctx.Err(), len(recs))
		}
		for _, fe := range fs.Errors() {
			if fe.Err != nil && !errors.Is(fe.Err, context.Canceled) {
				return nil, fmt.Errorf("fetching %s: %w", topic, fe.Err)
			}
		}
		fs.EachRecord(func(r *kgo.Record) {
			end := lso[r.Partition]
			if r.Offset >= end-1 {
				done[r.Partition] = true
			}
			if r.Offset >= end {
				return
			}
			recs = append(recs, r)
		})
	}
	sort.SliceStable(recs, func(i, j int) bool {
		if recs[i].Partition != recs[j].Partition {
			return recs[i].Partition < recs[j].Partition
		}
		return recs[i].Offset < recs[j].Offset
	})
	return recs, nil
}

// commandRecords reads a command topic into the checker's records.
func (c *campaign) commandRecords(ctx context.Context, topic string) ([]Record, error) {
	raw, err := c.readTopic(ctx, topic, false)
	if err != nil {
		return nil, err
	}
	var recs []Record
	createTime := 0
	for _, r := range raw {
		if r.Attrs.IsControl() {
			continue
		}
		rec := ParseRecord(r.Partition, r.Offset, core.FencingToken{ProducerID: r.ProducerID, ProducerEpoch: r.ProducerEpoch}, string(r.Value))
		if r.Attrs.TimestampType() == 1 {
			rec.Appended = r.Timestamp
		} else {
			createTime++
		}
		recs = append(recs, rec)
	}
	if createTime > 0 {
		return nil, fmt.Errorf("%d records of %s carry their producer's timestamp, not LogAppendTime: the real-time check needs message.timestamp.type=LogAppendTime", createTime, topic)
	}
	return recs, nil
}

// leaseRecords reads the coordination topic back and decodes its committed
// lease records (registrations and tombstones are left out; a record that
// does not decode is counted in bad).
func (c *campaign) leaseRecords(ctx context.Context) (out []LeaseRecord, bad int, err error) {
	raw, err := c.readTopic(ctx, CoordTopic, true)
	if err != nil {
		return nil, 0, err
	}
	var rs []RawRecord
	for _, r := range raw {
		x := RawRecord{Partition: r.Partition, Offset: r.Offset, ProducerID: r.ProducerID, ProducerEpoch: r.ProducerEpoch, Key: r.Key,
			Value: r.Value, Timestamp: r.Timestamp, Transactional: r.Attrs.IsTransactional(), Control: r.Attrs.IsControl()}
		for _, h := range r.Headers {
			if h.Key == core.HeaderFencedBy {
				x.FencedBy = string(h.Value)
			}
		}
		rs = append(rs, x)
	}
	out, bad = LeasesOf(rs)
	return out, bad, nil
}

// RawRecord is what LeasesOf needs of a record of the coordination topic.
type RawRecord struct {
	Partition     int32
	Offset        int64
	ProducerID    int64
	ProducerEpoch int16
	Key, Value    []byte
	Timestamp     time.Time
	Transactional bool
	Control       bool   // a transaction marker: Key is version (i16), type (i16: 0 abort, 1 commit)
	FencedBy      string // the krabka.fenced-by header
}

// LeasesOf decodes the committed lease records of the coordination topic
// read read_uncommitted with its control records (raw, each partition in
// offset order). Each lease record gets the timestamp of the commit marker
// that ended its transaction (Committed) and the instant the partition's
// last stable offset passed it (Visible: when every transaction that began
// at or before it had ended), with the transaction that held it back after
// its own commit (HiddenBy). Records of aborted transactions are left out.
func LeasesOf(raw []RawRecord) (out []LeaseRecord, bad int) {
	type txn struct {
		part      int32
		first     int64
		producer  core.FencingToken
		role      string
		leases    []LeaseRecord
		end       time.Time
		started   time.Time
		committed bool
	}
	open := map[[2]int64]*txn{}
	var done []*txn
	for _, r := range raw {
		key := [2]int64{int64(r.Partition), r.ProducerID}
		if r.Control {
			if t := open[key]; t != nil {
				// Key: version (i16), type (i16: 0 abort, 1 commit).
				t.committed = len(r.Key) >= 4 && r.Key[2] == 0 && r.Key[3] == 1
				t.end = r.Timestamp
				done = append(done, t)
				delete(open, key)
			}
			continue
		}
		var l *LeaseRecord
		role := ""
		if k, err := core.DecodeKey(r.Key); err != nil {
			bad++
		} else {
			role = k.Role.String()
			if k.Kind == core.KindLease && !core.IsTombstone(r.Value) {
				if v, err := core.DecodeLease(r.Value); err != nil {
					bad++
				} else {
					l = &LeaseRecord{Role: role, Partition: r.Partition, Offset: r.Offset, Member: v.Member.String(), Token: v.Token,
						Granted: v.GrantedAt, Deadline: v.Deadline, At: r.Timestamp, FencedBy: r.FencedBy}
				}
			}
		}
		if !r.Transactional {
			if l != nil {
				l.Committed, l.Visible = r.Timestamp, r.Timestamp
				out = append(out, *l)
			}
			continue
		}
		t := open[key]
		if t == nil {
			t = &txn{part: r.Partition, first: r.Offset, producer: core.FencingToken{ProducerID: r.ProducerID, ProducerEpoch: r.ProducerEpoch},
				role: role, started: r.Timestamp}
			open[key] = t
		}
		if l != nil {
			t.leases = append(t.leases, *l)
		}
	}
	// The last stable offset passes an offset once every transaction that
	// began at or before it has ended.
	byPart := map[int32][]*txn{}
	for _, t := range done {
		byPart[t.part] = append(byPart[t.part], t)
	}
	for _, t := range done {
		if !t.committed {
			continue
		}
		for _, l := range t.leases {
			l.Committed, l.Visible = t.end, t.end
			for _, o := range byPart[t.part] {
				if o != t && o.first <= l.Offset && o.end.After(l.Visible) {
					l.Visible = o.end
					l.HiddenBy = fmt.Sprintf("%s (token %s, began %s, offset %d)", o.role, o.producer, o.started.UTC().Format("15:04:05.000"), o.first)
				}
			}
			out = append(out, l)
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Partition != out[j].Partition {
			return out[i].Partition < out[j].Partition
		}
		return out[i].Offset < out[j].Offset
	})
	return out, bad
}

// memberFaults turns the fault log into the stretches during which each
// member's process suffered a fault.
func memberFaults(log []FaultRecord) []MemberFault {
	var out []MemberFault
	for _, f := range log {
		for _, m := range f.Members {
			out = append(out, MemberFault{Member: m, Kind: f.Kind, From: f.Start, To: f.End})
		}
	}
	return out
}
