package coord

import (
	"fmt"
	"log/slog"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/krabka/krabka-coord/core"
)

// DefaultTopic is the coordination topic shared with the other krabka
// implementations.
const DefaultTopic = "__coordination_state"

// Config is the configuration of a Client. Build it with DefaultConfig and
// Set (Kafka-style properties, see ConfigKeys), or fill the fields directly
// and call Validate.
type Config struct {
	// BootstrapServers: bootstrap.servers, "host:port" entries (required).
	BootstrapServers []string
	// ClientID: client.id sent to the brokers (default "krabka-coord").
	ClientID string
	// SecurityProtocol: security.protocol, one of PLAINTEXT, SSL,
	// SASL_PLAINTEXT, SASL_SSL (default PLAINTEXT).
	SecurityProtocol string
	// SASLMechanism: sasl.mechanism, one of PLAIN, SCRAM-SHA-256,
	// SCRAM-SHA-512 (default PLAIN); used with SASL_PLAINTEXT and SASL_SSL.
	SASLMechanism string
	// SASLUsername, SASLPassword: sasl.username, sasl.password.
	SASLUsername, SASLPassword string
	// SSLCALocation: ssl.ca.location, a PEM file of CA certificates
	// (default: the system roots).
	SSLCALocation string
	// SSLCertificateLocation, SSLKeyLocation: ssl.certificate.location and
	// ssl.key.location, the PEM client certificate (chain) and its private
	// key for mutual TLS; both or neither.
	SSLCertificateLocation, SSLKeyLocation string
	// SSLKeyPassword: ssl.key.password, the password of an encrypted
	// private key in ssl.key.location.
	SSLKeyPassword string
	// RequestTimeout: request.timeout.ms (default 30 s). Bounds every
	// round trip with the cluster; the default timeout of renew, produce,
	// resign and describe.
	RequestTimeout time.Duration
	// Lease: krabka.lease.ms, krabka.renew.interval.ms,
	// krabka.challenge.stagger.ms.
	Lease core.LeaseConfig
	// TxnTimeout: krabka.txn.timeout.ms, the Kafka transaction timeout of
	// a role's producer (default 10 s): every transaction of a holder
	// (acquire, renew, resign, fence, guarded writes) carries it, capped at
	// the lease (see LeaseTxnTimeout). A transaction left open (a holder
	// killed between its Produce and its EndTxn) holds its partitions'
	// last stable offset until the broker aborts it: this long plus the
	// broker's transaction.abort.timed.out.transaction.cleanup.interval.ms.
	// The broker aborts a transaction still open after this long and bumps
	// the producer's epoch, which fences the holder.
	TxnTimeout time.Duration
	// PollInterval: krabka.poll.interval.ms, the longest sleep of an
	// Acquire step that no record of the role ends (default 1 s); a WAIT
	// behind a live lease ends at its instant or at the role's next record.
	PollInterval time.Duration
	// RolePrefix: krabka.role.prefix, prepended to the role to form the
	// transactional.id (default empty).
	RolePrefix string
	// Topic: krabka.topic (default __coordination_state).
	Topic string
	// TopicPartitions: krabka.topic.partitions, used only when the topic is
	// created (default 16).
	TopicPartitions int32
	// TopicReplication: krabka.topic.replication, used only when the topic is
	// created; -1 = min(3, brokers) (default -1).
	TopicReplication int16
	// BackgroundRenew: krabka.renew.background, renew each leadership in a
	// background goroutine when due (default false).
	BackgroundRenew bool
	// ElectorRideOutage: krabka.elector.ride.outage, the default of
	// ElectRideOutage: an elector's term whose renewals fail because no
	// broker answers is SUSPENDED instead of stopped, and resumes under the
	// same token when the cluster answers (docs/ELECTOR.md).
	ElectorRideOutage bool
	// TestClockOffsetMs: krabka.test.clock.offset.ms. TEST ONLY, not in
	// ConfigKeys nor in the documentation: shifts this client's lease clock
	// by this many milliseconds (the chaos campaign skews one member's
	// clock with it). Never set it in production.
	TestClockOffsetMs int64
	// LogLevel: krabka.log.level, the least severe level logged: error,
	// warn, info or debug (default warn: a host sees warnings and errors,
	// info only when it asks).
	LogLevel slog.Level
	// Debug: krabka.debug, log at debug level and also pass franz-go's own
	// log lines (the Kafka protocol client) to the logger (default false).
	Debug bool
	// Logger receives the client's log records (Go only; not a property).
	// nil: slog.Default(). C hosts and the bindings set it through the C
	// API's log callback or log queue.
	Logger *slog.Logger
	// GroupMaxMessages: krabka.produce.group.max.messages, the most
	// messages one group transaction carries (default 1024).
	GroupMaxMessages int
	// GroupMaxBytes: krabka.produce.group.max.bytes, the most key, value
	// and header bytes one group transaction carries (default 1048576).
	GroupMaxBytes int
	// GroupLinger: krabka.produce.group.linger.ms, how long a group
	// transaction may wait for more callers (default 1 ms; see Produce).
	GroupLinger time.Duration
	// LeaveOnClose: krabka.leave.on.close, Client.Close removes the
	// registrations the client made for roles it does not hold.
	LeaveOnClose bool
	// ProduceTokenHeader: krabka.produce.token.header, stamp krabka.token on
	// every guarded write (docs/PROTOCOL.md 11.5; default true).
	ProduceTokenHeader bool
	// LeaseRiskMargin: krabka.lease.risk.margin.ms, how close to its
	// deadline a lease that fell due for renewal and was not renewed is
	// "at risk" (Leadership.Events, Leadership.AtRisk, the elector). 0 (the
	// default) means half the time between the renewal and the deadline:
	// (krabka.lease.ms - krabka.renew.interval.ms) / 2. See RiskMargin.
	LeaseRiskMargin time.Duration
	// LeaseStopMargin: krabka.lease.stop.margin.ms, how long before its
	// deadline a term whose lease is at risk stops: the elector ends the
	// term, krabka-coord run stops its program. 0 (the default) means half
	// the risk margin. See StopMargin.
	LeaseStopMargin time.Duration
	// Engine: krabka.engine, how the transport carries a role's
	// transactions: "shared" (the default; "" too) runs every role's
	// transactions on one engine with a few shared connections per broker
	// (core/kafka engine.go); "client" builds one franz-go transactional
	// client per acquisition, as releases before issue 35 did. The
	// environment variable KRABKA_ENGINE, when set, replaces the default in
	// DefaultConfig.
	Engine string
}

