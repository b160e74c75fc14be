package host_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolhost/toolhost/host"
	"github.com/toolhost/toolhost/host/internal/config"
	"github.com/toolhost/toolhost/host/internal/engine"
	"github.com/toolhost/toolhost/host/internal/inside"
)

// undoHost opens a journaled host whose root holds files (name ->
// content, each mode 0640), with new files approved without asking.
func undoHost(t *testing.T, files map[string]string, mutate func(*config.Config)) (*host.Host, string) {
	t.Helper()
	h, root := openJournaled(t, t.TempDir(), mutate)
	root, err := filepath.EvalSymlinks(root)
	if err != nil {
		t.Fatal(err)
	}
	for name, content := range files {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o640); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, 0o640); err != nil {
			t.Fatal(err)
		}
	}
	return h, root
}

// run runs calls as batch id, every call approved, and fails the test on
// a failed call.
func runBatch(t *testing.T, h *host.Host, id string, calls ...engine.Call) {
	t.Helper()
	_, results := h.Process(context.Background(), engine.Batch{ID: id, Conversation: "undo", Calls: calls}, host.BatchOptions{Approver: approveAll()})
	for _, r := range results {
		if !r.OK {
			t.Fatalf("batch %s: call %s failed: %+v", id, r.ID, r.Error)
		}
	}
}

func writeCall(t *testing.T, id, path, content string) engine.Call {
	t.Helper()
	args, err := json.Marshal(map[string]string{"path": path, "content": content})
	if err != nil {
		t.Fatal(err)
	}
	return engine.Call{ID: id, Name: "write_file", Arguments: args}
}

func readCall(id, path string) engine.Call {
	return call(id, "read_file", `{"path": "`+path+`"}`)
}

// wantFile checks a file's content and mode; content "" means absent.
func wantFile(t *testing.T, path, content string, mode os.FileMode) {
	t.Helper()
	got, err := os.ReadFile(path)
	if content == "" {
		if !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s exists (%q, %v), want it absent", path, got, err)
		}
		return
	}
	if err != nil || string(got) != content {
		t.Errorf("%s = %q (%v), want %q", path, got, err, content)
		return
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != mode {
		t.Errorf("%s mode %v (%v), want %v", path, fi.Mode().Perm(), err, mode)
	}
}

