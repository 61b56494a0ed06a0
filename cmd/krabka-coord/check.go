package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/krabka/krabka-coord/core"
	"github.com/krabka/krabka-coord/core/coord"
	"github.com/krabka/krabka-coord/core/kafka"
)

var checkCommand = &command{
	name: "check", summary: "doctor: can this cluster and principal run krabka-coord?",
	help: `Checks, in order, and prints one OK, WARN or FAIL line for each, with the fix
under every WARN and FAIL:
  reachable        a TCP connection to a bootstrap server
  authentication   the security protocol and SASL login (wrong password: FAIL)
  cluster          cluster id, brokers, controller
  transactions     InitProducerId/EndTxn/DescribeTransactions offered; transaction.version
  txn timeout      krabka.txn.timeout.ms (capped at krabka.lease.ms) within the broker's
                   transaction.max.timeout.ms
  txn freeze       how long a lease transaction left open (a holder killed between its
                   Produce and its EndTxn) holds its partition's last stable offset: that
                   timeout plus the broker's
                   transaction.abort.timed.out.transaction.cleanup.interval.ms; WARN when
                   it reaches krabka.lease.ms - krabka.renew.interval.ms (read_committed
                   readers, the reference members, can then see a healthy lease expire)
  describe         DescribeTransactions allowed on the role prefix
  topic            the coordination topic: partitions, replication, min.insync.replicas,
                   cleanup.policy=compact, segment.ms (at most a day; 5 min for a new topic) and
                   min.cleanable.dirty.ratio (about 0.1), as docs/PROTOCOL.md section 8 asks;
                   WARN where the library itself warns (kafka.TopicProblems)
  cold start       what a new member reads before its first decision: the offsets of
                   every partition (log start to high watermark), and the largest
                   partition read and folded once, timed; WARN when that fold takes
                   longer than krabka.renew.interval.ms (docs/OPERATIONS.md, "Cold start")
  acl              the ACLs this principal has on the role prefix (TransactionalId
                   WRITE and DESCRIBE) and on the coordination topic
It only reads: it creates nothing and writes nothing. A FAIL stops the checks
that depend on it. Exit code 3 when any line is FAIL, 0 otherwise (WARN lines
included).`,
	example: `krabka-coord -b kafka-1:9092 -X security.protocol=SASL_SSL -X sasl.mechanism=SCRAM-SHA-512 \
    -X sasl.username=ops -X sasl.password=... check --prefix prod.`,
	flags: func(fs *flag.FlagSet, o *options) {
		fs.StringVar(&o.prefix, "prefix", "", "role `PREFIX` whose ACLs to check (default: krabka.role.prefix)")
		fs.StringVar(&o.role, "role", o.role, "a `ROLE` to probe with DescribeTransactions (the default is a name nobody takes)")
		fs.StringVar(&o.output, "o", o.output, "output `FORMAT`: table or json")
	},
	run: runCheck,
}

type checkLine struct {
	Status string `json:"status"` // OK, WARN, FAIL
	Check  string `json:"check"`
	Detail string `json:"detail"`
	Fix    string `json:"fix,omitempty"`
}

type checker struct {
	e     *env
	lines []checkLine
}

func (c *checker) add(status, check, detail, fix string) {
	l := checkLine{status, check, detail, fix}
	c.lines = append(c.lines, l)
	if c.e.o.output == "json" {
		return
	}
	fmt.Fprintf(c.e.stdout, "%-4s  %-15s %s\n", status, check, detail)
	if fix != "" {
		fmt.Fprintf(c.e.stdout, "      %-15s fix: %s\n", "", fix)
	}
}

func (c *checker) ok(check, format string, a ...any) {
	c.add("OK", check, fmt.Sprintf(format, a...), "")
}
func (c *checker) warn(check, detail, fix string) { c.add("WARN", check, detail, fix) }
func (c *checker) fail(check, detail, fix string) { c.add("FAIL", check, detail, fix) }

