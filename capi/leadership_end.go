package main

/*
#include "kc_types.h"
*/
import "C"

import (
	"sync"

	"github.com/krabka/krabka-coord/core/coord"
)

// How a leadership's end reaches the host: krabka_leadership_wait, the
// eventfd of krabka_leadership_event_fd (readable once the leadership has
// ended) and krabka_leadership_end_error. The ENDED event of
// krabka_leadership_ended_async is in async.go.

// endSignal is the eventfd of a leadership handle (krabka_leadership_event_fd).
type endSignal struct {
	mu        sync.Mutex
	fd        C.int
	hasFd     bool
	closed    bool
	signalled bool
	stop      chan struct{}
}

// signalEnd makes the eventfd readable once the leadership has ended (at
// most one write). Called by the notifier goroutine and by every call that
// observes the end, so that a host that saw the end through the API also
// finds the fd readable.
func (o *leadershipObj) signalEnd() {
	s := &o.sig
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.hasFd && !s.closed && !s.signalled {
		select {
		case <-o.l.Done():
			C.kc_eventfd_signal(s.fd)
			s.signalled = true
		default:
		}
	}
}

// eventFd returns the leadership's eventfd, creating it and its notifier on
// first use.
func (o *leadershipObj) eventFd() (C.int, error) {
	s := &o.sig
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return -1, invalidHandle(kindLeadership, "destroyed")
	}
	if s.hasFd {
		return s.fd, nil
	}
	fd := C.kc_eventfd()
	if fd < 0 {
		return -1, &cError{C.KRABKA_ERR_INTERNAL, "krabka: eventfd failed"}
	}
	s.fd, s.hasFd, s.stop = fd, true, make(chan struct{})
	select {
	case <-o.l.Done(): // already ended: readable at once
		C.kc_eventfd_signal(fd)
		s.signalled = true
	default:
	}
	go func() {
		select {
		case <-o.l.Done():
		case <-s.stop:
			return
		}
		o.signalEnd()
	}()
	return fd, nil
}

// close ends the leadership (without resigning) and closes its eventfd.
func (o *leadershipObj) close() {
	if !o.borrowed { // an elector's term: the elector ends it
		o.l.Close()
	}
	s := &o.sig
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	if s.hasFd {
		close(s.stop)
		C.kc_close(s.fd)
		s.hasFd = false
	}
}

func endOf(l *coord.Leadership) (C.krabka_leadership_state_t, C.krabka_err_t, string) {
	st := stateCodes[l.State()]
	err := l.Err()
	if err == nil {
		return st, C.KRABKA_OK, ""
	}
	return st, codeOf(err), err.Error()
}

//export kc_go_leadership_wait
func kc_go_leadership_wait(leadership *C.krabka_leadership_t, timeout_ms C.int64_t, state *C.krabka_leadership_state_t) (rc C.krabka_err_t) {
	defer guardNoErrstr(&rc)
	l, code := leadershipOut(leadership, state)
	if code != C.KRABKA_OK {
		return code
	}
	ctx, cancel, err := callContext(timeout_ms, 0)
	if err != nil {
		return err.(*cError).code
	}
	defer cancel()
	select {
	case <-l.l.Done():
		l.signalEnd()
		*state = stateCodes[l.l.State()]
		return C.KRABKA_OK
	case <-ctx.Done():
		*state = C.KRABKA_LEADERSHIP_ACTIVE
		return C.KRABKA_ERR_TIMEOUT
	}
}

//export kc_go_leadership_event_fd
func kc_go_leadership_event_fd(leadership *C.krabka_leadership_t, fd *C.int) (rc C.krabka_err_t) {
	defer guardNoErrstr(&rc)
	l, code := leadershipOut(leadership, fd)
	if code != C.KRABKA_OK {
		return code
	}
	f, err := l.eventFd()
	if err != nil {
		return err.(*cError).code
	}
	*fd = f
	return C.KRABKA_OK
}

//export kc_go_leadership_end_error
func kc_go_leadership_end_error(leadership *C.kc_cleadership_t, code *C.krabka_err_t, reason *C.char, reason_size C.size_t) (rc C.krabka_err_t) {
	defer guardNoErrstr(&rc)
	l, c := leadershipOut(leadership, code)
	if c != C.KRABKA_OK {
		return c
	}
	_, ec, text := endOf(l.l)
	if ec != C.KRABKA_OK {
		l.signalEnd()
	}
	*code = ec
	writeErrstr(reason, reason_size, text)
	return C.KRABKA_OK
}
