package chaos

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/krabka/krabka-coord/tests/chaos/netlab"
	"github.com/krabka/krabka-coord/tests/kafka/faultproxy"
)

// FaultRecord is one fault as it happened, for the timeline and the
// explanations of long gaps.
type FaultRecord struct {
	Kind     string    `json:"kind"`
	Target   string    `json:"target"`
	Start    time.Time `json:"start"`
	End      time.Time `json:"end"`
	OnLeader bool      `json:"on_leader,omitempty"` // a member fault that hit the leader (and the baseline with it)
	Members  []string  `json:"members,omitempty"`   // the member processes it hit (member faults)
}

// The fault kinds of the schedule and their weights (out of 100). Member
// faults run one at a time in the schedule's loop; broker faults run beside
// them, one at a time (a draw while one is in progress is skipped); a
// member on the minority side needs both and runs in the loop.
//
//	member-kill 11, member-pause 9, link-cut 10, link-delay 6, clock-skew 6,
//	member-minority 8, broker-kill 10, broker-isolate 12, broker-pause 7,
//	broker-oneway 6, broker-link-delay 6, broker-link-loss 5,
//	broker-kill-two 4 (a broker fault holds the slot until every replica is
//	in sync again, and two brokers down take the longest: 30-60 s),
//	midtxn-kill 8, midtxn-pause 4, midtxn-cut 5 (a Go process of the extra
//	roles struck between its renewal's answered Produce and its EndTxn:
//	roles.go); 117 in all.
//
// The first fault of every campaign is a broker-isolate (so that even a
// 90 s campaign partitions a broker), the second a midtxn-kill (so that
// even a 90 s campaign leaves a lease transaction open on a shared
// partition).
var faultWeights = []struct {
	kind   string
	weight int
}{
	{"member-kill", 11}, {"member-pause", 9}, {"link-cut", 10}, {"link-delay", 6}, {"clock-skew", 6},
	{"member-minority", 8}, {"broker-kill", 10}, {"broker-isolate", 12}, {"broker-pause", 7},
	{"broker-oneway", 6}, {"broker-link-delay", 6}, {"broker-link-loss", 5}, {"broker-kill-two", 4},
	{"midtxn-kill", 8}, {"midtxn-pause", 4}, {"midtxn-cut", 5},
}

// totalWeight is the sum of the weights.
func totalWeight() int {
	n := 0
	for _, w := range faultWeights {
		n += w.weight
	}
	return n
}

func kindOf(n int) string {
	for _, w := range faultWeights {
		if n < w.weight {
			return w.kind
		}
		n -= w.weight
	}
	return faultWeights[len(faultWeights)-1].kind
}

// brokerSessionTimeout is Kafka's broker.session.timeout.ms (default): a
// broker paused longer is fenced by the controller.
const brokerSessionTimeout = 9 * time.Second

var brokerTargets = []string{"random", "partition-leader", "txn-coordinator", "controller"}

func between(r *rand.Rand, lo, hi time.Duration) time.Duration {
	return lo + time.Duration(r.Int64N(int64(hi-lo)+1))
}

func (c *campaign) sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// drawn counts a fault the schedule chose; injected counts it again once it
// took effect (the minimums compare the two).
func (c *campaign) draw(kind string) {
	c.mu.Lock()
	c.drawn[kind]++
	c.mu.Unlock()
}

func (c *campaign) injected(kind string) {
	c.mu.Lock()
	c.faults[kind]++
	c.mu.Unlock()
}

// begin starts the record of a fault; members are the member processes it
// hits (none for a broker fault).
func (c *campaign) begin(kind, target string, onLeader bool, members ...*member) *FaultRecord {
	f := &FaultRecord{Kind: kind, Target: target, Start: time.Now(), OnLeader: onLeader}
	for _, m := range members {
		f.Members = append(f.Members, m.name)
	}
	return f
}

func (c *campaign) end(f *FaultRecord) {
	f.End = time.Now()
	c.mu.Lock()
	c.faultLog = append(c.faultLog, *f)
	c.mu.Unlock()
}

