package kafka_test

import (
	"errors"
	"testing"
	"time"

	"github.com/krabka/krabka-coord/core"
	"github.com/krabka/krabka-coord/core/coord"
	"github.com/krabka/krabka-coord/tests/kafka/kafkatest"
)

// Leadership.Confirm on real brokers formatted with transaction version 1
// and 2: true for a live term, also after its renewals and guarded writes
// (the commits of a term leave the coordinator's epoch where the mint put
// it: docs/PROTOCOL.md 8); false once a blind successor minted the role
// from another coordination topic (the same transactional id, a log the
// holder does not follow), while the holder still reads ACTIVE; true for
// that successor. The holder's next write is then refused by the broker.
func TestConfirmOnRealBrokersAfterABlindSuccessorsMint(t *testing.T) {
	eachTV(t, func(t *testing.T, c *kafkatest.Cluster) {
		topic, _ := dataTopic(t, c.Bootstrap)
		ca := newClient(t, c.Bootstrap, "krabka.topic", uniq("it-confirm-a-"), "krabka.topic.partitions", "1")
		cb := newClient(t, c.Bootstrap, "krabka.topic", uniq("it-confirm-b-"), "krabka.topic.partitions", "1")
		role := core.MustRole(uniq("it-confirm-"))
		a := acquire(t, ca, role, "old")
		confirm := func(l *coord.Leadership, what string, want bool) {
			t.Helper()
			ok, err := l.Confirm(ctxFor(t, 10*time.Second))
			if err != nil || ok != want {
				t.Fatalf("confirm of %s: %v, %v (want %v)", what, ok, err, want)
			}
		}
		confirm(a, "the live term", true)
		for i := 0; i < 2; i++ {
			if err := a.Renew(ctxFor(t, 10*time.Second)); err != nil {
				t.Fatal(err)
			}
			if _, err := a.Produce(ctxFor(t, 10*time.Second), coord.Message{Topic: topic, Partition: 0, Key: []byte("v"), Value: []byte("v")}); err != nil {
				t.Fatal(err)
			}
		}
		confirm(a, "the live term after renewals and guarded writes", true)
		b := acquire(t, cb, role, "new")
		if !b.Token().Supersedes(a.Token()) {
			t.Fatalf("the successor's token %s does not supersede %s", b.Token(), a.Token())
		}
		confirm(a, "the blind holder", false)
		if a.State() != coord.Active {
			t.Fatalf("the blind holder is %s after a false confirm, want ACTIVE (nothing told it)", a.State())
		}
		confirm(b, "the successor", true)
		if _, err := a.Produce(ctxFor(t, 10*time.Second), coord.Message{Topic: topic, Partition: 0, Key: []byte("old"), Value: []byte("old")}); !errors.Is(err, coord.ErrFenced) {
			t.Fatalf("the blind holder's write after a false confirm: %v, want FENCED", err)
		}
		if ok, err := a.Confirm(ctxFor(t, 10*time.Second)); ok || !errors.Is(err, coord.ErrFenced) {
			t.Fatalf("confirm of the fenced holder: %v, %v (want false, FENCED)", ok, err)
		}
	})
}
