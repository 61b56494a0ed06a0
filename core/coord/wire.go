package coord

import (
	"context"
	"fmt"
	"strings"

	"github.com/krabka/krabka-coord/core"
)

// wireRole is a role as it is used on the wire: krabka.role.prefix followed
// by the caller's role name. It is the only form that builds record keys,
// the partition hash and the transactional.id (docs/PROTOCOL.md section 9,
// decision of 2026-12-01), so environments with different prefixes never
// share a roster or a lease. Only Client.wire (from a caller's role) and
// Client.logRole (from a role read off the log) make one: a function that
// addresses the log cannot be handed a caller's role by mistake, which is
// how Leave and Watch once ignored the prefix (issue 26).
// TestOnlyWireBuildsKeys keeps the rest of the package from going around it.
type wireRole struct{ r core.Role }

// wire turns a caller's role into its wire role (an empty prefix changes
// nothing). A prefixed role longer than core.MaxNameBytes is an error
// naming both parts.
func (c *Client) wire(role core.Role) (wireRole, error) {
	if c.cfg.RolePrefix == "" {
		return wireRole{role}, nil
	}
	r, err := core.NewRole(c.cfg.RolePrefix + role.String())
	if err != nil {
		return wireRole{}, core.NewError(core.PartRole, core.CatRoleTooLong, "role",
			fmt.Sprintf("krabka.role.prefix %q + role %q is %d bytes, at most %d allowed", c.cfg.RolePrefix, role.String(), len(c.cfg.RolePrefix)+len(role.String()), core.MaxNameBytes))
	}
	return wireRole{r}, nil
}

// logRole takes a role name read off the coordination topic as the wire
// role it is; ok is false when it does not carry this client's prefix (it
// belongs to another environment).
func (c *Client) logRole(r core.Role) (w wireRole, ok bool) {
	return wireRole{r}, strings.HasPrefix(r.String(), c.cfg.RolePrefix)
}

// roleCall is the head of a call on one role: the name checked, its wire
// role, the client open, the call's context (cancel it when done; on an
// error it is already cancelled) and the role's partition.
func (c *Client) roleCall(ctx context.Context, name core.Role) (wireRole, context.Context, context.CancelFunc, int32, error) {
	if err := checkNames(name, nil); err != nil {
		return wireRole{}, nil, nil, 0, err
	}
	role, err := c.wire(name)
	if err != nil {
		return wireRole{}, nil, nil, 0, err
	}
	if err := c.checkOpen(); err != nil {
		return wireRole{}, nil, nil, 0, err
	}
	cctx, cancel := c.callCtx(ctx)
	p, err := c.partition(cctx, role)
	if err != nil {
		err = c.fail(cctx, err)
		cancel()
		return wireRole{}, nil, nil, 0, err
	}
	return role, cctx, cancel, p, nil
}

// user is the inverse of wire: the role name the caller used.
func (c *Client) user(w wireRole) core.Role {
	if c.cfg.RolePrefix == "" {
		return w.r
	}
	if r, err := core.NewRole(strings.TrimPrefix(w.r.String(), c.cfg.RolePrefix)); err == nil {
		return r
	}
	return w.r
}

// String is the wire name (logs, error texts).
func (w wireRole) String() string { return w.r.String() }

// txnID is the transactional.id that stands for the role.
func (w wireRole) txnID() string { return w.r.String() }

// partitionOf is the role's partition of a topic of n partitions.
func (w wireRole) partitionOf(n int32) (int32, error) { return core.RolePartition(w.r, n) }

// leaseKey and registrationKey are the encoded record keys of the role.
func (w wireRole) leaseKey() []byte { return core.EncodeKey(core.LeaseKey(w.r)) }

func (w wireRole) registrationKey(m core.MemberID) []byte {
	return core.EncodeKey(core.RegistrationKey(w.r, m))
}

// stateIn is the role's state in a partition folder; fold folds records of
// the role's partition.
func (w wireRole) stateIn(f *core.PartitionFolder) core.State { return f.State(w.r) }

func (w wireRole) fold(recs []core.RawRecord) core.State { return core.FoldRaw(w.r, recs) }
