package main

import (
	"strings"
	"testing"
)

// A small header in the style of include/krabka_coord.h, with one of each
// kind of declaration the parser reads (and some it must leave out).
const fixtureHeader = `/* A header comment with krabka_nope(int x); and #define KRABKA_NOPE 1 */
#ifndef KRABKA_FIXTURE_H
#define KRABKA_FIXTURE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define KRABKA_VERSION_MAJOR 2
#define KRABKA_VERSION_MINOR 1
#define KRABKA_VERSION_NUMBER                                                  \
    (KRABKA_VERSION_MAJOR * 10000 + KRABKA_VERSION_MINOR * 100)
#define KRABKA_VERSION_STRING "2.1.0" // a string constant
#define KRABKA_NTS ((size_t)-1)
#define KRABKA_NAME_BUF 256
#define KRABKA_PARTITION_ANY (-1)
#define KRABKA_FLAGS (1 << 3 | 0x4)
#define KRABKA_MAX(a, b) ((a) > (b) ? (a) : (b))
#define KRABKA_MESSAGE_INIT { sizeof(krabka_message_t), NULL, KRABKA_PARTITION_ANY }

typedef enum krabka_err {
    KRABKA_OK = 0,
    KRABKA_ERR_INVALID_ARG = 1, /**< a comment, with a comma */
    KRABKA_ERR_FENCED = 30,
    KRABKA_ERR_NEXT,            /* implicit: 31 */
} krabka_err_t;

typedef enum krabka_leadership_state {
    KRABKA_LEADERSHIP_ACTIVE = 0,
    KRABKA_LEADERSHIP_FENCED = KRABKA_LEADERSHIP_ACTIVE + 1
} krabka_leadership_state_t;

typedef struct krabka_client krabka_client_t;
struct krabka_watch_event;

/** A token. */
typedef struct krabka_token {
    int64_t producer_id;
    int16_t producer_epoch;
} krabka_token_t;

typedef struct krabka_watch_event {
    krabka_leadership_state_t state;
    uint32_t role_len;
    char role[KRABKA_NAME_BUF];
    uint8_t raw[4];
    krabka_token_t token;
    const char *topic;
    krabka_client_t *client;
    const struct krabka_watch_event *next;
} krabka_watch_event_t;

typedef void (*krabka_log_cb)(void *opaque, krabka_leadership_state_t level,
                              const char *line);

const char *krabka_version(void);
krabka_err_t krabka_client_acquire(krabka_client_t *client, const char *role,
                                   size_t role_len, int64_t timeout_ms,
                                   krabka_token_t *out, int *has,
                                   size_t *len, char *errstr,
                                   size_t errstr_size);
krabka_err_t krabka_client_new(const char *name, krabka_client_t **out);
krabka_err_t krabka_client_stats(const krabka_client_t *client, char **json,
                                 const char **line, krabka_log_cb cb);
void krabka_free(void *ptr);

#ifdef __cplusplus
}
#endif
#endif /* KRABKA_FIXTURE_H */
`

