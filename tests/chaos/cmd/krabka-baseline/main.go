// krabka-baseline is the campaign's availability baseline (make chaos,
// docs/RELIABILITY.md): a writer that needs no election. One transactional
// producer under a fixed transactional.id that nobody else uses, with the
// library's own producer settings (acks=all, linger 0, the same request
// timeout and retry backoff, EndTxn capped like core/kafka), commits one
// transaction of KRABKA_WRITERS numbered commands every
// KRABKA_DISPATCH_INTERVAL_MS and prints the demo's event lines:
//
//	krabka-baseline <bootstrap> <transactional.id> <member> <topic>
//
//	EVENT <ms> <member> STARTED lang=go pid=<pid>
//	EVENT <ms> <member> MINTED token=<id>:<epoch> at_ms=<ms>     (InitProducerId returned)
//	EVENT <ms> <member> DISPATCHED seq=<n> token=<t> partition=<p> offset=<o> writer=<w>
//	EVENT <ms> <member> ERROR op=<begin|produce|commit> code=<err> msg="..."
//
// A failed transaction is aborted; a producer that cannot abort, or that
// was fenced, is closed and a new one initialised (a new epoch), as an
// application built on the bare Kafka client would. It runs until SIGTERM.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/krabka/krabka-coord/core/kafka"
)

var member string

func emit(kind string, kv ...string) {
	var b strings.Builder
	fmt.Fprintf(&b, "EVENT %d %s %s", time.Now().UnixMilli(), member, kind)
	for i := 0; i+1 < len(kv); i += 2 {
		v := kv[i+1]
		if v == "" || strings.ContainsAny(v, " \"\\=\n\t") {
			v = strconv.Quote(v)
		}
		fmt.Fprintf(&b, " %s=%s", kv[i], v)
	}
	fmt.Println(b.String())
}

func envMs(name string, def int64) time.Duration {
	if v, err := strconv.ParseInt(strings.TrimSpace(os.Getenv(name)), 10, 64); err == nil && v > 0 {
		return time.Duration(v) * time.Millisecond
	}
	return time.Duration(def) * time.Millisecond
}

func code(err error) string {
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return ke.Message
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return "TIMEOUT"
	}
	return "ERROR"
}

func main() {
	if len(os.Args) != 5 {
		fmt.Fprintln(os.Stderr, "usage: krabka-baseline <bootstrap> <transactional.id> <member> <topic>")
		os.Exit(2)
	}
	bootstrap, txnID, topic := os.Args[1], os.Args[2], os.Args[4]
	member = os.Args[3]
	interval := envMs("KRABKA_DISPATCH_INTERVAL_MS", 100)
	rt := envMs("KRABKA_REQUEST_TIMEOUT_MS", 2500)
	txnTimeout := envMs("KRABKA_LEASE_MS", 3000)
	writers := 8
	if n, err := strconv.Atoi(strings.TrimSpace(os.Getenv("KRABKA_WRITERS"))); err == nil && n > 0 {
		writers = n
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	emit("STARTED", "lang", "go", "pid", strconv.Itoa(os.Getpid()))

	dial := rt
	if dial > 10*time.Second {
		dial = 10 * time.Second
	}
	opts := []kgo.Opt{
		kgo.SeedBrokers(strings.Split(bootstrap, ",")...),
		kgo.ClientID("krabka-baseline"),
		kgo.MaxVersions(kafka.Versions()),
		kgo.DialTimeout(dial),
		kgo.RetryTimeout(rt),
		kgo.RequestTimeoutOverhead(rt),
		kgo.MetadataMinAge(250 * time.Millisecond),
		kgo.RetryBackoffFn(func(n int) time.Duration {
			d := time.Duration(n) * 50 * time.Millisecond
			if d > 500*time.Millisecond {
				d = 500 * time.Millisecond
			}
			return d
		}),
		kgo.TransactionalID(txnID),
		kgo.TransactionTimeout(txnTimeout),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.ProducerLinger(0),
		kgo.RecordDeliveryTimeout(rt),
		kgo.ConcurrentTransactionsBackoff(500 * time.Microsecond),
	}
	var cl *kgo.Client
	token := ""
	seq := 0
	for ctx.Err() == nil {
		if cl == nil {
			var err error
			if cl, err = kgo.NewClient(opts...); err != nil {
				fmt.Fprintln(os.Stderr, "krabka-baseline:", err)
				os.Exit(2)
			}
			ictx, cancel := context.WithTimeout(ctx, rt)
			id, epoch, err := cl.ProducerID(ictx)
			cancel()
			if err != nil {
				emit("ERROR", "op", "init", "code", code(err), "msg", err.Error())
				cl.Close()
				cl = nil
				sleep(ctx, interval)
				continue
			}
			token = fmt.Sprintf("%d:%d", id, epoch)
			emit("MINTED", "token", token, "at_ms", strconv.FormatInt(time.Now().UnixMilli(), 10))
		}
		if err := cl.BeginTransaction(); err != nil {
			emit("ERROR", "op", "begin", "code", code(err), "msg", err.Error())
			cl.Close()
			cl = nil
			continue
		}
		first := seq + 1
		recs := make([]*kgo.Record, writers)
		at := time.Now().UnixMilli()
		for w := range recs {
			n := first + w
			recs[w] = &kgo.Record{Topic: topic, Partition: 0, Key: []byte(member),
				Value: []byte(fmt.Sprintf("seq=%d member=%s token=%s writer=%d try=1 at=%d", n, member, token, w+1, at))}
		}
		tctx, cancel := context.WithTimeout(ctx, rt)
		res := produceAll(tctx, cl, recs)
		var err error
		op := "produce"
		if err = res; err == nil {
			op = "commit"
			err = cl.EndTransaction(tctx, kgo.TryCommit)
		}
		cancel()
		if err != nil {
			emit("ERROR", "op", op, "code", code(err), "msg", err.Error())
			actx, cancel := context.WithTimeout(context.Background(), rt)
			aerr := cl.AbortBufferedRecords(actx)
			if aerr == nil {
				aerr = cl.EndTransaction(actx, kgo.TryAbort)
			}
			cancel()
			if aerr != nil || errors.Is(err, kerr.ProducerFenced) || errors.Is(err, kerr.InvalidProducerEpoch) {
				cl.Close()
				cl = nil
			}
			seq += writers // these numbers are given up: the next transaction takes new ones
			sleep(ctx, interval)
			continue
		}
		seq += writers
		for w, r := range recs {
			emit("DISPATCHED", "seq", strconv.Itoa(first+w), "token", token, "partition", strconv.Itoa(int(r.Partition)),
				"offset", strconv.FormatInt(r.Offset, 10), "writer", strconv.Itoa(w+1))
		}
		sleep(ctx, interval)
	}
	if cl != nil {
		cl.Close()
	}
	emit("STOPPED")
}

// produceAll produces every record of the transaction and waits for all.
func produceAll(ctx context.Context, cl *kgo.Client, recs []*kgo.Record) error {
	var wg sync.WaitGroup
	var mu sync.Mutex
	var first error
	for _, r := range recs {
		wg.Add(1)
		cl.Produce(ctx, r, func(_ *kgo.Record, err error) {
			defer wg.Done()
			if err != nil {
				mu.Lock()
				if first == nil {
					first = err
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return first
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}
