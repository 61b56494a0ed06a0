package main

/*
#include "kc_types.h"
*/
import "C"

import (
	"context"
	"math"
	"time"
	"unsafe"

	"github.com/krabka/krabka-coord/core/coord"
)

// leadershipObj is the object behind a krabka_leadership_t.
type leadershipObj struct {
	l              *coord.Leadership
	requestTimeout time.Duration
	sig            endSignal // krabka_leadership_event_fd (events.go)
}

func leadershipOf(p unsafe.Pointer) (*leadershipObj, error) {
	return object[*leadershipObj](p, kindLeadership)
}

// leadershipOut and leadershipField are objectOut and field for a
// krabka_leadership_t.
func leadershipOut[O any](leadership *C.kc_cleadership_t, out *O) (*leadershipObj, C.krabka_err_t) {
	return objectOut[*leadershipObj](unsafe.Pointer(leadership), kindLeadership, out)
}

func leadershipField[O any](leadership *C.kc_cleadership_t, out *O, get func(*coord.Leadership) O) C.krabka_err_t {
	return field(unsafe.Pointer(leadership), kindLeadership, out, func(l *leadershipObj) O { return get(l.l) })
}

// leadershipCall looks up the leadership and runs call on it within
// timeoutMs (KRABKA_TIMEOUT_DEFAULT: request.timeout.ms).
func leadershipCall(leadership *C.krabka_leadership_t, timeoutMs C.int64_t, call func(*coord.Leadership, context.Context) error) error {
	l, err := leadershipOf(unsafe.Pointer(leadership))
	if err != nil {
		return err
	}
	ctx, cancel, err := callContext(timeoutMs, l.requestTimeout)
	if err != nil {
		return err
	}
	defer cancel()
	return call(l.l, ctx)
}

// stateCodes maps core's leadership states onto the header's enum.
var stateCodes = map[coord.LeadershipState]C.krabka_leadership_state_t{
	coord.Active:   C.KRABKA_LEADERSHIP_ACTIVE,
	coord.Fenced:   C.KRABKA_LEADERSHIP_FENCED,
	coord.Expired:  C.KRABKA_LEADERSHIP_EXPIRED,
	coord.Resigned: C.KRABKA_LEADERSHIP_RESIGNED,
	coord.Closed:   C.KRABKA_LEADERSHIP_CLOSED,
}

//export kc_go_leadership_token
func kc_go_leadership_token(leadership *C.kc_cleadership_t, out *C.krabka_token_t) (rc C.krabka_err_t) {
	defer guardNoErrstr(&rc)
	return leadershipField(leadership, out, func(l *coord.Leadership) C.krabka_token_t { return cToken(l.Token()) })
}

//export kc_go_leadership_lease
func kc_go_leadership_lease(leadership *C.kc_cleadership_t, out *C.krabka_lease_t) (rc C.krabka_err_t) {
	defer guardNoErrstr(&rc)
	l, code := leadershipOut(leadership, out)
	if code == C.KRABKA_OK {
		cLease(out, l.l.Lease())
	}
	return code
}

//export kc_go_leadership_state
func kc_go_leadership_state(leadership *C.kc_cleadership_t, out *C.krabka_leadership_state_t) (rc C.krabka_err_t) {
	defer guardNoErrstr(&rc)
	l, code := leadershipOut(leadership, out)
	if code != C.KRABKA_OK {
		return code
	}
	s, ok := stateCodes[l.l.State()]
	if !ok {
		return C.KRABKA_ERR_INTERNAL
	}
	if s != C.KRABKA_LEADERSHIP_ACTIVE {
		l.signalEnd() // seen ended: its event fd is readable too
	}
	*out = s
	return C.KRABKA_OK
}

//export kc_go_leadership_renew_due
func kc_go_leadership_renew_due(leadership *C.kc_cleadership_t, due *C.int) (rc C.krabka_err_t) {
	defer guardNoErrstr(&rc)
	return leadershipField(leadership, due, func(l *coord.Leadership) C.int { return cBool(l.RenewDue()) })
}

//export kc_go_leadership_renew
func kc_go_leadership_renew(leadership *C.krabka_leadership_t, timeout_ms C.int64_t, errstr *C.char, errstr_size C.size_t) (rc C.krabka_err_t) {
	defer guard(&rc, errstr, errstr_size)
	return finish(leadershipCall(leadership, timeout_ms, (*coord.Leadership).Renew), errstr, errstr_size)
}

