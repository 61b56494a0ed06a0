// Command krabka-coord is the operator's command line of krabka-coord: it
// inspects, watches, checks and exports the roles that programs built on the
// library (C, C++, Python, Node, Go) hold on a Kafka cluster.
//
//	krabka-coord [global flags] COMMAND [flags] [ARGS]
//
// Commands: describe, roles, watch, check, leave, fence, exporter, run, config,
// version, help. `krabka-coord help COMMAND` (or `COMMAND --help`) prints a command's
// flags and an example. docs/CLI.md documents every command and the exit
// codes.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
)

// version is set by build.sh from include/krabka_coord.h
// (-ldflags "-X main.version=...").
var version = "dev"

// Exit codes (docs/CLI.md lists them; `krabka-coord help` prints them).
const (
	exitOK       = 0 // success (check: no FAIL line)
	exitFailed   = 1 // the cluster answered an error, or could not be reached
	exitUsage    = 2 // bad command line: unknown command or flag, missing argument, bad property, bad name
	exitCheck    = 3 // check: at least one FAIL line
	exitRefused  = 4 // leave: the member holds the lease and --yes was not given; fence: no --yes
	exitNotFound = 5 // leave: the member is not registered in the role; fence: no lease, or --to not registered
)

const exitCodesHelp = `Exit codes:
  0  success (check: no FAIL line; watch and exporter: stopped by SIGINT/SIGTERM)
  1  the command failed: the cluster answered an error or could not be reached
  2  usage: unknown command or flag, missing argument, bad property value, bad role or member name
  3  check: at least one FAIL line
  4  leave: refused, the member holds the lease and --yes was not given; fence: --yes not given
  5  leave: the member is not registered in the role; fence: the role has no lease or
     the --to member is not registered (nothing written in either case)
  run: CMD's own exit code, 126/127 CMD cannot start, 200-202 the role was lost (krabka-coord help run)
`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// env is what every command gets: its streams, its options and the context
// that ends on SIGINT/SIGTERM.
type env struct {
	ctx    context.Context
	stdout io.Writer
	stderr io.Writer
	o      *options
	// dash: the index in the positional arguments of the first one that
	// came after "--" (-1 without "--"); run needs it to find CMD.
	dash int
}

func (e *env) errorf(format string, args ...any) {
	fmt.Fprintf(e.stderr, "krabka-coord: "+format+"\n", args...)
}

// usageError is a bad command line: printed with a pointer to --help, exit 2.
type usageError struct{ msg string }

func (u *usageError) Error() string { return u.msg }

func usagef(format string, args ...any) error { return &usageError{fmt.Sprintf(format, args...)} }

type command struct {
	name     string
	args     string // the positional part of the synopsis
	summary  string
	help     string // what it does, in a few lines
	example  string
	flags    func(fs *flag.FlagSet, o *options)
	run      func(e *env, args []string) int
	noConfig bool // version, help, config do not need a cluster
}

var commands []*command

func findCommand(name string) *command {
	for _, c := range commands {
		if c.name == name {
			return c
		}
	}
	return nil
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	o := newOptions()
	// Global flags (the configuration ones) before the command.
	gfs := flag.NewFlagSet("krabka-coord", flag.ContinueOnError)
	gfs.SetOutput(io.Discard)
	o.configFlags(gfs)
	if err := gfs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			printMainHelp(stdout)
			return exitOK
		}
		fmt.Fprintf(stderr, "krabka-coord: %v\n(krabka-coord --help lists the commands)\n", err)
		return exitUsage
	}
	rest := gfs.Args()
	if len(rest) == 0 {
		printMainHelp(stderr)
		return exitUsage
	}
	name := rest[0]
	if name == "--version" || name == "-version" {
		name = "version"
	}
	c := findCommand(name)
	if c == nil {
		fmt.Fprintf(stderr, "krabka-coord: unknown command %q (krabka-coord --help lists the commands)\n", name)
		return exitUsage
	}
	fs := flag.NewFlagSet("krabka-coord "+c.name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	if !c.noConfig {
		o.configFlags(fs)
	}
	if c.flags != nil {
		c.flags(fs, o)
	}
	pos, dash, err := parseArgs(fs, rest[1:])
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			printCommandHelp(stdout, c)
			return exitOK
		}
		fmt.Fprintf(stderr, "krabka-coord %s: %v\n(krabka-coord %s --help shows the flags and an example)\n", c.name, err, c.name)
		return exitUsage
	}
	e := &env{ctx: ctx, stdout: stdout, stderr: stderr, o: o, dash: dash}
	return c.run(e, pos)
}

// parseInterleaved parses flags anywhere among the positional arguments
// (`describe ROLE -o json` as well as `describe -o json ROLE`); everything
// after "--" is positional.
func parseInterleaved(fs *flag.FlagSet, args []string) ([]string, error) {
	pos, _, err := parseArgs(fs, args)
	return pos, err
}

