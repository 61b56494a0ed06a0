package main

import (
	"context"
	"regexp"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/krabka/krabka-coord/core"
	"github.com/krabka/krabka-coord/core/coord"
	"github.com/krabka/krabka-coord/core/kafka"
)

func libClient(t *testing.T, bs string, kv ...string) *coord.Client {
	t.Helper()
	cfg := coord.DefaultConfig()
	if err := cfg.Set("bootstrap.servers", bs); err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(kv); i += 2 {
		if err := cfg.Set(kv[i], kv[i+1]); err != nil {
			t.Fatal(err)
		}
	}
	c, err := kafka.NewClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// describe and watch show the term's and the members' metadata
// (krabka.meta), as text and base64 in JSON.
func TestDescribeShowsMetadata(t *testing.T) {
	bs := tv2(t)
	role := uniqueRole("cli-meta")
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	c := libClient(t, bs)
	if _, err := c.Acquire(ctx, core.MustRole(role), core.MustMemberID("m1"),
		coord.WithMetadata([]byte("https://m1.example:8443")), coord.WithMemberMetadata([]byte{0xff, 0x00})); err != nil {
		t.Fatal(err)
	}
	st := describeJSON(t, bs, role)
	if st.Metadata == nil || *st.Metadata != "https://m1.example:8443" || st.MetadataBase64 == nil ||
		len(st.Roster) != 1 || st.Roster[0].Metadata != nil || st.Roster[0].MetadataBase64 == nil || *st.Roster[0].MetadataBase64 != "/wA=" {
		t.Fatalf("describe -o json: %+v", st)
	}
	code, out, errs := cli(t, "-b", bs, "describe", role)
	if code != exitOK || !regexp.MustCompile(`(?m)^metadata\s+"https://m1.example:8443"$`).MatchString(out) ||
		!regexp.MustCompile(`(?m)m1 \(holder\)\s+\d+\s+\S+\s+base64:/wA=$`).MatchString(out) {
		t.Fatalf("describe: exit %d:\n%s%s", code, out, errs)
	}
}

// verify passes a topic of guarded writes and fails (exit 3) once a record
// produced outside the library (no idempotence: producer id -1) follows them.
func TestVerifyCommand(t *testing.T) {
	bs := tv2(t)
	topic := "krabka-cli-verify-" + uniqueRole("t")
	createTopic(t, bs, topic, 1, nil)
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	c := libClient(t, bs)
	l, err := c.Acquire(ctx, core.MustRole(uniqueRole("cli-verify")), core.MustMemberID("m1"))
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		if _, err := l.Produce(ctx, coord.Message{Topic: topic, Partition: 0, Value: []byte("cmd")}); err != nil {
			t.Fatal(err)
		}
	}
	tok := regexp.QuoteMeta(l.Token().String())
	code, out, errs := cli(t, "-b", bs, "verify", topic)
	if code != exitOK || !regexp.MustCompile(`^partition 0: 3 record\(s\), 3 stamped, tokens `+tok+`\.\.`+tok+`: OK\n$`).MatchString(out) {
		t.Fatalf("verify of guarded writes: exit %d: %q %s", code, out, errs)
	}
	raw, err := kgo.NewClient(kgo.SeedBrokers(bs), kgo.DisableIdempotentWrite(), kgo.RequiredAcks(kgo.LeaderAck()))
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	if err := raw.ProduceSync(ctx, &kgo.Record{Topic: topic, Partition: 0, Value: []byte("outside")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	code, out, errs = cli(t, "-b", bs, "verify", topic)
	if code != exitCheck || !regexp.MustCompile(`partition 0: 4 record\(s\), 3 stamped, .*FAIL \(1 stale, 0 mismatch\)\n  offset \d+: STALE: batch token -1:-1 after `+tok+`\n$`).MatchString(out) {
		t.Fatalf("verify after an outside write: exit %d: %q %s", code, out, errs)
	}
}
