package demo

import (
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/krabka/krabka-coord/core"
)

// The line protocol every demo host prints on stdout, one event a line:
//
//	EVENT <unix_ms> <member> <KIND> key=value key="quoted value" ...
//
// KIND is one of the constants below. Keys the orchestrator reads:
//
//	token=<producer_id>:<producer_epoch>  ACQUIRED, RENEWED, DISPATCHED, FENCED, EXPIRED
//	deadline=<unix_ms>                    ACQUIRED, RENEWED (the lease deadline)
//	seq=<n> offset=<n> partition=<n>      DISPATCHED (the command's number and where it landed)
//	op=renew|dispatch|acquire             FENCED, EXPIRED, ERROR (the call that answered)
//	code=<NAME> msg="..."                 FENCED, EXPIRED, ERROR (krabka_err2name and the reason)
//	lang=<c|python|node>                  STARTED
//
// Other lines (logs, banners) are kept in the host's log and otherwise
// ignored, unless they carry one of the words below; see ParseEvent.
const (
	Started    = "STARTED"    // the process is up, before its first acquire
	Standby    = "STANDBY"    // registered; waiting for its turn (optional)
	Acquired   = "ACQUIRED"   // won the role: token and lease deadline
	Dispatched = "DISPATCHED" // a command was written through the guarded write
	Renewed    = "RENEWED"    // the lease was renewed under the same token
	Fenced     = "FENCED"     // the cluster superseded this leadership
	Expired    = "EXPIRED"    // the lease deadline passed: the leadership ended by itself
	Resigned   = "RESIGNED"   // gave the role up
	Error      = "ERROR"      // any other error (retried)
	Stopped    = "STOPPED"    // the host is exiting
)

var kinds = []string{Started, Standby, Acquired, Dispatched, Renewed, Fenced, Expired, Resigned, Error, Stopped}

// Event is one parsed host line.
type Event struct {
	At     time.Time // the host's timestamp, or when the line was read
	Member string
	Kind   string
	Fields map[string]string
	Raw    string
	Strict bool // the line followed the EVENT protocol exactly
}

// Token returns the event's token= field, if it has a valid one.
func (e Event) Token() (core.FencingToken, bool) {
	t, err := core.ParseFencingToken(e.Fields["token"])
	return t, err == nil
}

// Int returns an integer field.
func (e Event) Int(key string) (int64, bool) {
	n, err := strconv.ParseInt(e.Fields[key], 10, 64)
	return n, err == nil
}

var (
	kvPattern    = regexp.MustCompile(`([A-Za-z_][A-Za-z0-9_.-]*)=("(?:[^"\\]|\\.)*"|\S+)`)
	tokenPattern = regexp.MustCompile(`\b(\d+):(\d+)\b`)
	// Words a free-form host line may use instead of the protocol's kinds.
	looseWords = []struct {
		re   *regexp.Regexp
		kind string
	}{
		{regexp.MustCompile(`(?i)\bfenced\b|\bFENCED\b|superseded`), Fenced},
		{regexp.MustCompile(`(?i)\blease[ _-]?expired\b|\bexpired\b`), Expired},
		{regexp.MustCompile(`(?i)\bresigned?\b`), Resigned},
		{regexp.MustCompile(`(?i)\bacquired\b|\bleader(ship)? (acquired|won)\b|\bnow leads?\b`), Acquired},
		{regexp.MustCompile(`(?i)\brenewed\b`), Renewed},
		{regexp.MustCompile(`(?i)\bdispatch(ed)?\b`), Dispatched},
		{regexp.MustCompile(`(?i)\berror\b`), Error},
	}
)

// ParseEvent parses one line of a host's stdout. member is the member id the
// orchestrator gave the host (used when the line does not name one) and
// readAt is when the line was read (used when it carries no timestamp).
//
// A line "EVENT <unix_ms> <member> <KIND> k=v..." is parsed strictly. Any
// other line is parsed tolerantly, so a host with its own format still
// drives the timeline: the first protocol kind word, or a loose synonym
// (fenced, expired, acquired, dispatched, ...), gives the kind; key=value
// pairs are read anywhere in the line; a bare "<id>:<epoch>" counts as the
// token. Lines with neither return ok=false.
func ParseEvent(line, member string, readAt time.Time) (Event, bool) {
	line = strings.TrimRight(line, "\r\n")
	ev := Event{At: readAt, Member: member, Fields: map[string]string{}, Raw: line}
	fields := strings.Fields(line)
	if len(fields) >= 4 && fields[0] == "EVENT" && isKind(fields[3]) {
		if ms, err := strconv.ParseInt(fields[1], 10, 64); err == nil {
			ev.At = time.UnixMilli(ms)
		}
		ev.Member = fields[2]
		ev.Kind = fields[3]
		ev.Strict = true
		readPairs(strings.Join(fields[4:], " "), ev.Fields)
		return ev, true
	}
	for _, f := range fields {
		if k := strings.Trim(f, ":[]()"); isKind(k) {
			ev.Kind = k
			break
		}
	}
	if ev.Kind == "" {
		for _, w := range looseWords {
			if w.re.MatchString(line) {
				ev.Kind = w.kind
				break
			}
		}
	}
	if ev.Kind == "" {
		return ev, false
	}
	readPairs(line, ev.Fields)
	if _, ok := ev.Fields["token"]; !ok {
		if m := tokenPattern.FindStringSubmatch(line); m != nil {
			ev.Fields["token"] = m[1] + ":" + m[2]
		}
	}
	if ms, ok := ev.Int("ts"); ok && ms > 1e12 {
		ev.At = time.UnixMilli(ms)
	}
	return ev, true
}

func isKind(s string) bool {
	for _, k := range kinds {
		if s == k {
			return true
		}
	}
	return false
}

func readPairs(s string, into map[string]string) {
	for _, m := range kvPattern.FindAllStringSubmatch(s, -1) {
		v := m[2]
		if strings.HasPrefix(v, `"`) {
			if u, err := strconv.Unquote(v); err == nil {
				v = u
			} else {
				v = strings.Trim(v, `"`)
			}
		}
		into[strings.ToLower(m[1])] = strings.TrimRight(v, ",;")
	}
}
