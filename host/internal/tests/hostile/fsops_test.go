package hostile_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolhost/toolhost/host/internal/engine"
	"github.com/toolhost/toolhost/host/internal/inside"
	"github.com/toolhost/toolhost/internal/testplugin"
)

// fsopsWorld is a workspace, toolhost's state directory outside it, and
// the built binary, for attacks on delete_file and move_file through
// `toolhost call`, each call approved with --allow as an operator who
// trusts the model would.
type fsopsWorld struct {
	bin, dir, state, home string
}

func fsopsNew(t *testing.T) *fsopsWorld {
	t.Helper()
	w := &fsopsWorld{bin: toolhostBinary(t), home: t.TempDir()}
	var err error
	if w.dir, err = filepath.EvalSymlinks(t.TempDir()); err != nil {
		t.Fatal(err)
	}
	w.state = filepath.Join(w.home, "state")
	for name, content := range map[string]string{
		".git/config": "[core]\n\tbare = false\n", ".git/HEAD": "ref: refs/heads/main\n", "toolhost.toml": "[tools]\n",
		"hook.sh": "#!/bin/sh\necho pwned\n", "notes.txt": "notes\n", "vendor/lib/.git/config": "[core]\n", "vendor/lib/a.go": "package a\n",
	} {
		fsopsWrite(t, filepath.Join(w.dir, name), content)
	}
	return w
}

