// Package goconf runs the language-neutral conformance vectors of
// tests/conformance/vectors against the Go core. It holds no expected values
// of its own: every expectation comes from the vector files.
package goconf

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"sort"
	"strings"

	"github.com/krabka/krabka-coord/core"
)

// NotRun lists the operations this runner cannot express, written down
// rather than computed from failures. The Go core expresses every operation.
var NotRun = []string{}

// Failure is one vector that did not pass.
type Failure struct {
	ID      string
	Problem string
}

// GroupCount is the number of passed and failed vectors of one group.
type GroupCount struct {
	Passed int `json:"passed"`
	Failed int `json:"failed"`
}

// Result is the outcome of running vector files.
type Result struct {
	Passed   int
	Failed   int
	Failures []Failure
	Groups   map[string]*GroupCount
}

type file struct {
	Group   string `json:"group"`
	Vectors []obj  `json:"vectors"`
}

// DefaultFiles returns the vector files under dir (sorted).
func DefaultFiles(dir string) ([]string, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return nil, err
	}
	sort.Strings(files)
	if len(files) == 0 {
		return nil, fmt.Errorf("no vector files in %s", dir)
	}
	return files, nil
}

// RunFiles runs every vector of the given files. An error means a file could
// not be read or parsed at all; a vector that fails is counted in the result.
func RunFiles(paths []string) (Result, error) {
	res := Result{Groups: map[string]*GroupCount{}}
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			return res, err
		}
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.UseNumber()
		var f file
		if err := dec.Decode(&f); err != nil {
			return res, fmt.Errorf("%s: %w", p, err)
		}
		g := res.Groups[f.Group]
		if g == nil {
			g = &GroupCount{}
			res.Groups[f.Group] = g
		}
		for _, v := range f.Vectors {
			id, _ := v["id"].(string)
			if problem := Run(v); problem == "" {
				res.Passed++
				g.Passed++
			} else {
				res.Failed++
				g.Failed++
				res.Failures = append(res.Failures, Failure{ID: id, Problem: problem})
			}
		}
	}
	return res, nil
}

// Run executes one vector and returns "" when it passes, or what went wrong.
// A panic in the core or a malformed vector is reported, never propagated.
func Run(v map[string]any) (problem string) {
	defer func() {
		if r := recover(); r != nil {
			if b, ok := r.(badInput); ok {
				problem = "bad vector: " + b.msg
				return
			}
			problem = fmt.Sprintf("panicked: %v\n%s", r, debug.Stack())
		}
	}()
	o := obj(v)
	op, _ := o["op"].(string)
	fn, ok := ops[op]
	if !ok {
		return fmt.Sprintf("unknown op %q", op)
	}
	return fn(o, o.obj("expect"))
}

var ops map[string]func(v, exp obj) string

func init() {
	ops = map[string]func(v, exp obj) string{
		"codec":                 runCodec,
		"decode_failure":        runDecodeFailure,
		"is_tombstone":          runIsTombstone,
		"read_value":            runReadValue,
		"encode_tombstone":      runEncodeTombstone,
		"validate_role":         runValidateRole,
		"validate_member":       runValidateMember,
		"murmur2":               runMurmur2,
		"partition":             runPartition,
		"token_compare":         runTokenCompare,
		"token_validate":        runTokenValidate,
		"token_format":          runTokenFormat,
		"token_parse":           runTokenParse,
		"fold":                  runFold,
		"fold_raw":              runFoldRaw,
		"rank":                  runRank,
		"evaluate":              runEvaluate,
		"lease_defaults":        runLeaseDefaults,
		"lease_config":          runLeaseConfig,
		"lease_grant":           runLeaseGrant,
		"lease_live_at":         runLeaseLiveAt,
		"lease_remaining_at":    runLeaseRemainingAt,
		"lease_renew_at":        runLeaseRenewAt,
		"lease_renew_due_at":    runLeaseRenewDueAt,
		"lease_challenge_delay": runLeaseChallengeDelay,
		"lease_challenge_at":    runLeaseChallengeAt,
		"lease_expires_at":      runLeaseExpiresAt,
	}
}

// checkErr compares an outcome with an expectation of ok true or false. It
// returns "" when the outcome matches and the caller should go on comparing
// results (ok true), and done=true when the comparison is complete.
func checkErr(err error, exp obj) (problem string, done bool) {
	if exp.bool("ok") {
		if err != nil {
			return "unexpected error: " + err.Error(), true
		}
		return "", false
	}
	if err == nil {
		return "succeeded, expected an error", true
	}
	cat, ok := core.CategoryOf(err)
	if !ok {
		return "error without a category: " + err.Error(), true
	}
	if !exp.isNull("category") && exp.has("category") {
		want, _ := exp["category"].(string)
		if string(cat) != want {
			return fmt.Sprintf("category %s, expected %s (%v)", cat, want, err), true
		}
		return "", true
	}
	allowed, _ := exp["categories_allowed"].([]any)
	for _, a := range allowed {
		if s, _ := a.(string); s == string(cat) {
			return "", true
		}
	}
	return fmt.Sprintf("category %s, expected one of %v (%v)", cat, allowed, err), true
}

func hexOf(b []byte) string { return hex.EncodeToString(b) }

// ---- building core values from vector fields ----

func role(o obj, field string) core.Role {
	r, err := core.NewRole(o.text(field))
	if err != nil {
		bad("role: %v", err)
	}
	return r
}

