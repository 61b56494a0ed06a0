package main

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/krabka/krabka-coord/core/coord"
)

// The pipeline role of the campaign (tests/chaos/pipeline.go).
//
// While it leads, the process reads the input topic from the offsets
// committed for the role (Leadership.Consume) and turns each request into
// one command on partition 0 of the command topic,
//
//	in=<partition>/<offset> <request> member=<m> token=<t> writer=<w>
//
// committed with the request's offset (Leadership.ProduceOffsets), one
// writer per input partition, one request per transaction (the writers of
// a term share transactions: group commit). A failed write's outcome may be
// unknown (a timeout): it is never retried with the same request. The
// round ends instead, and the next one (in this leadership after the
// rejoin delay, or the successor's) starts again from the committed
// offsets. Each command written is reported as
//
//	EVENT <unix_ms> <member> PIPED role=<role> in=<p>/<o> token=<t> offset=<command offset>

// pipeline runs rounds of the pipeline until the term ends.
func (h *host) pipeline(l *coord.Leadership, t *term, gate *sync.RWMutex, role, commands, input string) {
	for !t.stopped() {
		err := h.pipeRound(l, t, gate, role, commands, input)
		if t.stopped() {
			return
		}
		if err == nil && l.State() != coord.Active {
			err = l.Err()
		}
		if err != nil && (errors.Is(err, coord.ErrFenced) || errors.Is(err, coord.ErrLeaseExpired) || l.State() != coord.Active) {
			h.ended(t, role, "pipeline", err, l.Token().String())
			return
		}
		if err != nil {
			h.errorEvent("ERROR", role, "pipeline", err, "token", l.Token().String())
		}
		select {
		case <-t.stop:
		case <-time.After(h.rejoin):
		}
	}
}

// pipeRound is one round: Consume, then a poller and one writer per input
// partition until the term ends or a call fails (its error).
func (h *host) pipeRound(l *coord.Leadership, t *term, gate *sync.RWMutex, role, commands, input string) error {
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	go func() {
		select {
		case <-t.stop:
			cancel(context.Canceled)
		case <-ctx.Done():
		}
	}()
	cctx, ccancel := context.WithTimeout(ctx, 15*time.Second)
	in, err := l.Consume(cctx, input)
	ccancel()
	if err != nil {
		return err
	}
	defer in.Close()
	work := map[int32]chan coord.InputRecord{}
	var wg sync.WaitGroup
	for _, o := range in.Position() {
		ch := make(chan coord.InputRecord, 64)
		work[o.Partition] = ch
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for r := range ch {
				if err := h.pipeOne(ctx, l, gate, role, commands, w, r); err != nil {
					cancel(err)
					return
				}
			}
		}(int(o.Partition) + 1)
	}
	defer func() {
		for _, ch := range work {
			close(ch)
		}
		wg.Wait()
	}()
	for {
		pctx, pcancel := context.WithTimeout(ctx, 2*time.Second)
		recs, err := in.Poll(pctx, 100)
		pcancel()
		if ctx.Err() != nil {
			if cause := context.Cause(ctx); cause != context.Canceled {
				return cause
			}
			return nil
		}
		if errors.Is(err, coord.ErrTimeout) {
			continue
		}
		if err != nil {
			return err
		}
		for _, r := range recs {
			select {
			case work[r.Partition] <- r:
			case <-ctx.Done():
			}
		}
	}
}

// pipeOne turns request r into its command, committed with r's offset.
func (h *host) pipeOne(ctx context.Context, l *coord.Leadership, gate *sync.RWMutex, role, commands string, w int, r coord.InputRecord) error {
	gate.RLock()
	defer gate.RUnlock()
	token := l.Token().String()
	value := fmt.Sprintf("in=%d/%d %s member=%s token=%s writer=%d", r.Partition, r.Offset, r.Value, h.member, token, w)
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	done := []coord.Offset{{Topic: r.Topic, Partition: r.Partition, Offset: r.Offset + 1}}
	res, err := l.ProduceOffsets(pctx, done, coord.Message{Topic: commands, Partition: 0, Key: []byte(h.member), Value: []byte(value)})
	if err == nil && len(res) != 1 {
		err = fmt.Errorf("produce returned %d results", len(res))
	}
	if err != nil {
		return err
	}
	h.emit("PIPED", role, "in", fmt.Sprintf("%d/%d", r.Partition, r.Offset), "token", token, "offset", res[0].Offset)
	return nil
}
