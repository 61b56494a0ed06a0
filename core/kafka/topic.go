package kafka

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/krabka/krabka-coord/core/coord"
)

// TopicConfigs are the settings the coordination topic is created with
// (docs/PROTOCOL.md section 8, "Topic"; docs/OPERATIONS.md explains the
// values):
//
//   - cleanup.policy=compact: a role's state is the latest record of each
//     key;
//   - segment.ms=300000 (five minutes): Kafka never compacts the active
//     segment, and the default of 7 days lets a week of lease renewals pile
//     up in it. Five minutes bound the uncompacted tail a new member folds
//     before its first decision to five minutes of renewals (30 records a
//     role at the default 10 s renew interval; 300,000 for 10,000 roles)
//     while keeping the segment files few (12 rolls an hour a partition,
//     which the cleaner merges again);
//   - segment.bytes=8388608 (8 MiB): the same bound in bytes for a busy
//     partition (about 27,000 renewals), whatever the number of roles;
//   - min.cleanable.dirty.ratio=0.1: the cleaner runs once a tenth of the
//     log is uncompacted (default 0.5: half), so the compacted size stays
//     within about 10 % of the live state.
//
// Only a topic the library creates gets them; an existing topic is used as
// it is, never altered (checkTopicOnce only warns).
var TopicConfigs = map[string]string{
	"cleanup.policy":            "compact",
	"segment.ms":                "300000",
	"segment.bytes":             "8388608",
	"min.cleanable.dirty.ratio": "0.1",
}

// The limits past which an existing topic counts as growing without bound.
const (
	maxSegmentMs  = 24 * 60 * 60 * 1000 // a day of uncompacted renewals
	maxDirtyRatio = 0.5                 // Kafka's default: half the log may stay dirty
)

func (t *Transport) createTopic(ctx context.Context) error {
	rf := t.cfg.TopicReplication
	if rf < 1 {
		md, err := t.adm.BrokerMetadata(ctx)
		if err != nil {
			return t.classify(err, "broker metadata", "")
		}
		rf = int16(min(3, len(md.Brokers)))
		if rf < 1 {
			rf = 1
		}
	}
	configs := map[string]*string{}
	for k, v := range TopicConfigs {
		configs[k] = kadm.StringPtr(v)
	}
	if rf >= 3 {
		configs["min.insync.replicas"] = kadm.StringPtr("2")
	}
	resp, err := t.adm.CreateTopic(ctx, t.cfg.TopicPartitions, rf, configs, t.cfg.Topic)
	if err == nil {
		err = resp.Err
	}
	if err == nil || errors.Is(err, kerr.TopicAlreadyExists) {
		return nil
	}
	return t.classify(err, "creating "+t.cfg.Topic, topicACL(t.cfg.Topic, "CREATE"))
}

// checkTopicOnce reads the settings of the existing coordination topic once
// (in the background: it never delays a call) and logs one warning naming
// each setting that lets the topic grow without bound. The topic is used as
// it is, never changed.
func (t *Transport) checkTopicOnce() {
	t.topicCheck.Do(func() {
		go func() {
			// A few attempts: right after the topic was created, or on a
			// busy broker, the first DescribeConfigs may fail or time out.
			var (
				problems []string
				err      error
			)
			for attempt, wait := 0, 200*time.Millisecond; attempt < 4; attempt, wait = attempt+1, 2*wait {
				if attempt > 0 {
					time.Sleep(wait)
					if t.checkOpen() != nil {
						return
					}
				}
				ctx, cancel := context.WithTimeout(context.Background(), t.cfg.RequestTimeout)
				problems, err = t.TopicProblems(ctx)
				cancel()
				if err == nil || t.checkOpen() != nil {
					break
				}
			}
			if err != nil {
				t.log().Debug("krabka: could not read the coordination topic's settings", "topic", t.cfg.Topic, "error", err)
				return
			}
			if len(problems) > 0 {
				t.log().Warn("krabka: the coordination topic's settings let it grow without bound; it is used as it is",
					"topic", t.cfg.Topic, "settings", strings.Join(problems, "; "))
			}
		}()
	})
}

