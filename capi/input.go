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

	"github.com/krabka/krabka-coord/core/coord"
)

// Pipelines (docs/PIPELINES.md): an input read under a leadership
// (krabka_input_t), the records of one poll (krabka_records_t) and the
// guarded write that carries consumed offsets. Thin translation: the rules
// on offsets (a partition that was not read, an offset that goes
// backwards) are core's (Leadership.ProduceOffsets); this file checks what
// the C side can get wrong (NULL, lengths, UTF-8) and names the argument.

// inputObj is the object behind a krabka_input_t.
type inputObj struct {
	in             *coord.Input
	requestTimeout time.Duration
}

// recordsObj is the object behind a krabka_records_t: the records in Go
// memory and, from the first krabka_records_get, one C allocation holding
// every record's krabka_input_record_t and the bytes its pointers point at.
type recordsObj struct {
	recs []coord.InputRecord

	mu    sync.Mutex
	arena unsafe.Pointer // C.malloc'ed; nil until first use or when freed
	cRecs []C.krabka_input_record_t
}

const (
	maxPoll   = 1000000 // records in one poll
	maxTopics = 1 << 16 // topics in one consume
	maxOffset = 1 << 20 // offsets in one produce
)

func inputOf(p unsafe.Pointer) (*inputObj, error) { return object[*inputObj](p, kindInput) }

// goTopics copies the topic names of a consume, naming the bad one.
func goTopics(topics **C.char, count C.size_t) ([]string, error) {
	if count == 0 {
		return nil, invalidArg("krabka: topic_count is 0: name at least one topic")
	}
	if topics == nil {
		return nil, invalidArg("krabka: topics is NULL with topic_count %d", uint64(count))
	}
	if uint64(count) > maxTopics {
		return nil, invalidArg("krabka: topic_count %d is more than %d", uint64(count), maxTopics)
	}
	out := make([]string, int(count))
	for i, p := range unsafe.Slice(topics, int(count)) {
		if p == nil {
			return nil, invalidArg("krabka: topics[%d] is NULL", i)
		}
		n := C.strnlen(p, C.KRABKA_NAME_MAX+1)
		if n > C.KRABKA_NAME_MAX {
			return nil, invalidArg("krabka: topics[%d] is longer than %d bytes", i, C.KRABKA_NAME_MAX)
		}
		t, err := topicName(C.GoBytes(unsafe.Pointer(p), C.int(n)), "topics", i)
		if err != nil {
			return nil, err
		}
		out[i] = t
	}
	return out, nil
}

// topicName checks a topic name's bytes (1 to KRABKA_NAME_MAX of UTF-8);
// what[i] names it. The legal characters are core's rule.
func topicName(b []byte, what string, i int) (string, error) {
	if len(b) == 0 {
		return "", invalidArg("krabka: %s[%d] is an empty topic name", what, i)
	}
	if !utf8.Valid(b) {
		return "", invalidArg("krabka: %s[%d] (topic %q) is not valid UTF-8", what, i, b)
	}
	return string(b), nil
}

// goOffsets copies the offsets of a produce_offsets, naming the bad one.
func goOffsets(offsets *C.kc_coffset_t, count C.size_t) ([]coord.Offset, error) {
	if count == 0 {
		return nil, nil
	}
	if offsets == nil {
		return nil, invalidArg("krabka: offsets is NULL with offset_count %d", uint64(count))
	}
	if uint64(count) > maxOffset {
		return nil, invalidArg("krabka: offset_count %d is more than %d", uint64(count), maxOffset)
	}
	out := make([]coord.Offset, int(count))
	for i, o := range unsafe.Slice(offsets, int(count)) {
		if o.topic_len > C.KRABKA_NAME_MAX {
			return nil, invalidArg("krabka: offsets[%d].topic_len %d is more than %d bytes", i, uint32(o.topic_len), C.KRABKA_NAME_MAX)
		}
		b := C.GoBytes(unsafe.Pointer(&o.topic[0]), C.int(o.topic_len))
		t, err := topicName(b, "offsets", i)
		if err != nil {
			return nil, err
		}
		if o.partition < 0 {
			return nil, invalidArg("krabka: offsets[%d].partition %d is negative", i, int32(o.partition))
		}
		if o.offset < 0 {
			return nil, invalidArg("krabka: offsets[%d].offset %d is negative", i, int64(o.offset))
		}
		out[i] = coord.Offset{Topic: t, Partition: int32(o.partition), Offset: int64(o.offset)}
	}
	return out, nil
}

