package coord

import (
	"context"

	"github.com/krabka/krabka-coord/core"
)

// Test hooks of the live view (view_test.go).

// ViewWaiter returns the channel a waiter of role gets from the client's
// view of role's partition, and false when the client follows no view there.
func ViewWaiter(c *Client, role core.Role) (<-chan struct{}, bool) {
	w, err := c.wire(role)
	if err != nil {
		return nil, false
	}
	v := c.viewOf(w)
	if v == nil {
		return nil, false
	}
	_, _, ch := v.snapshot(w)
	return ch, true
}

// ViewWakes returns how many waiter channels of role the client's view of
// role's partition closed, plus how many fetch answers it called the
// role's leaderships back for, so far (-1: no view).
func ViewWakes(c *Client, role core.Role) int64 {
	w, err := c.wire(role)
	if err != nil {
		return -1
	}
	v := c.viewOf(w)
	if v == nil {
		return -1
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.wakes[w.r.String()]
}

// ViewSync brings the client's view of role's partition up to the end of
// the partition (partView.sync).
func ViewSync(ctx context.Context, c *Client, role core.Role) error {
	w, err := c.wire(role)
	if err != nil {
		return err
	}
	v := c.viewOf(w)
	if v == nil {
		return WrapError(ErrClosed, nil, "no view of %s", role)
	}
	return v.sync(ctx, w)
}

// ParkedRuns counts the acquisitions parked on the client's views
// (AcquireEach's waiting roles: no goroutine each).
func ParkedRuns(c *Client) int {
	c.mu.Lock()
	views := make([]*partView, 0, len(c.views))
	for _, v := range c.views {
		views = append(views, v)
	}
	c.mu.Unlock()
	n := 0
	for _, v := range views {
		v.mu.Lock()
		for _, runs := range v.parked {
			n += len(runs)
		}
		v.mu.Unlock()
	}
	return n
}
