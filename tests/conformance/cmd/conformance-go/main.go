// Command conformance-go runs the conformance vectors against the Go core.
//
//	go run ./tests/conformance/cmd/conformance-go [-json] [files...]
//
// Without file arguments it runs tests/conformance/vectors/*.json (looked up
// from the current directory). It prints one "FAIL <id>: ..." line per failed
// vector, the "not run" list, and finally "N passed, N failed"; with -json it
// prints instead one JSON object of per-group counts,
// {"group": {"passed": n, "failed": m}}. The exit status is 1 when a vector
// failed and 2 when the files could not be read or held no vector at all.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/krabka/krabka-coord/tests/conformance/goconf"
)

func main() {
	asJSON := flag.Bool("json", false, "print per-group counts as JSON instead of the text report")
	dir := flag.String("dir", "tests/conformance/vectors", "directory of vector files when none are named")
	flag.Parse()

	files := flag.Args()
	if len(files) == 0 {
		var err error
		if files, err = goconf.DefaultFiles(*dir); err != nil {
			fmt.Fprintln(os.Stderr, "conformance-go:", err)
			os.Exit(2)
		}
	}
	res, err := goconf.RunFiles(files)
	if err != nil {
		fmt.Fprintln(os.Stderr, "conformance-go:", err)
		os.Exit(2)
	}
	// Files that parse but hold no vector would pass with "0 passed".
	if res.Passed+res.Failed == 0 {
		fmt.Fprintf(os.Stderr, "conformance-go: no vector in %s\n", strings.Join(files, " "))
		os.Exit(2)
	}
	if *asJSON {
		out, _ := json.Marshal(res.Groups)
		fmt.Println(string(out))
	} else {
		for _, f := range res.Failures {
			fmt.Printf("FAIL %s: %s\n", f.ID, strings.ReplaceAll(f.Problem, "\n", "\n    "))
		}
		if len(goconf.NotRun) > 0 {
			fmt.Printf("not run: %s\n", strings.Join(goconf.NotRun, ", "))
		}
		fmt.Printf("%d passed, %d failed\n", res.Passed, res.Failed)
	}
	if res.Failed > 0 {
		os.Exit(1)
	}
}
