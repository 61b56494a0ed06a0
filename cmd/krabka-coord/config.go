package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/krabka/krabka-coord/core"
	"github.com/krabka/krabka-coord/core/coord"
	"github.com/krabka/krabka-coord/core/kafka"
)

// options holds every flag of every command.
type options struct {
	// settings: -X, -F and -b in command-line order (later wins).
	settings []setting

	output   string // -o: table or json
	yes      bool   // leave --yes
	prefix   string // check --prefix
	role     string // check --role
	listen   string // exporter --listen
	allRoles bool   // exporter --all-roles
	interval string // exporter --interval, roles refresh
	groups   string // exporter --group, comma separated
	renewals bool   // watch --renewals

	run runOptions // run's flags (run.go)
}

type setting struct {
	kind  byte   // 'X', 'F', 'b'
	value string // KEY=VALUE, a file name, or the servers
}

func newOptions() *options {
	return &options{output: "table", listen: "127.0.0.1:9464", interval: "30s", role: "krabka-check"}
}

type settingFlag struct {
	o    *options
	kind byte
}

func (s settingFlag) String() string { return "" }
func (s settingFlag) Set(v string) error {
	s.o.settings = append(s.o.settings, setting{s.kind, v})
	return nil
}

// configFlags registers -X, -F and -b.
func (o *options) configFlags(fs *flag.FlagSet) {
	fs.Var(settingFlag{o, 'X'}, "X", "a library `KEY=VALUE` property (repeatable)")
	fs.Var(settingFlag{o, 'F'}, "F", "a properties `FILE`")
	fs.Var(settingFlag{o, 'b'}, "b", "bootstrap.servers `HOST:PORT[,...]`")
}

// isSecret reports a property whose value is never printed.
func isSecret(name string) bool {
	for _, k := range coord.ConfigKeys() {
		if k.Name == name {
			return k.Type == "password"
		}
	}
	return strings.Contains(name, "password")
}

// config builds the library configuration from the flags with the library's
// own parser (coord.Config.Set, coord.Config.Validate): the same property
// names, the same validation and the same messages as every binding. The
// error names where the bad setting came from, never a secret's value.
func (o *options) config() (coord.Config, error) {
	cfg := coord.DefaultConfig()
	for i, s := range o.settings {
		switch s.kind {
		case 'b':
			if err := cfg.Set("bootstrap.servers", s.value); err != nil {
				return cfg, usagef("-b: %v", err)
			}
		case 'X':
			k, v, ok := strings.Cut(s.value, "=")
			k = strings.TrimSpace(k)
			if !ok || k == "" {
				// Never echo the argument: it may be a secret typed without its key.
				return cfg, usagef("-X (setting %d): expected KEY=VALUE", i+1)
			}
			if err := cfg.Set(k, v); err != nil {
				return cfg, usagef("-X %s: %v", k, err)
			}
		case 'F':
			if err := applyPropertiesFile(&cfg, s.value); err != nil {
				return cfg, err
			}
		}
	}
	if err := cfg.Validate(); err != nil {
		if len(cfg.BootstrapServers) == 0 {
			return cfg, usagef("%v (give -b HOST:PORT, -X bootstrap.servers=... or a -F file that sets it)", err)
		}
		return cfg, usagef("%v", err)
	}
	return cfg, nil
}

// applyPropertiesFile reads a Java-style properties file: KEY=VALUE or
// KEY:VALUE or KEY VALUE lines, '#' and '!' comments, blank lines, a trailing
// backslash continues a line. Every key goes through coord.Config.Set.
func applyPropertiesFile(cfg *coord.Config, path string) error {
	f, err := os.Open(path)
	if err != nil {
		return usagef("-F: %v", err)
	}
	defer f.Close()
	props, err := parseProperties(f, path)
	if err != nil {
		return err
	}
	for _, p := range props {
		if err := cfg.Set(p.key, p.value); err != nil {
			return usagef("%s:%d: %v", path, p.line, err)
		}
	}
	return nil
}

type property struct {
	key, value string
	line       int
}

