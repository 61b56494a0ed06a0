package main

/*
#include "kc_types.h"
*/
import "C"

import (
	"context"
	"unsafe"

	"github.com/krabka/krabka-coord/core"
	"github.com/krabka/krabka-coord/core/coord"
)

// Record headers (docs/PROTOCOL.md 11): metadata, named successor, the
// verifier (the headers of guarded writes are read by goMessages,
// leadership.go). Thin translation only: the rules are in core and
// core/coord.

// optBytes copies ptr[0:n) (NULL with 0: nil).
func optBytes(ptr *C.kc_cuint8_t, n C.size_t, what string) ([]byte, error) {
	if ptr == nil {
		if n != 0 {
			return nil, invalidArg("krabka: %s is NULL with length %d", what, uint64(n))
		}
		return nil, nil
	}
	return cBytesU8(ptr, n, what)
}

// putMeta copies b into buf (see krabka_leadership_metadata).
func putMeta(b []byte, buf *C.uint8_t, size C.size_t, n *C.size_t) C.krabka_err_t {
	if n == nil || (buf == nil && size != 0) {
		return C.KRABKA_ERR_INVALID_ARG
	}
	*n = C.size_t(len(b))
	if len(b) == 0 {
		return C.KRABKA_OK
	}
	if uint64(size) < uint64(len(b)) || buf == nil {
		return C.KRABKA_ERR_INVALID_ARG
	}
	copy(unsafe.Slice((*byte)(unsafe.Pointer(buf)), len(b)), b)
	return C.KRABKA_OK
}

//export kc_go_client_set_metadata
func kc_go_client_set_metadata(client *C.krabka_client_t, r *C.kc_cchar_t, role_len C.size_t, m *C.kc_cchar_t, member_len C.size_t, term_meta *C.kc_cuint8_t, term_meta_len C.size_t, member_meta *C.kc_cuint8_t, member_meta_len C.size_t, errstr *C.char, errstr_size C.size_t) (rc C.krabka_err_t) {
	defer guard(&rc, errstr, errstr_size)
	var unused *C.krabka_leadership_t
	c, ro, me, err := acquireArgs(client, r, role_len, m, member_len, &unused)
	if err != nil {
		return fail(err, errstr, errstr_size)
	}
	tm, err := optBytes(term_meta, term_meta_len, "term_meta")
	if err != nil {
		return fail(err, errstr, errstr_size)
	}
	mm, err := optBytes(member_meta, member_meta_len, "member_meta")
	if err != nil {
		return fail(err, errstr, errstr_size)
	}
	var opts []coord.AcquireOption
	if tm != nil {
		opts = append(opts, coord.WithMetadata(tm))
	}
	if mm != nil {
		opts = append(opts, coord.WithMemberMetadata(mm))
	}
	if err := coord.CheckAcquireOptions(opts...); err != nil {
		return fail(err, errstr, errstr_size)
	}
	c.metaMu.Lock()
	defer c.metaMu.Unlock()
	if c.meta == nil {
		c.meta = map[[2]string][]coord.AcquireOption{}
	}
	key := [2]string{ro.String(), me.String()}
	if len(opts) == 0 {
		delete(c.meta, key)
	} else {
		c.meta[key] = opts
	}
	return C.KRABKA_OK
}

//export kc_go_leadership_set_metadata
func kc_go_leadership_set_metadata(leadership *C.krabka_leadership_t, data *C.kc_cuint8_t, n C.size_t, timeout_ms C.int64_t, errstr *C.char, errstr_size C.size_t) (rc C.krabka_err_t) {
	defer guard(&rc, errstr, errstr_size)
	b, err := optBytes(data, n, "data")
	if err != nil {
		return fail(err, errstr, errstr_size)
	}
	return finish(leadershipCall(leadership, timeout_ms, func(l *coord.Leadership, ctx context.Context) error {
		return l.SetMetadata(ctx, b)
	}), errstr, errstr_size)
}

//export kc_go_leadership_metadata
func kc_go_leadership_metadata(leadership *C.kc_cleadership_t, buf *C.uint8_t, buf_size C.size_t, n *C.size_t) (rc C.krabka_err_t) {
	defer guardNoErrstr(&rc)
	l, code := leadershipOut(leadership, n)
	if code != C.KRABKA_OK {
		return code
	}
	return putMeta(l.l.Metadata(), buf, buf_size, n)
}

