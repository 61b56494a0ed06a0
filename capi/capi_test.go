package main

import (
	"errors"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
	"unsafe"

	"github.com/krabka/krabka-coord/core"
	"github.com/krabka/krabka-coord/core/coord"
)

// Every category word of the conformance vocabulary maps onto the code of
// the same name (truncated -> KRABKA_ERR_TRUNCATED), and no two share one.
func TestEveryCategoryMapsOntoTheCodeOfTheSameName(t *testing.T) {
	words := []core.Category{
		core.CatTruncated, core.CatTrailingBytes, core.CatUnsupportedVersion, core.CatUnknownKind,
		core.CatNegativeLength, core.CatInvalidUTF8, core.CatLeaseKeyHasMember, core.CatEmptyRole,
		core.CatEmptyMember, core.CatRoleTooLong, core.CatMemberTooLong, core.CatNegativeToken,
		core.CatTokenForm, core.CatInvalidPartitionCount, core.CatInvalidLeaseConfig,
	}
	seen := map[int]core.Category{}
	for _, w := range words {
		code, ok := categoryCodes[w]
		if !ok {
			t.Errorf("category %s has no code", w)
			continue
		}
		if prev, dup := seen[int(code)]; dup {
			t.Errorf("categories %s and %s share code %d", prev, w, int(code))
		}
		seen[int(code)] = w
		if got := errTable[code].name; got != strings.ToUpper(string(w)) {
			t.Errorf("category %s maps onto %s", w, got)
		}
		// And a real error of that category from core goes there.
		if got := codeOf(&core.Error{Category: w}); got != code {
			t.Errorf("codeOf(%s error) = %d, want %d", w, int(got), int(code))
		}
	}
	if len(categoryCodes) != len(words) {
		t.Errorf("categoryCodes has %d entries, the vocabulary %d", len(categoryCodes), len(words))
	}
}

// Every client sentinel, wrapped as core wraps it, maps onto its code.
func TestClientErrorsMapOntoTheirCodes(t *testing.T) {
	for name, err := range map[string]error{
		"FENCED": coord.ErrFenced, "LEASE_EXPIRED": coord.ErrLeaseExpired, "NOT_LEADER": coord.ErrNotLeader,
		"CLOSED": coord.ErrClosed, "TIMEOUT": coord.ErrTimeout, "AUTHORIZATION": coord.ErrAuthorization,
		"UNSUPPORTED": coord.ErrUnsupported, "TRANSPORT": coord.ErrTransport,
		"UNKNOWN_CONFIG": coord.ErrUnknownConfig, "INVALID_CONFIG": coord.ErrInvalidConfig,
		"INVALID_ARG": coord.ErrInvalidArgument, "AUTHENTICATION": coord.ErrAuthentication,
		"MESSAGE_TOO_LARGE": coord.ErrMessageTooLarge, "UNKNOWN_TOPIC_OR_PARTITION": coord.ErrUnknownTopicOrPartition,
		"TLS": coord.ErrTLS,
	} {
		wrapped := coord.WrapError(err, errors.New("cause"), "role %s", "r")
		if got := errTable[codeOf(wrapped)].name; got != name {
			t.Errorf("%v maps onto %s, want %s", wrapped, got, name)
		}
	}
	// A fence caused by a transport error is still FENCED: the loss signal wins.
	both := coord.WrapError(coord.ErrFenced, coord.WrapError(coord.ErrTransport, nil, "io"), "")
	if got := errTable[codeOf(both)].name; got != "FENCED" {
		t.Errorf("fenced over transport maps onto %s", got)
	}
}

// The new codes keep their numbers and flags: permanent, not retriable.
func TestNewCodesArePermanent(t *testing.T) {
	for code, name := range map[int]string{38: "AUTHENTICATION", 39: "MESSAGE_TOO_LARGE", 40: "UNKNOWN_TOPIC_OR_PARTITION", 41: "TLS", 42: "FORKED"} {
		e, ok := errTable[cErr(code)]
		if !ok || e.name != name || e.retriable {
			t.Errorf("%d: %+v", code, e)
		}
	}
}

func TestAnUnclassifiedErrorIsInternal(t *testing.T) {
	if got := errTable[codeOf(fmt.Errorf("surprise"))].name; got != "INTERNAL" {
		t.Errorf("got %s", got)
	}
}