// A write journals the file's previous content; undo of
// the call restores its bytes and mode, and reports what it did.
func TestUndoWriteRestoresBytesAndMode(t *testing.T) {
	h, root := undoHost(t, map[string]string{"notes.txt": "old\n"}, nil)
	runBatch(t, h, "batch_w", readCall("r1", "notes.txt"), writeCall(t, "w1", "notes.txt", "new content\n"))
	notes := filepath.Join(root, "notes.txt")
	wantFile(t, notes, "new content\n", 0o640)

	dry, err := h.Undo(context.Background(), "w1", host.UndoOptions{DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(dry.Files) != 1 || dry.Files[0].Action != host.UndoRestore || dry.UndoCallID != "" {
		t.Errorf("dry run = %+v, want one file to restore and nothing journaled", dry)
	}
	wantFile(t, notes, "new content\n", 0o640)

	rep, err := h.Undo(context.Background(), "w1", host.UndoOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if rep.BatchID != "batch_w" || rep.CallID != "w1" || len(rep.Files) != 1 || rep.Files[0].Path != notes || rep.UndoCallID == "" {
		t.Errorf("report = %+v", rep)
	}
	wantFile(t, notes, "old\n", 0o640)
	b, err := h.Inside(inside.Key{}).Journal.Batch(context.Background(), rep.UndoBatchID)
	if err != nil || len(b.Calls) != 1 || b.Calls[0].Tool != "undo" || !strings.Contains(string(b.Calls[0].Arguments), `"target":"w1"`) ||
		b.Calls[0].Result == nil || !b.Calls[0].Result.OK || len(b.Calls[0].Changes) != 1 {
		t.Errorf("the undo's journal record: %+v, %v", b, err)
	}
}

// Apply_patch changing three files in one commit is
// undone whole, by its call id or by its batch id.
func TestUndoPatchOfThreeFiles(t *testing.T) {
	for _, by := range []string{"p1", "batch_p"} {
		t.Run(by, func(t *testing.T) {
			files := map[string]string{"a.txt": "alpha\n", "sub/b.txt": "beta\n", "c.txt": "gamma\n"}
			h, root := undoHost(t, files, nil)
			patch := "LP1\nF a.txt\nR\nalpha\n.\nALPHA\n.\nF sub/b.txt\nR\nbeta\n.\nBETA\n.\nF c.txt\nT\nmore\n.\nEND\n"
			args, _ := json.Marshal(map[string]string{"patch": patch})
			runBatch(t, h, "batch_p", readCall("r1", "a.txt"), readCall("r2", "sub/b.txt"), readCall("r3", "c.txt"),
				engine.Call{ID: "p1", Name: "apply_patch", Arguments: args})
			wantFile(t, filepath.Join(root, "sub/b.txt"), "BETA\n", 0o640)
			rep, err := h.Undo(context.Background(), by, host.UndoOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if len(rep.Files) != 3 {
				t.Errorf("undo restored %+v, want three files", rep.Files)
			}
			for name, content := range files {
				wantFile(t, filepath.Join(root, name), content, 0o640)
			}
		})
	}
}

// A file edited outside toolhost after the call makes
// undo refuse with a StaleFileError naming it, and nothing changes: not
// the edited file, not the other file the batch changed.
func TestUndoRefusesStaleFile(t *testing.T) {
	h, root := undoHost(t, map[string]string{"a.txt": "a0", "b.txt": "b0"}, nil)
	runBatch(t, h, "batch_s", readCall("r1", "a.txt"), readCall("r2", "b.txt"),
		writeCall(t, "w1", "a.txt", "a1"), writeCall(t, "w2", "b.txt", "b1"))
	b := filepath.Join(root, "b.txt")
	if err := os.WriteFile(b, []byte("edited by hand"), 0o640); err != nil {
		t.Fatal(err)
	}
	_, err := h.Undo(context.Background(), "batch_s", host.UndoOptions{})
	var stale *host.StaleFileError
	if !errors.As(err, &stale) || len(stale.Files) != 1 || stale.Files[0].Path != b || !strings.Contains(err.Error(), "content changed since") {
		t.Fatalf("undo after an outside edit: %v, want a StaleFileError naming %s", err, b)
	}
	wantFile(t, filepath.Join(root, "a.txt"), "a1", 0o640)
	wantFile(t, b, "edited by hand", 0o640)
	// A mode changed since is a change too.
	if err := os.WriteFile(b, []byte("b1"), 0o640); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(b, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Undo(context.Background(), "batch_s", host.UndoOptions{}); !errors.As(err, &stale) || !strings.Contains(err.Error(), "mode changed") {
		t.Fatalf("undo after a chmod: %v, want a StaleFileError saying the mode changed", err)
	}
	wantFile(t, filepath.Join(root, "a.txt"), "a1", 0o640)
}

// Undo of a call that created a file removes it; undo
// of that undo creates it again with its content and mode.
func TestUndoCreatedFileAndUndoOfUndo(t *testing.T) {
	h, root := undoHost(t, nil, nil)
	runBatch(t, h, "batch_c", writeCall(t, "w1", "made.txt", "made\n"))
	made := filepath.Join(root, "made.txt")
	fi, err := os.Stat(made)
	if err != nil {
		t.Fatal(err)
	}
	mode := fi.Mode().Perm()
	rep, err := h.Undo(context.Background(), "w1", host.UndoOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Files) != 1 || rep.Files[0].Action != host.UndoRemove {
		t.Errorf("report %+v, want the file removed", rep.Files)
	}
	wantFile(t, made, "", 0)
	again, err := h.Undo(context.Background(), rep.UndoCallID, host.UndoOptions{})
	if err != nil {
		t.Fatalf("undo of the undo: %v", err)
	}
	if len(again.Files) != 1 || again.Files[0].Action != host.UndoRestore {
		t.Errorf("undo of the undo: %+v, want the file restored", again.Files)
	}
	wantFile(t, made, "made\n", mode)
	// And the undo of the undo of the undo removes it again.
	if _, err := h.Undo(context.Background(), again.UndoBatchID, host.UndoOptions{}); err != nil {
		t.Fatal(err)
	}
	wantFile(t, made, "", 0)
}

// A change whose previous content is over [journal]
// max_preimage_bytes is journaled as not undoable, and undo refuses,
// naming the file, the cap and the key.
func TestUndoOverCapIsNotUndoable(t *testing.T) {
	big := strings.Repeat("x", 100)
	h, root := undoHost(t, map[string]string{"big.txt": big}, func(c *config.Config) { c.Journal.MaxPreimageBytes = 16 })
	runBatch(t, h, "batch_big", readCall("r1", "big.txt"), writeCall(t, "w1", "big.txt", "small"))
	path := filepath.Join(root, "big.txt")
	ch, err := h.Inside(inside.Key{}).Journal.Changes(context.Background(), "batch_big", "w1")
	if err != nil || len(ch) != 1 || ch[0].Undoable || ch[0].Before.Size != 100 {
		t.Fatalf("journaled change %+v, %v; want one, not undoable, of 100 bytes", ch, err)
	}
	_, err = h.Undo(context.Background(), "w1", host.UndoOptions{})
	if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "max_preimage_bytes") || !strings.Contains(err.Error(), "16") {
		t.Fatalf("undo of a change over the cap: %v, want a refusal naming %s, the cap and max_preimage_bytes", err, path)
	}
	wantFile(t, path, "small", 0o640)
}

// Undo writes only where a tool may write now: a path
// outside the roots is refused, naming it, and nothing changes.
func TestUndoOutsideRootsRefused(t *testing.T) {
	state := t.TempDir()
	h, root := openJournaled(t, state, nil)
	runBatch(t, h, "batch_o", writeCall(t, "w1", "x.txt", "x"))
	other := openState(t, t.TempDir(), state)
	defer other.Close(context.Background())
	root, _ = filepath.EvalSymlinks(root)
	x := filepath.Join(root, "x.txt")
	_, err := other.Undo(context.Background(), "w1", host.UndoOptions{})
	if err == nil || !strings.Contains(err.Error(), x) || !strings.Contains(err.Error(), "outside the allowed roots") {
		t.Fatalf("undo outside the roots: %v, want a refusal naming %s", err, x)
	}
	if got, err := os.ReadFile(x); err != nil || string(got) != "x" {
		t.Errorf("%s = %q (%v) after a refused undo, want x", x, got, err)
	}
}

// A write whose previous content the journal cannot
// record is refused: the call fails naming its id and the path, and the
// file is not changed. The failure is a trigger in the real journal
// file, so the batch itself is recorded and only the pre-image fails.
func TestWriteRefusedWhenPreimageCannotBeRecorded(t *testing.T) {
	h, root := undoHost(t, nil, nil)
	if err := os.WriteFile(filepath.Join(root, "keep.txt"), []byte("kept"), 0o644); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite", h.Inside(inside.Key{}).Journal.Path())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`CREATE TRIGGER refuse_preimages BEFORE INSERT ON preimages BEGIN SELECT RAISE(ABORT, 'injected: the disk refused'); END`); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		id   string
		call engine.Call
	}{
		{"w1", writeCall(t, "w1", "keep.txt", "overwritten")},
		{"p1", call("p1", "apply_patch", `{"patch": "LP1\nF keep.txt\nR\nkept\n.\npatched\n.\nEND\n"}`)},
	} {
		_, results := h.Process(context.Background(), engine.Batch{ID: "batch_" + tc.id, Conversation: "undo",
			Calls: []engine.Call{readCall("r-"+tc.id, "keep.txt"), tc.call}}, host.BatchOptions{Approver: approveAll()})
		r := results[1]
		if r.OK || r.Error == nil || !strings.Contains(r.Error.Message, "call "+tc.id) || !strings.Contains(r.Error.Message, "keep.txt") ||
			!strings.Contains(r.Error.Message, "injected: the disk refused") || !strings.Contains(r.Error.Message, "Nothing was written") {
			t.Errorf("%s with a journal refusing pre-images: %+v, want a failure naming the call, the path and why", tc.id, r.Error)
		}
		if got, _ := os.ReadFile(filepath.Join(root, "keep.txt")); string(got) != "kept" {
			t.Errorf("%s: keep.txt = %q, want it unchanged", tc.id, got)
		}
	}
}
