package demo

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// StartLocalKafka starts a single-node Kafka named name with
// tests/kafka/cluster.sh (fetching the broker from Maven Central on first
// use) and returns its bootstrap address and a function that stops it.
// A cluster of that name that already runs is used as it is and left
// running: stop only stops what this call started. cluster.sh's watchdog
// (--owner) stops the cluster even if this process dies without calling stop.
func StartLocalKafka(ctx context.Context, repo, name string) (bootstrap string, stop func(), err error) {
	script := filepath.Join(repo, "tests", "kafka", "cluster.sh")
	status := exec.CommandContext(ctx, script, "status", "--name", name)
	if status.Run() == nil {
		out, err := exec.CommandContext(ctx, script, "bootstrap", "--name", name).Output()
		if err != nil {
			return "", nil, fmt.Errorf("cluster.sh bootstrap: %w", err)
		}
		b := strings.TrimSpace(string(out))
		fmt.Printf("krabka-demo: using the running local Kafka %q at %s (left running)\n", name, b)
		return b, func() {}, nil
	}
	fmt.Printf("krabka-demo: starting a local single-node Kafka (tests/kafka/cluster.sh start --name %s)...\n", name)
	start := time.Now()
	cmd := exec.CommandContext(ctx, script, "start", "--name", name, "--owner", strconv.Itoa(os.Getpid()))
	cmd.Stderr = os.Stderr
	// Its own process group: on cancellation the script and every helper it
	// runs (formatting, the readiness check) end together, so none is left
	// holding the cluster's lock.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM) }
	cmd.WaitDelay = 10 * time.Second
	out, err := cmd.Output()
	stop = func() {
		fmt.Printf("krabka-demo: stopping the local Kafka %q\n", name)
		c := exec.Command(script, "stop", "--name", name)
		c.Stdout, c.Stderr = os.Stderr, os.Stderr
		if err := c.Run(); err != nil {
			fmt.Fprintf(os.Stderr, "krabka-demo: cluster.sh stop: %v\n", err)
		}
	}
	if err != nil {
		stop() // a half-started node must not outlive us
		return "", nil, fmt.Errorf("cluster.sh start: %w", err)
	}
	lines := strings.Fields(strings.TrimSpace(string(out)))
	if len(lines) == 0 {
		stop()
		return "", nil, fmt.Errorf("cluster.sh start printed no bootstrap address")
	}
	bootstrap = lines[len(lines)-1]
	fmt.Printf("krabka-demo: Kafka ready at %s in %.1fs\n", bootstrap, time.Since(start).Seconds())
	return bootstrap, stop, nil
}