// putOffsets copies offs into out[0 .. min(capacity, len)) and writes the
// count (krabka_input_position, krabka_input_committed).
func putOffsets(input *C.kc_cinput_t, out *C.krabka_offset_t, capacity C.size_t, count *C.size_t, get func(*coord.Input) []coord.Offset) C.krabka_err_t {
	in, code := objectOut[*inputObj](unsafe.Pointer(input), kindInput, count)
	if code != C.KRABKA_OK {
		return code
	}
	if out == nil && capacity != 0 {
		return C.KRABKA_ERR_INVALID_ARG
	}
	offs := get(in.in)
	*count = C.size_t(len(offs))
	n := len(offs)
	if uint64(capacity) < uint64(n) {
		n = int(capacity)
	}
	if n == 0 {
		return C.KRABKA_OK
	}
	dst := unsafe.Slice(out, n)
	for i := range dst {
		dst[i].topic_len = putName(&dst[i].topic, offs[i].Topic)
		dst[i].partition = C.int32_t(offs[i].Partition)
		dst[i].offset = C.int64_t(offs[i].Offset)
	}
	return C.KRABKA_OK
}

// consumeArgs checks what consume and its async form share.
func consumeArgs(leadership *C.krabka_leadership_t, topics **C.kc_cchar_t, count C.size_t) (*leadershipObj, []string, error) {
	l, err := leadershipOf(unsafe.Pointer(leadership))
	if err != nil {
		return nil, nil, err
	}
	ts, err := goTopics((**C.char)(unsafe.Pointer(topics)), count)
	if err != nil {
		return nil, nil, err
	}
	return l, ts, nil
}

//export kc_go_client_pipeline_group
func kc_go_client_pipeline_group(client *C.krabka_client_t, r *C.kc_cchar_t, role_len C.size_t, buf *C.char, buf_size C.size_t, n *C.size_t, errstr *C.char, errstr_size C.size_t) (rc C.krabka_err_t) {
	defer guard(&rc, errstr, errstr_size)
	c, err := clientOf(unsafe.Pointer(client))
	if err != nil {
		return fail(err, errstr, errstr_size)
	}
	ro, err := role(r, role_len)
	if err != nil {
		return fail(err, errstr, errstr_size)
	}
	g := c.c.PipelineGroup(ro)
	if n != nil {
		*n = C.size_t(len(g))
	}
	if buf == nil || uint64(buf_size) < uint64(len(g))+1 {
		return fail(&cError{C.KRABKA_ERR_BUFFER_TOO_SMALL, fmt.Sprintf("krabka: buf_size %d is less than the group id's %d bytes (with the NUL)", uint64(buf_size), len(g)+1)}, errstr, errstr_size)
	}
	putString(buf, g)
	return C.KRABKA_OK
}

//export kc_go_leadership_consume
func kc_go_leadership_consume(leadership *C.krabka_leadership_t, topics **C.kc_cchar_t, topic_count C.size_t, timeout_ms C.int64_t, out **C.krabka_input_t, errstr *C.char, errstr_size C.size_t) (rc C.krabka_err_t) {
	defer guard(&rc, errstr, errstr_size)
	if out == nil {
		return fail(invalidArg("krabka: out is NULL"), errstr, errstr_size)
	}
	*out = nil
	l, ts, err := consumeArgs(leadership, topics, topic_count)
	if err != nil {
		return fail(err, errstr, errstr_size)
	}
	return finish(withTimeout(timeout_ms, l.requestTimeout, func(ctx context.Context) error {
		in, err := l.l.Consume(ctx, ts...)
		if err == nil {
			*out = (*C.krabka_input_t)(newHandle(kindInput, &inputObj{in: in, requestTimeout: l.requestTimeout}))
		}
		return err
	}), errstr, errstr_size)
}

// withTimeout runs call with the context of a blocking export's timeout_ms
// (KRABKA_TIMEOUT_DEFAULT: def); a negative timeout_ms is its error.
func withTimeout(timeoutMs C.int64_t, def time.Duration, call func(context.Context) error) error {
	ctx, cancel, err := callContext(timeoutMs, def)
	if err != nil {
		return err
	}
	defer cancel()
	return call(ctx)
}

