// Command kproxy runs one fault proxy (tests/kafka/faultproxy) for the tests
// of the C, Python and Node surfaces, which cannot pass a dialer to the
// library: the broker advertises the proxy's address on an extra listener
// (cluster.sh --extra-listeners; under `make test` the tv2 cluster's
// KRABKA_BOOTSTRAP_X1, with the broker's side in KRABKA_BOOTSTRAP_X1_TARGET),
// so every connection of a client bootstrapped there goes through it.
//
//	kproxy -listen 127.0.0.1:29700 -target 127.0.0.1:29098
//
// Once listening it prints "ready ADDR" on stdout. It reads commands on
// stdin, one per line, and answers each with "ok COMMAND" (or "error
// COMMAND: WHY"):
//
//	cut          stop forwarding; connections stay open and silent (a pulled cable)
//	heal         forward again (what was held is delivered)
//	delay 300ms  forward every chunk that long after it was read (0 ends it)
//	state        answers "ok state: S", S one of ok, cut, delay 300ms, down
//	quit         close and exit
//
// It exits 0 on quit or when stdin closes (the test that started it is
// gone), 2 on bad flags or when it cannot listen.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/krabka/krabka-coord/tests/kafka/faultproxy"
)

func main() {
	listen := flag.String("listen", "", "where clients connect (a loopback host:port)")
	target := flag.String("target", "", "the broker's listener (a loopback host:port)")
	flag.Parse()
	if *listen == "" || *target == "" || flag.NArg() != 0 {
		fmt.Fprintln(os.Stderr, "usage: kproxy -listen 127.0.0.1:PORT -target 127.0.0.1:PORT")
		os.Exit(2)
	}
	p, err := faultproxy.Listen(*listen, *target)
	if err != nil {
		fmt.Fprintln(os.Stderr, "kproxy:", err)
		os.Exit(2)
	}
	defer p.Close()
	fmt.Printf("ready %s\n", p.Addr)
	serve(p, os.Stdin, os.Stdout)
}

// serve runs the commands read from in until quit or EOF.
func serve(p *faultproxy.Proxy, in io.Reader, out io.Writer) {
	sc := bufio.NewScanner(in)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		quit, err := command(p, line)
		if err != nil {
			fmt.Fprintf(out, "error %s: %v\n", line, err)
			continue
		}
		if strings.HasPrefix(line, "state") {
			fmt.Fprintf(out, "ok state: %s\n", p.State())
		} else {
			fmt.Fprintf(out, "ok %s\n", line)
		}
		if quit {
			return
		}
	}
}

// command applies one command line; quit reports "quit".
func command(p *faultproxy.Proxy, line string) (quit bool, err error) {
	f := strings.Fields(line)
	switch {
	case f[0] == "cut" && len(f) == 1:
		p.Cut()
	case f[0] == "heal" && len(f) == 1:
		p.Heal()
	case f[0] == "delay" && len(f) == 2:
		d, err := time.ParseDuration(f[1])
		if err != nil || d < 0 {
			return false, fmt.Errorf("delay needs a non-negative duration such as 300ms, not %q", f[1])
		}
		p.Delay(d)
	case f[0] == "state" && len(f) == 1:
	case f[0] == "quit" && len(f) == 1:
		return true, nil
	default:
		return false, fmt.Errorf("unknown command (cut, heal, delay D, state, quit)")
	}
	return false, nil
}
