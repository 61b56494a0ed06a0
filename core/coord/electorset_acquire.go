package coord

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/krabka/krabka-coord/core"
)

// RoleError is the failure of one role of a call on many roles.
type RoleError struct {
	Role core.Role
	Err  error
}

func (e RoleError) Error() string { return "role " + e.Role.String() + ": " + e.Err.Error() }

// Unwrap returns the role's error.
func (e RoleError) Unwrap() error { return e.Err }

// RolesError is the error of AcquireMany when some roles were not won: one
// RoleError per such role, in the order of the call's roles. It matches
// (errors.Is) every role's error, so ClientErrorKind gives the kind of the
// first; Failed says which roles.
type RolesError struct {
	Total int // how many roles the call had
	Roles []RoleError
}

func (e *RolesError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "krabka: %d of %d roles not acquired: ", len(e.Roles), e.Total)
	for i, re := range e.Roles {
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(re.Error())
	}
	return b.String()
}

// Unwrap returns every role's error.
func (e *RolesError) Unwrap() []error {
	out := make([]error, len(e.Roles))
	for i, re := range e.Roles {
		out[i] = re.Err
	}
	return out
}

// Failed returns the roles that were not acquired, in call order.
func (e *RolesError) Failed() []core.Role {
	out := make([]core.Role, len(e.Roles))
	for i, re := range e.Roles {
		out[i] = re.Role
	}
	return out
}

// AcquireMany takes every role of roles for member: an Acquire per role,
// all at once, each with opts. It blocks until every role was won or
// failed; ctx bounds them all (a deadline makes the roles not yet won fail
// with ErrTimeout).
//
// The input is checked before anything is sent, and a bad role fails the
// whole call with nothing acquired: ErrInvalidArgument naming the role for
// the zero role, a role given twice and a role this client already holds;
// the length error naming the role when krabka.role.prefix and the role
// together are too long; ErrInvalidArgument for a bad option or the zero
// member.
//
// The result is partial, not all or nothing: the slice has one entry per
// role, in order, the role's Leadership or nil when it was not won, and
// the error is nil when every role was won, else a *RolesError naming each
// role that failed with its error (errors.Is matches those errors). The
// leaderships won are the caller's even when the error is not nil: resign
// or close them when the call had to win all or none. No roles: an empty
// slice and nil.
func (c *Client) AcquireMany(ctx context.Context, roles []core.Role, member core.MemberID, opts ...AcquireOption) ([]*Leadership, error) {
	out := make([]*Leadership, len(roles))
	err := c.AcquireEach(ctx, roles, member, func(i int, l *Leadership, _ error) { out[i] = l }, opts...)
	if err != nil && !errors.As(err, new(*RolesError)) {
		return nil, err // the input was refused: nothing was tried
	}
	return out, err
}

// AcquireEach is AcquireMany reporting each role as it ends: each(i, l,
// err) is called once per role, with roles[i]'s Leadership or its error,
// as soon as that role was won or failed (calls are serialized, from the
// library's goroutines; each must not block for long: it holds up the
// reports of other roles, not their acquisitions). each may be nil. It
// blocks until every role ended and returns what AcquireMany does (nil, a
// *RolesError, or the input's error with each never called).
//
// A role that waits (another member's live lease) costs no goroutine: the
// acquisition is parked on its role's record and on a timer of the
// client's clock, and one goroutine steps it again when either comes
// (issue 35; Acquire and AcquireMany's results are the same). So a
// process can stand by for 10,000 roles with a handful of goroutines; at
// most maxStepping of its acquisitions step at once (acquire_run.go).
// Nor does it prepare anything per role in a transport that can warm up
// for all of them (Warmer: the Kafka transport opens its engine's
// connections and reads the broker's transaction.max.timeout.ms once; a
// role's transaction coordinator is looked up when the role is won, the
// look-ups of wins that come together batched), where Acquire prepares
// the one role it waits for (Preparer).
func (c *Client) AcquireEach(ctx context.Context, roles []core.Role, member core.MemberID, each func(i int, l *Leadership, err error), opts ...AcquireOption) error {
	if ctx == nil {
		ctx = context.Background()
	}
	if err := c.checkMany("AcquireEach", roles, &member); err != nil {
		return err
	}
	if err := CheckAcquireOptions(opts...); err != nil {
		return err
	}
	o, err := acquireOpts(opts)
	if err != nil {
		return err
	}
	if err := c.checkOpen(); err != nil {
		return err
	}
	cctx, cancel := c.callCtx(ctx)
	defer cancel()
	w, lazy := c.t.(Warmer)
	if lazy {
		w.Warm()
	}
	runs := make([]*acqRun, len(roles))
	for i, r := range roles {
		if runs[i], err = newAcqRun(c, cctx, r, member, false, o); err != nil {
			return err // checkMany checked every role already
		}
		runs[i].lazy = lazy
	}
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs = make([]error, len(roles))
	)
	for i, a := range runs {
		a.done = func(l *Leadership, err error) {
			mu.Lock()
			errs[i] = err
			if each != nil {
				each(i, l, err)
			}
			mu.Unlock()
			wg.Done()
		}
	}
	// The context ending (or Close) resumes every parked run, which then
	// ends with its error.
	stop := context.AfterFunc(cctx, func() {
		for _, a := range runs {
			a.resume()
		}
	})
	defer stop()
	wg.Add(len(runs))
	for _, a := range runs {
		c.steps.run(a)
	}
	wg.Wait()
	var failed []RoleError
	for i, err := range errs {
		if err != nil {
			failed = append(failed, RoleError{Role: roles[i], Err: err})
		}
	}
	if failed != nil {
		return &RolesError{Total: len(roles), Roles: failed}
	}
	return nil
}

// checkMany checks the roles of a call on many roles (fn names it) before
// anything is sent: each role named, fitting with the prefix, given once,
// not held by this client.
func (c *Client) checkMany(fn string, roles []core.Role, member *core.MemberID) error {
	if member != nil && member.IsZero() {
		return checkNames(core.MustRole("-"), member)
	}
	seen := make(map[wireRole]int, len(roles))
	for i, r := range roles {
		if r.IsZero() {
			return WrapError(ErrInvalidArgument, nil, "%s: roles[%d] is the zero Role; build one with NewRole", fn, i)
		}
		w, err := c.wire(r)
		if err != nil {
			return err
		}
		if j, dup := seen[w]; dup {
			return WrapError(ErrInvalidArgument, nil, "%s: role %s is given twice (roles[%d] and roles[%d])", fn, r, j, i)
		}
		seen[w] = i
		if err := c.heldElsewhere(fn, r, w); err != nil {
			return err
		}
	}
	return nil
}
