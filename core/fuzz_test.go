package core

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// vectorSeeds returns the hex inputs of the conformance vectors for part
// (codec and decode_failure vectors), so the fuzzers start from every shape
// the suite knows.
func vectorSeeds(f *testing.F, part string) [][]byte {
	f.Helper()
	var out [][]byte
	for _, name := range []string{"codec.json", "decode_failures.json", "tombstones.json"} {
		data, err := os.ReadFile(filepath.Join("..", "tests", "conformance", "vectors", name))
		if err != nil {
			f.Logf("no vector seeds from %s: %v", name, err)
			continue
		}
		var file struct {
			Vectors []struct {
				Part     string  `json:"part"`
				Hex      *string `json:"hex"`
				ValueHex *string `json:"value_hex"`
			} `json:"vectors"`
		}
		if err := json.Unmarshal(data, &file); err != nil {
			f.Fatal(err)
		}
		for _, v := range file.Vectors {
			if v.Part != part {
				continue
			}
			for _, h := range []*string{v.Hex, v.ValueHex} {
				if h == nil {
					continue
				}
				b, err := hex.DecodeString(*h)
				if err != nil {
					f.Fatal(err)
				}
				out = append(out, b)
			}
		}
	}
	return out
}

func addSeeds(f *testing.F, part string, golden ...string) {
	for _, g := range golden {
		f.Add(mustHex(f, g))
	}
	for _, b := range vectorSeeds(f, part) {
		f.Add(b)
	}
}

// Every input either fails with a typed *Error or decodes to a key that
// re-encodes to exactly the input bytes.
func FuzzDecodeKey(f *testing.F) {
	addSeeds(f, "key", goldenRegistrationKey, goldenLeaseKey)
	f.Fuzz(func(t *testing.T, b []byte) {
		k, err := DecodeKey(b)
		if err != nil {
			if _, ok := CategoryOf(err); !ok {
				t.Fatalf("untyped error %v", err)
			}
			return
		}
		if again := EncodeKey(k); !bytes.Equal(again, b) {
			t.Fatalf("accepted %x, re-encoded %x", b, again)
		}
	})
}

// FuzzDecodeRegistration: as FuzzDecodeKey, for registration values.
func FuzzDecodeRegistration(f *testing.F) {
	addSeeds(f, "registration_value", goldenRegistrationValue)
	f.Fuzz(func(t *testing.T, b []byte) {
		v, err := DecodeRegistration(b)
		if err != nil {
			if _, ok := CategoryOf(err); !ok {
				t.Fatalf("untyped error %v", err)
			}
			return
		}
		if again := EncodeRegistration(v); !bytes.Equal(again, b) {
			t.Fatalf("accepted %x, re-encoded %x", b, again)
		}
	})
}

// FuzzDecodeLease: as FuzzDecodeKey, for lease values; an accepted lease
// also carries a valid token.
func FuzzDecodeLease(f *testing.F) {
	addSeeds(f, "lease_value", goldenLeaseValue)
	f.Fuzz(func(t *testing.T, b []byte) {
		v, err := DecodeLease(b)
		if err != nil {
			if _, ok := CategoryOf(err); !ok {
				t.Fatalf("untyped error %v", err)
			}
			return
		}
		if _, err := NewFencingToken(v.Token.ProducerID, v.Token.ProducerEpoch); err != nil {
			t.Fatalf("accepted a lease with token %v: %v", v.Token, err)
		}
		if again := EncodeLease(v); !bytes.Equal(again, b) {
			t.Fatalf("accepted %x, re-encoded %x", b, again)
		}
	})
}

// Every text either fails with a typed error or parses to a valid token whose
// text form parses back to the same token.
func FuzzParseFencingToken(f *testing.F) {
	for _, s := range []string{"4242:7", "0:0", "-1:-1", "+4242:+7", "-0:-0", "9223372036854775807:32767",
		"9223372036854775808:0", "4242:32768", "4242::7", " 4242:7", "\u0664\u0662:7", "4242\uff1a7", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		tok, err := ParseFencingToken(s)
		if err != nil {
			if c, ok := CategoryOf(err); !ok || (c != CatTokenForm && c != CatNegativeToken) {
				t.Fatalf("%q: unexpected error %v", s, err)
			}
			return
		}
		if tok.ProducerID < 0 || tok.ProducerEpoch < 0 {
			t.Fatalf("%q parsed to negative token %v", s, tok)
		}
		again, err := ParseFencingToken(tok.String())
		if err != nil || again != tok {
			t.Fatalf("%q -> %v -> %q -> %v, %v", s, tok, tok.String(), again, err)
		}
	})
}