//export kc_go_leadership_consume_async
func kc_go_leadership_consume_async(leadership *C.krabka_leadership_t, topics **C.kc_cchar_t, topic_count C.size_t, timeout_ms C.int64_t, queue *C.krabka_queue_t, tag C.uint64_t, errstr *C.char, errstr_size C.size_t) (rc C.krabka_err_t) {
	defer guard(&rc, errstr, errstr_size)
	l, ts, err := consumeArgs(leadership, topics, topic_count)
	if err != nil {
		return fail(err, errstr, errstr_size)
	}
	return finish(leadershipAsync(l, timeout_ms, queue, C.KRABKA_EVENT_CONSUME, tag, func(cl *coord.Leadership, ctx context.Context, ev *eventObj) error {
		in, err := cl.Consume(ctx, ts...)
		if err == nil {
			ev.input = &inputObj{in: in, requestTimeout: l.requestTimeout}
		}
		return err
	}), errstr, errstr_size)
}

//export kc_go_event_take_input
func kc_go_event_take_input(ev *C.krabka_event_t, out **C.krabka_input_t, errstr *C.char, errstr_size C.size_t) (rc C.krabka_err_t) {
	defer guard(&rc, errstr, errstr_size)
	return takeHandle(ev, (*unsafe.Pointer)(unsafe.Pointer(out)), errstr, errstr_size, "krabka_event_take_input", "input", C.KRABKA_EVENT_CONSUME,
		func(e *eventObj) **inputObj { return &e.input }, kindInput)
}

// takeHandle is a krabka_event_take_* of what an event of type typ holds in
// *slot(e): a new handle of kind in *out (NULL when the call failed or it
// was taken already).
func takeHandle[T any](ev *C.krabka_event_t, out *unsafe.Pointer, errstr *C.char, errstr_size C.size_t, fn, what string, typ C.krabka_event_type_t, slot func(*eventObj) **T, kind handleKind) C.krabka_err_t {
	e, err := eventData(unsafe.Pointer(ev), out, fn, what, typ)
	if err != nil {
		return fail(err, errstr, errstr_size)
	}
	*out = nil
	if v := take(e, slot(e)); v != nil {
		*out = newHandle(kind, v)
	}
	return C.KRABKA_OK
}

// pollArgs checks what poll and its async form share.
func pollArgs(input *C.krabka_input_t, max C.size_t) (*inputObj, error) {
	in, err := inputOf(unsafe.Pointer(input))
	if err != nil {
		return nil, err
	}
	if max == 0 || uint64(max) > maxPoll {
		return nil, invalidArg("krabka: max %d is out of range (1 to %d records)", uint64(max), maxPoll)
	}
	return in, nil
}

//export kc_go_input_poll
func kc_go_input_poll(input *C.krabka_input_t, max C.size_t, timeout_ms C.int64_t, out **C.krabka_records_t, errstr *C.char, errstr_size C.size_t) (rc C.krabka_err_t) {
	defer guard(&rc, errstr, errstr_size)
	if out == nil {
		return fail(invalidArg("krabka: out is NULL"), errstr, errstr_size)
	}
	*out = nil
	in, err := pollArgs(input, max)
	if err != nil {
		return fail(err, errstr, errstr_size)
	}
	return finish(withTimeout(timeout_ms, in.requestTimeout, func(ctx context.Context) error {
		recs, err := in.in.Poll(ctx, int(max))
		if err == nil {
			*out = (*C.krabka_records_t)(newHandle(kindRecords, &recordsObj{recs: recs}))
		}
		return err
	}), errstr, errstr_size)
}

//export kc_go_input_poll_async
func kc_go_input_poll_async(input *C.krabka_input_t, max C.size_t, timeout_ms C.int64_t, queue *C.krabka_queue_t, tag C.uint64_t, errstr *C.char, errstr_size C.size_t) (rc C.krabka_err_t) {
	defer guard(&rc, errstr, errstr_size)
	in, err := pollArgs(input, max)
	if err != nil {
		return fail(err, errstr, errstr_size)
	}
	q, ctx, cancel, err := asyncContext(queue, timeout_ms, in.requestTimeout)
	if err != nil {
		return fail(err, errstr, errstr_size)
	}
	goPost(q, C.KRABKA_EVENT_POLL, tag, cancel, func(ev *eventObj) error {
		recs, err := in.in.Poll(ctx, int(max))
		if err == nil {
			ev.records = &recordsObj{recs: recs}
		}
		return err
	})
	return C.KRABKA_OK
}

