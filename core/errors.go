// Package core is the pure layer of krabka-coord: names, fencing tokens, the
// frozen version-0 record codec, Kafka's murmur2 and the role partition, the
// role-state fold with ranks, the lease clock and the succession rule.
//
// Nothing in the pure layer performs I/O. Time is int64 epoch milliseconds and
// every piece of time arithmetic saturates at the int64 range instead of
// wrapping.
package core

import (
	"errors"
	"strings"
)

// Category is the error category word of the conformance vocabulary. It never
// changes for a given failure and is what bindings map onto their codes.
type Category string

// One constant per word of the conformance error vocabulary.
const (
	CatTruncated             Category = "truncated"
	CatTrailingBytes         Category = "trailing_bytes"
	CatUnsupportedVersion    Category = "unsupported_version"
	CatUnknownKind           Category = "unknown_kind"
	CatNegativeLength        Category = "negative_length"
	CatInvalidUTF8           Category = "invalid_utf8"
	CatLeaseKeyHasMember     Category = "lease_key_has_member"
	CatEmptyRole             Category = "empty_role"
	CatEmptyMember           Category = "empty_member"
	CatRoleTooLong           Category = "role_too_long"
	CatMemberTooLong         Category = "member_too_long"
	CatNegativeToken         Category = "negative_token"
	CatTokenForm             Category = "token_form"
	CatInvalidPartitionCount Category = "invalid_partition_count"
	CatInvalidLeaseConfig    Category = "invalid_lease_config"
)

// Part names what was being built or decoded when an error occurred.
type Part string

// The parts an Error can name.
const (
	PartKey               Part = "key"
	PartRegistrationValue Part = "registration_value"
	PartLeaseValue        Part = "lease_value"
	PartRole              Part = "role"
	PartMember            Part = "member"
	PartToken             Part = "token"
	PartPartition         Part = "partition"
	PartLeaseConfig       Part = "lease_config"
)

// Error is the single error type of the pure layer. Part says what was being
// built or decoded, Field names the offending field (for example "role" or
// "producer_epoch"), Category is the conformance word and Detail describes the
// problem for humans.
type Error struct {
	Part     Part
	Category Category
	Field    string
	Detail   string
}

// Error formats the error as "krabka: <part>: <field>: <category>: <detail>",
// leaving out the parts that are empty.
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("krabka")
	for _, s := range []string{string(e.Part), e.Field, string(e.Category), e.Detail} {
		if s != "" {
			b.WriteString(": ")
			b.WriteString(s)
		}
	}
	return b.String()
}

// Is reports whether target is an *Error of the same category, so that
// errors.Is(err, ErrInvalidUTF8) matches any invalid-UTF-8 error whatever its
// part or field.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Category == e.Category
}

// Sentinel errors, one per category, for use with errors.Is.
var (
	ErrTruncated             = &Error{Category: CatTruncated}
	ErrTrailingBytes         = &Error{Category: CatTrailingBytes}
	ErrUnsupportedVersion    = &Error{Category: CatUnsupportedVersion}
	ErrUnknownKind           = &Error{Category: CatUnknownKind}
	ErrNegativeLength        = &Error{Category: CatNegativeLength}
	ErrInvalidUTF8           = &Error{Category: CatInvalidUTF8}
	ErrLeaseKeyHasMember     = &Error{Category: CatLeaseKeyHasMember}
	ErrEmptyRole             = &Error{Category: CatEmptyRole}
	ErrEmptyMember           = &Error{Category: CatEmptyMember}
	ErrRoleTooLong           = &Error{Category: CatRoleTooLong}
	ErrMemberTooLong         = &Error{Category: CatMemberTooLong}
	ErrNegativeToken         = &Error{Category: CatNegativeToken}
	ErrTokenForm             = &Error{Category: CatTokenForm}
	ErrInvalidPartitionCount = &Error{Category: CatInvalidPartitionCount}
	ErrInvalidLeaseConfig    = &Error{Category: CatInvalidLeaseConfig}
)

// CategoryOf returns the category of the first *Error in err's chain.
func CategoryOf(err error) (Category, bool) {
	var e *Error
	if errors.As(err, &e) {
		return e.Category, true
	}
	return "", false
}

func newErr(p Part, c Category, field, detail string) *Error {
	return &Error{Part: p, Category: c, Field: field, Detail: detail}
}

// NewError returns the typed data error of part p with category c (for
// layers above core that validate names and values the same way).
func NewError(p Part, c Category, field, detail string) *Error { return newErr(p, c, field, detail) }