// EngineEnv is the environment variable that replaces the default of
// krabka.engine (DefaultConfig).
const EngineEnv = "KRABKA_ENGINE"

// RiskMargin returns the effective krabka.lease.risk.margin.ms: the value
// set, or (krabka.lease.ms - krabka.renew.interval.ms) / 2 (at least 1 ms,
// and at least a krabka.lease.stop.margin.ms that is set) when it is 0.
func (c Config) RiskMargin() time.Duration {
	if c.LeaseRiskMargin > 0 {
		return c.LeaseRiskMargin
	}
	half := time.Duration(max((c.Lease.DurationMs-c.Lease.RenewIntervalMs)/2, 1)) * time.Millisecond
	return max(half, c.LeaseStopMargin)
}

// StopMargin returns the effective krabka.lease.stop.margin.ms, the one
// definition of how long before its deadline a term whose lease is at risk
// stops (the elector's default, ElectStopMargin; krabka-coord run's
// --margin): the value set, or half of RiskMargin (at least 1 ms) when it
// is 0. It never exceeds RiskMargin: a term stops only after its lease was
// at risk.
func (c Config) StopMargin() time.Duration {
	if c.LeaseStopMargin > 0 {
		return min(c.LeaseStopMargin, c.RiskMargin())
	}
	return max(c.RiskMargin()/2, time.Millisecond)
}

// LeaseTxnTimeout returns the transaction timeout every transaction of a
// role's producer carries: krabka.txn.timeout.ms, capped at krabka.lease.ms
// (a transaction never needs to outlive the lease it writes; the cap also
// keeps a short lease from failing on the default).
func (c Config) LeaseTxnTimeout() time.Duration {
	lease := time.Duration(c.Lease.DurationMs) * time.Millisecond
	if c.TxnTimeout <= 0 || c.TxnTimeout > lease {
		return lease
	}
	return c.TxnTimeout
}

// ConfigKey describes one configuration property.
type ConfigKey struct {
	Name    string // property name, e.g. "krabka.lease.ms"
	Type    string // "string", "list", "enum", "int", "bool", "password"
	Default string // default value as text ("" = empty)
	Doc     string // one-line meaning
}

