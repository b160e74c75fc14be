package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// undoReport is the part of `toolhost undo --format json` the tests read.
type undoReport struct {
	BatchID       string `json:"batch_id"`
	CallID        string `json:"call_id"`
	CallJournalID string `json:"call_journal_id"`
	UndoCallID    string `json:"undo_call_id"`
	Files         []struct {
		Path   string `json:"path"`
		Action string `json:"action"`
	} `json:"files"`
}

// undo runs `toolhost undo --format json id` and decodes its report; it
// fails the test unless toolhost exits 0.
func (w *workspace) undo(t *testing.T, id string) undoReport {
	t.Helper()
	out, stderr, code := w.run(t, "undo", "--format", "json", id)
	if code != 0 {
		t.Fatalf("toolhost undo %s: exit %d\n%s", id, code, stderr)
	}
	var rep undoReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("toolhost undo %s: %v\n%s", id, err, out)
	}
	return rep
}

// mustCall runs `toolhost call` and fails the test unless the call
// succeeded.
func (w *workspace) mustCall(t *testing.T, tool, args string, extra ...string) {
	t.Helper()
	r, stderr, code := w.call(t, tool, args, extra...)
	if code != 0 || !r.OK {
		t.Fatalf("call %s: exit %d, %+v\n%s", tool, code, r.Error, stderr)
	}
}

// fileIs checks a workspace file's content and mode; content "" means
// the file must be absent.
func (w *workspace) fileIs(t *testing.T, name, content string, mode os.FileMode) {
	t.Helper()
	p := filepath.Join(w.dir, name)
	got, err := os.ReadFile(p)
	if content == "" {
		if !os.IsNotExist(err) {
			t.Errorf("%s exists (%q, %v), want it absent", name, got, err)
		}
		return
	}
	if err != nil || string(got) != content {
		t.Errorf("%s = %q (%v), want %q", name, got, err, content)
		return
	}
	if fi, err := os.Stat(p); err != nil || fi.Mode().Perm() != mode {
		t.Errorf("%s mode %v (%v), want %v", name, fi.Mode().Perm(), err, mode)
	}
}

func (w *workspace) chmod(t *testing.T, name string, mode os.FileMode) {
	t.Helper()
	if err := os.Chmod(filepath.Join(w.dir, name), mode); err != nil {
		t.Fatal(err)
	}
}

// Through the binary: write_file over a file, then
// `toolhost undo CALL` restores its bytes and mode; undoing the undo
// re-applies the write.
func TestUndoWrite(t *testing.T) {
	w := newWorkspace(t)
	w.file(t, "notes.txt", "old\n")
	w.chmod(t, "notes.txt", 0o640)
	w.mustCall(t, "read_file", `{"path": "notes.txt"}`, "--conversation", "u", "--id", "r1")
	w.mustCall(t, "write_file", `{"path": "notes.txt", "content": "new\n"}`, "--conversation", "u", "--id", "w1", "--allow", "write_file")
	w.fileIs(t, "notes.txt", "new\n", 0o640)

	out, stderr, code := w.run(t, "undo", "--dry-run", "w1")
	if code != 0 || !strings.Contains(out, "would change") || !strings.Contains(out, "restore "+filepath.Join(realDir(t, w.dir), "notes.txt")) {
		t.Fatalf("undo --dry-run: exit %d\n%s%s", code, out, stderr)
	}
	w.fileIs(t, "notes.txt", "new\n", 0o640)

	rep := w.undo(t, "w1")
	if rep.CallID != "w1" || len(rep.Files) != 1 || rep.Files[0].Action != "restore" || rep.UndoCallID == "" {
		t.Errorf("undo report %+v", rep)
	}
	w.fileIs(t, "notes.txt", "old\n", 0o640)

	again := w.undo(t, rep.UndoCallID)
	if len(again.Files) != 1 || again.Files[0].Action != "restore" {
		t.Errorf("undo of the undo: %+v", again)
	}
	w.fileIs(t, "notes.txt", "new\n", 0o640)
}

