package core

import (
	"encoding/binary"
	"fmt"
	"unicode/utf8"
)

// Kind is the record kind written in a key.
//
//krabka:enum krabka_kind_t prefix=Kind
type Kind int8

// The two record kinds.
const (
	KindRegistration Kind = 0
	KindLease        Kind = 1
)

// recordVersion is the only version of every key and value.
const recordVersion = 0

// Key is the key of a record in __coordination_state. Member is the zero
// MemberID for a lease key.
type Key struct {
	Kind   Kind
	Role   Role
	Member MemberID
}

// Registration is the value of a registration record.
type Registration struct {
	Member       MemberID
	RegisteredAt int64
}

// Lease is the value of a lease record: who holds the role, under which
// token, and until when (epoch milliseconds).
type Lease struct {
	Member    MemberID
	Token     FencingToken
	GrantedAt int64
	Deadline  int64
}

// RegistrationKey returns the key of member m's registration in role r.
func RegistrationKey(r Role, m MemberID) Key {
	return Key{Kind: KindRegistration, Role: r, Member: m}
}

// LeaseKey returns the key of role r's lease.
func LeaseKey(r Role) Key { return Key{Kind: KindLease, Role: r} }

func appendString(dst []byte, s string) []byte {
	dst = binary.BigEndian.AppendUint16(dst, uint16(len(s)))
	return append(dst, s...)
}

// AppendKey appends the encoding of k to dst. A lease key always carries the
// empty member string, whatever k.Member holds.
func AppendKey(dst []byte, k Key) []byte {
	dst = binary.BigEndian.AppendUint16(dst, recordVersion)
	dst = binary.BigEndian.AppendUint16(dst, uint16(int16(k.Kind)))
	dst = appendString(dst, k.Role.s)
	if k.Kind == KindLease {
		return appendString(dst, "")
	}
	return appendString(dst, k.Member.s)
}

// EncodeKey returns the encoding of k.
func EncodeKey(k Key) []byte { return AppendKey(make([]byte, 0, 8+len(k.Role.s)+len(k.Member.s)), k) }

// AppendRegistration appends the encoding of v to dst.
func AppendRegistration(dst []byte, v Registration) []byte {
	dst = binary.BigEndian.AppendUint16(dst, recordVersion)
	dst = appendString(dst, v.Member.s)
	return binary.BigEndian.AppendUint64(dst, uint64(v.RegisteredAt))
}

// EncodeRegistration returns the encoding of v.
func EncodeRegistration(v Registration) []byte {
	return AppendRegistration(make([]byte, 0, 12+len(v.Member.s)), v)
}

// AppendLease appends the encoding of v to dst.
func AppendLease(dst []byte, v Lease) []byte {
	dst = binary.BigEndian.AppendUint16(dst, recordVersion)
	dst = appendString(dst, v.Member.s)
	dst = binary.BigEndian.AppendUint64(dst, uint64(v.Token.ProducerID))
	dst = binary.BigEndian.AppendUint16(dst, uint16(v.Token.ProducerEpoch))
	dst = binary.BigEndian.AppendUint64(dst, uint64(v.GrantedAt))
	return binary.BigEndian.AppendUint64(dst, uint64(v.Deadline))
}

// EncodeLease returns the encoding of v.
func EncodeLease(v Lease) []byte { return AppendLease(make([]byte, 0, 30+len(v.Member.s)), v) }

// IsTombstone reports whether a value read from the log is a tombstone: a
// null value, or (when reading only) a zero-length one.
func IsTombstone(value []byte) bool { return len(value) == 0 }

// TombstoneValue returns the value a tombstone is written with: nil, a null
// value, never an empty byte string.
func TombstoneValue() []byte { return nil }

// reader walks a byte slice. It never slices beyond the buffer and never
// allocates from a length read from the buffer before checking that the
// buffer holds that many bytes.
type reader struct {
	b    []byte
	off  int
	part Part
}

