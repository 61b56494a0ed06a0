package coord

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"time"

	"github.com/krabka/krabka-coord/core"
)

// The background work of a Group: run (read the group log, heartbeat, act
// on the plan), lead (campaign for the leader role, publish plans) and one
// goroutine per shard the plan gives the member (campaign, hold, renew,
// hand over).

type groupShard struct {
	k       int
	cancel  context.CancelFunc // ends the campaign (not a won term)
	release chan string        // the successor to resign to ("" none); capacity 1
	done    chan struct{}
}

func (g *Group) run() {
	defer g.wg.Done()
	ctx := g.ctx
	var err error
	for g.part, err = groupLogPartition(ctx, g.log, g.name); err != nil; g.part, err = groupLogPartition(ctx, g.log, g.name) {
		if g.pause(ctx) != nil {
			return
		}
	}
	close(g.partReady)
	var nextHB int64
	for ctx.Err() == nil {
		f, err := g.log.Transport.Fetch(ctx, g.part, g.readFrom(), g.opt.tick)
		if err == nil {
			g.mu.Lock()
			g.view.apply(f)
			g.mu.Unlock()
		} else if ctx.Err() == nil {
			g.c.logger.Debug("krabka: group log read failed", "group", g.name, "error", err)
			_ = g.pause(ctx)
		}
		g.mu.Lock()
		dirty := g.hbDirty
		g.mu.Unlock()
		if now := g.c.clock.NowMs(); ctx.Err() == nil && (dirty || now >= nextHB) {
			// Not cut by the member's stop: an append whose context ends
			// returns at once while the record may still be written (a
			// Kafka producer sends what it buffered), after the tombstone
			// stop writes once this loop returned; the member then stayed
			// live in the group log until its ttl passed.
			hctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), g.opt.ttl)
			if g.heartbeat(hctx, false) == nil {
				nextHB = now + g.opt.heartbeat.Milliseconds()
			}
			cancel()
		}
		g.act()
	}
}

func (g *Group) readFrom() int64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.view.next
}

// pause sleeps one tick (or until kicked); ctx's error when it ended.
func (g *Group) pause(ctx context.Context) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-g.kick:
	case <-time.After(g.opt.tick):
	}
	return nil
}

// heartbeat appends the member's record (its tombstone when leaving).
func (g *Group) heartbeat(ctx context.Context, leave bool) error {
	key := groupKey(groupKindMember, g.name, g.member.String())
	var val []byte
	if !leave {
		g.mu.Lock()
		now := g.c.clock.NowMs()
		rec := memberRecord{Weight: g.weight, Eligible: g.eligible,
			At: now, Deadline: now + g.opt.ttl.Milliseconds(), Held: make([]int, 0, len(g.held)), Moves: g.moves}
		for k := range g.held {
			rec.Held = append(rec.Held, k)
		}
		g.hbDirty = false
		g.mu.Unlock()
		slices.Sort(rec.Held)
		val, _ = json.Marshal(rec)
	}
	_, err := g.log.Transport.Append(ctx, g.part, key, val, nil)
	if err != nil {
		g.mu.Lock()
		g.hbDirty = true
		g.mu.Unlock()
	}
	return err
}

// act starts a campaign for each shard the plan gives the member and hands
// over each shard it moved away.
func (g *Group) act() {
	g.mu.Lock()
	defer g.mu.Unlock()
	p := g.view.plan
	if p == nil || p.Shards != g.n || p.Kind != g.kind || g.err != nil {
		return
	}
	owners := p.owners()
	me := g.member.String()
	for k, o := range owners {
		s := g.shards[k]
		switch {
		case o == me && s == nil:
			s = &groupShard{k: k, release: make(chan string, 1), done: make(chan struct{})}
			var sctx context.Context
			sctx, s.cancel = context.WithCancel(g.ctx)
			g.shards[k] = s
			g.wg.Add(1)
			go g.shardLoop(sctx, s)
		case o != me && s != nil:
			s.stop(o)
		}
	}
}

// stop asks the shard's goroutine to give the shard up (resigning to
// successor when it holds it) once.
func (s *groupShard) stop(successor string) {
	select {
	case s.release <- successor:
	default:
	}
	s.cancel()
}