func member(o obj, field string) core.MemberID {
	m, err := core.NewMemberID(o.text(field))
	if err != nil {
		bad("member: %v", err)
	}
	return m
}

func token(o obj) core.FencingToken {
	return core.FencingToken{ProducerID: o.i64("producer_id"), ProducerEpoch: int16(o.int("producer_epoch", 16))}
}

func lease(o obj) core.Lease {
	return core.Lease{Member: member(o, "member"), Token: token(o), GrantedAt: o.i64("granted_at"), Deadline: o.i64("deadline")}
}

func config(o obj) core.LeaseConfig {
	return core.LeaseConfig{
		DurationMs:         o.i64("duration_ms"),
		RenewIntervalMs:    o.i64("renew_interval_ms"),
		ChallengeStaggerMs: o.i64("challenge_stagger_ms"),
	}
}

func state(o obj) core.State {
	var s core.State
	for _, e := range o.list("roster") {
		s.Roster = append(s.Roster, core.RosterEntry{Member: member(e, "member"), Offset: e.i64("offset"), RegisteredAt: e.i64("registered_at")})
	}
	if !o.isNull("lease") {
		l := lease(o.obj("lease"))
		s.Lease = &l
	}
	return s
}

func decodedRecords(o obj) []core.DecodedRecord {
	var out []core.DecodedRecord
	for _, r := range o.list("records") {
		rec := core.DecodedRecord{Offset: r.i64("offset")}
		kind, _ := r["kind"].(string)
		switch kind {
		case "registration":
			rec.Key = core.RegistrationKey(role(r, "role"), member(r, "member"))
			if !r.isNull("value") {
				val := r.obj("value")
				rec.Registration = &core.Registration{Member: member(val, "member"), RegisteredAt: val.i64("registered_at")}
			}
		case "lease":
			rec.Key = core.LeaseKey(role(r, "role"))
			if !r.isNull("value") {
				l := lease(r.obj("value"))
				rec.Lease = &l
			}
		default:
			bad("record kind %q", kind)
		}
		out = append(out, rec)
	}
	return out
}

// ---- comparing results ----

func compareFields(part string, got, want obj) string {
	for k := range want {
		if strings.HasSuffix(k, "_hex") {
			continue
		}
		if _, ok := got[k]; !ok {
			return fmt.Sprintf("%s: expected field %q not produced", part, k)
		}
	}
	for k, g := range got {
		if _, ok := want[k]; !ok {
			continue
		}
		var w string
		switch k {
		case "kind", "producer_epoch":
			w = fmt.Sprint(want.int(k, 16))
		case "registered_at", "producer_id", "granted_at", "deadline":
			w = fmt.Sprint(want.i64(k))
		default:
			w = want.text(k)
		}
		if g.(string) != w {
			return fmt.Sprintf("%s: field %s is %q, expected %q", part, k, g, w)
		}
	}
	return ""
}

func keyFields(k core.Key) obj {
	return obj{"kind": fmt.Sprint(int(k.Kind)), "role": k.Role.String(), "member": k.Member.String()}
}

func registrationFields(r core.Registration) obj {
	return obj{"member": r.Member.String(), "registered_at": fmt.Sprint(r.RegisteredAt)}
}

func leaseFields(l core.Lease) obj {
	return obj{
		"member": l.Member.String(), "producer_id": fmt.Sprint(l.Token.ProducerID),
		"producer_epoch": fmt.Sprint(l.Token.ProducerEpoch), "granted_at": fmt.Sprint(l.GrantedAt),
		"deadline": fmt.Sprint(l.Deadline),
	}
}

func sameLease(got, want core.Lease) bool { return got == want }

// compareState compares roster, lease, holder and ranks, whichever exp has.
func compareState(s core.State, exp obj) string {
	if exp.has("roster") {
		want := exp.list("roster")
		if len(want) != len(s.Roster) {
			return fmt.Sprintf("roster has %d entries %v, expected %d", len(s.Roster), s.Roster, len(want))
		}
		for i, w := range want {
			g := s.Roster[i]
			if g.Member != member(w, "member") || g.Offset != w.i64("offset") || g.RegisteredAt != w.i64("registered_at") {
				return fmt.Sprintf("roster[%d] is %+v, expected %v", i, g, map[string]any(w))
			}
		}
	}
	if exp.has("lease") {
		if exp.isNull("lease") {
			if s.Lease != nil {
				return fmt.Sprintf("lease is %+v, expected none", *s.Lease)
			}
		} else {
			w := lease(exp.obj("lease"))
			if s.Lease == nil {
				return "no lease, expected " + fmt.Sprintf("%+v", w)
			}
			if !sameLease(*s.Lease, w) {
				return fmt.Sprintf("lease is %+v, expected %+v", *s.Lease, w)
			}
		}
	}
	if exp.has("holder") {
		h, ok := s.Holder()
		want, wantOK := exp.optText("holder")
		if ok != wantOK || h.String() != want {
			return fmt.Sprintf("holder is %q (%v), expected %q (%v)", h, ok, want, wantOK)
		}
	}
	if exp.has("ranks") {
		for _, r := range exp.list("ranks") {
			m := member(r, "member")
			got, ok := s.Rank(m)
			if r.isNull("rank") {
				if ok {
					return fmt.Sprintf("rank of %s is %d, expected none", m, got)
				}
				continue
			}
			want := r.int("rank", 32)
			if !ok || int64(got) != want {
				return fmt.Sprintf("rank of %s is %d (%v), expected %d", m, got, ok, want)
			}
		}
	}
	return ""
}
