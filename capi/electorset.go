package main

/*
#include "kc_types.h"
*/
import "C"

import (
	"context"
	"fmt"
	"sync"
	"time"
	"unicode/utf8"
	"unsafe"

	"github.com/krabka/krabka-coord/core"
	"github.com/krabka/krabka-coord/core/coord"
)

// Elector sets (krabka_elector_set_t): coord.ElectorSet with
// ElectManualRelease on the library's goroutines, one queue for every role.
// A pump goroutine takes every RoleEvent (Next) and posts it as a
// KRABKA_EVENT_SET_TERM, which carries its role and what a TERM carries
// (termEvent, elector.go). The release rule is the elector's, per role: a
// STOPPED event releases its term (RoleEvent.Release, the elector that
// produced it) when it is disposed of, so a role campaigns again only
// after the host dealt with its STOPPED. A STARTED event's leadership is
// borrowed, as an elector's.

type electorSetObj struct {
	s              *coord.ElectorSet
	c              *clientObj
	done           chan struct{} // closed when the pump returned (after Close)
	requestTimeout time.Duration // KRABKA_TIMEOUT_DEFAULT of remove

	mu    sync.Mutex
	ended map[string]uint64 // ELECTOR_STOPPED events posted, by role
	wake  chan struct{}     // closed and replaced when ended grows
}

// posted counts an ELECTOR_STOPPED of role posted (remove waits for it).
func (o *electorSetObj) posted(role string) {
	o.mu.Lock()
	o.ended[role]++
	close(o.wake)
	o.wake = make(chan struct{})
	o.mu.Unlock()
}

// endedCount is how many ELECTOR_STOPPED events of role were posted, and
// the channel closed when that grows.
func (o *electorSetObj) endedCount(role string) (uint64, <-chan struct{}) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.ended[role], o.wake
}

func electorSetOf(p unsafe.Pointer) (*electorSetObj, error) {
	return object[*electorSetObj](p, kindElectorSet)
}

// setRole is the role argument of a set call (fn names it): its errors name
// the role, its first bytes when it is too long.
func setRole(fn string, p *C.kc_cchar_t, n C.size_t) (core.Role, error) {
	b, err := cBytes((*C.char)(unsafe.Pointer(p)), n, "role")
	if err != nil {
		return core.Role{}, err
	}
	r, err := core.RoleFromBytes(b)
	if err != nil {
		return core.Role{}, &cError{codeOf(err), fmt.Sprintf("krabka: %s: role %s: %v", fn, quoteRole(b), err)}
	}
	return r, nil
}

// quoteRole quotes a role for an error: whole up to 64 bytes, else its
// first 64 bytes (cut at a rune boundary when valid UTF-8) and its length.
func quoteRole(b []byte) string {
	const max = 64
	if len(b) <= max {
		return fmt.Sprintf("%q", b)
	}
	n := max
	if utf8.Valid(b) {
		for n > 0 && !utf8.RuneStart(b[n]) {
			n--
		}
	}
	return fmt.Sprintf("%q... (%d bytes)", b[:n], len(b))
}

// setTermEvent turns a RoleEvent into a queue event.
func setTermEvent(c *clientObj, tag uint64, re coord.RoleEvent) *eventObj {
	ev := termEvent(c, func(uint64) { re.Release() }, tag, re.TermEvent)
	ev.typ = C.KRABKA_EVENT_SET_TERM
	ev.role = re.Role.String()
	return ev
}

//export kc_go_elector_set_new
func kc_go_elector_set_new(client *C.krabka_client_t, m *C.kc_cchar_t, member_len C.size_t, flags C.int, queue *C.krabka_queue_t, tag C.uint64_t, out **C.krabka_elector_set_t, errstr *C.char, errstr_size C.size_t) (rc C.krabka_err_t) {
	defer guard(&rc, errstr, errstr_size)
	return finish(electorSetNew(client, m, member_len, flags, queue, tag, out), errstr, errstr_size)
}

// electorSetNew is krabka_elector_set_new; the arguments are checked in
// order, each failure naming its argument.
func electorSetNew(client *C.krabka_client_t, m *C.kc_cchar_t, memberLen C.size_t, flags C.int, queue *C.krabka_queue_t, tag C.uint64_t, out **C.krabka_elector_set_t) error {
	if out != nil {
		*out = nil
	}
	c, err := clientOf(unsafe.Pointer(client))
	if err != nil {
		return err
	}
	me, err := member(m, memberLen)
	if err != nil {
		return err
	}
	q, err := queueOf(unsafe.Pointer(queue))
	if err != nil {
		return err
	}
	if out == nil {
		return invalidArg("krabka: krabka_elector_set_new: out is NULL")
	}
	if flags&^C.KRABKA_ELECT_NO_RECAMPAIGN != 0 {
		return invalidArg("krabka: krabka_elector_set_new: unknown flags 0x%x (an elector set takes 0 or KRABKA_ELECT_NO_RECAMPAIGN)", int(flags&^C.KRABKA_ELECT_NO_RECAMPAIGN))
	}
	opts := []coord.ElectOption{coord.ElectManualRelease()}
	if flags&C.KRABKA_ELECT_NO_RECAMPAIGN != 0 {
		opts = append(opts, coord.ElectRecampaign(false))
	}
	s, err := coord.NewElectorSet(c.c, me, opts...)
	if err != nil {
		return err
	}
	o := &electorSetObj{s: s, c: c, done: make(chan struct{}), requestTimeout: c.requestTimeout,
		ended: map[string]uint64{}, wake: make(chan struct{})}
	go func() {
		defer close(o.done)
		for {
			re, err := s.Next(context.Background())
			if err != nil {
				return // Close ran and every event was taken
			}
			post(q, setTermEvent(c, uint64(tag), re))
			if re.Kind == coord.TermElectorStopped {
				o.posted(re.Role.String())
			}
		}
	}()
	*out = (*C.krabka_elector_set_t)(newHandle(kindElectorSet, o))
	return nil
}