// shardLoop campaigns for shard s.k until it is won or stopped, holds it
// (renewing) until the term ends or the plan moves it, and campaigns again
// when a term ended by itself while the plan still gives the shard here.
func (g *Group) shardLoop(ctx context.Context, s *groupShard) {
	defer g.wg.Done()
	defer close(s.done)
	defer func() {
		g.mu.Lock()
		if g.shards[s.k] == s {
			delete(g.shards, s.k)
		}
		g.mu.Unlock()
	}()
	role := g.roles[s.k]
	for {
		l, err := g.campaign(ctx, role)
		if err == nil && l == nil {
			continue // the attempt's time was up: try again
		}
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, ErrClosed) {
				// Not wanted here any more: leave the roster, so that the
				// member is no standby of a shard it was not given.
				lctx, cancel := context.WithTimeout(g.c.root, g.opt.ttl)
				_ = g.c.Leave(lctx, role, g.member)
				cancel()
				return
			}
			g.c.logger.Debug("krabka: group shard campaign failed", "group", g.name, "role", role.String(), "error", err)
			if g.pause(ctx) != nil {
				return
			}
			continue
		}
		g.mu.Lock()
		g.held[s.k] = l
		g.moves++
		g.hbDirty = true
		g.mu.Unlock()
		g.nudge()
		g.push(GroupEvent{Kind: ShardAssigned, Shard: s.k, Role: role, Leadership: l})
		released := g.hold(ctx, s, l) // it told the owner (ShardRevoked) either way
		g.mu.Lock()
		delete(g.held, s.k)
		g.hbDirty = true
		g.mu.Unlock()
		g.nudge()
		if released || ctx.Err() != nil {
			return
		}
	}
}

// groupCampaigns bounds the acquisitions a member runs at once.
const groupCampaigns = 8