// roleMembers are the three members (not the baseline).
func (c *campaign) roleMembers() []*member { return c.members[:3] }

// pick is the current leader when toLeader and one is known, else the
// member drawn (drawn is always drawn, so the generator's sequence does not
// depend on what happened); onLeader says whether it is the leader.
func (c *campaign) pick(toLeader bool, drawn int) (*member, bool) {
	c.mu.Lock()
	l := c.leader
	c.mu.Unlock()
	if toLeader && l != "" {
		for _, m := range c.roleMembers() {
			if m.name == l {
				return m, true
			}
		}
	}
	m := c.roleMembers()[drawn%3]
	return m, m.name == l
}

// withBaseline is the members a member fault hits: the member, and the
// baseline writer too when the member is the leader (the baseline stands
// for an application that needs no election: it suffers what the leader
// suffers, and nothing for a standby).
func (c *campaign) withBaseline(m *member, onLeader bool) []*member {
	if onLeader {
		return []*member{m, c.base}
	}
	return []*member{m}
}

func names(ms []*member) string {
	var s []string
	for _, m := range ms {
		s = append(s, m.name)
	}
	return strings.Join(s, "+")
}

// linksAre is true when every proxy of g holds the fault (cut, or delayed
// by delay); a proxy to a broker that is down keeps it for when it is up.
func linksAre(cut bool, delay time.Duration, g ...*faultproxy.Proxy) bool {
	for _, p := range g {
		if c, d := p.Armed(); c != cut || d != delay {
			return false
		}
	}
	return len(g) > 0
}

// claimBrokers takes the broker-fault slot; false when one is in progress.
func (c *campaign) claimBrokers() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.brokerBusy {
		return false
	}
	c.brokerBusy = true
	return true
}

func (c *campaign) releaseBrokers() {
	c.mu.Lock()
	c.brokerBusy = false
	c.mu.Unlock()
}

