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
// describe result) is a *handle registered with go-pointer, which mints a
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