type configEntry struct {
	ConfigKey
	set func(c *Config, v string) error
	get func(c *Config) string
}

func invalid(name, value, why string) error {
	return WrapError(ErrInvalidConfig, nil, "%s=%q: %s", name, value, why)
}

func parseMs(name, v string, min int64) (int64, error) {
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	if err != nil {
		return 0, invalid(name, v, "not an integer number of milliseconds")
	}
	if n < min {
		return 0, invalid(name, v, fmt.Sprintf("must be at least %d", min))
	}
	return n, nil
}

// maxInt32Ms is the largest millisecond value Kafka's protocol carries (its
// timeouts are int32 milliseconds, about 24.8 days).
const maxInt32Ms = 1<<31 - 1

// parseMsMax is parseMs with an upper bound (what can never work above it).
func parseMsMax(name, v string, min, max int64, why string) (int64, error) {
	n, err := parseMs(name, v, min)
	if err == nil && n > max {
		return 0, invalid(name, v, fmt.Sprintf("must be at most %d (%s)", max, why))
	}
	return n, err
}

// kafkaInternalTopics are the topics of the brokers themselves; none can be
// the coordination topic.
var kafkaInternalTopics = []string{"__consumer_offsets", "__transaction_state", "__cluster_metadata", "__share_group_state"}

func parseEnum(name, v string, allowed ...string) (string, error) {
	u := strings.ToUpper(strings.TrimSpace(v))
	for _, a := range allowed {
		if u == a {
			return a, nil
		}
	}
	return "", invalid(name, v, "must be one of "+strings.Join(allowed, ", "))
}