// schedule draws faults until ctx ends. Every draw comes from the seeded
// generator, in a fixed order, whatever happens.
func (c *campaign) schedule(ctx context.Context) {
	lease := time.Duration(c.opts.LeaseMs) * time.Millisecond
	for i := 0; ctx.Err() == nil; i++ {
		gap := between(c.rng, 2*time.Second, 6*time.Second)
		n := c.rng.IntN(totalWeight())
		toLeader := c.rng.IntN(100) < 75
		d1 := between(c.rng, 500*time.Millisecond, 3*time.Second)
		d2 := between(c.rng, 1*time.Second, 4*time.Second)
		pick := c.rng.IntN(4)
		skew := between(c.rng, 2*time.Second, 8*time.Second)
		if c.rng.IntN(2) == 0 {
			skew = -skew
		}
		delay := between(c.rng, 100*time.Millisecond, 1500*time.Millisecond)
		drawnMember := c.rng.IntN(3)
		drawnNode := 1 + c.rng.IntN(3)
		otherOffset := 1 + c.rng.IntN(2)
		long := between(c.rng, 4*time.Second, 12*time.Second)
		linkDelay := between(c.rng, 50*time.Millisecond, 800*time.Millisecond)
		loss := 0.1 + 0.3*c.rng.Float64()
		dir := c.rng.IntN(2)
		drawnGo := c.rng.IntN(len(goMembers))
		// The group mode: a member fault strikes a group member two times
		// in five (drawn only in group mode, so that a seed without it
		// replays as before).
		toGroup, drawnGrp := false, 0
		if len(c.grp) > 0 {
			toGroup = c.rng.IntN(5) < 2
			drawnGrp = c.rng.IntN(len(c.grp))
		}
		target := func() (*member, bool) {
			if toGroup {
				return c.grp[drawnGrp], false
			}
			return c.pick(toLeader, drawnMember)
		}
		kind := kindOf(n)
		switch i {
		case 0:
			kind = "broker-isolate"
		case 1:
			kind = "midtxn-kill"
		}
		if !c.sleep(ctx, gap) {
			return
		}
		switch kind {
		case "member-kill": // SIGKILL and restart
			m, onL := target()
			ms := c.withBaseline(m, onL)
			c.draw(kind)
			c.say("FAULT member-kill: SIGKILL %s, restart in %s", names(ms), d1.Round(time.Millisecond))
			f := c.begin(kind, names(ms), onL, ms...)
			if c.kill(m) {
				c.injected(kind)
			} else {
				c.say("(member-kill: %s was not running)", m.name)
			}
			if onL {
				c.kill(c.base)
			}
			c.sleep(context.Background(), d1)
			for _, x := range ms {
				if err := c.startMember(x, 0); err != nil {
					c.say("restart %s: %v", x.name, err)
				}
			}
			c.end(f)
		case "member-pause": // SIGSTOP past the lease, SIGCONT
			m, onL := target()
			ms := c.withBaseline(m, onL)
			l := lease
			if m.group {
				l = time.Duration(c.opts.GroupLeaseMs) * time.Millisecond
			}
			d := l + d2
			c.draw(kind)
			c.say("FAULT member-pause: SIGSTOP %s for %s (lease %s), then SIGCONT", names(ms), d.Round(time.Millisecond), l)
			f := c.begin(kind, names(ms), onL, ms...)
			if c.signal(m, syscall.SIGSTOP) {
				c.injected(kind)
			} else {
				c.say("(member-pause: %s was not running)", m.name)
			}
			if onL {
				c.signal(c.base, syscall.SIGSTOP)
			}
			c.sleep(context.Background(), d)
			for _, x := range ms {
				c.signal(x, syscall.SIGCONT)
			}
			c.end(f)
		case "link-cut": // client-to-broker cut (the proxies hold what they read), then heal
			m, onL := target()
			ms := c.withBaseline(m, onL)
			d := d1 + d2
			if m.group {
				c.groupCut(m, pick, drawnNode, d)
				continue
			}
			var ps []*faultproxy.Proxy
			k := "link-cut(all brokers)"
			what := "every broker"
			if pick == 0 {
				node := c.brokerFor("partition-leader", drawnNode)
				k, what = "link-cut(one broker)", fmt.Sprintf("broker %d (command partition leader)", node)
				for _, x := range ms {
					ps = append(ps, x.proxies[node-1])
				}
			} else {
				for _, x := range ms {
					ps = append(ps, x.proxies...)
				}
			}
			c.draw(k)
			c.say("FAULT %s: %s cut from %s for %s", k, names(ms), what, d.Round(time.Millisecond))
			f := c.begin(k, names(ms)+" to "+what, onL, ms...)
			for _, p := range ps {
				p.Cut()
			}
			if linksAre(true, 0, ps...) {
				c.injected(k)
			}
			c.sleep(context.Background(), d)
			for _, p := range ps {
				p.Heal()
			}
			c.end(f)
			c.say("healed %s", names(ms))
		case "link-delay": // client-to-broker delay
			m, onL := c.pick(toLeader, drawnMember)
			ms := c.withBaseline(m, onL)
			d := d1 + d2 + lease
			c.draw(kind)
			c.say("FAULT link-delay: %s's links delayed by %s for %s", names(ms), delay.Round(time.Millisecond), d.Round(time.Millisecond))
			f := c.begin(kind, names(ms), onL, ms...)
			var ps []*faultproxy.Proxy
			for _, x := range ms {
				ps = append(ps, x.proxies...)
			}
			for _, p := range ps {
				p.Delay(delay)
			}
			if linksAre(false, delay, ps...) {
				c.injected(kind)
			}
			c.sleep(context.Background(), d)
			for _, p := range ps {
				p.Heal()
			}
			c.end(f)
		case "clock-skew": // one member's lease clock offset by seconds (restart with the test-only hook)
			m, onL := target()
			ms := c.withBaseline(m, onL)
			c.draw(kind)
			c.say("FAULT clock-skew: restart %s with its lease clock offset by %+ds%s", m.name, skew/time.Second,
				map[bool]string{true: " (and restart the baseline)", false: ""}[onL])
			f := c.begin(kind, names(ms), onL, ms...)
			for _, x := range ms {
				c.kill(x)
			}
			c.sleep(context.Background(), d1)
			if err := c.startMember(m, skew.Milliseconds()); err != nil {
				c.say("restart %s: %v", m.name, err)
			} else {
				c.injected(kind)
			}
			if onL {
				if err := c.startMember(c.base, 0); err != nil {
					c.say("restart %s: %v", c.base.name, err)
				}
			}
			c.end(f)
		case "midtxn-kill":
			c.midTxn(kind, drawnGo, d1+d2)
		case "midtxn-pause":
			c.midTxn(kind, drawnGo, lease+d2)
		case "midtxn-cut":
			c.midTxn(kind, drawnGo, d1+d2)
		case "member-minority": // a member and the old partition leader cut off from the rest
			if !c.claimBrokers() {
				c.say("(member-minority skipped: a broker fault is in progress)")
				continue
			}
			m, onL := target()
			ms := c.withBaseline(m, onL)
			node := c.brokerFor("partition-leader", drawnNode)
			c.draw(kind)
			sideA := []string{c.net.brokerName(node)}
			for _, x := range ms {
				sideA = append(sideA, x.ep.Name)
			}
			var sideB []string
			sideB = append(sideB, c.net.otherBrokers(node)...)
			for _, x := range append(append([]*member{}, c.members...), c.gos...) {
				in := false
				for _, y := range ms {
					in = in || x == y
				}
				if !in {
					sideB = append(sideB, x.ep.Name)
				}
			}
			c.say("FAULT member-minority: %s with broker %d (command partition leader) on the minority side, cut from %s for %s",
				names(ms), node, strings.Join(sideB, " "), long.Round(time.Millisecond))
			f := c.begin(kind, fmt.Sprintf("%s with broker %d", names(ms), node), onL, ms...)
			c.groupDown(m, "minority")
			c.partition(kind, c.net.cut(sideA, sideB), long)
			c.groupUp(m, "heal")
			c.end(f)
			c.waitHealthy(60 * time.Second)
			c.releaseBrokers()
		default:
			if !c.claimBrokers() {
				c.say("(%s skipped: one broker fault at a time)", kind)
				continue
			}
			target := brokerTargets[pick]
			c.wg.Add(1)
			go func() {
				defer c.wg.Done()
				defer c.releaseBrokers()
				c.brokerFault(kind, target, drawnNode, otherOffset, d1+d2, long, linkDelay, loss, dir)
				c.waitHealthy(60 * time.Second)
			}()
		}
	}
}

