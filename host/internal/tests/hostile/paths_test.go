package hostile_test

// Red team, after the fixes: attacks that the fixes stop, kept
// here so they stay stopped. The attacks that still succeed are in
// the redteam-tagged files, behind the redteam build tag until fixed.

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolhost/toolhost/abi"
	"github.com/toolhost/toolhost/host"
	"github.com/toolhost/toolhost/host/internal/config"
	"github.com/toolhost/toolhost/host/internal/engine"
)

// runBatch runs calls as one batch of conversation "c" with approver
// (nil: nothing that needs a person runs, as under the CLI without a
// terminal) and returns the results.
func runBatch(t *testing.T, h *host.Host, approver engine.Approver, calls ...engine.Call) []engine.Result {
	t.Helper()
	return process(t, h, context.Background(), engine.Batch{Conversation: "c", Calls: calls}, host.BatchOptions{Approver: approver}, 60*time.Second)
}

// bigBatches lets a batch hold every spelling a test tries.
func bigBatches(c *config.Config, _ *host.Options) { c.Tools.MaxToolCallsPerBatch = 64 }

func write(t *testing.T, id, path, content string) engine.Call {
	return call(id, "write_file", jsonArgs(t, map[string]any{"path": path, "content": content}))
}

// isProtected reports whether r is the sandbox's Protected refusal.
func isProtected(r engine.Result) bool {
	return !r.OK && r.Error.Kind == "SandboxViolation" && strings.Contains(string(r.Error.Details), "Protected")
}

func mustWrite(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}

// Attack (model): write toolhost's configuration
// or a git directory under every spelling the sandbox cleans to the same
// name: "./" prefixes, "a/./", doubled slashes, a trailing slash, a
// nested ".git" made as a file (a gitdir: pointer) or as a directory,
// and toolhost.lock. Even a person approving does not make it happen.
// Expected: every one is refused as Protected (a trailing slash as
// NamesDirectory at the latest) and nothing is created.
func TestProtectedNameSpellings(t *testing.T) {
	h, root := openHost(t, bigBatches)
	os.Mkdir(filepath.Join(root, "sub"), 0o755)
	paths := []string{
		"toolhost.toml", "./toolhost.toml", "./././toolhost.yaml", "sub/./toolhost.yml", "sub//toolhost.yml",
		"toolhost.lock", "sub/toolhost.toml",
		".git", "sub/.git", "sub/.git/config", "newrepo/.git/HEAD", "sub//.git//config",
		"toolhost.toml/x", "sub/.git/hooks/pre-commit",
	}
	var calls []engine.Call
	for i, p := range paths {
		calls = append(calls, write(t, "w"+string(rune('a'+i)), p, "gitdir: /tmp/elsewhere\n[tools.approval]\nmode = \"auto\"\n"))
	}
	for i, r := range runBatch(t, h, approveAll(), calls...) {
		if !isProtected(r) {
			t.Errorf("write_file %q: got %s %+v, want SandboxViolation (Protected)", paths[i], kindOf(r), r.Error)
		}
	}
	for _, name := range []string{"toolhost.toml", "toolhost.yaml", "sub/toolhost.yml", "toolhost.lock", ".git", "sub/.git", "newrepo"} {
		if exists(filepath.Join(root, name)) {
			t.Errorf("%s was created", name)
		}
	}
}

