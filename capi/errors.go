package main

/*
#include "kc_types.h"
*/
import "C"

import (
	"context"
	"errors"
	"fmt"
	"unsafe"

	"github.com/krabka/krabka-coord/core"
	"github.com/krabka/krabka-coord/core/coord"
)

// errInfo describes one krabka_err_t: the name and text returned by
// krabka_err2name / krabka_err2str (C strings made once, never freed) and the
// two predicates.
type errInfo struct {
	name, text       string
	retriable, fatal bool
	cname, ctext     *C.char
}

// errTable is built from coord.ErrorTable, the one table of codes, names,
// texts and flags (a test checks the header and the bindings against it).
var errTable = map[C.krabka_err_t]*errInfo{}

var (
	cUnknownName = C.CString("UNKNOWN")
	cUnknownText = C.CString("unknown error")
)

func init() {
	for _, r := range coord.ErrorTable {
		code := C.krabka_err_t(r.Code)
		errTable[code] = &errInfo{name: r.Name, text: r.Text, retriable: r.Retriable, fatal: r.Fatal,
			cname: C.CString(r.Name), ctext: C.CString(r.Text)}
		if r.Category != "" {
			categoryCodes[r.Category] = code
		}
		if r.Sentinel != nil {
			sentinelTable[r.Sentinel] = code
		}
	}
}

// categoryCodes maps core's data categories onto codes (from the table).
var categoryCodes = map[core.Category]C.krabka_err_t{}

// sentinelTable maps the client-side sentinels onto codes (from the table);
// coord.ClientErrorKind picks the sentinel (the most specific first).
var sentinelTable = map[error]C.krabka_err_t{}

// codeOf maps an error returned by core onto its code: a data category
// first, then the client sentinels; anything else is a library bug.
func codeOf(err error) C.krabka_err_t {
	if err == nil {
		return C.KRABKA_OK
	}
	if k := coord.ClientErrorKind(err); k != nil {
		if code, ok := sentinelTable[k]; ok {
			return code
		}
	}
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return C.KRABKA_ERR_TIMEOUT
	case errors.Is(err, context.Canceled):
		return C.KRABKA_ERR_CLOSED
	}
	if cat, ok := core.CategoryOf(err); ok {
		if code, ok := categoryCodes[cat]; ok {
			return code
		}
	}
	return C.KRABKA_ERR_INTERNAL
}

// errDescs is the table krabka_get_err_descs hands out: C memory made once
// from coord.ErrorTable (in its numeric order), never freed.
var errDescs *C.krabka_err_desc_t
var errDescCount int

func init() {
	rows := coord.ErrorTable // numeric order; the child's copy (kc_guard.c) is in the same order
	errDescCount = len(rows)
	errDescs = (*C.krabka_err_desc_t)(C.calloc(C.size_t(len(rows)), C.sizeof_krabka_err_desc_t))
	dst := unsafe.Slice(errDescs, len(rows))
	for i, r := range rows {
		e := errTable[C.krabka_err_t(r.Code)]
		dst[i] = C.krabka_err_desc_t{code: C.krabka_err_t(r.Code), name: e.cname, desc: e.ctext,
			retriable: cBool(e.retriable), fatal: cBool(e.fatal)}
	}
}

//export kc_go_get_err_descs
func kc_go_get_err_descs(descs **C.kc_cerr_desc_t, count *C.size_t) {
	defer swallow()
	if descs != nil {
		*descs = (*C.kc_cerr_desc_t)(unsafe.Pointer(errDescs))
	}
	if count != nil {
		*count = C.size_t(errDescCount)
	}
}

//export kc_go_err2str
func kc_go_err2str(err C.krabka_err_t) (s *C.kc_cchar_t) {
	s = (*C.kc_cchar_t)(unsafe.Pointer(cUnknownText))
	defer swallow()
	if e, ok := errTable[err]; ok {
		return (*C.kc_cchar_t)(unsafe.Pointer(e.ctext))
	}
	return (*C.kc_cchar_t)(unsafe.Pointer(cUnknownText))
}

//export kc_go_err2name
func kc_go_err2name(err C.krabka_err_t) (s *C.kc_cchar_t) {
	s = (*C.kc_cchar_t)(unsafe.Pointer(cUnknownName))
	defer swallow()
	if e, ok := errTable[err]; ok {
		return (*C.kc_cchar_t)(unsafe.Pointer(e.cname))
	}
	return (*C.kc_cchar_t)(unsafe.Pointer(cUnknownName))
}

//export kc_go_err_is_retriable
func kc_go_err_is_retriable(err C.krabka_err_t) (r C.int) {
	defer swallow()
	if e, ok := errTable[err]; ok && e.retriable {
		return 1
	}
	return 0
}

//export kc_go_err_is_fatal
func kc_go_err_is_fatal(err C.krabka_err_t) (r C.int) {
	defer swallow()
	if e, ok := errTable[err]; ok && e.fatal {
		return 1
	}
	return 0
}

// ---- versions ----

const (
	versionMajor = coord.VersionMajor
	versionMinor = coord.VersionMinor
	versionPatch = coord.VersionPatch
	abiVersion   = coord.ABIVersion
)

var cVersion = C.CString(fmt.Sprintf("%d.%d.%d", versionMajor, versionMinor, versionPatch))

//export kc_go_version
func kc_go_version() *C.kc_cchar_t { return (*C.kc_cchar_t)(unsafe.Pointer(cVersion)) }

//export kc_go_version_number
func kc_go_version_number() C.int {
	return C.int(versionMajor*10000 + versionMinor*100 + versionPatch)
}

//export kc_go_abi_version
func kc_go_abi_version() C.int { return abiVersion }

// cErr is a code number as a krabka_err_t (for the tests, which cannot use C).
func cErr(n int) C.krabka_err_t { return C.krabka_err_t(n) }
