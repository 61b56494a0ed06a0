package perfdoc

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// figure matches a measured quantity in prose: a number (not the tail of
// a word such as p99) with a unit of time, rate, memory or share.
var figure = regexp.MustCompile(`(?:^|[^\w.])\d[\d,]*(?:\.\d+)?\s?(?:ms|µs|us|ns|s|%|/s|commands/s|MiB|KiB|GiB|M records/s|records/s)(?:[^\w]|$)`)

// cite is a reference to a results file; history marks figures kept as
// history with the commit they were taken at.
var (
	cite    = regexp.MustCompile(`bench/results/([A-Za-z0-9._-]+\.json)`)
	history = regexp.MustCompile(`[(;]\s*history,\s+commits?\s+[0-9a-f]{7,40}\b`)
	code    = regexp.MustCompile("`[^`]*`")
)

// Check reports every problem of the documents under root: a stale
// generated table, a cited results file that does not exist, and a block
// of text outside the generated tables that quotes a figure but names no
// results file (nor is labelled as history with its commit). In README.md
// only the Performance section is checked.
func Check(root string) ([]string, error) {
	files, err := Load(filepath.Join(root, ResultsDir))
	if err != nil {
		return nil, err
	}
	var problems []string
	changed, err := Generate(root, false)
	if err != nil {
		return nil, err
	}
	for _, c := range changed {
		problems = append(problems, c+": generated tables are stale: run make perf-doc")
	}
	exists := map[string]bool{}
	for _, f := range files {
		exists[f.Name] = true
	}
	// Files of the older schema may be cited too.
	if ents, err := os.ReadDir(filepath.Join(root, ResultsDir)); err == nil {
		for _, e := range ents {
			exists[e.Name()] = true
		}
	}
	for _, d := range Docs {
		b, err := os.ReadFile(filepath.Join(root, d.Path))
		if err != nil {
			return nil, err
		}
		text := string(b)
		if d.Path == "README.md" {
			text = section(text, "## Performance")
			if text == "" {
				problems = append(problems, "README.md: no ## Performance section")
				continue
			}
			if !strings.Contains(text, "<!-- perfdoc:begin readme -->") {
				problems = append(problems, "README.md: the Performance section has no generated readme table")
			}
		}
		problems = append(problems, checkText(d.Path, text, exists)...)
	}
	return problems, nil
}

// section is the text from the heading line to the next heading of the
// same level (exclusive), or "".
func section(doc, heading string) string {
	i := strings.Index(doc, "\n"+heading)
	if i < 0 {
		return ""
	}
	rest := doc[i+1:]
	if j := strings.Index(rest[len(heading):], "\n## "); j >= 0 {
		return rest[:len(heading)+j+1]
	}
	return rest
}

func checkText(path, text string, exists map[string]bool) []string {
	var problems []string
	for _, m := range cite.FindAllStringSubmatch(text, -1) {
		if !exists[m[1]] {
			problems = append(problems, fmt.Sprintf("%s: cites bench/results/%s, which does not exist", path, m[1]))
		}
	}
	covered := func(s string) bool { return cite.MatchString(s) || history.MatchString(s) }
	bs := blocks(region.ReplaceAllString(text, ""))
	for i, blk := range bs {
		plain := code.ReplaceAllString(blk.text, "")
		f := figure.FindString(plain)
		if f == "" {
			continue
		}
		// A table is covered by its own text or by the paragraph before it
		// (its caption).
		if covered(blk.text) || (strings.HasPrefix(strings.TrimSpace(blk.text), "|") && i > 0 && covered(bs[i-1].text)) {
			continue
		}
		problems = append(problems, fmt.Sprintf("%s:%d: figure %q names no results file (cite bench/results/FILE.json, or label it \"(history, commit HASH)\")",
			path, blk.line, strings.Trim(f, " \t\n(,;:.")))
	}
	return problems
}

type block struct {
	line int
	text string
}

// blocks splits markdown into paragraphs, list items and table rows,
// leaving out fenced code. Line numbers count from the checked text.
func blocks(text string) []block {
	var out []block
	var cur []string
	start := 0
	flush := func() {
		if len(cur) > 0 {
			out = append(out, block{start, strings.Join(cur, "\n")})
			cur = nil
		}
	}
	fence := false
	for i, l := range strings.Split(text, "\n") {
		t := strings.TrimSpace(l)
		switch {
		case strings.HasPrefix(t, "```"):
			flush()
			fence = !fence
		case fence:
		case t == "" || strings.HasPrefix(t, "#"):
			flush()
			if t != "" {
				out = append(out, block{i + 1, t})
			}
		case strings.HasPrefix(t, "|"):
			// A table is one block: its rows until the first other line.
			if len(cur) == 0 || !strings.HasPrefix(strings.TrimSpace(cur[0]), "|") {
				flush()
				start = i + 1
			}
			cur = append(cur, l)
		case strings.HasPrefix(t, "- ") || strings.HasPrefix(t, "* ") || isNumbered(t):
			flush()
			start = i + 1
			cur = append(cur, l)
		default:
			if len(cur) > 0 && strings.HasPrefix(strings.TrimSpace(cur[0]), "|") {
				flush()
			}
			if len(cur) == 0 {
				start = i + 1
			}
			cur = append(cur, l)
		}
	}
	flush()
	return out
}

var numbered = regexp.MustCompile(`^\d+\. `)

func isNumbered(t string) bool { return numbered.MatchString(t) }
