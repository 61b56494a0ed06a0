package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/krabka/krabka-coord/core"
	"github.com/krabka/krabka-coord/core/coord"
)

// The group mode (issue 36, docs/RELIABILITY.md). An argument
//
//	group:<group>:<shards>=<topic>
//
// joins the process to the role group <group> of <shards> shards
// (coord.NewGroup; the group log is the cluster's <krabka.topic>.groups).
// For each shard k the group gives it, the process writes numbered
// commands to partition k of <topic> through guarded writes under the
// shard's leadership (KRABKA_WRITERS writers, as for a plain role), each
// command "seq=<n> member=<m> token=<t> writer=<w> try=<k> shard=<k>
// at=<ms>", until the shard is revoked. Its events carry the shard's role
// (<group>/shard/<k>) and the shard:
//
//	EVENT <ms> <member> ACQUIRED role=<group>/shard/<k> shard=<k> token=<t>
//	EVENT <ms> <member> REVOKED role=<group>/shard/<k> shard=<k> token=<t> code=<why>
//	EVENT <ms> <member> PLAN role=<group> seq=<n> leader=<m> moves=<n> pending=<n> owner=<m,m,...>
//
// PLAN is printed whenever the member's view of the group log holds a newer
// plan: its owner per shard ("-" for none), and pending, the shards whose
// owner is not yet their target (moves the bound holds back), so the
// campaign can tell when every shard is held by its target. SIGTERM closes the group (its
// shards are handed over, then it leaves).

// groupSpec is one group argument.
type groupSpec struct {
	name   string
	shards int
	topic  string
}

// parseGroupArg reads "group:<group>:<shards>=<topic>"; ok is false when a
// is no group argument, err says what is wrong with one that is.
func parseGroupArg(a string) (spec groupSpec, ok bool, err error) {
	rest, ok := strings.CutPrefix(a, "group:")
	if !ok {
		return groupSpec{}, false, nil
	}
	head, topic, found := strings.Cut(rest, "=")
	i := strings.LastIndexByte(head, ':')
	if !found || topic == "" || i <= 0 {
		return groupSpec{}, true, fmt.Errorf("%q is not group:<group>:<shards>=<topic>", a)
	}
	n, err := strconv.Atoi(head[i+1:])
	if err != nil || n < 1 {
		return groupSpec{}, true, fmt.Errorf("%q: the shard count %q is not a positive number", a, head[i+1:])
	}
	return groupSpec{name: head[:i], shards: n, topic: topic}, true, nil
}

// shardWork is what runs while the member holds one shard.
type shardWork struct {
	t  *term
	wg sync.WaitGroup
}

