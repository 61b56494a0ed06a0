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
	Roster  []RosterRank // in succession order
	Skipped int          // undecodable records skipped by the fold
}

// RosterRank is one registered member with its rank (spec 5.7).
type RosterRank struct {
	Member       core.MemberID
	Offset       int64
	RegisteredAt int64
	Rank         int
}

// Describe is the third-party check: it asks the transaction coordinator
// for the role's current token (DescribeTransactions) and folds the role's
// partition, concurrently. Blocks until both answered or ctx ends.
func (c *Client) Describe(ctx context.Context, role core.Role) (*Status, error) {
	if err := checkNames(role, nil); err != nil {
		return nil, err
	}
	name := role
	role, err := c.scoped(role)
	if err != nil {
		return nil, err
	}
	if err := c.checkOpen(); err != nil {
		return nil, err
	}
	cctx, cancel := c.callCtx(ctx)
	defer cancel()
	p, err := c.partition(cctx, role)
	if err != nil {
		return nil, c.fail(cctx, err)
	}
	var (
		wg     sync.WaitGroup
		tok    core.FencingToken
		tokErr error
	)
	wg.Add(1)
	go func() {
		defer wg.Done()
		tok, tokErr = c.t.CurrentToken(cctx, role.String()) // role is scoped
	}()
	st, err := c.readState(cctx, role, p)
	wg.Wait()
	if tokErr != nil {
		return nil, c.fail(cctx, tokErr)
	}
	if err != nil {
		return nil, c.fail(cctx, err)
	}
	s := &Status{Role: name, Partition: p, Token: tok, Skipped: st.Skipped}
	if st.Lease != nil {
		lease := *st.Lease
		s.Lease = &lease
		s.Holder, s.HasHolder = lease.Member, true
		s.Current = lease.Token == tok
	}
	for _, e := range st.Roster {
		r, _ := st.Rank(e.Member)
		s.Roster = append(s.Roster, RosterRank{Member: e.Member, Offset: e.Offset, RegisteredAt: e.RegisteredAt, Rank: r})
	}
	// Succession order: the lease's member (rank 0) first, then by offset.
	sort.SliceStable(s.Roster, func(i, j int) bool { return s.Roster[i].Rank < s.Roster[j].Rank })
	return s, nil
}
