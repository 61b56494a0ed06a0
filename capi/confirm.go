package main

/*
#include "kc_types.h"
*/
import "C"

import (
	"context"
	"unsafe"

	"github.com/krabka/krabka-coord/core/coord"
)

// krabka_leadership_confirm and its async form: coord's Leadership.Confirm.

// confirmed is Confirm's answer as the header's int (an ended leadership's
// error still writes 0).
func confirmed(l *coord.Leadership, ctx context.Context, current *C.int) error {
	ok, err := l.Confirm(ctx)
	if err == nil || l.Err() != nil {
		*current = cBool(ok)
	}
	return err
}

//export kc_go_leadership_confirm
func kc_go_leadership_confirm(leadership *C.krabka_leadership_t, timeout_ms C.int64_t, current *C.int, errstr *C.char, errstr_size C.size_t) (rc C.krabka_err_t) {
	defer guard(&rc, errstr, errstr_size)
	if _, err := leadershipOf(unsafe.Pointer(leadership)); err != nil {
		return fail(err, errstr, errstr_size)
	}
	if current == nil {
		return fail(invalidArg("krabka: krabka_leadership_confirm: current is NULL"), errstr, errstr_size)
	}
	return finish(leadershipCall(leadership, timeout_ms, func(l *coord.Leadership, ctx context.Context) error {
		return confirmed(l, ctx, current)
	}), errstr, errstr_size)
}

//export kc_go_leadership_confirm_async
func kc_go_leadership_confirm_async(leadership *C.krabka_leadership_t, timeout_ms C.int64_t, queue *C.krabka_queue_t, tag C.uint64_t, errstr *C.char, errstr_size C.size_t) (rc C.krabka_err_t) {
	defer guard(&rc, errstr, errstr_size)
	l, err := leadershipOf(unsafe.Pointer(leadership))
	if err != nil {
		return fail(err, errstr, errstr_size)
	}
	return finish(leadershipAsync(l, timeout_ms, queue, C.KRABKA_EVENT_CONFIRM, tag, func(l *coord.Leadership, ctx context.Context, ev *eventObj) error {
		ok, err := l.Confirm(ctx)
		ev.confirmed = ok
		return err
	}), errstr, errstr_size)
}

//export kc_go_event_confirmed
func kc_go_event_confirmed(ev *C.kc_cevent_t, current *C.int, errstr *C.char, errstr_size C.size_t) (rc C.krabka_err_t) {
	defer guard(&rc, errstr, errstr_size)
	e, err := eventData(unsafe.Pointer(ev), current, "krabka_event_confirmed", "confirmation", C.KRABKA_EVENT_CONFIRM)
	if err != nil {
		return fail(err, errstr, errstr_size)
	}
	*current = cBool(e.confirmed)
	return C.KRABKA_OK
}
