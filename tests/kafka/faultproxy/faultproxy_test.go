package faultproxy

import (
	"bufio"
	"context"
	"errors"
	"net"
	"os"
	"sync"
	"testing"
	"time"
)

// echo is a loopback server that echoes every line.
func echo(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				r := bufio.NewReader(c)
				for {
					l, err := r.ReadString('\n')
					if err != nil {
						return
					}
					if _, err := c.Write([]byte(l)); err != nil {
						return
					}
				}
			}()
		}
	}()
	return ln.Addr().String()
}

func roundTrip(t *testing.T, c net.Conn, r *bufio.Reader, line string) {
	t.Helper()
	if _, err := c.Write([]byte(line + "\n")); err != nil {
		t.Fatal(err)
	}
	got, err := r.ReadString('\n')
	if err != nil || got != line+"\n" {
		t.Fatalf("echo of %q: %q %v", line, got, err)
	}
}

// Forward, cut (the connection stays open and silent: a read only times
// out, it does not see EOF or a reset), heal (what was held arrives), and a
// connection opened during a cut is answered only after the heal.
func TestCutHoldsWithoutClosingAndHealDelivers(t *testing.T) {
	p, err := Listen("127.0.0.1:0", echo(t))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	c, err := net.Dial("tcp", p.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r := bufio.NewReader(c)
	roundTrip(t, c, r, "before")

	p.Cut()
	if p.State() != "cut" {
		t.Fatalf("state %q", p.State())
	}
	if _, err := c.Write([]byte("held\n")); err != nil {
		t.Fatal(err)
	}
	c2, err := net.Dial("tcp", p.Addr) // accepted, but not forwarded
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	if _, err := c2.Write([]byte("new\n")); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
	if _, err := r.ReadString('\n'); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("read during a cut: %v, want a timeout (silence, not a close)", err)
	}
	_ = c.SetReadDeadline(time.Time{})

	p.Heal()
	got, err := r.ReadString('\n')
	if err != nil || got != "held\n" {
		t.Fatalf("after heal: %q %v", got, err)
	}
	got, err = bufio.NewReader(c2).ReadString('\n')
	if err != nil || got != "new\n" {
		t.Fatalf("connection made during the cut, after heal: %q %v", got, err)
	}
	roundTrip(t, c, r, "after")
}

// A delayed link still delivers, and the delay happened: each chunk waits
// the delay before it is forwarded, in each direction, so an echo round
// trip through the proxy takes at least twice the delay. Only that lower
// bound is checked (a slow machine makes it longer, never shorter).
func TestDelayStillDelivers(t *testing.T) {
	const delay = 150 * time.Millisecond
	p, err := Listen("127.0.0.1:0", echo(t))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	p.Delay(delay)
	if p.State() != "delay "+delay.String() {
		t.Fatalf("state %q", p.State())
	}
	c, err := net.Dial("tcp", p.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r := bufio.NewReader(c)
	for _, line := range []string{"slow", "slower"} {
		start := time.Now()
		roundTrip(t, c, r, line)
		if el := time.Since(start); el < 2*delay {
			t.Fatalf("round trip of %q took %s through a link delayed by %s each way, want at least %s", line, el, delay, 2*delay)
		}
	}
	p.Heal()
	if p.State() != "ok" || p.Counters().Accepted != 1 {
		t.Fatalf("state %q counters %+v", p.State(), p.Counters())
	}
}

func TestLoopbackOnly(t *testing.T) {
	if _, err := Listen("127.0.0.1:0", "10.0.0.1:9092"); err == nil {
		t.Fatal("a non-loopback target was accepted")
	}
}

// Close ends connections that are held by a cut.
func TestCloseEndsHeldConnections(t *testing.T) {
	p, err := Listen("127.0.0.1:0", echo(t))
	if err != nil {
		t.Fatal(err)
	}
	c, err := net.Dial("tcp", p.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	p.Cut()
	p.Close()
	if _, err := bufio.NewReader(c).ReadString('\n'); err == nil {
		t.Fatal("read after Close succeeded")
	}
}

// Down refuses connections (like a dead broker) and resets open ones; Up
// serves again at the same address.
func TestDownRefusesUpServes(t *testing.T) {
	p, err := Listen("127.0.0.1:0", echo(t))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	c, err := net.Dial("tcp", p.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	roundTrip(t, c, bufio.NewReader(c), "one")
	p.Down()
	if p.State() != "down" {
		t.Fatalf("state %q", p.State())
	}
	if _, err := bufio.NewReader(c).ReadString('\n'); err == nil {
		t.Fatal("open connection survived Down")
	}
	if c2, err := net.Dial("tcp", p.Addr); err == nil {
		c2.Close()
		t.Fatal("connection accepted while down")
	}
	// A cut or delay set while down is kept (Armed), shown once up.
	p.Delay(time.Second)
	if cut, d := p.Armed(); cut || d != time.Second || p.State() != "down" {
		t.Fatalf("armed while down: cut=%v delay=%s state %q", cut, d, p.State())
	}
	p.Heal()
	if err := p.Up(); err != nil {
		t.Fatal(err)
	}
	c3, err := net.Dial("tcp", p.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c3.Close()
	roundTrip(t, c3, bufio.NewReader(c3), "two")
}

// ListenNet listens and dials with the functions it is given (the campaign
// passes ones that work inside network namespaces), also after Down/Up.
func TestListenNetUsesItsFunctions(t *testing.T) {
	target := echo(t)
	var listens, dials int
	var mu sync.Mutex
	n := Net{
		Listen: func(addr string) (net.Listener, error) {
			mu.Lock()
			listens++
			mu.Unlock()
			return net.Listen("tcp", addr)
		},
		Dial: func(ctx context.Context, addr string) (net.Conn, error) {
			mu.Lock()
			dials++
			mu.Unlock()
			if addr != "upstream.invalid:1" {
				return nil, errors.New("unexpected target " + addr)
			}
			var d net.Dialer
			return d.DialContext(ctx, "tcp", target)
		},
	}
	// The target is a name only the dial function knows: Listen would refuse it.
	p, err := ListenNet("127.0.0.1:0", "upstream.invalid:1", n)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	use := func() {
		c, err := net.Dial("tcp", p.Addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		roundTrip(t, c, bufio.NewReader(c), "via")
	}
	use()
	p.Down()
	if err := p.Up(); err != nil {
		t.Fatal(err)
	}
	use()
	mu.Lock()
	defer mu.Unlock()
	if listens != 2 || dials != 2 {
		t.Fatalf("listens %d dials %d, want 2 and 2", listens, dials)
	}
}
