package kafka

// What an operator's tool reads about the cluster (the `krabka-coord check`
// doctor): the cluster's identity and protocol support, the coordination
// topic's settings, and the ACLs that concern a role prefix. These calls
// only read: none creates the topic or changes anything. They report data;
// judging it (OK, WARN, FAIL) is the caller's business.

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ClusterInfo is what the cluster says about itself.
type ClusterInfo struct {
	ClusterID    string
	ControllerID int32
	Brokers      []BrokerInfo
	// Features are the finalized feature levels from ApiVersions (for
	// example "transaction.version"); a feature the cluster does not list is
	// absent (Kafka before 4.0 lists no transaction.version: level 0).
	Features map[string]int16
	// MissingAPIs names the requests the coordination protocol needs that
	// the answering broker does not offer (empty on any Kafka >= 3.0).
	MissingAPIs []string
	// TxnMaxTimeoutMs is the broker's transaction.max.timeout.ms, -1 when the
	// principal may not describe broker configs.
	TxnMaxTimeoutMs int64
	// TxnAbortScanMs is the broker's
	// transaction.abort.timed.out.transaction.cleanup.interval.ms (how often
	// its transaction coordinator looks for timed-out transactions to
	// abort), -1 when the principal may not describe broker configs.
	TxnAbortScanMs int64
}

// TxnAbortScanKey is the broker setting of ClusterInfo.TxnAbortScanMs.
const TxnAbortScanKey = "transaction.abort.timed.out.transaction.cleanup.interval.ms"

// BrokerInfo is one broker of the cluster's metadata.
type BrokerInfo struct {
	NodeID int32
	Host   string
	Port   int32
}

// requiredAPIs are the requests a member or a describe sends.
var requiredAPIs = []kmsg.Key{
	kmsg.Produce, kmsg.Fetch, kmsg.ListOffsets, kmsg.Metadata, kmsg.FindCoordinator,
	kmsg.InitProducerID, kmsg.AddPartitionsToTxn, kmsg.EndTxn, kmsg.DescribeTransactions,
}

// Cluster asks the cluster for its metadata and its ApiVersions. Errors are
// classified like every other call: a failed SASL handshake matches
// coord.ErrAuthorization, an unreachable cluster coord.ErrTransport or
// coord.ErrTimeout.
func (t *Transport) Cluster(ctx context.Context) (ClusterInfo, error) {
	if err := t.checkOpen(); err != nil {
		return ClusterInfo{}, err
	}
	ctx, cancel := t.bound(ctx)
	defer cancel()
	info := ClusterInfo{Features: map[string]int16{}, TxnMaxTimeoutMs: -1, TxnAbortScanMs: -1}
	md, err := t.adm.BrokerMetadata(ctx)
	if err != nil {
		return info, t.classify(err, "metadata", "")
	}
	info.ClusterID, info.ControllerID = md.Cluster, md.Controller
	for _, b := range md.Brokers {
		info.Brokers = append(info.Brokers, BrokerInfo{NodeID: b.NodeID, Host: b.Host, Port: b.Port})
	}
	sort.Slice(info.Brokers, func(i, j int) bool { return info.Brokers[i].NodeID < info.Brokers[j].NodeID })

	req := kmsg.NewPtrApiVersionsRequest()
	req.ClientSoftwareName, req.ClientSoftwareVersion = "krabka-coord", "1"
	resp, err := req.RequestWith(ctx, t.admin)
	if err == nil {
		err = kerr.ErrorForCode(resp.ErrorCode)
	}
	if err != nil {
		return info, t.classify(err, "ApiVersions", "")
	}
	for _, f := range resp.FinalizedFeatures {
		info.Features[f.Name] = f.MaxVersionLevel
	}
	have := map[int16]bool{}
	for _, k := range resp.ApiKeys {
		have[k.ApiKey] = true
	}
	for _, k := range requiredAPIs {
		if !have[k.Int16()] {
			info.MissingAPIs = append(info.MissingAPIs, k.Name())
		}
	}

	// Broker settings (of one broker: static settings are per broker), when
	// this principal may read them.
	var ids []int32
	if len(info.Brokers) > 0 {
		ids = []int32{info.Brokers[0].NodeID}
	}
	if rcs, err := t.adm.DescribeBrokerConfigs(ctx, ids...); err == nil {
		for _, rc := range rcs {
			if rc.Err != nil {
				continue
			}
			for _, c := range rc.Configs {
				if c.Value == nil {
					continue
				}
				if c.Key == "transaction.max.timeout.ms" {
					if ms, perr := strconv.ParseInt(*c.Value, 10, 64); perr == nil {
						info.TxnMaxTimeoutMs = ms
					}
				}
				if c.Key == TxnAbortScanKey {
					if ms, perr := strconv.ParseInt(*c.Value, 10, 64); perr == nil {
						info.TxnAbortScanMs = ms
					}
				}
			}
			break
		}
	}
	return info, nil
}