// validTopicName reports whether s is a legal Kafka topic name.
func validTopicName(s string) bool {
	if s == "" || len(s) > 249 || s == "." || s == ".." {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

var configTable = []configEntry{
	{ConfigKey{"bootstrap.servers", "list", "", "Comma-separated host:port list of brokers to bootstrap from (required), or mem://NAME alone: the in-process cluster NAME (docs/TESTING.md)."},
		func(c *Config, v string) error {
			var out []string
			for _, s := range strings.Split(v, ",") {
				s = strings.TrimSpace(s)
				if s == "" {
					continue
				}
				out = append(out, s)
			}
			if _, mem, err := parseMemBootstrap(v, out); mem {
				if err != nil {
					return err
				}
				c.BootstrapServers = out
				return nil
			}
			for _, s := range out {
				i := strings.LastIndexByte(s, ':')
				if i <= 0 || i == len(s)-1 {
					return invalid("bootstrap.servers", v, "entry "+strconv.Quote(s)+" is not host:port")
				}
				if p, err := strconv.Atoi(s[i+1:]); err != nil || p <= 0 || p > 65535 {
					return invalid("bootstrap.servers", v, "entry "+strconv.Quote(s)+" has a bad port")
				}
			}
			if len(out) == 0 {
				return invalid("bootstrap.servers", v, "no broker given")
			}
			c.BootstrapServers = out
			return nil
		},
		func(c *Config) string { return strings.Join(c.BootstrapServers, ",") }},
	{ConfigKey{"client.id", "string", "krabka-coord", "Client id sent to the brokers (appears in broker logs and quotas)."},
		func(c *Config, v string) error { c.ClientID = v; return nil },
		func(c *Config) string { return c.ClientID }},
	{ConfigKey{"security.protocol", "enum", "PLAINTEXT", "PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL."},
		func(c *Config, v string) error {
			s, err := parseEnum("security.protocol", v, "PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
			if err == nil {
				c.SecurityProtocol = s
			}
			return err
		},
		func(c *Config) string { return c.SecurityProtocol }},
	{ConfigKey{"sasl.mechanism", "enum", "PLAIN", "PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512 (used with SASL_PLAINTEXT and SASL_SSL)."},
		func(c *Config, v string) error {
			s, err := parseEnum("sasl.mechanism", v, "PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
			if err == nil {
				c.SASLMechanism = s
			}
			return err
		},
		func(c *Config) string { return c.SASLMechanism }},
	{ConfigKey{"sasl.username", "string", "", "SASL user name."},
		func(c *Config, v string) error { c.SASLUsername = v; return nil },
		func(c *Config) string { return c.SASLUsername }},
	{ConfigKey{"sasl.password", "password", "", "SASL password. Reads back as \"[redacted]\"."},
		func(c *Config, v string) error { c.SASLPassword = v; return nil },
		func(c *Config) string {
			if c.SASLPassword == "" {
				return ""
			}
			return "[redacted]"
		}},
	{ConfigKey{"ssl.ca.location", "string", "", "PEM file of CA certificates for SSL and SASL_SSL (empty: the system roots)."},
		func(c *Config, v string) error { c.SSLCALocation = v; return nil },
		func(c *Config) string { return c.SSLCALocation }},
	{ConfigKey{"ssl.certificate.location", "string", "", "PEM file of the client certificate (chain) for mutual TLS; needs ssl.key.location."},
		func(c *Config, v string) error { c.SSLCertificateLocation = v; return nil },
		func(c *Config) string { return c.SSLCertificateLocation }},
	{ConfigKey{"ssl.key.location", "string", "", "PEM file of the client certificate's private key (PKCS#1, PKCS#8 or SEC 1; encrypted with ssl.key.password)."},
		func(c *Config, v string) error { c.SSLKeyLocation = v; return nil },
		func(c *Config) string { return c.SSLKeyLocation }},
	{ConfigKey{"ssl.key.password", "password", "", "Password of an encrypted private key in ssl.key.location. Reads back as \"[redacted]\"."},
		func(c *Config, v string) error { c.SSLKeyPassword = v; return nil },
		func(c *Config) string {
			if c.SSLKeyPassword == "" {
				return ""
			}
			return "[redacted]"
		}},
	{ConfigKey{"request.timeout.ms", "int", "30000", "Bound of every round trip with the cluster, and the default timeout of renew, produce, resign and describe (ms, >= 1)."},
		func(c *Config, v string) error {
			n, err := parseMsMax("request.timeout.ms", v, 1, maxInt32Ms, "Kafka's request timeouts are int32 milliseconds")
			if err == nil {
				c.RequestTimeout = time.Duration(n) * time.Millisecond
			}
			return err
		},
		func(c *Config) string { return strconv.FormatInt(c.RequestTimeout.Milliseconds(), 10) }},
	{ConfigKey{"krabka.lease.ms", "int", "30000", "Lease duration (ms, >= 1); it also caps krabka.txn.timeout.ms."},
		func(c *Config, v string) error {
			n, err := parseMsMax("krabka.lease.ms", v, 1, maxInt32Ms, "it caps the transaction timeout, an int32 of milliseconds")
			if err == nil {
				c.Lease.DurationMs = n
			}
			return err
		},
		func(c *Config) string { return strconv.FormatInt(c.Lease.DurationMs, 10) }},
	{ConfigKey{"krabka.renew.interval.ms", "int", "10000", "How long after a grant the holder renews (ms, >= 1, below krabka.lease.ms)."},
		func(c *Config, v string) error {
			n, err := parseMs("krabka.renew.interval.ms", v, 1)
			if err == nil {
				c.Lease.RenewIntervalMs = n
			}
			return err
		},
		func(c *Config) string { return strconv.FormatInt(c.Lease.RenewIntervalMs, 10) }},
	{ConfigKey{"krabka.challenge.stagger.ms", "int", "5000", "Delay between the challenge instants of successive standby ranks (ms, >= 1)."},
		func(c *Config, v string) error {
			n, err := parseMs("krabka.challenge.stagger.ms", v, 1)
			if err == nil {
				c.Lease.ChallengeStaggerMs = n
			}
			return err
		},
		func(c *Config) string { return strconv.FormatInt(c.Lease.ChallengeStaggerMs, 10) }},
	{ConfigKey{"krabka.txn.timeout.ms", "int", "10000", "Kafka transaction timeout of a role's producer, for acquire, renew, resign, fence and guarded writes (ms, >= 1; capped at krabka.lease.ms; above the broker's transaction.max.timeout.ms every acquire fails with INVALID_CONFIG). " +
		"A transaction left open by a holder killed or cut off between its Produce and its EndTxn holds the last stable offset of its partitions, so read_committed readers (reference members, consumers) see nothing newer there, for this long plus the broker's transaction.abort.timed.out.transaction.cleanup.interval.ms: keep it short (docs/OPERATIONS.md). " +
		"The broker aborts a transaction still open after it and bumps the epoch, fencing the holder: to ride out a stalled round trip (given up after request.timeout.ms, then aborted by the holder itself) it must exceed request.timeout.ms with an EndTxn to spare; below that, as at the defaults, a holder whose transaction stalls longer than it loses the role (never safety)."},
		func(c *Config, v string) error {
			n, err := parseMsMax("krabka.txn.timeout.ms", v, 1, maxInt32Ms, "Kafka's transaction timeout is an int32 of milliseconds")
			if err == nil {
				c.TxnTimeout = time.Duration(n) * time.Millisecond
			}
			return err
		},
		func(c *Config) string { return strconv.FormatInt(c.TxnTimeout.Milliseconds(), 10) }},
	{ConfigKey{"krabka.poll.interval.ms", "int", "1000", "Longest sleep of an acquire step that waits for something no record of the role announces (its registration read back, a backoff); a standby behind a live lease sleeps until the lease's instant or the role's next record, at most the larger of this and the renew interval (ms, >= 1)."},
		func(c *Config, v string) error {
			n, err := parseMsMax("krabka.poll.interval.ms", v, 1, maxInt32Ms, "about 24.8 days")
			if err == nil {
				c.PollInterval = time.Duration(n) * time.Millisecond
			}
			return err
		},
		func(c *Config) string { return strconv.FormatInt(c.PollInterval.Milliseconds(), 10) }},
	{ConfigKey{"krabka.role.prefix", "string", "", "Prepended to the role name to form the transactional.id (separates environments sharing a cluster; ACL prefixes)."},
		func(c *Config, v string) error {
			switch {
			case !utf8.ValidString(v):
				return invalid("krabka.role.prefix", v, "not valid UTF-8 (the prefixed role is a UTF-8 record key and transactional.id)")
			case len(v) >= core.MaxNameBytes:
				return invalid("krabka.role.prefix", v, fmt.Sprintf("%d bytes leaves no room for a role (a prefixed role has at most %d bytes)", len(v), core.MaxNameBytes))
			}
			c.RolePrefix = v
			return nil
		},
		func(c *Config) string { return c.RolePrefix }},
	{ConfigKey{"krabka.topic", "string", DefaultTopic, "Coordination topic (compacted; created when missing, never changed)."},
		func(c *Config, v string) error {
			if !validTopicName(v) {
				return invalid("krabka.topic", v, "not a legal Kafka topic name")
			}
			for _, it := range kafkaInternalTopics {
				if v == it {
					return invalid("krabka.topic", v, "an internal topic of the brokers, not usable as the coordination topic")
				}
			}
			c.Topic = v
			return nil
		},
		func(c *Config) string { return c.Topic }},
	{ConfigKey{"krabka.topic.partitions", "int", "16", "Partitions of the coordination topic when this client creates it (1..100000)."},
		func(c *Config, v string) error {
			n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 32)
			if err != nil || n < 1 || n > 100000 {
				return invalid("krabka.topic.partitions", v, "must be an integer from 1 to 100000")
			}
			c.TopicPartitions = int32(n)
			return nil
		},
		func(c *Config) string { return strconv.FormatInt(int64(c.TopicPartitions), 10) }},
	{ConfigKey{"krabka.topic.replication", "int", "-1", "Replication factor of the coordination topic when this client creates it; -1 = min(3, brokers)."},
		func(c *Config, v string) error {
			n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 16)
			if err != nil || n == 0 || n < -1 {
				return invalid("krabka.topic.replication", v, "must be -1 or a positive integer")
			}
			c.TopicReplication = int16(n)
			return nil
		},
		func(c *Config) string { return strconv.FormatInt(int64(c.TopicReplication), 10) }},
	{ConfigKey{"krabka.renew.background", "bool", "false", "true: each leadership renews itself in the background when due (jittered: up to a tenth of krabka.renew.interval.ms early, so that roles acquired together do not renew together)."},
		func(c *Config, v string) error { return parseBool("krabka.renew.background", v, &c.BackgroundRenew) },
		func(c *Config) string { return strconv.FormatBool(c.BackgroundRenew) }},
	{ConfigKey{"krabka.elector.ride.outage", "bool", "false", "true: an elector rides out an outage of the whole cluster: when renewals fail because no broker answers, the term is SUSPENDED at the stop margin instead of stopped and resumes under the same token once a renewal succeeds (or ends FENCED if a standby minted meanwhile); as a standby back from an outage, it leaves the holder one krabka.lease.ms to renew before it challenges. See docs/ELECTOR.md before turning it on."},
		func(c *Config, v string) error {
			return parseBool("krabka.elector.ride.outage", v, &c.ElectorRideOutage)
		},
		func(c *Config) string { return strconv.FormatBool(c.ElectorRideOutage) }},
	{ConfigKey{"krabka.log.level", "enum", "warn", "Least severe level logged: error, warn, info or debug. The default shows warnings and errors only (on stderr in C and Go hosts; Python and Node hosts get every line through logging and the log event)."},
		func(c *Config, v string) error {
			l, ok := parseLogLevel(v)
			if !ok {
				return invalid("krabka.log.level", v, "must be one of "+strings.Join(LogLevels, ", "))
			}
			c.LogLevel = l
			return nil
		},
		func(c *Config) string { return logLevelName(c.LogLevel) }},
	{ConfigKey{"krabka.debug", "bool", "false", "true: log at debug level, including franz-go's own lines (connections, requests, retries)."},
		func(c *Config, v string) error { return parseBool("krabka.debug", v, &c.Debug) },
		func(c *Config) string { return strconv.FormatBool(c.Debug) }},
	// TEST ONLY (hidden from ConfigKeys and the documentation): see
	// Config.TestClockOffsetMs.
	{ConfigKey{testClockOffsetKey, "int", "0", "TEST ONLY: offset of this client's lease clock (ms)."},
		func(c *Config, v string) error {
			n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			if err != nil || n < -86400000 || n > 86400000 {
				return invalid(testClockOffsetKey, v, "must be an integer number of milliseconds within one day")
			}
			c.TestClockOffsetMs = n
			return nil
		},
		func(c *Config) string { return strconv.FormatInt(c.TestClockOffsetMs, 10) }},
	{ConfigKey{"krabka.produce.group.max.messages", "int", "1024", "Most messages of concurrent produce calls gathered into one transaction (1..1000000); a call with more goes alone."},
		func(c *Config, v string) error {
			n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 32)
			if err != nil || n < 1 || n > 1000000 {
				return invalid("krabka.produce.group.max.messages", v, "must be an integer from 1 to 1000000")
			}
			c.GroupMaxMessages = int(n)
			return nil
		},
		func(c *Config) string { return strconv.Itoa(c.GroupMaxMessages) }},
	{ConfigKey{"krabka.produce.group.max.bytes", "int", "1048576", "Most key, value and header bytes of concurrent produce calls gathered into one transaction (1..1073741824); a call with more goes alone."},
		func(c *Config, v string) error {
			n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 32)
			if err != nil || n < 1 || n > 1<<30 {
				return invalid("krabka.produce.group.max.bytes", v, "must be an integer from 1 to 1073741824")
			}
			c.GroupMaxBytes = int(n)
			return nil
		},
		func(c *Config) string { return strconv.Itoa(c.GroupMaxBytes) }},
	{ConfigKey{"krabka.produce.group.linger.ms", "int", "1", "Longest wait of a group transaction for more produce calls, only while fewer are queued than the previous transaction carried (ms, >= 0; 0 = never wait)."},
		func(c *Config, v string) error {
			n, err := parseMs("krabka.produce.group.linger.ms", v, 0)
			if err == nil {
				c.GroupLinger = time.Duration(n) * time.Millisecond
			}
			return err
		},
		func(c *Config) string { return strconv.FormatInt(c.GroupLinger.Milliseconds(), 10) }},
	{ConfigKey{"krabka.leave.on.close", "bool", "true", "true: closing the client removes the registrations it made for roles it does not hold (a leadership closed without resigning stays registered; its standbys wait for its lease)."},
		func(c *Config, v string) error { return parseBool("krabka.leave.on.close", v, &c.LeaveOnClose) },
		func(c *Config) string { return strconv.FormatBool(c.LeaveOnClose) }},
	{ConfigKey{"krabka.produce.token.header", "bool", "true", "true: every guarded write carries the header krabka.token = \"<producer id>:<epoch>\" of the token it is written with, so a consumer or a device can check it against the record batch the broker accepted (a verifier does; about 20 bytes a record)."},
		func(c *Config, v string) error {
			return parseBool("krabka.produce.token.header", v, &c.ProduceTokenHeader)
		},
		func(c *Config) string { return strconv.FormatBool(c.ProduceTokenHeader) }},
	{ConfigKey{"krabka.lease.risk.margin.ms", "int", "0", "A held lease is at risk when no renewal succeeded since it fell due and its deadline is this close (ms, >= 0, below krabka.lease.ms - krabka.renew.interval.ms); 0 = half of that difference, or krabka.lease.stop.margin.ms if that is set and larger. Leaderships report AT_RISK and RECOVERED events; a term at risk stops krabka.lease.stop.margin.ms before the deadline."},
		func(c *Config, v string) error {
			n, err := parseMsMax("krabka.lease.risk.margin.ms", v, 0, maxInt32Ms, "it is below krabka.lease.ms")
			if err == nil {
				c.LeaseRiskMargin = time.Duration(n) * time.Millisecond
			}
			return err
		},
		func(c *Config) string { return strconv.FormatInt(c.LeaseRiskMargin.Milliseconds(), 10) }},
	{ConfigKey{"krabka.lease.stop.margin.ms", "int", "0", "How long before its deadline a term whose lease is at risk stops (ms, >= 0, at most the risk margin); 0 = half the risk margin. The elector then ends the term (LOST_AT_RISK) and krabka-coord run stops its program (its --margin sets this key). The one stop margin of every surface."},
		func(c *Config, v string) error {
			n, err := parseMsMax("krabka.lease.stop.margin.ms", v, 0, maxInt32Ms, "it is below krabka.lease.ms")
			if err == nil {
				c.LeaseStopMargin = time.Duration(n) * time.Millisecond
			}
			return err
		},
		func(c *Config) string { return strconv.FormatInt(c.LeaseStopMargin.Milliseconds(), 10) }},
	{ConfigKey{"krabka.engine", "enum", "shared", "How a role's transactions reach Kafka: shared = one transactional engine per client on a few shared connections per broker (control plane for mint and leases, data plane for guarded writes), whatever the number of roles; client = one franz-go transactional client per acquisition (sockets and goroutines per held role; the engine of releases before issue 35). The environment variable KRABKA_ENGINE replaces the default."},
		func(c *Config, v string) error {
			switch s := strings.ToLower(strings.TrimSpace(v)); s {
			case "", "client", "shared":
				c.Engine = s
				return nil
			}
			return invalid("krabka.engine", v, "must be client or shared (the environment variable "+EngineEnv+" sets the default)")
		},
		func(c *Config) string { return c.Engine }},
}