func (c *checker) finish() int {
	failed, warned := 0, 0
	for _, l := range c.lines {
		switch l.Status {
		case "FAIL":
			failed++
		case "WARN":
			warned++
		}
	}
	if c.e.o.output == "json" {
		if code := writeJSON(c.e, c.lines); code != exitOK {
			return code
		}
	} else {
		fmt.Fprintf(c.e.stdout, "check: %d OK, %d WARN, %d FAIL\n", len(c.lines)-failed-warned, warned, failed)
	}
	if failed > 0 {
		return exitCheck
	}
	return exitOK
}

// principal is the Kafka principal this configuration authenticates as.
func principal(cfg coord.Config) string {
	if strings.HasPrefix(cfg.SecurityProtocol, "SASL_") {
		return "User:" + cfg.SASLUsername
	}
	if cfg.SecurityProtocol == "SSL" {
		if v, _ := cfg.Get("ssl.certificate.location"); v != "" {
			return "the principal of the client certificate"
		}
	}
	return "User:ANONYMOUS"
}

func runCheck(e *env, args []string) int {
	if err := checkOutput(e.o); err != nil {
		e.errorf("%v", err)
		return exitUsage
	}
	if len(args) != 0 {
		e.errorf("check takes no argument (use --role ROLE to probe a role)")
		return exitUsage
	}
	cfg, err := e.o.config()
	if err != nil {
		e.errorf("%v", err)
		return exitUsage
	}
	prefix := cfg.RolePrefix
	if e.o.prefix != "" {
		prefix = e.o.prefix
	}
	if _, err := roleArg(e.o.role); err != nil {
		e.errorf("--role: %v", err)
		return exitUsage
	}
	if name, ok := cfg.MemCluster(); ok {
		e.errorf("bootstrap.servers=%s%s names an in-process cluster (a test aid of one process, docs/TESTING.md): check needs a real Kafka cluster", coord.MemScheme, name)
		return exitUsage
	}
	probe := e.o.role
	ch := &checker{e: e}
	ctx := e.ctx

	// 1. TCP reachability of the bootstrap servers.
	dialTimeout := min(cfg.RequestTimeout, 5*time.Second)
	var reached []string
	var dialErrs []string
	for _, s := range cfg.BootstrapServers {
		d := net.Dialer{Timeout: dialTimeout}
		conn, err := d.DialContext(ctx, "tcp", s)
		if err != nil {
			dialErrs = append(dialErrs, err.Error())
			continue
		}
		conn.Close()
		reached = append(reached, s)
	}
	if len(reached) == 0 {
		ch.fail("reachable", "no bootstrap server accepts a TCP connection: "+strings.Join(dialErrs, "; "),
			"check bootstrap.servers (-b), that the brokers run and listen on these addresses (advertised.listeners), and firewalls")
		return ch.finish()
	}
	if len(dialErrs) > 0 {
		ch.warn("reachable", fmt.Sprintf("%s accept(s) connections, but: %s", strings.Join(reached, ", "), strings.Join(dialErrs, "; ")),
			"remove dead entries from bootstrap.servers or restart those brokers")
	} else {
		ch.ok("reachable", "%s accept(s) TCP connections", strings.Join(reached, ", "))
	}

	t, err := kafka.New(cfg)
	if err != nil {
		ch.fail("configuration", err.Error(), "fix the property the message names")
		return ch.finish()
	}
	defer t.Close()

	// 2. Authentication and cluster metadata.
	who := principal(cfg)
	ci, err := t.Cluster(ctx)
	if err != nil {
		authFix := "check security.protocol against the listener's protocol (PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL)"
		if strings.HasPrefix(cfg.SecurityProtocol, "SASL_") {
			authFix = "check sasl.username, sasl.password and sasl.mechanism (" + cfg.SASLMechanism + ") against the user the cluster knows, and that the listener speaks " + cfg.SecurityProtocol
		}
		switch {
		case errors.Is(err, coord.ErrAuthentication):
			ch.fail("authentication", fmt.Sprintf("%s %s login as %s was refused: %v", cfg.SecurityProtocol, cfg.SASLMechanism, who, err), authFix)
		case errors.Is(err, coord.ErrTLS):
			ch.fail("authentication", fmt.Sprintf("the TLS handshake over %s failed: %v", cfg.SecurityProtocol, err),
				"check ssl.ca.location (the CA that signed the brokers' certificates), the broker host names in bootstrap.servers, and the client certificate (ssl.certificate.location, ssl.key.location) when the listener requires one")
		case errors.Is(err, coord.ErrAuthorization):
			ch.fail("authentication", fmt.Sprintf("%s may not read the cluster's metadata: %v", who, err), "grant DESCRIBE on the Cluster or the topic to "+who)
		default:
			ch.fail("authentication", fmt.Sprintf("no Kafka answer over %s: %v", cfg.SecurityProtocol, err), authFix)
		}
		return ch.finish()
	}
	if strings.HasPrefix(cfg.SecurityProtocol, "SASL_") {
		ch.ok("authentication", "%s %s login as %s accepted", cfg.SecurityProtocol, cfg.SASLMechanism, who)
	} else {
		ch.ok("authentication", "%s, no login (principal %s)", cfg.SecurityProtocol, who)
	}
	ch.ok("cluster", "id %s, %d broker(s), controller %d", ci.ClusterID, len(ci.Brokers), ci.ControllerID)

	// 3. Transactions.
	tv, hasTV := ci.Features["transaction.version"]
	tvText := "transaction.version=" + strconv.Itoa(int(tv))
	if !hasTV {
		tvText = "transaction.version not listed (Kafka before 4.0: level 0)"
	}
	if len(ci.MissingAPIs) > 0 {
		ch.fail("transactions", fmt.Sprintf("the cluster does not offer %s: it cannot run the coordination protocol (%s)", strings.Join(ci.MissingAPIs, ", "), tvText),
			"use Apache Kafka 3.0 or later (or a service with transactions and DescribeTransactions)")
		return ch.finish()
	}
	ch.ok("transactions", "InitProducerId, AddPartitionsToTxn, EndTxn and DescribeTransactions offered; %s (both 1 and 2 work)", tvText)
	txnMs := cfg.LeaseTxnTimeout().Milliseconds()
	switch {
	case ci.TxnMaxTimeoutMs < 0:
		ch.ok("txn timeout", "%s; transaction.max.timeout.ms not readable (needs DESCRIBE_CONFIGS on the Cluster): Kafka's default is %d", txnTimeoutText(cfg), kafkaDefaultTxnMaxTimeoutMs)
	case ci.TxnMaxTimeoutMs < txnMs:
		ch.fail("txn timeout", fmt.Sprintf("%s is above the broker's transaction.max.timeout.ms=%d: every lease transaction carries it, so every acquire fails (INVALID_CONFIG)", txnTimeoutText(cfg), ci.TxnMaxTimeoutMs),
			fmt.Sprintf("lower krabka.txn.timeout.ms to at most %d or raise transaction.max.timeout.ms on the brokers", ci.TxnMaxTimeoutMs))
	default:
		ch.ok("txn timeout", "%s within transaction.max.timeout.ms=%d", txnTimeoutText(cfg), ci.TxnMaxTimeoutMs)
	}
	fl := judgeTxnFreeze(cfg, ci.TxnMaxTimeoutMs, ci.TxnAbortScanMs)
	ch.add(fl.Status, fl.Check, fl.Detail, fl.Fix)

	// 4. DescribeTransactions on the prefix.
	probeID := prefix + probe
	tok, err := t.CurrentToken(ctx, probeID)
	describeOK := err == nil
	switch {
	case err == nil && tok == core.NoEpoch:
		ch.ok("describe", "DescribeTransactions allowed on %q (never taken)", probeID)
	case err == nil:
		ch.ok("describe", "DescribeTransactions allowed on %q (current token %s)", probeID, tok)
	case errors.Is(err, coord.ErrAuthorization):
		ch.fail("describe", fmt.Sprintf("%s may not DescribeTransactions on %q: %v", who, probeID, err), aclFix(cfg, who, "Describe", "--transactional-id", prefixOrStar(prefix)))
	default:
		ch.fail("describe", fmt.Sprintf("DescribeTransactions on %q failed: %v", probeID, err), "see the error; the transaction coordinator must be available")
	}

	// 5. The coordination topic.
	ti, err := t.Topic(ctx)
	topicExists := false
	switch {
	case err != nil:
		ch.fail("topic", fmt.Sprintf("cannot read the metadata of %s: %v", cfg.Topic, err), aclFix(cfg, who, "Describe", "--topic", cfg.Topic))
	case !ti.Exists:
		ch.warn("topic", fmt.Sprintf("%s does not exist yet: the first member creates it (%d partitions, compacted)", cfg.Topic, cfg.TopicPartitions),
			"nothing to do if the principal may CREATE it (see acl); or create it ahead with the settings of docs/CLI.md")
	default:
		topicExists = true
		// The library's own judgement of the settings (the warning members
		// log), so that check and the library never disagree.
		problems := map[string]bool{}
		if ti.ConfigsErr == nil {
			ps, err := t.TopicProblems(ctx)
			if err != nil {
				ti.ConfigsErr = err
			}
			for _, p := range ps {
				k, _, _ := strings.Cut(p, "=")
				problems[k] = true
			}
		}
		checkTopic(ch, cfg, ti, len(ci.Brokers), problems)
		checkColdStart(ctx, ch, cfg, t, ti)
	}

	// 6. ACLs.
	checkACLs(ctx, ch, t, cfg, who, prefix, topicExists, describeOK)
	return ch.finish()
}

