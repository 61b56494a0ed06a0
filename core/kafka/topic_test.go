package kafka_test

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/krabka/krabka-coord/core"
	"github.com/krabka/krabka-coord/core/coord"
	"github.com/krabka/krabka-coord/core/kafka"
	"github.com/krabka/krabka-coord/tests/kafka/kafkatest"
)

func admin(t *testing.T, bootstrap string) *kadm.Client {
	cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(bootstrap, ",")...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return kadm.NewClient(cl)
}

// A missing coordination topic is created compacted with the configured
// partitions and replication min(3, brokers); an existing one is used as it
// is (never changed), with its partition count read from metadata.
func TestCoordinationTopicCreatedWhenMissingNeverChanged(t *testing.T) {
	c := kafkatest.Start(t, kafkatest.Options{})
	adm := admin(t, c.Bootstrap)
	ctx := ctxFor(t, 30*time.Second)

	fresh := uniq("it_coord_")
	tr, err := kafka.New(testConfig(t, c.Bootstrap, "krabka.topic", fresh))
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	n, err := tr.Partitions(ctx)
	if err != nil || n != 16 {
		t.Fatalf("partitions %d %v", n, err)
	}
	td, err := adm.ListTopics(ctx, fresh)
	if err != nil || len(td[fresh].Partitions) != 16 || td[fresh].Partitions.NumReplicas() != 1 {
		t.Fatalf("created topic: %+v %v", td[fresh], err)
	}
	rcs, err := adm.DescribeTopicConfigs(ctx, fresh)
	if err != nil {
		t.Fatal(err)
	}
	rc, _ := rcs.On(fresh, nil)
	got := map[string]string{}
	for _, kv := range rc.Configs {
		got[kv.Key] = kv.MaybeValue()
	}
	for k, want := range kafka.TopicConfigs {
		if got[k] != want {
			t.Fatalf("created topic: %s=%q, want %q", k, got[k], want)
		}
	}
	if p, err := tr.TopicProblems(ctx); err != nil || len(p) != 0 {
		t.Fatalf("a topic this library created has no problems: %v %v", p, err)
	}

	existing := uniq("it_coord_")
	if _, err := adm.CreateTopic(ctx, 3, 1, map[string]*string{"cleanup.policy": kadm.StringPtr("delete")}, existing); err != nil {
		t.Fatal(err)
	}
	var logged syncBuffer
	cfg2 := testConfig(t, c.Bootstrap, "krabka.topic", existing)
	// Debug too: when the warning does not come, the log says why.
	cfg2.Logger = slog.New(slog.NewTextHandler(&logged, &slog.HandlerOptions{Level: slog.LevelDebug}))
	tr2, err := kafka.New(cfg2)
	if err != nil {
		t.Fatal(err)
	}
	defer tr2.Close()
	if n, err := tr2.Partitions(ctx); err != nil || n != 3 {
		t.Fatalf("existing topic: %d %v", n, err)
	}
	rcs, _ = adm.DescribeTopicConfigs(ctx, existing)
	rc, _ = rcs.On(existing, nil)
	for _, kv := range rc.Configs {
		if kv.Key == "cleanup.policy" && kv.MaybeValue() != "delete" {
			t.Fatalf("existing topic's cleanup.policy changed to %s", kv.MaybeValue())
		}
	}
	// One warning names every setting that lets it grow: the policy, the
	// default 7-day segment.ms and the default 0.5 dirty ratio.
	problems, err := tr2.TopicProblems(ctx)
	if err != nil || len(problems) != 3 {
		t.Fatalf("problems of a default delete topic: %q %v", problems, err)
	}
	// The check runs in the background and tries up to four times.
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(logged.String(), "segment.ms=604800000") && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if n := strings.Count(logged.String(), "grow without bound"); n != 1 ||
		!strings.Contains(logged.String(), "cleanup.policy=delete") || !strings.Contains(logged.String(), "min.cleanable.dirty.ratio=0.5") {
		t.Fatalf("want one warning naming the settings, logged %d:\n%s", n, logged.String())
	}
	tr2.Partitions(ctx)
	time.Sleep(100 * time.Millisecond)
	if n := strings.Count(logged.String(), "grow without bound"); n != 1 {
		t.Fatalf("warned %d times", n)
	}
}

// A role nobody ever took: no holder, NoEpoch, not current.
func TestDescribeRoleNeverTaken(t *testing.T) {
	c := kafkatest.Start(t, kafkatest.Options{})
	st, err := newClient(t, c.Bootstrap).Describe(ctxFor(t, 10*time.Second), core.MustRole(uniq("it-never-")))
	if err != nil {
		t.Fatal(err)
	}
	if st.HasHolder || st.Current || st.Token != core.NoEpoch || st.Lease != nil || len(st.Roster) != 0 {
		t.Fatalf("%+v", st)
	}
}