//export kc_go_event_take_records
func kc_go_event_take_records(ev *C.krabka_event_t, out **C.krabka_records_t, errstr *C.char, errstr_size C.size_t) (rc C.krabka_err_t) {
	defer guard(&rc, errstr, errstr_size)
	return takeHandle(ev, (*unsafe.Pointer)(unsafe.Pointer(out)), errstr, errstr_size, "krabka_event_take_records", "records", C.KRABKA_EVENT_POLL,
		func(e *eventObj) **recordsObj { return &e.records }, kindRecords)
}

//export kc_go_records_count
func kc_go_records_count(records *C.kc_crecords_t, count *C.size_t) (rc C.krabka_err_t) {
	defer guardNoErrstr(&rc)
	return field(unsafe.Pointer(records), kindRecords, count, func(r *recordsObj) C.size_t { return C.size_t(len(r.recs)) })
}

//export kc_go_records_get
func kc_go_records_get(records *C.kc_crecords_t, index C.size_t, out *C.krabka_input_record_t) (rc C.krabka_err_t) {
	defer guardNoErrstr(&rc)
	r, code := objectOut[*recordsObj](unsafe.Pointer(records), kindRecords, out)
	if code != C.KRABKA_OK {
		return code
	}
	if uint64(index) >= uint64(len(r.recs)) {
		return C.KRABKA_ERR_INVALID_ARG
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cRecs == nil {
		if !r.build() {
			return C.KRABKA_ERR_INTERNAL // out of C memory
		}
	}
	*out = r.cRecs[index]
	return C.KRABKA_OK
}

//export kc_go_records_destroy
func kc_go_records_destroy(records *C.krabka_records_t) (rc C.krabka_err_t) {
	defer guardNoErrstr(&rc)
	return destroy(unsafe.Pointer(records), kindRecords, func(o any) { o.(*recordsObj).free() })
}

// build lays the records out in one C allocation: the record structs,
// then every header array, then the bytes (topics and header keys with a
// NUL). Called under r.mu; false when malloc failed.
func (r *recordsObj) build() bool {
	recSize := unsafe.Sizeof(C.krabka_input_record_t{})
	hdrSize := unsafe.Sizeof(C.krabka_header_t{})
	headers, bytes := 0, 0
	for _, rec := range r.recs {
		headers += len(rec.Headers)
		bytes += len(rec.Topic) + 1 + len(rec.Key) + len(rec.Value)
		for _, h := range rec.Headers {
			bytes += len(h.Key) + 1 + len(h.Value)
		}
	}
	total := uintptr(len(r.recs))*recSize + uintptr(headers)*hdrSize + uintptr(bytes)
	if total == 0 {
		total = 1
	}
	arena := C.malloc(C.size_t(total))
	if arena == nil {
		return false
	}
	r.arena = arena
	r.cRecs = unsafe.Slice((*C.krabka_input_record_t)(arena), len(r.recs))
	hdrAt := unsafe.Add(arena, uintptr(len(r.recs))*recSize)
	byteAt := unsafe.Add(hdrAt, uintptr(headers)*hdrSize)
	put := func(b []byte, nul bool) unsafe.Pointer {
		p := byteAt
		n := copy(unsafe.Slice((*byte)(p), len(b)+1), b)
		if nul {
			*(*byte)(unsafe.Add(p, n)) = 0
			n++
		}
		byteAt = unsafe.Add(byteAt, n)
		return p
	}
	for i, rec := range r.recs {
		c := &r.cRecs[i]
		c.topic = (*C.kc_cchar_t)(put([]byte(rec.Topic), true))
		c.partition = C.int32_t(rec.Partition)
		c.offset = C.int64_t(rec.Offset)
		c.key, c.key_len = nil, 0
		if rec.Key != nil {
			c.key, c.key_len = (*C.kc_cuint8_t)(put(rec.Key, false)), C.size_t(len(rec.Key))
		}
		c.value, c.value_len = nil, 0
		if rec.Value != nil {
			c.value, c.value_len = (*C.kc_cuint8_t)(put(rec.Value, false)), C.size_t(len(rec.Value))
		}
		c.headers, c.header_count = nil, 0
		if len(rec.Headers) > 0 {
			hs := unsafe.Slice((*C.krabka_header_t)(hdrAt), len(rec.Headers))
			for j, h := range rec.Headers {
				hs[j].key = (*C.kc_cchar_t)(put([]byte(h.Key), true))
				hs[j].value = (*C.kc_cuint8_t)(put(h.Value, false))
				hs[j].value_len = C.size_t(len(h.Value))
			}
			c.headers, c.header_count = (*C.kc_cheader_t)(hdrAt), C.size_t(len(rec.Headers))
			hdrAt = unsafe.Add(hdrAt, uintptr(len(rec.Headers))*hdrSize)
		}
	}
	return true
}

// free releases the C allocation (records destroyed or dropped with their
// event).
func (r *recordsObj) free() {
	r.mu.Lock()
	a := r.arena
	r.arena, r.cRecs = nil, nil
	r.mu.Unlock()
	if a != nil {
		C.free(a)
	}
}

//export kc_go_input_position
func kc_go_input_position(input *C.kc_cinput_t, out *C.krabka_offset_t, capacity C.size_t, count *C.size_t) (rc C.krabka_err_t) {
	defer guardNoErrstr(&rc)
	return putOffsets(input, out, capacity, count, (*coord.Input).Position)
}

//export kc_go_input_committed
func kc_go_input_committed(input *C.kc_cinput_t, out *C.krabka_offset_t, capacity C.size_t, count *C.size_t) (rc C.krabka_err_t) {
	defer guardNoErrstr(&rc)
	return putOffsets(input, out, capacity, count, (*coord.Input).Committed)
}

//export kc_go_input_destroy
func kc_go_input_destroy(input *C.krabka_input_t) (rc C.krabka_err_t) {
	defer guardNoErrstr(&rc)
	return destroy(unsafe.Pointer(input), kindInput, func(o any) { o.(*inputObj).in.Close() })
}

// produceOffsetsArgs checks what produce_offsets and its async form share:
// the leadership, the offsets, the messages (core's rules on messages too,
// so that the async form fails before anything is posted).
func produceOffsetsArgs(leadership *C.krabka_leadership_t, offsets *C.kc_coffset_t, offsetCount C.size_t, messages *C.kc_cmessage_t, count C.size_t) (*leadershipObj, []coord.Offset, []coord.Message, error) {
	l, err := leadershipOf(unsafe.Pointer(leadership))
	if err != nil {
		return nil, nil, nil, err
	}
	offs, err := goOffsets(offsets, offsetCount)
	if err != nil {
		return nil, nil, nil, err
	}
	msgs, err := goMessages(messages, count)
	if err != nil {
		return nil, nil, nil, err
	}
	if err := coord.CheckMessages(msgs); err != nil {
		return nil, nil, nil, err
	}
	return l, offs, msgs, nil
}

//export kc_go_leadership_produce_offsets
func kc_go_leadership_produce_offsets(leadership *C.krabka_leadership_t, offsets *C.kc_coffset_t, offset_count C.size_t, messages *C.kc_cmessage_t, count C.size_t, timeout_ms C.int64_t, results *C.krabka_produce_result_t, errstr *C.char, errstr_size C.size_t) (rc C.krabka_err_t) {
	defer guard(&rc, errstr, errstr_size)
	l, offs, msgs, err := produceOffsetsArgs(leadership, offsets, offset_count, messages, count)
	if err != nil {
		return fail(err, errstr, errstr_size)
	}
	return finish(withTimeout(timeout_ms, l.requestTimeout, func(ctx context.Context) error {
		res, err := l.l.ProduceOffsets(ctx, offs, msgs...)
		if err == nil {
			putResults(results, count, res)
		}
		return err
	}), errstr, errstr_size)
}

//export kc_go_leadership_produce_offsets_async
func kc_go_leadership_produce_offsets_async(leadership *C.krabka_leadership_t, offsets *C.kc_coffset_t, offset_count C.size_t, messages *C.kc_cmessage_t, count C.size_t, timeout_ms C.int64_t, queue *C.krabka_queue_t, tag C.uint64_t, errstr *C.char, errstr_size C.size_t) (rc C.krabka_err_t) {
	defer guard(&rc, errstr, errstr_size)
	l, offs, msgs, err := produceOffsetsArgs(leadership, offsets, offset_count, messages, count)
	if err != nil {
		return fail(err, errstr, errstr_size)
	}
	return finish(leadershipAsync(l, timeout_ms, queue, C.KRABKA_EVENT_PRODUCE, tag, func(cl *coord.Leadership, ctx context.Context, ev *eventObj) error {
		res, err := cl.ProduceOffsets(ctx, offs, msgs...)
		if err == nil {
			ev.results = res
		}
		return err
	}), errstr, errstr_size)
}
