package main

/*
#include "kc_types.h"
*/
import "C"

import (
	"context"
	"math"
	"sync"
	"time"
	"unsafe"

	"github.com/krabka/krabka-coord/core"
	"github.com/krabka/krabka-coord/core/coord"
	"github.com/krabka/krabka-coord/core/kafka"
)

// clientObj is the object behind a krabka_client_t.
type clientObj struct {
	c *coord.Client
	// requestTimeout is what KRABKA_TIMEOUT_DEFAULT means for renew,
	// produce, resign and describe (request.timeout.ms).
	requestTimeout time.Duration
	// stopLog ends the delivery of log lines to the host's callback (nil
	// without a callback).
	stopLog func()

	metaMu sync.Mutex
	meta   map[[2]string][]coord.AcquireOption // krabka_client_set_metadata, by role and member

	// The group log (krabka_group_join, group.go): made on the first join
	// from the client's configuration, closed with the client.
	cfg     coord.Config
	glogMu  sync.Mutex
	glog    *coord.GroupLog
	closing bool
}

// groupLog is the client's group log (kafka.NewGroupLog of its
// configuration), made once; CLOSED once the client is being destroyed.
func (c *clientObj) groupLog() (coord.GroupLog, error) {
	c.glogMu.Lock()
	defer c.glogMu.Unlock()
	if c.closing {
		return coord.GroupLog{}, coord.WrapError(coord.ErrClosed, nil, "krabka: the client is closed")
	}
	if c.glog == nil {
		l, err := kafka.NewGroupLog(c.cfg)
		if err != nil {
			return coord.GroupLog{}, err
		}
		c.glog = &l
	}
	return *c.glog, nil
}

// acquireOptions are the options of an acquire of role by member
// (krabka_client_set_metadata).
func (c *clientObj) acquireOptions(role core.Role, member core.MemberID) []coord.AcquireOption {
	c.metaMu.Lock()
	defer c.metaMu.Unlock()
	return c.meta[[2]string{role.String(), member.String()}]
}

func clientOf(p unsafe.Pointer) (*clientObj, error) { return object[*clientObj](p, kindClient) }

// maxTimeoutMs is the largest timeout_ms a time.Duration holds; longer ones
// saturate to no limit.
const maxTimeoutMs = int64(math.MaxInt64 / int64(time.Millisecond))

// callContext maps timeout_ms onto a context: > 0 bounds the call (beyond
// maxTimeoutMs: no limit), 0 (KRABKA_TIMEOUT_DEFAULT) means def (0: no
// limit), < 0 is INVALID_ARG.
func callContext(timeoutMs C.int64_t, def time.Duration) (context.Context, context.CancelFunc, error) {
	switch {
	case timeoutMs < 0:
		return nil, nil, invalidArg("krabka: timeout_ms %d is negative", int64(timeoutMs))
	case timeoutMs > 0 && int64(timeoutMs) <= maxTimeoutMs:
		ctx, cancel := context.WithTimeout(context.Background(), time.Duration(int64(timeoutMs))*time.Millisecond)
		return ctx, cancel, nil
	case timeoutMs > 0:
		// Beyond what a time.Duration holds (about 292 years): no limit,
		// never an overflow into a deadline in the past.
	case def > 0:
		ctx, cancel := context.WithTimeout(context.Background(), def)
		return ctx, cancel, nil
	}
	ctx, cancel := context.WithCancel(context.Background())
	return ctx, cancel, nil
}