// campaign is one bounded attempt at a shard's role: it waits for one of
// the member's campaign slots (at most groupCampaigns acquisitions run at
// once, so that a member given many shards at once does not flood the
// cluster with mints and starve the renewals of the shards it holds), then
// acquires for at most a heartbeat interval. A nil Leadership and a nil
// error: not won yet, try again (the member stays registered, so a
// resignation naming it, or an expired lease, lets it in at the next
// attempt at once).
func (g *Group) campaign(ctx context.Context, role core.Role) (*Leadership, error) {
	select {
	case g.slots <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	defer func() { <-g.slots }()
	actx, cancel := context.WithTimeout(ctx, g.opt.heartbeat)
	defer cancel()
	l, err := g.c.Acquire(actx, role, g.member)
	if err != nil && ctx.Err() == nil && actx.Err() != nil {
		return nil, nil
	}
	return l, err
}

// hold renews l until its term ends by itself (false) or the shard is
// released (true). Either way it tells the owner, once: ShardRevoked with
// the term's error, or, for a release, ShardRevoked before the handover (so
// that the shard's work stops before the successor can start), then the
// resignation to the successor named. Each renewal is due up to a tenth of the
// renew interval early, drawn anew each time (as background renewals are,
// sched.go): shards won together at the start do not renew together, which
// with 256 shards a member was a burst of 256 lease transactions every
// renew interval.
func (g *Group) hold(ctx context.Context, s *groupShard, l *Leadership) bool {
	// The renewal runs beside the wait, so that neither the plan's release
	// nor the end of the term waits for a slow renewal (a renewal started
	// past the deadline is not cut at it).
	var renewing chan struct{}
	for {
		var timerC <-chan time.Time
		stop := func() bool { return false }
		if renewing == nil {
			wait := time.Until(time.UnixMilli(g.renewDue(l)))
			timer := time.NewTimer(max(wait, 0))
			timerC, stop = timer.C, timer.Stop
		}
		select {
		case <-l.Done():
			stop()
			// Told here, whatever happens to ctx next: the plan that moves
			// the shard away often arrives with the end of its term (a
			// member back from SIGSTOP past its leases reads both at once),
			// and the ShardRevoked must not depend on which came first.
			g.push(GroupEvent{Kind: ShardRevoked, Shard: s.k, Role: l.Role(), Leadership: l, Err: l.Err()})
			return false
		case succ := <-s.release:
			stop()
			g.giveUp(s, l, succ)
			return true
		case <-ctx.Done():
			stop()
			succ := ""
			select {
			case succ = <-s.release:
			default:
			}
			g.giveUp(s, l, succ)
			return true
		case <-renewing:
			stop()
			renewing = nil
		case <-timerC:
			renewing = make(chan struct{})
			go func(done chan struct{}) {
				defer close(done)
				rctx, cancel := context.WithTimeout(g.c.root, g.opt.ttl)
				defer cancel()
				if err := l.Renew(rctx); err != nil && l.Err() == nil {
					g.c.logger.Debug("krabka: group shard renewal failed", "role", l.Role().String(), "error", err)
					select { // retry after a tick, not at once
					case <-rctx.Done():
					case <-time.After(g.opt.tick):
					}
				}
			}(renewing)
		}
	}
}

// renewDue draws the instant of l's next renewal: its lease's renew
// instant, up to a tenth of the renew interval early.
func (g *Group) renewDue(l *Leadership) int64 {
	return core.SatSub(g.c.cfg.Lease.RenewAt(l.Lease()), renewJitterMs(g.c.cfg.Lease))
}

// giveUp tells the owner that shard s is revoked, then resigns l to
// successor.
func (g *Group) giveUp(s *groupShard, l *Leadership, successor string) {
	why := WrapError(ErrNotLeader, nil, "group %q: shard %d: the plan moved it to %q", g.name, s.k, successor)
	if successor == "" {
		why = WrapError(ErrNotLeader, nil, "group %q: shard %d: given up (the member left, or the plan gives it to nobody)", g.name, s.k)
	}
	g.push(GroupEvent{Kind: ShardRevoked, Shard: s.k, Role: l.Role(), Leadership: l, Err: why})
	g.resign(l, successor)
}

// groupResigns bounds the resignations a member runs at once (Close
// resigns every shard it holds at once): enough that 256 shards are
// resigned in a few round trips, few enough that none waits so long for
// the broker that its own timeout ends it unwritten.
const groupResigns = 32

// resign ends l, naming successor when it is a member id. It waits for one
// of the member's resignation slots; its timeout (the member ttl) starts
// once it has one.
func (g *Group) resign(l *Leadership, successor string) {
	g.resigns <- struct{}{}
	defer func() { <-g.resigns }()
	ctx, cancel := context.WithTimeout(g.c.root, g.opt.ttl)
	defer cancel()
	if m, err := core.NewMemberID(successor); err == nil {
		_ = l.ResignTo(ctx, m)
		return
	}
	_ = l.Resign(ctx)
}

// successorsLocked names, per shard, the member it should go to when this
// member gives it up: its owner in the newest plan, else its target, when
// that is another member; "" when the plan names nobody else. g.mu held.
func (g *Group) successorsLocked() []string {
	out := make([]string, g.n)
	p, me := g.view.plan, g.member.String()
	if p == nil || p.Shards != g.n || p.Kind != g.kind {
		return out
	}
	owners, targets := p.owners(), p.targets()
	for k := range out {
		for _, m := range [2]string{owners[k], targets[k]} {
			if m != "" && m != me {
				out[k] = m
				break
			}
		}
	}
	return out
}

// lead campaigns for the group's leader role; while it holds it, it
// publishes a new plan whenever the members or holders call for one.
func (g *Group) lead() {
	defer g.wg.Done()
	ctx := g.ctx
	select { // g.part is known
	case <-g.partReady:
	case <-ctx.Done():
		return
	}
	for ctx.Err() == nil {
		l, err := g.c.Acquire(ctx, g.leader, g.member)
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, ErrClosed) {
				return
			}
			_ = g.pause(ctx)
			continue
		}
		g.mu.Lock()
		g.leaderL = l
		g.mu.Unlock()
		g.leadTerm(ctx, l)
		g.mu.Lock()
		g.leaderL = nil
		g.mu.Unlock()
	}
}