// Kafka's defaults of the broker settings check reads, assumed when the
// principal may not read them.
const (
	kafkaDefaultTxnMaxTimeoutMs = 900000
	kafkaDefaultTxnAbortScanMs  = 10000
)

// txnTimeoutText names the transaction timeout the members' lease
// transactions carry (krabka.txn.timeout.ms, capped at krabka.lease.ms).
func txnTimeoutText(cfg coord.Config) string {
	eff := cfg.LeaseTxnTimeout().Milliseconds()
	if set := cfg.TxnTimeout.Milliseconds(); set > eff {
		return fmt.Sprintf("krabka.txn.timeout.ms=%d capped at krabka.lease.ms=%d", set, eff)
	}
	return fmt.Sprintf("krabka.txn.timeout.ms=%d", eff)
}

// judgeTxnFreeze judges how long a lease transaction left open (its holder
// killed or cut off between its Produce and its EndTxn) holds the last
// stable offset of its coordination partition: until the broker aborts it,
// at most the transaction timeout (krabka.txn.timeout.ms, capped at the
// lease and by the broker's transaction.max.timeout.ms) plus the broker's
// scan interval for timed-out transactions. Meanwhile a read_committed
// reader (every reference member) sees nothing new of any role on that
// partition; the last renewal it saw of a healthy holder may be up to
// krabka.renew.interval.ms old when the freeze begins, so a freeze of
// krabka.lease.ms - krabka.renew.interval.ms or more can show it the lease
// expiring and make its standby challenge (docs/OPERATIONS.md). maxMs and
// scanMs are the broker's settings, -1 when not readable (Kafka's defaults
// are then assumed and said).
func judgeTxnFreeze(cfg coord.Config, maxMs, scanMs int64) checkLine {
	txn := cfg.LeaseTxnTimeout().Milliseconds()
	var unread []string
	if maxMs < 0 {
		maxMs = kafkaDefaultTxnMaxTimeoutMs
		unread = append(unread, "transaction.max.timeout.ms")
	}
	if scanMs < 0 {
		scanMs = kafkaDefaultTxnAbortScanMs
		unread = append(unread, kafka.TxnAbortScanKey)
	}
	timeout := txnTimeoutText(cfg)
	if maxMs < txn {
		txn = maxMs
		if strings.Contains(timeout, " capped ") {
			timeout += fmt.Sprintf(" and by the broker's transaction.max.timeout.ms=%d", maxMs)
		} else {
			timeout += fmt.Sprintf(" capped by the broker's transaction.max.timeout.ms=%d", maxMs)
		}
	}
	freeze := txn + scanMs
	room := cfg.Lease.DurationMs - cfg.Lease.RenewIntervalMs
	detail := fmt.Sprintf("a lease transaction left open holds its partition's stable offset for up to %d ms: %s, plus %s=%d", freeze, timeout, kafka.TxnAbortScanKey, scanMs)
	if len(unread) > 0 {
		detail += fmt.Sprintf(" (%s not readable, needs DESCRIBE_CONFIGS on the Cluster: Kafka's defaults assumed)", strings.Join(unread, " and "))
	}
	if freeze < room {
		return checkLine{Status: "OK", Check: "txn freeze", Detail: fmt.Sprintf(
			"%s; below krabka.lease.ms - krabka.renew.interval.ms = %d, so read_committed readers still see a renewing holder's lease live", detail, room)}
	}
	var fixes []string
	if scanMs > 1000 {
		fixes = append(fixes, "set "+kafka.TxnAbortScanKey+"=1000 in every broker's server.properties (a rolling restart)")
	}
	if room-scanMs > 1 {
		fixes = append(fixes, fmt.Sprintf("lower krabka.txn.timeout.ms below %d", room-scanMs))
	} else {
		fixes = append(fixes, "lengthen krabka.lease.ms or shorten krabka.renew.interval.ms")
	}
	return checkLine{Status: "WARN", Check: "txn freeze", Detail: fmt.Sprintf(
		"%s; not below krabka.lease.ms - krabka.renew.interval.ms = %d: read_committed readers (the reference members) can then see a healthy holder's lease expire, and their standbys depose it", detail, room),
		Fix: strings.Join(fixes, ", or ")}
}

