package main

import (
	"context"
	"sync"
	"time"

	"github.com/krabka/krabka-coord/core"
	"github.com/krabka/krabka-coord/core/coord"
)

// observeRoles starts the observers of the roles: one poller per role that
// re-reads it with Describe every interval.
func observeRoles(ctx context.Context, wg *sync.WaitGroup, e *env, c *coord.Client, state *exporterState, roles []core.Role, allRoles bool, interval time.Duration) int {
	if allRoles {
		e.errorf("exporter --all-roles needs Client.Roles of core/coord, which this build does not have yet")
		return exitFailed
	}
	for _, r := range roles {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				st, err := c.Describe(ctx, r)
				switch {
				case ctx.Err() != nil:
					return
				case err != nil:
					state.fail(r.String())
					e.errorf("exporter: reading %s: %v", r, err)
				default:
					state.observe(r.String(), st.Lease, len(st.Roster), time.Now())
				}
				select {
				case <-ctx.Done():
					return
				case <-time.After(interval):
				}
			}
		}()
	}
	return exitOK
}
