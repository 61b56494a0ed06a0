package kafka

import (
	"github.com/krabka/krabka-coord/core/coord"
)

// GroupLogSuffix is appended to krabka.topic to name the group log: the
// second compacted topic where role groups keep their membership and plans
// (docs/GROUPS.md).
const GroupLogSuffix = ".groups"

// GroupLogTopic returns the name of the group log of cfg's coordination
// topic ("__coordination_state.groups" by default).
func GroupLogTopic(cfg coord.Config) string { return cfg.Topic + GroupLogSuffix }

// NewGroupLog returns the group log of cfg's cluster for coord.NewGroup,
// coord.NewSemaphore and coord.DescribeGroup: a transport whose topic is
// GroupLogTopic(cfg) (created on first use, compacted like the
// coordination topic, with krabka.topic.partitions partitions). Close its
// Transport when done. Errors: those of New (ErrInvalidConfig naming the
// key; ErrInvalidArgument when the group log's name is not a legal topic
// name). No connection is made.
func NewGroupLog(cfg coord.Config, options ...Option) (coord.GroupLog, error) {
	topic := GroupLogTopic(cfg)
	if len(topic) > 249 {
		return coord.GroupLog{}, coord.WrapError(coord.ErrInvalidArgument, nil,
			"krabka.topic %q is too long for its group log %q (at most 249 bytes)", cfg.Topic, topic)
	}
	cfg.Topic = topic
	t, err := New(cfg, options...)
	if err != nil {
		return coord.GroupLog{}, err
	}
	return coord.GroupLog{Transport: t, Topic: topic}, nil
}