func prefixOrStar(p string) string {
	if p == "" {
		return "'*'"
	}
	return p
}

// aclFix is the kafka-acls.sh command that grants what is missing.
func aclFix(cfg coord.Config, who, ops, resourceFlag, name string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "kafka-acls.sh --bootstrap-server %s --add --allow-principal %s", cfg.BootstrapServers[0], who)
	for _, op := range strings.Split(ops, ",") {
		fmt.Fprintf(&b, " --operation %s", op)
	}
	fmt.Fprintf(&b, " %s", resourceFlag)
	if name != "" {
		fmt.Fprintf(&b, " %s", name)
	}
	if resourceFlag == "--transactional-id" && name != "'*'" {
		b.WriteString(" --resource-pattern-type prefixed")
	}
	return b.String()
}

// checkTopic judges the topic's settings; problems names the settings the
// library itself counts as letting the topic grow without bound
// (kafka.TopicProblems).
func checkTopic(ch *checker, cfg coord.Config, ti kafka.TopicInfo, brokers int, problems map[string]bool) {
	name := ti.Name
	alter := func(kv string) string {
		return fmt.Sprintf("kafka-configs.sh --bootstrap-server %s --alter --entity-type topics --entity-name %s --add-config %s",
			cfg.BootstrapServers[0], name, kv)
	}
	ch.ok("topic", "%s: %d partitions (members of every language hash roles over this count; it must never change)", name, ti.Partitions)

	switch {
	case ti.Replication >= 3:
		ch.ok("topic", "%s: replication factor %d", name, ti.Replication)
	case ti.Replication >= brokers:
		ch.ok("topic", "%s: replication factor %d, as many as the cluster's %d broker(s) (a production cluster wants 3)", name, ti.Replication, brokers)
	default:
		ch.warn("topic", fmt.Sprintf("%s: replication factor %d on a cluster of %d brokers: losing one broker can lose the roster and the leases", name, ti.Replication, brokers),
			"raise the replication factor to min(3, brokers) with kafka-reassign-partitions.sh")
	}

	if ti.ConfigsErr != nil {
		ch.warn("topic", fmt.Sprintf("%s: settings not readable: %v", name, ti.ConfigsErr),
			aclFix(cfg, principal(cfg), "DescribeConfigs", "--topic", name))
		return
	}
	mir, _ := strconv.Atoi(ti.Configs["min.insync.replicas"])
	switch {
	case mir > ti.Replication:
		ch.fail("topic", fmt.Sprintf("%s: min.insync.replicas=%d is above the replication factor %d: every lease write fails (NOT_ENOUGH_REPLICAS)", name, mir, ti.Replication),
			alter(fmt.Sprintf("min.insync.replicas=%d", max(1, ti.Replication-1))))
	case ti.Replication >= 3 && mir < 2:
		ch.warn("topic", fmt.Sprintf("%s: min.insync.replicas=%d with replication %d: a lease acknowledged by one replica can be lost with it", name, mir, ti.Replication),
			alter("min.insync.replicas=2"))
	default:
		ch.ok("topic", "%s: min.insync.replicas=%d", name, mir)
	}

	policy := ti.Configs["cleanup.policy"]
	hasCompact, hasDelete := false, false
	for _, p := range strings.Split(policy, ",") {
		switch strings.TrimSpace(p) {
		case "compact":
			hasCompact = true
		case "delete":
			hasDelete = true
		}
	}
	switch {
	case hasCompact && !hasDelete:
		ch.ok("topic", "%s: cleanup.policy=compact", name)
	case hasCompact:
		ch.warn("topic", fmt.Sprintf("%s: cleanup.policy=%s: retention deletes old registrations, so long-lived members lose their place in the roster", name, policy),
			alter("cleanup.policy=compact"))
	default:
		ch.fail("topic", fmt.Sprintf("%s: cleanup.policy=%s: the topic is not compacted; retention deletes registrations and leases (the roster and the lease vanish)", name, policy),
			alter("cleanup.policy=compact"))
	}

	if v, ok := ti.Configs["segment.ms"]; ok {
		if !problems["segment.ms"] {
			ch.ok("topic", "%s: segment.ms=%s (%s): compaction can reach the lease records", name, v, msText(v))
		} else {
			ch.warn("topic", fmt.Sprintf("%s: segment.ms=%s (%s): Kafka never compacts the active segment, so every lease renewal of that period piles up and slows every read", name, v, msText(v)),
				alter("segment.ms="+kafka.TopicConfigs["segment.ms"]))
		}
	}
	if v, ok := ti.Configs["min.cleanable.dirty.ratio"]; ok {
		if !problems["min.cleanable.dirty.ratio"] {
			ch.ok("topic", "%s: min.cleanable.dirty.ratio=%s", name, v)
		} else {
			ch.warn("topic", fmt.Sprintf("%s: min.cleanable.dirty.ratio=%s: the cleaner waits until that share of the log is superseded renewals", name, v),
				alter("min.cleanable.dirty.ratio="+kafka.TopicConfigs["min.cleanable.dirty.ratio"]))
		}
	}
}

