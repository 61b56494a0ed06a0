// Package netlab builds the network of the fault campaign (make chaos):
// one Linux network namespace per broker, per member link and for the
// campaign's own admin client, each with one veth port on a bridge that
// lives in a namespace of its own. Every address is inside these
// namespaces (10.213.0.0/24 by default); nothing is configured in the
// namespace the campaign runs in.
//
// Faults are egress filters on a namespace's port (tc, clsact): a u32 match
// on the destination address, or a classic-BPF program that draws a random
// number for partial loss, both redirecting what they match to a device
// that is down, which drops it silently (the kernel has neither netem nor
// the gact drop action here; a dropped packet is what a pulled cable does:
// no reset, no error, the sender finds out by its own timeouts). A
// partition is such filters on both sides, one-way loss on one side only.
//
// A Lab is torn down by Close; a watchdog process started with it deletes
// every namespace once the campaign's process is gone, whatever way it
// ended (a panic in a goroutine, SIGKILL).
package netlab

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Port is the name of every endpoint namespace's port on the bridge.
const Port = "eth0"

// dropDev is the device, left down, that filters redirect dropped packets to.
const dropDev = "kcdrop"

// EphemeralPorts is the local port range of outgoing connections in every
// endpoint namespace: listen below it.
const EphemeralPorts = "50000 60999"

// Endpoint is one namespace on the bridge.
type Endpoint struct {
	Name string // short name, for example "b1"
	NS   string // the namespace's name: the lab's prefix and Name
	Addr string // its address on the bridge, for example 10.213.0.11
}

// Lab is the campaign's network.
type Lab struct {
	Prefix string // namespace names start with it
	Subnet string // the first three octets, for example "10.213.0"

	mu        sync.Mutex
	eps       map[string]*Endpoint
	order     []string
	sw        string // the bridge's namespace
	watchdog  *os.Process
	nextPref  int
	faults    map[int][]filterRef // fault id -> filters to delete
	closed    bool
	cmdRunner func(args ...string) error
}

type filterRef struct {
	ns   string
	pref int
}

// ErrUnavailable wraps every failure to build the lab (no root, no netns).
var ErrUnavailable = errors.New("network namespaces unavailable")

// New builds the bridge namespace and one endpoint per entry of names
// (name -> last octet), after removing what a previous run with the same
// prefix left behind. A failure removes what was made and returns an error
// wrapping ErrUnavailable with the command that failed.
func New(prefix, subnet string, names map[string]int) (*Lab, error) {
	l := &Lab{Prefix: prefix, Subnet: subnet, eps: map[string]*Endpoint{}, sw: prefix + "sw", faults: map[int][]filterRef{}, nextPref: 10}
	l.cmdRunner = runIP
	Sweep(prefix)
	keys := make([]string, 0, len(names))
	for k := range names {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	fail := func(err error) (*Lab, error) {
		l.Close()
		return nil, fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	if err := l.ip("netns", "add", l.sw); err != nil {
		return fail(err)
	}
	l.order = append(l.order, l.sw)
	if err := l.startWatchdog(); err != nil {
		return fail(err)
	}
	steps := [][]string{
		{"-n", l.sw, "link", "add", "br0", "type", "bridge"},
		{"-n", l.sw, "link", "set", "br0", "up"},
		{"-n", l.sw, "link", "set", "lo", "up"},
	}
	for _, s := range steps {
		if err := l.ip(s...); err != nil {
			return fail(err)
		}
	}
	for _, k := range keys {
		ep := &Endpoint{Name: k, NS: prefix + k, Addr: fmt.Sprintf("%s.%d", subnet, names[k])}
		if err := l.ip("netns", "add", ep.NS); err != nil {
			return fail(err)
		}
		l.order = append(l.order, ep.NS)
		l.eps[k] = ep
		steps := [][]string{
			{"link", "add", Port, "netns", ep.NS, "type", "veth", "peer", "name", "v-" + k, "netns", l.sw},
			{"-n", l.sw, "link", "set", "v-" + k, "master", "br0"},
			{"-n", l.sw, "link", "set", "v-" + k, "up"},
			{"-n", ep.NS, "addr", "add", ep.Addr + "/24", "dev", Port},
			{"-n", ep.NS, "link", "set", Port, "up"},
			{"-n", ep.NS, "link", "set", "lo", "up"},
			{"-n", ep.NS, "link", "add", dropDev, "type", "ifb"},
		}
		for _, s := range steps {
			if err := l.ip(s...); err != nil {
				return fail(err)
			}
		}
		if err := l.tc(ep.NS, "qdisc", "add", "dev", Port, "clsact"); err != nil {
			return fail(err)
		}
		// Outgoing connections take local ports from EphemeralPorts only,
		// so a listener closed for a while (a proxy of a broker that is
		// down) finds its port free again.
		if err := l.cmdRunner("ip", "netns", "exec", ep.NS, "sh", "-c", "echo "+EphemeralPorts+" > /proc/sys/net/ipv4/ip_local_port_range"); err != nil {
			return fail(err)
		}
	}
	return l, nil
}

func runIP(args ...string) error {
	out, err := exec.Command(args[0], args[1:]...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

func (l *Lab) ip(args ...string) error { return l.cmdRunner(append([]string{"ip"}, args...)...) }

func (l *Lab) tc(ns string, args ...string) error {
	return l.cmdRunner(append([]string{"ip", "netns", "exec", ns, "tc"}, args...)...)
}

// Sweep deletes every namespace whose name starts with prefix (what a run
// that could not clean up left behind).
func Sweep(prefix string) {
	ents, err := os.ReadDir("/run/netns")
	if err != nil {
		return
	}
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), prefix) {
			_ = runIP("ip", "netns", "del", e.Name())
		}
	}
}

// Namespaces lists the names of the namespaces that start with prefix.
func Namespaces(prefix string) []string {
	ents, err := os.ReadDir("/run/netns")
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), prefix) {
			out = append(out, e.Name())
		}
	}
	return out
}

