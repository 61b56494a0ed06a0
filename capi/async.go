package main

/*
#include "kc_types.h"
*/
import "C"

import (
	"context"
	"fmt"
	"runtime/debug"
	"time"
	"unsafe"

	"github.com/krabka/krabka-coord/core/coord"
)

// The asynchronous forms (*_async). Each checks its arguments at once and
// copies what it needs (an error is returned, nothing is posted), then runs
// the same core call as its blocking form on a goroutine and posts exactly
// one event: goPost. A queue destroyed meanwhile makes post dispose of the
// event, and so of what the call won (queue.go, queue_event.go).

// goPost runs call on a library goroutine and posts its event (type typ,
// tag) to q when it returns: the error call returns, and the data call put
// into the event. cancel (not nil) ends the call's context afterwards. A
// panic in call posts KRABKA_ERR_INTERNAL (and disposes of what the event
// held) instead of crashing the host.
func goPost(q *queueObj, typ C.krabka_event_type_t, tag C.uint64_t, cancel context.CancelFunc, call func(ev *eventObj) error) {
	go func() {
		ev := &eventObj{typ: typ, tag: uint64(tag)}
		defer func() {
			if r := recover(); r != nil {
				ev.dispose()
				ev = &eventObj{typ: typ, tag: uint64(tag), err: C.KRABKA_ERR_INTERNAL,
					errstr: fmt.Sprintf("krabka: internal error (recovered panic): %v\n%s", r, debug.Stack())}
			}
			if cancel != nil {
				cancel()
			}
			post(q, ev)
		}()
		ev.fail(call(ev))
	}()
}

// asyncContext looks up the queue and maps timeout_ms (def: what
// KRABKA_TIMEOUT_DEFAULT means) for an async call.
func asyncContext(queue *C.krabka_queue_t, timeoutMs C.int64_t, def time.Duration) (*queueObj, context.Context, context.CancelFunc, error) {
	q, err := queueOf(unsafe.Pointer(queue))
	if err != nil {
		return nil, nil, nil, err
	}
	ctx, cancel, err := callContext(timeoutMs, def)
	if err != nil {
		return nil, nil, nil, err
	}
	return q, ctx, cancel, nil
}

// ---- client calls ----

//export kc_go_client_acquire_async
func kc_go_client_acquire_async(client *C.krabka_client_t, r *C.kc_cchar_t, role_len C.size_t, m *C.kc_cchar_t, member_len C.size_t, timeout_ms C.int64_t, queue *C.krabka_queue_t, tag C.uint64_t, errstr *C.char, errstr_size C.size_t) (rc C.krabka_err_t) {
	defer guard(&rc, errstr, errstr_size)
	return finish(clientAcquireAsync(client, r, role_len, m, member_len, false, nil, timeout_ms, queue, tag), errstr, errstr_size)
}

// clientAcquireAsync is krabka_client_acquire_async and
// krabka_client_acquire_opts_async (withOpts: options, else the client's
// metadata; acquire_opts.go). The options are taken as they are when the
// call is made, not when the goroutine runs.
func clientAcquireAsync(client *C.krabka_client_t, r *C.kc_cchar_t, role_len C.size_t, m *C.kc_cchar_t, member_len C.size_t, withOpts bool, options *C.kc_cacquire_options_t, timeout_ms C.int64_t, queue *C.krabka_queue_t, tag C.uint64_t) error {
	var unused *C.krabka_leadership_t
	c, ro, me, err := acquireArgs(client, r, role_len, m, member_len, &unused)
	if err != nil {
		return err
	}
	opts, err := acquireOptionsArg(c, ro, me, withOpts, options)
	if err != nil {
		return err
	}
	q, ctx, cancel, err := asyncContext(queue, timeout_ms, 0) // default: no limit
	if err != nil {
		return err
	}
	goPost(q, C.KRABKA_EVENT_ACQUIRE, tag, cancel, func(ev *eventObj) error {
		l, err := c.c.Acquire(ctx, ro, me, opts...)
		if err == nil {
			ev.leadership = newLeadershipObj(c, l)
		}
		return err
	})
	return nil
}

//export kc_go_client_try_acquire_async
func kc_go_client_try_acquire_async(client *C.krabka_client_t, r *C.kc_cchar_t, role_len C.size_t, m *C.kc_cchar_t, member_len C.size_t, timeout_ms C.int64_t, queue *C.krabka_queue_t, tag C.uint64_t, errstr *C.char, errstr_size C.size_t) (rc C.krabka_err_t) {
	defer guard(&rc, errstr, errstr_size)
	return finish(clientTryAcquireAsync(client, r, role_len, m, member_len, false, nil, timeout_ms, queue, tag), errstr, errstr_size)
}

