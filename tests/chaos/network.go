package chaos

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/krabka/krabka-coord/tests/chaos/netlab"
	"github.com/krabka/krabka-coord/tests/kafka/faultproxy"
)

// network is the campaign's lab: the brokers' namespaces (b1..b3), one per
// member link (m1..m3, the baseline's m4), one per Go process of the extra
// roles (g1, g2: they reach the brokers' own PLAINTEXT listeners, without
// proxies; their faults are kills, pauses and packet filters), the admin's
// (ctl), the broker-to-broker proxies and the members' proxies.
//
// Ports, with B = Options.PortBase:
//
//	node i (1..3), inside its namespace at 10.213.0.1i: PLAINTEXT B+10(i-1),
//	  CONTROLLER +1, PEERk +1+k (k = 1..3: the listener node k replicates
//	  from), X<k> +5+k (k = 1..4: member k's listener);
//	node i's replication proxy to node j, on node i's loopback:
//	  127.0.0.1:B+200+10i+j; its controller proxy: 127.0.0.1:B+300+10i+j;
//	member k's proxy to node i, on the loopback of member k's namespace
//	  (where member k runs; the address X<k> of node i advertises):
//	  B+100+10(i-1)+k-1.
//
// Every namespace's outgoing connections take local ports from
// netlab.EphemeralPorts (50000-60999), above all of these.
type network struct {
	lab      *netlab.Lab
	prefix   string
	brokers  []*netlab.Endpoint // index 0 is node 1
	ctl      *netlab.Endpoint
	advBase  int
	peerBase int
	portBase int
	// mesh[i][j]: node i+1's proxies to node j+1: replication, controller.
	mesh    [3][3][2]*faultproxy.Proxy
	members []*member
	gos     []*member
}

func nodePort(base, node, off int) int { return base + 10*(node-1) + off }

// newNetwork builds the lab and the proxies. A machine where network
// namespaces cannot be made fails here with one sentence.
func newNetwork(opts Options, members, gos []*member) (*network, error) {
	nw := &network{prefix: fmt.Sprintf("kc%d-", opts.PortBase), advBase: opts.PortBase + 100, peerBase: opts.PortBase + 200,
		portBase: opts.PortBase, members: members, gos: gos}
	names := map[string]int{"ctl": 2}
	for i := 1; i <= 3; i++ {
		names[fmt.Sprintf("b%d", i)] = 10 + i
	}
	for k := range members {
		names[fmt.Sprintf("m%d", k+1)] = 21 + k
	}
	for k := range gos {
		names[fmt.Sprintf("g%d", k+1)] = 21 + len(members) + k
	}
	lab, err := netlab.New(nw.prefix, opts.Subnet, names)
	if err != nil {
		return nil, fmt.Errorf("the campaign needs network namespaces for its brokers and links (root, ip netns, veth, a bridge, tc), and making them failed: %w", err)
	}
	nw.lab = lab
	nw.ctl = lab.Endpoint("ctl")
	for k, m := range gos {
		m.ep = lab.Endpoint(fmt.Sprintf("g%d", k+1))
	}
	for i := 1; i <= 3; i++ {
		nw.brokers = append(nw.brokers, lab.Endpoint(fmt.Sprintf("b%d", i)))
	}
	fail := func(err error) (*network, error) {
		nw.close()
		return nil, err
	}
	// Broker-to-broker proxies: in node i's namespace, to node j's listeners.
	for i := 1; i <= 3; i++ {
		ep := nw.brokers[i-1]
		n := faultproxy.Net{
			Listen: func(addr string) (net.Listener, error) { return netlab.Listen(ep.NS, "tcp", addr) },
			Dial: func(ctx context.Context, addr string) (net.Conn, error) {
				return netlab.Dial(ctx, ep.NS, "tcp", addr)
			},
		}
		for j := 1; j <= 3; j++ {
			if i == j {
				continue
			}
			to := nw.brokers[j-1].Addr
			rp, err := faultproxy.ListenNet(fmt.Sprintf("127.0.0.1:%d", nw.peerBase+10*i+j),
				fmt.Sprintf("%s:%d", to, nodePort(opts.PortBase, j, 1+i)), n)
			if err != nil {
				return fail(err)
			}
			cp, err := faultproxy.ListenNet(fmt.Sprintf("127.0.0.1:%d", nw.peerBase+100+10*i+j),
				fmt.Sprintf("%s:%d", to, nodePort(opts.PortBase, j, 1)), n)
			if err != nil {
				rp.Close()
				return fail(err)
			}
			nw.mesh[i-1][j-1] = [2]*faultproxy.Proxy{rp, cp}
		}
	}
	// Members' proxies: on the loopback of the member's namespace, where
	// the member runs.
	for k, m := range members {
		ep := lab.Endpoint(fmt.Sprintf("m%d", k+1))
		m.ep = ep
		n := faultproxy.Net{
			Listen: func(addr string) (net.Listener, error) { return netlab.Listen(ep.NS, "tcp", addr) },
			Dial: func(ctx context.Context, addr string) (net.Conn, error) {
				return netlab.Dial(ctx, ep.NS, "tcp", addr)
			},
		}
		for i := 1; i <= 3; i++ {
			p, err := faultproxy.ListenNet(fmt.Sprintf("127.0.0.1:%d", nodePort(nw.advBase, i, k)),
				fmt.Sprintf("%s:%d", nw.brokers[i-1].Addr, nodePort(opts.PortBase, i, 6+k)), n)
			if err != nil {
				return fail(err)
			}
			m.proxies = append(m.proxies, p)
		}
	}
	return nw, nil
}

