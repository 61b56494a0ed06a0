package main

/*
#include "kc_types.h"
*/
import "C"

import (
	"fmt"
	"unsafe"

	"github.com/krabka/krabka-coord/core/coord"
)

// Watch events (krabka_watch_event_t): one coord.Event behind a handle,
// read with accessors. The event is Go memory owned by the handle; nothing
// of it is C memory, so destroying it only releases the handle.
type watchEventObj struct {
	e coord.Event
}

func watchEventOut[O any](ev *C.kc_cwatch_event_t, out *O) (*coord.Event, C.krabka_err_t) {
	w, code := objectOut[*watchEventObj](unsafe.Pointer(ev), kindWatchEvent, out)
	if code != C.KRABKA_OK {
		return nil, code
	}
	return &w.e, C.KRABKA_OK
}

func watchEventField[O any](ev *C.kc_cwatch_event_t, out *O, get func(*coord.Event) O) C.krabka_err_t {
	e, code := watchEventOut(ev, out)
	if code == C.KRABKA_OK {
		*out = get(e)
	}
	return code
}

// putNameBuf copies name and a NUL into buf (see the watch event
// accessors): *n its length (n may be NULL), BUFFER_TOO_SMALL when buf
// cannot hold it and the NUL.
func putNameBuf(name string, buf *C.char, size C.size_t, n *C.size_t) C.krabka_err_t {
	if buf == nil && size != 0 {
		return C.KRABKA_ERR_INVALID_ARG
	}
	if n != nil {
		*n = C.size_t(len(name))
	}
	if buf == nil || uint64(size) < uint64(len(name))+1 {
		return C.KRABKA_ERR_BUFFER_TOO_SMALL
	}
	putString(buf, name)
	return C.KRABKA_OK
}

// optionalName is a holder accessor: *has, and the name when has.
func optionalName(has *C.int, ok bool, name string, buf *C.char, size C.size_t, n *C.size_t) C.krabka_err_t {
	if buf == nil && size != 0 {
		return C.KRABKA_ERR_INVALID_ARG
	}
	if !ok {
		*has = 0
		if n != nil {
			*n = 0
		}
		if buf != nil && size > 0 {
			*buf = 0
		}
		return C.KRABKA_OK
	}
	*has = 1
	return putNameBuf(name, buf, size, n)
}

//export kc_go_watch_event_destroy
func kc_go_watch_event_destroy(ev *C.krabka_watch_event_t) (rc C.krabka_err_t) {
	defer guardNoErrstr(&rc)
	return destroy(unsafe.Pointer(ev), kindWatchEvent, nil)
}

//export kc_go_watch_event_kind
func kc_go_watch_event_kind(ev *C.kc_cwatch_event_t, out *C.krabka_watch_event_kind_t) (rc C.krabka_err_t) {
	defer guardNoErrstr(&rc)
	return watchEventField(ev, out, func(e *coord.Event) C.krabka_watch_event_kind_t { return C.krabka_watch_event_kind_t(e.Kind) })
}

//export kc_go_watch_event_role
func kc_go_watch_event_role(ev *C.kc_cwatch_event_t, buf *C.char, buf_size C.size_t, n *C.size_t) (rc C.krabka_err_t) {
	defer guardNoErrstr(&rc)
	w, err := object[*watchEventObj](unsafe.Pointer(ev), kindWatchEvent)
	if err != nil {
		return err.(*cError).code
	}
	return putNameBuf(w.e.Role.String(), buf, buf_size, n)
}

//export kc_go_watch_event_holder
func kc_go_watch_event_holder(ev *C.kc_cwatch_event_t, has *C.int, buf *C.char, buf_size C.size_t, n *C.size_t) (rc C.krabka_err_t) {
	defer guardNoErrstr(&rc)
	e, code := watchEventOut(ev, has)
	if code != C.KRABKA_OK {
		return code
	}
	return optionalName(has, e.HasHolder, e.Holder.String(), buf, buf_size, n)
}

//export kc_go_watch_event_token
func kc_go_watch_event_token(ev *C.kc_cwatch_event_t, out *C.krabka_token_t) (rc C.krabka_err_t) {
	defer guardNoErrstr(&rc)
	return watchEventField(ev, out, func(e *coord.Event) C.krabka_token_t { return cToken(e.Token) })
}