func fsopsWrite(t *testing.T, p, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// call runs `toolhost call tool --args args --allow tool` and returns
// its result record and exit code.
func (w *fsopsWorld) call(t *testing.T, tool, args string) (ok bool, kind, message string, code int) {
	t.Helper()
	cmd := exec.Command(w.bin, "--state-dir", w.state, "--plugins", realPlugins(t), "call", tool, "--args", args, "--allow", tool)
	cmd.Dir = w.dir
	cmd.Env = append(os.Environ(), "HOME="+w.home, "XDG_CONFIG_HOME="+filepath.Join(w.home, ".config"),
		"XDG_STATE_HOME="+filepath.Join(w.home, ".state"), "TOOLHOST_CACHE_DIR="+testplugin.CacheDir(t))
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		code = ee.ExitCode()
	case err != nil:
		t.Fatal(err)
	}
	var r struct {
		OK    bool `json:"ok"`
		Error *struct {
			Kind    string `json:"kind"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal(out.Bytes(), &r); err != nil {
		t.Fatalf("call %s %s: exit %d, not a result: %v\n%s%s", tool, args, code, err, out.String(), errb.String())
	}
	if r.Error != nil {
		kind, message = r.Error.Kind, r.Error.Message
	}
	return r.OK, kind, message, code
}

// same checks that a file still holds content.
func (w *fsopsWorld) same(t *testing.T, name, content string) {
	t.Helper()
	if b, err := os.ReadFile(filepath.Join(w.dir, name)); err != nil || string(b) != content {
		t.Errorf("%s = %q (%v), want it untouched: %q", name, b, err, content)
	}
}

func (w *fsopsWorld) absent(t *testing.T, name string) {
	t.Helper()
	if _, err := os.Lstat(filepath.Join(w.dir, name)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s exists (%v), want nothing there", name, err)
	}
}

// A model told to move git's config out of .git and back (to edit it in
// between), to move a script over toolhost's configuration or into
// .git/hooks, or to carry a nested repository's git directory away with
// its tree, is refused: nothing moves into or out of a place no tool may
// write, and nothing is changed.
func TestFSOpsMovesNothingIntoOrOutOfProtectedPlaces(t *testing.T) {
	w := fsopsNew(t)
	for _, tc := range []struct {
		name, args string
		says       []string
	}{
		{"git's config out", `{"source": ".git/config", "destination": "config.txt"}`, []string{".git/config"}},
		{"git's directory away", `{"source": ".git", "destination": "git-backup"}`, []string{".git"}},
		{"over toolhost.toml", `{"source": "notes.txt", "destination": "toolhost.toml", "overwrite": true}`, []string{"toolhost.toml"}},
		{"a hook into .git/hooks", `{"source": "hook.sh", "destination": ".git/hooks/pre-commit"}`, []string{".git/hooks/pre-commit"}},
		{"a tree holding a repository", `{"source": "vendor", "destination": "third_party"}`, []string{"vendor/lib/.git", "nothing was changed"}},
		{"a file into a nested git directory", `{"source": "hook.sh", "destination": "vendor/lib/.git/hooks/post-checkout"}`, []string{".git"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ok, kind, msg, code := w.call(t, "move_file", tc.args)
			if ok || code != 1 || kind != "SandboxViolation" {
				t.Fatalf("move_file %s: ok %v, exit %d, %s: %s; want a SandboxViolation", tc.args, ok, code, kind, msg)
			}
			for _, s := range tc.says {
				if !strings.Contains(msg, s) {
					t.Errorf("the refusal %q does not name %s", msg, s)
				}
			}
		})
	}
	w.same(t, ".git/config", "[core]\n\tbare = false\n")
	w.same(t, "toolhost.toml", "[tools]\n")
	w.same(t, "hook.sh", "#!/bin/sh\necho pwned\n")
	w.same(t, "vendor/lib/.git/config", "[core]\n")
	for _, name := range []string{"config.txt", "git-backup", ".git/hooks", "third_party", "vendor/lib/.git/hooks"} {
		w.absent(t, name)
	}
}

// delete_file of a link a model planted to toolhost's state directory
// removes the link only: the journal and everything else in the state
// directory stay. A recursive deletion of a tree holding a repository's
// git directory is refused, naming it, and deletes nothing.
func TestFSOpsDeleteTakesTheLinkNotTheStateDirectory(t *testing.T) {
	w := fsopsNew(t)
	// A first call makes the state directory and its journal.
	if ok, kind, msg, _ := w.call(t, "read_file", `{"path": "notes.txt"}`); !ok {
		t.Fatalf("read_file: %s: %s", kind, msg)
	}
	journal := filepath.Join(w.state, "journal.db")
	if _, err := os.Stat(journal); err != nil {
		t.Fatalf("no journal in the state directory: %v", err)
	}
	if err := os.Symlink(w.state, filepath.Join(w.dir, "cache")); err != nil {
		t.Fatal(err)
	}
	ok, kind, msg, _ := w.call(t, "delete_file", `{"path": "cache", "recursive": true}`)
	if !ok {
		t.Fatalf("delete_file of a link: %s: %s", kind, msg)
	}
	w.absent(t, "cache")
	if _, err := os.Stat(journal); err != nil {
		t.Errorf("the state directory's journal is gone after deleting a link to it: %v", err)
	}

	ok, kind, msg, _ = w.call(t, "delete_file", `{"path": "vendor", "recursive": true}`)
	if ok || kind != "SandboxViolation" || !strings.Contains(msg, "vendor/lib/.git") {
		t.Fatalf("delete_file of a tree holding a repository: ok %v, %s: %s; want a SandboxViolation naming vendor/lib/.git", ok, kind, msg)
	}
	w.same(t, "vendor/lib/a.go", "package a\n")
	w.same(t, "vendor/lib/.git/config", "[core]\n")

	// The state directory by its own path is out of reach altogether.
	ok, kind, _, _ = w.call(t, "delete_file", `{"path": "`+w.state+`", "recursive": true}`)
	if ok || kind != "SandboxViolation" {
		t.Errorf("delete_file of the state directory itself: ok %v, %s; want a SandboxViolation", ok, kind)
	}
	if _, err := os.Stat(journal); err != nil {
		t.Errorf("the journal is gone: %v", err)
	}
}

// A model asking to delete a file, or to move one over another, is put
// to a person with the host's own account of what would go (never the
// plugin's word): the size, line count and first lines of the file, its
// invisible characters written out as an approval's diff shows them,
// and whether undo could bring it back.
func TestFSOpsApprovalShowsWhatWouldGo(t *testing.T) {
	h, root := openHost(t, nil)
	fsopsWrite(t, filepath.Join(root, "notes.txt"), "first line\r\nsecond\u202eline\n")
	c := confirmation(t, h, call("d1", "delete_file", `{"path": "notes.txt"}`))
	a := h.Inside(inside.Key{}).Engine.Approval(context.Background(), c, engine.ApprovalOptions{})
	if a.Diff == nil || a.Diff.Unavailable != "" {
		t.Fatalf("the approval of delete_file has no dry run: %+v", a.Diff)
	}
	text := a.DiffText(200, 50)
	for _, want := range []string{"would delete notes.txt: a file of 26 bytes, 2 lines", "first line␍", "second<U+202E>line", "undo"} {
		if !strings.Contains(text, want) {
			t.Errorf("the approval's account %q does not show %q", text, want)
		}
	}
	if b, err := os.ReadFile(filepath.Join(root, "notes.txt")); err != nil || len(b) != 26 {
		t.Errorf("the dry run behind the approval changed notes.txt: %q, %v", b, err)
	}
}
