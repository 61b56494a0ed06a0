package core

import (
	"fmt"
	"unicode/utf8"
)

// MaxNameBytes is the longest role or member id, in bytes of UTF-8.
const MaxNameBytes = 249

// Role is a validated role name: non-empty, valid UTF-8, at most MaxNameBytes
// bytes. The zero Role is not valid; it is what a decoder never returns.
type Role struct{ s string }

// MemberID is a validated member id, under the same rules as Role.
type MemberID struct{ s string }

// validateName checks the name rules and returns nil or an *Error of part p
// naming field.
func validateName(s string, p Part, field string, empty, tooLong Category) *Error {
	if len(s) == 0 {
		return newErr(p, empty, field, "must not be empty")
	}
	if len(s) > MaxNameBytes {
		return newErr(p, tooLong, field, fmt.Sprintf("is %d bytes, at most %d allowed", len(s), MaxNameBytes))
	}
	if !utf8.ValidString(s) {
		return newErr(p, CatInvalidUTF8, field, "is not valid UTF-8")
	}
	return nil
}

// NewRole validates s as a role name.
func NewRole(s string) (Role, error) {
	if err := validateName(s, PartRole, "role", CatEmptyRole, CatRoleTooLong); err != nil {
		return Role{}, err
	}
	return Role{s}, nil
}

// RoleFromBytes validates b as a role name and copies it.
func RoleFromBytes(b []byte) (Role, error) { return NewRole(string(b)) }

// MustRole is NewRole that panics on an invalid name; for tests and examples.
func MustRole(s string) Role {
	r, err := NewRole(s)
	if err != nil {
		panic(err)
	}
	return r
}

// String returns the role name.
func (r Role) String() string { return r.s }

// IsZero reports whether r is the zero (unset) Role.
func (r Role) IsZero() bool { return r.s == "" }

// NewMemberID validates s as a member id.
func NewMemberID(s string) (MemberID, error) {
	if err := validateName(s, PartMember, "member", CatEmptyMember, CatMemberTooLong); err != nil {
		return MemberID{}, err
	}
	return MemberID{s}, nil
}

// MemberIDFromBytes validates b as a member id and copies it.
func MemberIDFromBytes(b []byte) (MemberID, error) { return NewMemberID(string(b)) }

// MustMemberID is NewMemberID that panics on an invalid id; for tests and
// examples.
func MustMemberID(s string) MemberID {
	m, err := NewMemberID(s)
	if err != nil {
		panic(err)
	}
	return m
}

// String returns the member id.
func (m MemberID) String() string { return m.s }

// IsZero reports whether m is the zero (unset) MemberID.
func (m MemberID) IsZero() bool { return m.s == "" }
