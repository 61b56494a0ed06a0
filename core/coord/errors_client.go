package coord

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/krabka/krabka-coord/core"
)

// Error is one code of the error table: every krabka_err_t of
// include/krabka_coord.h is exactly one Error value, declared once below,
// and everything else (ErrorTable, the C API's krabka_err2str and friends,
// the fork guard's copy, the bindings' constants) is derived from these
// values by the C API and by `go generate ./...` (internal/gen).
//
// The sentinels of the cluster side (ErrFenced ...) are Error values too:
// errors.Is matches them by identity, and the errors the client returns wrap
// one of them with WrapError (and keep the reason, for example which ACL is
// missing). Numbers never change; new codes get new numbers.
type Error struct {
	Code      int    // the krabka_err_t number
	Name      string // the C name without its KRABKA_ERR_ prefix ("FENCED"; "OK" for 0)
	Text      string // the description: krabka_err2str, and Error() after "krabka: "
	Retriable bool   // the same call may succeed later
	Fatal     bool   // the object the call was made on is done for that purpose
	// Category is the data category of the pure layer the code stands for
	// (data codes only; their Name is the category in upper case).
	Category core.Category
	// also is another error errors.Is(e, also) holds for (ErrTimeout:
	// context.DeadlineExceeded).
	also error
}

// Error reads "krabka: <Text>".
func (e *Error) Error() string { return "krabka: " + e.Text }

// Is reports whether target is the other error e also stands for; errors.Is
// has already compared identities.
func (e *Error) Is(target error) bool { return e.also != nil && target == e.also }

// sentinels holds the Go error values of the cluster side in declaration
// order, which is the order a classifier tests them (ClientErrorKind).
var sentinels []*Error

// sentinel records e as a Go error value of the cluster side.
func sentinel(e *Error) *Error {
	sentinels = append(sentinels, e)
	return e
}

// The errors of the cluster side: configuration, client and leadership, in
// the order a classifier tests them (the most specific first: an error that
// wraps two of them is classified as the first). Package-level variables
// without dependencies between them are initialised in declaration order,
// so this order is the order of ClientErrorKind (a test reads this block
// and checks it).
var (
	// ErrFenced: the cluster superseded this leadership
	// (INVALID_PRODUCER_EPOCH 47 or PRODUCER_FENCED 90 on a transactional
	// step). The only loss signal.
	ErrFenced = sentinel(&Error{Code: 30, Name: "FENCED", Text: "fenced: the cluster superseded this leadership", Fatal: true})
	// ErrLeaseExpired: renewal kept failing until the lease deadline passed;
	// the leadership ended by itself.
	ErrLeaseExpired = sentinel(&Error{Code: 31, Name: "LEASE_EXPIRED", Text: "lease expired: renewal failed until the deadline", Fatal: true})
	// ErrNotLeader: the leadership was resigned or closed by its owner.
	ErrNotLeader = sentinel(&Error{Code: 32, Name: "NOT_LEADER", Text: "not leader: the leadership was resigned or closed", Fatal: true})
	// ErrClosed: the client was closed (krabka_client_destroy).
	ErrClosed = sentinel(&Error{Code: 37, Name: "CLOSED", Text: "client closed", Fatal: true})
	// ErrAuthorization: the principal lacks an ACL; the message says which.
	ErrAuthorization = sentinel(&Error{Code: 34, Name: "AUTHORIZATION", Text: "authorization failed (an ACL is missing)"})
	// ErrAuthentication: the cluster refused the client's credentials (SASL
	// authentication failed; not a missing ACL).
	ErrAuthentication = sentinel(&Error{Code: 38, Name: "AUTHENTICATION", Text: "authentication failed (SASL credentials refused)"})
	// ErrUnsupported: the cluster cannot run the protocol (no transactions or
	// no DescribeTransactions).
	ErrUnsupported = sentinel(&Error{Code: 35, Name: "UNSUPPORTED", Text: "unsupported by the cluster"})
	// ErrUnknownConfig: a configuration key that does not exist.
	ErrUnknownConfig = sentinel(&Error{Code: 4, Name: "UNKNOWN_CONFIG", Text: "unknown configuration property"})
	// ErrInvalidConfig: a value that does not parse or is out of range; the
	// message names the key.
	ErrInvalidConfig = sentinel(&Error{Code: 5, Name: "INVALID_CONFIG", Text: "invalid configuration value"})
	// ErrInvalidArgument: an argument of a call is out of range, for
	// example a guarded-write message with an illegal topic name or a
	// partition below -1. Invalid role and member names keep the pure
	// layer's data errors (ErrEmptyRole ...).
	ErrInvalidArgument = sentinel(&Error{Code: 1, Name: "INVALID_ARG", Text: "invalid argument"})
	// ErrMessageTooLarge: a record is larger than the broker or topic
	// accepts (MESSAGE_TOO_LARGE, RECORD_LIST_TOO_LARGE); permanent.
	ErrMessageTooLarge = sentinel(&Error{Code: 39, Name: "MESSAGE_TOO_LARGE", Text: "message too large"})
	// ErrUnknownTopicOrPartition: a guarded write names a topic or a
	// partition that does not exist (after a metadata refresh); permanent
	// until it is created.
	ErrUnknownTopicOrPartition = sentinel(&Error{Code: 40, Name: "UNKNOWN_TOPIC_OR_PARTITION", Text: "unknown topic or partition"})
	// ErrTLS: the TLS handshake failed for a reason that does not pass by
	// itself: a broker certificate the client does not trust, expired or
	// for another host, or a client certificate the broker refused.
	ErrTLS = sentinel(&Error{Code: 41, Name: "TLS", Text: "TLS handshake failed (certificate not trusted, expired or refused)"})
	// ErrTimeout: the caller's deadline passed; retriable. An error that
	// wraps it also matches context.DeadlineExceeded (errors.Is), so that
	// callers may test either.
	ErrTimeout = sentinel(&Error{Code: 33, Name: "TIMEOUT", Text: "timeout: the deadline passed", Retriable: true, also: context.DeadlineExceeded})
	// ErrTransport: a network or broker error that may go away; retriable.
	ErrTransport = sentinel(&Error{Code: 36, Name: "TRANSPORT", Text: "transport error (network or broker)", Retriable: true})
)