func parseFixture(t *testing.T, text string) *header {
	t.Helper()
	h, err := parseHeader(text)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func TestParseDefines(t *testing.T) {
	h := parseFixture(t, fixtureHeader)
	got := map[string]cDefine{}
	var order []string
	for _, d := range h.defines {
		got[d.name] = d
		order = append(order, d.name)
	}
	want := "KRABKA_VERSION_MAJOR KRABKA_VERSION_MINOR KRABKA_VERSION_NUMBER KRABKA_VERSION_STRING KRABKA_NTS KRABKA_NAME_BUF KRABKA_PARTITION_ANY KRABKA_FLAGS"
	if strings.Join(order, " ") != want {
		t.Fatalf("defines %v, want %s (the guard, the function-like macro and the initializer are not constants)", order, want)
	}
	for name, v := range map[string]int64{"KRABKA_VERSION_NUMBER": 20100, "KRABKA_NAME_BUF": 256, "KRABKA_PARTITION_ANY": -1, "KRABKA_FLAGS": 12} {
		if d := got[name]; d.kind != defNumber || d.value != v {
			t.Errorf("%s: %+v, want the number %d", name, d, v)
		}
	}
	if d := got["KRABKA_VERSION_STRING"]; d.kind != defString || d.text != "2.1.0" {
		t.Errorf("string constant: %+v", d)
	}
	if d := got["KRABKA_NTS"]; d.kind != defCast || d.cast != "size_t" || d.value != -1 {
		t.Errorf("cast constant: %+v", d)
	}
}

func TestParseEnums(t *testing.T) {
	h := parseFixture(t, fixtureHeader)
	if len(h.enums) != 2 {
		t.Fatalf("%d enums", len(h.enums))
	}
	e := h.enums[0]
	if e.tag != "krabka_err" || e.name != "krabka_err_t" || len(e.members) != 4 ||
		e.members[3] != (cEnumMember{"KRABKA_ERR_NEXT", 31}) || e.members[2] != (cEnumMember{"KRABKA_ERR_FENCED", 30}) {
		t.Fatalf("%+v", e)
	}
	names, err := memberNames(e)
	if err != nil || strings.Join(names, " ") != "OK INVALID_ARG FENCED NEXT" || enumClass(e) != "ErrorCode" {
		t.Fatalf("%v %v %s", names, err, enumClass(e))
	}
	l := h.enums[1]
	names, err = memberNames(l)
	if err != nil || strings.Join(names, " ") != "ACTIVE FENCED" || l.members[1].value != 1 || enumClass(l) != "LeadershipState" {
		t.Fatalf("%+v %v %v", l, names, err)
	}
}

func TestParseStructWithArray(t *testing.T) {
	h := parseFixture(t, fixtureHeader)
	if len(h.structs) != 2 || len(h.opaques) != 1 || h.opaques[0] != (cOpaque{"krabka_client", "krabka_client_t"}) {
		t.Fatalf("structs %+v opaques %+v", h.structs, h.opaques)
	}
	w := h.structs[1]
	if w.name != "krabka_watch_event_t" || len(w.fields) != 8 {
		t.Fatalf("%+v", w)
	}
	role := w.fields[2]
	if role.name != "role" || role.typ != (cType{base: "char"}) || role.dim != "KRABKA_NAME_BUF" || role.n != 256 {
		t.Errorf("role: %+v", role)
	}
	if raw := w.fields[3]; raw.dim != "4" || raw.n != 4 || raw.typ.base != "uint8_t" {
		t.Errorf("raw: %+v", raw)
	}
	if next := w.fields[7]; next.typ != (cType{isConst: true, base: "krabka_watch_event_t", ptr: 1}) {
		t.Errorf("a struct tag resolves to its typedef: %+v", next)
	}
	py, err := renderPython(&inputs{header: h})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`    ("role", c_char * NAME_BUF),`,
		`    ("raw", c_uint8 * 4),`,
		`    ("state", c_int),`,
		`    ("token", Token),`,
		`    ("topic", c_char_p),`,
		`    ("client", c_void_p),`,
		`    ("next", POINTER(WatchEvent)),`,
		"class WatchEvent(Structure):",
	} {
		if !strings.Contains(py, want+"\n") {
			t.Errorf("_abi.py lacks %q", want)
		}
	}
	js, err := renderJS(&inputs{header: h})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`    role: koffi.array('uint8_t', CONSTANTS.NAME_BUF, 'Typed'),`,
		`    raw: koffi.array('uint8_t', 4, 'Typed'),`,
		`    state: 'int',`,
		`    token: 'krabka_token_t',`,
		`    topic: 'const char *',`,
		`    client: 'krabka_client_t',`,
		`    next: 'void *',`,
		`  T.krabka_client_t = koffi.pointer('krabka_client_t', koffi.opaque('krabka_client'));`,
		`  T.krabka_log_cb = koffi.proto('void krabka_log_cb(void *opaque, int level, const char *line)');`,
	} {
		if !strings.Contains(js, want+"\n") {
			t.Errorf("abi.js lacks %q", want)
		}
	}
}

