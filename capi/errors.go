package main

/*
#include "kc_types.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"unsafe"

	"github.com/krabka/krabka-coord/core"
)

// errInfo describes one krabka_err_t: the name and text returned by
// krabka_err2name / krabka_err2str (C strings made once, never freed) and the
// two predicates.
type errInfo struct {
	name, text       string
	retriable, fatal bool
	cname, ctext     *C.char
}

// errTable is the static description of every code of the header.
var errTable = map[C.krabka_err_t]*errInfo{
	C.KRABKA_OK:                          {name: "OK", text: "success"},
	C.KRABKA_ERR_INVALID_ARG:             {name: "INVALID_ARG", text: "invalid argument"},
	C.KRABKA_ERR_INVALID_HANDLE:          {name: "INVALID_HANDLE", text: "unknown, destroyed or wrong-kind handle"},
	C.KRABKA_ERR_BUFFER_TOO_SMALL:        {name: "BUFFER_TOO_SMALL", text: "output buffer too small"},
	C.KRABKA_ERR_UNKNOWN_CONFIG:          {name: "UNKNOWN_CONFIG", text: "no such configuration property"},
	C.KRABKA_ERR_INVALID_CONFIG:          {name: "INVALID_CONFIG", text: "invalid configuration value"},
	C.KRABKA_ERR_TRUNCATED:               {name: "TRUNCATED", text: "the bytes end too early"},
	C.KRABKA_ERR_TRAILING_BYTES:          {name: "TRAILING_BYTES", text: "bytes remain after the last field"},
	C.KRABKA_ERR_UNSUPPORTED_VERSION:     {name: "UNSUPPORTED_VERSION", text: "unsupported record version"},
	C.KRABKA_ERR_UNKNOWN_KIND:            {name: "UNKNOWN_KIND", text: "unknown record kind"},
	C.KRABKA_ERR_NEGATIVE_LENGTH:         {name: "NEGATIVE_LENGTH", text: "negative string length"},
	C.KRABKA_ERR_INVALID_UTF8:            {name: "INVALID_UTF8", text: "invalid UTF-8"},
	C.KRABKA_ERR_LEASE_KEY_HAS_MEMBER:    {name: "LEASE_KEY_HAS_MEMBER", text: "a lease key carries a member"},
	C.KRABKA_ERR_EMPTY_ROLE:              {name: "EMPTY_ROLE", text: "empty role"},
	C.KRABKA_ERR_EMPTY_MEMBER:            {name: "EMPTY_MEMBER", text: "empty member id"},
	C.KRABKA_ERR_ROLE_TOO_LONG:           {name: "ROLE_TOO_LONG", text: "role longer than 249 bytes"},
	C.KRABKA_ERR_MEMBER_TOO_LONG:         {name: "MEMBER_TOO_LONG", text: "member id longer than 249 bytes"},
	C.KRABKA_ERR_NEGATIVE_TOKEN:          {name: "NEGATIVE_TOKEN", text: "negative producer id or epoch"},
	C.KRABKA_ERR_TOKEN_FORM:              {name: "TOKEN_FORM", text: "token text is not <id>:<epoch>"},
	C.KRABKA_ERR_INVALID_PARTITION_COUNT: {name: "INVALID_PARTITION_COUNT", text: "partition count below 1"},
	C.KRABKA_ERR_INVALID_LEASE_CONFIG:    {name: "INVALID_LEASE_CONFIG", text: "invalid lease configuration"},
	C.KRABKA_ERR_FENCED:                  {name: "FENCED", text: "the cluster superseded this leadership", fatal: true},
	C.KRABKA_ERR_LEASE_EXPIRED:           {name: "LEASE_EXPIRED", text: "the lease expired before it could be renewed", fatal: true},
	C.KRABKA_ERR_NOT_LEADER:              {name: "NOT_LEADER", text: "the leadership was resigned or destroyed", fatal: true},
	C.KRABKA_ERR_TIMEOUT:                 {name: "TIMEOUT", text: "the timeout passed", retriable: true},
	C.KRABKA_ERR_AUTHORIZATION:           {name: "AUTHORIZATION", text: "not authorized (an ACL is missing)"},
	C.KRABKA_ERR_UNSUPPORTED:             {name: "UNSUPPORTED", text: "the cluster does not support the protocol"},
	C.KRABKA_ERR_TRANSPORT:               {name: "TRANSPORT", text: "network or broker error", retriable: true},
	C.KRABKA_ERR_CLOSED:                  {name: "CLOSED", text: "the client was destroyed", fatal: true},
	C.KRABKA_ERR_INTERNAL:                {name: "INTERNAL", text: "internal error in the library", fatal: true},
}

var (
	cUnknownName = C.CString("UNKNOWN")
	cUnknownText = C.CString("unknown error")
)

func init() {
	for _, e := range errTable {
		e.cname = C.CString(e.name)
		e.ctext = C.CString(e.text)
	}
}

// categoryCodes is THE mapping of core's data categories onto codes.
var categoryCodes = map[core.Category]C.krabka_err_t{
	core.CatTruncated:             C.KRABKA_ERR_TRUNCATED,
	core.CatTrailingBytes:         C.KRABKA_ERR_TRAILING_BYTES,
	core.CatUnsupportedVersion:    C.KRABKA_ERR_UNSUPPORTED_VERSION,
	core.CatUnknownKind:           C.KRABKA_ERR_UNKNOWN_KIND,
	core.CatNegativeLength:        C.KRABKA_ERR_NEGATIVE_LENGTH,
	core.CatInvalidUTF8:           C.KRABKA_ERR_INVALID_UTF8,
	core.CatLeaseKeyHasMember:     C.KRABKA_ERR_LEASE_KEY_HAS_MEMBER,
	core.CatEmptyRole:             C.KRABKA_ERR_EMPTY_ROLE,
	core.CatEmptyMember:           C.KRABKA_ERR_EMPTY_MEMBER,
	core.CatRoleTooLong:           C.KRABKA_ERR_ROLE_TOO_LONG,
	core.CatMemberTooLong:         C.KRABKA_ERR_MEMBER_TOO_LONG,
	core.CatNegativeToken:         C.KRABKA_ERR_NEGATIVE_TOKEN,
	core.CatTokenForm:             C.KRABKA_ERR_TOKEN_FORM,
	core.CatInvalidPartitionCount: C.KRABKA_ERR_INVALID_PARTITION_COUNT,
	core.CatInvalidLeaseConfig:    C.KRABKA_ERR_INVALID_LEASE_CONFIG,
}

// sentinelCodes maps the client-side sentinels (checked with errors.Is, in
// this order) onto codes. ErrFenced comes first: it is the one loss signal.
// sentinelCodes maps the client-side sentinels (checked with errors.Is, in
// this order) onto codes; see sentinels.go.
var sentinelCodes []sentinel

type sentinel struct {
	err  error
	code C.krabka_err_t
}

// codeOf maps an error returned by core onto its code: a data category
// first, then the client sentinels; anything else is a library bug.
func codeOf(err error) C.krabka_err_t {
	if err == nil {
		return C.KRABKA_OK
	}
	for _, s := range sentinelCodes {
		if errors.Is(err, s.err) {
			return s.code
		}
	}
	if cat, ok := core.CategoryOf(err); ok {
		if code, ok := categoryCodes[cat]; ok {
			return code
		}
	}
	return C.KRABKA_ERR_INTERNAL
}

//export krabka_err2str
func krabka_err2str(err C.krabka_err_t) (s *C.kc_cchar_t) {
	s = (*C.kc_cchar_t)(unsafe.Pointer(cUnknownText))
	defer swallow()
	if e, ok := errTable[err]; ok {
		return (*C.kc_cchar_t)(unsafe.Pointer(e.ctext))
	}
	return (*C.kc_cchar_t)(unsafe.Pointer(cUnknownText))
}

//export krabka_err2name
func krabka_err2name(err C.krabka_err_t) (s *C.kc_cchar_t) {
	s = (*C.kc_cchar_t)(unsafe.Pointer(cUnknownName))
	defer swallow()
	if e, ok := errTable[err]; ok {
		return (*C.kc_cchar_t)(unsafe.Pointer(e.cname))
	}
	return (*C.kc_cchar_t)(unsafe.Pointer(cUnknownName))
}

//export krabka_err_is_retriable
func krabka_err_is_retriable(err C.krabka_err_t) (r C.int) {
	defer swallow()
	if e, ok := errTable[err]; ok && e.retriable {
		return 1
	}
	return 0
}

//export krabka_err_is_fatal
func krabka_err_is_fatal(err C.krabka_err_t) (r C.int) {
	defer swallow()
	if e, ok := errTable[err]; ok && e.fatal {
		return 1
	}
	return 0
}

// ---- versions ----

const (
	versionMajor = 1
	versionMinor = 0
	versionPatch = 0
	abiVersion   = 1
)

var cVersion = C.CString(fmt.Sprintf("%d.%d.%d", versionMajor, versionMinor, versionPatch))

//export krabka_version
func krabka_version() *C.kc_cchar_t { return (*C.kc_cchar_t)(unsafe.Pointer(cVersion)) }

//export krabka_version_number
func krabka_version_number() C.int {
	return C.int(versionMajor*10000 + versionMinor*100 + versionPatch)
}

//export krabka_abi_version
func krabka_abi_version() C.int { return abiVersion }
