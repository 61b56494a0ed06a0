// Command pipeline is an exactly-once command pipeline under the leader's
// token (docs/PIPELINES.md): an elector campaigns for the role; inside a
// term the host reads requests from a topic (read_committed, from the
// offsets committed for the role) and turns each into a command, written
// together with the offset after its request in one guarded transaction
// (Leadership.ProduceOffsets). One writer goroutine per request partition;
// their writes are committed together (group commit). After a failover the
// successor continues exactly after the last request whose command was
// committed: no request is lost and none is dispatched twice.
//
//	go run ./examples/go/pipeline -b localhost:9092 -member node-1 -requests requests -commands commands
//
// Both topics must exist. Ctrl-C resigns: the next standby takes over at
// once.
package main

import (
	"context"
	"flag"
	"log"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/krabka/krabka-coord/core"
	"github.com/krabka/krabka-coord/core/coord"
	"github.com/krabka/krabka-coord/core/kafka"
)

func main() {
	host, _ := os.Hostname()
	bootstrap := flag.String("b", "localhost:9092", "bootstrap.servers")
	role := flag.String("role", "dispatcher", "the role to campaign for")
	member := flag.String("member", host, "this member's id")
	requests := flag.String("requests", "requests", "the topic requests are read from (must exist)")
	commands := flag.String("commands", "commands", "the topic commands are written to (must exist)")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, *bootstrap, *role, *member, *requests, *commands); err != nil {
		log.Fatal(err)
	}
}

func run(ctx context.Context, bootstrap, roleName, memberName, requests, commands string) error {
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
	log.Printf("offsets of %s are committed for group %s", role, client.PipelineGroup(role))
	return elector.RunWithCallbacks(ctx, coord.Callbacks{
		OnStarted: func(term context.Context, l *coord.Leadership) {
			log.Printf("leading %s with token %s", role, l.Token())
			if err := dispatch(term, l, requests, commands); err != nil {
				log.Printf("term's pipeline stopped: %v", err)
			}
		},
		OnStopped: func(reason coord.StopReason, err error) { log.Printf("term stopped: %s (%v)", reason, err) },
	})
}

// dispatch is one term's pipeline: it returns when the term ends or a write
// fails. A failed write's outcome may be unknown (a timeout): it is never
// retried with the same records. The term gives up instead (the elector's
// next term, here or at another member, starts again from the committed
// offsets).
func dispatch(term context.Context, l *coord.Leadership, requests, commands string) error {
	ctx, cancel := context.WithCancelCause(term)
	defer cancel(nil)
	in, err := l.Consume(ctx, requests)
	if err != nil {
		return err
	}
	defer in.Close()
	log.Printf("resuming at %v", in.Position())
	work := map[int32]chan []coord.InputRecord{}
	for _, o := range in.Position() {
		ch := make(chan []coord.InputRecord, 4)
		work[o.Partition] = ch
		go func() {
			for recs := range ch {
				msgs := make([]coord.Message, len(recs))
				for i, r := range recs {
					// The command for request r: the same key, so that
					// one device's commands stay in one partition.
					msgs[i] = coord.Message{Topic: commands, Partition: -1, Key: r.Key, Value: append([]byte("do: "), r.Value...)}
				}
				last := recs[len(recs)-1]
				done := []coord.Offset{{Topic: last.Topic, Partition: last.Partition, Offset: last.Offset + 1}}
				wctx, stop := context.WithTimeout(ctx, 30*time.Second)
				_, err := l.ProduceOffsets(wctx, done, msgs...)
				stop()
				if err != nil {
					cancel(err)
					return
				}
			}
		}()
	}
	defer func() {
		for _, ch := range work {
			close(ch)
		}
	}()
	for {
		recs, err := in.Poll(ctx, 100)
		if err != nil {
			if cause := context.Cause(ctx); cause != nil && cause != context.Canceled {
				return cause
			}
			return err
		}
		byPart := map[int32][]coord.InputRecord{}
		for _, r := range recs {
			byPart[r.Partition] = append(byPart[r.Partition], r)
		}
		for p, rs := range byPart {
			select {
			case work[p] <- rs:
			case <-ctx.Done():
				return context.Cause(ctx)
			}
		}
	}
}