// checkColdStart measures what a new member folds before its first
// decision: the offsets of every partition, and one read and fold of the
// largest partition (the slowest a member waits for one role), timed.
func checkColdStart(ctx context.Context, ch *checker, cfg coord.Config, t *kafka.Transport, ti kafka.TopicInfo) {
	spans, err := t.Spans(ctx)
	if err != nil {
		ch.warn("cold start", fmt.Sprintf("cannot list the offsets of %s: %v", ti.Name, err), aclFix(cfg, principal(cfg), "Describe", "--topic", ti.Name))
		return
	}
	var total int64
	largest := kafka.PartitionSpan{Partition: -1}
	for _, s := range spans {
		total += s.End - s.Start
		if largest.Partition < 0 || s.End-s.Start > largest.End-largest.Start {
			largest = s
		}
	}
	if largest.Partition < 0 {
		ch.ok("cold start", "%s has no partitions listed", ti.Name)
		return
	}
	start := time.Now()
	recs, err := t.Read(ctx, largest.Partition)
	if err != nil {
		ch.warn("cold start", fmt.Sprintf("cannot read partition %d of %s: %v", largest.Partition, ti.Name, err), aclFix(cfg, principal(cfg), "Read", "--topic", ti.Name))
		return
	}
	f := core.NewPartitionFolder()
	for _, r := range recs {
		f.AddRaw(r)
	}
	took := time.Since(start)
	status, detail, fix := coldStartVerdict(ti, total, largest, len(recs), len(f.Roles()), took, cfg.Lease.RenewIntervalMs)
	ch.add(status, "cold start", detail, fix)
}