func (r *reader) truncated(field string, need int) *Error {
	return newErr(r.part, CatTruncated, field,
		fmt.Sprintf("needs %d bytes at offset %d, only %d left", need, r.off, len(r.b)-r.off))
}

func (r *reader) u16(field string) (uint16, *Error) {
	if len(r.b)-r.off < 2 {
		return 0, r.truncated(field, 2)
	}
	v := binary.BigEndian.Uint16(r.b[r.off:])
	r.off += 2
	return v, nil
}

func (r *reader) i64(field string) (int64, *Error) {
	if len(r.b)-r.off < 8 {
		return 0, r.truncated(field, 8)
	}
	v := binary.BigEndian.Uint64(r.b[r.off:])
	r.off += 8
	return int64(v), nil
}

func (r *reader) version() *Error {
	v, err := r.u16("version")
	if err != nil {
		return err
	}
	if v != recordVersion {
		return newErr(r.part, CatUnsupportedVersion, "version", fmt.Sprintf("is %d, only 0 is supported", int16(v)))
	}
	return nil
}

// str reads a string's bytes (i16 length + bytes) without copying and
// checks that they are valid UTF-8.
func (r *reader) str(field string) ([]byte, *Error) {
	if len(r.b)-r.off < 2 {
		return nil, r.truncated(field+" length", 2)
	}
	n := binary.BigEndian.Uint16(r.b[r.off:])
	r.off += 2
	if int16(n) < 0 {
		return nil, newErr(r.part, CatNegativeLength, field, fmt.Sprintf("length %d is negative", int16(n)))
	}
	if len(r.b)-r.off < int(n) {
		return nil, r.truncated(field, int(n))
	}
	s := r.b[r.off : r.off+int(n)]
	r.off += int(n)
	if !utf8.Valid(s) {
		return nil, newErr(r.part, CatInvalidUTF8, field, "is not valid UTF-8")
	}
	return s, nil
}

// checkName validates a role or member name read by str.
func checkName(p Part, field string, s []byte, empty, tooLong Category) *Error {
	if len(s) == 0 {
		return newErr(p, empty, field, "must not be empty")
	}
	if len(s) > MaxNameBytes {
		return newErr(p, tooLong, field, fmt.Sprintf("is %d bytes, at most %d allowed", len(s), MaxNameBytes))
	}
	return nil
}

func (r *reader) end() *Error {
	if r.off != len(r.b) {
		return newErr(r.part, CatTrailingBytes, "", fmt.Sprintf("%d bytes after the last field", len(r.b)-r.off))
	}
	return nil
}

// keyView is a decoded key whose names still point into the input.
type keyView struct {
	kind   Kind
	role   []byte
	member []byte
}

func decodeKeyView(b []byte) (keyView, *Error) {
	r := reader{b: b, part: PartKey}
	if err := r.version(); err != nil {
		return keyView{}, err
	}
	k, err := r.u16("kind")
	if err != nil {
		return keyView{}, err
	}
	kind := Kind(int16(k))
	if int16(k) != int16(KindRegistration) && int16(k) != int16(KindLease) {
		return keyView{}, newErr(PartKey, CatUnknownKind, "kind", fmt.Sprintf("is %d, expected 0 or 1", int16(k)))
	}
	role, err := r.str("role")
	if err != nil {
		return keyView{}, err
	}
	member, err := r.str("member")
	if err != nil {
		return keyView{}, err
	}
	if err := r.end(); err != nil {
		return keyView{}, err
	}
	if err := checkName(PartKey, "role", role, CatEmptyRole, CatRoleTooLong); err != nil {
		return keyView{}, err
	}
	if kind == KindLease {
		if len(member) != 0 {
			return keyView{}, newErr(PartKey, CatLeaseKeyHasMember, "member", "must be empty in a lease key")
		}
	} else if err := checkName(PartKey, "member", member, CatEmptyMember, CatMemberTooLong); err != nil {
		return keyView{}, err
	}
	return keyView{kind: kind, role: role, member: member}, nil
}

