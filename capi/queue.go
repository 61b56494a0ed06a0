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
// and of the log queue. Producers are library goroutines; consumers are the
// host's threads calling krabka_queue_poll, which hands each event out as a
// handle of its own (krabka_event_t, queue_event.go). The fd is the read end
// of a non-blocking pipe (a pipe rather than an eventfd so that libuv can
// watch it as a stream); it holds a byte exactly while the queue is not
// empty: push signals it when the queue goes from empty to not empty, poll
// drains it when the queue becomes empty, both under the queue's mutex.

// maxQueuedLogLines bounds the log lines waiting in one queue or for one
// log callback.
const maxQueuedLogLines = 10000

type queueObj struct {
	mu         sync.Mutex
	events     []*eventObj
	logLines   int    // LOG events waiting
	dropped    int    // log lines dropped since the last one delivered
	droppedTag uint64 // the tag of the last dropped line
	rd, wr     C.int
	closed     bool
}

func queueOf(p unsafe.Pointer) (*queueObj, error) { return object[*queueObj](p, kindQueue) }

// push adds ev; false when the queue was destroyed (the caller then
// disposes of what ev carries).
func (q *queueObj) push(ev *eventObj) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return false
	}
	if ev.typ == C.KRABKA_EVENT_LOG {
		if q.logLines >= maxQueuedLogLines {
			q.dropped++
			q.droppedTag = ev.tag
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
	q.push(&eventObj{typ: C.KRABKA_EVENT_LOG, tag: tag, logLevel: level, logLine: line})
}

// poll takes the oldest event (nil: the queue is empty).
func (q *queueObj) poll() *eventObj {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.dropped > 0 && q.logLines < maxQueuedLogLines {
		// Report the drops in order, before the lines that follow them.
		n := q.dropped
		q.dropped = 0
		if len(q.events) == 0 {
			C.kc_pipe_drain(q.rd)
		}
		return &eventObj{typ: C.KRABKA_EVENT_LOG, tag: q.droppedTag, logLevel: C.KRABKA_LOG_WARNING, logLine: dropLine(n)}
	}
	if len(q.events) == 0 {
		C.kc_pipe_drain(q.rd)
		return nil
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
	return ev
}

// close drops the waiting events (disposing of what they carry) and closes
// the pipe.
func (q *queueObj) close() {
	q.mu.Lock()
	evs := q.events
	q.events = nil
	q.closed = true
	C.kc_close(q.rd)
	C.kc_close(q.wr)
	q.mu.Unlock()
	for _, ev := range evs {
		ev.dispose()
	}
}

// post pushes ev to q, or disposes of it when q was destroyed.
func post(q *queueObj, ev *eventObj) {
	if !q.push(ev) {
		ev.dispose()
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
func kc_go_queue_poll(queue *C.krabka_queue_t, out **C.krabka_event_t) (rc C.krabka_err_t) {
	defer guardNoErrstr(&rc)
	if out != nil {
		*out = nil
	}
	q, code := objectOut[*queueObj](unsafe.Pointer(queue), kindQueue, out)
	if code != C.KRABKA_OK {
		return code
	}
	if ev := q.poll(); ev != nil {
		*out = (*C.krabka_event_t)(newHandle(kindEvent, ev))
	}
	return C.KRABKA_OK
}

//export kc_go_queue_destroy
func kc_go_queue_destroy(queue *C.krabka_queue_t) (rc C.krabka_err_t) {
	defer guardNoErrstr(&rc)
	return destroy(unsafe.Pointer(queue), kindQueue, func(o any) { o.(*queueObj).close() })
}
