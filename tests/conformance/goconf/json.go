package goconf

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
)

// obj is one JSON object of a vector file, decoded with UseNumber so that no
// number ever passes through a float64.
type obj map[string]any

// badInput is panicked by the accessors when a vector is malformed; run
// recovers it and reports the vector as failed.
type badInput struct{ msg string }

func bad(format string, a ...any) { panic(badInput{fmt.Sprintf(format, a...)}) }

func (o obj) has(field string) bool { _, ok := o[field]; return ok }

func (o obj) isNull(field string) bool { v, ok := o[field]; return ok && v == nil }

func (o obj) obj(field string) obj {
	v, ok := o[field].(map[string]any)
	if !ok {
		bad("field %q is not an object", field)
	}
	return obj(v)
}

func (o obj) list(field string) []obj {
	v, ok := o[field].([]any)
	if !ok {
		bad("field %q is not an array", field)
	}
	out := make([]obj, len(v))
	for i, e := range v {
		m, ok := e.(map[string]any)
		if !ok {
			bad("field %q[%d] is not an object", field, i)
		}
		out[i] = obj(m)
	}
	return out
}

func (o obj) bool(field string) bool {
	v, ok := o[field].(bool)
	if !ok {
		bad("field %q is not a boolean", field)
	}
	return v
}

// i64 reads a 64-bit quantity, which the suite writes as a JSON string of
// decimal digits.
func (o obj) i64(field string) int64 {
	s, ok := o[field].(string)
	if !ok {
		bad("64-bit field %q is not a string", field)
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		bad("64-bit field %q: %v", field, err)
	}
	return n
}

// int reads a JSON number that must be an integer of the given bit size.
func (o obj) int(field string, bits int) int64 {
	n, ok := o[field].(json.Number)
	if !ok {
		bad("field %q is not a number", field)
	}
	v, err := strconv.ParseInt(n.String(), 10, bits)
	if err != nil {
		bad("field %q: %v", field, err)
	}
	return v
}

// hexBytes decodes a hex field; null gives (nil, true).
func (o obj) hexBytes(field string) (b []byte, null bool) {
	v, ok := o[field]
	if !ok {
		bad("field %q is missing", field)
	}
	if v == nil {
		return nil, true
	}
	s, ok := v.(string)
	if !ok {
		bad("field %q is not a string", field)
	}
	b, err := hex.DecodeString(s)
	if err != nil {
		bad("field %q: %v", field, err)
	}
	return b, false
}

// text returns the bytes of a text field, preferring its _hex companion.
func (o obj) text(field string) string {
	if o.has(field + "_hex") {
		b, null := o.hexBytes(field + "_hex")
		if null {
			bad("field %q_hex is null", field)
		}
		return string(b)
	}
	s, ok := o[field].(string)
	if !ok {
		bad("text field %q is not a string", field)
	}
	return s
}

// optText returns a text field that may be null.
func (o obj) optText(field string) (string, bool) {
	if o.has(field+"_hex") && !o.isNull(field+"_hex") {
		return o.text(field), true
	}
	if o.isNull(field) || !o.has(field) {
		return "", false
	}
	return o.text(field), true
}
