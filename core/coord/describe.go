package coord

import (
	"context"
	"sort"
	"sync"

	"github.com/krabka/krabka-coord/core"
)

// Status is the answer of Describe: what the coordinator and the log say
// about a role. It holds no epoch and joins no group.
type Status struct {
	Role      core.Role
	Partition int32
	Holder    core.MemberID // the member the last lease names
	HasHolder bool
	// Token is the coordinator's current token for the role (NoEpoch: the
	// role was never taken).
	Token core.FencingToken
	// Current: a lease exists and its token is Token. False means nobody
	// holds the role, or a challenger minted a newer epoch and has not yet
	// written its lease; either way the broker already rejects the lease
	// author's writes.
	Current bool
	Lease   *core.Lease
	// Metadata is the term's metadata (krabka.meta of the current lease
	// record; nil: none).
	Metadata []byte
	Roster   []RosterRank // in succession order
	Skipped  int          // undecodable records skipped by the fold
	// Removed counts the registrations removed by a tombstone (members that
	// resigned, were pruned by a winner or left); they are not in Roster.
	Removed int
}

// RosterRank is one registered member with its rank (docs/PROTOCOL.md 5.7).
type RosterRank struct {
	Member       core.MemberID
	Offset       int64
	RegisteredAt int64
	Rank         int
	// Metadata is the member's registration metadata (krabka.meta; nil:
	// none).
	Metadata []byte
	// Rejoins: the registration carries krabka.rejoin, as every member of
	// this implementation writes it (docs/PROTOCOL.md 11.6). Without it
	// the member is presumably of another implementation, which ignores
	// the krabka.successor header of a handoff (11.3).
	Rejoins bool
}

// Describe is the third-party check: it asks the transaction coordinator
// for the role's current token (DescribeTransactions) and, concurrently,
// folds the role's partition. When the client follows that partition (it
// acquires, holds or watches a role there) the answer comes from the live
// view, brought up to the partition's last stable offset first; otherwise
// the partition is read once. Blocks until both answered or ctx ends.
func (c *Client) Describe(ctx context.Context, name core.Role) (*Status, error) {
	role, cctx, cancel, p, err := c.roleCall(ctx, name)
	if err != nil {
		return nil, err
	}
	defer cancel()
	var (
		wg     sync.WaitGroup
		tok    core.FencingToken
		tokErr error
	)
	wg.Add(1)
	go func() {
		defer wg.Done()
		tok, tokErr = c.t.CurrentToken(cctx, role.txnID())
	}()
	st, err := c.stateOf(cctx, role, p)
	wg.Wait()
	if tokErr != nil {
		return nil, c.fail(cctx, tokErr)
	}
	if err != nil {
		return nil, c.fail(cctx, err)
	}
	return newStatus(name, p, tok, st), nil
}

// stateOf returns role's state from the live view when the client follows
// partition p (synced first), otherwise from a one-shot read.
func (c *Client) stateOf(ctx context.Context, role wireRole, p int32) (core.State, error) {
	c.mu.Lock()
	v, ok := c.views[p]
	if ok {
		v.mu.Lock()
		v.refs++
		v.mu.Unlock()
	}
	c.mu.Unlock()
	if !ok {
		return c.readState(ctx, role, p)
	}
	defer v.release()
	if err := v.sync(ctx, role); err != nil {
		return core.State{}, err
	}
	st := v.state(role)
	return st, nil
}

// newStatus builds Describe's answer from a folded state and the
// coordinator's token.
func newStatus(role core.Role, p int32, tok core.FencingToken, st core.State) *Status {
	s := &Status{Role: role, Partition: p, Token: tok, Skipped: st.Skipped, Removed: st.Removed}
	if st.Lease != nil {
		lease := *st.Lease
		s.Lease = &lease
		s.Holder, s.HasHolder = lease.Member, true
		s.Current = lease.Token == tok
		s.Metadata = st.Metadata
	}
	s.Roster = rosterRanks(st)
	return s
}

// rosterRanks returns the roster with ranks, in succession order: the
// lease's member (rank 0) first, then by offset.
func rosterRanks(st core.State) []RosterRank {
	out := make([]RosterRank, 0, len(st.Roster))
	for _, e := range st.Roster {
		r, _ := st.Rank(e.Member)
		out = append(out, RosterRank{Member: e.Member, Offset: e.Offset, RegisteredAt: e.RegisteredAt, Rank: r, Metadata: e.Metadata, Rejoins: e.Rejoins})
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Rank < out[j].Rank })
	return out
}

// Roles reads every partition of the coordination topic once and returns
// the state of every role found in it (sorted by partition, then name;
// with krabka.role.prefix, only the roles of that prefix, named without it),
// with each role's current token from the coordinator, and how many records
// were read. Blocks until done or ctx ends.
func (c *Client) Roles(ctx context.Context) (int64, []*Status, error) {
	if err := c.checkOpen(); err != nil {
		return 0, nil, err
	}
	cctx, cancel := c.callCtx(ctx)
	defer cancel()
	n, err := c.partitionCount(cctx)
	if err != nil {
		return 0, nil, c.fail(cctx, err)
	}
	var (
		read int64
		out  []*Status
	)
	for p := int32(0); p < n; p++ {
		recs, err := c.t.Read(cctx, p)
		if err != nil {
			return 0, nil, c.fail(cctx, err)
		}
		read += int64(len(recs))
		f := core.NewPartitionFolder()
		for _, r := range recs {
			f.AddRaw(r)
		}
		for _, r := range f.Roles() {
			role, ok := c.logRole(r)
			if !ok {
				continue // another environment's role (krabka.role.prefix)
			}
			tok, err := c.t.CurrentToken(cctx, role.txnID())
			if err != nil {
				return 0, nil, c.fail(cctx, err)
			}
			out = append(out, newStatus(c.user(role), p, tok, role.stateIn(f)))
		}
	}
	return read, out, nil
}