//export kc_go_watch_event_prev_holder
func kc_go_watch_event_prev_holder(ev *C.kc_cwatch_event_t, has *C.int, buf *C.char, buf_size C.size_t, n *C.size_t) (rc C.krabka_err_t) {
	defer guardNoErrstr(&rc)
	e, code := watchEventOut(ev, has)
	if code != C.KRABKA_OK {
		return code
	}
	return optionalName(has, e.HasPrevHolder, e.PrevHolder.String(), buf, buf_size, n)
}

//export kc_go_watch_event_prev_token
func kc_go_watch_event_prev_token(ev *C.kc_cwatch_event_t, out *C.krabka_token_t) (rc C.krabka_err_t) {
	defer guardNoErrstr(&rc)
	return watchEventField(ev, out, func(e *coord.Event) C.krabka_token_t { return cToken(e.PrevToken) })
}

//export kc_go_watch_event_lease
func kc_go_watch_event_lease(ev *C.kc_cwatch_event_t, has *C.int, out *C.krabka_lease_t) (rc C.krabka_err_t) {
	defer guardNoErrstr(&rc)
	e, code := watchEventOut(ev, has)
	if code != C.KRABKA_OK {
		return code
	}
	if out == nil {
		return C.KRABKA_ERR_INVALID_ARG
	}
	if e.Lease == nil {
		*has = 0
		return C.KRABKA_OK
	}
	*has = 1
	cLease(out, *e.Lease)
	return C.KRABKA_OK
}

//export kc_go_watch_event_roster_count
func kc_go_watch_event_roster_count(ev *C.kc_cwatch_event_t, count *C.size_t) (rc C.krabka_err_t) {
	defer guardNoErrstr(&rc)
	return watchEventField(ev, count, func(e *coord.Event) C.size_t { return C.size_t(len(e.Roster)) })
}

//export kc_go_watch_event_roster_entry
func kc_go_watch_event_roster_entry(ev *C.kc_cwatch_event_t, index C.size_t, out *C.krabka_roster_entry_t) (rc C.krabka_err_t) {
	defer guardNoErrstr(&rc)
	e, code := watchEventOut(ev, out)
	if code != C.KRABKA_OK {
		return code
	}
	if uint64(index) >= uint64(len(e.Roster)) {
		return C.KRABKA_ERR_INVALID_ARG
	}
	cRosterEntry(out, e.Roster[index])
	return C.KRABKA_OK
}

//export kc_go_watch_event_metadata
func kc_go_watch_event_metadata(ev *C.kc_cwatch_event_t, buf *C.uint8_t, buf_size C.size_t, n *C.size_t) (rc C.krabka_err_t) {
	defer guardNoErrstr(&rc)
	e, code := watchEventOut(ev, n)
	if code != C.KRABKA_OK {
		return code
	}
	return putMeta(e.Metadata, buf, buf_size, n)
}

//export kc_go_watch_event_offset
func kc_go_watch_event_offset(ev *C.kc_cwatch_event_t, out *C.int64_t) (rc C.krabka_err_t) {
	defer guardNoErrstr(&rc)
	return watchEventField(ev, out, func(e *coord.Event) C.int64_t { return C.int64_t(e.Offset) })
}

//export kc_go_watch_event_at
func kc_go_watch_event_at(ev *C.kc_cwatch_event_t, at_ms *C.int64_t) (rc C.krabka_err_t) {
	defer guardNoErrstr(&rc)
	return watchEventField(ev, at_ms, func(e *coord.Event) C.int64_t { return C.int64_t(e.At.UnixMilli()) })
}

// cRosterEntry copies one member of a roster (describe results and watch
// events share the struct).
func cRosterEntry(out *C.krabka_roster_entry_t, r coord.RosterRank) {
	out.member_len = putName(&out.member, r.Member.String())
	out.offset = C.int64_t(r.Offset)
	out.registered_at = C.int64_t(r.RegisteredAt)
	out.rank = C.int32_t(r.Rank)
}

func dropLine(n int) string {
	return fmt.Sprintf("krabka: %d log lines dropped (the consumer did not keep up)", n)
}
