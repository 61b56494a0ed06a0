// Package compat runs the core integration scenarios against another Apache
// Kafka release (make compat starts it with cluster.sh --kafka-version and
// sets KRABKA_COMPAT_BOOTSTRAP and KRABKA_COMPAT_VERSION). With
// KRABKA_COMPAT_EXPECT=unsupported the release is too old for the protocol:
// describe must fail with UNSUPPORTED naming the version it found.
package compat

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/krabka/krabka-coord/core"
	"github.com/krabka/krabka-coord/core/coord"
	"github.com/krabka/krabka-coord/core/kafka"
)

func env(t *testing.T) (bootstrap, version string) {
	t.Helper()
	bootstrap, version = os.Getenv("KRABKA_COMPAT_BOOTSTRAP"), os.Getenv("KRABKA_COMPAT_VERSION")
	if bootstrap == "" || version == "" {
		t.Fatal("KRABKA_COMPAT_BOOTSTRAP and KRABKA_COMPAT_VERSION are not set: run `make compat`")
	}
	return bootstrap, version
}

func uniq(prefix string) string {
	var b [5]byte
	_, _ = rand.Read(b[:])
	return prefix + hex.EncodeToString(b[:])
}

func ctxFor(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

func client(t *testing.T, bootstrap string) *coord.Client {
	t.Helper()
	cfg := coord.DefaultConfig()
	for k, v := range map[string]string{
		"bootstrap.servers": bootstrap, "request.timeout.ms": "10000", "krabka.lease.ms": "3000",
		"krabka.renew.interval.ms": "1000", "krabka.challenge.stagger.ms": "500", "krabka.poll.interval.ms": "100",
		"krabka.topic.replication": "1",
	} {
		if err := cfg.Set(k, v); err != nil {
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

// result prints one line of the compatibility table (make compat collects them).
func result(t *testing.T, version, scenario string, err error) {
	t.Helper()
	status := "PASS"
	if err != nil {
		status = "FAIL: " + err.Error()
	}
	fmt.Printf("COMPAT %s | %s | %s\n", version, scenario, status)
	if err != nil {
		t.Errorf("%s on Kafka %s: %v", scenario, version, err)
	}
}

func TestScenarios(t *testing.T) {
	bootstrap, version := env(t)
	if os.Getenv("KRABKA_COMPAT_EXPECT") == "unsupported" {
		_, err := client(t, bootstrap).Describe(ctxFor(t, 60*time.Second), core.MustRole(uniq("compat-")))
		if !errors.Is(err, coord.ErrUnsupported) || !strings.Contains(err.Error(), "Apache Kafka") {
			result(t, version, "describe: UNSUPPORTED naming the version", fmt.Errorf("got %v", err))
			return
		}
		t.Logf("%v", err)
		result(t, version, "describe: UNSUPPORTED naming the version", nil)
		_, err = client(t, bootstrap).Acquire(ctxFor(t, 60*time.Second), core.MustRole(uniq("compat-")), core.MustMemberID("a"))
		if !errors.Is(err, coord.ErrUnsupported) || !strings.Contains(err.Error(), "Apache Kafka") {
			result(t, version, "acquire: UNSUPPORTED naming the version", fmt.Errorf("got %v", err))
			return
		}
		t.Logf("%v", err)
		result(t, version, "acquire: UNSUPPORTED naming the version", nil)
		return
	}
	topic := uniq("compat-cmd-")
	{
		cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(bootstrap, ",")...))
		if err != nil {
			t.Fatal(err)
		}
		resp, err := kadm.NewClient(cl).CreateTopic(ctxFor(t, 60*time.Second), 1, 1, nil, topic)
		cl.Close()
		if err == nil {
			err = resp.Err
		}
		if err != nil {
			t.Fatalf("creating %s: %v", topic, err)
		}
	}
	role := core.MustRole(uniq("compat-"))
	a, b := client(t, bootstrap), client(t, bootstrap)

	la, err := a.Acquire(ctxFor(t, 60*time.Second), role, core.MustMemberID("a"))
	result(t, version, "acquire", err)
	if err != nil {
		return
	}
	result(t, version, "renew", la.Renew(ctxFor(t, 10*time.Second)))
	_, err = la.Produce(ctxFor(t, 10*time.Second), coord.Message{Topic: topic, Partition: 0, Key: []byte("a"), Value: []byte("1")})
	result(t, version, "guarded write", err)

	st, err := b.Describe(ctxFor(t, 30*time.Second), role)
	if err == nil && (!st.Current || st.Holder.String() != "a" || st.Token != la.Token()) {
		err = fmt.Errorf("describe says current=%v holder=%v token=%v, want the holder a with %v", st.Current, st.Holder, st.Token, la.Token())
	}
	result(t, version, "describe", err)

	// Takeover with fencing: the holder stops renewing; b takes over after
	// the lease; a's next guarded write is rejected by the broker (FENCED).
	lb, err := b.Acquire(ctxFor(t, 60*time.Second), role, core.MustMemberID("b"))
	if err == nil && !lb.Token().Supersedes(la.Token()) {
		err = fmt.Errorf("new token %v does not supersede %v", lb.Token(), la.Token())
	}
	if err == nil {
		_, perr := la.Produce(ctxFor(t, 10*time.Second), coord.Message{Topic: topic, Partition: 0, Key: []byte("a"), Value: []byte("2")})
		if !errors.Is(perr, coord.ErrFenced) && !errors.Is(perr, coord.ErrLeaseExpired) {
			err = fmt.Errorf("the deposed leader's write: %v, want FENCED", perr)
		} else {
			_, err = lb.Produce(ctxFor(t, 10*time.Second), coord.Message{Topic: topic, Partition: 0, Key: []byte("b"), Value: []byte("3")})
		}
	}
	result(t, version, "takeover with fencing", err)
}
