package main

import (
	"fmt"
	"strings"

	"github.com/krabka/krabka-coord/core/coord"
)

// renderConfigDoc writes docs/CONFIGURATION.md from coord.ConfigKeys.
func renderConfigDoc(*inputs) (string, error) {
	var b strings.Builder
	b.WriteString("# Configuration\n\n")
	b.WriteString("<!-- Generated from coord.ConfigKeys by `go generate ./...` (internal/gen). Do not edit. -->\n\n")
	b.WriteString("Every client (Go `coord.Config.Set`, C `krabka_conf_set`, Python and Node dictionaries) takes these\n")
	b.WriteString("properties. An unknown name is `UNKNOWN_CONFIG`; a value that does not parse or is out of range is\n")
	b.WriteString("`INVALID_CONFIG`, and the message names the key. `sasl.password` reads back as `[redacted]`.\n\n")
	b.WriteString("| Key | Type | Default | Meaning |\n|---|---|---|---|\n")
	keys := coord.ConfigKeys()
	if len(keys) == 0 {
		return "", fmt.Errorf("coord.ConfigKeys is empty")
	}
	for _, k := range keys {
		def := "`" + k.Default + "`"
		if k.Default == "" {
			def = "(empty)"
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s |\n", k.Name, k.Type, def, strings.ReplaceAll(k.Doc, "|", "\\|"))
	}
	b.WriteString("\nChecks across keys (made by `Validate` / `krabka_client_new`): `bootstrap.servers` is required;\n")
	b.WriteString("`krabka.renew.interval.ms` must be below `krabka.lease.ms` (three renewals per lease are advised);\n")
	b.WriteString("`krabka.lease.risk.margin.ms`, when set, must be below `krabka.lease.ms` - `krabka.renew.interval.ms`;\n")
	b.WriteString("`krabka.lease.stop.margin.ms`, when set, must be below it too and not above a `krabka.lease.risk.margin.ms` that is set;\n")
	b.WriteString("`sasl.username` is required with `SASL_PLAINTEXT` and `SASL_SSL`.\n")
	b.WriteString("\n## The in-process cluster: `bootstrap.servers=mem://NAME`\n\n")
	b.WriteString("`mem://NAME` as the only entry of `bootstrap.servers` makes the client join the in-process\n")
	b.WriteString("cluster NAME of its process (a test aid: docs/TESTING.md) instead of connecting to brokers.\n")
	b.WriteString("NAME is 1 to 64 bytes of ASCII letters, digits, `.`, `_` and `-`; any other name, or `mem://`\n")
	b.WriteString("beside a `host:port` entry, is `INVALID_CONFIG` naming `bootstrap.servers` and the bad character.\n")
	b.WriteString("Creating the client fails with `INVALID_CONFIG` when no cluster of that name exists in the\n")
	b.WriteString("process. The connection, security and producer settings do not apply to it; the lease,\n")
	b.WriteString("topic and role settings do.\n")
	return b.String(), nil
}
