package chaos

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// The pipeline mode (issue 38, docs/PIPELINES.md).
//
// The campaign writes numbered requests ("req=<n>", n from 1, request n to
// partition n mod PipeInputPartitions) to an input topic at a steady rate
// while the faults run, from the admin's namespace. The two Go processes
// take part in one more role, the pipeline role, on the partition of the
// coordination topic after the primary role's: its leader reads the input
// under its term and turns each request into one command committed with
// the request's offset (Leadership.ProduceOffsets; one writer per input
// partition; cmd/krabka-member/pipeline.go). The pipeline role suffers
// every fault the Go processes and the brokers suffer (kills, pauses past
// the lease, cut links, mid-transaction faults, brokers down or paused,
// partitions).
//
// When the faults are over the request writer stops and the campaign lets
// the last leader drain the input (it waits until the offsets committed
// for the role reach the input's end offsets, PipeDrainWait at most).
// Then every request written must have its command exactly once: the
// input topic read back is what was written (a request whose write failed
// in an unknown way counts when it is there), the command topic read back
// read_committed is what was dispatched, matched by input partition and
// offset (in=<p>/<o> in the command). Missing is a request with no
// command, duplicated one with more than one, out of order a command of
// an input partition after a command of a later offset of that partition.
// Any of the three fails the run.

// PipeInputPartitions is the input topic's partition count (one writer per
// partition in each term).
const PipeInputPartitions = 4

// PipeDrainWait bounds the wait for the last leader to drain the input.
const PipeDrainWait = 2 * time.Minute

// pipeRole is the pipeline role.
type pipeRole struct {
	Name      string   `json:"role"`
	Partition int32    `json:"partition"`
	Members   []string `json:"members"`
	Input     string   `json:"input_topic"`
	Topic     string   `json:"command_topic"`
	Group     string   `json:"group"`
}

// PipeResult is the exactly-once verdict of the pipeline mode.
type PipeResult struct {
	pipeRole
	RequestsSent int      `json:"requests_sent"`    // acknowledged to the request writer
	SendErrors   int      `json:"request_errors"`   // writes that failed (they may still be there)
	Requests     int      `json:"requests_written"` // in the input topic read back
	Commands     int      `json:"commands"`         // pipeline commands in the command topic (read_committed)
	Done         int      `json:"requests_done"`    // requests with at least one command
	Missing      int      `json:"missing"`
	Duplicated   int      `json:"duplicated"` // requests with more than one command
	OutOfOrder   int      `json:"out_of_order"`
	Unknown      int      `json:"unknown_commands"` // commands naming no request written
	Drained      bool     `json:"drained"`          // the committed offsets reached the end before the check
	DrainTook    string   `json:"drain_took"`
	Terms        int      `json:"terms"` // distinct tokens that committed commands
	PerPartition []int    `json:"requests_by_partition"`
	Examples     []string `json:"examples,omitempty"` // the first problems, in words
}

// ExactlyOnce is true when every request has its command exactly once, in
// input order per partition, and no command names an unknown request.
func (r *PipeResult) ExactlyOnce() bool {
	return r.Missing == 0 && r.Duplicated == 0 && r.OutOfOrder == 0 && r.Unknown == 0
}

// PipeRequest is one request of the input topic read back.
type PipeRequest struct {
	Partition int32
	Offset    int64
}

// PipeCommand is one command of the command topic read back (in offset
// order of the command topic's partition).
type PipeCommand struct {
	Offset int64
	Value  string
	Token  string // the batch's producer id and epoch
}

// CheckPipeline matches the commands against the requests: each request
// (input partition and offset) must have exactly one command, and the
// commands of one input partition must come in input offset order.
func CheckPipeline(reqs []PipeRequest, cmds []PipeCommand) PipeResult {
	var r PipeResult
	r.Requests = len(reqs)
	r.Commands = len(cmds)
	want := map[PipeRequest]bool{}
	for _, q := range reqs {
		want[q] = true
	}
	note := func(format string, a ...any) {
		if len(r.Examples) < 10 {
			r.Examples = append(r.Examples, fmt.Sprintf(format, a...))
		}
	}
	count := map[PipeRequest]int{}
	last := map[int32]int64{}
	terms := map[string]bool{}
	for _, c := range cmds {
		q, ok := parseIn(c.Value)
		if !ok || !want[q] {
			r.Unknown++
			note("command at offset %d names no request written: %q", c.Offset, c.Value)
			continue
		}
		terms[c.Token] = true
		count[q]++
		if count[q] == 2 {
			r.Duplicated++
		}
		if count[q] > 1 {
			note("request %d/%d has a command again at offset %d (token %s)", q.Partition, q.Offset, c.Offset, c.Token)
			continue
		}
		if l, seen := last[q.Partition]; seen && q.Offset < l {
			r.OutOfOrder++
			note("request %d/%d's command at offset %d comes after the command of %d/%d", q.Partition, q.Offset, c.Offset, q.Partition, l)
		} else {
			last[q.Partition] = q.Offset
		}
	}
	sorted := append([]PipeRequest(nil), reqs...)
	sort.Slice(sorted, func(i, j int) bool {
		if sorted[i].Partition != sorted[j].Partition {
			return sorted[i].Partition < sorted[j].Partition
		}
		return sorted[i].Offset < sorted[j].Offset
	})
	for _, q := range sorted {
		for int(q.Partition) >= len(r.PerPartition) {
			r.PerPartition = append(r.PerPartition, 0)
		}
		r.PerPartition[q.Partition]++
		if count[q] == 0 {
			r.Missing++
			note("request %d/%d has no command", q.Partition, q.Offset)
		} else {
			r.Done++
		}
	}
	r.Terms = len(terms)
	return r
}