// A cluster that never answers (a black hole from the first byte): Describe
// gives ErrTimeout or ErrTransport within about request.timeout.ms; Acquire
// retries until its own deadline and then gives ErrTimeout. Never a hang.
func TestBlackHoledClusterDoesNotHang(t *testing.T) {
	c := kafkatest.Start(t, kafkatest.Options{})
	px := newProxy()
	px.Sever()
	defer px.Close()
	cl, err := kafka.NewClient(testConfig(t, c.Bootstrap, "request.timeout.ms", "1000"), kafka.WithDialer(px.Dial))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for name, call := range map[string]func() error{
		"acquire": func() error {
			_, err := cl.Acquire(ctxFor(t, 2*time.Second), core.MustRole("r"), core.MustMemberID("m"))
			if !errors.Is(err, coord.ErrTimeout) {
				t.Fatalf("acquire: %v, want ErrTimeout at its deadline", err)
			}
			return err
		},
		"describe": func() error { _, err := cl.Describe(ctxFor(t, time.Minute), core.MustRole("r")); return err },
	} {
		start := time.Now()
		err := call()
		if !errors.Is(err, coord.ErrTimeout) && !errors.Is(err, coord.ErrTransport) {
			t.Fatalf("%s: %v", name, err)
		}
		if d := time.Since(start); d > 3*time.Second {
			t.Fatalf("%s took %v with request.timeout.ms=1000", name, d)
		}
		t.Logf("%s: %v after %v", name, err, time.Since(start).Round(time.Millisecond))
	}
}

// On three brokers the coordination topic is created with replication 3 and
// min.insync.replicas=2, and the election works on it.
func TestCoordinationTopicOnThreeBrokers(t *testing.T) {
	c := kafkatest.Start(t, kafkatest.Options{Nodes: 3})
	adm := admin(t, c.Bootstrap)
	ctx := ctxFor(t, 60*time.Second)
	topic := uniq("it_coord3_")
	// A lease long enough for a renewal on three loaded nodes (this test is
	// about the topic, not about timing).
	cl := newClient(t, c.Bootstrap, "krabka.topic", topic, "krabka.topic.partitions", "4",
		"krabka.lease.ms", "30000", "krabka.renew.interval.ms", "10000")
	role := core.MustRole(uniq("it-3n-"))
	l := acquire(t, cl, role, "a")
	if err := l.Renew(ctx); err != nil {
		t.Fatal(err)
	}
	td, err := adm.ListTopics(ctx, topic)
	if err != nil || len(td[topic].Partitions) != 4 || td[topic].Partitions.NumReplicas() != 3 {
		t.Fatalf("created topic: %+v %v", td[topic], err)
	}
	rcs, err := adm.DescribeTopicConfigs(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	rc, _ := rcs.On(topic, nil)
	got := map[string]string{}
	for _, kv := range rc.Configs {
		got[kv.Key] = kv.MaybeValue()
	}
	if got["cleanup.policy"] != "compact" || got["min.insync.replicas"] != "2" {
		t.Fatalf("cleanup.policy=%s min.insync.replicas=%s", got["cleanup.policy"], got["min.insync.replicas"])
	}
	st, err := cl.Describe(ctx, role)
	if err != nil || !st.Current {
		t.Fatalf("%+v %v", st, err)
	}
}

// The very first calls on a newly formatted cluster (no coordination topic,
// no __transaction_state yet) wait out the coordinator's start-up errors
// (COORDINATOR_NOT_AVAILABLE and the like pass by themselves) instead of
// failing: describe answers "never taken" and acquire wins.
func TestFirstCallsOnAFreshClusterWaitForTheCoordinator(t *testing.T) {
	c := kafkatest.Start(t, kafkatest.Options{Name: "fresh"})
	cl := newClient(t, c.Bootstrap)
	role := core.MustRole(uniq("it-fresh-"))
	st, err := cl.Describe(ctxFor(t, 30*time.Second), role)
	if err != nil {
		t.Fatalf("describe on a fresh cluster: %v", err)
	}
	if st.Token != core.NoEpoch || st.HasHolder || st.Current {
		t.Fatalf("describe of a role never taken: %+v", st)
	}
	l := acquire(t, cl, role, "a")
	if l.Token() == core.NoEpoch || l.State() != coord.Active {
		t.Fatalf("acquire on a fresh cluster: %s", l)
	}
}

// syncBuffer is a bytes.Buffer that log lines may be written to from other
// goroutines while the test reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