//export kc_go_client_new
func kc_go_client_new(conf *C.kc_cconf_t, out **C.krabka_client_t, errstr *C.char, errstr_size C.size_t) (rc C.krabka_err_t) {
	defer guard(&rc, errstr, errstr_size)
	c, err := confOf(unsafe.Pointer(conf))
	if err != nil {
		return fail(err, errstr, errstr_size)
	}
	if out == nil {
		return fail(invalidArg("krabka: out is NULL"), errstr, errstr_size)
	}
	c.mu.Lock()
	cfg := c.cfg // a copy: the caller keeps and destroys conf
	logs := c.log
	c.mu.Unlock()
	if err := cfg.Validate(); err != nil {
		return fail(err, errstr, errstr_size)
	}
	var stopLog func()
	cfg.Logger, stopLog = logs.logger()
	cl, err := kafka.NewClient(cfg)
	if err != nil {
		if stopLog != nil {
			stopLog()
		}
		return fail(err, errstr, errstr_size)
	}
	*out = (*C.krabka_client_t)(newHandle(kindClient, &clientObj{c: cl, requestTimeout: cfg.RequestTimeout, stopLog: stopLog, cfg: cfg}))
	return C.KRABKA_OK
}

//export kc_go_client_destroy
func kc_go_client_destroy(client *C.krabka_client_t) (rc C.krabka_err_t) {
	defer guardNoErrstr(&rc)
	return destroy(unsafe.Pointer(client), kindClient, func(o any) {
		c := o.(*clientObj)
		c.glogMu.Lock()
		c.closing = true
		glog := c.glog
		c.glogMu.Unlock()
		c.c.Close() // ends the client's groups too
		if glog != nil {
			_ = glog.Transport.Close()
		}
		if c.stopLog != nil {
			c.stopLog()
		}
	})
}

func newLeadershipObj(c *clientObj, l *coord.Leadership) *leadershipObj {
	return &leadershipObj{l: l, requestTimeout: c.requestTimeout}
}

func newLeadershipHandle(c *clientObj, l *coord.Leadership) *C.krabka_leadership_t {
	return (*C.krabka_leadership_t)(newHandle(kindLeadership, newLeadershipObj(c, l)))
}

// describeArgs checks the arguments describe and its async form share:
// the client, then the role.
func describeArgs(client *C.krabka_client_t, r *C.kc_cchar_t, roleLen C.size_t) (*clientObj, core.Role, error) {
	c, err := clientOf(unsafe.Pointer(client))
	if err != nil {
		return nil, core.Role{}, err
	}
	ro, err := role(r, roleLen)
	if err != nil {
		return nil, core.Role{}, err
	}
	return c, ro, nil
}

// acquireArgs checks the arguments acquire and try_acquire share, in this
// order: the client, the role, the member, out.
func acquireArgs(client *C.krabka_client_t, r *C.kc_cchar_t, roleLen C.size_t, m *C.kc_cchar_t, memberLen C.size_t, out **C.krabka_leadership_t) (c *clientObj, ro core.Role, me core.MemberID, err error) {
	if c, err = clientOf(unsafe.Pointer(client)); err != nil {
		return
	}
	if ro, err = role(r, roleLen); err != nil {
		return
	}
	if me, err = member(m, memberLen); err != nil {
		return
	}
	if out == nil {
		err = invalidArg("krabka: out is NULL")
	}
	return
}

//export kc_go_client_acquire
func kc_go_client_acquire(client *C.krabka_client_t, r *C.kc_cchar_t, role_len C.size_t, m *C.kc_cchar_t, member_len C.size_t, timeout_ms C.int64_t, out **C.krabka_leadership_t, errstr *C.char, errstr_size C.size_t) (rc C.krabka_err_t) {
	defer guard(&rc, errstr, errstr_size)
	return finish(clientAcquire(client, r, role_len, m, member_len, false, nil, timeout_ms, out), errstr, errstr_size)
}

// clientAcquire is krabka_client_acquire and krabka_client_acquire_opts
// (withOpts: options, else the client's metadata; acquire_opts.go).
func clientAcquire(client *C.krabka_client_t, r *C.kc_cchar_t, role_len C.size_t, m *C.kc_cchar_t, member_len C.size_t, withOpts bool, options *C.kc_cacquire_options_t, timeout_ms C.int64_t, out **C.krabka_leadership_t) error {
	c, ro, me, err := acquireArgs(client, r, role_len, m, member_len, out)
	if err != nil {
		return err
	}
	opts, err := acquireOptionsArg(c, ro, me, withOpts, options)
	if err != nil {
		return err
	}
	ctx, cancel, err := callContext(timeout_ms, 0) // default: no limit
	if err != nil {
		return err
	}
	defer cancel()
	l, err := c.c.Acquire(ctx, ro, me, opts...)
	if err != nil {
		return err
	}
	*out = newLeadershipHandle(c, l)
	return nil
}

