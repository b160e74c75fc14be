package docs

// The README and docs/*.md mark what a reader can run as written, with the
// fenced code block's info string:
//
//	```sh runnable            a shell block: run with sh -e
//	```json file=patch.json   a file's contents: written to patch.json
//	```sh runnable needs=make,sandbox
//	                          a block that needs more than toolhost and Go:
//	                          "make" (make on $PATH), "sandbox" (toolhost
//	                          sandbox doctor says run_command can confine)
//
// TestRunnableExamples runs each document's marked blocks in order, in a
// scratch directory of the document's own (a file block writes its file
// there, relative to it; each sh block starts there), with a home of its
// own and the toolhost under test first on $PATH, its plugins beside it.
// A failing block fails the document, naming the block's line and showing
// its output (sh -x: each command as it ran). Every block of a document
// shares its directory, so later blocks see what earlier ones made.
//
// What is not marked is not run: blocks that start a server (make serve,
// toolhost serve) and the curl commands that talk to one, other programs'
// configuration, output shown for reference. A document whose blocks need
// what this machine lacks is skipped, saying what is missing, unless CI
// is set: there a missing need fails.

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	toml "github.com/pelletier/go-toml/v2"
	yaml "go.yaml.in/yaml/v3"
)

// blockTimeout bounds one block: the examples are meant to take seconds;
// building a plugin with a cold Go cache is the slowest of them.
const blockTimeout = 3 * time.Minute

func TestRunnableExamples(t *testing.T) {
	root := repoRoot()
	for _, rel := range markdownFiles(t, false) {
		d := parse(t, root, rel)
		var marked []block
		for _, b := range d.blocks {
			if b.runnable || b.file != "" {
				marked = append(marked, b)
			}
		}
		if len(marked) == 0 {
			continue
		}
		t.Run(rel, func(t *testing.T) {
			t.Parallel()
			if missing := missingNeeds(t, marked); missing != "" {
				if required() {
					t.Fatalf("%s: %s (CI is set, so the examples must run)", rel, missing)
				}
				t.Skipf("%s: %s", rel, missing)
			}
			dir := t.TempDir()
			work := filepath.Join(dir, "work")
			home := filepath.Join(dir, "home")
			for _, p := range []string{work, home} {
				if err := os.MkdirAll(p, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			env := exampleEnv(home)
			for _, b := range marked {
				if b.file != "" {
					writeBlockFile(t, rel, work, b)
					continue
				}
				if b.lang != "sh" {
					t.Fatalf("%s:%d: only sh blocks can be runnable, not %q", rel, b.line, b.lang)
				}
				runBlock(t, rel, work, env, b)
			}
		})
	}
}

// runBlock runs one sh block in dir and fails the test, showing the
// block's line and output, when it fails.
func runBlock(t *testing.T, rel, dir string, env []string, b block) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), blockTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "sh", "-e", "-x", "-c", b.body)
	cmd.Dir = dir
	cmd.Env = env
	cmd.WaitDelay = 5 * time.Second // a background process keeping the pipe open
	start := time.Now()
	out, err := cmd.CombinedOutput()
	if err != nil {
		if ctx.Err() != nil {
			err = errors.Join(err, ctx.Err())
		}
		t.Fatalf("%s:%d: the runnable block failed (%v) after %s:\n%s\noutput:\n%s", rel, b.line, err, time.Since(start).Round(time.Millisecond), b.body, out)
	}
	t.Logf("%s:%d: ran in %s", rel, b.line, time.Since(start).Round(time.Millisecond))
}

// writeBlockFile writes a file block's contents where it names, inside
// dir; a name leaving dir is a mistake in the document.
func writeBlockFile(t *testing.T, rel, dir string, b block) {
	t.Helper()
	name := filepath.FromSlash(b.file)
	if !filepath.IsLocal(name) {
		t.Fatalf("%s:%d: file=%s must be a relative path inside the example's directory", rel, b.line, b.file)
	}
	p := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(b.body), 0o644); err != nil {
		t.Fatal(err)
	}
}