// TopicProblems returns one sentence for each setting of the coordination
// topic that lets it grow without bound (empty: none).
func (t *Transport) TopicProblems(ctx context.Context) ([]string, error) {
	rcs, err := t.adm.DescribeTopicConfigs(ctx, t.cfg.Topic)
	if err != nil {
		return nil, t.classify(err, "describing the configs of "+t.cfg.Topic, topicACL(t.cfg.Topic, "DESCRIBE_CONFIGS"))
	}
	rc, err := rcs.On(t.cfg.Topic, nil)
	if err == nil {
		err = rc.Err
	}
	if err != nil {
		return nil, t.classify(err, "describing the configs of "+t.cfg.Topic, topicACL(t.cfg.Topic, "DESCRIBE_CONFIGS"))
	}
	vals := map[string]string{}
	for _, c := range rc.Configs {
		if c.Value != nil {
			vals[c.Key] = *c.Value
		}
	}
	return topicProblems(vals), nil
}

// topicProblems judges a topic's settings (see TopicProblems).
func topicProblems(vals map[string]string) []string {
	var out []string
	if p := vals["cleanup.policy"]; !strings.Contains(p, "compact") {
		out = append(out, "cleanup.policy="+p+" (want compact)")
	}
	if ms, err := strconv.ParseInt(vals["segment.ms"], 10, 64); err == nil && ms > maxSegmentMs {
		out = append(out, "segment.ms="+vals["segment.ms"]+" (the active segment is never compacted: want about "+
			TopicConfigs["segment.ms"]+", at most "+strconv.Itoa(maxSegmentMs)+")")
	}
	if r, err := strconv.ParseFloat(vals["min.cleanable.dirty.ratio"], 64); err == nil && r >= maxDirtyRatio {
		out = append(out, "min.cleanable.dirty.ratio="+vals["min.cleanable.dirty.ratio"]+" (want about "+TopicConfigs["min.cleanable.dirty.ratio"]+")")
	}
	return out
}

// PartitionSpan is one partition's offsets as the broker lists them: the
// log start and the high watermark. End - Start bounds the offsets a new
// member reads to fold the partition (compaction leaves gaps below it).
type PartitionSpan struct {
	Partition  int32
	Start, End int64
}

// Spans lists the log start and the high watermark of every partition of
// the coordination topic (two ListOffsets requests per leader), in
// partition order. It blocks until the brokers answer or ctx ends; errors
// are classified (ErrAuthorization naming the topic's DESCRIBE ACL,
// ErrUnknownTopicOrPartition for a missing topic, ErrTransport).
func (t *Transport) Spans(ctx context.Context) ([]PartitionSpan, error) {
	if err := t.checkOpen(); err != nil {
		return nil, err
	}
	ctx, cancel := t.bound(ctx)
	defer cancel()
	topic := t.cfg.Topic
	starts, err := t.adm.ListStartOffsets(ctx, topic)
	if err == nil {
		err = starts.Error()
	}
	if err != nil {
		return nil, t.classify(err, "listing the log start offsets of "+topic, topicACL(topic, "DESCRIBE"))
	}
	ends, err := t.adm.ListEndOffsets(ctx, topic)
	if err == nil {
		err = ends.Error()
	}
	if err != nil {
		return nil, t.classify(err, "listing the end offsets of "+topic, topicACL(topic, "DESCRIBE"))
	}
	if _, ok := ends[topic]; !ok {
		return nil, coord.WrapError(coord.ErrUnknownTopicOrPartition, nil, "topic %s does not exist", topic)
	}
	var out []PartitionSpan
	ends.Each(func(o kadm.ListedOffset) {
		if o.Topic != topic {
			return
		}
		s := PartitionSpan{Partition: o.Partition, Start: 0, End: o.Offset}
		if lo, ok := starts.Lookup(topic, o.Partition); ok {
			s.Start = lo.Offset
		}
		out = append(out, s)
	})
	slices.SortFunc(out, func(a, b PartitionSpan) int { return cmp.Compare(a.Partition, b.Partition) })
	return out, nil
}
