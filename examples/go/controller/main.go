// Command controller is a Go host of one election (docs/ELECTOR.md): an
// elector campaigns for the role, and only inside a term does the host
// dispatch commands, each one a guarded write under the term's token. A
// deposed term's writes are refused by the broker; its context ends before
// the lease deadline when renewals keep failing. GET /healthz answers 503
// while the held lease is at risk.
//
//	go run ./examples/go/controller -b localhost:9092 -member node-1 -topic commands
//
// The command topic must exist. Ctrl-C resigns: the next standby takes over
// at once.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/krabka/krabka-coord/core"
	"github.com/krabka/krabka-coord/core/coord"
	"github.com/krabka/krabka-coord/core/coord/healthz"
	"github.com/krabka/krabka-coord/core/kafka"
)

func main() {
	host, _ := os.Hostname()
	bootstrap := flag.String("b", "localhost:9092", "bootstrap.servers")
	role := flag.String("role", "controller", "the role to campaign for")
	member := flag.String("member", host, "this member's id")
	topic := flag.String("topic", "commands", "where commands are dispatched (must exist)")
	listen := flag.String("health", "127.0.0.1:8081", "address of the /healthz endpoint")
	flag.Parse()
	if err := run(*bootstrap, *role, *member, *topic, *listen); err != nil {
		log.Fatal(err)
	}
}

func run(bootstrap, roleName, memberName, topic, listen string) error {
	role, err := core.NewRole(roleName)
	if err != nil {
		return err
	}
	member, err := core.NewMemberID(memberName)
	if err != nil {
		return err
	}
	cfg := coord.DefaultConfig()
	if err := cfg.Set("bootstrap.servers", bootstrap); err != nil {
		return err
	}
	client, err := kafka.NewClient(cfg)
	if err != nil {
		return err
	}
	defer client.Close()
	elector, err := coord.NewElector(client, role, member)
	if err != nil {
		return err
	}
	http.Handle("/healthz", healthz.Handler(elector))
	go func() { log.Println(http.ListenAndServe(listen, nil)) }()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return elector.RunWithCallbacks(ctx, controller{topic: topic, member: memberName, every: time.Second}.callbacks())
}

// controller is the host's logic: while a term lasts it dispatches one
// command per tick, each a guarded write under the term's token
// (controller_test.go tests it on the in-process cluster).
type controller struct {
	topic, member string
	every         time.Duration // the pace of commands
}

func (c controller) callbacks() coord.Callbacks {
	return coord.Callbacks{
		// The term's work: runs until the term context ends.
		OnStarted: func(term context.Context, l *coord.Leadership) {
			log.Printf("leading %s with token %s", l.Role(), l.Token())
			tick := time.NewTicker(c.every)
			defer tick.Stop()
			for n := 1; ; n++ {
				select {
				case <-term.Done():
					return
				case <-tick.C:
				}
				cmd := coord.Message{Topic: c.topic, Partition: -1, Key: []byte(c.member), Value: []byte(fmt.Sprintf("command %d", n))}
				if _, err := l.Produce(term, cmd); err != nil {
					log.Printf("command %d not dispatched: %v", n, err) // FENCED ends the term too
				}
			}
		},
		OnStopped:   func(reason coord.StopReason, err error) { log.Printf("term stopped: %s (%v)", reason, err) },
		OnNewLeader: func(holder core.MemberID, tok core.FencingToken) { log.Printf("leader: %s, token %s", holder, tok) },
		OnAtRisk:    func(deadline time.Time) { log.Printf("lease at risk: deadline in %v", time.Until(deadline)) },
	}
}