// clientTryAcquireAsync is krabka_client_try_acquire_async and
// krabka_client_try_acquire_opts_async (as clientAcquireAsync).
func clientTryAcquireAsync(client *C.krabka_client_t, r *C.kc_cchar_t, role_len C.size_t, m *C.kc_cchar_t, member_len C.size_t, withOpts bool, options *C.kc_cacquire_options_t, timeout_ms C.int64_t, queue *C.krabka_queue_t, tag C.uint64_t) error {
	var unused *C.krabka_leadership_t
	c, ro, me, err := acquireArgs(client, r, role_len, m, member_len, &unused)
	if err != nil {
		return err
	}
	opts, err := acquireOptionsArg(c, ro, me, withOpts, options)
	if err != nil {
		return err
	}
	q, ctx, cancel, err := asyncContext(queue, timeout_ms, c.requestTimeout)
	if err != nil {
		return err
	}
	goPost(q, C.KRABKA_EVENT_TRY_ACQUIRE, tag, cancel, func(ev *eventObj) error {
		l, retryAt, err := c.c.TryAcquire(ctx, ro, me, opts...)
		switch {
		case err != nil:
		case l != nil:
			ev.leadership = newLeadershipObj(c, l)
		default:
			ev.retryAt = retryAt.UnixMilli()
		}
		return err
	})
	return nil
}

//export kc_go_client_describe_async
func kc_go_client_describe_async(client *C.krabka_client_t, r *C.kc_cchar_t, role_len C.size_t, timeout_ms C.int64_t, queue *C.krabka_queue_t, tag C.uint64_t, errstr *C.char, errstr_size C.size_t) (rc C.krabka_err_t) {
	defer guard(&rc, errstr, errstr_size)
	c, ro, err := describeArgs(client, r, role_len)
	if err != nil {
		return fail(err, errstr, errstr_size)
	}
	q, ctx, cancel, err := asyncContext(queue, timeout_ms, c.requestTimeout)
	if err != nil {
		return fail(err, errstr, errstr_size)
	}
	goPost(q, C.KRABKA_EVENT_DESCRIBE, tag, cancel, func(ev *eventObj) error {
		st, err := c.c.Describe(ctx, ro)
		if err == nil {
			ev.status = st
		}
		return err
	})
	return C.KRABKA_OK
}

//export kc_go_client_leave_async
func kc_go_client_leave_async(client *C.krabka_client_t, r *C.kc_cchar_t, role_len C.size_t, m *C.kc_cchar_t, member_len C.size_t, timeout_ms C.int64_t, queue *C.krabka_queue_t, tag C.uint64_t, errstr *C.char, errstr_size C.size_t) (rc C.krabka_err_t) {
	defer guard(&rc, errstr, errstr_size)
	var unused *C.krabka_leadership_t
	c, ro, me, err := acquireArgs(client, r, role_len, m, member_len, &unused)
	if err != nil {
		return fail(err, errstr, errstr_size)
	}
	q, ctx, cancel, err := asyncContext(queue, timeout_ms, c.requestTimeout)
	if err != nil {
		return fail(err, errstr, errstr_size)
	}
	goPost(q, C.KRABKA_EVENT_LEAVE, tag, cancel, func(*eventObj) error { return c.c.Leave(ctx, ro, me) })
	return C.KRABKA_OK
}

//export kc_go_client_watch_async
func kc_go_client_watch_async(client *C.krabka_client_t, r *C.kc_cchar_t, role_len C.size_t, flags C.int, timeout_ms C.int64_t, queue *C.krabka_queue_t, tag C.uint64_t, errstr *C.char, errstr_size C.size_t) (rc C.krabka_err_t) {
	defer guard(&rc, errstr, errstr_size)
	c, ro, opts, err := watchArgs(client, r, role_len, flags)
	if err != nil {
		return fail(err, errstr, errstr_size)
	}
	q, ctx, cancel, err := asyncContext(queue, timeout_ms, c.requestTimeout)
	if err != nil {
		return fail(err, errstr, errstr_size)
	}
	goPost(q, C.KRABKA_EVENT_WATCH_OPEN, tag, cancel, func(ev *eventObj) error {
		w, err := c.c.Watch(ctx, ro, opts...)
		if err == nil {
			ev.watch = newWatchObj(w)
		}
		return err
	})
	return C.KRABKA_OK
}

// ---- leadership calls ----

// leadershipAsync is the tail of a leadership's async form: the queue and
// the timeout (KRABKA_TIMEOUT_DEFAULT: request.timeout.ms) checked, then
// call on a goroutine.
func leadershipAsync(l *leadershipObj, timeoutMs C.int64_t, queue *C.krabka_queue_t, typ C.krabka_event_type_t, tag C.uint64_t, call func(l *coord.Leadership, ctx context.Context, ev *eventObj) error) error {
	q, ctx, cancel, err := asyncContext(queue, timeoutMs, l.requestTimeout)
	if err != nil {
		return err
	}
	goPost(q, typ, tag, cancel, func(ev *eventObj) error { return call(l.l, ctx, ev) })
	return nil
}

