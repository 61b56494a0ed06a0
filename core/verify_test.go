package core

import "testing"

func TestVerifierJudgesHeaderBatchAndHighest(t *testing.T) {
	v := NewVerifier()
	t1 := FencingToken{ProducerID: 7, ProducerEpoch: 1}
	t2 := FencingToken{ProducerID: 7, ProducerEpoch: 2}
	steps := []struct {
		scope  string
		header string
		has    bool
		batch  FencingToken
		want   Verdict
	}{
		{"r", "7:1", true, t1, VerdictOK},
		{"r", "7:2", true, t2, VerdictOK},
		{"r", "7:1", true, t1, VerdictStale},    // older than the highest seen
		{"r", "7:2", true, t1, VerdictMismatch}, // claims a token its batch does not carry
		{"r", "not-a-token", true, t2, VerdictMismatch},
		{"r", "", false, t1, VerdictStale}, // unstamped and stale: stale wins
		{"r", "", false, t2, VerdictUnstamped},
		{"other", "7:1", true, t1, VerdictOK}, // scopes are independent
	}
	for i, s := range steps {
		if got := v.Judge(s.scope, []byte(s.header), s.has, s.batch); got != s.want {
			t.Fatalf("step %d %+v: %s, want %s", i, s, got, s.want)
		}
	}
	if h, ok := v.Highest("r"); !ok || h != t2 {
		t.Fatalf("highest of r: %s %v", h, ok)
	}
	if _, ok := v.Highest("never"); ok {
		t.Fatal("a scope never seen has a highest token")
	}
	if VerdictMismatch.String() != "MISMATCH" || Verdict(9).String() != "Verdict(9)" {
		t.Fatal("verdict names")
	}
}
