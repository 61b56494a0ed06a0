package core

import (
	"bytes"
	"encoding/hex"
	"errors"
	"strings"
	"testing"
)

// Golden bytes of the frozen format (docs/PROTOCOL.md section 3): role controller,
// member node-1, registered/granted 1700000000000, deadline 1700000030000,
// token 4242:7.
const (
	goldenRegistrationKey   = "00000000000a636f6e74726f6c6c657200066e6f64652d31"
	goldenLeaseKey          = "00000001000a636f6e74726f6c6c65720000"
	goldenRegistrationValue = "000000066e6f64652d310000018bcfe56800"
	goldenLeaseValue        = "000000066e6f64652d31000000000000109200070000018bcfe568000000018bcfe5dd30"
)

func mustHex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func goldenLease() Lease {
	return Lease{Member: MustMemberID("node-1"), Token: FencingToken{4242, 7}, GrantedAt: 1700000000000, Deadline: 1700000030000}
}

func TestGoldenRecordsEncodeByteForByte(t *testing.T) {
	r, m := MustRole("controller"), MustMemberID("node-1")
	cases := []struct {
		name string
		got  []byte
		want string
	}{
		{"registration key", EncodeKey(RegistrationKey(r, m)), goldenRegistrationKey},
		{"lease key", EncodeKey(LeaseKey(r)), goldenLeaseKey},
		{"lease key given a member", EncodeKey(Key{Kind: KindLease, Role: r, Member: m}), goldenLeaseKey},
		{"registration value", EncodeRegistration(Registration{Member: m, RegisteredAt: 1700000000000}), goldenRegistrationValue},
		{"lease value", EncodeLease(goldenLease()), goldenLeaseValue},
	}
	for _, c := range cases {
		if hex.EncodeToString(c.got) != c.want {
			t.Errorf("%s: encoded %x, want %s", c.name, c.got, c.want)
		}
	}
}

func TestGoldenRecordsDecodeToTheirFields(t *testing.T) {
	k, err := DecodeKey(mustHex(t, goldenRegistrationKey))
	if err != nil || k != RegistrationKey(MustRole("controller"), MustMemberID("node-1")) {
		t.Errorf("registration key decoded to %+v, %v", k, err)
	}
	k, err = DecodeKey(mustHex(t, goldenLeaseKey))
	if err != nil || k != LeaseKey(MustRole("controller")) {
		t.Errorf("lease key decoded to %+v, %v", k, err)
	}
	reg, err := DecodeRegistration(mustHex(t, goldenRegistrationValue))
	if err != nil || reg != (Registration{Member: MustMemberID("node-1"), RegisteredAt: 1700000000000}) {
		t.Errorf("registration decoded to %+v, %v", reg, err)
	}
	l, err := DecodeLease(mustHex(t, goldenLeaseValue))
	if err != nil || l != goldenLease() {
		t.Errorf("lease decoded to %+v, %v", l, err)
	}
}

func TestAppendExtendsTheGivenBuffer(t *testing.T) {
	buf := []byte("prefix")
	out := AppendLease(buf, goldenLease())
	if !bytes.Equal(out, append([]byte("prefix"), mustHex(t, goldenLeaseValue)...)) {
		t.Fatalf("AppendLease gave %x", out)
	}
}

func TestDecodeErrorsNameThePartFieldAndProblem(t *testing.T) {
	// A lease value whose producer epoch is -1.
	b := mustHex(t, goldenLeaseValue)
	b[18], b[19] = 0xff, 0xff
	_, err := DecodeLease(b)
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("error %v is not an *Error", err)
	}
	if e.Part != PartLeaseValue || e.Category != CatNegativeToken || e.Field != "producer_epoch" {
		t.Errorf("error = %+v", e)
	}
	if !errors.Is(err, ErrNegativeToken) || errors.Is(err, ErrTruncated) {
		t.Errorf("errors.Is does not match on the category: %v", err)
	}
	if msg := err.Error(); !strings.HasPrefix(msg, "krabka: lease_value: producer_epoch: negative_token: ") {
		t.Errorf("message %q does not name part, field and problem", msg)
	}
	if c, ok := CategoryOf(err); !ok || c != CatNegativeToken {
		t.Errorf("CategoryOf = %q, %v", c, ok)
	}
}

func TestDecodersRejectEveryProperPrefixAsTruncated(t *testing.T) {
	for name, dec := range map[string]func([]byte) error{
		goldenRegistrationKey:   func(b []byte) error { _, err := DecodeKey(b); return err },
		goldenRegistrationValue: func(b []byte) error { _, err := DecodeRegistration(b); return err },
		goldenLeaseValue:        func(b []byte) error { _, err := DecodeLease(b); return err },
	} {
		full := mustHex(t, name)
		for n := 0; n < len(full); n++ {
			if err := dec(full[:n]); !errors.Is(err, ErrTruncated) {
				t.Errorf("%s cut at %d: %v, want truncated", name, n, err)
			}
		}
		if err := dec(append(full, 0)); !errors.Is(err, ErrTrailingBytes) {
			t.Errorf("%s plus one byte: %v, want trailing_bytes", name, err)
		}
	}
}

func TestTombstonesAreNullOrEmptyOnReadAndNullOnWrite(t *testing.T) {
	if !IsTombstone(nil) || !IsTombstone([]byte{}) || IsTombstone([]byte{0}) {
		t.Error("IsTombstone must accept exactly nil and empty values")
	}
	if TombstoneValue() != nil {
		t.Error("a tombstone must be written as a null value")
	}
}