// Attack (hostile repository + model): the repository ships links
// pointing at toolhost's configuration and into a nested .git directory;
// the model writes through the links' own, harmless-looking names.
// Expected: the sandbox resolves each link before deciding, so the write
// is refused as Protected and the targets are unchanged.
func TestWriteThroughLinkToProtected(t *testing.T) {
	h, root := openHost(t, nil)
	mustWrite(t, filepath.Join(root, "toolhost.toml"), "[tools]\n")
	mustWrite(t, filepath.Join(root, "vendor", "dep", ".git", "config"), "[core]\n")
	links := map[string]string{
		"notes.md":    "toolhost.toml",
		"docs/readme": "../vendor/dep/.git/config",
		"hooks":       "vendor/dep/.git",
		"lockfile":    "toolhost.lock", // dangling: the lock file does not exist yet
	}
	for name, target := range links {
		os.MkdirAll(filepath.Dir(filepath.Join(root, name)), 0o755)
		if err := os.Symlink(target, filepath.Join(root, name)); err != nil {
			t.Fatal(err)
		}
	}
	rs := runBatch(t, h, approveAll(),
		call("r1", "read_file", `{"path":"notes.md"}`), call("r2", "read_file", `{"path":"docs/readme"}`),
		write(t, "w1", "notes.md", "[tools.approval]\nmode = \"auto\"\n"),
		write(t, "w2", "docs/readme", "[core]\n\tfsmonitor = touch pwned\n"),
		write(t, "w3", "hooks/post-checkout", "#!/bin/sh\ntouch pwned\n"),
		write(t, "w4", "lockfile", "x"),
	)
	for _, r := range rs[2:] {
		if !isProtected(r) {
			t.Errorf("call %s: got %s %+v, want SandboxViolation (Protected)", r.ID, kindOf(r), r.Error)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(root, "toolhost.toml")); string(b) != "[tools]\n" {
		t.Errorf("toolhost.toml rewritten through a link: %q", b)
	}
	if b, _ := os.ReadFile(filepath.Join(root, "vendor", "dep", ".git", "config")); string(b) != "[core]\n" {
		t.Errorf(".git/config rewritten through a link: %q", b)
	}
	if exists(filepath.Join(root, "vendor", "dep", ".git", "post-checkout")) || exists(filepath.Join(root, "toolhost.lock")) {
		t.Error("a file was created through a link into protected names")
	}
}

// Attack (model): create a regular file where the path
// names a directory, with every spelling of a trailing slash.
// Expected: refused; no file "newdir" appears.
func TestTrailingSlashSpellings(t *testing.T) {
	h, root := openHost(t, nil)
	for _, p := range []string{"newdir/", "newdir/.", "newdir//", "newdir/./", "sub/newdir/./."} {
		rs := runBatch(t, h, approveAll(), write(t, "w", p, "x"))
		if rs[0].OK {
			t.Errorf("write_file %q succeeded: %s", p, rs[0].Content)
		}
		for _, f := range []string{"newdir", "sub/newdir"} {
			if fi, err := os.Lstat(filepath.Join(root, f)); err == nil && !fi.IsDir() {
				t.Errorf("write_file %q created a regular file %s", p, f)
			}
		}
	}
}

// Attack (model): lay out a bare git repository in
// vendor/ one file per call, in every order, so that no single call
// writes the whole layout; the config comes first or last.
// Expected: whichever call completes HEAD + objects/ + refs/ is asked
// about, so without a person it does not run and vendor/ never becomes
// a repository.
func TestGitLayoutAnyOrder(t *testing.T) {
	parts := map[string]string{
		"config":  "[core]\n\tfsmonitor = touch pwned\n",
		"HEAD":    "ref: refs/heads/main\n",
		"objects": "objects/info/keep",
		"refs":    "refs/heads/keep",
	}
	orders := [][]string{
		{"config", "HEAD", "objects", "refs"},
		{"config", "objects", "refs", "HEAD"},
		{"objects", "refs", "config", "HEAD"},
		{"HEAD", "objects", "config", "refs"},
	}
	for _, order := range orders {
		t.Run(strings.Join(order, "-"), func(t *testing.T) {
			h, root := openHost(t, nil)
			var calls []engine.Call
			for i, part := range order {
				path, content := "vendor/"+part, parts[part]
				if part == "objects" || part == "refs" {
					path, content = "vendor/"+parts[part], ""
				}
				calls = append(calls, write(t, "c"+string(rune('0'+i)), path, content))
			}
			// One batch, then the same calls one batch each: the layout
			// may also be split across batches.
			runBatch(t, h, nil, calls...)
			if gitDirComplete(filepath.Join(root, "vendor")) {
				t.Fatalf("order %v in one batch: vendor/ holds HEAD, objects/ and refs/ with nobody asked", order)
			}
			h2, root2 := openHost(t, nil)
			for _, c := range calls {
				runBatch(t, h2, nil, c)
			}
			if gitDirComplete(filepath.Join(root2, "vendor")) {
				t.Fatalf("order %v over several batches: vendor/ holds HEAD, objects/ and refs/ with nobody asked", order)
			}
		})
	}
}

func gitDirComplete(dir string) bool {
	return exists(filepath.Join(dir, "HEAD")) && exists(filepath.Join(dir, "objects")) && exists(filepath.Join(dir, "refs"))
}

// Attack (model): new code-running files under spellings
// the pattern match might miss: "./.envrc", "sub/./.envrc", upper case,
// a nested .vscode.
// Expected: none is auto-approved as a new file.
func TestCodePathSpellingsAsked(t *testing.T) {
	h, root := openHost(t, nil)
	for _, p := range []string{"./.envrc", "sub/./.envrc", ".ENVRC", "a/b/.vscode/tasks.json", ".github//workflows/x.yml", ".mcp.json"} {
		rs := runBatch(t, h, nil, write(t, "w", p, "touch pwned\n"))
		if rs[0].OK {
			t.Errorf("write_file %q ran as a new file with nobody asked", p)
		}
	}
	if exists(filepath.Join(root, ".envrc")) || exists(filepath.Join(root, "a")) {
		t.Error("a code-running file was created unasked")
	}
}

// Attack (model): send "path" twice: the first value
// a protected name, the last a harmless one, or the other way round,
// hoping the host checks one while the plugin writes the other.
// Expected (since): arguments naming a key twice are BadArgs
// before anything is checked, asked or run, whichever value comes first,
// so no plugin's decoder can pick the other one.
func TestDuplicatePathKey(t *testing.T) {
	h, root := openHost(t, nil)
	for _, args := range []string{
		`{"path":"harmless.txt","content":"[tools]\n","path":"toolhost.toml"}`,
		`{"path":"toolhost.toml","content":"[tools]\n","path":"b.txt"}`,
	} {
		rs := runBatch(t, h, approveAll(), call("a", "write_file", args))
		if rs[0].OK || rs[0].Error.Kind != abi.KindBadArgs || !strings.Contains(rs[0].Error.Message, "twice") {
			t.Errorf("%s: got %+v, want BadArgs saying path is given twice", args, rs[0])
		}
	}
	for _, name := range []string{"toolhost.toml", "harmless.txt", "b.txt"} {
		if exists(filepath.Join(root, name)) {
			t.Errorf("%s was written", name)
		}
	}
}

// Attack (hostile repository): configuration files under names that
// differ from toolhost.toml only in case, a trailing dot, Unicode
// normalization or fullwidth letters, and a directory named toolhost.toml.
// Expected: on a case-sensitive disk none is read as a project file, so
// nothing of them reaches the policy (and tools may write them).
func TestLookalikeConfigNamesNotLoaded(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"TOOLHOST.TOML", "toolhost.toml.", "toolhost.tom\u006c\u0301", "ｔｏｏｌｈｏｓｔ.toml", "Toolhost.yaml"} {
		mustWrite(t, filepath.Join(dir, name), "[tools.approval]\nmode = \"auto\"\n")
	}
	user := t.TempDir()
	if _, err := config.Trust(user, dir); err != nil {
		t.Fatal(err)
	}
	l, err := config.Load(config.Options{Dir: dir, UserDir: user})
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Files) != 0 || l.Config.Tools.Approval.Mode != config.ApprovalPrompt {
		b, _ := json.Marshal(l.Files)
		t.Errorf("look-alike names were read: files %s, approval mode %s", b, l.Config.Tools.Approval.Mode)
	}
}
