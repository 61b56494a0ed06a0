package coord

import (
	"fmt"
	"strings"
)

// MemScheme prefixes the one bootstrap.servers entry that names an
// in-process cluster (core/memtransport, docs/TESTING.md) instead of
// brokers: bootstrap.servers=mem://NAME.
const MemScheme = "mem://"

// MaxMemNameBytes is the longest in-process cluster name.
const MaxMemNameBytes = 64

// ValidateMemName checks the name of an in-process cluster: 1 to
// MaxMemNameBytes bytes of ASCII letters, digits, '.', '_' and '-'. The
// error matches ErrInvalidConfig and names the name and its first bad
// character.
func ValidateMemName(name string) error {
	switch {
	case name == "":
		return WrapError(ErrInvalidConfig, nil, "in-process cluster name is empty (mem://NAME needs a name)")
	case len(name) > MaxMemNameBytes:
		return WrapError(ErrInvalidConfig, nil, "in-process cluster name %q is %d bytes, longer than %d", name, len(name), MaxMemNameBytes)
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return WrapError(ErrInvalidConfig, nil, "in-process cluster name %q has the character %q at byte %d: only ASCII letters, digits, '.', '_' and '-' are allowed", name, rune(c), i)
		}
	}
	return nil
}

// parseMemBootstrap parses the entries of bootstrap.servers when one names
// an in-process cluster: it must be the only entry and carry a valid name.
// ok reports whether any entry has the mem:// scheme.
func parseMemBootstrap(v string, entries []string) (name string, ok bool, err error) {
	for _, s := range entries {
		if strings.HasPrefix(s, MemScheme) {
			ok = true
			name = strings.TrimPrefix(s, MemScheme)
		}
	}
	if !ok {
		return "", false, nil
	}
	if len(entries) != 1 {
		return "", true, invalid("bootstrap.servers", v, fmt.Sprintf("%sNAME (an in-process cluster) must be the only entry", MemScheme))
	}
	if err := ValidateMemName(name); err != nil {
		return "", true, invalid("bootstrap.servers", v, err.Error())
	}
	return name, true, nil
}

// MemCluster returns the name of the in-process cluster the configuration
// names (bootstrap.servers=mem://NAME), or ok false when it names brokers.
func (c Config) MemCluster() (name string, ok bool) {
	if len(c.BootstrapServers) == 1 && strings.HasPrefix(c.BootstrapServers[0], MemScheme) {
		return strings.TrimPrefix(c.BootstrapServers[0], MemScheme), true
	}
	return "", false
}
