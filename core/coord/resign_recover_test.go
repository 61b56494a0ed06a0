package coord_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/krabka/krabka-coord/core"
	"github.com/krabka/krabka-coord/core/coord"
	"github.com/krabka/krabka-coord/core/memtransport"
)

// holdOver acquires role for ma on a client of cfg over tr (the env's
// transport, wrapped).
func (e *env) holdOver(cfg coord.Config, tr coord.Transport) *coord.Leadership {
	e.t.Helper()
	c, err := coord.NewClient(cfg, tr, e.clock)
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { c.Close() })
	l, err := c.Acquire(bg(), role, ma)
	if err != nil {
		e.t.Fatal(err)
	}
	return l
}

// recoveringTransport hands out producers that can be left with an own
// epoch recovery pending (docs/PROTOCOL.md 10.5), as core/kafka's are after
// a failed transaction whose settlement did not complete: the next
// transaction (or Recover) re-initialises the producer under the next
// epoch of the role before it writes.
type recoveringTransport struct {
	*memtransport.Transport
	last *recoveringProducer
}

func (t *recoveringTransport) Mint(ctx context.Context, id string, timeout time.Duration) (coord.TxnProducer, error) {
	p, err := t.Transport.Mint(ctx, id, timeout)
	if err != nil {
		return nil, err
	}
	t.last = &recoveringProducer{t: t.Transport, id: id, timeout: timeout, inner: p}
	return t.last, nil
}

type recoveringProducer struct {
	t       *memtransport.Transport
	id      string
	timeout time.Duration
	pending bool // set by the test before the calls

	mu    sync.Mutex // Token is called concurrently (the view's fence check)
	inner coord.TxnProducer
}

func (p *recoveringProducer) producer() coord.TxnProducer {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.inner
}

func (p *recoveringProducer) Token() core.FencingToken { return p.producer().Token() }

func (p *recoveringProducer) Recover(ctx context.Context) (core.FencingToken, error) {
	if p.pending {
		// Nobody else minted: the coordinator grants the next epoch.
		next, err := p.t.Mint(ctx, p.id, p.timeout)
		if err != nil {
			return p.Token(), err
		}
		p.mu.Lock()
		p.inner, p.pending = next, false
		p.mu.Unlock()
	}
	return p.Token(), nil
}

func (p *recoveringProducer) Transact(ctx context.Context, msgs []coord.Message) ([]coord.ProduceResult, error) {
	if _, err := p.Recover(ctx); err != nil {
		return nil, err
	}
	return p.producer().Transact(ctx, msgs)
}

func (p *recoveringProducer) Close() error { return p.producer().Close() }

// A resign whose producer has an own epoch recovery pending writes its
// expired lease under the token its transaction is written with (the one
// the recovery continues under), as a renewal does; found by the
// simulation (core/sim: a resign's lease carried the token before the
// recovery while its batch carried the next one).
func TestResignAfterPendingRecoveryWritesTheTransactionsToken(t *testing.T) {
	e := newEnv(t)
	cfg := e.config()
	tr := &recoveringTransport{Transport: e.cluster.Transport(cfg.Topic)}
	l := e.holdOver(cfg, tr)
	minted := l.Token()
	tr.last.pending = true
	if err := l.Resign(bg()); err != nil {
		t.Fatal(err)
	}
	cur := e.cluster.Token("controller")
	if !cur.Supersedes(minted) {
		t.Fatalf("the recovery did not run: coordinator %s, minted %s", cur, minted)
	}
	p, _ := core.RolePartition(role, 16)
	st := core.FoldRaw(role, e.cluster.Records(cfg.Topic, p))
	if st.Lease == nil || st.Lease.GrantedAt != st.Lease.Deadline || st.Lease.Token != cur {
		t.Fatalf("resign wrote %+v; want an expired lease under the transaction's token %s", st.Lease, cur)
	}
}

