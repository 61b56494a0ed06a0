package coord

import "github.com/krabka/krabka-coord/core"

// ErrorCodeInfo is one row of THE error table: every krabka_err_t code with
// its name, its description, its flags and what it stands for in Go. The C
// API builds krabka_err2name, krabka_err2str, krabka_err_is_retriable,
// krabka_err_is_fatal and its error mapping from it; a test
// (errtable_test.go) fails when the header, the Python or the Node binding
// or the TypeScript declarations differ from it. Numbers never change; new
// codes get new numbers.
type ErrorCodeInfo struct {
	Code      int
	Name      string // without the KRABKA_ERR_ prefix ("OK" for 0)
	Text      string // krabka_err2str
	Retriable bool   // the same call may succeed later
	Fatal     bool   // the object the call was made on is done for that purpose
	// Sentinel is the Go error the code stands for (checked with errors.Is,
	// in table order); nil for codes the C API makes itself.
	Sentinel error
	// Category is the data category of the pure layer the code stands for.
	Category core.Category
}

// ErrorTable lists every code in numeric order.
var ErrorTable = []ErrorCodeInfo{
	{Code: 0, Name: "OK", Text: "success"},
	{Code: 1, Name: "INVALID_ARG", Text: "invalid argument", Sentinel: ErrInvalidArgument},
	{Code: 2, Name: "INVALID_HANDLE", Text: "unknown, destroyed or wrong-kind handle"},
	{Code: 3, Name: "BUFFER_TOO_SMALL", Text: "output buffer too small"},
	{Code: 4, Name: "UNKNOWN_CONFIG", Text: "no such configuration property", Sentinel: ErrUnknownConfig},
	{Code: 5, Name: "INVALID_CONFIG", Text: "invalid configuration value", Sentinel: ErrInvalidConfig},
	{Code: 10, Name: "TRUNCATED", Text: "the bytes end too early", Category: core.CatTruncated},
	{Code: 11, Name: "TRAILING_BYTES", Text: "bytes remain after the last field", Category: core.CatTrailingBytes},
	{Code: 12, Name: "UNSUPPORTED_VERSION", Text: "unsupported record version", Category: core.CatUnsupportedVersion},
	{Code: 13, Name: "UNKNOWN_KIND", Text: "unknown record kind", Category: core.CatUnknownKind},
	{Code: 14, Name: "NEGATIVE_LENGTH", Text: "negative string length", Category: core.CatNegativeLength},
	{Code: 15, Name: "INVALID_UTF8", Text: "invalid UTF-8", Category: core.CatInvalidUTF8},
	{Code: 16, Name: "LEASE_KEY_HAS_MEMBER", Text: "a lease key carries a member", Category: core.CatLeaseKeyHasMember},
	{Code: 17, Name: "EMPTY_ROLE", Text: "empty role", Category: core.CatEmptyRole},
	{Code: 18, Name: "EMPTY_MEMBER", Text: "empty member id", Category: core.CatEmptyMember},
	{Code: 19, Name: "ROLE_TOO_LONG", Text: "role longer than 249 bytes", Category: core.CatRoleTooLong},
	{Code: 20, Name: "MEMBER_TOO_LONG", Text: "member id longer than 249 bytes", Category: core.CatMemberTooLong},
	{Code: 21, Name: "NEGATIVE_TOKEN", Text: "negative producer id or epoch", Category: core.CatNegativeToken},
	{Code: 22, Name: "TOKEN_FORM", Text: "token text is not <id>:<epoch>", Category: core.CatTokenForm},
	{Code: 23, Name: "INVALID_PARTITION_COUNT", Text: "partition count below 1", Category: core.CatInvalidPartitionCount},
	{Code: 24, Name: "INVALID_LEASE_CONFIG", Text: "invalid lease configuration", Category: core.CatInvalidLeaseConfig},
	{Code: 30, Name: "FENCED", Text: "the cluster superseded this leadership", Fatal: true, Sentinel: ErrFenced},
	{Code: 31, Name: "LEASE_EXPIRED", Text: "the lease expired before it could be renewed", Fatal: true, Sentinel: ErrLeaseExpired},
	{Code: 32, Name: "NOT_LEADER", Text: "the leadership was resigned or destroyed", Fatal: true, Sentinel: ErrNotLeader},
	{Code: 33, Name: "TIMEOUT", Text: "the timeout passed", Retriable: true, Sentinel: ErrTimeout},
	{Code: 34, Name: "AUTHORIZATION", Text: "not authorized (an ACL is missing)", Sentinel: ErrAuthorization},
	{Code: 35, Name: "UNSUPPORTED", Text: "the cluster does not support the protocol", Sentinel: ErrUnsupported},
	{Code: 36, Name: "TRANSPORT", Text: "network or broker error", Retriable: true, Sentinel: ErrTransport},
	{Code: 37, Name: "CLOSED", Text: "the client was destroyed", Fatal: true, Sentinel: ErrClosed},
	{Code: 38, Name: "AUTHENTICATION", Text: "authentication failed (SASL credentials refused)", Sentinel: ErrAuthentication},
	{Code: 39, Name: "MESSAGE_TOO_LARGE", Text: "a record is larger than the broker accepts", Sentinel: ErrMessageTooLarge},
	{Code: 40, Name: "UNKNOWN_TOPIC_OR_PARTITION", Text: "the topic or partition does not exist", Sentinel: ErrUnknownTopicOrPartition},
	{Code: 41, Name: "TLS", Text: "TLS handshake failed (certificate not trusted, expired or refused)", Sentinel: ErrTLS},
	{Code: 42, Name: "FORKED", Text: "called in a child process after fork(); the library works only in the process that loaded it", Fatal: true},
	{Code: 50, Name: "INTERNAL", Text: "internal error in the library", Fatal: true},
}

// Library version (krabka_version, KRABKA_VERSION_* in the header, the
// bindings' package versions) and ABI version; the drift test checks every
// copy against these.
const (
	VersionMajor = 2
	VersionMinor = 0
	VersionPatch = 0
	ABIVersion   = 2
)
