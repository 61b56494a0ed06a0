package main

/*
#include "kc_types.h"
*/
import "C"

import (
	"context"
	"fmt"
	"math"
	"time"
	"unsafe"

	"github.com/krabka/krabka-coord/core/coord"
)

// leadershipObj is the object behind a krabka_leadership_t.
type leadershipObj struct {
	l              *coord.Leadership
	requestTimeout time.Duration
	sig            endSignal // krabka_leadership_event_fd (leadership_end.go)
	// borrowed: the leadership of an elector's term (elector.go); closing
	// the handle leaves the leadership to the elector.
	borrowed bool
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

// Messages (krabka_message_t) carry their size: the struct as the caller
// was compiled. This library reads the fields of its own header's struct
// and ignores what a later header appends; it steps through an array by
// messages[0].size.
const (
	minMessageSize = C.sizeof_krabka_message_t // ABI 2's struct: every field
	maxMessageSize = 4096                      // larger is an uninitialised size, not a struct
	maxHeaders     = 1 << 20                   // record headers in one call
)

var messageAlign = unsafe.Alignof(C.krabka_message_t{})

// goMessages copies the C messages (and their headers) into Go memory,
// checking what the C side can get wrong: sizes, NULL pointers with
// lengths, NULL header keys. The rules on the values (topic names,
// partitions, reserved header names) are core's (coord.CheckMessages,
// which Produce runs too).
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
	stride := uintptr(msgs.size)
	if stride < minMessageSize || stride > maxMessageSize || stride%messageAlign != 0 {
		return nil, invalidArg("krabka: messages[0].size is %d: it must be sizeof(krabka_message_t) as compiled (%d for this library's header, at most %d, a multiple of %d; start from KRABKA_MESSAGE_INIT)",
			uint64(stride), minMessageSize, maxMessageSize, messageAlign)
	}
	base := unsafe.Pointer(msgs)
	out := make([]coord.Message, int(count))
	headers := 0
	for i := range out {
		m := (*C.krabka_message_t)(unsafe.Add(base, uintptr(i)*stride))
		if uintptr(m.size) != stride {
			return nil, invalidArg("krabka: messages[%d].size is %d, messages[0].size %d: every message of an array must have the same size", i, uint64(m.size), uint64(stride))
		}
		if m.topic == nil {
			return nil, invalidArg("krabka: messages[%d].topic is NULL", i)
		}
		out[i] = coord.Message{Topic: C.GoString(m.topic), Partition: int32(m.partition)}
		var err error
		if out[i].Key, err = msgBytes(m.key, m.key_len, i, "key"); err != nil {
			return nil, err
		}
		if out[i].Value, err = msgBytes(m.value, m.value_len, i, "value"); err != nil {
			return nil, err
		}
		if m.header_count == 0 {
			continue
		}
		if m.headers == nil {
			return nil, invalidArg("krabka: messages[%d].headers is NULL with header_count %d", i, uint64(m.header_count))
		}
		if uint64(m.header_count) > uint64(maxHeaders-headers) {
			return nil, invalidArg("krabka: messages[%d].header_count %d: more than %d headers in one call", i, uint64(m.header_count), maxHeaders)
		}
		headers += int(m.header_count)
		hs := unsafe.Slice(m.headers, int(m.header_count))
		out[i].Headers = make([]coord.Header, len(hs))
		for j, h := range hs {
			if h.key == nil {
				return nil, invalidArg("krabka: messages[%d].headers[%d].key is NULL", i, j)
			}
			v, err := optBytes((*C.kc_cuint8_t)(unsafe.Pointer(h.value)), h.value_len, fmt.Sprintf("messages[%d].headers[%d].value", i, j))
			if err != nil {
				return nil, err
			}
			out[i].Headers[j] = coord.Header{Key: C.GoString(h.key), Value: v}
		}
	}
	return out, nil
}

// msgBytes copies a message's key or value: NULL (with length 0) is a null
// key or value.
func msgBytes(p *C.kc_cuint8_t, n C.size_t, i int, what string) ([]byte, error) {
	if p == nil {
		if n != 0 {
			return nil, invalidArg("krabka: messages[%d].%s is NULL with %s_len %d", i, what, what, uint64(n))
		}
		return nil, nil
	}
	return cBytesU8(p, n, fmt.Sprintf("messages[%d].%s", i, what))
}

//export kc_go_leadership_produce
func kc_go_leadership_produce(leadership *C.krabka_leadership_t, messages *C.kc_cmessage_t, count C.size_t, timeout_ms C.int64_t, results *C.krabka_produce_result_t, errstr *C.char, errstr_size C.size_t) (rc C.krabka_err_t) {
	defer guard(&rc, errstr, errstr_size)
	l, err := leadershipOf(unsafe.Pointer(leadership))
	if err != nil {
		return fail(err, errstr, errstr_size)
	}
	msgs, err := goMessages(messages, count)
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
	putResults(results, count, res)
	return C.KRABKA_OK
}

// putResults copies where each of count messages landed into results (if
// not NULL); entries without a result get partition and offset -1.
func putResults(results *C.krabka_produce_result_t, count C.size_t, res []coord.ProduceResult) {
	if results == nil || count == 0 {
		return
	}
	dst := unsafe.Slice(results, int(count))
	for i := range dst {
		if i < len(res) {
			dst[i] = C.krabka_produce_result_t{partition: C.int32_t(res[i].Partition), offset: C.int64_t(res[i].Offset)}
		} else {
			dst[i] = C.krabka_produce_result_t{partition: -1, offset: -1}
		}
	}
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
