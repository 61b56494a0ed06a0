package coord

import (
	"context"
	"errors"
	"fmt"
)

// Errors of the cluster side: configuration, client and leadership. They are
// sentinels checked with errors.Is; the errors the client returns wrap one of
// them (and keep the reason text, for example which ACL is missing).
//
// Each maps 1:1 onto a krabka_err_t code of include/krabka_coord.h.
var (
	// ErrUnknownConfig: a configuration key that does not exist
	// (KRABKA_ERR_UNKNOWN_CONFIG).
	ErrUnknownConfig = errors.New("krabka: unknown configuration property")
	// ErrInvalidConfig: a value that does not parse or is out of range; the
	// message names the key (KRABKA_ERR_INVALID_CONFIG).
	ErrInvalidConfig = errors.New("krabka: invalid configuration value")
	// ErrFenced: the cluster superseded this leadership
	// (INVALID_PRODUCER_EPOCH 47 or PRODUCER_FENCED 90 on a transactional
	// step). The only loss signal (KRABKA_ERR_FENCED).
	ErrFenced = errors.New("krabka: fenced: the cluster superseded this leadership")
	// ErrLeaseExpired: renewal kept failing until the lease deadline passed;
	// the leadership ended by itself (KRABKA_ERR_LEASE_EXPIRED).
	ErrLeaseExpired = errors.New("krabka: lease expired: renewal failed until the deadline")
	// ErrNotLeader: the leadership was resigned or closed by its owner
	// (KRABKA_ERR_NOT_LEADER).
	ErrNotLeader = errors.New("krabka: not leader: the leadership was resigned or closed")
	// ErrTimeout: the caller's deadline passed (KRABKA_ERR_TIMEOUT).
	// errors.Is(err, ErrTimeout) also holds for context.DeadlineExceeded.
	ErrTimeout = &timeoutError{}
	// ErrAuthorization: the principal lacks an ACL; the message says which
	// (KRABKA_ERR_AUTHORIZATION).
	ErrAuthorization = errors.New("krabka: authorization failed")
	// ErrUnsupported: the cluster cannot run the protocol (no transactions or
	// no DescribeTransactions) (KRABKA_ERR_UNSUPPORTED).
	ErrUnsupported = errors.New("krabka: unsupported by the cluster")
	// ErrTransport: a network or broker error that may go away; retriable
	// (KRABKA_ERR_TRANSPORT).
	ErrTransport = errors.New("krabka: transport error")
	// ErrClosed: the client was closed (KRABKA_ERR_CLOSED).
	ErrClosed = errors.New("krabka: client closed")
	// ErrAuthentication: the cluster refused the client's credentials (SASL
	// authentication failed; not a missing ACL) (KRABKA_ERR_AUTHENTICATION).
	ErrAuthentication = errors.New("krabka: authentication failed")
	// ErrMessageTooLarge: a record is larger than the broker or topic
	// accepts (MESSAGE_TOO_LARGE, RECORD_LIST_TOO_LARGE); permanent
	// (KRABKA_ERR_MESSAGE_TOO_LARGE).
	ErrMessageTooLarge = errors.New("krabka: message too large")
	// ErrUnknownTopicOrPartition: a guarded write names a topic or a
	// partition that does not exist (after a metadata refresh); permanent
	// until it is created (KRABKA_ERR_UNKNOWN_TOPIC_OR_PARTITION).
	ErrUnknownTopicOrPartition = errors.New("krabka: unknown topic or partition")
	// ErrTLS: the TLS handshake failed for a reason that does not pass by
	// itself: a broker certificate the client does not trust, expired or
	// for another host, or a client certificate the broker refused
	// (KRABKA_ERR_TLS).
	ErrTLS = errors.New("krabka: TLS handshake failed")
	// ErrInvalidArgument: an argument of a call is out of range, for
	// example a guarded-write message with an illegal topic name or a
	// partition below -1 (KRABKA_ERR_INVALID_ARG). Invalid role and member
	// names keep the pure layer's data errors (ErrEmptyRole ...).
	ErrInvalidArgument = errors.New("krabka: invalid argument")
)

// timeoutError is ErrTimeout: it matches itself and context.DeadlineExceeded
// so that callers may test either.
type timeoutError struct{}

func (*timeoutError) Error() string { return "krabka: timeout: the deadline passed" }

func (*timeoutError) Is(target error) bool { return target == context.DeadlineExceeded }

// clientErr wraps a sentinel with a reason and an optional cause.
type clientErr struct {
	kind  error
	msg   string
	cause error
}

func (e *clientErr) Error() string {
	s := e.kind.Error()
	if e.msg != "" {
		s += ": " + e.msg
	}
	if e.cause != nil {
		s += ": " + e.cause.Error()
	}
	return s
}

func (e *clientErr) Unwrap() []error {
	if e.cause != nil {
		return []error{e.kind, e.cause}
	}
	return []error{e.kind}
}

// WrapError returns an error that matches kind (one of the sentinels above)
// with errors.Is, reads "<kind>: <msg>: <cause>" and also matches cause.
// Transports use it to classify what the cluster answered.
func WrapError(kind error, cause error, format string, args ...any) error {
	return &clientErr{kind: kind, msg: fmt.Sprintf(format, args...), cause: cause}
}

// clientErrorKinds lists the sentinels in the order a classifier should test
// them (the most specific first).
var clientErrorKinds = []error{
	ErrFenced, ErrLeaseExpired, ErrNotLeader, ErrClosed, ErrAuthorization, ErrAuthentication,
	ErrUnsupported, ErrUnknownConfig, ErrInvalidConfig, ErrInvalidArgument, ErrMessageTooLarge,
	ErrUnknownTopicOrPartition, ErrTLS, ErrTimeout, ErrTransport,
}

// ClientErrorKind returns the first sentinel of the cluster side that err
// matches, in the order FENCED, LEASE_EXPIRED, NOT_LEADER, CLOSED,
// AUTHORIZATION, UNSUPPORTED, UNKNOWN_CONFIG, INVALID_CONFIG, INVALID_ARG, TIMEOUT,
// TRANSPORT (see clientErrorKinds); nil when it matches none (a data error of the pure layer, or a
// bug). The C API maps the result onto its error codes.
func ClientErrorKind(err error) error {
	if err == nil {
		return nil
	}
	for _, k := range clientErrorKinds {
		if errors.Is(err, k) {
			return k
		}
	}
	return nil
}