func parseBool(name, v string, out *bool) error {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "true", "1":
		*out = true
	case "false", "0":
		*out = false
	default:
		return invalid(name, v, "must be true or false")
	}
	return nil
}

// testClockOffsetKey is the test-only clock hook (never documented for users).
const testClockOffsetKey = "krabka.test.clock.offset.ms"

func findKey(name string) (*configEntry, error) {
	for i := range configTable {
		if configTable[i].Name == name {
			return &configTable[i], nil
		}
	}
	return nil, WrapError(ErrUnknownConfig, nil, "%q", name)
}

// ConfigKeys returns the table of every configuration property, in
// documentation order. docs/CONFIGURATION.md is generated from it.
func ConfigKeys() []ConfigKey {
	out := make([]ConfigKey, 0, len(configTable))
	for _, e := range configTable {
		if e.Name != testClockOffsetKey {
			out = append(out, e.ConfigKey)
		}
	}
	return out
}

// DefaultConfig returns the configuration holding every default (with no
// bootstrap servers, which Validate requires).
func DefaultConfig() Config {
	var c Config
	for _, e := range configTable {
		if e.Default != "" || e.Name == "client.id" {
			if err := e.set(&c, e.Default); err != nil {
				panic("krabka: bad default of " + e.Name + ": " + err.Error())
			}
		}
	}
	if v, ok := os.LookupEnv(EngineEnv); ok {
		// Not parsed here: Validate names a bad value.
		c.Engine = strings.ToLower(strings.TrimSpace(v))
	}
	return c
}