//export kc_go_elector_set_add
func kc_go_elector_set_add(set *C.krabka_elector_set_t, r *C.kc_cchar_t, role_len C.size_t, errstr *C.char, errstr_size C.size_t) (rc C.krabka_err_t) {
	defer guard(&rc, errstr, errstr_size)
	o, err := electorSetOf(unsafe.Pointer(set))
	if err != nil {
		return fail(err, errstr, errstr_size)
	}
	ro, err := setRole("krabka_elector_set_add", r, role_len)
	if err != nil {
		return fail(err, errstr, errstr_size)
	}
	acq := o.c.acquireOptions(ro, o.s.Member())
	return finish(o.s.Add(ro, coord.ElectAcquireOptions(acq...)), errstr, errstr_size)
}

//export kc_go_elector_set_remove
func kc_go_elector_set_remove(set *C.krabka_elector_set_t, r *C.kc_cchar_t, role_len C.size_t, timeout_ms C.int64_t, errstr *C.char, errstr_size C.size_t) (rc C.krabka_err_t) {
	defer guard(&rc, errstr, errstr_size)
	o, err := electorSetOf(unsafe.Pointer(set))
	if err != nil {
		return fail(err, errstr, errstr_size)
	}
	ro, err := setRole("krabka_elector_set_remove", r, role_len)
	if err != nil {
		return fail(err, errstr, errstr_size)
	}
	ctx, cancel, err := callContext(timeout_ms, o.requestTimeout)
	if err != nil {
		return fail(err, errstr, errstr_size)
	}
	defer cancel()
	before, _ := o.endedCount(ro.String())
	if err := o.s.Remove(ctx, ro); err != nil {
		return fail(err, errstr, errstr_size)
	}
	// The role's last event is on the set's stream: wait until the pump
	// posted it, so that the host finds it in the queue.
	for {
		n, wake := o.endedCount(ro.String())
		if n > before {
			return C.KRABKA_OK
		}
		select {
		case <-wake:
		case <-ctx.Done():
			return fail(coord.WrapError(coord.ErrTimeout, ctx.Err(), "krabka_elector_set_remove(%s): the role's loop ended but its last event is not posted yet", ro), errstr, errstr_size)
		}
	}
}

//export kc_go_elector_set_state
func kc_go_elector_set_state(set *C.krabka_elector_set_t, r *C.kc_cchar_t, role_len C.size_t, out *C.krabka_elector_state_t, errstr *C.char, errstr_size C.size_t) (rc C.krabka_err_t) {
	defer guard(&rc, errstr, errstr_size)
	o, err := electorSetOf(unsafe.Pointer(set))
	if err != nil {
		return fail(err, errstr, errstr_size)
	}
	ro, err := setRole("krabka_elector_set_state", r, role_len)
	if err != nil {
		return fail(err, errstr, errstr_size)
	}
	if out == nil {
		return fail(invalidArg("krabka: krabka_elector_set_state: out is NULL"), errstr, errstr_size)
	}
	e := o.s.Elector(ro)
	if e == nil {
		return fail(invalidArg("krabka: krabka_elector_set_state: role %s is not in the set", quoteRole([]byte(ro.String()))), errstr, errstr_size)
	}
	*out = C.krabka_elector_state_t(e.State())
	return C.KRABKA_OK
}

//export kc_go_elector_set_count
func kc_go_elector_set_count(set *C.krabka_elector_set_t, roles *C.size_t, held *C.size_t, errstr *C.char, errstr_size C.size_t) (rc C.krabka_err_t) {
	defer guard(&rc, errstr, errstr_size)
	o, err := electorSetOf(unsafe.Pointer(set))
	if err != nil {
		return fail(err, errstr, errstr_size)
	}
	if roles != nil {
		*roles = C.size_t(o.s.Len())
	}
	if held != nil {
		*held = C.size_t(len(o.s.Held()))
	}
	return C.KRABKA_OK
}

//export kc_go_elector_set_destroy
func kc_go_elector_set_destroy(set *C.krabka_elector_set_t) (rc C.krabka_err_t) {
	defer guardNoErrstr(&rc)
	return destroy(unsafe.Pointer(set), kindElectorSet, func(a any) {
		o := a.(*electorSetObj)
		_ = o.s.Close(context.Background())
		<-o.done
	})
}

//export kc_go_event_role
func kc_go_event_role(ev *C.kc_cevent_t, buf *C.char, buf_size C.size_t, n *C.size_t, errstr *C.char, errstr_size C.size_t) (rc C.krabka_err_t) {
	defer guard(&rc, errstr, errstr_size)
	e, err := eventOf(unsafe.Pointer(ev))
	if err != nil {
		return fail(err, errstr, errstr_size)
	}
	if e.typ != C.KRABKA_EVENT_SET_TERM {
		return fail(invalidArg("krabka: krabka_event_role: a %s event carries no role (only KRABKA_EVENT_SET_TERM)", eventTypeName(e.typ)), errstr, errstr_size)
	}
	return nameOut("krabka_event_role", "role", e.role, buf, buf_size, n, errstr, errstr_size)
}
