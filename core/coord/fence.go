package coord

import (
	"context"
	"fmt"
	"unicode/utf8"

	"github.com/krabka/krabka-coord/core"
)

// FenceResult is what Client.Fence did.
type FenceResult struct {
	Role core.Role
	// Deposed is the member the lease named; OldToken the coordinator's
	// token before the fence (the deposed holder's, or a newer one a
	// challenger minted without writing its lease yet).
	Deposed  core.MemberID
	OldToken core.FencingToken
	// NewToken is the epoch the fence minted. Nobody holds it: the broker
	// refuses every write of OldToken from now on.
	NewToken core.FencingToken
	// Successor is the member named to take over (zero: the next standby
	// in the roster's order).
	Successor core.MemberID
	// LeaseWasLive: the deposed holder's lease had not yet run out.
	LeaseWasLive bool
	// Offset is where the fence's expired lease landed.
	Offset int64
}

// MaxFencedByBytes bounds Fence's by argument (the krabka.fenced-by header).
const MaxFencedByBytes = 256

// Fence deposes role's holder without its cooperation, through the broker
// (docs/PROTOCOL.md 11.4): it calls InitProducerId for the role's
// transactional.id, so the broker refuses every later write of the deposed
// holder's token, and in one transaction of the producer it just initialised
// writes an expired lease (the deposed member, the new token, granted_at =
// deadline = now; header krabka.fenced-by = by, and krabka.successor when
// successor is given) and a tombstone of the deposed member's registration.
// To every reader this looks like a resign under a newer token: the next
// standby, or the named successor, challenges at once; the deposed holder
// ends FENCED (by its view, or by the broker at its next write) and lands
// at the tail of the roster when it campaigns again.
//
// A named successor is a preference, as for Leadership.ResignTo: a member
// of another implementation (no krabka.rejoin on its registration) ignores
// krabka.successor and challenges at its own rank, so when the successor
// is one, or one ranks ahead of it, another member may take the role.
// FenceResult.Successor is who was named, not who took over; watch the
// role (Client.Watch) to learn that (krabka-coord fence does).
//
// The role must have a lease (NOT_LEADER otherwise: nothing to fence); a
// successor must be registered and not be the deposed member
// (INVALID_ARG). by is free text naming who fenced (non-empty UTF-8, at most
// MaxFencedByBytes). Blocks for one mint and one transaction.
func (c *Client) Fence(ctx context.Context, name core.Role, by string, successor *core.MemberID) (*FenceResult, error) {
	if by == "" || !utf8.ValidString(by) || len(by) > MaxFencedByBytes {
		return nil, WrapError(ErrInvalidArgument, nil, "fenced-by %q: must be non-empty UTF-8 of at most %d bytes", by, MaxFencedByBytes)
	}
	role, cctx, cancel, p, err := c.roleCall(ctx, name)
	if err != nil {
		return nil, err
	}
	defer cancel()
	st, err := c.stateOf(cctx, role, p)
	if err != nil {
		return nil, c.fail(cctx, err)
	}
	holder, ok := st.Holder()
	if !ok {
		return nil, WrapError(ErrNotLeader, nil, "role %s has no lease: nobody to fence", name)
	}
	res := &FenceResult{Role: name, Deposed: holder, LeaseWasLive: st.Lease.LiveAt(c.clock.NowMs())}
	headers := []Header{{Key: core.HeaderFencedBy, Value: []byte(by)}}
	if successor != nil {
		if *successor == holder {
			return nil, WrapError(ErrInvalidArgument, nil, "the successor %s is the member being fenced", *successor)
		}
		if _, ok := st.Registered(*successor); !ok {
			return nil, WrapError(ErrInvalidArgument, nil, "the successor %s is not registered in role %s (roster: %s)", *successor, name, rosterNames(st))
		}
		res.Successor = *successor
		headers = append(headers, Header{Key: core.HeaderSuccessor, Value: []byte(successor.String())})
	}
	if res.OldToken, err = c.t.CurrentToken(cctx, role.txnID()); err != nil {
		return nil, c.fail(cctx, err)
	}
	prod, err := c.t.Mint(cctx, role.txnID(), c.cfg.LeaseTxnTimeout())
	if err != nil {
		return nil, c.fail(cctx, err)
	}
	defer prod.Close()
	res.NewToken = prod.Token()
	now := c.clock.NowMs()
	lease := c.leaseMessage(role, p, core.EncodeLease(core.Lease{Member: holder, Token: res.NewToken, GrantedAt: now, Deadline: now}), nil)
	lease.Headers = headers
	msgs := []Message{lease}
	if _, ok := st.Registered(holder); ok {
		msgs = append(msgs, c.registrationTombstone(role, p, holder))
	}
	out, err := prod.Transact(cctx, msgs)
	if err != nil {
		return nil, c.fail(cctx, fmt.Errorf("the fence minted %s (the holder's writes are refused from now on) but writing its expired lease failed; run it again: %w", res.NewToken, err))
	}
	if len(out) > 0 {
		res.Offset = out[0].Offset
	}
	c.log().Warn("krabka: role fenced", "role", role.String(), "deposed", holder.String(), "old_token", res.OldToken.String(),
		"new_token", res.NewToken.String(), "by", by, "successor", res.Successor.String())
	return res, nil
}

func rosterNames(st core.State) string {
	s := ""
	for i, e := range st.Roster {
		if i > 0 {
			s += ", "
		}
		s += e.Member.String()
	}
	if s == "" {
		return "(empty)"
	}
	return s
}