func TestParseFunctionsWithOutParams(t *testing.T) {
	h := parseFixture(t, fixtureHeader)
	var names []string
	for _, f := range h.funcs {
		names = append(names, f.name)
	}
	if strings.Join(names, " ") != "krabka_version krabka_client_acquire krabka_client_new krabka_client_stats krabka_free" {
		t.Fatalf("functions %v", names)
	}
	if f := h.funcs[0]; f.ret != "const char *" || f.retType != (cType{isConst: true, base: "char", ptr: 1}) || len(f.params) != 0 {
		t.Errorf("krabka_version: %+v", f)
	}
	acq := h.funcs[1]
	if acq.ret != "krabka_err_t" || len(acq.params) != 9 || !acq.hasErrstr() || !acq.blocking() ||
		acq.params[1].decl != "const char *role" || acq.params[4].typ != (cType{base: "krabka_token_t", ptr: 1}) {
		t.Errorf("krabka_client_acquire: %+v", acq)
	}
	if p := h.funcs[2].params[1]; p.typ != (cType{base: "krabka_client_t", ptr: 2}) || p.name != "out" {
		t.Errorf("krabka_client_new out: %+v", p)
	}
	py, err := renderPython(&inputs{header: h})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`    "krabka_version": (c_char_p, []),`,
		`    "krabka_client_acquire": (c_int, [c_void_p, c_char_p, c_size_t, c_int64, POINTER(Token), POINTER(c_int), POINTER(c_size_t), c_char_p, c_size_t]),`,
		`    "krabka_client_new": (c_int, [c_char_p, POINTER(c_void_p)]),`,
		`    "krabka_client_stats": (c_int, [c_void_p, POINTER(c_void_p), POINTER(c_char_p), LogCb]),`,
		`    "krabka_free": (None, [c_void_p]),`,
		`LogCb = CFUNCTYPE(None, c_void_p, c_int, c_char_p)`,
	} {
		if !strings.Contains(py, want+"\n") {
			t.Errorf("_abi.py lacks %q", want)
		}
	}
	js, err := renderJS(&inputs{header: h})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`  ['krabka_version', 'const char *krabka_version(void)'],`,
		`  ['krabka_client_acquire', 'int krabka_client_acquire(krabka_client_t client, const uint8_t *role, size_t role_len, int64_t timeout_ms, _Out_ krabka_token_t *out, _Out_ int *has, _Out_ size_t *len, uint8_t *errstr, size_t errstr_size)'],`,
		`  ['krabka_client_new', 'int krabka_client_new(const char *name, _Out_ krabka_client_t *out)'],`,
		`  ['krabka_client_stats', 'int krabka_client_stats(krabka_client_t client, _Out_ void **json, _Out_ const char **line, krabka_log_cb *cb)'],`,
		`  ['krabka_free', 'void krabka_free(void *ptr)'],`,
	} {
		if !strings.Contains(js, want+"\n") {
			t.Errorf("abi.js lacks %q", want)
		}
	}
}

// What the parser cannot read is an error naming it, never skipped.
func TestParseErrors(t *testing.T) {
	for _, c := range []struct{ text, want string }{
		{"krabka_err_t krabka_f(krabka_conf_t *conf);", "unknown type krabka_err_t"},
		{"int krabka_f(void) int krabka_g(void);", "cannot read the declaration"},
		{"int krabka_counter = 5;", "cannot read the declaration"},
		{"int krabka_f(int a)", "without its semicolon"},
		{"typedef struct krabka_s { int (*fn)(int); } krabka_s_t;", "struct krabka_s_t"},
		{"typedef struct krabka_s { int a, b; } krabka_s_t;", "one plain declaration per field"},
		{"typedef struct krabka_s { char name[KRABKA_NOPE]; } krabka_s_t;", "KRABKA_NOPE is not a numeric constant"},
		{"#define KRABKA_X sizeof(int)", "#define KRABKA_X"},
		{"#define KRABKA_X 1 +", "ends too early"},
		{"#define KRABKA_X 1\n#define KRABKA_X 2", "appears twice"},
		{"#define OTHER_X 1", "every constant of the header is KRABKA_*"},
		{"int krabka_f(char *const p);", "const pointer"},
		{"int krabka_f(int);", "a name is needed"},
		{"int krabka_f();", "write (void)"},
		{"int other_f(void);", "every function of the header is krabka_*"},
		{"typedef enum krabka_e { KRABKA_E_A = 1, KRABKA_E_A = 2 } krabka_e_t;", "appears twice"},
		{"struct krabka_nowhere;", "never defines"},
		{"/* never closed", "comment that never ends"},
		{"#if X\nint krabka_f(void);", "without its #endif"},
		{"int krabka_f(void);\nint krabka_f(void);", "declared twice"},
	} {
		_, err := parseHeader(c.text)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: error %v, want one containing %q", c.text, err, c.want)
		}
	}
}

func TestEvalExpr(t *testing.T) {
	consts := map[string]int64{"KRABKA_A": 3}
	for s, want := range map[string]int64{
		"1": 1, "-1": -1, "(-1)": -1, "0x10": 16, "010": 8, "4096u": 4096, "1 + 2 * 3": 7, "(1 + 2) * 3": 9,
		"KRABKA_A * 10000 + 2 * 100": 30200, "1 << 4 | 1": 17, "~0": -1, "7 / 2": 3, "7 % 4": 3, "10 - 3 - 2": 5,
	} {
		if got, err := evalExpr(s, consts); err != nil || got != want {
			t.Errorf("%s = %d (%v), want %d", s, got, err, want)
		}
	}
	for _, s := range []string{"", "1 +", "(1", "KRABKA_B", "1 / 0", "sizeof(int)", "1 ? 2 : 3", `"x"`} {
		if _, err := evalExpr(s, consts); err == nil {
			t.Errorf("%q evaluated without an error", s)
		}
	}
}
