//go:build linux

package confine

import (
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// control is ordinary work that must keep succeeding under confinement
// ("Done when", positive controls): a sandbox that breaks
// builds gets turned off.
type control struct {
	name    string
	world   world
	files   map[string]string // written into the root before the call
	command string            // a template (fixture.expand)
	output  []string          // the output must hold each (templates)
	check   func(t *testing.T, f *fixture, o *outcome)
}

var controls = []control{
	{
		// Offline, with a cache that starts empty: the standard library
		// is compiled into toolhost's per-root cache (item 3).
		name:  "go test of a module in the root",
		world: world{config: "[tools.timeouts]\nshell_commands_seconds = 900\n"},
		files: map[string]string{
			"go.mod":        "module example.com/m\n\ngo 1.21\n",
			"add.go":        "package m\n\n// Add adds.\nfunc Add(a, b int) int { return a + b }\n",
			"add_test.go":   "package m\n\nimport \"testing\"\n\nfunc TestAdd(t *testing.T) {\n\tif Add(1, 2) != 3 {\n\t\tt.Fatal(\"1+2\")\n\t}\n}\n",
			"cmd/x/main.go": "package main\n\nimport (\n\t\"fmt\"\n\n\t\"example.com/m\"\n)\n\nfunc main() { fmt.Println(m.Add(2, 2)) }\n",
		},
		command: `go test ./... && echo ` + probeEnd,
		output:  []string{"ok  \texample.com/m"},
		check: func(t *testing.T, f *fixture, o *outcome) {
			// The build cache went to toolhost's state directory: Go
			// writes trim.txt at the top of every cache it uses.
			if !holds(f.state, filepath.Join("go-build", "trim.txt")) {
				t.Errorf("no Go build cache (go-build/trim.txt) in toolhost's state directory %s (item 3)", f.state)
			}
		},
	},
	{
		name:    "git init, add and commit in the root",
		world:   world{noGit: true},
		command: `git init -q && git add . && git -c user.name=t -c user.email=t@e commit -qm x && echo ` + probeEnd,
		check:   func(t *testing.T, f *fixture, o *outcome) { wantCommit(t, f, "x") },
	},
	{
		// The repository exists: .git/config and .git/hooks are read-only,
		// the rest of .git must stay writable.
		name:    "git commit in the root's repository",
		command: `git add . && git -c user.name=t -c user.email=t@e commit -qm y && git status --short && echo ` + probeEnd,
		check:   func(t *testing.T, f *fixture, o *outcome) { wantCommit(t, f, "y") },
	},
	{
		name:    "python3 writes in the root",
		command: `python3 -c 'open("py.txt", "w").write("written by python")' && cat py.txt && echo ` + probeEnd,
		output:  []string{"written by python"},
		check:   func(t *testing.T, f *fixture, o *outcome) { wantFile(t, f, "py.txt", "written by python") },
	},
	{
		name:    "make writes in the root",
		files:   map[string]string{"Makefile": "out.txt: keep.txt\n\tcp keep.txt out.txt\n\techo made >> out.txt\n"},
		command: `make && echo ` + probeEnd,
		check:   func(t *testing.T, f *fixture, o *outcome) { wantFile(t, f, "out.txt", "kept in the root\nmade\n") },
	},
	{
		name:    "read /usr/share and /etc/os-release",
		command: `ls /usr/share && cat /etc/os-release && echo ` + probeEnd,
		output:  []string{"doc\n"},
		check: func(t *testing.T, f *fixture, o *outcome) {
			b, err := os.ReadFile("/etc/os-release")
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(o.output, string(b)) {
				t.Errorf("the output lacks /etc/os-release as the host has it:\n%s", o.output)
			}
		},
	},
	{
		name:    "the private TMPDIR is writable",
		command: `echo in-tmp > "$TMPDIR/{mark}" && cat "$TMPDIR/{mark}" && echo in-tmp > /tmp/{mark}-2 && cat /tmp/{mark}-2 && echo ` + probeEnd,
		output:  []string{"in-tmp\nin-tmp\n"},
		check: func(t *testing.T, f *fixture, o *outcome) {
			for _, p := range []string{filepath.Join(os.TempDir(), f.mark), filepath.Join(os.TempDir(), f.mark+"-2")} {
				if exists(p) {
					t.Errorf("%s is on the host: the command's tmp is the shared /tmp", p)
				}
			}
		},
	},
	{
		// read-only (item 6): the root is readable, nothing is writable
		// but the private tmp.
		name:    "read-only mode reads the root and writes nothing",
		world:   world{config: "[tools.run_command]\nsandbox = \"read-only\"\n", mode: "read-only"},
		command: `cat keep.txt; echo pwned > written.txt; echo pwned >> keep.txt; echo ` + probeEnd,
		output:  []string{"kept in the root\n"},
		check: func(t *testing.T, f *fixture, o *outcome) {
			if exists(filepath.Join(f.root, "written.txt")) {
				t.Errorf("read-only mode let the command create written.txt in the root: %s", o)
			}
			wantFile(t, f, "keep.txt", "kept in the root\n")
			wantHint(t, o, "written.txt")
		},
	},
}

func TestControls(t *testing.T) {
	for _, c := range controls {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, c.world)
			for name, content := range c.files {
				writeFile(t, filepath.Join(f.root, name), content)
			}
			o := f.run(t, c.command)
			ranToEnd(t, o)
			for _, want := range c.output {
				if want = f.expand(want); !strings.Contains(o.output, want) {
					t.Errorf("the output lacks %q: %s", want, o)
				}
			}
			if c.check != nil {
				c.check(t, f, o)
			}
		})
	}
}

// wantCommit checks, with the host's git, that the root's last commit is
// subject.
func wantCommit(t *testing.T, f *fixture, subject string) {
	t.Helper()
	out, err := exec.Command("git", "-C", f.root, "log", "-1", "--format=%s").CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != subject {
		t.Errorf("git log in the root: %v, %q; want the commit %q", err, out, subject)
	}
}

// wantFile checks that the root's file name holds content on the host.
func wantFile(t *testing.T, f *fixture, name, content string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(f.root, name))
	if err != nil || string(b) != content {
		t.Errorf("%s on the host: %v, %q; want %q", name, err, b, content)
	}
}

// holds reports whether a file whose path ends in suffix lies under dir.
func holds(dir, suffix string) bool {
	found := false
	filepath.WalkDir(dir, func(p string, _ fs.DirEntry, err error) error {
		if err == nil && strings.HasSuffix(p, string(filepath.Separator)+suffix) {
			found = true
			return filepath.SkipAll
		}
		return nil
	})
	return found
}