// parseIn reads "in=<p>/<o>" at the start of a command.
func parseIn(v string) (PipeRequest, bool) {
	f, _, _ := strings.Cut(v, " ")
	s, ok := strings.CutPrefix(f, "in=")
	if !ok {
		return PipeRequest{}, false
	}
	ps, os, ok := strings.Cut(s, "/")
	p, err1 := strconv.ParseInt(ps, 10, 32)
	o, err2 := strconv.ParseInt(os, 10, 64)
	if !ok || err1 != nil || err2 != nil {
		return PipeRequest{}, false
	}
	return PipeRequest{int32(p), o}, true
}

// setupPipe names the pipeline role (on the partition after the primary
// role's) and creates its input and command topics.
func (c *campaign) setupPipe(ctx context.Context) error {
	n := c.opts.CoordPartitions
	name, err := RoleOnPartition(c.role+"-pipe", (c.p0+1)%n, n)
	if err != nil {
		return err
	}
	c.pipe = &pipeRole{Name: name, Partition: (c.p0 + 1) % n, Members: goMembers, Input: c.topic + "-requests",
		Topic: c.topic + "-pipe", Group: name + ".pipeline"} // krabka.role.prefix is empty: the transactional.id is the role
	if err := c.createTopic(ctx, c.pipe.Topic); err != nil {
		return err
	}
	tctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	isr := "2"
	resp, err := c.adm.CreateTopic(tctx, PipeInputPartitions, 3, map[string]*string{"min.insync.replicas": &isr}, c.pipe.Input)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		return fmt.Errorf("creating %s: %w", c.pipe.Input, err)
	}
	c.say("pipeline role %s on partition %d of %s: %s; requests %s (%d partitions, one every %dms while the faults run), commands %s, offsets for group %s",
		name, c.pipe.Partition, CoordTopic, strings.Join(goMembers, ", "), c.pipe.Input, PipeInputPartitions, c.opts.RequestMs, c.pipe.Topic, c.pipe.Group)
	return nil
}

// pipeArg is the Go processes' argument for the pipeline role.
func (c *campaign) pipeArg() string {
	return c.pipe.Name + "=" + c.pipe.Topic + ":" + c.pipe.Input
}

// writeRequests writes numbered requests until ctx ends, one every
// RequestMs without waiting for the previous one's answer (an idempotent
// producer keeps each partition's order), and returns, once every write was
// answered, how many were acknowledged and how many failed.
func (c *campaign) writeRequests(ctx context.Context) (sent, failed int) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.net.brokerBootstrap()...), kgo.Dialer(c.net.ctl.Dialer()),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.RecordDeliveryTimeout(30*time.Second))
	if err != nil {
		c.say("the request writer: %v", err)
		return 0, 0
	}
	defer cl.Close()
	var mu sync.Mutex
	tick := time.NewTicker(time.Duration(c.opts.RequestMs) * time.Millisecond)
	defer tick.Stop()
	for n := 1; ctx.Err() == nil; n++ {
		select {
		case <-ctx.Done():
			continue
		case <-tick.C:
		}
		rec := &kgo.Record{Topic: c.pipe.Input, Partition: int32(n % PipeInputPartitions), Value: []byte("req=" + strconv.Itoa(n))}
		cl.Produce(context.Background(), rec, func(_ *kgo.Record, err error) {
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				failed++
			} else {
				sent++
			}
		})
	}
	fctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_ = cl.Flush(fctx)
	mu.Lock()
	defer mu.Unlock()
	return sent, failed
}

// drainPipe waits until the offsets committed for the pipeline role reach
// the input topic's end offsets, PipeDrainWait at most.
func (c *campaign) drainPipe(ctx context.Context) (bool, time.Duration) {
	start := time.Now()
	ctx, cancel := context.WithTimeout(ctx, PipeDrainWait)
	defer cancel()
	for ctx.Err() == nil {
		ends, err1 := c.adm.ListEndOffsets(ctx, c.pipe.Input)
		got, err2 := c.adm.FetchOffsets(kadm.RequireStable(ctx), c.pipe.Group)
		if err1 == nil && err2 == nil {
			done := true
			ends.Each(func(o kadm.ListedOffset) {
				if o.Offset == 0 {
					return
				}
				if x, ok := got.Lookup(c.pipe.Input, o.Partition); !ok || x.At < o.Offset {
					done = false
				}
			})
			if done {
				return true, time.Since(start)
			}
		}
		c.sleep(ctx, 500*time.Millisecond)
	}
	return false, time.Since(start)
}

// checkPipe reads the input and the command topics back and checks them.
func (c *campaign) checkPipe(ctx context.Context) (*PipeResult, error) {
	in, err := c.readTopic(ctx, c.pipe.Input, false)
	if err != nil {
		return nil, fmt.Errorf("reading the requests back: %w", err)
	}
	out, err := c.readTopic(ctx, c.pipe.Topic, false)
	if err != nil {
		return nil, fmt.Errorf("reading the pipeline's commands back: %w", err)
	}
	var reqs []PipeRequest
	for _, r := range in {
		if !r.Attrs.IsControl() {
			reqs = append(reqs, PipeRequest{r.Partition, r.Offset})
		}
	}
	var cmds []PipeCommand
	for _, r := range out {
		if !r.Attrs.IsControl() {
			cmds = append(cmds, PipeCommand{Offset: r.Offset, Value: string(r.Value), Token: fmt.Sprintf("%d/%d", r.ProducerID, r.ProducerEpoch)})
		}
	}
	res := CheckPipeline(reqs, cmds)
	res.pipeRole = *c.pipe
	return &res, nil
}
