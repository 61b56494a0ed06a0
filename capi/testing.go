package main

/*
#include "kc_types.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"time"
	"unsafe"

	"github.com/krabka/krabka-coord/core/coord"
	"github.com/krabka/krabka-coord/core/memtransport"
)

// The test aids of include/krabka_coord_testing.h: thin translations onto
// core/memtransport's named clusters and controls. capi/kc_testing.c holds
// the krabka_testing_* functions (the fork guard) that call these.

// testingClusterObj is the object behind a krabka_testing_cluster_t.
type testingClusterObj struct {
	c    *memtransport.Cluster
	name *C.char // krabka_testing_cluster_name's answer (freed by destroy)
}

func testingClusterOf(p unsafe.Pointer) (*testingClusterObj, error) {
	return object[*testingClusterObj](p, kindTestingCluster)
}

// asInvalidArg maps the invalid-input errors of memtransport (which match
// coord.ErrInvalidConfig) onto KRABKA_ERR_INVALID_ARG, the code of the
// testing header for bad arguments; other errors keep their code.
func asInvalidArg(err error) error {
	if errors.Is(err, coord.ErrInvalidConfig) {
		return invalidArg("krabka testing: %s", err.Error())
	}
	return err
}

//export kc_go_testing_cluster_new
func kc_go_testing_cluster_new(name *C.kc_cchar_t, name_len C.size_t, partitions C.int32_t, flags C.int, out **C.krabka_testing_cluster_t, errstr *C.char, errstr_size C.size_t) (rc C.krabka_err_t) {
	defer guard(&rc, errstr, errstr_size)
	b, err := cBytes((*C.char)(unsafe.Pointer(name)), name_len, "name")
	if err != nil {
		return fail(err, errstr, errstr_size)
	}
	if out == nil {
		return fail(invalidArg("krabka: out is NULL"), errstr, errstr_size)
	}
	if flags&^C.KRABKA_TESTING_REAL_TIME != 0 {
		return fail(invalidArg("krabka testing: unknown flags 0x%x (only KRABKA_TESTING_REAL_TIME)", int(flags)), errstr, errstr_size)
	}
	var opts []memtransport.ClusterOption
	if flags&C.KRABKA_TESTING_REAL_TIME != 0 {
		opts = append(opts, memtransport.WithRealTime())
	}
	c, err := memtransport.NewNamed(string(b), int32(partitions), opts...)
	if err != nil {
		return fail(asInvalidArg(err), errstr, errstr_size)
	}
	*out = (*C.krabka_testing_cluster_t)(newHandle(kindTestingCluster, &testingClusterObj{c: c, name: C.CString(c.Name())}))
	return C.KRABKA_OK
}

//export kc_go_testing_cluster_destroy
func kc_go_testing_cluster_destroy(cluster *C.krabka_testing_cluster_t) (rc C.krabka_err_t) {
	defer guardNoErrstr(&rc)
	return destroy(unsafe.Pointer(cluster), kindTestingCluster, func(o any) {
		t := o.(*testingClusterObj)
		t.c.Close()
		C.free(unsafe.Pointer(t.name))
	})
}

//export kc_go_testing_cluster_name
func kc_go_testing_cluster_name(cluster *C.kc_ctesting_cluster_t) (name *C.char) {
	defer swallow()
	t, err := testingClusterOf(unsafe.Pointer(cluster))
	if err != nil {
		return nil
	}
	return t.name
}

//export kc_go_testing_clock_now
func kc_go_testing_clock_now(cluster *C.kc_ctesting_cluster_t, now_ms *C.int64_t, errstr *C.char, errstr_size C.size_t) (rc C.krabka_err_t) {
	defer guard(&rc, errstr, errstr_size)
	t, err := testingClusterOf(unsafe.Pointer(cluster))
	if err != nil {
		return fail(err, errstr, errstr_size)
	}
	if now_ms == nil {
		return fail(invalidArg("krabka: now_ms is NULL"), errstr, errstr_size)
	}
	*now_ms = C.int64_t(t.c.NowMs())
	return C.KRABKA_OK
}

//export kc_go_testing_clock_advance
func kc_go_testing_clock_advance(cluster *C.krabka_testing_cluster_t, ms C.int64_t, errstr *C.char, errstr_size C.size_t) (rc C.krabka_err_t) {
	defer guard(&rc, errstr, errstr_size)
	t, err := testingClusterOf(unsafe.Pointer(cluster))
	if err != nil {
		return fail(err, errstr, errstr_size)
	}
	if ms < 0 {
		return fail(invalidArg("krabka_testing_clock_advance: ms %d is negative: the clock never goes backwards", int64(ms)), errstr, errstr_size)
	}
	d := time.Duration(int64(ms)) * time.Millisecond
	if int64(ms) > maxTimeoutMs {
		return fail(invalidArg("krabka_testing_clock_advance: ms %d is out of range (at most %d)", int64(ms), maxTimeoutMs), errstr, errstr_size)
	}
	return finish(asInvalidArg(t.c.Advance(d)), errstr, errstr_size)
}

//export kc_go_testing_cluster_set_available
func kc_go_testing_cluster_set_available(cluster *C.krabka_testing_cluster_t, available C.int, errstr *C.char, errstr_size C.size_t) (rc C.krabka_err_t) {
	defer guard(&rc, errstr, errstr_size)
	t, err := testingClusterOf(unsafe.Pointer(cluster))
	if err != nil {
		return fail(err, errstr, errstr_size)
	}
	t.c.SetAvailable(available != 0)
	return C.KRABKA_OK
}

// testingControl returns the controls of client, or an error naming why
// there are none: a bad handle, or a client that is not in-process.
func testingControl(client *C.krabka_client_t, fn string) (*memtransport.Client, error) {
	c, err := clientOf(unsafe.Pointer(client))
	if err != nil {
		return nil, err
	}
	k, err := memtransport.Control(c.c)
	if err != nil {
		return nil, invalidArg("%s: %s", fn, err.Error())
	}
	return k, nil
}

//export kc_go_testing_mint
func kc_go_testing_mint(client *C.krabka_client_t, r *C.kc_cchar_t, role_len C.size_t, out *C.krabka_token_t, errstr *C.char, errstr_size C.size_t) (rc C.krabka_err_t) {
	defer guard(&rc, errstr, errstr_size)
	k, err := testingControl(client, "krabka_testing_mint")
	if err != nil {
		return fail(err, errstr, errstr_size)
	}
	ro, err := role(r, role_len)
	if err != nil {
		return fail(err, errstr, errstr_size)
	}
	if out == nil {
		return fail(invalidArg("krabka: out is NULL"), errstr, errstr_size)
	}
	tok, err := k.Mint(ro)
	if err != nil {
		return fail(err, errstr, errstr_size)
	}
	*out = cToken(tok)
	return C.KRABKA_OK
}

// topicArgs checks the arguments the topic reads share: the cluster, the
// topic, the partition.
func topicArgs(cluster *C.kc_ctesting_cluster_t, topic *C.kc_cchar_t, partition C.int32_t) (*testingClusterObj, string, error) {
	t, err := testingClusterOf(unsafe.Pointer(cluster))
	if err != nil {
		return nil, "", err
	}
	if topic == nil {
		return nil, "", invalidArg("krabka: topic is NULL")
	}
	name := C.GoString((*C.char)(unsafe.Pointer(topic)))
	if name == "" {
		return nil, "", invalidArg("krabka: topic is empty")
	}
	if n := t.c.PartitionCount(); partition < 0 || int32(partition) >= n {
		return nil, "", invalidArg("krabka testing: partition %d of %q is out of range (the cluster has %d partitions per topic)", int32(partition), name, n)
	}
	return t, name, nil
}

//export kc_go_testing_topic_count
func kc_go_testing_topic_count(cluster *C.kc_ctesting_cluster_t, topic *C.kc_cchar_t, partition C.int32_t, count *C.int64_t, errstr *C.char, errstr_size C.size_t) (rc C.krabka_err_t) {
	defer guard(&rc, errstr, errstr_size)
	t, name, err := topicArgs(cluster, topic, partition)
	if err != nil {
		return fail(err, errstr, errstr_size)
	}
	if count == nil {
		return fail(invalidArg("krabka: count is NULL"), errstr, errstr_size)
	}
	*count = C.int64_t(len(t.c.Records(name, int32(partition))))
	return C.KRABKA_OK
}

//export kc_go_testing_topic_record
func kc_go_testing_topic_record(cluster *C.kc_ctesting_cluster_t, topic *C.kc_cchar_t, partition C.int32_t, index C.int64_t, offset *C.int64_t, value *C.uint8_t, value_size C.size_t, value_len *C.size_t, is_null *C.int, errstr *C.char, errstr_size C.size_t) (rc C.krabka_err_t) {
	defer guard(&rc, errstr, errstr_size)
	t, name, err := topicArgs(cluster, topic, partition)
	if err != nil {
		return fail(err, errstr, errstr_size)
	}
	if value_len == nil {
		return fail(invalidArg("krabka: value_len is NULL"), errstr, errstr_size)
	}
	recs := t.c.Records(name, int32(partition))
	if index < 0 || int64(index) >= int64(len(recs)) {
		return fail(invalidArg("krabka testing: index %d is out of range: partition %d of %q has %d committed records", int64(index), int32(partition), name, len(recs)), errstr, errstr_size)
	}
	r := recs[index]
	*value_len = C.size_t(len(r.Value))
	if uint64(value_size) < uint64(len(r.Value)) || (value == nil && len(r.Value) > 0) {
		return fail(&cError{C.KRABKA_ERR_BUFFER_TOO_SMALL, fmt.Sprintf("krabka testing: the value has %d bytes, the buffer %d", len(r.Value), uint64(value_size))}, errstr, errstr_size)
	}
	if len(r.Value) > 0 {
		copy(unsafe.Slice((*byte)(unsafe.Pointer(value)), len(r.Value)), r.Value)
	}
	if offset != nil {
		*offset = C.int64_t(r.Offset)
	}
	if is_null != nil {
		*is_null = 0
		if r.Value == nil {
			*is_null = 1
		}
	}
	return C.KRABKA_OK
}

//export kc_go_testing_client_set_cut
func kc_go_testing_client_set_cut(client *C.krabka_client_t, cut C.int, errstr *C.char, errstr_size C.size_t) (rc C.krabka_err_t) {
	defer guard(&rc, errstr, errstr_size)
	k, err := testingControl(client, "krabka_testing_client_set_cut")
	if err != nil {
		return fail(err, errstr, errstr_size)
	}
	if cut != 0 {
		err = k.Cut()
	} else {
		err = k.Heal()
	}
	return finish(asInvalidArg(err), errstr, errstr_size)
}

//export kc_go_testing_client_set_paused
func kc_go_testing_client_set_paused(client *C.krabka_client_t, paused C.int, errstr *C.char, errstr_size C.size_t) (rc C.krabka_err_t) {
	defer guard(&rc, errstr, errstr_size)
	k, err := testingControl(client, "krabka_testing_client_set_paused")
	if err != nil {
		return fail(err, errstr, errstr_size)
	}
	if paused != 0 {
		err = k.Pause()
	} else {
		err = k.Resume()
	}
	return finish(asInvalidArg(err), errstr, errstr_size)
}

//export kc_go_testing_client_kill
func kc_go_testing_client_kill(client *C.krabka_client_t, errstr *C.char, errstr_size C.size_t) (rc C.krabka_err_t) {
	defer guard(&rc, errstr, errstr_size)
	k, err := testingControl(client, "krabka_testing_client_kill")
	if err != nil {
		return fail(err, errstr, errstr_size)
	}
	k.Kill()
	return C.KRABKA_OK
}