// goMessages copies the C messages into Go memory.
func goMessages(msgs *C.kc_cmessage_t, count C.size_t) ([]coord.Message, error) {
	if count == 0 {
		return nil, nil
	}
	if msgs == nil {
		return nil, invalidArg("krabka: messages is NULL with count %d", uint64(count))
	}
	if uint64(count) > math.MaxInt32 {
		return nil, invalidArg("krabka: count %d is out of range", uint64(count))
	}
	cm := unsafe.Slice(msgs, int(count))
	out := make([]coord.Message, len(cm))
	for i := range cm {
		m := &cm[i]
		if m.topic == nil {
			return nil, invalidArg("krabka: messages[%d].topic is NULL", i)
		}
		if m.partition < -1 {
			return nil, invalidArg("krabka: messages[%d].partition %d is out of range", i, int32(m.partition))
		}
		out[i] = coord.Message{Topic: C.GoString(m.topic), Partition: int32(m.partition)}
		if m.key != nil {
			b, err := cBytesU8(m.key, m.key_len, "key")
			if err != nil {
				return nil, err
			}
			out[i].Key = b
		} else if m.key_len != 0 {
			return nil, invalidArg("krabka: messages[%d].key is NULL with key_len %d", i, uint64(m.key_len))
		}
		if m.value != nil {
			b, err := cBytesU8(m.value, m.value_len, "value")
			if err != nil {
				return nil, err
			}
			out[i].Value = b
		} else if m.value_len != 0 {
			return nil, invalidArg("krabka: messages[%d].value is NULL with value_len %d", i, uint64(m.value_len))
		}
	}
	return out, nil
}

//export kc_go_leadership_produce
func kc_go_leadership_produce(leadership *C.krabka_leadership_t, messages *C.kc_cmessage_t, count C.size_t, timeout_ms C.int64_t, results *C.krabka_produce_result_t, errstr *C.char, errstr_size C.size_t) (rc C.krabka_err_t) {
	defer guard(&rc, errstr, errstr_size)
	msgs, err := goMessages(messages, count)
	if err != nil {
		return fail(err, errstr, errstr_size)
	}
	return produceMessages(leadership, msgs, count, timeout_ms, results, errstr, errstr_size)
}

// produceMessages is the guarded write of krabka_leadership_produce and
// krabka_leadership_produce_with_headers.
func produceMessages(leadership *C.krabka_leadership_t, msgs []coord.Message, count C.size_t, timeout_ms C.int64_t, results *C.krabka_produce_result_t, errstr *C.char, errstr_size C.size_t) C.krabka_err_t {
	l, err := leadershipOf(unsafe.Pointer(leadership))
	if err != nil {
		return fail(err, errstr, errstr_size)
	}
	ctx, cancel, err := callContext(timeout_ms, l.requestTimeout)
	if err != nil {
		return fail(err, errstr, errstr_size)
	}
	defer cancel()
	res, err := l.l.Produce(ctx, msgs...)
	if err != nil {
		return fail(err, errstr, errstr_size)
	}
	if results != nil && count > 0 {
		dst := unsafe.Slice(results, int(count))
		for i := range dst {
			if i < len(res) {
				dst[i] = C.krabka_produce_result_t{partition: C.int32_t(res[i].Partition), offset: C.int64_t(res[i].Offset)}
			} else {
				dst[i] = C.krabka_produce_result_t{partition: -1, offset: -1}
			}
		}
	}
	return C.KRABKA_OK
}

//export kc_go_leadership_resign
func kc_go_leadership_resign(leadership *C.krabka_leadership_t, timeout_ms C.int64_t, errstr *C.char, errstr_size C.size_t) (rc C.krabka_err_t) {
	defer guard(&rc, errstr, errstr_size)
	return finish(leadershipCall(leadership, timeout_ms, (*coord.Leadership).Resign), errstr, errstr_size)
}

//export kc_go_leadership_destroy
func kc_go_leadership_destroy(leadership *C.krabka_leadership_t) (rc C.krabka_err_t) {
	defer guardNoErrstr(&rc)
	return destroy(unsafe.Pointer(leadership), kindLeadership, func(o any) { o.(*leadershipObj).close() })
}