// Set parses value for the property name and stores it. An unknown name
// gives an error matching ErrUnknownConfig, a bad value one matching
// ErrInvalidConfig; both name the key.
func (c *Config) Set(name, value string) error {
	e, err := findKey(name)
	if err != nil {
		return err
	}
	return e.set(c, value)
}

// Get returns the property as text. sasl.password reads back as
// "[redacted]" when set.
func (c *Config) Get(name string) (string, error) {
	e, err := findKey(name)
	if err != nil {
		return "", err
	}
	return e.get(c), nil
}

// ConfigFromMap returns DefaultConfig with every property of m set (in
// sorted key order, so the first error is deterministic), validated.
func ConfigFromMap(m map[string]string) (Config, error) {
	c := DefaultConfig()
	names := make([]string, 0, len(m))
	for k := range m {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		if err := c.Set(k, m[k]); err != nil {
			return Config{}, err
		}
	}
	return c, c.Validate()
}

// Validate checks the whole configuration, including what no single
// property can check (the lease extents against each other, SASL needing a
// user name). Errors match ErrInvalidConfig and name the key.
func (c Config) Validate() error {
	if len(c.BootstrapServers) == 0 {
		return invalid("bootstrap.servers", "", "required")
	}
	if _, _, err := parseMemBootstrap(strings.Join(c.BootstrapServers, ","), c.BootstrapServers); err != nil {
		return err
	}
	for _, e := range configTable {
		if e.Name == "sasl.password" || e.Name == "ssl.key.password" || e.Name == "bootstrap.servers" {
			continue
		}
		// Re-parse every value as text: catches fields filled in directly.
		if e.Name == "client.id" || e.Name == "sasl.username" || e.Name == "ssl.ca.location" || e.Name == "krabka.role.prefix" ||
			e.Name == "ssl.certificate.location" || e.Name == "ssl.key.location" {
			continue
		}
		var probe Config
		if err := e.set(&probe, e.get(&c)); err != nil {
			return err
		}
	}
	if err := c.Lease.Validate(); err != nil {
		key := "krabka.lease.ms"
		var ce *core.Error
		if e, ok := err.(*core.Error); ok {
			ce = e
		}
		if ce != nil {
			switch ce.Field {
			case "renew_interval_ms":
				key = "krabka.renew.interval.ms"
			case "challenge_stagger_ms":
				key = "krabka.challenge.stagger.ms"
			}
		}
		return WrapError(ErrInvalidConfig, nil, "%s: %v", key, err)
	}
	if m := c.LeaseRiskMargin.Milliseconds(); m > 0 && m >= c.Lease.DurationMs-c.Lease.RenewIntervalMs {
		return invalid("krabka.lease.risk.margin.ms", strconv.FormatInt(m, 10), fmt.Sprintf(
			"must be below krabka.lease.ms - krabka.renew.interval.ms = %d (a lease is renewed that long before its deadline; a larger margin would put every renewal at risk)",
			c.Lease.DurationMs-c.Lease.RenewIntervalMs))
	}
	if m := c.LeaseStopMargin.Milliseconds(); m > 0 && m >= c.Lease.DurationMs-c.Lease.RenewIntervalMs {
		return invalid("krabka.lease.stop.margin.ms", strconv.FormatInt(m, 10), fmt.Sprintf(
			"must be below krabka.lease.ms - krabka.renew.interval.ms = %d (a lease is renewed that long before its deadline; a larger margin would stop every term before its renewal)",
			c.Lease.DurationMs-c.Lease.RenewIntervalMs))
	}
	if s, r := c.LeaseStopMargin, c.LeaseRiskMargin; s > 0 && r > 0 && s > r {
		return invalid("krabka.lease.stop.margin.ms", strconv.FormatInt(s.Milliseconds(), 10), fmt.Sprintf(
			"must not exceed krabka.lease.risk.margin.ms = %d: a term stops only after its lease was at risk", r.Milliseconds()))
	}
	if c.RequestTimeout <= 0 {
		return invalid("request.timeout.ms", c.RequestTimeout.String(), "must be positive")
	}
	if c.PollInterval <= 0 {
		return invalid("krabka.poll.interval.ms", c.PollInterval.String(), "must be positive")
	}
	if strings.HasPrefix(c.SecurityProtocol, "SASL_") && c.SASLUsername == "" {
		return invalid("sasl.username", "", "required with security.protocol="+c.SecurityProtocol)
	}
	if (c.SSLCertificateLocation == "") != (c.SSLKeyLocation == "") {
		if c.SSLKeyLocation == "" {
			return invalid("ssl.key.location", "", "required with ssl.certificate.location")
		}
		return invalid("ssl.certificate.location", "", "required with ssl.key.location")
	}
	return nil
}