// TopicInfo describes the coordination topic as it is.
type TopicInfo struct {
	Name   string
	Exists bool
	// Partitions is the partition count; Replication the smallest
	// replication factor among the partitions.
	Partitions  int32
	Replication int
	// Configs holds the topic's effective settings (cleanup.policy,
	// segment.ms, min.cleanable.dirty.ratio, min.insync.replicas, ...) and
	// ConfigsErr why they could not be read (nil when read).
	Configs    map[string]string
	ConfigsErr error
}

// Topic reads the coordination topic's metadata and settings. It never
// creates the topic: a missing topic gives Exists false and no error.
func (t *Transport) Topic(ctx context.Context) (TopicInfo, error) {
	if err := t.checkOpen(); err != nil {
		return TopicInfo{}, err
	}
	ctx, cancel := t.bound(ctx)
	defer cancel()
	name := t.cfg.Topic
	info := TopicInfo{Name: name}
	md, err := t.adm.Metadata(ctx, name)
	if err != nil {
		return info, t.classify(err, "metadata of "+name, topicACL(name, "DESCRIBE"))
	}
	td, ok := md.Topics[name]
	if !ok || errors.Is(td.Err, kerr.UnknownTopicOrPartition) {
		return info, nil
	}
	if td.Err != nil {
		return info, t.classify(td.Err, "metadata of "+name, topicACL(name, "DESCRIBE"))
	}
	info.Exists = true
	info.Partitions = int32(len(td.Partitions))
	info.Replication = -1
	for _, p := range td.Partitions {
		if info.Replication < 0 || len(p.Replicas) < info.Replication {
			info.Replication = len(p.Replicas)
		}
	}
	rcs, err := t.adm.DescribeTopicConfigs(ctx, name)
	if err == nil && len(rcs) == 1 {
		err = rcs[0].Err
	}
	if err != nil {
		info.ConfigsErr = t.classify(err, "settings of "+name, topicACL(name, "DESCRIBE_CONFIGS"))
		return info, nil
	}
	info.Configs = map[string]string{}
	for _, c := range rcs[0].Configs {
		if c.Value != nil {
			info.Configs[c.Key] = *c.Value
		}
	}
	return info, nil
}

// ACL is one access control entry as the cluster lists it (Kafka's names:
// ResourceType TRANSACTIONAL_ID, TOPIC, CLUSTER; Pattern LITERAL or
// PREFIXED; Operation WRITE, DESCRIBE, ...; Permission ALLOW or DENY).
type ACL struct {
	Principal, Host                     string
	ResourceType, ResourceName, Pattern string
	Operation, Permission               string
}

// ErrNoAuthorizer is returned by ACLs when the cluster runs no authorizer
// (SECURITY_DISABLED): every principal may do everything.
var ErrNoAuthorizer = errors.New("krabka: the cluster has no authorizer (SECURITY_DISABLED)")

// ACLs lists the ACLs (of every principal) that apply to the
// transactional ids starting with txnPrefix, to the coordination topic and
// to the cluster resource: for each, the literal, wildcard and prefixed
// entries that match the name (Kafka's MATCH filter). Listing ACLs needs
// DESCRIBE on the Cluster: without it the error matches
// coord.ErrAuthorization. A cluster without an authorizer gives
// ErrNoAuthorizer.
func (t *Transport) ACLs(ctx context.Context, txnPrefix string) ([]ACL, error) {
	if err := t.checkOpen(); err != nil {
		return nil, err
	}
	ctx, cancel := t.bound(ctx)
	defer cancel()
	type filter struct {
		typ  kmsg.ACLResourceType
		name string
	}
	filters := []filter{
		{kmsg.ACLResourceTypeTransactionalId, txnPrefix},
		{kmsg.ACLResourceTypeTopic, t.cfg.Topic},
		{kmsg.ACLResourceTypeCluster, "kafka-cluster"},
	}
	var out []ACL
	for _, f := range filters {
		req := kmsg.NewPtrDescribeACLsRequest()
		req.ResourceType = f.typ
		req.ResourceName = kmsg.StringPtr(f.name)
		req.ResourcePatternType = kmsg.ACLResourcePatternTypeMatch
		req.Operation = kmsg.ACLOperationAny
		req.PermissionType = kmsg.ACLPermissionTypeAny
		resp, err := req.RequestWith(ctx, t.admin)
		if err == nil {
			err = kerr.ErrorForCode(resp.ErrorCode)
		}
		if errors.Is(err, kerr.SecurityDisabled) {
			return nil, ErrNoAuthorizer
		}
		if err != nil {
			return nil, t.classify(err, "DescribeAcls", "DESCRIBE on the Cluster")
		}
		for _, r := range resp.Resources {
			for _, a := range r.ACLs {
				out = append(out, ACL{
					Principal: a.Principal, Host: a.Host,
					ResourceType: r.ResourceType.String(), ResourceName: r.ResourceName,
					Pattern: r.ResourcePatternType.String(), Operation: a.Operation.String(),
					Permission: a.PermissionType.String(),
				})
			}
		}
	}
	return out, nil
}

// String renders an ACL the way kafka-acls.sh names its parts.
func (a ACL) String() string {
	return fmt.Sprintf("%s %s %s on %s %s %q from host %s", a.Permission, a.Principal, a.Operation, a.Pattern, a.ResourceType, a.ResourceName, a.Host)
}