// coldStartVerdict words checkColdStart's line: WARN when folding the
// largest partition took longer than the renew interval (a member deciding
// for a role of that partition waits that long after it starts), with the
// settings that bound the uncompacted tail as the fix.
func coldStartVerdict(ti kafka.TopicInfo, total int64, largest kafka.PartitionSpan, records, roles int, took time.Duration, renewMs int64) (status, detail, fix string) {
	detail = fmt.Sprintf("%s: a new member reads up to %d offsets over %d partitions; the largest, partition %d (%d offsets, %d records of %d roles), read and folded in %d ms (segment.ms=%s, segment.bytes=%s)",
		ti.Name, total, ti.Partitions, largest.Partition, largest.End-largest.Start, records, roles, took.Milliseconds(),
		orUnknown(ti.Configs["segment.ms"]), orUnknown(ti.Configs["segment.bytes"]))
	if took.Milliseconds() <= renewMs {
		return "OK", detail, ""
	}
	detail += fmt.Sprintf(": longer than krabka.renew.interval.ms=%d", renewMs)
	fix = fmt.Sprintf("kafka-configs.sh --alter --entity-type topics --entity-name %s --add-config segment.ms=%s,segment.bytes=%s (compaction then reaches the renewals sooner), or more partitions for a new topic; see docs/OPERATIONS.md",
		ti.Name, kafka.TopicConfigs["segment.ms"], kafka.TopicConfigs["segment.bytes"])
	return "WARN", detail, fix
}

