package demo

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/krabka/krabka-coord/core"
)

// createTopic creates the command topic: one partition (so log order is
// total), replication min(3, brokers) and min.insync.replicas min(2,
// replication), so that a command written with acks=all is in a quorum
// before the host dispatches it.
func (r *runner) createTopic(ctx context.Context) error {
	meta, err := r.admin.BrokerMetadata(ctx)
	if err != nil {
		return fmt.Errorf("demo: cannot reach %s: %w", r.opts.Bootstrap, err)
	}
	rf := int16(min(3, len(meta.Brokers)))
	isr := min(2, int(rf))
	isrText := strconv.Itoa(isr)
	resp, err := r.admin.CreateTopic(ctx, 1, rf, map[string]*string{
		"min.insync.replicas":            &isrText,
		"unclean.leader.election.enable": strPtr("false"),
	}, r.opts.Topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
		return fmt.Errorf("demo: creating topic %s: %w", r.opts.Topic, err)
	}
	r.say("created command topic %s: 1 partition, replication %d, min.insync.replicas %d (%d broker(s)); guarded writes use acks=all",
		r.opts.Topic, rf, isr, len(meta.Brokers))
	return nil
}

func (r *runner) deleteTopic() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := r.admin.DeleteTopic(ctx, r.opts.Topic); err != nil {
		r.say("could not delete topic %s: %v", r.opts.Topic, err)
	}
}

// probeStaleToken asks the cluster two things after the paused leader was
// resumed: the coordinator's current token for the role, and what the
// broker answers to a transactional step (AddPartitionsToTxn, the first
// step of the next guarded write) made under the resumed leader's token.
// The probe runs only when the coordinator's token supersedes that token,
// so it can never join a live transaction.
func (r *runner) probeStaleToken(ctx context.Context, member string, stale core.FencingToken) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	txnID := r.opts.Role
	described, err := r.admin.DescribeTransactions(ctx, txnID)
	if err != nil {
		r.rep.CoordinatorNow = fmt.Sprintf("DescribeTransactions failed: %v", err)
		r.say("coordinator: %s", r.rep.CoordinatorNow)
		return
	}
	d, err := described.On(txnID, nil)
	if err == nil {
		err = d.Err
	}
	if err != nil {
		r.rep.CoordinatorNow = fmt.Sprintf("DescribeTransactions(%s): %v", txnID, err)
		r.say("coordinator: %s", r.rep.CoordinatorNow)
		return
	}
	current := core.FencingToken{ProducerID: d.ProducerID, ProducerEpoch: d.ProducerEpoch}
	r.rep.CoordinatorNow = fmt.Sprintf("the role's producer is now %s (state %s); %s holds %s", current, d.State, member, stale)
	r.say("coordinator: %s", r.rep.CoordinatorNow)
	if !current.Supersedes(stale) {
		r.rep.BrokerProbe = "not probed: the coordinator's token does not supersede " + stale.String()
		return
	}
	versions := kversion.Stable()
	versions.SetMaxKeyVersion(kmsg.AddPartitionsToTxn.Int16(), 3) // v4+ is broker-to-broker
	cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(r.opts.Bootstrap, ",")...), kgo.MaxVersions(versions))
	if err != nil {
		r.rep.BrokerProbe = "probe client: " + err.Error()
		return
	}
	defer cl.Close()
	req := kmsg.NewPtrAddPartitionsToTxnRequest()
	req.TransactionalID = txnID
	req.ProducerID = stale.ProducerID
	req.ProducerEpoch = stale.ProducerEpoch
	t := kmsg.NewAddPartitionsToTxnRequestTopic()
	t.Topic = r.opts.Topic
	t.Partitions = []int32{0}
	req.Topics = append(req.Topics, t)
	resp, err := req.RequestWith(ctx, cl)
	switch {
	case err != nil:
		r.rep.BrokerProbe = "AddPartitionsToTxn failed: " + err.Error()
	case len(resp.Topics) == 0 || len(resp.Topics[0].Partitions) == 0:
		r.rep.BrokerProbe = "AddPartitionsToTxn: empty response"
	default:
		code := resp.Topics[0].Partitions[0].ErrorCode
		if code == 0 {
			r.rep.BrokerProbe = fmt.Sprintf("a transactional write under %s was ACCEPTED", stale)
			break
		}
		name := "UNKNOWN"
		if e, ok := kerr.ErrorForCode(code).(*kerr.Error); ok {
			name = e.Message
		}
		fenced := code == kerr.ProducerFenced.Code || code == kerr.InvalidProducerEpoch.Code
		if fenced {
			r.rep.FencedObserved = true
		}
		r.rep.BrokerProbe = fmt.Sprintf("a transactional write under %s (%s's token) is rejected: %s (%d)", stale, member, name, code)
	}
	r.say("broker: %s", r.rep.BrokerProbe)
}

