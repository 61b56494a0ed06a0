package main

import (
	"context"
	"regexp"
	"testing"
	"time"

	"github.com/krabka/krabka-coord/core"
	"github.com/krabka/krabka-coord/core/coord"
)

// krabka-coord fence on a real broker: without --yes nothing is written
// (exit 4); --to a member that is not registered is exit 5; with --yes the
// holder (a Go client of the library) is deposed, the tokens are printed,
// and the waiting standby takes over.
func TestFenceCommand(t *testing.T) {
	bs := tv2(t)
	role := uniqueRole("cli-fence")
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	client := func() *coord.Client {
		return libClient(t, bs, "krabka.lease.ms", "30000", "krabka.renew.interval.ms", "10000", "krabka.challenge.stagger.ms", "500")
	}
	r := core.MustRole(role)
	a, err := client().Acquire(ctx, r, core.MustMemberID("a"))
	if err != nil {
		t.Fatal(err)
	}
	type won struct {
		l   *coord.Leadership
		err error
		at  time.Time
	}
	bWon := make(chan won, 1)
	cb := client()
	go func() {
		l, err := cb.Acquire(ctx, r, core.MustMemberID("b"))
		bWon <- won{l, err, time.Now()}
	}()
	for len(describeJSON(t, bs, role).Roster) != 2 {
		time.Sleep(20 * time.Millisecond)
	}

	code, _, errs := cli(t, "-b", bs, "fence", role)
	if code != exitRefused || !regexp.MustCompile(`fence would mint a new epoch for \S+ \(the broker then refuses every write of a, token `+regexp.QuoteMeta(a.Token().String())+`\).*give --yes`).MatchString(errs) {
		t.Fatalf("fence without --yes: exit %d: %s", code, errs)
	}
	if st := describeJSON(t, bs, role); st.Token != a.Token().String() {
		t.Fatalf("fence without --yes changed the token: %+v", st)
	}
	code, _, errs = cli(t, "-b", bs, "fence", "--yes", "--to", "ghost", role)
	if code != exitNotFound || !regexp.MustCompile(`successor ghost is not registered`).MatchString(errs) {
		t.Fatalf("fence --to ghost: exit %d: %s", code, errs)
	}

	code, out, errs := cli(t, "-b", bs, "fence", "--yes", "--by", "cli-test", role)
	done := time.Now()
	m := regexp.MustCompile(`^fenced a from role \S+: token (\S+) -> (\S+); the next standby takes over at once\n$`).FindStringSubmatch(out)
	if code != exitOK || m == nil || m[1] != a.Token().String() {
		t.Fatalf("fence --yes: exit %d: %q %s", code, out, errs)
	}
	newTok := mustToken(t, m[2])
	w := <-bWon
	if w.err != nil {
		t.Fatal(w.err)
	}
	if !w.l.Token().Supersedes(newTok) {
		t.Fatalf("b won %s, not after the fence's %s", w.l.Token(), newTok)
	}
	t.Logf("fence printed %s -> %s; b won %s %v after the command exited", m[1], m[2], w.l.Token(), w.at.Sub(done).Round(time.Millisecond))
	select {
	case <-a.Done():
	case <-time.After(20 * time.Second):
		t.Fatal("the deposed holder was never told")
	}
	if a.State() != coord.Fenced {
		t.Fatalf("the deposed holder is %s", a.State())
	}
}
