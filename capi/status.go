package main

/*
#include "kc_types.h"
*/
import "C"

import (
	"unsafe"

	"github.com/krabka/krabka-coord/core/coord"
)

// statusOut and statusField are objectOut and field for a krabka_status_t.
func statusOut[O any](status *C.kc_cstatus_t, out *O) (*coord.Status, C.krabka_err_t) {
	return objectOut[*coord.Status](unsafe.Pointer(status), kindStatus, out)
}

func statusField[O any](status *C.kc_cstatus_t, out *O, get func(*coord.Status) O) C.krabka_err_t {
	return field(unsafe.Pointer(status), kindStatus, out, get)
}

//export kc_go_status_holder
func kc_go_status_holder(status *C.kc_cstatus_t, has_holder *C.int, buf *C.char, buf_size C.size_t, n *C.size_t) (rc C.krabka_err_t) {
	defer guardNoErrstr(&rc)
	s, code := statusOut(status, has_holder)
	if code != C.KRABKA_OK {
		return code
	}
	if !s.HasHolder {
		*has_holder = 0
		if n != nil {
			*n = 0
		}
		if buf != nil && buf_size > 0 {
			*buf = 0
		}
		return C.KRABKA_OK
	}
	*has_holder = 1
	name := s.Holder.String()
	if n != nil {
		*n = C.size_t(len(name))
	}
	if buf == nil || uint64(buf_size) < uint64(len(name))+1 {
		return C.KRABKA_ERR_BUFFER_TOO_SMALL
	}
	putString(buf, name)
	return C.KRABKA_OK
}

//export kc_go_status_token
func kc_go_status_token(status *C.kc_cstatus_t, out *C.krabka_token_t) (rc C.krabka_err_t) {
	defer guardNoErrstr(&rc)
	return statusField(status, out, func(s *coord.Status) C.krabka_token_t { return cToken(s.Token) })
}

//export kc_go_status_current
func kc_go_status_current(status *C.kc_cstatus_t, current *C.int) (rc C.krabka_err_t) {
	defer guardNoErrstr(&rc)
	return statusField(status, current, func(s *coord.Status) C.int { return cBool(s.Current) })
}

//export kc_go_status_lease
func kc_go_status_lease(status *C.kc_cstatus_t, has_lease *C.int, out *C.krabka_lease_t) (rc C.krabka_err_t) {
	defer guardNoErrstr(&rc)
	s, code := statusOut(status, has_lease)
	if code != C.KRABKA_OK {
		return code
	}
	if out == nil {
		return C.KRABKA_ERR_INVALID_ARG
	}
	if s.Lease == nil {
		*has_lease = 0
		return C.KRABKA_OK
	}
	*has_lease = 1
	cLease(out, *s.Lease)
	return C.KRABKA_OK
}

//export kc_go_status_partition
func kc_go_status_partition(status *C.kc_cstatus_t, out *C.int32_t) (rc C.krabka_err_t) {
	defer guardNoErrstr(&rc)
	return statusField(status, out, func(s *coord.Status) C.int32_t { return C.int32_t(s.Partition) })
}

//export kc_go_status_skipped
func kc_go_status_skipped(status *C.kc_cstatus_t, out *C.int64_t) (rc C.krabka_err_t) {
	defer guardNoErrstr(&rc)
	return statusField(status, out, func(s *coord.Status) C.int64_t { return C.int64_t(s.Skipped) })
}

//export kc_go_status_removed
func kc_go_status_removed(status *C.kc_cstatus_t, out *C.int64_t) (rc C.krabka_err_t) {
	defer guardNoErrstr(&rc)
	return statusField(status, out, func(s *coord.Status) C.int64_t { return C.int64_t(s.Removed) })
}

//export kc_go_status_roster_count
func kc_go_status_roster_count(status *C.kc_cstatus_t, count *C.size_t) (rc C.krabka_err_t) {
	defer guardNoErrstr(&rc)
	return statusField(status, count, func(s *coord.Status) C.size_t { return C.size_t(len(s.Roster)) })
}

//export kc_go_status_roster_entry
func kc_go_status_roster_entry(status *C.kc_cstatus_t, index C.size_t, out *C.krabka_roster_entry_t) (rc C.krabka_err_t) {
	defer guardNoErrstr(&rc)
	s, code := statusOut(status, out)
	if code != C.KRABKA_OK {
		return code
	}
	if uint64(index) >= uint64(len(s.Roster)) {
		return C.KRABKA_ERR_INVALID_ARG
	}
	cRosterEntry(out, s.Roster[index])
	return C.KRABKA_OK
}

//export kc_go_status_destroy
func kc_go_status_destroy(status *C.krabka_status_t) (rc C.krabka_err_t) {
	defer guardNoErrstr(&rc)
	return destroy(unsafe.Pointer(status), kindStatus, nil)
}
