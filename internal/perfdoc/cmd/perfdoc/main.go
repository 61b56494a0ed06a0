// Command perfdoc records benchmark results files and generates the
// figure tables of docs/PERFORMANCE.md and README.md from them.
//
//	perfdoc record -bench NAME [-label L] [-gobench] [-dir bench/results] [-note TEXT] -- CMD [ARGS...]
//	    runs CMD, passes its output through, and writes one results file of
//	    the samples it printed (KRABKA-SAMPLE lines; -gobench: `go test
//	    -bench` lines), with the load average before and after.
//	perfdoc generate [-root .]   rewrites the generated tables (make perf-doc)
//	perfdoc check [-root .]      fails when a table is stale or a figure has no results file
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/krabka/krabka-coord/internal/perfdoc"
)

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	var err error
	switch os.Args[1] {
	case "record":
		err = record(os.Args[2:])
	case "generate", "check":
		fs := flag.NewFlagSet(os.Args[1], flag.ExitOnError)
		root := fs.String("root", ".", "repository root")
		_ = fs.Parse(os.Args[2:])
		if os.Args[1] == "generate" {
			var changed []string
			changed, err = perfdoc.Generate(*root, true)
			for _, c := range changed {
				fmt.Println("perfdoc: rewrote", c)
			}
		} else {
			var problems []string
			problems, err = perfdoc.Check(*root)
			for _, p := range problems {
				fmt.Fprintln(os.Stderr, "perfdoc:", p)
			}
			if err == nil && len(problems) > 0 {
				err = fmt.Errorf("%d problems", len(problems))
			}
		}
	default:
		usage()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "perfdoc:", err)
		os.Exit(1)
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: perfdoc record -bench NAME [-label L] [-gobench] [-dir DIR] [-note TEXT] -- CMD [ARGS...] | generate [-root DIR] | check [-root DIR]")
	os.Exit(2)
}

func record(args []string) error {
	fs := flag.NewFlagSet("record", flag.ExitOnError)
	bench := fs.String("bench", "", "bench name (core, capi, python, node, ...)")
	label := fs.String("label", "", "optional part of the file name after the bench")
	goBench := fs.Bool("gobench", false, "read `go test -bench` result lines")
	dir := fs.String("dir", "bench/results", "results folder")
	note := fs.String("note", "", "free text stored in the file")
	_ = fs.Parse(args)
	cmdArgs := fs.Args()
	if *bench == "" || len(cmdArgs) == 0 {
		usage()
	}
	f := perfdoc.NewFile(*bench)
	f.Note = *note
	rec := perfdoc.NewRecorder(*goBench)
	cmd := exec.Command(cmdArgs[0], cmdArgs[1:]...)
	cmd.Stdin, cmd.Stderr = os.Stdin, os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	copyErr := rec.Copy(os.Stdout, out)
	if _, err := io.Copy(io.Discard, out); err != nil && copyErr == nil {
		copyErr = err
	}
	if err := cmd.Wait(); err != nil {
		return fmt.Errorf("%s: %w (no results file written)", cmdArgs[0], err)
	}
	if copyErr != nil {
		return fmt.Errorf("%v (no results file written)", copyErr)
	}
	f.Measures = rec.Measures()
	if len(f.Measures) == 0 {
		return fmt.Errorf("%s printed no samples (no results file written)", cmdArgs[0])
	}
	f.Settings = rec.Settings
	p, err := f.Finish(*dir, *label)
	if err != nil {
		return err
	}
	fmt.Println("results file:", filepath.Clean(p))
	return nil
}
