package kafka

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/krabka/krabka-coord/core"
	"github.com/krabka/krabka-coord/core/coord"
)

// The fence mapping is exact: 47 and 90 on a transactional step are the
// only loss signal; on any other step they are ordinary errors.
func TestClassifyMapsBrokerErrors(t *testing.T) {
	wrap := func(e error) error { return fmt.Errorf("request failed: %w", e) }
	cases := []struct {
		err  error
		txn  bool
		want error
	}{
		{wrap(kerr.InvalidProducerEpoch), true, coord.ErrFenced},
		{wrap(kerr.ProducerFenced), true, coord.ErrFenced},
		{wrap(kerr.InvalidProducerEpoch), false, coord.ErrTransport},
		{wrap(kerr.ProducerFenced), false, coord.ErrTransport},
		{wrap(kerr.InvalidProducerIDMapping), true, coord.ErrTransport},
		{wrap(kerr.TransactionalIDAuthorizationFailed), true, coord.ErrAuthorization},
		{wrap(kerr.TopicAuthorizationFailed), false, coord.ErrAuthorization},
		{wrap(kerr.ClusterAuthorizationFailed), false, coord.ErrAuthorization},
		{wrap(kerr.SaslAuthenticationFailed), false, coord.ErrAuthentication},
		{wrap(kerr.MessageTooLarge), true, coord.ErrMessageTooLarge},
		{wrap(kerr.UnknownTopicOrPartition), true, coord.ErrUnknownTopicOrPartition},
		{wrap(kerr.UnsupportedVersion), true, coord.ErrUnsupported},
		{errors.New("broker is too old; the broker has already indicated it will not know how to handle the request"), true, coord.ErrUnsupported},
		{wrap(context.DeadlineExceeded), false, coord.ErrTimeout},
		{wrap(kerr.NotLeaderForPartition), false, coord.ErrTransport},
		{errors.New("dial tcp 127.0.0.1:1: connection refused"), false, coord.ErrTransport},
	}
	for _, c := range cases {
		got := classifyTxn(c.err, "step", "WRITE on TransactionalId \"r\"", c.txn)
		if coord.ClientErrorKind(got) != c.want {
			t.Errorf("%v (txn=%v): got %v, want %v", c.err, c.txn, got, c.want)
		}
	}
	if got := classifyTxn(wrap(kerr.TransactionalIDAuthorizationFailed), "InitProducerId", txnACL("alice.r", "WRITE"), true); !errors.Is(got, kerr.TransactionalIDAuthorizationFailed) ||
		!containsAll(got.Error(), "WRITE", "TransactionalId", "alice.r") {
		t.Fatalf("authorization message must name the ACL: %v", got)
	}
}

func containsAll(s string, parts ...string) bool {
	for _, p := range parts {
		if !strings.Contains(s, p) {
			return false
		}
	}
	return true
}

// Guarded writes with Partition -1 follow Kafka's default key hashing.
func TestMessagePartitionerMatchesKafkaKeyHashing(t *testing.T) {
	var p messagePartitioner
	tp := p.ForTopic("t")
	rec := newRecord([]byte("controller"), -1)
	want := int((core.Murmur2([]byte("controller")) & 0x7fffffff) % 16)
	if got := tp.Partition(rec, 16); got != want {
		t.Fatalf("got %d want %d", got, want)
	}
	if got := tp.Partition(newRecord([]byte("k"), 5), 16); got != 5 {
		t.Fatalf("pinned partition: %d", got)
	}
}

func newRecord(key []byte, partition int32) *kgoRecord {
	return &kgoRecord{Key: key, Partition: partition}
}

type kgoRecord = kgo.Record
