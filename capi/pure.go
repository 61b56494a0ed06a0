package main

/*
#include "kc_types.h"
*/
import "C"

import (
	"math"
	"strconv"
	"unsafe"

	"github.com/krabka/krabka-coord/core"
)

func goToken(t C.krabka_token_t) core.FencingToken {
	return core.FencingToken{ProducerID: int64(t.producer_id), ProducerEpoch: int16(t.producer_epoch)}
}

func cToken(t core.FencingToken) C.krabka_token_t {
	return C.krabka_token_t{producer_id: C.int64_t(t.ProducerID), producer_epoch: C.int16_t(t.ProducerEpoch)}
}

//export kc_go_token_no_epoch
func kc_go_token_no_epoch() C.krabka_token_t { return cToken(core.NoEpoch) }

//export kc_go_token_validate
func kc_go_token_validate(token C.krabka_token_t, errstr *C.char, errstr_size C.size_t) (rc C.krabka_err_t) {
	defer guard(&rc, errstr, errstr_size)
	_, err := core.NewFencingToken(int64(token.producer_id), int16(token.producer_epoch))
	return finish(err, errstr, errstr_size)
}

//export kc_go_token_compare
func kc_go_token_compare(a, b C.krabka_token_t) (r C.int) {
	defer swallow()
	return C.int(goToken(a).Compare(goToken(b)))
}

//export kc_go_token_supersedes
func kc_go_token_supersedes(a, b C.krabka_token_t) (r C.int) {
	defer swallow()
	if goToken(a).Supersedes(goToken(b)) {
		return 1
	}
	return 0
}

//export kc_go_token_format
func kc_go_token_format(token C.krabka_token_t, buf *C.char, buf_size C.size_t) (rc C.krabka_err_t) {
	defer guardNoErrstr(&rc)
	s := goToken(token).String()
	if uint64(buf_size) < uint64(len(s))+1 {
		return C.KRABKA_ERR_BUFFER_TOO_SMALL
	}
	if buf == nil {
		return C.KRABKA_ERR_INVALID_ARG
	}
	putString(buf, s)
	return C.KRABKA_OK
}

//export kc_go_token_parse
func kc_go_token_parse(text *C.kc_cchar_t, text_len C.size_t, out *C.krabka_token_t, errstr *C.char, errstr_size C.size_t) (rc C.krabka_err_t) {
	defer guard(&rc, errstr, errstr_size)
	b, err := cBytes((*C.char)(unsafe.Pointer(text)), text_len, "text")
	if err != nil {
		return fail(err, errstr, errstr_size)
	}
	if out == nil {
		return fail(invalidArg("krabka: out is NULL"), errstr, errstr_size)
	}
	t, err := core.ParseFencingToken(string(b))
	if err != nil {
		return fail(err, errstr, errstr_size)
	}
	*out = cToken(t)
	return C.KRABKA_OK
}

// role and member build the validated names from (ptr, len).
func role(ptr *C.kc_cchar_t, n C.size_t) (core.Role, error) {
	b, err := cBytes((*C.char)(unsafe.Pointer(ptr)), n, "role")
	if err != nil {
		return core.Role{}, err
	}
	return core.RoleFromBytes(b)
}

func member(ptr *C.kc_cchar_t, n C.size_t) (core.MemberID, error) {
	b, err := cBytes((*C.char)(unsafe.Pointer(ptr)), n, "member")
	if err != nil {
		return core.MemberID{}, err
	}
	return core.MemberIDFromBytes(b)
}

//export kc_go_role_validate
func kc_go_role_validate(r *C.kc_cchar_t, role_len C.size_t, errstr *C.char, errstr_size C.size_t) (rc C.krabka_err_t) {
	defer guard(&rc, errstr, errstr_size)
	_, err := role(r, role_len)
	return finish(err, errstr, errstr_size)
}

//export kc_go_member_validate
func kc_go_member_validate(m *C.kc_cchar_t, member_len C.size_t, errstr *C.char, errstr_size C.size_t) (rc C.krabka_err_t) {
	defer guard(&rc, errstr, errstr_size)
	_, err := member(m, member_len)
	return finish(err, errstr, errstr_size)
}

