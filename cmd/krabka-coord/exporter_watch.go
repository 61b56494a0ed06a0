package main

import (
	"context"
	"sync"
	"time"

	"github.com/krabka/krabka-coord/core"
	"github.com/krabka/krabka-coord/core/coord"
)

// observeRoles follows each role with Client.Watch (renewals included, so
// the lease deadline stays fresh). With allRoles it also lists the roles of
// the coordination topic every interval (Client.Roles) and follows new ones.
// A watch that fails is counted and started again after interval.
func observeRoles(ctx context.Context, wg *sync.WaitGroup, e *env, c *coord.Client, state *exporterState, roles []core.Role, allRoles bool, interval time.Duration) int {
	var mu sync.Mutex
	watched := map[core.Role]bool{}
	follow := func(r core.Role) {
		mu.Lock()
		defer mu.Unlock()
		if watched[r] {
			return
		}
		watched[r] = true
		wg.Add(1)
		go func() {
			defer wg.Done()
			watchRole(ctx, e, c, state, r, interval)
		}()
	}
	for _, r := range roles {
		follow(r)
	}
	if !allRoles {
		return exitOK
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			_, sts, err := c.Roles(ctx)
			if ctx.Err() != nil {
				return
			}
			if err != nil {
				e.errorf("exporter: listing roles: %v", err)
			}
			for _, s := range sts {
				follow(s.Role)
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(interval):
			}
		}
	}()
	return exitOK
}

func watchRole(ctx context.Context, e *env, c *coord.Client, state *exporterState, r core.Role, interval time.Duration) {
	for ctx.Err() == nil {
		w, err := c.Watch(ctx, r, coord.WatchRenewals())
		if err == nil {
			for {
				ev, nerr := w.Next(ctx)
				if nerr != nil {
					err = nerr
					break
				}
				state.observe(r.String(), ev.Lease, len(ev.Roster), ev.At)
			}
			w.Close()
		}
		if ctx.Err() != nil {
			return
		}
		state.fail(r.String())
		e.errorf("exporter: watching %s: %v (again in %s)", r, err, interval)
		select {
		case <-ctx.Done():
			return
		case <-time.After(interval):
		}
	}
}
