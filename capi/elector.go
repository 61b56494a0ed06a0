package main

/*
#include "kc_types.h"
*/
import "C"

import (
	"context"
	"sync"
	"time"
	"unsafe"

	"github.com/krabka/krabka-coord/core/coord"
)

// The elector (krabka_elector_t): coord.Elector with ElectManualRelease on
// the library's goroutines. A pump goroutine takes every TermEvent (Next)
// and posts it to the host's queue as a KRABKA_EVENT_TERM; the STOPPED
// event carries the Release of its term, run when the event is disposed of
// (krabka_event_destroy, the queue destroyed, or the post finding the queue
// gone), so the elector campaigns again only after the host dealt with it.
// A STARTED event's leadership is borrowed (leadershipObj.borrowed): the
// elector keeps renewing, resigning and closing it; a handle taken from the
// event only reaches it.

// termData is what a TERM event carries.
type termData struct {
	kind   C.krabka_term_event_kind_t
	n      uint64
	token  C.krabka_token_t
	holder string
	reason C.krabka_stop_reason_t
}

type electorObj struct {
	e              *coord.Elector
	cancel         context.CancelFunc
	done           chan struct{} // closed when Run and the pump returned
	requestTimeout time.Duration // KRABKA_TIMEOUT_DEFAULT of set_eligible
}

func electorOf(p unsafe.Pointer) (*electorObj, error) { return object[*electorObj](p, kindElector) }

// termEvent turns a TermEvent into a queue event; release(n) lets the
// elector campaign again after its STOPPED of term n (run on dispose).
func termEvent(c *clientObj, release func(n uint64), tag uint64, te coord.TermEvent) *eventObj {
	ev := &eventObj{typ: C.KRABKA_EVENT_TERM, tag: tag, term: termData{
		kind: C.krabka_term_event_kind_t(te.Kind), n: te.Term, token: cToken(te.Token),
		holder: te.Holder.String(), reason: C.krabka_stop_reason_t(te.Reason)}}
	if !te.Deadline.IsZero() {
		ev.deadline = te.Deadline.UnixMilli()
	}
	switch te.Kind {
	case coord.TermStarted:
		if te.Leadership != nil {
			lo := newLeadershipObj(c, te.Leadership)
			lo.borrowed = true
			ev.leadership = lo
		}
	case coord.TermStopped:
		ev.fail(te.Err)
		n := te.Term
		ev.release = func() { release(n) }
	case coord.TermElectorStopped:
		ev.fail(te.Err) // nil (OK): krabka_elector_destroy ended the loop
	}
	return ev
}

//export kc_go_elector_new
func kc_go_elector_new(client *C.krabka_client_t, r *C.kc_cchar_t, role_len C.size_t, m *C.kc_cchar_t, member_len C.size_t, flags C.int, queue *C.krabka_queue_t, tag C.uint64_t, out **C.krabka_elector_t, errstr *C.char, errstr_size C.size_t) (rc C.krabka_err_t) {
	defer guard(&rc, errstr, errstr_size)
	return electorNew(client, r, role_len, m, member_len, false, nil, flags, queue, tag, out, errstr, errstr_size)
}

// electorNew is krabka_elector_new and krabka_elector_new_opts (withOpts:
// the acquire options of options, else the client's metadata;
// acquire_opts.go).
func electorNew(client *C.krabka_client_t, r *C.kc_cchar_t, role_len C.size_t, m *C.kc_cchar_t, member_len C.size_t, withOpts bool, options *C.kc_cacquire_options_t, flags C.int, queue *C.krabka_queue_t, tag C.uint64_t, out **C.krabka_elector_t, errstr *C.char, errstr_size C.size_t) C.krabka_err_t {
	if out != nil {
		*out = nil
	}
	var unused *C.krabka_leadership_t
	c, ro, me, err := acquireArgs(client, r, role_len, m, member_len, &unused)
	if err != nil {
		return fail(err, errstr, errstr_size)
	}
	acqOpts, err := acquireOptionsArg(c, ro, me, withOpts, options)
	if err != nil {
		return fail(err, errstr, errstr_size)
	}
	q, err := queueOf(unsafe.Pointer(queue))
	if err != nil {
		return fail(err, errstr, errstr_size)
	}
	if out == nil {
		return fail(invalidArg("krabka: krabka_elector_new: out is NULL"), errstr, errstr_size)
	}
	const known = C.KRABKA_ELECT_NO_RECAMPAIGN | C.KRABKA_ELECT_INELIGIBLE
	if flags&^known != 0 {
		return fail(invalidArg("krabka: krabka_elector_new: unknown flags 0x%x", int(flags&^known)), errstr, errstr_size)
	}
	opts := []coord.ElectOption{coord.ElectManualRelease(), coord.ElectAcquireOptions(acqOpts...)}
	if flags&C.KRABKA_ELECT_NO_RECAMPAIGN != 0 {
		opts = append(opts, coord.ElectRecampaign(false))
	}
	if flags&C.KRABKA_ELECT_INELIGIBLE != 0 {
		opts = append(opts, coord.ElectEligible(false))
	}
	el, err := coord.NewElector(c.c, ro, me, opts...)
	if err != nil {
		return fail(err, errstr, errstr_size)
	}
	ctx, cancel := context.WithCancel(context.Background())
	o := &electorObj{e: el, cancel: cancel, done: make(chan struct{}), requestTimeout: c.requestTimeout}
	// Start returns with the loop counted as running, so that
	// krabka_elector_state never reports a loop that is only about to
	// start; the loop's end (ELECTOR_STOPPED, the last event) ends the pump
	// through Next (ErrClosed).
	if err := el.Start(ctx); err != nil {
		cancel()
		return fail(err, errstr, errstr_size)
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			te, err := el.Next(context.Background())
			if err != nil {
				return
			}
			post(q, termEvent(c, el.Release, uint64(tag), te))
		}
	}()
	go func() { wg.Wait(); <-el.Done(); close(o.done) }()
	*out = (*C.krabka_elector_t)(newHandle(kindElector, o))
	return C.KRABKA_OK
}