// Ack is a command a host reported as written (DISPATCHED with an offset).
type Ack struct {
	Member, Seq, Token string
	Offset             int64
}

// Record is one committed command read back from the topic.
type Record struct {
	Offset        int64
	Member        string
	Seq           string
	Token         core.FencingToken
	HasToken      bool
	ProducerID    int64
	ProducerEpoch int16
}

// TokenRun is a stretch of consecutive commands under one token text.
type TokenRun struct {
	Member                  string
	Token                   core.FencingToken
	FirstOffset, LastOffset int64
	Count                   int
	FirstBatch, LastBatch   core.FencingToken
}

// Check is the result of reading the command topic back.
type Check struct {
	LastStableOffset int64
	Records          []Record
	Runs             []TokenRun
	TextViolations   []string // a command's token text below the one before it
	BatchViolations  []string // a batch's (producer id, epoch) below the one before it
	Untokened        []int64  // offsets of commands without token text
	Acked            int
	AckedMissing     []Ack // reported written but absent from the committed log
}

// OK reports whether the log is what fencing promises.
func (c *Check) OK() bool {
	return len(c.Records) > 0 && len(c.TextViolations) == 0 && len(c.BatchViolations) == 0 &&
		len(c.Untokened) == 0 && len(c.AckedMissing) == 0
}

func (c *Check) String() string {
	var b strings.Builder
	first, last := int64(-1), int64(-1)
	if n := len(c.Records); n > 0 {
		first, last = c.Records[0].Offset, c.Records[n-1].Offset
	}
	fmt.Fprintf(&b, "  %d committed commands (offsets %d..%d, last stable offset %d), in %d runs of one token:\n",
		len(c.Records), first, last, c.LastStableOffset, len(c.Runs))
	for _, r := range c.Runs {
		fmt.Fprintf(&b, "    offsets %4d-%-4d %-12s token %-10s %3d commands, batch producer %s .. %s\n",
			r.FirstOffset, r.LastOffset, r.Member, r.Token, r.Count, r.FirstBatch, r.LastBatch)
	}
	verdict := func(ok bool) string {
		if ok {
			return "OK"
		}
		return "VIOLATED"
	}
	fmt.Fprintf(&b, "  token text in the commands never goes backwards:        %s\n", verdict(len(c.TextViolations) == 0 && len(c.Untokened) == 0))
	for _, v := range c.TextViolations {
		fmt.Fprintf(&b, "    %s\n", v)
	}
	if len(c.Untokened) > 0 {
		fmt.Fprintf(&b, "    commands without token text at offsets %v\n", c.Untokened)
	}
	fmt.Fprintf(&b, "  batch (ProducerID, ProducerEpoch) never goes backwards: %s\n", verdict(len(c.BatchViolations) == 0))
	for _, v := range c.BatchViolations {
		fmt.Fprintf(&b, "    %s\n", v)
	}
	fmt.Fprintf(&b, "  every acknowledged command (%d) is in the log:          %s\n", c.Acked, verdict(len(c.AckedMissing) == 0))
	for _, a := range c.AckedMissing {
		fmt.Fprintf(&b, "    missing: %s #%s under %s at offset %d\n", a.Member, a.Seq, a.Token, a.Offset)
	}
	if c.OK() {
		b.WriteString("  RESULT: PASS - tokens never go backwards in log order\n")
	} else {
		b.WriteString("  RESULT: FAIL\n")
	}
	return b.String()
}

// CheckLog reads the command topic (partition 0) from the start to its last
// stable offset with read_committed and checks it against acked.
func CheckLog(ctx context.Context, bootstrap, topic string, acked []Ack) (*Check, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	seeds := strings.Split(bootstrap, ",")
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...))
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	lso, err := lastStableOffset(ctx, kadm.NewClient(cl), topic)
	if err != nil {
		return nil, err
	}
	check := &Check{LastStableOffset: lso, Acked: len(acked)}
	if lso > 0 {
		rd, err := kgo.NewClient(
			kgo.SeedBrokers(seeds...),
			kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}),
			kgo.FetchIsolationLevel(kgo.ReadCommitted()),
			kgo.KeepControlRecords(),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		)
		if err != nil {
			return nil, err
		}
		defer rd.Close()
	read:
		for {
			fs := rd.PollFetches(ctx)
			if ctx.Err() != nil {
				return nil, fmt.Errorf("reading %s to offset %d: %w", topic, lso, ctx.Err())
			}
			for _, fe := range fs.Errors() {
				if fe.Err != nil && !errors.Is(fe.Err, context.Canceled) {
					return nil, fmt.Errorf("fetching %s: %w", topic, fe.Err)
				}
			}
			done := false
			fs.EachRecord(func(rec *kgo.Record) {
				if rec.Offset >= lso-1 {
					done = true
				}
				if rec.Offset >= lso || rec.Attrs.IsControl() {
					return
				}
				check.Records = append(check.Records, parseCommand(rec))
			})
			if done {
				break read
			}
		}
	}
	check.evaluate(acked)
	return check, nil
}

