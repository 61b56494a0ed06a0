package goconf

import (
	"fmt"

	"github.com/krabka/krabka-coord/core"
)

// encodePart encodes the fields of a codec vector as part.
func encodePart(part string, f obj) []byte {
	switch part {
	case "key":
		r := role(f, "role")
		if core.Kind(f.int("kind", 16)) == core.KindLease {
			return core.EncodeKey(core.LeaseKey(r))
		}
		return core.EncodeKey(core.RegistrationKey(r, member(f, "member")))
	case "registration_value":
		return core.EncodeRegistration(core.Registration{Member: member(f, "member"), RegisteredAt: f.i64("registered_at")})
	case "lease_value":
		return core.EncodeLease(lease(f))
	}
	bad("unknown part %q", part)
	return nil
}

// decodePart decodes b as part and returns its fields and re-encoding.
func decodePart(part string, b []byte) (obj, []byte, error) {
	switch part {
	case "key":
		k, err := core.DecodeKey(b)
		if err != nil {
			return nil, nil, err
		}
		return keyFields(k), core.EncodeKey(k), nil
	case "registration_value":
		r, err := core.DecodeRegistration(b)
		if err != nil {
			return nil, nil, err
		}
		return registrationFields(r), core.EncodeRegistration(r), nil
	case "lease_value":
		l, err := core.DecodeLease(b)
		if err != nil {
			return nil, nil, err
		}
		return leaseFields(l), core.EncodeLease(l), nil
	}
	bad("unknown part %q", part)
	return nil, nil, nil
}

func runCodec(v, exp obj) string {
	part, _ := v["part"].(string)
	dir, _ := v["direction"].(string)
	if !exp.bool("ok") {
		bad("codec vectors always expect ok")
	}
	if dir == "both" || dir == "encode" {
		got := encodePart(part, v.obj("fields"))
		want, _ := exp.hexBytes("hex")
		if hexOf(got) != hexOf(want) {
			return fmt.Sprintf("encode gave %s, expected %s", hexOf(got), hexOf(want))
		}
	}
	if dir == "both" || dir == "decode" {
		in, _ := v.hexBytes("hex")
		fields, again, err := decodePart(part, in)
		if err != nil {
			return "decode failed: " + err.Error()
		}
		if p := compareFields(part, fields, exp.obj("fields")); p != "" {
			return "decode: " + p
		}
		if hexOf(again) != hexOf(in) {
			return fmt.Sprintf("re-encode gave %s, expected %s", hexOf(again), hexOf(in))
		}
	}
	return ""
}

func runDecodeFailure(v, exp obj) string {
	part, _ := v["part"].(string)
	in, _ := v.hexBytes("hex")
	_, _, err := decodePart(part, in)
	p, _ := checkErr(err, exp)
	return p
}

func runIsTombstone(v, exp obj) string {
	b, _ := v.hexBytes("value_hex")
	if got, want := core.IsTombstone(b), exp.bool("tombstone"); got != want {
		return fmt.Sprintf("tombstone %v, expected %v", got, want)
	}
	return ""
}

func runReadValue(v, exp obj) string {
	part, _ := v["part"].(string)
	b, _ := v.hexBytes("value_hex")
	if core.IsTombstone(b) {
		if !exp.bool("ok") || !exp.bool("tombstone") {
			return "read a tombstone, expected otherwise"
		}
		return ""
	}
	fields, _, err := decodePart(part, b)
	if p, done := checkErr(err, exp); done {
		return p
	}
	if exp.bool("tombstone") {
		return "decoded a value, expected a tombstone"
	}
	return compareFields(part, fields, exp.obj("fields"))
}

func runEncodeTombstone(v, exp obj) string {
	got := core.TombstoneValue()
	if exp.isNull("value_hex") {
		if got != nil {
			return fmt.Sprintf("tombstone value is %q, expected null", got)
		}
		return ""
	}
	want, _ := exp.hexBytes("value_hex")
	if got == nil || hexOf(got) != hexOf(want) {
		return fmt.Sprintf("tombstone value is %v, expected %s", got, hexOf(want))
	}
	return ""
}

func runValidateRole(v, exp obj) string {
	b, _ := v.hexBytes("name_hex")
	r, err := core.RoleFromBytes(b)
	if p, done := checkErr(err, exp); done {
		return p
	}
	if r.String() != string(b) {
		return fmt.Sprintf("role is %q, expected %q", r, b)
	}
	return ""
}

func runValidateMember(v, exp obj) string {
	b, _ := v.hexBytes("name_hex")
	m, err := core.MemberIDFromBytes(b)
	if p, done := checkErr(err, exp); done {
		return p
	}
	if m.String() != string(b) {
		return fmt.Sprintf("member is %q, expected %q", m, b)
	}
	return ""
}

func runMurmur2(v, exp obj) string {
	b, _ := v.hexBytes("key_hex")
	if got, want := core.Murmur2(b), exp.int("murmur2", 32); int64(got) != want {
		return fmt.Sprintf("murmur2 %d, expected %d", got, want)
	}
	return ""
}

func runPartition(v, exp obj) string {
	p, err := core.RolePartition(role(v, "role"), int32(v.int("partitions", 32)))
	if prob, done := checkErr(err, exp); done {
		return prob
	}
	if want := exp.int("partition", 32); int64(p) != want {
		return fmt.Sprintf("partition %d, expected %d", p, want)
	}
	return ""
}

func runTokenCompare(v, exp obj) string {
	l, r := token(v.obj("left")), token(v.obj("right"))
	if got, want := l.Compare(r), exp.int("compare", 32); int64(got) != want {
		return fmt.Sprintf("compare %d, expected %d", got, want)
	}
	if got, want := l.Supersedes(r), exp.bool("supersedes"); got != want {
		return fmt.Sprintf("supersedes %v, expected %v", got, want)
	}
	return ""
}