// runGroup joins the group and runs the shards it is given until ctx ends;
// then it closes the group (handing its shards over, at most 10 s).
func (h *host) runGroup(ctx context.Context, log coord.GroupLog, spec groupSpec) {
	member, err := core.NewMemberID(h.member)
	if err != nil {
		h.emit("ERROR", spec.name, "op", "join", "code", "INVALID_ARG", "msg", err.Error())
		return
	}
	var g *coord.Group
	for g == nil {
		g, err = coord.NewGroup(h.client, log, spec.name, spec.shards, member, coord.WithMaxMoves(h.maxMoves))
		if err != nil {
			h.errorEvent("ERROR", spec.name, "join", err)
			if !sleep(ctx, h.rejoin) {
				return
			}
		}
	}
	h.emit("JOINED", spec.name, "shards", spec.shards)
	pctx, stopPlans := context.WithCancel(context.Background())
	plansDone := make(chan struct{})
	go func() {
		defer close(plansDone)
		h.plans(pctx, g)
	}()
	work := map[int]*shardWork{}
	stop := func(k int) {
		if w := work[k]; w != nil {
			w.t.end()
			w.wg.Wait()
			delete(work, k)
		}
	}
	events := make(chan coord.GroupEvent)
	nextDone := make(chan error, 1)
	go func() {
		for {
			ev, err := g.Next(context.Background())
			if err != nil {
				nextDone <- err
				return
			}
			events <- ev
		}
	}()
	closed := false
	for {
		var ev coord.GroupEvent
		select {
		case <-ctx.Done():
			if !closed {
				closed = true
				// Close hands the shards over: their revocations still come.
				go func() {
					cctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
					defer cancel()
					if err := g.Close(cctx); err != nil {
						h.errorEvent("ERROR", spec.name, "close", err)
					}
				}()
			}
			select {
			case ev = <-events:
			case err := <-nextDone:
				h.groupDone(spec.name, err, work, stop, stopPlans, plansDone)
				return
			}
		case ev = <-events:
		case err := <-nextDone:
			h.groupDone(spec.name, err, work, stop, stopPlans, plansDone)
			return
		}
		role := ev.Role.String()
		switch ev.Kind {
		case coord.ShardAssigned:
			stop(ev.Shard) // a term of the shard we still ran (its revocation is on its way)
			h.emit("ACQUIRED", role, "shard", ev.Shard, "token", ev.Leadership.Token().String())
			w := &shardWork{t: &term{stop: make(chan struct{})}}
			work[ev.Shard] = w
			var gate sync.RWMutex // the group renews the shard; nothing to wait for here
			extra := " shard=" + strconv.Itoa(ev.Shard)
			for i := 1; i <= h.writers; i++ {
				w.wg.Add(1)
				go func(i int) {
					defer w.wg.Done()
					h.writer(ev.Leadership, w.t, &gate, role, spec.topic, int32(ev.Shard), extra, i)
				}(i)
			}
		case coord.ShardRevoked:
			// Stop the writers first: the event comes before the group
			// hands the shard over.
			stop(ev.Shard)
			token := ""
			if ev.Leadership != nil {
				token = ev.Leadership.Token().String()
			}
			h.emit("REVOKED", role, "shard", ev.Shard, "token", token, "code", revokeCode(ev.Err))
		}
	}
}

// groupDone stops what still runs once the group's events ended.
func (h *host) groupDone(name string, err error, work map[int]*shardWork, stop func(int), stopPlans context.CancelFunc, plansDone chan struct{}) {
	for k := range work {
		stop(k)
	}
	stopPlans()
	<-plansDone
	if err != nil && !errors.Is(err, coord.ErrClosed) {
		h.errorEvent("ERROR", name, "group", err)
	}
	h.emit("LEFT", name)
}

// revokeCode names why a shard's term ended.
func revokeCode(err error) string {
	switch {
	case err == nil:
		return "NONE"
	case errors.Is(err, coord.ErrNotLeader):
		return "MOVED"
	case errors.Is(err, coord.ErrFenced):
		return "FENCED"
	case errors.Is(err, coord.ErrLeaseExpired):
		return "EXPIRED"
	case errors.Is(err, coord.ErrClosed):
		return "CLOSED"
	}
	return "ERROR"
}

// plans prints PLAN whenever the member's view of the group log holds a
// newer plan, polling every 100 ms until ctx ends.
func (h *host) plans(ctx context.Context, g *coord.Group) {
	var seq int64 = -1
	for sleep(ctx, 100*time.Millisecond) {
		st := g.Status()
		if st == nil || st.Shards == 0 || st.Seq == seq {
			continue
		}
		seq = st.Seq
		h.emit("PLAN", g.Name(), "seq", st.Seq, "leader", st.Leader, "moves", st.Moves, "pending", st.Pending, "owner", planList(st.Owner))
	}
}

// planList joins a per-shard list of members ("-" for none).
func planList(ms []string) string {
	out := make([]string, len(ms))
	for i, m := range ms {
		if m == "" {
			m = "-"
		}
		out[i] = m
	}
	return strings.Join(out, ",")
}
