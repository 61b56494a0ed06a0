package coord_test

import (
	"errors"
	"testing"

	"github.com/krabka/krabka-coord/core/coord"
)

// Confirm answers from the coordinator, not from the view: a holder whose
// successor minted on another coordination topic (the same transactional
// id, a log the holder does not follow) is told false, while its state is
// still ACTIVE; the successor is told true.
func TestConfirmIsTrueForTheLiveTermAndFalseAfterABlindMint(t *testing.T) {
	e := newEnv(t)
	ca, _ := e.client("krabka.topic", "coord_a")
	cb, _ := e.client("krabka.topic", "coord_b")
	a, err := ca.Acquire(bg(), role, ma)
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := a.Confirm(bg()); err != nil || !ok {
		t.Fatalf("confirm of the live term: %v, %v", ok, err)
	}
	b, err := cb.Acquire(bg(), role, mb)
	if err != nil {
		t.Fatal(err)
	}
	if !b.Token().Supersedes(a.Token()) {
		t.Fatalf("the successor's token %s does not supersede %s", b.Token(), a.Token())
	}
	ok, err := a.Confirm(bg())
	if err != nil || ok {
		t.Fatalf("confirm of the blind holder: %v, %v (want false, nil)", ok, err)
	}
	if a.State() != coord.Active {
		t.Fatalf("a false confirm ended the leadership: %s", a.State())
	}
	if ok, err := b.Confirm(bg()); err != nil || !ok {
		t.Fatalf("confirm of the successor: %v, %v", ok, err)
	}
	// The broker's refusal, not Confirm, ends the blind holder.
	if err := a.Renew(bg()); !errors.Is(err, coord.ErrFenced) {
		t.Fatalf("renewal of the blind holder: %v", err)
	}
	if ok, err := a.Confirm(bg()); ok || !errors.Is(err, coord.ErrFenced) {
		t.Fatalf("confirm of a fenced leadership: %v, %v (want false, FENCED)", ok, err)
	}
}

// Confirm of a resigned or closed leadership is false with the error the
// leadership ended with; it sends nothing.
func TestConfirmOfAnEndedLeadershipAnswersItsEnd(t *testing.T) {
	e := newEnv(t)
	c, _ := e.client()
	l, err := c.Acquire(bg(), role, ma)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Resign(bg()); err != nil {
		t.Fatal(err)
	}
	if ok, err := l.Confirm(bg()); ok || !errors.Is(err, coord.ErrNotLeader) {
		t.Fatalf("confirm after resign: %v, %v (want false, NOT_LEADER)", ok, err)
	}
}