func parseProperties(r io.Reader, name string) ([]property, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	var out []property
	n := 0
	for sc.Scan() {
		n++
		start := n
		line := strings.TrimLeft(sc.Text(), " \t\f")
		if line == "" || line[0] == '#' || line[0] == '!' {
			continue
		}
		// Continuation lines: an odd number of trailing backslashes.
		for continued(line) && sc.Scan() {
			n++
			line = line[:len(line)-1] + strings.TrimLeft(sc.Text(), " \t\f")
		}
		if continued(line) {
			line = line[:len(line)-1]
		}
		i := strings.IndexAny(line, "=: \t")
		if i < 0 {
			return nil, usagef("%s:%d: a property line needs KEY=VALUE", name, start)
		}
		key := line[:i]
		rest := strings.TrimLeft(line[i:], " \t\f")
		if rest != "" && (rest[0] == '=' || rest[0] == ':') {
			rest = strings.TrimLeft(rest[1:], " \t\f")
		}
		out = append(out, property{key: unescape(key), value: unescape(strings.TrimRight(rest, " \t\r")), line: start})
	}
	if err := sc.Err(); err != nil {
		return nil, usagef("%s: %v", name, err)
	}
	return out, nil
}

func continued(line string) bool {
	k := 0
	for i := len(line) - 1; i >= 0 && line[i] == '\\'; i-- {
		k++
	}
	return k%2 == 1
}

// unescape handles the escapes of Java properties files that matter for
// these values: \\, \=, \:, \space, \t, \n.
func unescape(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) {
			i++
			switch s[i] {
			case 't':
				b.WriteByte('\t')
			case 'n':
				b.WriteByte('\n')
			default:
				b.WriteByte(s[i])
			}
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// connect builds the Kafka transport and a client over it. Nothing touches
// the network yet.
func (e *env) connect() (*kafka.Transport, *coord.Client, int) {
	cfg, err := e.o.config()
	if err != nil {
		e.errorf("%v", err)
		return nil, nil, exitUsage
	}
	t, err := kafka.New(cfg)
	if err != nil {
		e.errorf("%v", err)
		return nil, nil, exitUsage
	}
	c, err := coord.NewClient(cfg, t, core.SystemClock)
	if err != nil {
		t.Close()
		e.errorf("%v", err)
		return nil, nil, exitUsage
	}
	return t, c, exitOK
}

// requireTopic refuses to go on when the coordination topic does not exist:
// the read-only commands never create it (the library would, on first use).
func (e *env) requireTopic(ctx context.Context, t *kafka.Transport) int {
	ti, err := t.Topic(ctx)
	if err != nil {
		e.errorf("%v", err)
		return exitFailed
	}
	if !ti.Exists {
		e.errorf("the coordination topic %s does not exist on this cluster: no member has run here yet, or krabka.topic is wrong (nothing was created)", ti.Name)
		return exitFailed
	}
	return exitOK
}

// connectExisting is connect followed by requireTopic (the read-only
// commands and leave): the client is closed again when the topic is missing.
func (e *env) connectExisting() (*coord.Client, int) {
	t, c, code := e.connect()
	if code != exitOK {
		return nil, code
	}
	if code := e.requireTopic(e.ctx, t); code != exitOK {
		c.Close()
		return nil, code
	}
	return c, exitOK
}

// roleArgs validates every ROLE argument; exitUsage (after an error line)
// when one is not a legal role name.
func (e *env) roleArgs(args []string) ([]core.Role, int) {
	roles := make([]core.Role, 0, len(args))
	for _, a := range args {
		r, err := roleArg(a)
		if err != nil {
			e.errorf("%v", err)
			return nil, exitUsage
		}
		roles = append(roles, r)
	}
	return roles, exitOK
}

// roleArg validates a role name with the library's rules.
func roleArg(s string) (core.Role, error) {
	r, err := core.NewRole(s)
	if err != nil {
		return r, usagef("role %q: %v", s, err)
	}
	return r, nil
}

func runConfig(e *env, args []string) int {
	if len(args) != 0 {
		e.errorf("config takes no argument")
		return exitUsage
	}
	cfg, err := e.o.config()
	if err != nil {
		e.errorf("%v", err)
		return exitUsage
	}
	for _, k := range coord.ConfigKeys() {
		v, err := cfg.Get(k.Name)
		if err != nil {
			continue
		}
		if isSecret(k.Name) && v != "" {
			v = "[redacted]"
		}
		fmt.Fprintf(e.stdout, "%s=%s\n", k.Name, v)
	}
	return exitOK
}

func runVersion(e *env, args []string) int {
	franz := "unknown"
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			if d.Path == "github.com/twmb/franz-go" {
				franz = d.Version
			}
		}
	}
	fmt.Fprintf(e.stdout, "krabka-coord %s (%s, franz-go %s, %s/%s)\n", version, runtime.Version(), franz, runtime.GOOS, runtime.GOARCH)
	return exitOK
}
