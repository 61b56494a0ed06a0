package demo

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// DefaultHosts are the three members: the C device host, the Python host
// and the Node host, in that order (the C host leads first).
func DefaultHosts(repo, lib, cHost string) []Host {
	env := []string{
		"KRABKA_COORD_LIBRARY=" + lib,
		"PYTHONPATH=" + filepath.Join(repo, "bindings", "python", "src"),
		"LD_LIBRARY_PATH=" + strings.TrimSuffix(filepath.Dir(lib)+":"+os.Getenv("LD_LIBRARY_PATH"), ":"),
		"PYTHONUNBUFFERED=1",
	}
	c := []string{cHost}
	// The C host prints with stdio; a pipe would make it block-buffered.
	if sb, err := exec.LookPath("stdbuf"); err == nil {
		c = []string{sb, "-oL", "-eL", cHost}
	}
	return []Host{
		{Member: "c-host", Lang: "C", Argv: c, Env: env},
		{Member: "python-host", Lang: "Python", Argv: []string{"python3", filepath.Join(repo, "demo", "hosts", "host.py")}, Env: env},
		{Member: "node-host", Lang: "Node", Argv: []string{"node", filepath.Join(repo, "demo", "hosts", "host.mjs")}, Env: env},
	}
}