// An apply_patch of three files (LP1) is undone whole.
func TestUndoPatchOfThreeFiles(t *testing.T) {
	w := newWorkspace(t)
	files := map[string]string{"a.txt": "alpha\n", "sub/b.txt": "beta\n", "c.txt": "gamma\n"}
	for name, content := range files {
		w.file(t, name, content)
		w.mustCall(t, "read_file", jsonArgs(t, map[string]any{"path": name}), "--conversation", "p", "--id", "r-"+name)
	}
	patch := "LP1\nF a.txt\nR\nalpha\n.\nALPHA\n.\nF sub/b.txt\nE\nbeta\n.\nF c.txt\nB\nfirst\n.\nEND\n"
	w.mustCall(t, "apply_patch", jsonArgs(t, map[string]any{"patch": patch}), "--conversation", "p", "--id", "p1", "--allow", "apply_patch")
	w.fileIs(t, "a.txt", "ALPHA\n", 0o644)
	rep := w.undo(t, "p1")
	if len(rep.Files) != 3 {
		t.Errorf("undo restored %+v, want three files", rep.Files)
	}
	for name, content := range files {
		w.fileIs(t, name, content, 0o644)
	}
}

// After an edit outside toolhost, undo refuses with
// StaleFile naming the file, exits 1, and changes nothing.
func TestUndoRefusesAfterOutsideEdit(t *testing.T) {
	w := newWorkspace(t)
	w.file(t, "a.txt", "a0")
	w.mustCall(t, "read_file", `{"path": "a.txt"}`, "--conversation", "s", "--id", "r1")
	w.mustCall(t, "write_file", `{"path": "a.txt", "content": "a1"}`, "--conversation", "s", "--id", "w1", "--allow", "write_file")
	w.file(t, "a.txt", "edited by hand")
	_, stderr, code := w.run(t, "undo", "w1")
	if code != 1 || !strings.Contains(stderr, "StaleFile") || !strings.Contains(stderr, filepath.Join(realDir(t, w.dir), "a.txt")) || !strings.Contains(stderr, "nothing was changed") {
		t.Fatalf("undo after an outside edit: exit %d\n%s", code, stderr)
	}
	w.fileIs(t, "a.txt", "edited by hand", 0o644)
}

// Undo of a call that created a file removes it; undo of
// that undo creates it again.
func TestUndoRemovesCreatedFile(t *testing.T) {
	w := newWorkspace(t)
	w.mustCall(t, "write_file", `{"path": "made.txt", "content": "made\n"}`, "--id", "c1", "--allow", "write_file")
	fi, err := os.Stat(filepath.Join(w.dir, "made.txt"))
	if err != nil {
		t.Fatal(err)
	}
	rep := w.undo(t, "c1")
	if len(rep.Files) != 1 || rep.Files[0].Action != "remove" {
		t.Errorf("undo report %+v, want the file removed", rep)
	}
	w.fileIs(t, "made.txt", "", 0)
	w.undo(t, rep.UndoCallID)
	w.fileIs(t, "made.txt", "made\n", fi.Mode().Perm())
}

// A change whose previous content is larger than
// [journal] max_preimage_bytes is journaled as not undoable, and undo
// says so, naming the file and the key, changing nothing.
func TestUndoOverCapNotUndoable(t *testing.T) {
	w := newWorkspace(t).withConfig(t, "[journal]\nmax_preimage_bytes = 16\n")
	w.file(t, "big.txt", strings.Repeat("x", 100))
	w.mustCall(t, "read_file", `{"path": "big.txt"}`, "--conversation", "b", "--id", "r1")
	w.mustCall(t, "write_file", `{"path": "big.txt", "content": "small"}`, "--conversation", "b", "--id", "w1", "--allow", "write_file")
	_, stderr, code := w.run(t, "undo", "w1")
	if code != 1 || !strings.Contains(stderr, "max_preimage_bytes") || !strings.Contains(stderr, filepath.Join(realDir(t, w.dir), "big.txt")) {
		t.Fatalf("undo of a change over the cap: exit %d\n%s", code, stderr)
	}
	w.fileIs(t, "big.txt", "small", 0o644)
}

func realDir(t *testing.T, dir string) string {
	t.Helper()
	c, err := filepath.EvalSymlinks(dir)
	if err != nil {
		t.Fatal(err)
	}
	return c
}
