package childproc

import (
	"bytes"
	"errors"
	"os/exec"
	"testing"
	"time"
)

type ev struct {
	Ev  string `json:"ev"`
	N   int    `json:"n,omitempty"`
	Err string `json:"err,omitempty"`
}

func (e ev) Kind() string    { return e.Ev }
func (e ev) Failure() string { return e.Err }

// child echoes "a" and, on the command "go", "b" (after a line that is not
// an event) and an err event, then exits.
func child(t *testing.T, o Options) *Proc[ev] {
	t.Helper()
	cmd := exec.Command("sh", "-c", `echo '{"ev":"a","n":1}'; read l; [ "$l" = go ] || exit 1; echo junk; echo '{"ev":"b","n":2}'; echo '{"ev":"err","err":"boom"}'`)
	p, err := Start[ev](cmd, o)
	if err != nil {
		t.Fatalf("no sh, which the test runs as the child: %v", err)
	}
	t.Cleanup(p.Kill)
	return p
}

func TestWait(t *testing.T) {
	p := child(t, Options{Events: 4})
	if e, err := p.Wait("a", 10*time.Second); err != nil || e.N != 1 {
		t.Fatalf("a: %+v %v", e, err)
	}
	if _, err := p.Wait("b", 50*time.Millisecond); err == nil || err.Error() != "no b from the child within 50ms" {
		t.Fatalf("timeout: %v", err)
	}
	p.Send("go")
	if e, err := p.Wait("b", 10*time.Second); err != nil || e.N != 2 {
		t.Fatalf("b: %+v %v", e, err)
	}
	var we *WaitError
	if _, err := p.Wait("c", 10*time.Second); !errors.As(err, &we) || we.Reason != Failed || err.Error() != "boom" {
		t.Fatalf("err event: %v", err)
	}
	if _, err := p.Wait("c", 10*time.Second); err == nil || err.Error() != "the child exited waiting for c" {
		t.Fatalf("exited: %v", err)
	}
}

func TestWaitErr(t *testing.T) {
	p := child(t, Options{BufStart: 16, BufMax: 1 << 10, Err: func(w WaitError) error {
		return errors.New(w.Want + "/" + w.Msg)
	}})
	p.Send("go")
	if _, err := p.Wait("c", 10*time.Second); err == nil || err.Error() != "c/boom" {
		t.Fatalf("err event: %v", err)
	}
}

func TestOut(t *testing.T) {
	var b bytes.Buffer
	o := NewOut[ev](&b)
	o.Send(ev{Ev: "a", N: 1})
	o.Send(ev{Ev: "err", Err: "x"})
	if got, want := b.String(), "{\"ev\":\"a\",\"n\":1}\n{\"ev\":\"err\",\"err\":\"x\"}\n"; got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
}