func runTokenValidate(v, exp obj) string {
	t := v.obj("token")
	got, err := core.NewFencingToken(t.i64("producer_id"), int16(t.int("producer_epoch", 16)))
	if p, done := checkErr(err, exp); done {
		return p
	}
	if got != token(t) {
		return fmt.Sprintf("token %v, expected %v", got, token(t))
	}
	return ""
}

func runTokenFormat(v, exp obj) string {
	if got, want := token(v.obj("token")).String(), exp.text("text"); got != want {
		return fmt.Sprintf("text %q, expected %q", got, want)
	}
	return ""
}

func runTokenParse(v, exp obj) string {
	got, err := core.ParseFencingToken(v.text("text"))
	if p, done := checkErr(err, exp); done {
		return p
	}
	if want := token(exp.obj("token")); got != want {
		return fmt.Sprintf("token %v, expected %v", got, want)
	}
	return ""
}

func runFold(v, exp obj) string {
	return compareState(core.Fold(role(v, "role"), decodedRecords(v)), exp)
}

func runFoldRaw(v, exp obj) string {
	var recs []core.RawRecord
	for _, r := range v.list("records") {
		k, _ := r.hexBytes("key_hex")
		val, _ := r.hexBytes("value_hex")
		recs = append(recs, core.RawRecord{Offset: r.i64("offset"), Key: k, Value: val})
	}
	s := core.FoldRaw(role(v, "role"), recs)
	if p := compareState(s, exp); p != "" {
		return p
	}
	if want := exp.int("skipped", 32); int64(s.Skipped) != want {
		return fmt.Sprintf("skipped %d, expected %d", s.Skipped, want)
	}
	return ""
}

func runRank(v, exp obj) string { return compareState(state(v.obj("state")), exp) }

func runEvaluate(v, exp obj) string {
	var s core.State
	if v.has("state") {
		s = state(v.obj("state"))
	} else {
		s = core.Fold(role(v, "role"), decodedRecords(v))
	}
	d := core.Evaluate(s, member(v, "member"), v.i64("now"), config(v.obj("config")))
	want, _ := exp["decision"].(string)
	if d.Kind.String() != want {
		return fmt.Sprintf("decision %v (until %d), expected %s", d.Kind, d.WaitUntil, want)
	}
	if d.Kind == core.Wait {
		if w := exp.i64("wait_until"); d.WaitUntil != w {
			return fmt.Sprintf("WAIT until %d, expected %d", d.WaitUntil, w)
		}
	}
	return ""
}

func runLeaseDefaults(v, exp obj) string {
	c := core.DefaultLeaseConfig()
	if c != config(exp) {
		return fmt.Sprintf("defaults %+v, expected %+v", c, config(exp))
	}
	if got, want := c.RenewsWithMargin(), exp.bool("renews_with_margin"); got != want {
		return fmt.Sprintf("renews_with_margin %v, expected %v", got, want)
	}
	if err := c.Validate(); err != nil {
		return "defaults do not validate: " + err.Error()
	}
	return ""
}

func runLeaseConfig(v, exp obj) string {
	c := config(v.obj("config"))
	if p, done := checkErr(c.Validate(), exp); done {
		return p
	}
	if got, want := c.RenewsWithMargin(), exp.bool("renews_with_margin"); got != want {
		return fmt.Sprintf("renews_with_margin %v, expected %v", got, want)
	}
	return ""
}

// validConfig reads the config of a lease-clock vector, which must be valid.
func validConfig(v obj) core.LeaseConfig {
	c := config(v.obj("config"))
	if err := c.Validate(); err != nil {
		bad("config: %v", err)
	}
	return c
}

func want64(name string, got int64, exp obj) string {
	if w := exp.i64(name); got != w {
		return fmt.Sprintf("%s %d, expected %d", name, got, w)
	}
	return ""
}

func wantBool(name string, got bool, exp obj) string {
	if w := exp.bool(name); got != w {
		return fmt.Sprintf("%s %v, expected %v", name, got, w)
	}
	return ""
}

func runLeaseGrant(v, exp obj) string {
	c := validConfig(v)
	got := c.Grant(member(v, "member"), token(v.obj("token")), v.i64("now"))
	if want := lease(exp.obj("lease")); got != want {
		return fmt.Sprintf("lease %+v, expected %+v", got, want)
	}
	return ""
}

func runLeaseLiveAt(v, exp obj) string {
	validConfig(v)
	return wantBool("live", lease(v.obj("lease")).LiveAt(v.i64("now")), exp)
}

func runLeaseRemainingAt(v, exp obj) string {
	validConfig(v)
	return want64("remaining_ms", lease(v.obj("lease")).RemainingAt(v.i64("now")), exp)
}

func runLeaseRenewAt(v, exp obj) string {
	return want64("renew_at", validConfig(v).RenewAt(lease(v.obj("lease"))), exp)
}

func runLeaseRenewDueAt(v, exp obj) string {
	return wantBool("renew_due", validConfig(v).RenewDueAt(lease(v.obj("lease")), v.i64("now")), exp)
}

func runLeaseChallengeDelay(v, exp obj) string {
	return want64("delay_ms", validConfig(v).ChallengeDelay(int32(v.int("rank", 32))), exp)
}

func runLeaseChallengeAt(v, exp obj) string {
	return want64("challenge_at", validConfig(v).ChallengeAt(lease(v.obj("lease")), int32(v.int("rank", 32))), exp)
}

func runLeaseExpiresAt(v, exp obj) string {
	validConfig(v)
	return want64("expires_at", lease(v.obj("lease")).ExpiresAt(), exp)
}
