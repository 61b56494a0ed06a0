package coord_test

import (
	"context"
	"testing"
	"time"

	"github.com/krabka/krabka-coord/core"
	"github.com/krabka/krabka-coord/core/coord"
	"github.com/krabka/krabka-coord/core/memtransport"
)

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
	inner   coord.TxnProducer
	pending bool
}

func (p *recoveringProducer) Token() core.FencingToken { return p.inner.Token() }

func (p *recoveringProducer) Recover(ctx context.Context) (core.FencingToken, error) {
	if p.pending {
		// Nobody else minted: the coordinator grants the next epoch.
		next, err := p.t.Mint(ctx, p.id, p.timeout)
		if err != nil {
			return p.Token(), err
		}
		p.inner, p.pending = next, false
	}
	return p.Token(), nil
}

func (p *recoveringProducer) Transact(ctx context.Context, msgs []coord.Message) ([]coord.ProduceResult, error) {
	if _, err := p.Recover(ctx); err != nil {
		return nil, err
	}
	return p.inner.Transact(ctx, msgs)
}

func (p *recoveringProducer) Close() error { return p.inner.Close() }

// A resign whose producer has an own epoch recovery pending writes its
// expired lease under the token its transaction is written with (the one
// the recovery continues under), as a renewal does; found by the
// simulation (core/sim: a resign's lease carried the token before the
// recovery while its batch carried the next one).
func TestResignAfterPendingRecoveryWritesTheTransactionsToken(t *testing.T) {
	e := newEnv(t)
	cfg := e.config()
	tr := &recoveringTransport{Transport: e.cluster.Transport(cfg.Topic)}
	c, err := coord.NewClient(cfg, tr, e.clock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	l, err := c.Acquire(bg(), role, ma)
	if err != nil {
		t.Fatal(err)
	}
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