// The codes no Go error value stands for: the ones the C API makes itself,
// and one per data category of the pure layer (dataCode).
var otherCodes = []*Error{
	{Code: 0, Name: "OK", Text: "success"},
	{Code: 2, Name: "INVALID_HANDLE", Text: "unknown, destroyed or wrong-kind handle"},
	{Code: 3, Name: "BUFFER_TOO_SMALL", Text: "output buffer too small"},
	dataCode(10, core.CatTruncated, "the bytes end too early"),
	dataCode(11, core.CatTrailingBytes, "bytes remain after the last field"),
	dataCode(12, core.CatUnsupportedVersion, "unsupported record version"),
	dataCode(13, core.CatUnknownKind, "unknown record kind"),
	dataCode(14, core.CatNegativeLength, "negative string length"),
	dataCode(15, core.CatInvalidUTF8, "invalid UTF-8"),
	dataCode(16, core.CatLeaseKeyHasMember, "a lease key carries a member"),
	dataCode(17, core.CatEmptyRole, "empty role"),
	dataCode(18, core.CatEmptyMember, "empty member id"),
	dataCode(19, core.CatRoleTooLong, "role longer than 249 bytes"),
	dataCode(20, core.CatMemberTooLong, "member id longer than 249 bytes"),
	dataCode(21, core.CatNegativeToken, "negative producer id or epoch"),
	dataCode(22, core.CatTokenForm, "token text is not <id>:<epoch>"),
	dataCode(23, core.CatInvalidPartitionCount, "partition count below 1"),
	dataCode(24, core.CatInvalidLeaseConfig, "invalid lease configuration"),
	{Code: 42, Name: "FORKED", Text: "called in a child process after fork(); the library works only in the process that loaded it", Fatal: true},
	{Code: 50, Name: "INTERNAL", Text: "internal error in the library", Fatal: true},
}

// dataCode is the code of a data category: its name is the category word in
// upper case ("truncated" -> TRUNCATED).
func dataCode(code int, cat core.Category, text string) *Error {
	return &Error{Code: code, Name: strings.ToUpper(string(cat)), Text: text, Category: cat}
}

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

// ClientErrorKind returns the first sentinel of the cluster side that err
// matches, in the order they are declared above (FENCED, LEASE_EXPIRED,
// NOT_LEADER, CLOSED, AUTHORIZATION, ... TIMEOUT, TRANSPORT); nil when it
// matches none (a data error of the pure layer, or a bug). The C API maps
// the result onto its error codes.
func ClientErrorKind(err error) error {
	if err == nil {
		return nil
	}
	for _, k := range sentinels {
		if errors.Is(err, k) {
			return k
		}
	}
	return nil
}