func lastStableOffset(ctx context.Context, admin *kadm.Client, topic string) (int64, error) {
	// An open transaction of a killed leader holds the LSO back until the
	// next leader's InitProducerId aborts it; that has happened by now, but
	// give the coordinator a moment to write the abort marker.
	deadline := time.Now().Add(10 * time.Second)
	for {
		committed, err := admin.ListCommittedOffsets(ctx, topic)
		if err != nil {
			return 0, err
		}
		ends, err := admin.ListEndOffsets(ctx, topic)
		if err != nil {
			return 0, err
		}
		lo, ok := committed.Lookup(topic, 0)
		if !ok || lo.Err != nil {
			return 0, fmt.Errorf("last stable offset of %s: %v", topic, lo.Err)
		}
		he, _ := ends.Lookup(topic, 0)
		if lo.Offset >= he.Offset || time.Now().After(deadline) {
			return lo.Offset, nil
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// parseCommand reads a command value "seq=<n> member=<m> token=<id>:<epoch> ...".
func parseCommand(rec *kgo.Record) Record {
	fields := map[string]string{}
	readPairs(string(rec.Value), fields)
	out := Record{Offset: rec.Offset, Member: fields["member"], Seq: fields["seq"],
		ProducerID: rec.ProducerID, ProducerEpoch: rec.ProducerEpoch}
	if out.Member == "" {
		out.Member = string(rec.Key)
	}
	text := fields["token"]
	if text == "" {
		if m := tokenPattern.FindStringSubmatch(string(rec.Value)); m != nil {
			text = m[1] + ":" + m[2]
		}
	}
	if t, err := core.ParseFencingToken(text); err == nil {
		out.Token, out.HasToken = t, true
	}
	return out
}

func (c *Check) evaluate(acked []Ack) {
	sort.Slice(c.Records, func(i, j int) bool { return c.Records[i].Offset < c.Records[j].Offset })
	var prevText, prevBatch *Record
	for i := range c.Records {
		rec := &c.Records[i]
		batch := core.FencingToken{ProducerID: rec.ProducerID, ProducerEpoch: rec.ProducerEpoch}
		if prevBatch != nil {
			pb := core.FencingToken{ProducerID: prevBatch.ProducerID, ProducerEpoch: prevBatch.ProducerEpoch}
			if pb.Supersedes(batch) {
				c.BatchViolations = append(c.BatchViolations, fmt.Sprintf("offset %d (%s) has batch producer %s after %s at offset %d",
					rec.Offset, rec.Member, batch, pb, prevBatch.Offset))
			}
		}
		prevBatch = rec
		if !rec.HasToken {
			c.Untokened = append(c.Untokened, rec.Offset)
			continue
		}
		if prevText != nil && prevText.Token.Supersedes(rec.Token) {
			c.TextViolations = append(c.TextViolations, fmt.Sprintf("offset %d (%s) carries token %s after %s at offset %d (%s)",
				rec.Offset, rec.Member, rec.Token, prevText.Token, prevText.Offset, prevText.Member))
		}
		prevText = rec
		if n := len(c.Runs); n > 0 && c.Runs[n-1].Token == rec.Token && c.Runs[n-1].Member == rec.Member {
			run := &c.Runs[n-1]
			run.LastOffset, run.LastBatch = rec.Offset, batch
			run.Count++
		} else {
			c.Runs = append(c.Runs, TokenRun{Member: rec.Member, Token: rec.Token, FirstOffset: rec.Offset, LastOffset: rec.Offset,
				Count: 1, FirstBatch: batch, LastBatch: batch})
		}
	}
	byOffset := map[int64]*Record{}
	for i := range c.Records {
		byOffset[c.Records[i].Offset] = &c.Records[i]
	}
	for _, a := range acked {
		rec, ok := byOffset[a.Offset]
		if !ok || (a.Member != "" && rec.Member != a.Member) || (a.Seq != "" && rec.Seq != "" && rec.Seq != a.Seq) {
			c.AckedMissing = append(c.AckedMissing, a)
		}
	}
}

func strPtr(s string) *string { return &s }
