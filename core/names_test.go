package core

import (
	"errors"
	"strings"
	"testing"
)

func TestNamesAcceptUpTo249BytesOfUTF8(t *testing.T) {
	ok := []string{"a", "controller", strings.Repeat("r", 249), strings.Repeat("é", 124) + "x", "a\x00b"}
	for _, s := range ok {
		if _, err := NewRole(s); err != nil {
			t.Errorf("NewRole(%q): %v", s, err)
		}
		if _, err := NewMemberID(s); err != nil {
			t.Errorf("NewMemberID(%q): %v", s, err)
		}
	}
}

func TestNamesRejectEmptyOverlongAndInvalidUTF8WithTheirCategories(t *testing.T) {
	cases := []struct {
		in         string
		role, memb error
	}{
		{"", ErrEmptyRole, ErrEmptyMember},
		{strings.Repeat("r", 250), ErrRoleTooLong, ErrMemberTooLong},
		{strings.Repeat("é", 125), ErrRoleTooLong, ErrMemberTooLong}, // 125 characters, 250 bytes
		{"\xc0\xaf", ErrInvalidUTF8, ErrInvalidUTF8},                 // overlong '/'
		{"\xed\xa0\x80", ErrInvalidUTF8, ErrInvalidUTF8},             // encoded surrogate
		{"ab\xe2\x82", ErrInvalidUTF8, ErrInvalidUTF8},               // cut sequence
	}
	for _, c := range cases {
		if _, err := RoleFromBytes([]byte(c.in)); !errors.Is(err, c.role) {
			t.Errorf("role %q: %v, want %v", c.in, err, c.role)
		}
		if _, err := MemberIDFromBytes([]byte(c.in)); !errors.Is(err, c.memb) {
			t.Errorf("member %q: %v, want %v", c.in, err, c.memb)
		}
	}
	_, err := NewMemberID("")
	var e *Error
	if !errors.As(err, &e) || e.Part != PartMember || e.Field != "member" {
		t.Errorf("member error does not name its part and field: %+v", err)
	}
}

func TestZeroNamesAreReportedAsZero(t *testing.T) {
	if !(Role{}).IsZero() || MustRole("x").IsZero() || !(MemberID{}).IsZero() || MustMemberID("x").IsZero() {
		t.Error("IsZero is wrong")
	}
}