// exampleEnv is the environment the examples run in: this process's
// (isolated by TestMain) with a home of the document's own, no toolhost
// setting but the shared compile cache, and the binary under test first
// on $PATH.
func exampleEnv(home string) []string {
	var env []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		switch {
		case name == "HOME", name == "PATH", strings.HasPrefix(name, "XDG_"):
		case strings.HasPrefix(name, "TOOLHOST_") && name != "TOOLHOST_CACHE_DIR":
		default:
			env = append(env, kv)
		}
	}
	return append(env,
		"HOME="+home,
		"XDG_CONFIG_HOME="+filepath.Join(home, ".config"),
		"XDG_STATE_HOME="+filepath.Join(home, ".local", "state"),
		"PATH="+filepath.Dir(toolhost)+string(os.PathListSeparator)+os.Getenv("PATH"),
	)
}

// required reports whether a missing need fails rather than skips.
func required() bool {
	v := os.Getenv("CI")
	return v != "" && v != "0" && v != "false"
}

// missingNeeds says what the blocks need that this machine lacks, and
// what provides it; "" when nothing is missing.
func missingNeeds(t *testing.T, blocks []block) string {
	t.Helper()
	seen := map[string]bool{}
	var missing []string
	for _, b := range blocks {
		for _, n := range b.needs {
			if seen[n] {
				continue
			}
			seen[n] = true
			switch n {
			case "make":
				if _, err := exec.LookPath("make"); err != nil {
					missing = append(missing, "line "+itoa(b.line)+" needs make on $PATH (apt-get install make)")
				}
			case "sandbox":
				if out, err := exec.Command(toolhost, "sandbox", "doctor").CombinedOutput(); err != nil {
					missing = append(missing, "line "+itoa(b.line)+" needs run_command's sandbox, which this kernel cannot give (toolhost sandbox doctor: "+lastLine(out)+")")
				}
			default:
				t.Fatalf("line %d: unknown need %q (known: make, sandbox)", b.line, n)
			}
		}
	}
	return strings.Join(missing, "; ")
}

func lastLine(b []byte) string {
	s := strings.TrimSpace(string(b))
	return s[strings.LastIndex(s, "\n")+1:]
}

// TestCodeBlocksParse checks that every JSON, TOML and YAML block of the
// documents is valid, runnable or not: a reader copies them into files.
func TestCodeBlocksParse(t *testing.T) {
	root := repoRoot()
	for _, rel := range markdownFiles(t, false) {
		for _, b := range parse(t, root, rel).blocks {
			var err error
			switch b.lang {
			case "json":
				var v any
				err = json.Unmarshal([]byte(b.body), &v)
			case "toml":
				var v map[string]any
				err = toml.Unmarshal([]byte(b.body), &v)
			case "yaml", "yml":
				var v any
				err = yaml.Unmarshal([]byte(b.body), &v)
			}
			if err != nil {
				t.Errorf("%s:%d: the %s block does not parse: %v", rel, b.line, b.lang, err)
			}
		}
	}
}

// TestReadmeIsShort keeps the README an orientation: what toolhost is,
// how to run it, how to connect an agent, the security model and the
// layout; the manual lives in docs/.
func TestReadmeIsShort(t *testing.T) {
	const limit = 250
	b, err := os.ReadFile(filepath.Join(repoRoot(), "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(strings.TrimSuffix(string(b), "\n"), "\n") + 1; n > limit {
		t.Errorf("README.md has %d lines, more than %d: move the detail to a file in docs/ and link it", n, limit)
	}
}

// TestDocsOpenWithSummary checks that each file in docs/ opens, below its
// title, with a paragraph saying what it covers, not a heading, list,
// table or code.
func TestDocsOpenWithSummary(t *testing.T) {
	for _, rel := range markdownFiles(t, false)[1:] {
		b, err := os.ReadFile(filepath.Join(repoRoot(), filepath.FromSlash(rel)))
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(string(b), "\n")
		if !strings.HasPrefix(lines[0], "# ") {
			t.Errorf("%s: the first line is %q, not a title (# ...)", rel, lines[0])
			continue
		}
		i := 1
		for i < len(lines) && strings.TrimSpace(lines[i]) == "" {
			i++
		}
		if i == len(lines) {
			t.Errorf("%s: nothing below the title", rel)
			continue
		}
		first := strings.TrimSpace(lines[i])
		for _, p := range []string{"#", "-", "*", "|", "```", ">", "1."} {
			if strings.HasPrefix(first, p) {
				t.Errorf("%s:%d: opens with %q; open with a paragraph summarising the file", rel, i+1, first)
				break
			}
		}
	}
}