// partition installs rules for d and removes them; it counts kind as
// injected when every rule was installed.
func (c *campaign) partition(kind string, rules []netlab.Rule, d time.Duration) {
	id, err := c.net.lab.Apply(rules)
	if err != nil {
		c.say("(%s: %v)", kind, err)
		return
	}
	c.injected(kind)
	c.sleep(context.Background(), d)
	if err := c.net.lab.Heal(id); err != nil {
		c.say("healing %s: %v", kind, err)
	}
	c.say("healed (%s)", kind)
}

// brokerFault runs one broker fault (beside the member faults).
func (c *campaign) brokerFault(kind, target string, drawnNode, otherOffset int, down, long, linkDelay time.Duration, loss float64, dir int) {
	switch kind {
	case "broker-kill":
		k := "broker-kill(" + target + ")"
		node := c.brokerFor(target, drawnNode)
		c.draw(k)
		c.say("FAULT %s: SIGKILL broker %d, restart after %s", k, node, down.Round(time.Millisecond))
		f := c.begin(k, fmt.Sprintf("broker %d", node), false)
		if c.brokerKill([]int{node}, down, false) {
			c.injected(k)
		}
		c.end(f)
	case "broker-kill-two":
		node := c.brokerFor(target, drawnNode)
		other := 1 + (node-1+otherOffset)%3
		c.draw(kind)
		c.say("FAULT broker-kill-two: SIGKILL brokers %d and %d (the in-sync quorum lost: writes must stop), restart after %s",
			node, other, long.Round(time.Millisecond))
		f := c.begin(kind, fmt.Sprintf("brokers %d,%d", node, other), false)
		if c.brokerKill([]int{node, other}, long, true) {
			c.injected(kind)
		}
		c.end(f)
	case "broker-isolate":
		k := "broker-isolate(" + target + ")"
		node := c.brokerFor(target, drawnNode)
		c.draw(k)
		others := append(c.net.otherBrokers(node), c.net.memberNames()...)
		c.say("FAULT %s: broker %d cut from the other brokers and every client for %s", k, node, long.Round(time.Millisecond))
		f := c.begin(k, fmt.Sprintf("broker %d", node), false)
		c.partition(k, c.net.cut([]string{c.net.brokerName(node)}, others), long)
		c.end(f)
	case "broker-pause":
		k := "broker-pause(" + target + ")"
		node := c.brokerFor(target, drawnNode)
		d := brokerSessionTimeout + down/2 + time.Second
		c.draw(k)
		c.say("FAULT %s: SIGSTOP broker %d for %s (past broker.session.timeout.ms %s), then SIGCONT", k, node, d.Round(time.Millisecond), brokerSessionTimeout)
		f := c.begin(k, fmt.Sprintf("broker %d", node), false)
		if pid := c.brokerPid(node); pid > 0 && syscall.Kill(pid, syscall.SIGSTOP) == nil {
			c.mu.Lock()
			c.paused[node] = true
			c.mu.Unlock()
			c.injected(k)
			c.sleep(context.Background(), d)
			_ = syscall.Kill(pid, syscall.SIGCONT)
			c.mu.Lock()
			delete(c.paused, node)
			c.mu.Unlock()
			c.say("broker %d resumed", node)
		} else {
			c.say("(%s: broker %d is not running)", k, node)
		}
		c.end(f)
	case "broker-oneway":
		node := c.brokerFor(target, drawnNode)
		var rules []netlab.Rule
		k := "broker-oneway(out)"
		what := fmt.Sprintf("broker %d's packets to the other brokers dropped (it still hears them)", node)
		if dir == 0 {
			rules = c.net.oneWay(c.net.brokerName(node), c.net.otherBrokers(node), 1)
		} else {
			k = "broker-oneway(in)"
			what = fmt.Sprintf("the other brokers' packets to broker %d dropped (it still reaches them)", node)
			for _, o := range c.net.otherBrokers(node) {
				rules = append(rules, c.net.oneWay(o, []string{c.net.brokerName(node)}, 1)...)
			}
		}
		c.draw(k)
		c.say("FAULT %s (%s): %s for %s", k, target, what, long.Round(time.Millisecond))
		f := c.begin(k, fmt.Sprintf("broker %d (%s)", node, target), false)
		c.partition(k, rules, long)
		c.end(f)
	case "broker-link-delay":
		node := c.brokerFor(target, drawnNode)
		ps := c.net.meshOf(node)
		c.draw(kind)
		c.say("FAULT broker-link-delay (%s): broker %d's links to the other brokers delayed by %s for %s", target, node,
			linkDelay.Round(time.Millisecond), long.Round(time.Millisecond))
		f := c.begin(kind, fmt.Sprintf("broker %d (%s)", node, target), false)
		for _, p := range ps {
			p.Delay(linkDelay)
		}
		if linksAre(false, linkDelay, ps...) {
			c.injected(kind)
		}
		c.sleep(context.Background(), long)
		for _, p := range ps {
			p.Heal()
		}
		c.end(f)
		c.say("healed (broker-link-delay)")
	case "broker-link-loss":
		node := c.brokerFor(target, drawnNode)
		rules := c.net.oneWay(c.net.brokerName(node), c.net.otherBrokers(node), loss)
		for _, o := range c.net.otherBrokers(node) {
			rules = append(rules, c.net.oneWay(o, []string{c.net.brokerName(node)}, loss)...)
		}
		c.draw(kind)
		c.say("FAULT broker-link-loss (%s): %.0f%% of the packets between broker %d and the other brokers dropped for %s", target,
			loss*100, node, long.Round(time.Millisecond))
		f := c.begin(kind, fmt.Sprintf("broker %d (%s) %.0f%%", node, target, loss*100), false)
		c.partition(kind, rules, long)
		c.end(f)
	}
}

