package kafka

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/krabka/krabka-coord/core/coord"
)

func topicACL(topic, op string) string {
	return fmt.Sprintf("%s on Topic %q", op, topic)
}

func txnACL(txnID, op string) string {
	return fmt.Sprintf("%s on TransactionalId %q", op, txnID)
}

// isFence reports a fence of a transactional step: INVALID_PRODUCER_EPOCH
// (47) or PRODUCER_FENCED (90).
func isFence(err error) bool {
	return errors.Is(err, kerr.InvalidProducerEpoch) || errors.Is(err, kerr.ProducerFenced)
}

// classify maps a franz-go error of a non-transactional step onto the
// sentinels of core. acl names the ACL the step needs (for the message).
// A fence here is an ordinary error.
func classify(err error, what, acl string) error {
	return classifyTxn(err, what, acl, false)
}

// classifyTxn is classify for a transactional step when txn is true: a
// fence then maps to coord.ErrFenced, the only loss signal.
func classifyTxn(err error, what, acl string, txn bool) error {
	if err == nil {
		return nil
	}
	if coord.ClientErrorKind(err) != nil {
		return err
	}
	switch {
	case txn && isFence(err):
		return coord.WrapError(coord.ErrFenced, err, "%s", what)
	case errors.Is(err, kerr.TransactionalIDAuthorizationFailed):
		return coord.WrapError(coord.ErrAuthorization, err, "%s: the principal lacks %s", what, orDefault(acl, "an ACL on the TransactionalId"))
	case errors.Is(err, kerr.TopicAuthorizationFailed):
		return coord.WrapError(coord.ErrAuthorization, err, "%s: the principal lacks %s", what, orDefault(acl, "an ACL on the topic"))
	case errors.Is(err, kerr.ClusterAuthorizationFailed):
		return coord.WrapError(coord.ErrAuthorization, err, "%s: the principal lacks an ACL on the Cluster (IDEMPOTENT_WRITE, or WRITE on a topic)", what)
	case errors.Is(err, kerr.GroupAuthorizationFailed):
		return coord.WrapError(coord.ErrAuthorization, err, "%s: the principal lacks an ACL on a group", what)
	case errors.Is(err, kerr.SaslAuthenticationFailed), errors.Is(err, kerr.IllegalSaslState),
		errors.Is(err, kerr.UnsupportedSaslMechanism):
		return coord.WrapError(coord.ErrAuthentication, err, "%s: the SASL credentials were refused (check sasl.username, sasl.password and sasl.mechanism)", what)
	case errors.Is(err, kerr.MessageTooLarge), errors.Is(err, kerr.RecordListTooLarge):
		return coord.WrapError(coord.ErrMessageTooLarge, err, "%s (max.message.bytes of the topic or the broker)", what)
	case errors.Is(err, kerr.UnknownTopicOrPartition):
		return coord.WrapError(coord.ErrUnknownTopicOrPartition, err, "%s", what)
	case strings.Contains(err.Error(), "invalid record partitioning choice"):
		return coord.WrapError(coord.ErrUnknownTopicOrPartition, err, "%s: no such partition", what)
	case errors.Is(err, kerr.UnsupportedVersion), brokerTooOld(err),
		errors.Is(err, kerr.UnsupportedForMessageFormat), txn && errors.Is(err, kerr.InvalidRequest):
		return coord.WrapError(coord.ErrUnsupported, err, "%s: the cluster does not support the transactional protocol this needs", what)
	case errors.Is(err, kerr.InvalidTransactionTimeout):
		return coord.WrapError(coord.ErrInvalidConfig, err, "%s: the transaction timeout (krabka.txn.timeout.ms, capped at krabka.lease.ms) exceeds the broker's transaction.max.timeout.ms", what)
	case errors.Is(err, context.DeadlineExceeded):
		return coord.WrapError(coord.ErrTimeout, err, "%s", what)
	case errors.Is(err, kgo.ErrClientClosed):
		return coord.WrapError(coord.ErrClosed, err, "%s", what)
	}
	if terr := classifyTLS(err, what); terr != nil {
		return terr
	}
	var ue *kgo.ErrFirstReadEOF
	if errors.As(err, &ue) {
		return coord.WrapError(coord.ErrTransport, err, "%s (the broker closed the connection before its first answer: a broker that is stopping does that, and so does a listener whose security.protocol or SASL settings differ from the client's)", what)
	}
	return coord.WrapError(coord.ErrTransport, err, "%s", what)
}

// classify is the package classify, plus what only the transport can tell:
// when the brokers closed a connection before their first answer (or none
// could be dialled), it probes bootstrap.servers with a plain TCP connect.
// If no listener accepts, the cluster is reported as unreachable, which a
// broker that died looks like; only when a listener accepts and still closes
// at once is a protocol mismatch the likely reason (issue 26).
func (t *Transport) classify(err error, what, acl string) error {
	return t.explain(classify(err, what, acl), err, what)
}

