package coord

import (
	"fmt"
	"sort"

	"github.com/krabka/krabka-coord/core"
)

// ErrorCodeInfo is one row of THE error table: every krabka_err_t code with
// its name, its description, its flags and what it stands for in Go. The C
// API builds krabka_err2name, krabka_err2str, krabka_err_is_retriable,
// krabka_err_is_fatal and its error mapping from it; internal/gen writes the
// fork guard's copy and the bindings' constants from it, and a test
// (errtable_test.go) fails when the header or a generated copy differs.
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

// ErrorTable lists every code in numeric order. It is derived from the
// Error values (errors_client.go): the sentinels of the cluster side and
// the codes no Go error stands for. It is built by init, which runs after
// every package-level variable (all the sentinels) is initialised.
var ErrorTable []ErrorCodeInfo

func init() { ErrorTable = buildErrorTable() }

func buildErrorTable() []ErrorCodeInfo {
	var out []ErrorCodeInfo
	for _, e := range sentinels {
		out = append(out, ErrorCodeInfo{Code: e.Code, Name: e.Name, Text: e.Text, Retriable: e.Retriable,
			Fatal: e.Fatal, Sentinel: e, Category: e.Category})
	}
	for _, e := range otherCodes {
		out = append(out, ErrorCodeInfo{Code: e.Code, Name: e.Name, Text: e.Text, Retriable: e.Retriable,
			Fatal: e.Fatal, Category: e.Category})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Code < out[j].Code })
	names := map[string]bool{}
	for i, r := range out {
		// A programming error in the declarations above: fail at start-up
		// (every test of the package runs this) rather than serve two codes
		// under one number or name.
		if i > 0 && out[i-1].Code == r.Code {
			panic(fmt.Sprintf("coord: error code %d is declared twice (%s and %s)", r.Code, out[i-1].Name, r.Name))
		}
		if names[r.Name] {
			panic(fmt.Sprintf("coord: error name %s is declared twice", r.Name))
		}
		names[r.Name] = true
		if r.Text == "" || r.Name == "" {
			panic(fmt.Sprintf("coord: error code %d has an empty name or text", r.Code))
		}
		if r.Retriable && r.Fatal {
			panic(fmt.Sprintf("coord: error %s is both retriable and fatal", r.Name))
		}
	}
	return out
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
