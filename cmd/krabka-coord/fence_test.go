package main

import (
	"context"
	"errors"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/krabka/krabka-coord/core"
	"github.com/krabka/krabka-coord/core/coord"
	"github.com/krabka/krabka-coord/core/kafka"
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

	began := time.Now()
	code, out, errs := cli(t, "-b", bs, "fence", "--yes", "--by", "cli-test", role)
	m := regexp.MustCompile(`^fenced a from role \S+: token (\S+) -> (\S+); b took over, token (\S+), \d+ ms after the fence\n$`).FindStringSubmatch(out)
	if code != exitOK || m == nil || m[1] != a.Token().String() {
		t.Fatalf("fence --yes: exit %d: %q %s", code, out, errs)
	}
	newTok := mustToken(t, m[2])
	w := <-bWon
	if w.err != nil {
		t.Fatal(w.err)
	}
	if !w.l.Token().Supersedes(newTok) || w.l.Token().String() != m[3] {
		t.Fatalf("b won %s, not after the fence's %s, or not the reported %s", w.l.Token(), newTok, m[3])
	}
	t.Logf("fence printed %s -> %s; b won %s %v after the command started", m[1], m[2], w.l.Token(), w.at.Sub(began).Round(time.Millisecond))
	select {
	case <-a.Done():
	case <-time.After(20 * time.Second):
		t.Fatal("the deposed holder was never told")
	}
	if a.State() != coord.Fenced {
		t.Fatalf("the deposed holder is %s", a.State())
	}
}

// registerAsReference writes member's registration for role the way a
// member of a reference implementation does (the raw codec: no
// krabka.rejoin, so our readers take it for a member that ignores
// krabka.successor). Nobody campaigns behind it.
func registerAsReference(t *testing.T, bs, role, member string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	cfg := coord.DefaultConfig()
	if err := cfg.Set("bootstrap.servers", bs); err != nil {
		t.Fatal(err)
	}
	tr, err := kafka.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	n, err := tr.Partitions(ctx)
	if err != nil {
		t.Fatal(err)
	}
	r, m := core.MustRole(role), core.MustMemberID(member)
	p, _ := core.RolePartition(r, n)
	if _, err := tr.Append(ctx, p, core.EncodeKey(core.RegistrationKey(r, m)),
		core.EncodeRegistration(core.Registration{Member: m, RegisteredAt: time.Now().UnixMilli()}), nil); err != nil {
		t.Fatal(err)
	}
}

// fenceScene is a role held by a (a library client) with standbys of ours
// campaigning (each Acquire in a goroutine) and, between or after them,
// registrations written as a reference member writes them.
type fenceScene struct {
	role   string
	holder *coord.Leadership
	won    map[string]chan *coord.Leadership
}

// newFenceScene builds the roster in order: names starting with "ref" are
// reference registrations, the others standbys of ours. The stagger is
// 2 s: a standby of ours not named in a handoff challenges one stagger
// later than its rank alone would say, long after the named member.
func newFenceScene(t *testing.T, bs, prefix string, members ...string) *fenceScene {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	t.Cleanup(cancel)
	kv := []string{"krabka.lease.ms", "30000", "krabka.renew.interval.ms", "10000", "krabka.challenge.stagger.ms", "2000"}
	sc := &fenceScene{role: uniqueRole(prefix), won: map[string]chan *coord.Leadership{}}
	r := core.MustRole(sc.role)
	var err error
	if sc.holder, err = libClient(t, bs, kv...).Acquire(ctx, r, core.MustMemberID("a")); err != nil {
		t.Fatal(err)
	}
	for i, m := range members {
		if strings.HasPrefix(m, "ref") {
			registerAsReference(t, bs, sc.role, m)
		} else {
			ch := make(chan *coord.Leadership, 1)
			sc.won[m] = ch
			go func(c *coord.Client, m string) {
				l, err := c.Acquire(ctx, r, core.MustMemberID(m))
				if err != nil && !errors.Is(err, coord.ErrClosed) && ctx.Err() == nil {
					t.Errorf("%s: %v", m, err) // not the end of a standby still waiting when the test ends
				}
				ch <- l
			}(libClient(t, bs, kv...), m)
		}
		for deadline := time.Now().Add(bound); len(describeJSON(t, bs, sc.role).Roster) != i+2; time.Sleep(20 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%s never registered", m)
			}
		}
	}
	return sc
}