func (t *Transport) classifyTxn(err error, what, acl string, txn bool) error {
	return t.explain(classifyTxn(err, what, acl, txn), err, what)
}

func (t *Transport) explain(cerr, raw error, what string) error {
	if !errors.Is(cerr, coord.ErrTransport) || raw == nil {
		return cerr
	}
	var ue *kgo.ErrFirstReadEOF
	if !errors.As(raw, &ue) && !strings.Contains(raw.Error(), "unable to dial") {
		return cerr
	}
	if down := unreachable(t.cfg.BootstrapServers); down != "" {
		cause := raw
		if ue != nil && ue.Unwrap() != nil {
			cause = ue.Unwrap() // the EOF itself, without franz-go's guess at a TLS or SASL mismatch
		}
		return coord.WrapError(coord.ErrTransport, cause, "%s: the cluster is unreachable: %s (the brokers are down, or not listening at bootstrap.servers)", what, down)
	}
	return cerr
}

// unreachable dials every address with a short timeout and describes the
// failures when none accepts a connection ("" when one does).
func unreachable(addrs []string) string {
	type res struct {
		addr string
		err  error
	}
	ch := make(chan res, len(addrs))
	for _, a := range addrs {
		go func() {
			c, err := net.DialTimeout("tcp", a, 500*time.Millisecond)
			if c != nil {
				c.Close()
			}
			ch <- res{a, err}
		}()
	}
	var fails []string
	for range addrs {
		r := <-ch
		if r.err == nil {
			return ""
		}
		msg := r.err.Error()
		switch {
		case errors.Is(r.err, syscall.ECONNREFUSED):
			msg = "connection refused"
		case errors.Is(r.err, os.ErrDeadlineExceeded):
			msg = "no answer within 500 ms"
		}
		fails = append(fails, r.addr+": "+msg)
	}
	sort.Strings(fails)
	return strings.Join(fails, "; ")
}

// classifyTLS names what went wrong in a TLS (or TLS-versus-plaintext)
// connection problem, or returns nil when err is none of those. These fail
// at the first connection, so they come back at once rather than at a
// timeout.
func classifyTLS(err error, what string) error {
	var ua x509.UnknownAuthorityError
	var ci x509.CertificateInvalidError
	var he x509.HostnameError
	msg := err.Error()
	switch {
	case errors.As(err, &ua):
		return coord.WrapError(coord.ErrTLS, err, "%s: the broker's certificate is not signed by a CA in ssl.ca.location (wrong CA?)", what)
	case errors.As(err, &ci) && ci.Reason == x509.Expired:
		return coord.WrapError(coord.ErrTLS, err, "%s: the broker's certificate has expired (or is not yet valid)", what)
	case errors.As(err, &ci):
		return coord.WrapError(coord.ErrTLS, err, "%s: the broker's certificate is not acceptable", what)
	case errors.As(err, &he):
		return coord.WrapError(coord.ErrTLS, err, "%s: the broker's certificate is not for the address in bootstrap.servers or its advertised listener", what)
	case strings.Contains(msg, "remote error: tls: certificate expired"):
		return coord.WrapError(coord.ErrTLS, err, "%s: the broker refused the TLS handshake: the client certificate (ssl.certificate.location) has expired", what)
	case strings.Contains(msg, "remote error: tls:"):
		return coord.WrapError(coord.ErrTLS, err, "%s: the broker refused the TLS handshake: it requires a client certificate signed by a CA it trusts (ssl.certificate.location, ssl.key.location)", what)
	case strings.Contains(msg, "tls alert record"):
		return coord.WrapError(coord.ErrTransport, err, "%s: a plaintext client (security.protocol=PLAINTEXT or SASL_PLAINTEXT) on a TLS listener: use SSL or SASL_SSL", what)
	case strings.Contains(msg, "client is using TLS when the broker is not expecting it"):
		return coord.WrapError(coord.ErrTransport, err, "%s: security.protocol=SSL or SASL_SSL but the broker closed the connection at once: not a TLS listener?", what)
	case strings.Contains(msg, "first record does not look like a TLS handshake"):
		return coord.WrapError(coord.ErrTransport, err, "%s: security.protocol=SSL or SASL_SSL but the broker does not speak TLS on this port: not a TLS listener", what)
	}
	return nil
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

// brokerTooOld reports kgo's error for a request the broker does not know
// (its ApiVersions lacks the key): for InitProducerId or
// DescribeTransactions this is a cluster that cannot run the protocol.
func brokerTooOld(err error) bool {
	return err != nil && strings.Contains(err.Error(), "broker is too old")
}