//export kc_go_murmur2
func kc_go_murmur2(data *C.kc_cuint8_t, n C.size_t) (h C.int32_t) {
	defer swallow()
	// Hashed in place (core.Murmur2 keeps no reference to its input). NULL
	// data or an impossible length hashes as the empty string.
	var b []byte
	if data != nil && n > 0 && uint64(n) <= math.MaxInt32 {
		b = unsafe.Slice((*byte)(unsafe.Pointer(data)), int(n))
	}
	return C.int32_t(core.Murmur2(b))
}

//export kc_go_role_partition
func kc_go_role_partition(r *C.kc_cchar_t, role_len C.size_t, partitions C.int32_t, out *C.int32_t, errstr *C.char, errstr_size C.size_t) (rc C.krabka_err_t) {
	defer guard(&rc, errstr, errstr_size)
	ro, err := role(r, role_len)
	if err != nil {
		return fail(err, errstr, errstr_size)
	}
	if out == nil {
		return fail(invalidArg("krabka: out is NULL"), errstr, errstr_size)
	}
	p, err := core.RolePartition(ro, int32(partitions))
	if err != nil {
		return fail(err, errstr, errstr_size)
	}
	*out = C.int32_t(p)
	return C.KRABKA_OK
}

//export kc_go_value_is_tombstone
func kc_go_value_is_tombstone(value *C.kc_cuint8_t, n C.size_t) (r C.int) {
	defer swallow()
	if value == nil || core.IsTombstone(unsafe.Slice((*byte)(unsafe.Pointer(value)), min(uint64(n), 1))) {
		return 1
	}
	return 0
}

// ---- record codec ----

// output copies enc into (buf, size) and sets *outLen, or reports
// BUFFER_TOO_SMALL with *outLen set to the size needed.
func output(enc []byte, buf *C.uint8_t, size C.size_t, outLen *C.size_t) error {
	if outLen == nil {
		return invalidArg("krabka: out_len is NULL")
	}
	*outLen = C.size_t(len(enc))
	if uint64(size) < uint64(len(enc)) {
		return &cError{C.KRABKA_ERR_BUFFER_TOO_SMALL, "krabka: buffer too small: need " + itoa(len(enc)) + " bytes"}
	}
	if buf == nil {
		if len(enc) == 0 {
			return nil
		}
		return invalidArg("krabka: buf is NULL")
	}
	copy(unsafe.Slice((*byte)(unsafe.Pointer(buf)), len(enc)), enc)
	return nil
}

func itoa(n int) string { return strconv.Itoa(n) }

func goKey(k *C.kc_ckey_t) (core.Key, error) {
	rb, err := getName(&k.role, k.role_len, "role")
	if err != nil {
		return core.Key{}, err
	}
	r, err := core.RoleFromBytes(rb)
	if err != nil {
		return core.Key{}, err
	}
	switch k.kind {
	case C.KRABKA_KIND_LEASE:
		return core.LeaseKey(r), nil
	case C.KRABKA_KIND_REGISTRATION:
		mb, err := getName(&k.member, k.member_len, "member")
		if err != nil {
			return core.Key{}, err
		}
		m, err := core.MemberIDFromBytes(mb)
		if err != nil {
			return core.Key{}, err
		}
		return core.RegistrationKey(r, m), nil
	}
	return core.Key{}, &cError{C.KRABKA_ERR_UNKNOWN_KIND, "krabka: key: kind: unknown_kind: " + itoa(int(k.kind))}
}

func goMember(buf *[C.KRABKA_NAME_BUF]C.char, n C.uint32_t) (core.MemberID, error) {
	mb, err := getName(buf, n, "member")
	if err != nil {
		return core.MemberID{}, err
	}
	return core.MemberIDFromBytes(mb)
}

func goLease(v *C.kc_clease_t) (core.Lease, error) {
	m, err := goMember(&v.member, v.member_len)
	if err != nil {
		return core.Lease{}, err
	}
	t, err := core.NewFencingToken(int64(v.token.producer_id), int16(v.token.producer_epoch))
	if err != nil {
		return core.Lease{}, err
	}
	return core.Lease{Member: m, Token: t, GrantedAt: int64(v.granted_at), Deadline: int64(v.deadline)}, nil
}

func cLease(out *C.krabka_lease_t, l core.Lease) {
	out.member_len = putName(&out.member, l.Member.String())
	out.token = cToken(l.Token)
	out.granted_at = C.int64_t(l.GrantedAt)
	out.deadline = C.int64_t(l.Deadline)
}

