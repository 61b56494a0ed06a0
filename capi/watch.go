package main

/*
#include "kc_types.h"
*/
import "C"

import (
	"context"
	"errors"
	"sync"
	"unsafe"

	"github.com/krabka/krabka-coord/core"
	"github.com/krabka/krabka-coord/core/coord"
)

// Watches (krabka_watch_t): a coord.Watch plus a pump goroutine that moves
// its events into a buffer, so that the buffer's state drives an eventfd
// (readable exactly while events wait) and both krabka_watch_next and
// krabka_watch_next_async take from it.

type watchObj struct {
	w      *coord.Watch
	cancel context.CancelFunc

	mu     sync.Mutex
	buf    []coord.Event
	err    error         // why the watch ended (after the buffer is empty)
	wake   chan struct{} // closed and replaced when buf grows or the watch ends
	fd     C.int
	hasFd  bool
	closed bool
}

func watchOf(p unsafe.Pointer) (*watchObj, error) { return object[*watchObj](p, kindWatch) }

func newWatchObj(w *coord.Watch) *watchObj {
	ctx, cancel := context.WithCancel(context.Background())
	o := &watchObj{w: w, cancel: cancel, wake: make(chan struct{})}
	go o.pump(ctx)
	return o
}

func (o *watchObj) pump(ctx context.Context) {
	for {
		e, err := o.w.Next(ctx)
		if err != nil && !errors.Is(err, coord.ErrClosed) && ctx.Err() != nil {
			err = coord.WrapError(coord.ErrClosed, err, "the watch was destroyed")
		}
		o.mu.Lock()
		if err != nil {
			if o.err == nil {
				o.err = err
			}
		} else {
			o.buf = append(o.buf, e)
		}
		if (err != nil || len(o.buf) == 1) && o.hasFd && !o.closed {
			C.kc_eventfd_signal(o.fd)
		}
		close(o.wake)
		o.wake = make(chan struct{})
		o.mu.Unlock()
		if err != nil {
			return
		}
	}
}

// take returns the next event, waiting until ctx ends.
func (o *watchObj) take(ctx context.Context) (coord.Event, error) {
	for {
		o.mu.Lock()
		if len(o.buf) > 0 {
			e := o.buf[0]
			o.buf[0] = coord.Event{}
			o.buf = o.buf[1:]
			if len(o.buf) == 0 && o.err == nil && o.hasFd && !o.closed {
				C.kc_eventfd_reset(o.fd)
			}
			o.mu.Unlock()
			return e, nil
		}
		err, wake := o.err, o.wake
		o.mu.Unlock()
		if err != nil {
			return coord.Event{}, err
		}
		select {
		case <-wake:
		case <-ctx.Done():
			return coord.Event{}, coord.WrapError(coord.ErrTimeout, ctx.Err(), "no watch event within the timeout")
		}
	}
}

func (o *watchObj) eventFd() (C.int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.closed {
		return -1, invalidHandle(kindWatch, "destroyed")
	}
	if !o.hasFd {
		fd := C.kc_eventfd()
		if fd < 0 {
			return -1, &cError{C.KRABKA_ERR_INTERNAL, "krabka: eventfd failed"}
		}
		o.fd, o.hasFd = fd, true
		if len(o.buf) > 0 || o.err != nil {
			C.kc_eventfd_signal(fd)
		}
	}
	return o.fd, nil
}

func (o *watchObj) close() {
	o.w.Close()
	o.cancel()
	o.mu.Lock()
	defer o.mu.Unlock()
	o.closed = true
	if o.hasFd {
		C.kc_close(o.fd)
		o.hasFd = false
	}
}

