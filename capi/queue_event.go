package main

/*
#include "kc_types.h"
*/
import "C"

import (
	"fmt"
	"strings"
	"sync"
	"unsafe"

	"github.com/krabka/krabka-coord/core/coord"
)

// Queue events (krabka_event_t): every event krabka_queue_poll hands out is
// a handle of its own (handles.go), so a destroyed or foreign pointer
// answers KRABKA_ERR_INVALID_HANDLE. An event owns what it carries (a
// leadership, a watch, a describe result, a watch event, an input, records)
// until a take accessor passes it to the caller as a new handle; destroying the event,
// or the queue it still waits in, disposes of what was not taken.

// eventTypeName names an event type as the header does (headerEnums, which
// internal/gen writes from the header's enum).
func eventTypeName(t C.krabka_event_type_t) string {
	if n, ok := headerEnums["krabka_event_type_t"][int(t)]; ok {
		return n
	}
	return fmt.Sprintf("event type %d", int(t))
}

// eventTypeTable is the event types capi names, by number (for the tests,
// which cannot use C).
func eventTypeTable() map[int]string {
	out := map[int]string{}
	for n := range headerEnums["krabka_event_type_t"] {
		out[n] = eventTypeName(C.krabka_event_type_t(n))
	}
	return out
}

// eventObj is the object behind a krabka_event_t (and an event waiting in
// a queue). The fields above mu never change once the event is posted.
type eventObj struct {
	typ    C.krabka_event_type_t
	tag    uint64
	err    C.krabka_err_t
	errstr string

	state     C.krabka_leadership_state_t // ENDED
	logLevel  C.krabka_log_level_t        // LOG
	logLine   string                      // LOG
	retryAt   int64                       // TRY_ACQUIRE not won
	results   []coord.ProduceResult       // PRODUCE
	term      termData                    // TERM, SET_TERM (elector.go)
	role      string                      // SET_TERM (electorset.go)
	group     groupData                   // GROUP (group.go)
	lease     C.krabka_lease_event_kind_t // LEASE
	deadline  int64                       // TERM, LEASE, GROUP: epoch ms
	confirmed bool                        // CONFIRM (confirm.go)

	mu         sync.Mutex
	leadership *leadershipObj // ACQUIRE, TRY_ACQUIRE: until taken
	watch      *watchObj      // WATCH_OPEN: until taken
	status     *coord.Status  // DESCRIBE: until taken
	watchEvent *watchEventObj // WATCH: until taken
	input      *inputObj      // CONSUME: until taken (input.go)
	records    *recordsObj    // POLL: until taken (input.go)
	cLine      *C.char        // LOG: the line as C text, made on first use
	disposed   bool           // destroyed: nothing may be taken any more
	release    func()         // TERM STOPPED: lets the elector campaign again (run once, on dispose)
}

// fail records why the call failed.
func (e *eventObj) fail(err error) {
	if err == nil {
		return
	}
	if ce, ok := err.(*cError); ok {
		e.err, e.errstr = ce.code, ce.msg
		return
	}
	e.err, e.errstr = codeOf(err), err.Error()
}

// dispose releases what the event still owns: a leadership is released
// without resigning (its lease runs out), a watch ends.
func (e *eventObj) dispose() {
	e.mu.Lock()
	l, w, line, in, recs := e.leadership, e.watch, e.cLine, e.input, e.records
	e.leadership, e.watch, e.status, e.watchEvent, e.cLine, e.input, e.records = nil, nil, nil, nil, nil, nil, nil
	rel := e.release
	e.release = nil
	e.disposed = true
	e.mu.Unlock()
	if rel != nil {
		rel()
	}
	if l != nil {
		l.close()
	}
	if w != nil {
		w.close()
	}
	if line != nil {
		C.free(unsafe.Pointer(line))
	}
	if in != nil {
		in.in.Close()
	}
	if recs != nil {
		recs.free()
	}
}

// eventOf is the event behind p.
func eventOf(p unsafe.Pointer) (*eventObj, error) { return object[*eventObj](p, kindEvent) }

// eventData is the head of a data accessor: the event behind p, which must
// be of one of types (fn and what name the accessor and the data for the
// error), and a non-NULL out.
func eventData[O any](p unsafe.Pointer, out *O, fn, what string, types ...C.krabka_event_type_t) (*eventObj, error) {
	e, err := eventOf(p)
	if err != nil {
		return nil, err
	}
	if out == nil {
		return nil, invalidArg("krabka: %s: out is NULL", fn)
	}
	for _, t := range types {
		if e.typ == t {
			return e, nil
		}
	}
	names := make([]string, len(types))
	for i, t := range types {
		names[i] = eventTypeName(t)
	}
	return nil, invalidArg("krabka: %s: a %s event carries no %s (only %s)", fn, eventTypeName(e.typ), what, strings.Join(names, " and "))
}

