// Command krabka-demo runs the three-language failover demo (make demo).
//
//	go run ./demo/cmd/krabka-demo [-bootstrap host:port] [-verbose]
//
// Without -bootstrap (or KRABKA_BOOTSTRAP) it starts a local single-node
// Kafka with tests/kafka/cluster.sh and stops it again on every exit path
// (a watchdog stops it even if this process is killed). It then runs the C
// device host, the Python host and the Node host as three members of one
// role, crashes the leader (SIGKILL), freezes the next one past its lease
// (SIGSTOP, then SIGCONT), prints the timeline and checks the command log.
// Exit status: 0 when the check passed, 1 when it failed or the scenario
// could not be carried out, 2 on bad usage.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/krabka/krabka-coord/demo"
)

func main() {
	repo, _ := os.Getwd()
	bootstrap := flag.String("bootstrap", os.Getenv("KRABKA_BOOTSTRAP"), "Kafka bootstrap servers (default $KRABKA_BOOTSTRAP; empty: start a local single-node Kafka)")
	flag.StringVar(&repo, "repo", repo, "repository root")
	lib := flag.String("lib", "", "libkrabka_coord.so (default <repo>/build/libkrabka_coord.so)")
	cHost := flag.String("c-host", "", "the C device host binary (default <repo>/build/examples/device_host)")
	verbose := flag.Bool("verbose", false, "print every command and renewal")
	recover := flag.Bool("recover", true, "restart the crashed host at the end (it must not take the role back)")
	leadFor := flag.Duration("lead-for", 3*time.Second, "how long each leader dispatches before the next fault")
	limit := flag.Duration("timeout", 170*time.Second, "bound on the whole run")
	flag.Parse()
	if flag.NArg() > 0 {
		flag.Usage()
		os.Exit(2)
	}
	repo, _ = filepath.Abs(repo)
	if *lib == "" {
		*lib = filepath.Join(repo, "build", "libkrabka_coord.so")
	}
	if *cHost == "" {
		*cHost = filepath.Join(repo, "build", "examples", "device_host")
	}
	for _, f := range []string{*lib, *cHost} {
		if _, err := os.Stat(f); err != nil {
			fmt.Fprintf(os.Stderr, "krabka-demo: %v (build it first: make lib examples)\n", err)
			os.Exit(2)
		}
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, *limit)
	defer cancel()

	os.Exit(run(ctx, repo, *bootstrap, *lib, *cHost, *verbose, *recover, *leadFor))
}

func run(ctx context.Context, repo, bootstrap, lib, cHost string, verbose, recover bool, leadFor time.Duration) int {
	if bootstrap == "" {
		b, stopKafka, err := demo.StartLocalKafka(ctx, repo, "demo")
		if err != nil {
			fmt.Fprintln(os.Stderr, "krabka-demo:", err)
			return 1
		}
		defer stopKafka()
		bootstrap = b
	} else {
		fmt.Printf("krabka-demo: using the cluster at %s\n", bootstrap)
	}
	hosts := demo.DefaultHosts(repo, lib, cHost)
	rep, err := demo.Run(ctx, demo.Options{
		Bootstrap: bootstrap,
		Hosts:     hosts,
		Dir:       repo,
		LogDir:    filepath.Join(repo, "build", "demo"),
		LeadFor:   leadFor,
		Recover:   recover,
		Zombie:    true,
		Verbose:   verbose,
		Out:       os.Stdout,
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "krabka-demo:", err)
		return 1
	}
	if !rep.OK() {
		fmt.Println("krabka-demo: FAILED")
		return 1
	}
	fmt.Println("krabka-demo: PASSED")
	return 0
}