//export kc_go_elector_set_eligible
func kc_go_elector_set_eligible(elector *C.krabka_elector_t, eligible C.int, timeout_ms C.int64_t, errstr *C.char, errstr_size C.size_t) (rc C.krabka_err_t) {
	defer guard(&rc, errstr, errstr_size)
	o, err := electorOf(unsafe.Pointer(elector))
	if err != nil {
		return fail(err, errstr, errstr_size)
	}
	ctx, cancel, err := callContext(timeout_ms, o.requestTimeout)
	if err != nil {
		return fail(err, errstr, errstr_size)
	}
	defer cancel()
	return finish(o.e.SetEligible(ctx, eligible != 0), errstr, errstr_size)
}

//export kc_go_elector_healthy
func kc_go_elector_healthy(elector *C.krabka_elector_t, healthy *C.int, reason *C.char, reason_size C.size_t) (rc C.krabka_err_t) {
	defer guard(&rc, reason, reason_size)
	o, err := electorOf(unsafe.Pointer(elector))
	if err != nil {
		return fail(err, reason, reason_size)
	}
	if healthy == nil {
		return fail(invalidArg("krabka: krabka_elector_healthy: healthy is NULL"), reason, reason_size)
	}
	if h := o.e.Healthy(); h != nil {
		*healthy = 0
		writeErrstr(reason, reason_size, h.Error())
	} else {
		*healthy = 1
		writeErrstr(reason, reason_size, "")
	}
	return C.KRABKA_OK
}

//export kc_go_elector_state
func kc_go_elector_state(elector *C.krabka_elector_t, out *C.krabka_elector_state_t) (rc C.krabka_err_t) {
	defer guardNoErrstr(&rc)
	return field(unsafe.Pointer(elector), kindElector, out, func(o *electorObj) C.krabka_elector_state_t {
		return C.krabka_elector_state_t(o.e.State())
	})
}

//export kc_go_elector_destroy
func kc_go_elector_destroy(elector *C.krabka_elector_t) (rc C.krabka_err_t) {
	defer guardNoErrstr(&rc)
	return destroy(unsafe.Pointer(elector), kindElector, func(a any) {
		o := a.(*electorObj)
		o.cancel()
		<-o.done
	})
}

// ---- TERM and LEASE accessors ----

//export kc_go_event_term_kind
func kc_go_event_term_kind(ev *C.kc_cevent_t, out *C.krabka_term_event_kind_t, errstr *C.char, errstr_size C.size_t) (rc C.krabka_err_t) {
	defer guard(&rc, errstr, errstr_size)
	return eventScalar(unsafe.Pointer(ev), out, "krabka_event_term_kind", "term event kind",
		func(e *eventObj) C.krabka_term_event_kind_t { return e.term.kind }, errstr, errstr_size, C.KRABKA_EVENT_TERM, C.KRABKA_EVENT_SET_TERM)
}

//export kc_go_event_term
func kc_go_event_term(ev *C.kc_cevent_t, out *C.uint64_t, errstr *C.char, errstr_size C.size_t) (rc C.krabka_err_t) {
	defer guard(&rc, errstr, errstr_size)
	return eventScalar(unsafe.Pointer(ev), out, "krabka_event_term", "term number",
		func(e *eventObj) C.uint64_t { return C.uint64_t(e.term.n) }, errstr, errstr_size, C.KRABKA_EVENT_TERM, C.KRABKA_EVENT_SET_TERM)
}