// brokerPid is node's java process id (cluster.sh's pid file), 0 if none.
func (c *campaign) brokerPid(node int) int {
	b, err := os.ReadFile(filepath.Join(c.opts.Dir, fmt.Sprintf("node-%d", node), "pid"))
	if err != nil {
		return 0
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	return pid
}

// brokerKill kills brokers and restarts them after down; true when the
// kill took effect. With window, the time from the kill to the restart is
// recorded as one in which nothing may be acknowledged.
func (c *campaign) brokerKill(nodes []int, down time.Duration, window bool) bool {
	var list []string
	for _, n := range nodes {
		c.proxiesOf(n, false)
		list = append(list, strconv.Itoa(n))
	}
	arg := strings.Join(list, ",")
	if _, err := c.script(context.Background(), "kill-node", arg, "--dir", c.opts.Dir); err != nil {
		c.say("kill-node %s: %v", arg, err)
		for _, n := range nodes {
			c.proxiesOf(n, true)
		}
		return false
	}
	killed := time.Now()
	c.mu.Lock()
	for _, n := range nodes {
		c.down[n] = true
	}
	c.mu.Unlock()
	time.Sleep(down)
	if window {
		c.mu.Lock()
		c.twoDown = append(c.twoDown, Window{Start: killed, End: time.Now(), What: "brokers " + arg})
		c.mu.Unlock()
	}
	t0 := time.Now()
	c.restartNodes(nodes)
	c.mu.Lock()
	for _, n := range nodes {
		delete(c.down, n)
	}
	c.readyLog = append(c.readyLog, fmt.Sprintf("brokers %s ready in %s", arg, time.Since(t0).Round(100*time.Millisecond)))
	c.mu.Unlock()
	c.say("broker(s) %s back (ready in %s)", arg, time.Since(t0).Round(100*time.Millisecond))
	return true
}

// healAll ends every fault: filters removed, proxies healed, paused
// brokers resumed, killed brokers restarted.
func (c *campaign) healAll() {
	if err := c.net.lab.HealAll(); err != nil {
		c.say("removing filters: %v", err)
	}
	for _, m := range c.members {
		m.proxies.Heal()
	}
	for i := 1; i <= 3; i++ {
		for _, p := range c.net.meshOf(i) {
			p.Heal()
		}
	}
	c.mu.Lock()
	var paused, down []int
	for n := range c.paused {
		paused = append(paused, n)
	}
	for n := range c.down {
		down = append(down, n)
	}
	c.mu.Unlock()
	for _, n := range paused {
		if pid := c.brokerPid(n); pid > 0 {
			_ = syscall.Kill(pid, syscall.SIGCONT)
		}
	}
	if len(down) > 0 {
		var list []string
		for _, n := range down {
			list = append(list, strconv.Itoa(n))
		}
		c.restartNodes(down)
	}
	c.waitHealthy(90 * time.Second)
}

// restartNodes starts killed brokers again on their data. The other
// brokers' proxies to them open first (two restarted brokers must reach
// each other to form the controller quorum), the members' once each
// broker listens: cluster.sh's readiness counts brokers the controller has
// not fenced yet, dead or not. A broker that exits while starting (it
// could not register with the quorum in time) is started again, up to
// three times.
func (c *campaign) restartNodes(nodes []int) {
	var list []string
	for _, n := range nodes {
		list = append(list, strconv.Itoa(n))
		for _, p := range c.net.meshTo(n) {
			if err := p.Up(); err != nil {
				c.say("%v", err)
			}
		}
	}
	arg := strings.Join(list, ",")
	for try := 1; try <= 3; try++ {
		if _, err := c.script(context.Background(), "start-node", arg, "--dir", c.opts.Dir); err != nil {
			c.say("start-node %s: %v", arg, err)
		}
		var dead []string
		for _, n := range nodes {
			if !c.waitListening(n, 90*time.Second) {
				dead = append(dead, strconv.Itoa(n))
			}
		}
		if len(dead) == 0 {
			break
		}
		arg = strings.Join(dead, ",")
		c.say("(broker(s) %s exited while starting: starting again)", arg)
	}
	for _, n := range nodes {
		for _, m := range c.members {
			if err := m.proxies[n-1].Up(); err != nil {
				c.say("%v", err)
			}
		}
	}
}

// waitListening waits until node accepts connections on its PLAINTEXT
// listener (from the admin's namespace), at most d; false when its process
// is gone or d passed.
func (c *campaign) waitListening(node int, d time.Duration) bool {
	deadline := time.Now().Add(d)
	addr := c.net.brokerBootstrap()[node-1]
	for time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		conn, err := netlab.Dial(ctx, c.net.ctl.NS, "tcp", addr)
		cancel()
		if err == nil {
			conn.Close()
			return true
		}
		if pid := c.brokerPid(node); pid <= 0 || syscall.Kill(pid, 0) != nil {
			return false
		}
		time.Sleep(100 * time.Millisecond)
	}
	c.say("(broker %d does not listen yet after %s)", node, d)
	return false
}