// startWatchdog starts a process in its own session that deletes the
// lab's namespaces once this process is gone.
func (l *Lab) startWatchdog() error {
	script := `owner=$1; prefix=$2
while kill -0 "$owner" 2>/dev/null; do sleep 1; done
for f in /run/netns/"$prefix"*; do [ -e "$f" ] && ip netns del "$(basename "$f")"; done
exit 0`
	cmd := exec.Command("bash", "-c", script, "netlab-watchdog", strconv.Itoa(os.Getpid()), l.Prefix)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting the namespace watchdog: %w", err)
	}
	l.watchdog = cmd.Process
	go func() { _, _ = cmd.Process.Wait() }()
	return nil
}

// Close deletes every namespace of the lab (processes still inside keep
// theirs until they exit) and stops the watchdog.
func (l *Lab) Close() error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil
	}
	l.closed = true
	order := append([]string(nil), l.order...)
	wd := l.watchdog
	l.mu.Unlock()
	var errs []error
	for i := len(order) - 1; i >= 0; i-- {
		if err := runIP("ip", "netns", "del", order[i]); err != nil {
			errs = append(errs, err)
		}
	}
	if wd != nil {
		_ = wd.Kill()
	}
	return errors.Join(errs...)
}

// Endpoint returns the endpoint of that short name (nil if none).
func (l *Lab) Endpoint(name string) *Endpoint {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.eps[name]
}

// inNS runs f on an OS thread that joined the namespace ns; sockets made
// there belong to ns for good. The thread goes back to its own namespace
// before it is unlocked, so no other goroutine ever runs in ns. It is not
// discarded: a thread that exits takes with it the children it forked
// that asked for a parent-death signal (Pdeathsig is per thread, and Go
// forks from whichever thread the goroutine runs on).
func inNS(ns string, f func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		orig, err := unix.Open("/proc/thread-self/ns/net", unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("this thread's netns: %w", err)
			return
		}
		defer unix.Close(orig)
		fd, err := unix.Open("/run/netns/"+ns, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("netns %s: %w", ns, err)
			return
		}
		err = unix.Setns(fd, unix.CLONE_NEWNET)
		unix.Close(fd)
		if err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("setns %s: %w", ns, err)
			return
		}
		ferr := f()
		if unix.Setns(orig, unix.CLONE_NEWNET) == nil {
			runtime.UnlockOSThread()
		} // else: the thread stays locked and is discarded when this goroutine ends
		errc <- ferr
	}()
	return <-errc
}

// Dial connects to addr from inside the namespace ns.
func Dial(ctx context.Context, ns, network, addr string) (net.Conn, error) {
	var c net.Conn
	err := inNS(ns, func() error {
		var d net.Dialer
		var err error
		c, err = d.DialContext(ctx, network, addr)
		return err
	})
	return c, err
}

// Listen listens at addr inside the namespace ns.
func Listen(ns, network, addr string) (net.Listener, error) {
	var ln net.Listener
	err := inNS(ns, func() error {
		var err error
		ln, err = net.Listen(network, addr)
		return err
	})
	return ln, err
}

// Dialer returns a dial function for endpoint ep (franz-go's kgo.Dialer
// shape), with a 5 s bound when ctx has none.
func (ep *Endpoint) Dialer() func(ctx context.Context, network, host string) (net.Conn, error) {
	return func(ctx context.Context, network, host string) (net.Conn, error) {
		if _, ok := ctx.Deadline(); !ok {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, 5*time.Second)
			defer cancel()
		}
		return Dial(ctx, ep.NS, network, host)
	}
}

