package main

import (
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/krabka/krabka-coord/core/coord"
)

// capi/kc_guard.c is generated from include/krabka_coord.h (every function
// declared there) and coord.ErrorTable (the child's copy of the error
// strings). This test renders it again and fails when the file differs;
// KRABKA_UPDATE_GUARD=1 go test -run TestForkGuardFileIsGenerated ./capi
// rewrites it.
func TestForkGuardFileIsGenerated(t *testing.T) {
	header, err := os.ReadFile("../include/krabka_coord.h")
	if err != nil {
		t.Fatal(err)
	}
	decls, err := parseHeaderFunctions(string(header))
	if err != nil {
		t.Fatal(err)
	}
	if len(decls) < 60 {
		t.Fatalf("found %d function declarations in the header, expected every krabka_* function", len(decls))
	}
	want := renderGuard(decls)
	if os.Getenv("KRABKA_UPDATE_GUARD") == "1" {
		if err := os.WriteFile("kc_guard.c", []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile("kc_guard.c")
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != want {
		t.Fatalf("capi/kc_guard.c differs from what include/krabka_coord.h and coord.ErrorTable give; regenerate with KRABKA_UPDATE_GUARD=1 go test -run TestForkGuardFileIsGenerated ./capi")
	}
}

// The parser reads what the guard needs: name, return type and parameters.
func TestParseHeaderFunctions(t *testing.T) {
	decls, err := parseHeaderFunctions(`/* krabka_nope(int x); */
typedef void (*krabka_cb)(void *opaque, const char *line);
#define KRABKA_X(a) (a)
typedef struct krabka_t { int a; } krabka_t;
const char *krabka_version(void);
krabka_err_t krabka_f(const krabka_conf_t *conf, const char *name,
                      char *errstr, size_t errstr_size);`)
	if err != nil {
		t.Fatal(err)
	}
	if len(decls) != 2 {
		t.Fatalf("got %d declarations, want 2: %+v", len(decls), decls)
	}
	if decls[0].name != "krabka_version" || decls[0].ret != "const char *" || len(decls[0].params) != 0 {
		t.Errorf("first: %+v", decls[0])
	}
	f := decls[1]
	if f.name != "krabka_f" || f.ret != "krabka_err_t" || len(f.params) != 4 || f.params[1].name != "name" ||
		f.params[1].decl != "const char *name" || !f.hasErrstr() {
		t.Errorf("second: %+v", f)
	}
}

type cParam struct{ decl, name string }

type cFunc struct {
	ret, name string
	params    []cParam
}

// blocking: the call takes a timeout_ms (it may wait on the cluster or on
// another thread) or is a destroy that waits for background work.
func (f cFunc) blocking() bool {
	if f.name == "krabka_client_destroy" || f.name == "krabka_leadership_destroy" {
		return true // they wait for background work to stop
	}
	for _, p := range f.params {
		if p.name == "timeout_ms" {
			return true
		}
	}
	return false
}

func (f cFunc) hasErrstr() bool {
	n := len(f.params)
	return n >= 2 && f.params[n-2].name == "errstr" && f.params[n-1].name == "errstr_size"
}

var (
	reComment = regexp.MustCompile(`(?s)/\*.*?\*/|//[^\n]*`)
	rePreproc = regexp.MustCompile(`(?m)^[ \t]*#(?:[^\n]*\\\n)*[^\n]*`)
	reFunc    = regexp.MustCompile(`^([A-Za-z_][A-Za-z0-9_ \t\n\*]*?)\b(krabka_[A-Za-z0-9_]+)\s*\(([^()]*)\)$`)
	reParam   = regexp.MustCompile(`([A-Za-z_][A-Za-z0-9_]*)\s*$`)
	reSpace   = regexp.MustCompile(`\s+`)
)

func parseHeaderFunctions(text string) ([]cFunc, error) {
	text = reComment.ReplaceAllString(text, " ")
	text = rePreproc.ReplaceAllString(text, " ")
	var out []cFunc
	for _, stmt := range strings.Split(text, ";") {
		if i := strings.LastIndexAny(stmt, "{}"); i >= 0 {
			stmt = stmt[i+1:]
		}
		stmt = strings.TrimSpace(reSpace.ReplaceAllString(stmt, " "))
		if strings.HasPrefix(stmt, "typedef") {
			continue
		}
		m := reFunc.FindStringSubmatch(stmt)
		if m == nil {
			if strings.Contains(stmt, "krabka_") && strings.Contains(stmt, "(") {
				return nil, fmt.Errorf("cannot read the declaration %q", stmt)
			}
			continue
		}
		f := cFunc{ret: strings.TrimSpace(m[1]), name: m[2]}
		if strings.HasSuffix(f.ret, "*") {
			f.ret = strings.TrimSpace(strings.TrimRight(f.ret, "* ")) + " *"
		}
		if args := strings.TrimSpace(m[3]); args != "void" {
			for _, a := range strings.Split(args, ",") {
				a = strings.TrimSpace(a)
				pm := reParam.FindStringSubmatch(a)
				if pm == nil {
					return nil, fmt.Errorf("%s: cannot read the parameter %q", f.name, a)
				}
				f.params = append(f.params, cParam{decl: a, name: pm[1]})
			}
		}
		out = append(out, f)
	}
	return out, nil
}

// childSafe are the functions that never enter Go in a forked child: they
// answer from C (the version macros, the error table below, the token
// arithmetic, Kafka's murmur2) or, for krabka_conf_new, with NULL.
var childFallback = map[string]string{
	"krabka_version":            "return KRABKA_VERSION_STRING;",
	"krabka_version_number":     "return KRABKA_VERSION_NUMBER;",
	"krabka_abi_version":        "return KRABKA_ABI_VERSION;",
	"krabka_err2str":            "return kc_child_err2str(err);",
	"krabka_err2name":           "return kc_child_err2name(err);",
	"krabka_err_is_retriable":   "return kc_child_err_flag(err, 0);",
	"krabka_err_is_fatal":       "return kc_child_err_flag(err, 1);",
	"krabka_token_no_epoch":     "return kc_child_token_no_epoch();",
	"krabka_token_compare":      "return kc_child_token_compare(a, b);",
	"krabka_token_supersedes":   "return kc_child_token_compare(a, b) > 0;",
	"krabka_murmur2":            "return kc_child_murmur2(data, len);",
	"krabka_value_is_tombstone": "return value == NULL || len == 0;",
	"krabka_conf_new":           "return NULL;",
	"krabka_free":               "free(ptr); return;",
}

func cString(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`)
	return `"` + r.Replace(s) + `"`
}

func renderGuard(decls []cFunc) string {
	var b strings.Builder
	b.WriteString(`/* GENERATED by capi/guard_test.go from include/krabka_coord.h and
 * coord.ErrorTable; do not edit. Regenerate with
 *   KRABKA_UPDATE_GUARD=1 go test -run TestForkGuardFileIsGenerated ./capi
 *
 * The fork guard: every public krabka_* function is defined here in C and
 * checks for a fork before it enters the Go runtime (the Go exports are
 * kc_go_*, kept local by capi/exports.map). In a child after fork() the Go
 * runtime has no threads, so any call into it would hang: the guard answers
 * KRABKA_ERR_FORKED instead (with errstr written where the function has
 * one), and the functions that return something else answer from C.
 *
 * Detection: a pthread_atfork child handler sets a flag (every fork()
 * through the C library; one load per call). The calls that may block
 * (those with a timeout_ms) also compare getpid() with the process id at
 * load (so do the destroys that wait for background work), which catches a
 * child made by a raw system call too; a getpid()
 * costs about 150 ns on the test VM, too much for the non-blocking calls. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "kc_types.h"
#include "_cgo_export.h"

static pid_t kc_load_pid;
static volatile int kc_forked_flag;

static void kc_guard_child(void) { kc_forked_flag = 1; }

__attribute__((constructor)) static void kc_guard_init(void) {
    kc_load_pid = getpid();
    pthread_atfork(NULL, NULL, kc_guard_child);
}

/* Any call: the flag the child handler set. */
static int kc_forked(void) { return __builtin_expect(kc_forked_flag, 0); }
/* A call that may block: the flag, or another process id than at load. */
static int kc_forked_blocking(void) { return kc_forked_flag || getpid() != kc_load_pid; }

static krabka_err_t kc_forked_err(const char *fn, char *errstr, size_t errstr_size) {
    if (errstr != NULL && errstr_size > 0)
        snprintf(errstr, errstr_size, "%s: called in a child process after fork(); the library works only in the process that loaded it (pid %ld)", fn, (long)kc_load_pid);
    return KRABKA_ERR_FORKED;
}

/* The error table (coord.ErrorTable) for the child. */
struct kc_child_err { int code; const char *name, *text; int retriable, fatal; };
static const struct kc_child_err kc_child_errs[] = {
`)
	for _, e := range coord.ErrorTable {
		fmt.Fprintf(&b, "    {%d, %s, %s, %d, %d},\n", e.Code, cString(e.Name), cString(e.Text), b2i(e.Retriable), b2i(e.Fatal))
	}
	b.WriteString(`};

static const struct kc_child_err *kc_child_find(krabka_err_t err) {
    size_t i;
    for (i = 0; i < sizeof kc_child_errs / sizeof kc_child_errs[0]; i++)
        if (kc_child_errs[i].code == (int)err) return &kc_child_errs[i];
    return NULL;
}
static const char *kc_child_err2str(krabka_err_t err) {
    const struct kc_child_err *e = kc_child_find(err);
    return e != NULL ? e->text : "unknown error";
}
static const char *kc_child_err2name(krabka_err_t err) {
    const struct kc_child_err *e = kc_child_find(err);
    return e != NULL ? e->name : "UNKNOWN";
}
static int kc_child_err_flag(krabka_err_t err, int fatal) {
    const struct kc_child_err *e = kc_child_find(err);
    return e != NULL && (fatal ? e->fatal : e->retriable);
}
static krabka_token_t kc_child_token_no_epoch(void) {
    krabka_token_t t;
    memset(&t, 0, sizeof t);
    t.producer_id = -1;
    t.producer_epoch = -1;
    return t;
}
static int kc_child_token_compare(krabka_token_t a, krabka_token_t b) {
    if (a.producer_id != b.producer_id) return a.producer_id < b.producer_id ? -1 : 1;
    if ((int16_t)a.producer_epoch != (int16_t)b.producer_epoch)
        return (int16_t)a.producer_epoch < (int16_t)b.producer_epoch ? -1 : 1;
    return 0;
}
/* Kafka's murmur2 (core.Murmur2); NULL or a length beyond INT32_MAX hashes
 * as the empty string, as in the parent. */
static int32_t kc_child_murmur2(const uint8_t *data, size_t n) {
    const uint32_t m = 0x5bd1e995u;
    uint32_t h, k;
    size_t i, n4;
    if (data == NULL || n > 0x7fffffffu) n = 0;
    h = 0x9747b28cu ^ (uint32_t)n;
    n4 = n / 4;
    for (i = 0; i < n4; i++) {
        const uint8_t *p = data + 4 * i;
        k = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
        k *= m;
        k ^= k >> 24;
        k *= m;
        h *= m;
        h ^= k;
    }
    switch (n % 4) {
    case 3: h ^= (uint32_t)data[(n & ~(size_t)3) + 2] << 16; /* fall through */
    case 2: h ^= (uint32_t)data[(n & ~(size_t)3) + 1] << 8; /* fall through */
    case 1: h ^= (uint32_t)data[n & ~(size_t)3]; h *= m;
    }
    h ^= h >> 13;
    h *= m;
    h ^= h >> 15;
    return (int32_t)h;
}

/* The header's own signatures for the Go exports: a Go export whose types
 * drifted from the header conflicts with _cgo_export.h and fails the build. */
`)
	for _, f := range decls {
		fmt.Fprintf(&b, "extern %s%s(%s);\n", retSpace(f.ret), goName(f.name), paramList(f))
	}
	b.WriteString("\n")
	for _, f := range decls {
		var args []string
		for _, p := range f.params {
			args = append(args, p.name)
		}
		fmt.Fprintf(&b, "%s%s(%s) {\n", retSpace(f.ret), f.name, paramList(f))
		fb, special := childFallback[f.name]
		check := "kc_forked()"
		if f.blocking() {
			check = "kc_forked_blocking()"
		}
		switch {
		case special:
			fmt.Fprintf(&b, "    if (%s) { %s }\n", check, fb)
		case f.ret != "krabka_err_t":
			panic(fmt.Sprintf("%s returns %s: give it a child fallback in childFallback", f.name, f.ret))
		case f.hasErrstr():
			fmt.Fprintf(&b, "    if (%s) return kc_forked_err(%s, errstr, errstr_size);\n", check, cString(f.name))
		default:
			fmt.Fprintf(&b, "    if (%s) return KRABKA_ERR_FORKED;\n", check)
		}
		call := fmt.Sprintf("%s(%s)", goName(f.name), strings.Join(args, ", "))
		if f.ret == "void" {
			fmt.Fprintf(&b, "    %s;\n}\n", call)
		} else {
			fmt.Fprintf(&b, "    return %s;\n}\n", call)
		}
	}
	return b.String()
}

func b2i(v bool) int {
	if v {
		return 1
	}
	return 0
}

func goName(name string) string { return "kc_go_" + strings.TrimPrefix(name, "krabka_") }

func retSpace(ret string) string {
	if strings.HasSuffix(ret, "*") {
		return ret
	}
	return ret + " "
}

func paramList(f cFunc) string {
	if len(f.params) == 0 {
		return "void"
	}
	var ps []string
	for _, p := range f.params {
		ps = append(ps, p.decl)
	}
	return strings.Join(ps, ", ")
}