func TestErrstrIsTruncatedOnARuneBoundaryWithANul(t *testing.T) {
	msg := "krabka: role: ż" // 'ż' is two bytes
	for size := 1; size <= len(msg)+3; size++ {
		buf := make([]byte, size+2)
		for i := range buf {
			buf[i] = 'Z'
		}
		truncateInto(buf[:size], msg)
		n := strings.IndexByte(string(buf), 0)
		if n < 0 || n > size-1 || !utf8.ValidString(string(buf[:n])) || !strings.HasPrefix(msg, string(buf[:n])) {
			t.Fatalf("size %d: got %q", size, buf)
		}
		if buf[size] != 'Z' || buf[size+1] != 'Z' {
			t.Fatalf("size %d: wrote past the buffer", size)
		}
	}
}

func TestHandlesAreCheckedForLifeAndKind(t *testing.T) {
	p := newHandle(kindConf, "object")
	if o, err := lookup(p, kindConf); err != nil || o != "object" {
		t.Fatalf("lookup: %v %v", o, err)
	}
	if _, err := lookup(p, kindClient); err == nil || !strings.Contains(err.Error(), "krabka_conf_t") {
		t.Fatalf("wrong kind: %v", err)
	}
	if _, err := lookup(nil, kindConf); err == nil {
		t.Fatal("NULL accepted")
	}
	var local byte
	if _, err := lookup(unsafe.Pointer(&local), kindConf); err == nil {
		t.Fatal("made-up handle accepted")
	}
	if _, err := release(p, kindConf); err != nil {
		t.Fatal(err)
	}
	if _, err := release(p, kindConf); err == nil || !strings.Contains(err.Error(), "destroyed") {
		t.Fatalf("double release: %v", err)
	}
	if _, err := lookup(p, kindConf); err == nil {
		t.Fatal("destroyed handle accepted")
	}
}

// A destroyed handle's address stays reserved until quarantineSize later
// destroys, so a new handle cannot take it over sooner.
func TestDestroyedHandlesStayQuarantined(t *testing.T) {
	for i := 0; i < quarantineSize; i++ { // a full quarantine, whatever ran before
		release(newHandle(kindStatus, i), kindStatus)
	}
	first := newHandle(kindStatus, 1)
	release(first, kindStatus)
	for i := 0; i < quarantineSize-1; i++ {
		p := newHandle(kindStatus, i)
		if p == first {
			t.Fatalf("address reused after %d destroys", i)
		}
		release(p, kindStatus)
	}
	if _, err := lookup(first, kindStatus); err == nil || !strings.Contains(err.Error(), "destroyed") {
		t.Fatalf("quarantined handle: %v", err)
	}
	release(newHandle(kindStatus, 0), kindStatus) // evicts first
	if _, err := lookup(first, kindStatus); err == nil || !strings.Contains(err.Error(), "unknown") {
		t.Fatalf("evicted handle: %v", err)
	}
}

// The event types capi names (eventTypeName, from the generated headerEnums, used in the accessors'
// errors) are exactly the header's krabka_event_type_t.
func TestEventTypeNamesAreTheHeadersEnum(t *testing.T) {
	hdr, err := os.ReadFile("../include/krabka_coord.h")
	if err != nil {
		t.Fatal(err)
	}
	s := string(hdr)
	i := strings.Index(s, "typedef enum krabka_event_type {")
	if i < 0 {
		t.Fatal("no krabka_event_type_t in the header")
	}
	s = s[i:]
	s = s[:strings.Index(s, "}")]
	header := map[int]string{}
	for _, m := range regexp.MustCompile(`\b(KRABKA_EVENT_[A-Z_]+)\s*=\s*(\d+)`).FindAllStringSubmatch(s, -1) {
		n, _ := strconv.Atoi(m[2])
		if prev, dup := header[n]; dup {
			t.Errorf("%s and %s share %d", prev, m[1], n)
		}
		header[n] = m[1]
	}
	got := eventTypeTable()
	if len(header) < 13 || len(got) != len(header) {
		t.Fatalf("header has %d event types, capi names %d", len(header), len(got))
	}
	for n, name := range header {
		if got[n] != name {
			t.Errorf("event type %d: header %s, capi %q", n, name, got[n])
		}
	}
}
