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
// committed with the offset after the request (Leadership.ProduceOffsets),
// one writer per input partition. A writer takes the requests of its
// partition that are waiting, maxPipeBatch at most, and writes their
// commands and the offset after the last one in one call (the writers of a
// term share transactions: group commit). A failed write's outcome may be
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
				batch := []coord.InputRecord{r}
			more:
				for len(batch) < maxPipeBatch {
					select {
					case x, ok := <-ch:
						if !ok {
							break more
						}
						batch = append(batch, x)
					default:
						break more
					}
				}
				if err := h.pipeBatch(ctx, l, gate, role, commands, w, batch); err != nil {
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

// maxPipeBatch is the most requests one call of a writer carries.
const maxPipeBatch = 50

// pipeBatch turns the requests of batch (one partition's, in offset order)
// into their commands, committed with the offset after the last one.
func (h *host) pipeBatch(ctx context.Context, l *coord.Leadership, gate *sync.RWMutex, role, commands string, w int, batch []coord.InputRecord) error {
	gate.RLock()
	defer gate.RUnlock()
	token := l.Token().String()
	msgs := make([]coord.Message, len(batch))
	for i, r := range batch {
		value := fmt.Sprintf("in=%d/%d %s member=%s token=%s writer=%d", r.Partition, r.Offset, r.Value, h.member, token, w)
		msgs[i] = coord.Message{Topic: commands, Partition: 0, Key: []byte(h.member), Value: []byte(value)}
	}
	last := batch[len(batch)-1]
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	done := []coord.Offset{{Topic: last.Topic, Partition: last.Partition, Offset: last.Offset + 1}}
	res, err := l.ProduceOffsets(pctx, done, msgs...)
	if err == nil && len(res) != len(batch) {
		err = fmt.Errorf("produce returned %d results for %d commands", len(res), len(batch))
	}
	if err != nil {
		return err
	}
	for i, r := range batch {
		h.emit("PIPED", role, "in", fmt.Sprintf("%d/%d", r.Partition, r.Offset), "token", token, "offset", res[i].Offset)
	}
	return nil
}