func orUnknown(v string) string {
	if v == "" {
		return "unknown"
	}
	return v
}

func msText(v string) string {
	ms, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return "not a number"
	}
	return (time.Duration(ms) * time.Millisecond).String()
}

// covers reports whether an ACL's resource pattern applies to every name
// that starts with name (PREFIXED p with name starting with p, or the
// literal wildcard), or to exactly name.
func covers(a kafka.ACL, name string, prefixed bool) bool {
	switch a.Pattern {
	case "PREFIXED":
		return a.ResourceName != "" && strings.HasPrefix(name, a.ResourceName)
	case "LITERAL":
		return a.ResourceName == "*" || (!prefixed && a.ResourceName == name)
	}
	return false
}

// implied lists the operations an ACL operation grants (Kafka: ALL grants
// everything; READ, WRITE, DELETE, ALTER grant DESCRIBE; ALTER_CONFIGS grants
// DESCRIBE_CONFIGS).
func implied(op string) []string {
	switch op {
	case "ALL":
		return []string{"READ", "WRITE", "CREATE", "DESCRIBE", "DESCRIBE_CONFIGS", "IDEMPOTENT_WRITE"}
	case "READ", "WRITE", "DELETE", "ALTER":
		return []string{op, "DESCRIBE"}
	case "ALTER_CONFIGS":
		return []string{op, "DESCRIBE_CONFIGS"}
	}
	return []string{op}
}

// allowed evaluates ops for who on (typ, name): DENY wins over ALLOW.
func allowed(acls []kafka.ACL, who, typ, name string, prefixed bool, ops []string) (granted, missing []string, hostNote bool) {
	allow, deny := map[string]bool{}, map[string]bool{}
	for _, a := range acls {
		if a.ResourceType != typ || (a.Principal != who && a.Principal != "User:*") || !covers(a, name, prefixed) {
			continue
		}
		if a.Host != "*" {
			hostNote = true
		}
		for _, op := range implied(a.Operation) {
			if a.Permission == "DENY" {
				// DENY of DESCRIBE does not deny WRITE, but DENY of ALL denies all.
				if a.Operation == op || a.Operation == "ALL" {
					deny[op] = true
				}
			} else {
				allow[op] = true
			}
		}
	}
	for _, op := range ops {
		if allow[op] && !deny[op] {
			granted = append(granted, op)
		} else {
			missing = append(missing, op)
		}
	}
	return granted, missing, hostNote
}