// eventScalar is a data accessor that writes one value of the event behind
// p (of one of types): *out = get(e).
func eventScalar[O any](p unsafe.Pointer, out *O, fn, what string, get func(*eventObj) O, errstr *C.char, errstrSize C.size_t, types ...C.krabka_event_type_t) C.krabka_err_t {
	e, err := eventData(p, out, fn, what, types...)
	if err != nil {
		return fail(err, errstr, errstrSize)
	}
	*out = get(e)
	return C.KRABKA_OK
}

// nameOut copies name into (buf, bufSize) with putNameBuf for the accessor
// fn, whose errors name what.
func nameOut(fn, what, name string, buf *C.char, bufSize C.size_t, n *C.size_t, errstr *C.char, errstrSize C.size_t) C.krabka_err_t {
	switch code := putNameBuf(name, buf, bufSize, n); code {
	case C.KRABKA_OK:
		writeErrstr(errstr, errstrSize, "")
		return code
	case C.KRABKA_ERR_BUFFER_TOO_SMALL:
		return fail(&cError{code, "krabka: " + fn + ": the buffer is too small for the " + what}, errstr, errstrSize)
	default:
		return fail(invalidArg("krabka: %s: buf is NULL with buf_size %d", fn, uint64(bufSize)), errstr, errstrSize)
	}
}

// take hands out what *slot holds once (nil afterwards), under the event's
// mutex.
func take[T any](e *eventObj, slot **T) *T {
	e.mu.Lock()
	defer e.mu.Unlock()
	v := *slot
	*slot = nil
	return v
}

//export kc_go_event_destroy
func kc_go_event_destroy(ev *C.krabka_event_t) (rc C.krabka_err_t) {
	defer guardNoErrstr(&rc)
	return destroy(unsafe.Pointer(ev), kindEvent, func(o any) { o.(*eventObj).dispose() })
}

//export kc_go_event_type
func kc_go_event_type(ev *C.kc_cevent_t, out *C.krabka_event_type_t) (rc C.krabka_err_t) {
	defer guardNoErrstr(&rc)
	return field(unsafe.Pointer(ev), kindEvent, out, func(e *eventObj) C.krabka_event_type_t { return e.typ })
}

//export kc_go_event_tag
func kc_go_event_tag(ev *C.kc_cevent_t, out *C.uint64_t) (rc C.krabka_err_t) {
	defer guardNoErrstr(&rc)
	return field(unsafe.Pointer(ev), kindEvent, out, func(e *eventObj) C.uint64_t { return C.uint64_t(e.tag) })
}

//export kc_go_event_error
func kc_go_event_error(ev *C.kc_cevent_t, code *C.krabka_err_t, errstr *C.char, errstr_size C.size_t) (rc C.krabka_err_t) {
	defer guard(&rc, errstr, errstr_size)
	e, err := eventOf(unsafe.Pointer(ev))
	if err != nil {
		return fail(err, errstr, errstr_size)
	}
	if code == nil {
		return fail(invalidArg("krabka: krabka_event_error: code is NULL"), errstr, errstr_size)
	}
	*code = e.err
	writeErrstr(errstr, errstr_size, e.errstr)
	return C.KRABKA_OK
}

//export kc_go_event_take_leadership
func kc_go_event_take_leadership(ev *C.krabka_event_t, out **C.krabka_leadership_t, errstr *C.char, errstr_size C.size_t) (rc C.krabka_err_t) {
	defer guard(&rc, errstr, errstr_size)
	e, err := eventData(unsafe.Pointer(ev), out, "krabka_event_take_leadership", "leadership", C.KRABKA_EVENT_ACQUIRE, C.KRABKA_EVENT_TRY_ACQUIRE, C.KRABKA_EVENT_TERM, C.KRABKA_EVENT_GROUP, C.KRABKA_EVENT_SET_TERM)
	if err != nil {
		return fail(err, errstr, errstr_size)
	}
	*out = nil
	if l := take(e, &e.leadership); l != nil {
		*out = (*C.krabka_leadership_t)(newHandle(kindLeadership, l))
	}
	return C.KRABKA_OK
}

//export kc_go_event_retry_at
func kc_go_event_retry_at(ev *C.kc_cevent_t, retry_at_ms *C.int64_t, errstr *C.char, errstr_size C.size_t) (rc C.krabka_err_t) {
	defer guard(&rc, errstr, errstr_size)
	e, err := eventData(unsafe.Pointer(ev), retry_at_ms, "krabka_event_retry_at", "retry time", C.KRABKA_EVENT_TRY_ACQUIRE)
	if err != nil {
		return fail(err, errstr, errstr_size)
	}
	*retry_at_ms = C.int64_t(e.retryAt)
	return C.KRABKA_OK
}