//export kc_go_event_token
func kc_go_event_token(ev *C.kc_cevent_t, out *C.krabka_token_t, errstr *C.char, errstr_size C.size_t) (rc C.krabka_err_t) {
	defer guard(&rc, errstr, errstr_size)
	return eventScalar(unsafe.Pointer(ev), out, "krabka_event_token", "token", func(e *eventObj) C.krabka_token_t {
		if e.typ == C.KRABKA_EVENT_GROUP {
			return e.group.token
		}
		return e.term.token
	}, errstr, errstr_size, C.KRABKA_EVENT_TERM, C.KRABKA_EVENT_GROUP, C.KRABKA_EVENT_SET_TERM)
}

//export kc_go_event_holder
func kc_go_event_holder(ev *C.kc_cevent_t, buf *C.char, buf_size C.size_t, n *C.size_t, errstr *C.char, errstr_size C.size_t) (rc C.krabka_err_t) {
	defer guard(&rc, errstr, errstr_size)
	e, err := eventOf(unsafe.Pointer(ev))
	if err != nil {
		return fail(err, errstr, errstr_size)
	}
	if e.typ != C.KRABKA_EVENT_TERM && e.typ != C.KRABKA_EVENT_SET_TERM {
		return fail(invalidArg("krabka: krabka_event_holder: a %s event carries no holder (only KRABKA_EVENT_TERM and KRABKA_EVENT_SET_TERM)", eventTypeName(e.typ)), errstr, errstr_size)
	}
	return nameOut("krabka_event_holder", "holder", e.term.holder, buf, buf_size, n, errstr, errstr_size)
}

//export kc_go_event_deadline
func kc_go_event_deadline(ev *C.kc_cevent_t, out *C.int64_t, errstr *C.char, errstr_size C.size_t) (rc C.krabka_err_t) {
	defer guard(&rc, errstr, errstr_size)
	return eventScalar(unsafe.Pointer(ev), out, "krabka_event_deadline", "lease deadline",
		func(e *eventObj) C.int64_t { return C.int64_t(e.deadline) }, errstr, errstr_size, C.KRABKA_EVENT_TERM, C.KRABKA_EVENT_LEASE, C.KRABKA_EVENT_GROUP, C.KRABKA_EVENT_SET_TERM)
}

//export kc_go_event_stop_reason
func kc_go_event_stop_reason(ev *C.kc_cevent_t, out *C.krabka_stop_reason_t, errstr *C.char, errstr_size C.size_t) (rc C.krabka_err_t) {
	defer guard(&rc, errstr, errstr_size)
	return eventScalar(unsafe.Pointer(ev), out, "krabka_event_stop_reason", "stop reason",
		func(e *eventObj) C.krabka_stop_reason_t { return e.term.reason }, errstr, errstr_size, C.KRABKA_EVENT_TERM, C.KRABKA_EVENT_SET_TERM)
}

//export kc_go_event_lease_kind
func kc_go_event_lease_kind(ev *C.kc_cevent_t, out *C.krabka_lease_event_kind_t, errstr *C.char, errstr_size C.size_t) (rc C.krabka_err_t) {
	defer guard(&rc, errstr, errstr_size)
	return eventScalar(unsafe.Pointer(ev), out, "krabka_event_lease_kind", "lease event kind",
		func(e *eventObj) C.krabka_lease_event_kind_t { return e.lease }, errstr, errstr_size, C.KRABKA_EVENT_LEASE)
}

// ---- lease events of a plain leadership ----

//export kc_go_leadership_events_async
func kc_go_leadership_events_async(leadership *C.krabka_leadership_t, queue *C.krabka_queue_t, tag C.uint64_t, errstr *C.char, errstr_size C.size_t) (rc C.krabka_err_t) {
	defer guard(&rc, errstr, errstr_size)
	l, err := leadershipOf(unsafe.Pointer(leadership))
	if err != nil {
		return fail(err, errstr, errstr_size)
	}
	q, err := queueOf(unsafe.Pointer(queue))
	if err != nil {
		return fail(err, errstr, errstr_size)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ch := l.l.Events(ctx)
	go func() {
		defer cancel()
		for le := range ch {
			ev := &eventObj{typ: C.KRABKA_EVENT_LEASE, tag: uint64(tag), lease: C.krabka_lease_event_kind_t(le.Kind),
				state: C.KRABKA_LEADERSHIP_ACTIVE}
			if !le.Deadline.IsZero() {
				ev.deadline = le.Deadline.UnixMilli()
			}
			if le.Kind == coord.LeadershipEnded {
				ev.state = stateCodes[le.State]
				ev.fail(le.Err)
			}
			if !q.push(ev) {
				return // the queue is gone: the subscription ends
			}
			if le.Kind == coord.LeadershipEnded {
				return
			}
		}
	}()
	return C.KRABKA_OK
}