// Rule is one egress filter: packets from endpoint From to the address To
// are dropped with probability Loss (1: all of them).
type Rule struct {
	From string  // endpoint short name
	To   string  // destination address
	Loss float64 // 0 < Loss <= 1
}

// Apply installs rules as one fault and returns its id for Heal. On a
// failure it removes what it installed and returns the error.
func (l *Lab) Apply(rules []Rule) (int, error) {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return 0, errors.New("netlab: closed")
	}
	id := l.nextPref
	l.nextPref += 2
	l.mu.Unlock()
	var refs []filterRef
	var err error
	for _, r := range rules {
		ep := l.Endpoint(r.From)
		if ep == nil {
			err = fmt.Errorf("netlab: no endpoint %q", r.From)
			break
		}
		ip := net.ParseIP(r.To).To4()
		if ip == nil {
			err = fmt.Errorf("netlab: not an IPv4 address: %q", r.To)
			break
		}
		var args []string
		pref := id
		if r.Loss >= 1 {
			args = []string{"filter", "add", "dev", Port, "egress", "pref", strconv.Itoa(pref), "protocol", "ip",
				"u32", "match", "ip", "dst", r.To + "/32"}
		} else {
			pref = id + 1
			args = []string{"filter", "add", "dev", Port, "egress", "pref", strconv.Itoa(pref), "protocol", "all",
				"bpf", "bytecode", lossProgram(ip, r.Loss)}
		}
		args = append(args, "action", "mirred", "egress", "redirect", "dev", dropDev)
		if err = l.tc(ep.NS, args...); err != nil {
			break
		}
		refs = append(refs, filterRef{ep.NS, pref})
	}
	l.mu.Lock()
	l.faults[id] = refs
	l.mu.Unlock()
	if err != nil {
		l.Heal(id)
		return 0, err
	}
	return id, nil
}

// lossProgram is a classic BPF program (tc's bytecode syntax) that matches
// IPv4 packets to dst with probability loss: load the destination address
// (offset 30: behind the 14-byte Ethernet header), compare, draw the
// kernel's random number (SKF_AD_RANDOM) and compare it with the threshold.
func lossProgram(dst net.IP, loss float64) string {
	th := uint64(loss * float64(1<<32))
	if th > 0xffffffff {
		th = 0xffffffff
	}
	d := uint32(dst[0])<<24 | uint32(dst[1])<<16 | uint32(dst[2])<<8 | uint32(dst[3])
	const skfRandom = 0xfffff000 + 56
	ins := []string{
		"32 0 0 30",                         // ld [30]
		fmt.Sprintf("21 0 3 %d", d),         // jeq #dst, next, else no match
		fmt.Sprintf("32 0 0 %d", skfRandom), // ld rand
		fmt.Sprintf("37 1 0 %d", th),        // jgt #th: no match
		"6 0 0 4294967295",                  // ret -1: match
		"6 0 0 0",                           // ret 0: no match
	}
	return strconv.Itoa(len(ins)) + "," + strings.Join(ins, ",")
}

// Heal removes the filters of fault id.
func (l *Lab) Heal(id int) error {
	l.mu.Lock()
	refs := l.faults[id]
	delete(l.faults, id)
	l.mu.Unlock()
	seen := map[filterRef]bool{}
	var errs []error
	for _, r := range refs {
		if seen[r] {
			continue
		}
		seen[r] = true
		if err := l.tc(r.ns, "filter", "del", "dev", Port, "egress", "pref", strconv.Itoa(r.pref)); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// HealAll removes every fault's filters.
func (l *Lab) HealAll() error {
	l.mu.Lock()
	var ids []int
	for id := range l.faults {
		ids = append(ids, id)
	}
	l.mu.Unlock()
	var errs []error
	for _, id := range ids {
		errs = append(errs, l.Heal(id))
	}
	return errors.Join(errs...)
}

// Filters returns the number of egress filters installed on endpoint
// name's port (what tc shows), for tests and for checking that a fault
// took effect.
func (l *Lab) Filters(name string) (int, error) {
	ep := l.Endpoint(name)
	if ep == nil {
		return 0, fmt.Errorf("netlab: no endpoint %q", name)
	}
	out, err := exec.Command("ip", "netns", "exec", ep.NS, "tc", "filter", "show", "dev", Port, "egress").CombinedOutput()
	if err != nil {
		return 0, fmt.Errorf("tc filter show: %v: %s", err, out)
	}
	n := 0
	for _, line := range strings.Split(string(out), "\n") {
		if strings.Contains(line, "action order 1: mirred") {
			n++
		}
	}
	return n, nil
}