func (g *Group) leadTerm(ctx context.Context, l *Leadership) {
	defer func() {
		if l.Err() == nil {
			g.resign(l, "")
		}
	}()
	// Read the group log up to where it stood when the term began, so
	// that the first plan builds on the newest one.
	var upTo int64 = -1
	for ctx.Err() == nil && l.Err() == nil {
		if upTo < 0 {
			if off, err := g.log.Transport.StableOffset(ctx, g.part); err == nil {
				upTo = off
			}
		} else if g.readFrom() >= upTo {
			break
		}
		_ = g.pause(ctx)
	}
	for ctx.Err() == nil && l.Err() == nil {
		if g.c.cfg.Lease.RenewDueAt(l.Lease(), g.c.clock.NowMs()) {
			rctx, cancel := context.WithTimeout(ctx, g.opt.ttl)
			_ = l.Renew(rctx)
			cancel()
		}
		if err := g.plan(ctx, l); err != nil && l.Err() == nil {
			g.c.logger.Debug("krabka: group plan failed", "group", g.name, "error", err)
		}
		select {
		case <-ctx.Done():
		case <-l.Done():
		case <-time.After(g.opt.tick):
		}
	}
}

// plan computes the next plan from the view and publishes it (a guarded
// write under l) when it differs from the newest one.
func (g *Group) plan(ctx context.Context, l *Leadership) error {
	now := g.c.clock.NowMs()
	g.mu.Lock()
	v := g.view.snapshot()
	g.mu.Unlock()
	members, live := v.planMembers(now)
	holder := v.holders(g.n, now)
	prev := v.plan
	if mine := g.lastPlan; mine != nil && mine.Token == l.Token().String() && (prev == nil || mine.Seq > prev.Seq) {
		// Our own newest plan, not read back yet: build on it, so that
		// the moves it started count against the bound.
		prev = mine
	}
	if prev != nil && (prev.Shards != g.n || prev.Kind != g.kind) {
		prev = nil
	}
	owner, base := slices.Clone(holder), holder
	var (
		seq, moves int64
		moving     []bool
	)
	if prev != nil {
		owner, base, seq, moves, moving = prev.owners(), prev.targets(), prev.Seq, prev.Moves, prev.moving()
	}
	target := groupTarget(g.n, members, base, g.perMax)
	next, transit, moved := groupStep(owner, target, holder, live, moving, g.opt.maxMoves)
	if prev != nil && slices.Equal(next, prev.owners()) && slices.Equal(target, prev.targets()) {
		// Nothing to change. The plan's Moving may still list moves that
		// finished since; each step recomputes what is in flight.
		return nil
	}
	rec := planRecord{Kind: g.kind, Shards: g.n, Seq: seq + 1, Leader: g.member.String(), Token: l.Token().String(), At: now,
		Moves: moves + int64(moved), Moving: movingList(transit)}
	val := encodePlan(rec, next, target)
	_, err := l.Produce(ctx, Message{Topic: g.log.Topic, Partition: g.part, Key: groupKey(groupKindPlan, g.name, ""), Value: val})
	if err == nil {
		g.lastPlan, _ = decodePlan(val)
	}
	return err
}

// stop ends the group: every shard is released at once (resigned by its
// goroutine, at most groupResigns at a time, naming its successor: the
// shard's owner in the plan, or its target, when that is another member),
// the campaigns end, the leader role is resigned and the heartbeat's
// tombstone written.
func (g *Group) stop(ctx context.Context) {
	g.mu.Lock()
	if g.err != nil {
		g.mu.Unlock()
		<-g.done
		return
	}
	g.err = WrapError(ErrClosed, nil, "group %q: closed", g.name)
	shards := make([]*groupShard, 0, len(g.shards))
	for _, s := range g.shards {
		shards = append(shards, s)
	}
	succ := g.successorsLocked()
	g.mu.Unlock()
	for _, s := range shards {
		s.stop(succ[s.k])
	}
	for _, s := range shards {
		<-s.done
	}
	g.cancel()
	g.wg.Wait()
	select {
	case <-g.partReady: // the member may have written heartbeats: tombstone them
		hctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), g.opt.ttl)
		_ = g.heartbeat(hctx, true)
		cancel()
	default:
	}
	g.mu.Lock()
	close(g.wake)
	g.wake = make(chan struct{})
	g.mu.Unlock()
	close(g.done)
}