// waitHealthy waits, at most d, until every partition of the command
// topic and of __transaction_state has its three replicas in sync: the
// end of a broker fault, so that the next one starts on a whole cluster
// (a restarted broker is listed in the metadata long before it caught up).
func (c *campaign) waitHealthy(d time.Duration) {
	t0 := time.Now()
	deadline := t0.Add(d)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		md, err := c.adm.Metadata(ctx, c.topic, "__transaction_state")
		cancel()
		whole := err == nil && len(md.Topics) == 2
		if whole {
			for _, t := range md.Topics {
				if t.Err != nil || len(t.Partitions) == 0 {
					whole = false
				}
				for _, p := range t.Partitions {
					if p.Err != nil || len(p.ISR) < 3 || p.Leader < 0 {
						whole = false
					}
				}
			}
		}
		if whole {
			if el := time.Since(t0); el > time.Second {
				c.say("cluster whole again (every replica in sync) after %s", el.Round(100*time.Millisecond))
			}
			return
		}
		if time.Now().After(deadline) {
			c.say("(the cluster is not whole after %s: %v)", d, err)
			return
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// proxiesOf takes every proxy to a broker down (a dead broker refuses
// connections; a proxy left listening would accept and then close them,
// which clients read differently) or up again: the members' and the other
// brokers'.
func (c *campaign) proxiesOf(node int, up bool) {
	ps := c.net.meshTo(node)
	for _, m := range c.members {
		ps = append(ps, m.proxies[node-1])
	}
	for _, p := range ps {
		if !up {
			p.Down()
		} else if err := p.Up(); err != nil {
			c.say("%v", err)
		}
	}
}

// groupCut is a link cut of a group member: the group members reach the
// brokers without proxies, so the cut is packet filters between its
// namespace and every broker (pick 0: the command partition leader's
// broker only) for d.
func (c *campaign) groupCut(m *member, pick, drawnNode int, d time.Duration) {
	k, what, brokers := "link-cut(all brokers)", "every broker", []string{"b1", "b2", "b3"}
	if pick == 0 {
		node := c.brokerFor("partition-leader", drawnNode)
		k, what, brokers = "link-cut(one broker)", fmt.Sprintf("broker %d (command partition leader)", node), []string{c.net.brokerName(node)}
	}
	c.draw(k)
	c.say("FAULT %s: %s cut from %s for %s (packet filters)", k, m.name, what, d.Round(time.Millisecond))
	f := c.begin(k, m.name+" to "+what, false, m)
	c.groupDown(m, "cut")
	id, err := c.net.lab.Apply(c.net.cut([]string{m.ep.Name}, brokers))
	if err != nil {
		c.say("(%s: %v)", k, err)
	} else {
		c.injected(k)
		c.sleep(context.Background(), d)
		if err := c.net.lab.Heal(id); err != nil {
			c.say("healing %s: %v", k, err)
		}
	}
	c.groupUp(m, "heal")
	c.end(f)
	c.say("healed %s", m.name)
}