// watchArgs checks the arguments krabka_client_watch and its async form
// share, in this order: the client, the role, the flags.
func watchArgs(client *C.krabka_client_t, r *C.kc_cchar_t, roleLen C.size_t, flags C.int) (*clientObj, core.Role, []coord.WatchOption, error) {
	c, err := clientOf(unsafe.Pointer(client))
	if err != nil {
		return nil, core.Role{}, nil, err
	}
	ro, err := role(r, roleLen)
	if err != nil {
		return nil, core.Role{}, nil, err
	}
	if flags&^C.KRABKA_WATCH_RENEWALS != 0 {
		return nil, core.Role{}, nil, invalidArg("krabka: unknown watch flags 0x%x", int(flags))
	}
	var opts []coord.WatchOption
	if flags&C.KRABKA_WATCH_RENEWALS != 0 {
		opts = append(opts, coord.WatchRenewals())
	}
	return c, ro, opts, nil
}

//export kc_go_client_watch
func kc_go_client_watch(client *C.krabka_client_t, r *C.kc_cchar_t, role_len C.size_t, flags C.int, timeout_ms C.int64_t, out **C.krabka_watch_t, errstr *C.char, errstr_size C.size_t) (rc C.krabka_err_t) {
	defer guard(&rc, errstr, errstr_size)
	c, ro, opts, err := watchArgs(client, r, role_len, flags)
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
	w, err := c.c.Watch(ctx, ro, opts...)
	if err != nil {
		return fail(err, errstr, errstr_size)
	}
	*out = (*C.krabka_watch_t)(newHandle(kindWatch, newWatchObj(w)))
	return C.KRABKA_OK
}

//export kc_go_watch_next
func kc_go_watch_next(watch *C.krabka_watch_t, timeout_ms C.int64_t, out **C.krabka_watch_event_t, errstr *C.char, errstr_size C.size_t) (rc C.krabka_err_t) {
	defer guard(&rc, errstr, errstr_size)
	if out != nil {
		*out = nil
	}
	o, err := watchOf(unsafe.Pointer(watch))
	if err != nil {
		return fail(err, errstr, errstr_size)
	}
	if out == nil {
		return fail(invalidArg("krabka: out is NULL"), errstr, errstr_size)
	}
	ctx, cancel, err := callContext(timeout_ms, 0) // default: no limit
	if err != nil {
		return fail(err, errstr, errstr_size)
	}
	defer cancel()
	e, err := o.take(ctx)
	if err != nil {
		return fail(err, errstr, errstr_size)
	}
	*out = (*C.krabka_watch_event_t)(newHandle(kindWatchEvent, &watchEventObj{e: e}))
	return C.KRABKA_OK
}

//export kc_go_watch_event_fd
func kc_go_watch_event_fd(watch *C.krabka_watch_t, fd *C.int) (rc C.krabka_err_t) {
	defer guardNoErrstr(&rc)
	o, code := objectOut[*watchObj](unsafe.Pointer(watch), kindWatch, fd)
	if code != C.KRABKA_OK {
		return code
	}
	f, err := o.eventFd()
	if err != nil {
		return err.(*cError).code
	}
	*fd = f
	return C.KRABKA_OK
}

//export kc_go_watch_next_async
func kc_go_watch_next_async(watch *C.krabka_watch_t, timeout_ms C.int64_t, queue *C.krabka_queue_t, tag C.uint64_t) (rc C.krabka_err_t) {
	defer guardNoErrstr(&rc)
	o, err := watchOf(unsafe.Pointer(watch))
	if err != nil {
		return err.(*cError).code
	}
	q, err := queueOf(unsafe.Pointer(queue))
	if err != nil {
		return err.(*cError).code
	}
	ctx, cancel, err := callContext(timeout_ms, 0)
	if err != nil {
		return err.(*cError).code
	}
	goPost(q, C.KRABKA_EVENT_WATCH, tag, cancel, func(ev *eventObj) error {
		e, err := o.take(ctx)
		if err == nil {
			ev.watchEvent = &watchEventObj{e: e}
		}
		return err
	})
	return C.KRABKA_OK
}

//export kc_go_watch_destroy
func kc_go_watch_destroy(watch *C.krabka_watch_t) (rc C.krabka_err_t) {
	defer guardNoErrstr(&rc)
	return destroy(unsafe.Pointer(watch), kindWatch, func(o any) { o.(*watchObj).close() })
}