//export kc_go_event_state
func kc_go_event_state(ev *C.kc_cevent_t, out *C.krabka_leadership_state_t, errstr *C.char, errstr_size C.size_t) (rc C.krabka_err_t) {
	defer guard(&rc, errstr, errstr_size)
	e, err := eventData(unsafe.Pointer(ev), out, "krabka_event_state", "leadership state", C.KRABKA_EVENT_ENDED, C.KRABKA_EVENT_LEASE)
	if err != nil {
		return fail(err, errstr, errstr_size)
	}
	*out = e.state
	return C.KRABKA_OK
}

//export kc_go_event_log
func kc_go_event_log(ev *C.kc_cevent_t, level *C.krabka_log_level_t, line **C.kc_cchar_t, errstr *C.char, errstr_size C.size_t) (rc C.krabka_err_t) {
	defer guard(&rc, errstr, errstr_size)
	e, err := eventData(unsafe.Pointer(ev), line, "krabka_event_log", "log line", C.KRABKA_EVENT_LOG)
	if err != nil {
		return fail(err, errstr, errstr_size)
	}
	if level == nil {
		return fail(invalidArg("krabka: krabka_event_log: level is NULL"), errstr, errstr_size)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.disposed { // destroyed by another thread meanwhile
		return fail(invalidHandle(kindEvent, "destroyed"), errstr, errstr_size)
	}
	if e.cLine == nil {
		e.cLine = C.CString(e.logLine)
	}
	*level = e.logLevel
	*line = (*C.kc_cchar_t)(unsafe.Pointer(e.cLine))
	return C.KRABKA_OK
}

//export kc_go_event_take_watch_event
func kc_go_event_take_watch_event(ev *C.krabka_event_t, out **C.krabka_watch_event_t, errstr *C.char, errstr_size C.size_t) (rc C.krabka_err_t) {
	defer guard(&rc, errstr, errstr_size)
	e, err := eventData(unsafe.Pointer(ev), out, "krabka_event_take_watch_event", "watch event", C.KRABKA_EVENT_WATCH)
	if err != nil {
		return fail(err, errstr, errstr_size)
	}
	*out = nil
	if w := take(e, &e.watchEvent); w != nil {
		*out = (*C.krabka_watch_event_t)(newHandle(kindWatchEvent, w))
	}
	return C.KRABKA_OK
}

//export kc_go_event_take_watch
func kc_go_event_take_watch(ev *C.krabka_event_t, out **C.krabka_watch_t, errstr *C.char, errstr_size C.size_t) (rc C.krabka_err_t) {
	defer guard(&rc, errstr, errstr_size)
	e, err := eventData(unsafe.Pointer(ev), out, "krabka_event_take_watch", "watch", C.KRABKA_EVENT_WATCH_OPEN)
	if err != nil {
		return fail(err, errstr, errstr_size)
	}
	*out = nil
	if w := take(e, &e.watch); w != nil {
		*out = (*C.krabka_watch_t)(newHandle(kindWatch, w))
	}
	return C.KRABKA_OK
}

//export kc_go_event_take_status
func kc_go_event_take_status(ev *C.krabka_event_t, out **C.krabka_status_t, errstr *C.char, errstr_size C.size_t) (rc C.krabka_err_t) {
	defer guard(&rc, errstr, errstr_size)
	e, err := eventData(unsafe.Pointer(ev), out, "krabka_event_take_status", "describe result", C.KRABKA_EVENT_DESCRIBE)
	if err != nil {
		return fail(err, errstr, errstr_size)
	}
	*out = nil
	if s := take(e, &e.status); s != nil {
		*out = (*C.krabka_status_t)(newHandle(kindStatus, s))
	}
	return C.KRABKA_OK
}

//export kc_go_event_results
func kc_go_event_results(ev *C.kc_cevent_t, out *C.krabka_produce_result_t, capacity C.size_t, count *C.size_t, errstr *C.char, errstr_size C.size_t) (rc C.krabka_err_t) {
	defer guard(&rc, errstr, errstr_size)
	e, err := eventData(unsafe.Pointer(ev), count, "krabka_event_results", "produce results", C.KRABKA_EVENT_PRODUCE)
	if err != nil {
		return fail(err, errstr, errstr_size)
	}
	if out == nil && capacity != 0 {
		return fail(invalidArg("krabka: krabka_event_results: out is NULL with cap %d", uint64(capacity)), errstr, errstr_size)
	}
	*count = C.size_t(len(e.results))
	n := len(e.results)
	if uint64(capacity) < uint64(n) {
		n = int(capacity)
	}
	if n > 0 {
		dst := unsafe.Slice(out, n)
		for i := range dst {
			dst[i] = C.krabka_produce_result_t{partition: C.int32_t(e.results[i].Partition), offset: C.int64_t(e.results[i].Offset)}
		}
	}
	return C.KRABKA_OK
}
