// Package faultproxy is a TCP proxy for one client-to-broker link that a
// test can cut, delay and heal, without root and without touching the
// broker: the client connects to the proxy (the broker advertises the
// proxy's address on a listener of its own, see cluster.sh
// --extra-listeners), the proxy forwards to the broker.
//
//   - Cut: stop forwarding in both directions without closing anything.
//     Open connections stay established and silent (bytes already read are
//     held); new connections are accepted and left silent too. This is a
//     cable pulled out, not a refused connection: the client finds out only
//     by its own timeouts.
//   - Delay(d): every chunk is forwarded d after it was read.
//   - Down / Up: stop listening and close every connection (what a client
//     sees of a crashed broker: resets, then refused connections), and
//     listen again at the same address.
//   - Heal: forwarding resumes; what was held is delivered (like TCP
//     retransmission after a partition heals), unless either side closed
//     meanwhile.
//
// Listen accepts only loopback addresses. ListenNet takes the functions
// that listen and dial (for example inside network namespaces the caller
// made, tests/chaos/netlab) and any address they accept.
package faultproxy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"time"
)

// Proxy forwards the connections accepted at Addr to Target.
type Proxy struct {
	Addr   string // where clients connect
	Target string // the broker's listener

	mu      sync.Mutex
	ln      net.Listener
	down    bool
	cut     bool
	delay   time.Duration
	healed  chan struct{} // closed on Heal (replaced by Cut)
	conns   map[net.Conn]struct{}
	closed  bool
	wg      sync.WaitGroup
	counter Counters
	net     Net
}

// Net is how a proxy listens and dials. A nil Listen is net.Listen("tcp",
// addr); a nil Dial is a net.Dialer.
type Net struct {
	Listen func(addr string) (net.Listener, error)
	Dial   func(ctx context.Context, addr string) (net.Conn, error)
}

func (n Net) listen(addr string) (net.Listener, error) {
	if n.Listen != nil {
		return n.Listen(addr)
	}
	return net.Listen("tcp", addr)
}

func (n Net) dial(ctx context.Context, addr string) (net.Conn, error) {
	if n.Dial != nil {
		return n.Dial(ctx, addr)
	}
	var d net.Dialer
	return d.DialContext(ctx, "tcp", addr)
}

// Counters are the proxy's totals.
type Counters struct {
	Accepted int64 // connections accepted
	Bytes    int64 // bytes forwarded (both directions)
}

func loopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	ip := net.ParseIP(host)
	return host == "localhost" || (ip != nil && ip.IsLoopback())
}

// Listen starts a proxy at addr ("127.0.0.1:0" for any port) to target.
func Listen(addr, target string) (*Proxy, error) {
	if !loopback(addr) || !loopback(target) {
		return nil, fmt.Errorf("faultproxy: loopback addresses only (%s -> %s)", addr, target)
	}
	return ListenNet(addr, target, Net{})
}

// ListenNet starts a proxy at addr to target that listens and dials with n.
func ListenNet(addr, target string, n Net) (*Proxy, error) {
	ln, err := n.listen(addr)
	if err != nil {
		return nil, fmt.Errorf("faultproxy: listen %s: %w", addr, err)
	}
	h := make(chan struct{})
	close(h)
	p := &Proxy{Addr: ln.Addr().String(), Target: target, ln: ln, healed: h, conns: map[net.Conn]struct{}{}, net: n}
	p.wg.Add(1)
	go p.accept(ln)
	return p, nil
}

// Down stops listening and closes every connection, like a crashed broker:
// new connections are refused until Up.
func (p *Proxy) Down() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.down || p.closed {
		return
	}
	p.down = true
	p.ln.Close()
	for c := range p.conns {
		if tc, ok := c.(*net.TCPConn); ok {
			_ = tc.SetLinger(0) // reset, as a dead host's kernel would
		}
		c.Close()
	}
}

// Up listens again at the same address after Down.
func (p *Proxy) Up() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.down || p.closed {
		return nil
	}
	ln, err := p.net.listen(p.Addr)
	if err != nil {
		return fmt.Errorf("faultproxy: listen again on %s: %w", p.Addr, err)
	}
	p.ln, p.down = ln, false
	p.wg.Add(1)
	go p.accept(ln)
	return nil
}