// encode is a krabka_*_encode: it checks the input (what names it), converts
// it with conv and writes enc's bytes with output.
func encode[I, V any](in *I, what string, conv func(*I) (V, error), enc func(V) []byte, buf *C.uint8_t, size C.size_t, outLen *C.size_t) error {
	if in == nil {
		return invalidArg("krabka: %s is NULL", what)
	}
	v, err := conv(in)
	if err != nil {
		return err
	}
	return output(enc(v), buf, size, outLen)
}

// decode is a krabka_*_decode: it copies the data in, checks out, decodes
// with dec and writes the value with put.
func decode[V, O any](data *C.kc_cuint8_t, n C.size_t, out *O, dec func([]byte) (V, error), put func(*O, V)) error {
	b, err := cBytesU8(data, n, "data")
	if err != nil {
		return err
	}
	if out == nil {
		return invalidArg("krabka: out is NULL")
	}
	v, err := dec(b)
	if err != nil {
		return err
	}
	put(out, v)
	return nil
}

func cKey(out *C.krabka_key_t, k core.Key) {
	out.kind = C.int32_t(k.Kind)
	out.role_len = putName(&out.role, k.Role.String())
	out.member_len = putName(&out.member, k.Member.String())
}

func goRegistration(v *C.kc_cregistration_t) (core.Registration, error) {
	m, err := goMember(&v.member, v.member_len)
	if err != nil {
		return core.Registration{}, err
	}
	return core.Registration{Member: m, RegisteredAt: int64(v.registered_at)}, nil
}

func cRegistration(out *C.krabka_registration_t, v core.Registration) {
	out.member_len = putName(&out.member, v.Member.String())
	out.registered_at = C.int64_t(v.RegisteredAt)
}

//export kc_go_key_encode
func kc_go_key_encode(key *C.kc_ckey_t, buf *C.uint8_t, buf_size C.size_t, out_len *C.size_t, errstr *C.char, errstr_size C.size_t) (rc C.krabka_err_t) {
	defer guard(&rc, errstr, errstr_size)
	return finish(encode(key, "key", goKey, core.EncodeKey, buf, buf_size, out_len), errstr, errstr_size)
}

//export kc_go_key_decode
func kc_go_key_decode(data *C.kc_cuint8_t, n C.size_t, out *C.krabka_key_t, errstr *C.char, errstr_size C.size_t) (rc C.krabka_err_t) {
	defer guard(&rc, errstr, errstr_size)
	return finish(decode(data, n, out, core.DecodeKey, cKey), errstr, errstr_size)
}

//export kc_go_registration_encode
func kc_go_registration_encode(value *C.kc_cregistration_t, buf *C.uint8_t, buf_size C.size_t, out_len *C.size_t, errstr *C.char, errstr_size C.size_t) (rc C.krabka_err_t) {
	defer guard(&rc, errstr, errstr_size)
	return finish(encode(value, "value", goRegistration, core.EncodeRegistration, buf, buf_size, out_len), errstr, errstr_size)
}

//export kc_go_registration_decode
func kc_go_registration_decode(data *C.kc_cuint8_t, n C.size_t, out *C.krabka_registration_t, errstr *C.char, errstr_size C.size_t) (rc C.krabka_err_t) {
	defer guard(&rc, errstr, errstr_size)
	return finish(decode(data, n, out, core.DecodeRegistration, cRegistration), errstr, errstr_size)
}

//export kc_go_lease_encode
func kc_go_lease_encode(value *C.kc_clease_t, buf *C.uint8_t, buf_size C.size_t, out_len *C.size_t, errstr *C.char, errstr_size C.size_t) (rc C.krabka_err_t) {
	defer guard(&rc, errstr, errstr_size)
	return finish(encode(value, "value", goLease, core.EncodeLease, buf, buf_size, out_len), errstr, errstr_size)
}

//export kc_go_lease_decode
func kc_go_lease_decode(data *C.kc_cuint8_t, n C.size_t, out *C.krabka_lease_t, errstr *C.char, errstr_size C.size_t) (rc C.krabka_err_t) {
	defer guard(&rc, errstr, errstr_size)
	return finish(decode(data, n, out, core.DecodeLease, cLease), errstr, errstr_size)
}
