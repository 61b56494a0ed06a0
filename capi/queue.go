package main

/*
#include "kc_types.h"
*/
import "C"

import (
	"sync"
	"unsafe"
)

// Event queues (krabka_queue_t): the completion path of the *_async calls
// and of the log queue. Producers are library goroutines; the consumer is
// the host's thread calling krabka_queue_poll. The fd is the read end of a
// non-blocking pipe (a pipe rather than an eventfd so that libuv can watch
// it as a stream); it holds a byte exactly while the queue is not empty:
// push signals it when the queue goes from empty to not empty, poll drains
// it when the queue becomes empty, both under the queue's mutex.

// maxQueuedLogLines bounds the log lines waiting in one queue or for one
// log callback.
const maxQueuedLogLines = 10000

// qEvent is one event waiting in a queue (Go memory until polled).
type qEvent struct {
	typ        C.krabka_event_type_t
	tag        uint64
	err        C.krabka_err_t
	errstr     string
	leadership unsafe.Pointer // ACQUIRE: a handle owned by the event until polled
	state      C.krabka_leadership_state_t
	logLevel   C.krabka_log_level_t
	logLine    string
	watch      *watchEventC // WATCH: C memory owned by the event until polled
}

type queueObj struct {
	mu       sync.Mutex
	events   []*qEvent
	logLines int // LOG events waiting
	dropped  int // log lines dropped since the last one delivered
	rd, wr   C.int
	closed   bool

	// C memory of the event last returned by poll, freed at the next poll.
	cur []unsafe.Pointer
	// curWatch is the watch event last returned by poll.
	curWatch *watchEventC
}

func queueOf(p unsafe.Pointer) (*queueObj, error) { return object[*queueObj](p, kindQueue) }

// push adds ev; false when the queue was destroyed (the caller then
// disposes of what ev carries).
func (q *queueObj) push(ev *qEvent) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return false
	}
	if ev.typ == C.KRABKA_EVENT_LOG {
		if q.logLines >= maxQueuedLogLines {
			q.dropped++
			return true
		}
		q.logLines++
	}
	q.events = append(q.events, ev)
	if len(q.events) == 1 {
		C.kc_pipe_signal(q.wr)
	}
	return true
}

// pushLog posts a log line.
func (q *queueObj) pushLog(tag uint64, level C.krabka_log_level_t, line string) {
	q.push(&qEvent{typ: C.KRABKA_EVENT_LOG, tag: tag, logLevel: level, logLine: line})
}

func (q *queueObj) freeCur() {
	for _, p := range q.cur {
		C.free(p)
	}
	q.cur = q.cur[:0]
	if q.curWatch != nil {
		q.curWatch.free()
		q.curWatch = nil
	}
}

func (q *queueObj) cstr(s string) *C.char {
	p := C.CString(s)
	q.cur = append(q.cur, unsafe.Pointer(p))
	return p
}

// poll moves the oldest event into out.
func (q *queueObj) poll(out *C.krabka_event_t) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.freeCur()
	*out = C.krabka_event_t{}
	out.errstr = q.cstr("")
	if q.dropped > 0 && q.logLines < maxQueuedLogLines {
		// Report the drops in order, before the lines that follow them.
		n := q.dropped
		q.dropped = 0
		out._type = C.KRABKA_EVENT_LOG
		out.log_level = C.KRABKA_LOG_WARNING
		out.log_line = q.cstr(dropLine(n))
		if len(q.events) == 0 {
			C.kc_pipe_drain(q.rd)
		}
		return
	}
	if len(q.events) == 0 {
		out._type = C.KRABKA_EVENT_NONE
		C.kc_pipe_drain(q.rd)
		return
	}
	ev := q.events[0]
	q.events[0] = nil
	q.events = q.events[1:]
	if len(q.events) == 0 {
		if q.dropped == 0 {
			C.kc_pipe_drain(q.rd)
		}
		q.events = nil
	}
	if ev.typ == C.KRABKA_EVENT_LOG {
		q.logLines--
	}
	out._type = ev.typ
	out.tag = C.uint64_t(ev.tag)
	out.err = ev.err
	out.errstr = q.cstr(ev.errstr)
	out.leadership = (*C.krabka_leadership_t)(ev.leadership)
	out.state = ev.state
	out.log_level = ev.logLevel
	if ev.typ == C.KRABKA_EVENT_LOG {
		out.log_line = q.cstr(ev.logLine)
	}
	if ev.watch != nil {
		q.curWatch = ev.watch
		out.watch_event = ev.watch.c
	}
}

// close drops the waiting events (destroying the leaderships they carry)
// and closes the pipe.
func (q *queueObj) close() {
	q.mu.Lock()
	evs := q.events
	q.events = nil
	q.closed = true
	q.freeCur()
	C.kc_close(q.rd)
	C.kc_close(q.wr)
	q.mu.Unlock()
	for _, ev := range evs {
		disposeEvent(ev)
	}
}

// disposeEvent releases what an event that will never be polled carries.
func disposeEvent(ev *qEvent) {
	if ev.leadership != nil {
		kc_go_leadership_destroy((*C.krabka_leadership_t)(ev.leadership))
	}
	if ev.watch != nil {
		ev.watch.free()
	}
}

// post pushes ev to q, or disposes of it when q was destroyed.
func post(q *queueObj, ev *qEvent) {
	if !q.push(ev) {
		disposeEvent(ev)
	}
}

//export kc_go_queue_new
func kc_go_queue_new(out **C.krabka_queue_t) (rc C.krabka_err_t) {
	defer guardNoErrstr(&rc)
	if out == nil {
		return C.KRABKA_ERR_INVALID_ARG
	}
	q := &queueObj{}
	if C.kc_pipe(&q.rd, &q.wr) != 0 {
		return C.KRABKA_ERR_INTERNAL
	}
	*out = (*C.krabka_queue_t)(newHandle(kindQueue, q))
	return C.KRABKA_OK
}

//export kc_go_queue_fd
func kc_go_queue_fd(queue *C.krabka_queue_t, fd *C.int) (rc C.krabka_err_t) {
	defer guardNoErrstr(&rc)
	return field(unsafe.Pointer(queue), kindQueue, fd, func(q *queueObj) C.int { return q.rd })
}

//export kc_go_queue_poll
func kc_go_queue_poll(queue *C.krabka_queue_t, out *C.krabka_event_t) (rc C.krabka_err_t) {
	defer guardNoErrstr(&rc)
	q, code := objectOut[*queueObj](unsafe.Pointer(queue), kindQueue, out)
	if code != C.KRABKA_OK {
		return code
	}
	q.poll(out)
	return C.KRABKA_OK
}

//export kc_go_queue_destroy
func kc_go_queue_destroy(queue *C.krabka_queue_t) (rc C.krabka_err_t) {
	defer guardNoErrstr(&rc)
	return destroy(unsafe.Pointer(queue), kindQueue, func(o any) { o.(*queueObj).close() })
}
