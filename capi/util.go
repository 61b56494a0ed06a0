package main

/*
#include "kc_types.h"
*/
import "C"

import (
	"fmt"
	"math"
	"runtime/debug"
	"unicode/utf8"
	"unsafe"
)

// cError is a failure ready to cross the boundary: its code and reason.
type cError struct {
	code C.krabka_err_t
	msg  string
}

func (e *cError) Error() string { return e.msg }

func invalidArg(format string, a ...any) *cError {
	return &cError{C.KRABKA_ERR_INVALID_ARG, fmt.Sprintf(format, a...)}
}

// fail writes the reason for err into errstr (if any) and returns its code.
// A *cError keeps its own code; other errors go through codeOf.
func fail(err error, errstr *C.char, size C.size_t) C.krabka_err_t {
	var code C.krabka_err_t
	if ce, ok := err.(*cError); ok {
		code = ce.code
	} else {
		code = codeOf(err)
	}
	writeErrstr(errstr, size, err.Error())
	return code
}

// finish is the common tail of a fallible export: OK or the mapped failure.
func finish(err error, errstr *C.char, size C.size_t) C.krabka_err_t {
	if err == nil {
		return C.KRABKA_OK
	}
	return fail(err, errstr, size)
}

// writeErrstr copies msg into errstr with a NUL, truncated to size-1 bytes
// without splitting a UTF-8 sequence. NULL errstr or size 0 writes nothing.
func writeErrstr(errstr *C.char, size C.size_t, msg string) {
	if errstr == nil || size == 0 {
		return
	}
	n := uint64(len(msg)) + 1
	if uint64(size) < n {
		n = uint64(size)
	}
	truncateInto(unsafe.Slice((*byte)(unsafe.Pointer(errstr)), int(n)), msg)
}

// truncateInto writes msg and a NUL into dst (len(dst) >= 1), cutting msg
// at a rune boundary so that it fits.
func truncateInto(dst []byte, msg string) {
	n := len(msg)
	if n > len(dst)-1 {
		n = len(dst) - 1
		for n > 0 && !utf8.RuneStart(msg[n]) {
			n--
		}
	}
	copy(dst, msg[:n])
	dst[n] = 0
}

// guard turns a panic in an export into KRABKA_ERR_INTERNAL with its reason
// in errstr. Use as: defer guard(&rc, errstr, size).
func guard(rc *C.krabka_err_t, errstr *C.char, size C.size_t) {
	if r := recover(); r != nil {
		*rc = C.KRABKA_ERR_INTERNAL
		writeErrstr(errstr, size, fmt.Sprintf("krabka: internal error (recovered panic): %v\n%s", r, debug.Stack()))
	}
}

// guardNoErrstr is guard for exports without an errstr parameter.
func guardNoErrstr(rc *C.krabka_err_t) {
	if r := recover(); r != nil {
		*rc = C.KRABKA_ERR_INTERNAL
	}
}

// swallow recovers a panic in an export that has no error code to return;
// the export then returns the value its named result holds (for example
// "unknown error" or 0). The exports using it have no code path known to
// panic; the guard keeps a future bug from crossing the boundary.
func swallow() { recover() }

// ntsLen is KRABKA_NTS as a size_t.
const ntsLen = ^C.size_t(0)

// cBytes copies (ptr, n) into Go memory; n == KRABKA_NTS means NUL-terminated.
// what names the argument for the error message.
func cBytes(ptr *C.char, n C.size_t, what string) ([]byte, error) {
	if n == ntsLen {
		if ptr == nil {
			return nil, invalidArg("krabka: %s is NULL", what)
		}
		n = C.strlen(ptr)
	}
	if n == 0 {
		return []byte{}, nil
	}
	if ptr == nil {
		return nil, invalidArg("krabka: %s is NULL with length %d", what, uint64(n))
	}
	if uint64(n) > math.MaxInt32 {
		return nil, invalidArg("krabka: %s length %d is out of range", what, uint64(n))
	}
	return C.GoBytes(unsafe.Pointer(ptr), C.int(n)), nil
}

// cBytesU8 is cBytes for const uint8_t data.
func cBytesU8(ptr *C.kc_cuint8_t, n C.size_t, what string) ([]byte, error) {
	if n == 0 {
		return []byte{}, nil
	}
	if n == ntsLen {
		return nil, invalidArg("krabka: %s length is out of range", what)
	}
	return cBytes((*C.char)(unsafe.Pointer(ptr)), n, what)
}

// putString writes s and a NUL into buf, which the caller has checked holds
// len(s)+1 bytes.
func putString(buf *C.char, s string) {
	dst := unsafe.Slice((*byte)(unsafe.Pointer(buf)), len(s)+1)
	copy(dst, s)
	dst[len(s)] = 0
}

// cBool is a Go bool as a C int (0 or 1).
func cBool(b bool) C.int {
	if b {
		return 1
	}
	return 0
}

// putName writes b with a NUL into a KRABKA_NAME_BUF array and returns its
// length. Names from core are at most 249 bytes.
func putName(dst *[C.KRABKA_NAME_BUF]C.char, s string) C.uint32_t {
	n := copy(unsafe.Slice((*byte)(unsafe.Pointer(&dst[0])), C.KRABKA_NAME_BUF-1), s)
	dst[n] = 0
	return C.uint32_t(n)
}

// getName reads n bytes of a KRABKA_NAME_BUF array.
func getName(src *[C.KRABKA_NAME_BUF]C.char, n C.uint32_t, what string) ([]byte, error) {
	if n > C.KRABKA_NAME_BUF {
		return nil, invalidArg("krabka: %s length %d exceeds the %d-byte buffer", what, uint32(n), C.KRABKA_NAME_BUF)
	}
	return C.GoBytes(unsafe.Pointer(&src[0]), C.int(n)), nil
}

// kc_go_free is krabka_free: it releases memory the library malloc'ed for
// the host (the JSON of krabka_client_stats_json).
//
//export kc_go_free
func kc_go_free(p unsafe.Pointer) {
	defer swallow()
	C.free(p)
}