// The decoders first walk the structure (fixed-width fields, string lengths,
// UTF-8, trailing bytes) and then check the rules on the values (names, the
// lease-key member, the token sign), so that a structurally broken record is
// always reported as such.

// DecodeKey decodes a record key. It rejects short buffers, trailing bytes,
// versions other than 0, unknown kinds, negative lengths, invalid UTF-8, empty
// or over-long names and a lease key that names a member.
func DecodeKey(b []byte) (Key, error) {
	v, err := decodeKeyView(b)
	if err != nil {
		return Key{}, err
	}
	k := Key{Kind: v.kind, Role: Role{string(v.role)}}
	if v.kind == KindRegistration {
		k.Member = MemberID{string(v.member)}
	}
	return k, nil
}

// DecodeRegistration decodes a registration value (never a tombstone: see
// IsTombstone).
func DecodeRegistration(b []byte) (Registration, error) {
	m, at, err := decodeRegistrationView(b)
	if err != nil {
		return Registration{}, err
	}
	return Registration{Member: MemberID{string(m)}, RegisteredAt: at}, nil
}

// decodeRegistrationView decodes a registration value without copying the
// member name out of b.
func decodeRegistrationView(b []byte) ([]byte, int64, *Error) {
	r := reader{b: b, part: PartRegistrationValue}
	if err := r.version(); err != nil {
		return nil, 0, err
	}
	m, err := r.str("member")
	if err != nil {
		return nil, 0, err
	}
	at, err := r.i64("registered_at")
	if err != nil {
		return nil, 0, err
	}
	if err := r.end(); err != nil {
		return nil, 0, err
	}
	if err := checkName(r.part, "member", m, CatEmptyMember, CatMemberTooLong); err != nil {
		return nil, 0, err
	}
	return m, at, nil
}

// DecodeLease decodes a lease value (never a tombstone: see IsTombstone). It
// also rejects a negative producer id or epoch.
func DecodeLease(b []byte) (Lease, error) {
	m, l, err := decodeLeaseView(b)
	if err != nil {
		return Lease{}, err
	}
	l.Member = MemberID{string(m)}
	return l, nil
}

// decodeLeaseView decodes a lease value without copying the member name out
// of b; the returned Lease has a zero Member.
func decodeLeaseView(b []byte) ([]byte, Lease, *Error) {
	r := reader{b: b, part: PartLeaseValue}
	if err := r.version(); err != nil {
		return nil, Lease{}, err
	}
	m, err := r.str("member")
	if err != nil {
		return nil, Lease{}, err
	}
	id, err := r.i64("producer_id")
	if err != nil {
		return nil, Lease{}, err
	}
	ep, err := r.u16("producer_epoch")
	if err != nil {
		return nil, Lease{}, err
	}
	granted, err := r.i64("granted_at")
	if err != nil {
		return nil, Lease{}, err
	}
	deadline, err := r.i64("deadline")
	if err != nil {
		return nil, Lease{}, err
	}
	if err := r.end(); err != nil {
		return nil, Lease{}, err
	}
	if err := checkName(r.part, "member", m, CatEmptyMember, CatMemberTooLong); err != nil {
		return nil, Lease{}, err
	}
	if id < 0 {
		return nil, Lease{}, newErr(PartLeaseValue, CatNegativeToken, "producer_id", fmt.Sprintf("%d is negative", id))
	}
	if int16(ep) < 0 {
		return nil, Lease{}, newErr(PartLeaseValue, CatNegativeToken, "producer_epoch", fmt.Sprintf("%d is negative", int16(ep)))
	}
	return m, Lease{
		Token:     FencingToken{ProducerID: id, ProducerEpoch: int16(ep)},
		GrantedAt: granted,
		Deadline:  deadline,
	}, nil
}