func (p *Proxy) accept(ln net.Listener) {
	defer p.wg.Done()
	for {
		in, err := ln.Accept()
		if err != nil {
			return
		}
		if !p.track(in) {
			in.Close()
			return
		}
		p.mu.Lock()
		p.counter.Accepted++
		p.mu.Unlock()
		p.wg.Add(1)
		go p.serve(in)
	}
}

func (p *Proxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false
	}
	p.conns[c] = struct{}{}
	return true
}

func (p *Proxy) untrack(c net.Conn) {
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
	c.Close()
}

// gate blocks while the link is cut and returns the delay to apply, or
// false when the proxy is closed.
func (p *Proxy) gate(done <-chan struct{}) (time.Duration, bool) {
	for {
		p.mu.Lock()
		h, d, closed := p.healed, p.delay, p.closed
		p.mu.Unlock()
		if closed {
			return 0, false
		}
		select {
		case <-h:
			return d, true
		case <-done:
			return 0, false
		}
	}
}

func (p *Proxy) serve(in net.Conn) {
	defer p.wg.Done()
	defer p.untrack(in)
	done := make(chan struct{})
	defer close(done)
	// A connection that arrives during a cut is not forwarded until a heal.
	if _, ok := p.gate(done); !ok {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	out, err := p.net.dial(ctx, p.Target)
	cancel()
	if err != nil {
		return // the broker is down: the client sees the connection close
	}
	if !p.track(out) {
		out.Close()
		return
	}
	defer p.untrack(out)
	errc := make(chan error, 2)
	go func() { errc <- p.pipe(out, in, done) }()
	go func() { errc <- p.pipe(in, out, done) }()
	<-errc // either side ended: close both (deferred)
}

func (p *Proxy) pipe(dst, src net.Conn, done <-chan struct{}) error {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			d, ok := p.gate(done)
			if !ok {
				return errors.New("closed")
			}
			if d > 0 {
				select {
				case <-time.After(d):
				case <-done:
					return errors.New("closed")
				}
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return werr
			}
			p.mu.Lock()
			p.counter.Bytes += int64(n)
			p.mu.Unlock()
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
	}
}

// Cut stops forwarding without closing any connection.
func (p *Proxy) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.cut {
		p.cut = true
		p.healed = make(chan struct{})
	}
}

// Delay forwards every chunk d after it was read (0: no delay).
func (p *Proxy) Delay(d time.Duration) {
	p.mu.Lock()
	p.delay = d
	p.mu.Unlock()
}

// Heal resumes forwarding and removes any delay.
func (p *Proxy) Heal() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.delay = 0
	if p.cut {
		p.cut = false
		close(p.healed)
	}
}

// State describes the link: "ok", "cut" or "delay <d>".
func (p *Proxy) State() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case p.down:
		return "down"
	case p.cut:
		return "cut"
	case p.delay > 0:
		return "delay " + p.delay.String()
	}
	return "ok"
}

// Armed is the fault the link applies to its traffic, whether or not the
// proxy is down at the moment (State shows "down" first; a cut or a delay
// set while down applies once it is up again).
func (p *Proxy) Armed() (cut bool, delay time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cut, p.delay
}

// Counters returns the totals so far.
func (p *Proxy) Counters() Counters {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.counter
}

// Close stops listening and closes every connection.
func (p *Proxy) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	if p.cut {
		p.cut = false
		close(p.healed)
	}
	for c := range p.conns {
		c.Close()
	}
	ln, down := p.ln, p.down
	p.mu.Unlock()
	var err error
	if !down {
		err = ln.Close()
	}
	p.wg.Wait()
	return err
}

// Group is the set of proxies of one client (one per broker).
type Group []*Proxy

// Cut cuts every link of the group.
func (g Group) Cut() {
	for _, p := range g {
		p.Cut()
	}
}

// Heal heals every link of the group.
func (g Group) Heal() {
	for _, p := range g {
		p.Heal()
	}
}

// Delay delays every link of the group.
func (g Group) Delay(d time.Duration) {
	for _, p := range g {
		p.Delay(d)
	}
}

// Close closes every proxy of the group.
func (g Group) Close() {
	for _, p := range g {
		p.Close()
	}
}

// Bootstrap is the comma-separated list of the group's addresses.
func (g Group) Bootstrap() string {
	var s []string
	for _, p := range g {
		s = append(s, p.Addr)
	}
	return strings.Join(s, ",")
}