//export kc_go_leadership_produce_async
func kc_go_leadership_produce_async(leadership *C.krabka_leadership_t, messages *C.kc_cmessage_t, count C.size_t, timeout_ms C.int64_t, queue *C.krabka_queue_t, tag C.uint64_t, errstr *C.char, errstr_size C.size_t) (rc C.krabka_err_t) {
	defer guard(&rc, errstr, errstr_size)
	l, err := leadershipOf(unsafe.Pointer(leadership))
	if err != nil {
		return fail(err, errstr, errstr_size)
	}
	msgs, err := goMessages(messages, count)
	if err != nil {
		return fail(err, errstr, errstr_size)
	}
	if err := coord.CheckMessages(msgs); err != nil {
		return fail(err, errstr, errstr_size)
	}
	return finish(leadershipAsync(l, timeout_ms, queue, C.KRABKA_EVENT_PRODUCE, tag, func(l *coord.Leadership, ctx context.Context, ev *eventObj) error {
		res, err := l.Produce(ctx, msgs...)
		if err == nil {
			ev.results = res
		}
		return err
	}), errstr, errstr_size)
}

//export kc_go_leadership_renew_async
func kc_go_leadership_renew_async(leadership *C.krabka_leadership_t, timeout_ms C.int64_t, queue *C.krabka_queue_t, tag C.uint64_t, errstr *C.char, errstr_size C.size_t) (rc C.krabka_err_t) {
	defer guard(&rc, errstr, errstr_size)
	l, err := leadershipOf(unsafe.Pointer(leadership))
	if err != nil {
		return fail(err, errstr, errstr_size)
	}
	return finish(leadershipAsync(l, timeout_ms, queue, C.KRABKA_EVENT_RENEW, tag, func(l *coord.Leadership, ctx context.Context, _ *eventObj) error {
		return l.Renew(ctx)
	}), errstr, errstr_size)
}

//export kc_go_leadership_set_metadata_async
func kc_go_leadership_set_metadata_async(leadership *C.krabka_leadership_t, data *C.kc_cuint8_t, n C.size_t, timeout_ms C.int64_t, queue *C.krabka_queue_t, tag C.uint64_t, errstr *C.char, errstr_size C.size_t) (rc C.krabka_err_t) {
	defer guard(&rc, errstr, errstr_size)
	l, err := leadershipOf(unsafe.Pointer(leadership))
	if err != nil {
		return fail(err, errstr, errstr_size)
	}
	b, err := optBytes(data, n, "data")
	if err != nil {
		return fail(err, errstr, errstr_size)
	}
	// The size limit is core's (the same check as SetMetadata's), here at
	// once rather than in the event.
	if err := coord.CheckAcquireOptions(coord.WithMetadata(b)); err != nil {
		return fail(err, errstr, errstr_size)
	}
	return finish(leadershipAsync(l, timeout_ms, queue, C.KRABKA_EVENT_SET_METADATA, tag, func(l *coord.Leadership, ctx context.Context, _ *eventObj) error {
		return l.SetMetadata(ctx, b)
	}), errstr, errstr_size)
}

//export kc_go_leadership_resign_async
func kc_go_leadership_resign_async(leadership *C.krabka_leadership_t, s *C.kc_cchar_t, successor_len C.size_t, timeout_ms C.int64_t, queue *C.krabka_queue_t, tag C.uint64_t, errstr *C.char, errstr_size C.size_t) (rc C.krabka_err_t) {
	defer guard(&rc, errstr, errstr_size)
	l, err := leadershipOf(unsafe.Pointer(leadership))
	if err != nil {
		return fail(err, errstr, errstr_size)
	}
	resign := (*coord.Leadership).Resign
	if s != nil || successor_len != 0 {
		if s == nil {
			return fail(invalidArg("krabka: successor is NULL with length %d (NULL with 0: a plain resign)", uint64(successor_len)), errstr, errstr_size)
		}
		succ, err := member(s, successor_len)
		if err != nil {
			return fail(err, errstr, errstr_size)
		}
		resign = func(l *coord.Leadership, ctx context.Context) error { return l.ResignTo(ctx, succ) }
	}
	return finish(leadershipAsync(l, timeout_ms, queue, C.KRABKA_EVENT_RESIGN, tag, func(l *coord.Leadership, ctx context.Context, _ *eventObj) error {
		return resign(l, ctx)
	}), errstr, errstr_size)
}

//export kc_go_leadership_ended_async
func kc_go_leadership_ended_async(leadership *C.krabka_leadership_t, queue *C.krabka_queue_t, tag C.uint64_t) (rc C.krabka_err_t) {
	defer guardNoErrstr(&rc)
	l, err := leadershipOf(unsafe.Pointer(leadership))
	if err != nil {
		return err.(*cError).code
	}
	q, err := queueOf(unsafe.Pointer(queue))
	if err != nil {
		return err.(*cError).code
	}
	goPost(q, C.KRABKA_EVENT_ENDED, tag, nil, func(ev *eventObj) error {
		<-l.l.Done()
		st, code, text := endOf(l.l)
		ev.state = st
		if code != C.KRABKA_OK {
			return &cError{code, text}
		}
		return nil
	})
	return C.KRABKA_OK
}