//export kc_go_leadership_resign_to
func kc_go_leadership_resign_to(leadership *C.krabka_leadership_t, s *C.kc_cchar_t, successor_len C.size_t, timeout_ms C.int64_t, errstr *C.char, errstr_size C.size_t) (rc C.krabka_err_t) {
	defer guard(&rc, errstr, errstr_size)
	succ, err := member(s, successor_len)
	if err != nil {
		return fail(err, errstr, errstr_size)
	}
	return finish(leadershipCall(leadership, timeout_ms, func(l *coord.Leadership, ctx context.Context) error {
		return l.ResignTo(ctx, succ)
	}), errstr, errstr_size)
}

//export kc_go_status_metadata
func kc_go_status_metadata(status *C.kc_cstatus_t, buf *C.uint8_t, buf_size C.size_t, n *C.size_t) (rc C.krabka_err_t) {
	defer guardNoErrstr(&rc)
	s, code := statusOut(status, n)
	if code != C.KRABKA_OK {
		return code
	}
	return putMeta(s.Metadata, buf, buf_size, n)
}

//export kc_go_status_roster_metadata
func kc_go_status_roster_metadata(status *C.kc_cstatus_t, index C.size_t, buf *C.uint8_t, buf_size C.size_t, n *C.size_t) (rc C.krabka_err_t) {
	defer guardNoErrstr(&rc)
	s, code := statusOut(status, n)
	if code != C.KRABKA_OK {
		return code
	}
	if uint64(index) >= uint64(len(s.Roster)) {
		return C.KRABKA_ERR_INVALID_ARG
	}
	return putMeta(s.Roster[index].Metadata, buf, buf_size, n)
}

// ---- verifier ----

type verifierObj struct {
	v *core.Verifier // safe for concurrent use
}

//export kc_go_verifier_new
func kc_go_verifier_new(out **C.krabka_verifier_t) (rc C.krabka_err_t) {
	defer guardNoErrstr(&rc)
	if out == nil {
		return C.KRABKA_ERR_INVALID_ARG
	}
	*out = (*C.krabka_verifier_t)(newHandle(kindVerifier, &verifierObj{v: core.NewVerifier()}))
	return C.KRABKA_OK
}

func scopeOf(s *C.kc_cchar_t, n C.size_t) (string, C.krabka_err_t) {
	b, err := cBytes((*C.char)(unsafe.Pointer(s)), n, "scope")
	if err != nil {
		return "", C.KRABKA_ERR_INVALID_ARG
	}
	return string(b), C.KRABKA_OK
}

//export kc_go_verifier_judge
func kc_go_verifier_judge(verifier *C.krabka_verifier_t, s *C.kc_cchar_t, scope_len C.size_t, header *C.kc_cuint8_t, header_len C.size_t, batch C.krabka_token_t, out *C.krabka_verdict_t) (rc C.krabka_err_t) {
	defer guardNoErrstr(&rc)
	v, code := objectOut[*verifierObj](unsafe.Pointer(verifier), kindVerifier, out)
	if code != C.KRABKA_OK {
		return code
	}
	scope, code := scopeOf(s, scope_len)
	if code != C.KRABKA_OK {
		return code
	}
	hdr, err := optBytes(header, header_len, "header")
	if err != nil {
		return C.KRABKA_ERR_INVALID_ARG
	}
	*out = C.krabka_verdict_t(v.v.Judge(scope, hdr, header != nil, goToken(batch)))
	return C.KRABKA_OK
}

//export kc_go_verifier_highest
func kc_go_verifier_highest(verifier *C.krabka_verifier_t, s *C.kc_cchar_t, scope_len C.size_t, has *C.int, out *C.krabka_token_t) (rc C.krabka_err_t) {
	defer guardNoErrstr(&rc)
	v, code := objectOut[*verifierObj](unsafe.Pointer(verifier), kindVerifier, out)
	if code != C.KRABKA_OK {
		return code
	}
	if has == nil {
		return C.KRABKA_ERR_INVALID_ARG
	}
	scope, code := scopeOf(s, scope_len)
	if code != C.KRABKA_OK {
		return code
	}
	t, ok := v.v.Highest(scope)
	*has = cBool(ok)
	if ok {
		*out = cToken(t)
	} else {
		*out = cToken(core.NoEpoch)
	}
	return C.KRABKA_OK
}

//export kc_go_verifier_destroy
func kc_go_verifier_destroy(verifier *C.krabka_verifier_t) (rc C.krabka_err_t) {
	defer guardNoErrstr(&rc)
	return destroy(unsafe.Pointer(verifier), kindVerifier, nil)
}