// parseArgs is parseInterleaved that also returns the index in pos of the
// first argument after "--" (-1 when there was no "--").
func parseArgs(fs *flag.FlagSet, args []string) ([]string, int, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, -1, err
		}
		rest := fs.Args()
		consumed := len(args) - len(rest)
		if consumed > 0 && args[consumed-1] == "--" {
			return append(pos, rest...), len(pos), nil
		}
		if len(rest) == 0 {
			return pos, -1, nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

func printMainHelp(w io.Writer) {
	fmt.Fprintf(w, `krabka-coord %s: inspect, watch, check and export the roles of krabka-coord on a Kafka cluster

Usage: krabka-coord [config flags] COMMAND [flags] [ARGS]

Commands:
`, version)
	for _, c := range commands {
		fmt.Fprintf(w, "  %-9s %s\n", c.name, c.summary)
	}
	fmt.Fprintf(w, `
Configuration flags (before or after the command; applied in the order given, later wins):
%s
Examples:
  krabka-coord -b kafka-1:9092 describe controller
  krabka-coord -F client.properties check --prefix prod.
  krabka-coord help watch

%s`, configFlagsHelp, exitCodesHelp)
}

const configFlagsHelp = `  -b HOST:PORT[,...]   bootstrap.servers
  -X KEY=VALUE         any property of the library (docs/CONFIGURATION.md), repeatable,
                       e.g. -X security.protocol=SASL_SSL -X krabka.role.prefix=prod.
  -F FILE              a Java-style properties file of the same properties (KEY=VALUE lines, # comments)
`

func printCommandHelp(w io.Writer, c *command) {
	fmt.Fprintf(w, "Usage: krabka-coord %s", c.name)
	if !c.noConfig {
		fmt.Fprint(w, " [config flags]")
	}
	fs := flag.NewFlagSet(c.name, flag.ContinueOnError)
	if c.flags != nil {
		c.flags(fs, newOptions())
	}
	hasFlags := false
	fs.VisitAll(func(*flag.Flag) { hasFlags = true })
	if hasFlags {
		fmt.Fprint(w, " [flags]")
	}
	if c.args != "" {
		fmt.Fprint(w, " "+c.args)
	}
	fmt.Fprintf(w, "\n\n%s\n", strings.TrimSpace(c.help))
	if hasFlags {
		fmt.Fprintln(w, "\nFlags:")
		fs.SetOutput(w)
		fs.VisitAll(func(f *flag.Flag) {
			name, usage := flag.UnquoteUsage(f)
			dash := "--"
			if len(f.Name) == 1 {
				dash = "-"
			}
			left := dash + f.Name
			if name != "" {
				left += " " + name
			}
			def := ""
			if f.DefValue != "" && f.DefValue != "false" {
				def = " (default " + f.DefValue + ")"
			}
			fmt.Fprintf(w, "  %-22s %s%s\n", left, usage, def)
		})
	}
	if !c.noConfig {
		fmt.Fprintf(w, "\nConfiguration flags:\n%s", configFlagsHelp)
	}
	fmt.Fprintf(w, "\nExample:\n%s\n", indent(strings.TrimSpace(c.example), "  "))
	fmt.Fprintf(w, "\n%s", exitCodesHelp)
}

func indent(s, pre string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		if l != "" {
			lines[i] = pre + l
		}
	}
	return strings.Join(lines, "\n")
}

func init() {
	commands = append(commands,
		describeCommand, rolesCommand, watchCommand, checkCommand, leaveCommand, fenceCommand, exporterCommand, groupCommand,
		runCommand,
		&command{
			name: "config", summary: "print the effective configuration (secrets redacted)",
			help: `Prints every property of the library with the value the flags give it, one
KEY=VALUE per line, as the commands would use it. Secrets (sasl.password and
every other password property) print as [redacted]. Nothing touches the network.`,
			example: `krabka-coord -F client.properties -X client.id=ops config`,
			run:     runConfig,
		},
		&command{
			name: "version", summary: "print the version", noConfig: true,
			help:    "Prints the version of krabka-coord and of the Go toolchain and Kafka client it was built with.",
			example: "krabka-coord version",
			run:     runVersion,
		},
		&command{
			name: "help", args: "[COMMAND]", summary: "help on a command", noConfig: true,
			help:    "Prints the list of commands, or one command's flags and an example.",
			example: "krabka-coord help check",
			run: func(e *env, args []string) int {
				if len(args) == 0 {
					printMainHelp(e.stdout)
					return exitOK
				}
				c := findCommand(args[0])
				if c == nil {
					e.errorf("unknown command %q", args[0])
					return exitUsage
				}
				printCommandHelp(e.stdout, c)
				return exitOK
			},
		},
	)
}
