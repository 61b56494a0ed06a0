package main

import (
	"bufio"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/krabka/krabka-coord/tests/kafka/faultproxy"
)

// An echo server behind the proxy; the commands read from a pipe change
// what a client of the proxy sees, and each is answered.
func TestCommands(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { io.Copy(c, c); c.Close() }()
		}
	}()
	p, err := faultproxy.Listen("127.0.0.1:0", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()

	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan struct{})
	go func() { serve(p, inR, outW); outW.Close(); close(done) }()
	answers := bufio.NewScanner(outR)
	say := func(cmd, want string) {
		t.Helper()
		if _, err := io.WriteString(inW, cmd+"\n"); err != nil {
			t.Fatal(err)
		}
		if !answers.Scan() || answers.Text() != want {
			t.Fatalf("%q: answered %q, want %q", cmd, answers.Text(), want)
		}
	}

	c, err := net.Dial("tcp", p.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	echo := func() (string, error) {
		c.SetDeadline(time.Now().Add(700 * time.Millisecond))
		if _, err := c.Write([]byte("x")); err != nil {
			return "", err
		}
		b := make([]byte, 1)
		_, err := io.ReadFull(c, b)
		return string(b), err
	}
	if got, err := echo(); err != nil || got != "x" {
		t.Fatalf("forwarding: %q %v", got, err)
	}
	say("state", "ok state: ok")
	say("cut", "ok cut")
	say("state", "ok state: cut")
	if _, err := echo(); err == nil {
		t.Fatal("a cut link forwarded the byte")
	}
	say("heal", "ok heal")
	// the byte held during the cut arrives first, then this one
	c.SetDeadline(time.Now().Add(5 * time.Second))
	b := make([]byte, 1)
	if _, err := io.ReadFull(c, b); err != nil || b[0] != 'x' {
		t.Fatalf("after heal: %q %v", b, err)
	}
	say("delay 20ms", "ok delay 20ms")
	say("state", "ok state: delay 20ms")
	say("delay soon", `error delay soon: delay needs a non-negative duration such as 300ms, not "soon"`)
	say("jump", "error jump: unknown command (cut, heal, delay D, state, quit)")
	say("quit", "ok quit")
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("serve did not return after quit")
	}
	if !strings.HasPrefix(p.State(), "delay") {
		t.Fatalf("state after quit: %s", p.State())
	}
}