// A guarded write made under the token an own epoch recovery then replaces
// is not written under the new token: its messages were built for the old
// one (a host puts the token in its commands; found by the fault campaign,
// seed 1010, where a retried write carrying 2:84 was appended by producer
// 2:85). The call fails with a retriable error that names both tokens, the
// leadership goes on under the new token, and a write made after the
// recovery is written.
func TestWriteBuiltForTheTokenBeforeARecoveryIsNotWritten(t *testing.T) {
	e := newEnv(t)
	cfg := e.config()
	tr := &recoveringTransport{Transport: e.cluster.Transport(cfg.Topic)}
	l := e.holdOver(cfg, tr)
	minted := l.Token()
	tr.last.pending = true
	msg := coord.Message{Topic: "commands", Partition: 0, Value: []byte("built for " + minted.String())}
	_, err := l.Produce(bg(), msg)
	if err == nil || !errors.Is(err, coord.ErrTransport) || errors.Is(err, coord.ErrFenced) {
		t.Fatalf("a write built for the token before the recovery: %v; want a retriable TRANSPORT error, not FENCED", err)
	}
	cur := l.Token()
	if !cur.Supersedes(minted) || e.cluster.Token("controller") != cur {
		t.Fatalf("after the recovery the leadership has %s (minted %s, coordinator %s)", cur, minted, e.cluster.Token("controller"))
	}
	if !strings.Contains(err.Error(), cur.String()) || !strings.Contains(err.Error(), minted.String()) {
		t.Fatalf("the error does not name both tokens: %v", err)
	}
	if recs := e.cluster.Records("commands", 0); len(recs) != 0 {
		t.Fatalf("%d records on the command topic, want none: %q", len(recs), recs[0].Value)
	}
	if err := l.Err(); err != nil {
		t.Fatalf("the leadership ended: %v", err)
	}
	res, err := l.Produce(bg(), coord.Message{Topic: "commands", Partition: 0, Value: []byte("built for " + cur.String())})
	if err != nil || len(res) != 1 || res[0].Offset != 0 {
		t.Fatalf("the write after the recovery: %+v %v", res, err)
	}
}

// endingProducer runs a hook after its transaction was written and before
// it answers, with the call's context.
type endingProducer struct {
	coord.TxnProducer
	hook func(ctx context.Context) error
}

func (p *endingProducer) Transact(ctx context.Context, msgs []coord.Message) ([]coord.ProduceResult, error) {
	res, err := p.TxnProducer.Transact(ctx, msgs)
	if err == nil && p.hook != nil {
		err = p.hook(ctx)
	}
	return res, err
}

type endingTransport struct {
	*memtransport.Transport
	last *endingProducer
}

func (t *endingTransport) Mint(ctx context.Context, id string, timeout time.Duration) (coord.TxnProducer, error) {
	p, err := t.Transport.Mint(ctx, id, timeout)
	if err != nil {
		return nil, err
	}
	t.last = &endingProducer{TxnProducer: p}
	return t.last, nil
}

// A resignation that was written is reported written when the leadership
// ends while its answer is on the way (in a planned handoff the live view
// ends it when the standby's lease arrives first): the wait for the
// broker's answer does not end with the leadership. Before, the call's
// context was cancelled with it and Resign failed (the elector reported
// the resigned term FENCED; seen in the Node and Python elector tests).
func TestResignWrittenWhileTheLeadershipEndsIsReportedWritten(t *testing.T) {
	e := newEnv(t)
	cfg := e.config()
	tr := &endingTransport{Transport: e.cluster.Transport(cfg.Topic)}
	l := e.holdOver(cfg, tr)
	cancelled := false
	tr.last.hook = func(ctx context.Context) error {
		// The leadership ends (here by Close, which ends it the way the
		// view's fence does) while this answer is on its way.
		go l.Close()
		<-l.Done()
		select {
		case <-ctx.Done():
			cancelled = true
			return ctx.Err()
		case <-time.After(time.Second):
			return nil
		}
	}
	if err := l.Resign(bg()); err != nil || cancelled {
		t.Fatalf("Resign: %v (the call's context was cancelled: %v); want nil: the resignation was written", err, cancelled)
	}
	p, _ := core.RolePartition(role, 16)
	st := core.FoldRaw(role, e.cluster.Records(cfg.Topic, p))
	if st.Lease == nil || st.Lease.GrantedAt != st.Lease.Deadline {
		t.Fatalf("the log holds %+v; want the resignation's expired lease", st.Lease)
	}
}
