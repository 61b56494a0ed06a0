package main

/*
#include "kc_types.h"
*/
import "C"

import (
	"context"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"unsafe"
)

// Log lines of the C API: the client's slog records become one line of
// text ("message key=value ...") and go to the host's log callback (through
// one delivery goroutine per client, so the callback never runs inside
// another call of the library) or to a krabka_queue_t as KRABKA_EVENT_LOG.
// The level filter and the secret scrubber are core/coord's (NewLogger).

func cLevel(l slog.Level) C.krabka_log_level_t {
	switch {
	case l >= slog.LevelError:
		return C.KRABKA_LOG_ERROR
	case l >= slog.LevelWarn:
		return C.KRABKA_LOG_WARNING
	case l >= slog.LevelInfo:
		return C.KRABKA_LOG_INFO
	}
	return C.KRABKA_LOG_DEBUG
}

// lineSink receives formatted lines.
type lineSink interface {
	line(level C.krabka_log_level_t, text string)
}

// lineHandler is the slog.Handler behind cfg.Logger in the C API.
type lineHandler struct {
	sink   lineSink
	prefix string // "key=value ..." of WithAttrs
	group  string
}

func (h *lineHandler) Enabled(context.Context, slog.Level) bool { return true }

func appendAttr(b *strings.Builder, group string, a slog.Attr) {
	if a.Equal(slog.Attr{}) {
		return
	}
	key := a.Key
	if group != "" {
		key = group + "." + key
	}
	v := a.Value.Resolve()
	if v.Kind() == slog.KindGroup {
		for _, x := range v.Group() {
			appendAttr(b, key, x)
		}
		return
	}
	s := v.String()
	b.WriteByte(' ')
	b.WriteString(key)
	b.WriteByte('=')
	if s == "" || strings.ContainsAny(s, " \"=\t\n\\") {
		s = strconv.Quote(s)
	}
	b.WriteString(s)
}

func (h *lineHandler) Handle(_ context.Context, r slog.Record) error {
	var b strings.Builder
	b.WriteString(r.Message)
	b.WriteString(h.prefix)
	r.Attrs(func(a slog.Attr) bool {
		appendAttr(&b, h.group, a)
		return true
	})
	h.sink.line(cLevel(r.Level), b.String())
	return nil
}

func (h *lineHandler) WithAttrs(as []slog.Attr) slog.Handler {
	var b strings.Builder
	b.WriteString(h.prefix)
	for _, a := range as {
		appendAttr(&b, h.group, a)
	}
	return &lineHandler{sink: h.sink, prefix: b.String(), group: h.group}
}

func (h *lineHandler) WithGroup(name string) slog.Handler {
	g := name
	if h.group != "" {
		g = h.group + "." + name
	}
	return &lineHandler{sink: h.sink, prefix: h.prefix, group: g}
}

// queueSink posts lines to a queue.
type queueSink struct {
	q   *queueObj
	tag uint64
}

func (s queueSink) line(level C.krabka_log_level_t, text string) { s.q.pushLog(s.tag, level, text) }

// cbSink hands lines to one delivery goroutine that calls the callback.
type cbSink struct {
	cb     C.krabka_log_cb
	opaque unsafe.Pointer

	mu      sync.Mutex
	cond    *sync.Cond
	lines   []logLine
	dropped int
	stopped bool
	done    chan struct{}
}

type logLine struct {
	level C.krabka_log_level_t
	text  string
}

func newCbSink(cb C.krabka_log_cb, opaque unsafe.Pointer) *cbSink {
	s := &cbSink{cb: cb, opaque: opaque, done: make(chan struct{})}
	s.cond = sync.NewCond(&s.mu)
	go s.deliver()
	return s
}

func (s *cbSink) line(level C.krabka_log_level_t, text string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return
	}
	if len(s.lines) >= maxQueuedLogLines {
		s.dropped++
		return
	}
	s.lines = append(s.lines, logLine{level, text})
	s.cond.Signal()
}

func (s *cbSink) deliver() {
	defer close(s.done)
	for {
		s.mu.Lock()
		for len(s.lines) == 0 && s.dropped == 0 && !s.stopped {
			s.cond.Wait()
		}
		if len(s.lines) == 0 && s.dropped == 0 && s.stopped {
			s.mu.Unlock()
			return
		}
		batch, dropped := s.lines, s.dropped
		s.lines, s.dropped = nil, 0
		s.mu.Unlock()
		if dropped > 0 {
			s.call(C.KRABKA_LOG_WARNING, dropLine(dropped))
		}
		for _, l := range batch {
			s.call(l.level, l.text)
		}
	}
}

func (s *cbSink) call(level C.krabka_log_level_t, text string) {
	cs := C.CString(text)
	defer C.free(unsafe.Pointer(cs))
	C.kc_call_log(s.cb, s.opaque, level, cs)
}

// stop delivers the lines still waiting, then ends the delivery goroutine;
// it returns when the callback will not be called again.
func (s *cbSink) stop() {
	s.mu.Lock()
	s.stopped = true
	s.cond.Signal()
	s.mu.Unlock()
	<-s.done
}

// logSetup is the logging part of a krabka_conf_t.
type logSetup struct {
	cb     C.krabka_log_cb
	opaque unsafe.Pointer
	queue  *queueObj
	tag    uint64
}

// logger builds the slog.Logger of a new client, and the function that
// stops its delivery when the client is destroyed (nil: nothing to stop).
// Without a callback or queue: nil, slog.Default().
func (ls logSetup) logger() (*slog.Logger, func()) {
	switch {
	case ls.queue != nil:
		return slog.New(&lineHandler{sink: queueSink{ls.queue, ls.tag}}), nil
	case ls.cb != nil:
		s := newCbSink(ls.cb, ls.opaque)
		return slog.New(&lineHandler{sink: s}), s.stop
	}
	return nil, nil
}

//export kc_go_conf_set_log_cb
func kc_go_conf_set_log_cb(conf *C.krabka_conf_t, cb C.krabka_log_cb, opaque unsafe.Pointer) (rc C.krabka_err_t) {
	defer guardNoErrstr(&rc)
	c, err := confOf(unsafe.Pointer(conf))
	if err != nil {
		return err.(*cError).code
	}
	c.mu.Lock()
	c.log.cb, c.log.opaque = cb, opaque
	c.mu.Unlock()
	return C.KRABKA_OK
}

//export kc_go_conf_set_log_queue
func kc_go_conf_set_log_queue(conf *C.krabka_conf_t, queue *C.krabka_queue_t, tag C.uint64_t) (rc C.krabka_err_t) {
	defer guardNoErrstr(&rc)
	c, err := confOf(unsafe.Pointer(conf))
	if err != nil {
		return err.(*cError).code
	}
	var q *queueObj
	if queue != nil {
		if q, err = queueOf(unsafe.Pointer(queue)); err != nil {
			return err.(*cError).code
		}
	}
	c.mu.Lock()
	c.log.queue, c.log.tag = q, uint64(tag)
	c.mu.Unlock()
	return C.KRABKA_OK
}