// checkACLs judges the ACLs listed for the prefix and the topic. Super users
// (super.users) need no ACL and the protocol cannot tell who they are: when
// the ACLs grant nothing but the DescribeTransactions probe was allowed
// (describeOK), the missing grants are WARN lines that say so, not FAIL.
func checkACLs(ctx context.Context, ch *checker, t *kafka.Transport, cfg coord.Config, who, prefix string, topicExists, describeOK bool) {
	name, prefixed := prefix, true
	if prefix == "" {
		name, prefixed = "*", false
	}
	acls, err := t.ACLs(ctx, name)
	switch {
	case errors.Is(err, kafka.ErrNoAuthorizer):
		ch.ok("acl", "the cluster runs no authorizer: every principal may take and describe every role")
		return
	case errors.Is(err, coord.ErrAuthorization):
		ch.warn("acl", fmt.Sprintf("%s may not list ACLs (DescribeAcls needs DESCRIBE on the Cluster): only the describe probe above was checked", who),
			aclFix(cfg, who, "Describe", "--cluster", ""))
		return
	case err != nil:
		ch.warn("acl", fmt.Sprintf("listing ACLs failed: %v", err), "retry; see the error")
		return
	}
	report := ch.fail
	unless := ""
	if _, missing, _ := allowed(acls, who, "TRANSACTIONAL_ID", name, prefixed, []string{"DESCRIBE"}); len(missing) > 0 && describeOK {
		report = ch.warn
		unless = " (yet DescribeTransactions was allowed: " + who + " is probably a super user, which needs no ACL; super.users cannot be read over the protocol)"
	}
	what := fmt.Sprintf("TransactionalId prefix %q", prefix)
	if !prefixed {
		what = "every TransactionalId (no krabka.role.prefix: only a wildcard grant covers every role)"
	}
	granted, missing, hostNote := allowed(acls, who, "TRANSACTIONAL_ID", name, prefixed, []string{"WRITE", "DESCRIBE"})
	note := ""
	if hostNote {
		note = " (some ACLs are limited to hosts)"
	}
	if len(missing) == 0 {
		ch.ok("acl", "%s may %s on %s%s", who, strings.Join(granted, ", "), what, note)
	} else {
		report("acl", fmt.Sprintf("%s lacks %s on %s%s%s: WRITE takes a role, DESCRIBE checks one", who, strings.Join(missing, ", "), what, unless, note),
			aclFix(cfg, who, opFlags(missing), "--transactional-id", prefixOrStar(prefix)))
	}
	need := []string{"READ", "WRITE", "DESCRIBE"}
	if !topicExists {
		need = append(need, "CREATE")
	}
	granted, missing, hostNote = allowed(acls, who, "TOPIC", cfg.Topic, false, need)
	note = ""
	if hostNote {
		note = " (some ACLs are limited to hosts)"
	}
	if len(missing) == 0 {
		ch.ok("acl", "%s may %s on topic %s%s", who, strings.Join(granted, ", "), cfg.Topic, note)
	} else {
		report("acl", fmt.Sprintf("%s lacks %s on topic %s%s%s", who, strings.Join(missing, ", "), cfg.Topic, unless, note),
			aclFix(cfg, who, opFlags(missing), "--topic", cfg.Topic))
	}
	if granted, _, _ := allowed(acls, who, "TOPIC", cfg.Topic, false, []string{"DESCRIBE_CONFIGS"}); len(granted) == 0 {
		ch.warn("acl", fmt.Sprintf("%s lacks DESCRIBE_CONFIGS on topic %s%s: members work, but this check cannot read the topic's settings", who, cfg.Topic, unless),
			aclFix(cfg, who, "DescribeConfigs", "--topic", cfg.Topic))
	}
}

// opFlags turns ACL operation names into kafka-acls.sh --operation values.
func opFlags(ops []string) string {
	out := make([]string, len(ops))
	for i, op := range ops {
		parts := strings.Split(strings.ToLower(op), "_")
		for j, p := range parts {
			parts[j] = strings.ToUpper(p[:1]) + p[1:]
		}
		out[i] = strings.Join(parts, "")
	}
	sort.Strings(out)
	return strings.Join(out, ",")
}
