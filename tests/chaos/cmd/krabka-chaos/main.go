// krabka-chaos runs the randomized fault campaign (make chaos); see
// tests/chaos and docs/RELIABILITY.md. It needs root: the brokers and the
// links run in network namespaces it makes (and removes). Exit status 0 only if the checker
// found no violation and the run saw its minimums of acknowledged commands,
// takeovers and faults (tests/chaos/minimums.go); 1 otherwise, with one
// sentence per missed minimum; 2 when the campaign could not run.
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

	"github.com/krabka/krabka-coord/tests/chaos"
)

func main() {
	var o chaos.Options
	var seed int64
	flag.Int64Var(&seed, "seed", 0, "the schedule's seed (0: from the clock; always printed)")
	flag.DurationVar(&o.Duration, "duration", 10*time.Minute, "how long faults are injected")
	flag.StringVar(&o.Lib, "lib", "build/libkrabka_coord.so", "the shared library")
	flag.StringVar(&o.CHost, "c-host", "build/examples/device_host", "the C device host")
	flag.StringVar(&o.LogDir, "logs", "", "logs folder (default build/chaos/<seed>)")
	flag.IntVar(&o.PortBase, "port-base", 0, "the brokers' base port inside their namespaces (default 24500+$KRABKA_KAFKA_PORT_OFFSET); the members' proxies listen on 127.0.0.1 at +100..+133, the broker-to-broker proxies at +200..+333 on the brokers' own loopbacks; the namespaces are named kc<port-base>-*")
	flag.IntVar(&o.PortBase, "port", 0, "the same as -port-base")
	flag.IntVar(&o.TxnVersion, "txn-version", 0, "transaction.version of the cluster, 1 or 2 (default: from the seed, odd seeds 1, even seeds 2)")
	flag.IntVar(&o.Writers, "writers", 8, "concurrent writers per leadership (and commands per baseline transaction)")
	flag.StringVar(&o.Subnet, "subnet", "10.213.0", "the lab's /24, its first three octets (give two campaigns on one machine different ones)")
	flag.BoolVar(&o.NoPipeline, "no-pipeline", false, "leave out the pipeline role (the exactly-once figures)")
	flag.Int64Var(&o.RequestMs, "request-ms", 100, "the pipeline's request writer's interval in milliseconds")
	flag.BoolVar(&o.NoGroup, "no-group", false, "leave out the group mode (a role group of Go member processes, checked per shard, with moves and convergence)")
	flag.IntVar(&o.GroupShards, "group-shards", 16, "the group mode's shards (one partition of its command topic each)")
	flag.IntVar(&o.GroupMembers, "group-members", 3, "the group mode's member processes")
	flag.IntVar(&o.GroupMaxMoves, "group-max-moves", 4, "the group mode's bound on moves in flight (coord.WithMaxMoves)")
	flag.Int64Var(&o.GroupPaceMs, "group-pace-ms", 1000, "a group member's pause between two commands of one shard, in milliseconds")
	flag.Int64Var(&o.GroupLeaseMs, "group-lease-ms", 10000, "the group members' lease in milliseconds (renewal every third; a pause of a group member lasts this and 1-4 s more)")
	flag.BoolVar(&o.Keep, "keep", false, "leave the cluster running")
	flag.BoolVar(&o.Verbose, "verbose", false, "print every command and renewal")
	flag.Parse()
	o.Seed = uint64(seed)
	repo, err := os.Getwd()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	o.Repo = repo
	for _, p := range []*string{&o.Lib, &o.CHost} {
		if !filepath.IsAbs(*p) {
			*p = filepath.Join(repo, *p)
		}
		if _, err := os.Stat(*p); err != nil {
			fmt.Fprintf(os.Stderr, "krabka-chaos: %v (run make lib examples node-deps first, or make chaos)\n", err)
			os.Exit(2)
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	rep, err := chaos.Run(ctx, o)
	if err != nil {
		fmt.Fprintf(os.Stderr, "krabka-chaos: the campaign could not run: %v\n", err)
		os.Exit(2)
	}
	if !rep.OK() {
		for _, s := range rep.Shortfalls {
			fmt.Fprintf(os.Stderr, "krabka-chaos: %s\n", s)
		}
		fmt.Fprintf(os.Stderr, "krabka-chaos: FAILED, seed %d (replay: %s): %d violation(s), %d minimum(s) missed\n",
			rep.Seed, rep.Replay, len(rep.Violations), len(rep.Shortfalls))
		os.Exit(1)
	}
}
