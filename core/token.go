package core

import (
	"fmt"
	"strconv"
	"strings"
)

// FencingToken is the pair (producer id, producer epoch) that the Kafka
// transaction coordinator minted for a role. Tokens order lexicographically:
// producer id first, then epoch.
type FencingToken struct {
	ProducerID    int64
	ProducerEpoch int16
}

// NoEpoch is the token of a role nobody has taken: (-1,-1). It ranks below
// every minted token and equals only itself.
var NoEpoch = FencingToken{ProducerID: -1, ProducerEpoch: -1}

// NewFencingToken builds a token from its two values, both of which must be
// non-negative (negative_token).
func NewFencingToken(id int64, epoch int16) (FencingToken, error) {
	if id < 0 {
		return FencingToken{}, newErr(PartToken, CatNegativeToken, "producer_id", fmt.Sprintf("%d is negative", id))
	}
	if epoch < 0 {
		return FencingToken{}, newErr(PartToken, CatNegativeToken, "producer_epoch", fmt.Sprintf("%d is negative", epoch))
	}
	return FencingToken{ProducerID: id, ProducerEpoch: epoch}, nil
}

// Compare returns -1, 0 or 1 when t is below, equal to or above o, comparing
// the producer id first and the epoch second.
func (t FencingToken) Compare(o FencingToken) int {
	switch {
	case t.ProducerID < o.ProducerID:
		return -1
	case t.ProducerID > o.ProducerID:
		return 1
	case t.ProducerEpoch < o.ProducerEpoch:
		return -1
	case t.ProducerEpoch > o.ProducerEpoch:
		return 1
	}
	return 0
}

// Supersedes reports whether t is strictly newer than o.
func (t FencingToken) Supersedes(o FencingToken) bool { return t.Compare(o) > 0 }

// String returns the text form "<producer_id>:<producer_epoch>", for example
// "4242:7"; NoEpoch is "-1:-1".
func (t FencingToken) String() string {
	return strconv.FormatInt(t.ProducerID, 10) + ":" + strconv.FormatInt(int64(t.ProducerEpoch), 10)
}

// ParseFencingToken parses the text form. It requires exactly one colon, a
// signed 64-bit producer id and a signed 16-bit epoch in ASCII decimal (an
// optional leading '+' or '-' each, no spaces), else token_form; a well-formed
// token with a negative part is negative_token.
func ParseFencingToken(s string) (FencingToken, error) {
	i := strings.IndexByte(s, ':')
	if i < 0 || strings.IndexByte(s[i+1:], ':') >= 0 {
		return FencingToken{}, newErr(PartToken, CatTokenForm, "text", "must contain exactly one colon")
	}
	id, ok := parseDecimal(s[:i], 64)
	if !ok {
		return FencingToken{}, newErr(PartToken, CatTokenForm, "producer_id", "is not a 64-bit decimal integer")
	}
	ep, ok := parseDecimal(s[i+1:], 16)
	if !ok {
		return FencingToken{}, newErr(PartToken, CatTokenForm, "producer_epoch", "is not a 16-bit decimal integer")
	}
	return NewFencingToken(id, int16(ep))
}

// parseDecimal parses an optionally signed run of ASCII digits that fits in a
// signed integer of the given bit size.
func parseDecimal(s string, bits int) (int64, bool) {
	digits := s
	if len(digits) > 0 && (digits[0] == '+' || digits[0] == '-') {
		digits = digits[1:]
	}
	if len(digits) == 0 {
		return 0, false
	}
	for i := 0; i < len(digits); i++ {
		if digits[i] < '0' || digits[i] > '9' {
			return 0, false
		}
	}
	v, err := strconv.ParseInt(s, 10, bits)
	if err != nil {
		return 0, false
	}
	return v, true
}