// The report of fence --to is who actually took over (docs/PROTOCOL.md
// 11.3: a named handoff is a preference):
//   - named c, behind b (both ours): c takes over at once, b waits; fence
//     reports c with c's token and warns of nothing;
//   - named c, behind a reference registration ref: fence warns that ref
//     ignores krabka.successor and may come first (here it is not running:
//     c takes over, reported as such);
//   - named ref, a reference registration behind b: fence warns that ref
//     ignores krabka.successor; ref does not take the role (a reference
//     member challenges only at its own rank, this one not at all), b does
//     one stagger later, and fence reports b, not ref.
func TestFenceToReportsWhoActuallyTookOver(t *testing.T) {
	bs := tv2(t)
	took := func(t *testing.T, out, who string) string {
		t.Helper()
		m := regexp.MustCompile(`^fenced a from role \S+: token \S+ -> \S+; (\S+) took over, token (\S+), \d+ ms after the fence(.*)\n$`).FindStringSubmatch(out)
		if m == nil || m[1] != who {
			t.Fatalf("fence printed %q, want %s took over", out, who)
		}
		return m[2] + m[3]
	}
	t.Run("named member of ours first in line", func(t *testing.T) {
		sc := newFenceScene(t, bs, "cli-fence-to-ours", "b", "c")
		code, out, errs := cli(t, "-b", bs, "fence", "--yes", "--to", "c", sc.role)
		if code != exitOK || strings.Contains(errs, "preference") {
			t.Fatalf("exit %d: %q %s", code, out, errs)
		}
		tok := took(t, out, "c")
		if l := <-sc.won["c"]; l == nil || l.Token().String() != tok {
			t.Fatalf("c won %v, fence reported token %s", l, tok)
		}
		if st := describeJSON(t, bs, sc.role); st.Holder == nil || *st.Holder != "c" {
			t.Fatalf("after the handoff: %+v", st)
		}
	})
	t.Run("a reference registration ranked ahead", func(t *testing.T) {
		sc := newFenceScene(t, bs, "cli-fence-to-behind-ref", "ref", "c")
		code, out, errs := cli(t, "-b", bs, "fence", "--to", "c", sc.role)
		if code != exitRefused || !strings.Contains(errs, "a preference only: ref ranks ahead of c and registered without krabka.rejoin") {
			t.Fatalf("fence --to c without --yes: exit %d: %s", code, errs)
		}
		code, out, errs = cli(t, "-b", bs, "fence", "--yes", "--to", "c", sc.role)
		if code != exitOK || !strings.Contains(errs, "the handoff to c is a preference: ref ranks ahead of c") {
			t.Fatalf("exit %d: %q %s", code, out, errs)
		}
		tok := took(t, out, "c")
		if l := <-sc.won["c"]; l == nil || l.Token().String() != tok {
			t.Fatalf("c won %v, fence reported token %s", l, tok)
		}
	})
	t.Run("named reference registration behind a member of ours", func(t *testing.T) {
		sc := newFenceScene(t, bs, "cli-fence-to-ref", "b", "ref")
		code, out, errs := cli(t, "-b", bs, "fence", "--yes", "--to", "ref", sc.role)
		if code != exitOK || !strings.Contains(errs, "the handoff to ref is a preference: ref registered without krabka.rejoin") {
			t.Fatalf("exit %d: %q %s", code, out, errs)
		}
		rest := took(t, out, "b")
		tok, note, _ := strings.Cut(rest, ";")
		if strings.TrimSpace(note) != "not ref, the named successor (the handoff is a preference: docs/PROTOCOL.md 11.3)" {
			t.Fatalf("fence printed %q: no word that ref, the named successor, did not take over", out)
		}
		if l := <-sc.won["b"]; l == nil || l.Token().String() != tok {
			t.Fatalf("b won %v, fence reported token %s", l, tok)
		}
	})
}
