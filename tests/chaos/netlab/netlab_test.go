package netlab

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// The lab needs root and network namespaces, like the campaign: on a
// machine without them this test fails (it does not skip), as make chaos
// would.
func newLab(t *testing.T) *Lab {
	t.Helper()
	prefix := fmt.Sprintf("kct%d-", os.Getpid()%100000)
	l, err := New(prefix, "10.213.0", map[string]int{"a": 31, "b": 32, "c": 33})
	if err != nil {
		t.Fatalf("building the lab: %v", err)
	}
	t.Cleanup(func() {
		if err := l.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
		if left := Namespaces(prefix); len(left) != 0 {
			t.Errorf("namespaces left behind: %v", left)
		}
	})
	return l
}

// echoIn serves lines back from inside endpoint ep's namespace.
func echoIn(t *testing.T, ep *Endpoint, port int) {
	t.Helper()
	ln, err := Listen(ep.NS, "tcp", fmt.Sprintf("%s:%d", ep.Addr, port))
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
			go func() { defer c.Close(); _, _ = io.Copy(c, c) }()
		}
	}()
}

// roundTrip sends one line from ep to addr and waits up to d for it to come back.
func roundTrip(ep *Endpoint, addr string, d time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	c, err := Dial(ctx, ep.NS, "tcp", addr)
	if err != nil {
		return err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(d))
	if _, err := c.Write([]byte("ping\n")); err != nil {
		return err
	}
	buf := make([]byte, 5)
	_, err = io.ReadFull(c, buf)
	return err
}

func TestLabConnectsPartitionsAndHeals(t *testing.T) {
	l := newLab(t)
	a, b, c := l.Endpoint("a"), l.Endpoint("b"), l.Endpoint("c")
	echoIn(t, b, 7001)
	echoIn(t, c, 7001)
	bAddr, cAddr := b.Addr+":7001", c.Addr+":7001"
	if err := roundTrip(a, bAddr, 5*time.Second); err != nil {
		t.Fatalf("a to b before any fault: %v", err)
	}
	// One-way loss: a's packets to b dropped; c unaffected.
	id, err := l.Apply([]Rule{{From: "a", To: b.Addr, Loss: 1}})
	if err != nil {
		t.Fatal(err)
	}
	if n, err := l.Filters("a"); err != nil || n != 1 {
		t.Fatalf("filters on a: %d %v", n, err)
	}
	if got := udpThrough(t, a, b, 100); got != 0 {
		t.Fatalf("%d of 100 datagrams from a reached b through a drop rule", got)
	}
	if err := roundTrip(a, bAddr, time.Second); err == nil {
		t.Fatal("a reached b through a drop rule")
	} else if !errors.Is(err, os.ErrDeadlineExceeded) && !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a drop must be silent (a timeout, no refusal), got %v", err)
	}
	if err := roundTrip(a, cAddr, 5*time.Second); err != nil {
		t.Fatalf("a to c during a's cut from b: %v", err)
	}
	if err := l.Heal(id); err != nil {
		t.Fatal(err)
	}
	if n, err := l.Filters("a"); err != nil || n != 0 {
		t.Fatalf("filters on a after heal: %d %v", n, err)
	}
	if err := roundTrip(a, bAddr, 5*time.Second); err != nil {
		t.Fatalf("a to b after heal: %v", err)
	}

	// Partial loss drops some packets and lets others through: count UDP
	// datagrams from a to b with 50% loss.
	id, err = l.Apply([]Rule{{From: "a", To: b.Addr, Loss: 0.5}})
	if err != nil {
		t.Fatal(err)
	}
	got := udpThrough(t, a, b, 400)
	if err := l.Heal(id); err != nil {
		t.Fatal(err)
	}
	if got == 0 || got == 400 {
		t.Fatalf("50%% loss delivered %d of 400 datagrams", got)
	}
	if all := udpThrough(t, a, b, 100); all != 100 {
		t.Fatalf("after heal %d of 100 datagrams arrived", all)
	}
}

func udpThrough(t *testing.T, from, to *Endpoint, n int) int {
	t.Helper()
	var pc net.PacketConn
	if err := inNS(to.NS, func() error {
		var err error
		pc, err = net.ListenPacket("udp", to.Addr+":0")
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	c, err := Dial(context.Background(), from.NS, "udp", pc.LocalAddr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for i := 0; i < n; i++ {
		if _, err := c.Write([]byte("x")); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Millisecond) // no receive-buffer overflow
	}
	got := 0
	buf := make([]byte, 16)
	for {
		_ = pc.SetReadDeadline(time.Now().Add(500 * time.Millisecond))
		if _, _, err := pc.ReadFrom(buf); err != nil {
			return got
		}
		got++
	}
}

// The watchdog deletes the namespaces of a process that ended without
// Close: a child process builds a lab and is killed.
func TestWatchdogCleansUpAfterAKilledOwner(t *testing.T) {
	if os.Getenv("NETLAB_CHILD") == "1" {
		if _, err := New(os.Getenv("NETLAB_PREFIX"), "10.213.0", map[string]int{"a": 41}); err != nil {
			fmt.Println("ERR", err)
			os.Exit(1)
		}
		fmt.Println("READY")
		time.Sleep(time.Minute)
		return
	}
	prefix := fmt.Sprintf("kcw%d-", os.Getpid()%100000)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := newChild(exe, prefix)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 256)
	n, _ := out.Read(buf)
	if !strings.Contains(string(buf[:n]), "READY") {
		_ = cmd.Process.Kill()
		t.Fatalf("child: %q", buf[:n])
	}
	if got := Namespaces(prefix); len(got) != 2 {
		t.Fatalf("child's namespaces: %v", got)
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	deadline := time.Now().Add(20 * time.Second)
	for len(Namespaces(prefix)) > 0 {
		if time.Now().After(deadline) {
			Sweep(prefix)
			t.Fatalf("the watchdog left %v", Namespaces(prefix))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func newChild(exe, prefix string) *exec.Cmd {
	cmd := exec.Command(exe, "-test.run=^TestWatchdogCleansUpAfterAKilledOwner$", "-test.count=1")
	cmd.Env = append(os.Environ(), "NETLAB_CHILD=1", "NETLAB_PREFIX="+prefix)
	return cmd
}