func (nw *network) close() error {
	for _, m := range nw.members {
		m.proxies.Close()
		m.proxies = nil
	}
	for i := range nw.mesh {
		for j := range nw.mesh[i] {
			for _, p := range nw.mesh[i][j] {
				if p != nil {
					p.Close()
				}
			}
		}
	}
	if nw.lab == nil {
		return nil
	}
	return nw.lab.Close()
}

// clusterArgs adds the network's options to a cluster.sh command line.
func (nw *network) clusterArgs(opts Options, args ...string) []string {
	var hosts, nss []string
	for _, b := range nw.brokers {
		hosts = append(hosts, b.Addr)
		nss = append(nss, b.NS)
	}
	return append(args, "--hosts", strings.Join(hosts, ","), "--netns", strings.Join(nss, ","),
		"--client-netns", nw.ctl.NS, "--peer-proxies", strconv.Itoa(nw.peerBase))
}

func (nw *network) brokerAddrs() []string {
	var out []string
	for _, b := range nw.brokers {
		out = append(out, b.Addr)
	}
	return out
}

// brokerBootstrap is the PLAINTEXT listeners, reachable from ctl.
func (nw *network) brokerBootstrap() []string {
	var out []string
	for i, b := range nw.brokers {
		out = append(out, fmt.Sprintf("%s:%d", b.Addr, nodePort(nw.portBase, i+1, 0)))
	}
	return out
}

// meshOf is every broker-to-broker proxy with node at one end.
func (nw *network) meshOf(node int) []*faultproxy.Proxy {
	var out []*faultproxy.Proxy
	for i := 1; i <= 3; i++ {
		for j := 1; j <= 3; j++ {
			if i != j && (i == node || j == node) {
				out = append(out, nw.mesh[i-1][j-1][0], nw.mesh[i-1][j-1][1])
			}
		}
	}
	return out
}

// meshTo is every broker-to-broker proxy that dials node.
func (nw *network) meshTo(node int) []*faultproxy.Proxy {
	var out []*faultproxy.Proxy
	for i := 1; i <= 3; i++ {
		if i != node {
			out = append(out, nw.mesh[i-1][node-1][0], nw.mesh[i-1][node-1][1])
		}
	}
	return out
}

// Rules for the faults. An endpoint is named by its short name.

func (nw *network) brokerName(node int) string { return fmt.Sprintf("b%d", node) }

// cut drops every packet between the two sides (both directions).
func (nw *network) cut(sideA, sideB []string) []netlab.Rule {
	var rules []netlab.Rule
	for _, a := range sideA {
		for _, b := range sideB {
			rules = append(rules, netlab.Rule{From: a, To: nw.lab.Endpoint(b).Addr, Loss: 1},
				netlab.Rule{From: b, To: nw.lab.Endpoint(a).Addr, Loss: 1})
		}
	}
	return rules
}

// oneWay drops what from sends to every endpoint of to, with probability loss.
func (nw *network) oneWay(from string, to []string, loss float64) []netlab.Rule {
	var rules []netlab.Rule
	for _, b := range to {
		rules = append(rules, netlab.Rule{From: from, To: nw.lab.Endpoint(b).Addr, Loss: loss})
	}
	return rules
}

// otherBrokers names the brokers other than node.
func (nw *network) otherBrokers(node int) []string {
	var out []string
	for i := 1; i <= 3; i++ {
		if i != node {
			out = append(out, nw.brokerName(i))
		}
	}
	return out
}