//export kc_go_client_try_acquire
func kc_go_client_try_acquire(client *C.krabka_client_t, r *C.kc_cchar_t, role_len C.size_t, m *C.kc_cchar_t, member_len C.size_t, timeout_ms C.int64_t, out **C.krabka_leadership_t, retry_at_ms *C.int64_t, errstr *C.char, errstr_size C.size_t) (rc C.krabka_err_t) {
	defer guard(&rc, errstr, errstr_size)
	return finish(clientTryAcquire(client, r, role_len, m, member_len, false, nil, timeout_ms, out, retry_at_ms), errstr, errstr_size)
}

// clientTryAcquire is krabka_client_try_acquire and
// krabka_client_try_acquire_opts (as clientAcquire).
func clientTryAcquire(client *C.krabka_client_t, r *C.kc_cchar_t, role_len C.size_t, m *C.kc_cchar_t, member_len C.size_t, withOpts bool, options *C.kc_cacquire_options_t, timeout_ms C.int64_t, out **C.krabka_leadership_t, retry_at_ms *C.int64_t) error {
	c, ro, me, err := acquireArgs(client, r, role_len, m, member_len, out)
	if err != nil {
		return err
	}
	opts, err := acquireOptionsArg(c, ro, me, withOpts, options)
	if err != nil {
		return err
	}
	ctx, cancel, err := callContext(timeout_ms, c.requestTimeout)
	if err != nil {
		return err
	}
	defer cancel()
	l, retryAt, err := c.c.TryAcquire(ctx, ro, me, opts...)
	if err != nil {
		return err
	}
	if l == nil {
		*out = nil
		if retry_at_ms != nil {
			*retry_at_ms = C.int64_t(retryAt.UnixMilli())
		}
		return nil
	}
	*out = newLeadershipHandle(c, l)
	return nil
}

//export kc_go_client_leave
func kc_go_client_leave(client *C.krabka_client_t, r *C.kc_cchar_t, role_len C.size_t, m *C.kc_cchar_t, member_len C.size_t, timeout_ms C.int64_t, errstr *C.char, errstr_size C.size_t) (rc C.krabka_err_t) {
	defer guard(&rc, errstr, errstr_size)
	var out *C.krabka_leadership_t
	c, ro, me, err := acquireArgs(client, r, role_len, m, member_len, &out)
	if err != nil {
		return fail(err, errstr, errstr_size)
	}
	ctx, cancel, err := callContext(timeout_ms, c.requestTimeout)
	if err != nil {
		return fail(err, errstr, errstr_size)
	}
	defer cancel()
	if err := c.c.Leave(ctx, ro, me); err != nil {
		return fail(err, errstr, errstr_size)
	}
	return C.KRABKA_OK
}

//export kc_go_client_describe
func kc_go_client_describe(client *C.krabka_client_t, r *C.kc_cchar_t, role_len C.size_t, timeout_ms C.int64_t, out **C.krabka_status_t, errstr *C.char, errstr_size C.size_t) (rc C.krabka_err_t) {
	defer guard(&rc, errstr, errstr_size)
	c, ro, err := describeArgs(client, r, role_len)
	if err != nil {
		return fail(err, errstr, errstr_size)
	}
	if out == nil {
		return fail(invalidArg("krabka: out is NULL"), errstr, errstr_size)
	}
	ctx, cancel, err := callContext(timeout_ms, c.requestTimeout)
	if err != nil {
		return fail(err, errstr, errstr_size)
	}
	defer cancel()
	st, err := c.c.Describe(ctx, ro)
	if err != nil {
		return fail(err, errstr, errstr_size)
	}
	*out = (*C.krabka_status_t)(newHandle(kindStatus, st))
	return C.KRABKA_OK
}
