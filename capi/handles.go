package main

/*
#include "kc_types.h"
*/
import "C"

import (
	"sync"
	"unsafe"

	pointer "github.com/mattn/go-pointer"
)

// Handles.
//
// Every object handed to C (a configuration, a client, a leadership, a
// describe result, a queue, a watch, a queue event, a watch event, a
// verifier, an input, records) is a *handle registered with go-pointer, which mints a
// 1-byte C allocation as the handle's address and maps it to the Go value. No
// Go pointer ever crosses the boundary. Every export looks the address up,
// checks the kind, and answers KRABKA_ERR_INVALID_HANDLE for NULL, an unknown
// address, a destroyed handle or another kind.
//
// Stale handles (ABA): go-pointer frees the 1-byte allocation on Unref, after
// which malloc may hand the same address to a new handle, and a stale handle
// would then silently alias it. To make that unlikely, destroy does not Unref
// at once: the destroyed handle stays registered (marked dead, its object
// dropped) in a FIFO quarantine of quarantineSize entries, so its address
// cannot be reused and every use of it answers KRABKA_ERR_INVALID_HANDLE.
// Only when more than quarantineSize handles have been destroyed since is the
// oldest address released. A handle used after that many later destroys may
// alias a newer handle of the same kind; that use is undefined, as it is for
// any C library. Memory cost: one byte of C heap plus one small Go object per
// quarantined handle.
const quarantineSize = 4096

type handleKind int

const (
	kindConf handleKind = iota + 1
	kindClient
	kindLeadership
	kindStatus
	kindQueue
	kindWatch
	kindVerifier
	kindEvent
	kindWatchEvent
	kindElector
	kindAcquireOptions
	kindTestingCluster
	kindInput
	kindRecords
	kindGroup
	kindElectorSet
)

func (k handleKind) String() string {
	switch k {
	case kindConf:
		return "krabka_conf_t"
	case kindClient:
		return "krabka_client_t"
	case kindLeadership:
		return "krabka_leadership_t"
	case kindStatus:
		return "krabka_status_t"
	case kindQueue:
		return "krabka_queue_t"
	case kindWatch:
		return "krabka_watch_t"
	case kindVerifier:
		return "krabka_verifier_t"
	case kindEvent:
		return "krabka_event_t"
	case kindWatchEvent:
		return "krabka_watch_event_t"
	case kindElector:
		return "krabka_elector_t"
	case kindAcquireOptions:
		return "krabka_acquire_options_t"
	case kindTestingCluster:
		return "krabka_testing_cluster_t"
	case kindInput:
		return "krabka_input_t"
	case kindRecords:
		return "krabka_records_t"
	case kindGroup:
		return "krabka_group_t"
	case kindElectorSet:
		return "krabka_elector_set_t"
	}
	return "handle"
}

type handle struct {
	kind handleKind
	mu   sync.Mutex
	obj  any // nil once destroyed
}

var (
	quarantineMu sync.Mutex
	quarantine   []unsafe.Pointer
)

// newHandle registers obj and returns its C address.
func newHandle(kind handleKind, obj any) unsafe.Pointer {
	return pointer.Save(&handle{kind: kind, obj: obj})
}

// lookup returns the live object behind p if it is a handle of kind.
func lookup(p unsafe.Pointer, kind handleKind) (any, error) {
	h, err := lookupHandle(p, kind)
	if err != nil {
		return nil, err
	}
	h.mu.Lock()
	obj := h.obj
	h.mu.Unlock()
	if obj == nil {
		return nil, invalidHandle(kind, "destroyed")
	}
	return obj, nil
}

// object is lookup with the object's Go type.
func object[T any](p unsafe.Pointer, kind handleKind) (T, error) {
	o, err := lookup(p, kind)
	if err != nil {
		var zero T
		return zero, err
	}
	return o.(T), nil
}

// objectOut is the head of an export without errstr that writes through out:
// the object of kind behind p, else INVALID_HANDLE, or INVALID_ARG for a NULL
// out (a failure is its code alone).
func objectOut[T, O any](p unsafe.Pointer, kind handleKind, out *O) (T, C.krabka_err_t) {
	obj, err := object[T](p, kind)
	if err != nil {
		return obj, err.(*cError).code
	}
	if out == nil {
		return obj, C.KRABKA_ERR_INVALID_ARG
	}
	return obj, C.KRABKA_OK
}

// field is an export without errstr that writes one value: *out = get(obj).
func field[T, O any](p unsafe.Pointer, kind handleKind, out *O, get func(T) O) C.krabka_err_t {
	obj, code := objectOut[T](p, kind, out)
	if code == C.KRABKA_OK {
		*out = get(obj)
	}
	return code
}

// destroy is a krabka_*_destroy: it releases the handle at p and passes its
// object to closeObj (if not nil).
func destroy(p unsafe.Pointer, kind handleKind, closeObj func(any)) C.krabka_err_t {
	o, err := release(p, kind)
	if err != nil {
		return err.(*cError).code
	}
	if closeObj != nil {
		closeObj(o)
	}
	return C.KRABKA_OK
}

func lookupHandle(p unsafe.Pointer, kind handleKind) (*handle, error) {
	if p == nil {
		return nil, invalidHandle(kind, "NULL")
	}
	h, ok := pointer.Restore(p).(*handle)
	if !ok || h == nil {
		return nil, invalidHandle(kind, "unknown")
	}
	if h.kind != kind {
		return nil, invalidHandle(kind, "a "+h.kind.String())
	}
	return h, nil
}

func invalidHandle(kind handleKind, what string) *cError {
	return &cError{C.KRABKA_ERR_INVALID_HANDLE, "krabka: invalid " + kind.String() + " handle: " + what}
}

// release marks the handle at p destroyed and returns its object, which the
// caller then closes. Exactly one release of a live handle succeeds.
func release(p unsafe.Pointer, kind handleKind) (any, error) {
	h, err := lookupHandle(p, kind)
	if err != nil {
		return nil, err
	}
	h.mu.Lock()
	obj := h.obj
	h.obj = nil
	h.mu.Unlock()
	if obj == nil {
		return nil, invalidHandle(kind, "destroyed")
	}
	quarantineMu.Lock()
	quarantine = append(quarantine, p)
	var evict unsafe.Pointer
	if len(quarantine) > quarantineSize {
		evict = quarantine[0]
		quarantine[0] = nil
		quarantine = quarantine[1:]
	}
	quarantineMu.Unlock()
	if evict != nil {
		pointer.Unref(evict)
	}
	return obj, nil
}