// memberNames names every member link (and the baseline's, and the Go
// processes').
func (nw *network) memberNames() []string {
	var out []string
	for _, m := range append(append([]*member{}, nw.members...), nw.gos...) {
		out = append(out, m.ep.Name)
	}
	return out
}

// brokerFor names the node (1-based) a broker fault aims at: "random"
// (the drawn node), "partition-leader" (of the command partition),
// "txn-coordinator" (of the role, FindCoordinator) or "controller" (the
// KRaft quorum's leader); drawn when the cluster cannot say.
func (c *campaign) brokerFor(target string, drawn int) int {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	switch target {
	case "partition-leader":
		md, err := c.adm.Metadata(ctx, c.topic)
		if err == nil {
			if t, ok := md.Topics[c.topic]; ok {
				if p, ok := t.Partitions[0]; ok && p.Leader >= 1 && p.Leader <= 3 {
					return int(p.Leader)
				}
			}
		}
	case "txn-coordinator":
		if n, err := c.coordinatorOf(ctx, c.role); err == nil {
			return n
		}
	case "controller":
		if n := c.controller(); n > 0 {
			return n
		}
	}
	return drawn
}

// coordinatorOf is the transaction coordinator's node of a transactional id.
func (c *campaign) coordinatorOf(ctx context.Context, txnID string) (int, error) {
	req := kmsg.NewPtrFindCoordinatorRequest()
	req.CoordinatorType = 1
	req.CoordinatorKeys = []string{txnID}
	req.CoordinatorKey = txnID
	resp, err := req.RequestWith(ctx, c.admin)
	if err != nil {
		return 0, err
	}
	for _, co := range resp.Coordinators {
		if co.ErrorCode == 0 && co.NodeID >= 1 && co.NodeID <= 3 {
			return int(co.NodeID), nil
		}
	}
	if resp.ErrorCode == 0 && resp.NodeID >= 1 && resp.NodeID <= 3 {
		return int(resp.NodeID), nil
	}
	return 0, errors.New("no coordinator in the answer")
}

// controller is the KRaft quorum's leader as the nodes' quorum-state files
// say (the one with the highest leader epoch), 0 if none says.
func (c *campaign) controller() int {
	best, epoch := 0, -1
	for i := 1; i <= 3; i++ {
		b, err := os.ReadFile(filepath.Join(c.opts.Dir, fmt.Sprintf("node-%d", i), "data", "__cluster_metadata-0", "quorum-state"))
		if err != nil {
			continue
		}
		var qs struct {
			LeaderID    int `json:"leaderId"`
			LeaderEpoch int `json:"leaderEpoch"`
		}
		if json.Unmarshal(b, &qs) == nil && qs.LeaderID >= 1 && qs.LeaderID <= 3 && qs.LeaderEpoch > epoch {
			best, epoch = qs.LeaderID, qs.LeaderEpoch
		}
	}
	return best
}

// baselineTxnID is a transactional.id nobody else uses whose transaction
// coordinator is the role's (the same __transaction_state partition), so
// that a fault aimed at the role's coordinator hits the baseline's too.
func (c *campaign) baselineTxnID(ctx context.Context) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	roleID := c.role // krabka.role.prefix is empty: the transactional.id is the role
	want := javaHashPartition(roleID, 3)
	id := ""
	for n := 0; n < 1000; n++ {
		cand := fmt.Sprintf("krabka-chaos-baseline-%d-%d", c.opts.Seed, n)
		if javaHashPartition(cand, 3) == want {
			id = cand
			break
		}
	}
	if id == "" {
		return "", errors.New("no baseline transactional.id maps to the role's coordinator partition")
	}
	// Check with the cluster: both ids have the same coordinator.
	var lastErr error
	for ctx.Err() == nil {
		a, err1 := c.coordinatorOf(ctx, roleID)
		b, err2 := c.coordinatorOf(ctx, id)
		if err1 == nil && err2 == nil {
			if a != b {
				return "", fmt.Errorf("the baseline's transactional.id %s has coordinator %d, the role's (%s) %d", id, b, roleID, a)
			}
			return id, nil
		}
		lastErr = errors.Join(err1, err2)
		time.Sleep(300 * time.Millisecond)
	}
	return "", fmt.Errorf("finding the transaction coordinators: %v", lastErr)
}

// javaHashPartition is Kafka's partition of a transactional id in
// __transaction_state: abs(String.hashCode) % partitions.
func javaHashPartition(s string, partitions int) int {
	var h int32
	for _, r := range s { // ASCII ids: UTF-16 units equal runes
		h = 31*h + int32(r)
	}
	if h == -2147483648 {
		return 0
	}
	if h < 0 {
		h = -h
	}
	return int(h) % partitions
}
