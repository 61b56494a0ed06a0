package core

import (
	"errors"
	"testing"
)

func TestTokensOrderByProducerIDThenEpoch(t *testing.T) {
	cases := []struct {
		a, b FencingToken
		want int
	}{
		{FencingToken{5, 0}, FencingToken{4, 32767}, 1}, // new producer id after epoch exhaustion
		{FencingToken{4, 7}, FencingToken{4, 8}, -1},
		{FencingToken{4, 7}, FencingToken{4, 7}, 0},
		{NoEpoch, FencingToken{0, 0}, -1},
		{NoEpoch, NoEpoch, 0},
	}
	for _, c := range cases {
		if got := c.a.Compare(c.b); got != c.want {
			t.Errorf("%v.Compare(%v) = %d, want %d", c.a, c.b, got, c.want)
		}
		if got := c.b.Compare(c.a); got != -c.want {
			t.Errorf("%v.Compare(%v) = %d, want %d", c.b, c.a, got, -c.want)
		}
		if got := c.a.Supersedes(c.b); got != (c.want == 1) {
			t.Errorf("%v.Supersedes(%v) = %v", c.a, c.b, got)
		}
	}
}

func TestNewFencingTokenRejectsNegativeParts(t *testing.T) {
	for _, c := range [][2]int64{{-1, 0}, {0, -1}, {-1, -1}} {
		if _, err := NewFencingToken(c[0], int16(c[1])); !errors.Is(err, ErrNegativeToken) {
			t.Errorf("NewFencingToken(%d, %d): %v, want negative_token", c[0], c[1], err)
		}
	}
	if tok, err := NewFencingToken(0, 0); err != nil || tok != (FencingToken{}) {
		t.Errorf("NewFencingToken(0, 0) = %v, %v", tok, err)
	}
}

func TestTokenTextRoundTripsAndRejectsMalformedText(t *testing.T) {
	if s := (FencingToken{4242, 7}).String(); s != "4242:7" {
		t.Errorf("String = %q", s)
	}
	if s := NoEpoch.String(); s != "-1:-1" {
		t.Errorf("NoEpoch.String = %q", s)
	}
	good := map[string]FencingToken{
		"4242:7": {4242, 7}, "+4242:+7": {4242, 7}, "-0:-0": {0, 0},
		"9223372036854775807:32767": {9223372036854775807, 32767},
	}
	for s, want := range good {
		if got, err := ParseFencingToken(s); err != nil || got != want {
			t.Errorf("ParseFencingToken(%q) = %v, %v, want %v", s, got, err, want)
		}
	}
	form := []string{"", "4242", "4242:7:1", ":7", "4242:", "4242:32768", "9223372036854775808:0",
		" 4242:7", "4242:7 ", "0x10:1", "1_000:1", "+-1:1", "-:1", "\u0664\u0662:7", "4242\uff1a7"}
	for _, s := range form {
		if _, err := ParseFencingToken(s); !errors.Is(err, ErrTokenForm) {
			t.Errorf("ParseFencingToken(%q): %v, want token_form", s, err)
		}
	}
	for _, s := range []string{"-1:7", "4242:-1", "-1:-1", "4242:-32768"} {
		if _, err := ParseFencingToken(s); !errors.Is(err, ErrNegativeToken) {
			t.Errorf("ParseFencingToken(%q): %v, want negative_token", s, err)
		}
	}
}
