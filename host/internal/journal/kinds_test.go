package journal

import (
	"bytes"
	"context"
	"io/fs"
	"path/filepath"
	"testing"
)

// A tree a removal or a move takes is journaled entry by entry: a
// directory keeps its mode and kind, a link its target as its content,
// before and after alike, so that undo can tell what to recreate.
func TestRecordDirectoriesAndLinks(t *testing.T) {
	j := openJournal(t, Memory, Options{MaxPreimageBytes: 64})
	ctx := context.Background()
	mustDo(t, j.BeginBatch(ctx, testBatch("b1", 1)))
	files := []FileBefore{
		{Path: "/r/d", Exists: true, Mode: fs.ModeDir | 0o750},
		{Path: "/r/d/l", Exists: true, Mode: fs.ModeSymlink | 0o777, Size: 6, Content: []byte("../x/y")},
		{Path: "/r/d/f", Exists: true, Mode: 0o600, Size: 2, Content: []byte("hi")},
		{Path: "/r/new"},
	}
	ok, err := j.RecordPreimages(ctx, "b1", "b1-call-0", files)
	if err != nil || !ok[0] || !ok[1] || !ok[2] || !ok[3] {
		t.Fatalf("RecordPreimages = %v, %v; want all undoable", ok, err)
	}
	mustDo(t, j.RecordPostimages(ctx, "b1", "b1-call-0", []FileAfter{
		{Path: "/r/d"}, {Path: "/r/d/l"}, {Path: "/r/d/f"},
		{Path: "/r/new", Image: Image{Exists: true, Mode: fs.ModeDir | 0o700}},
	}))
	chs, err := j.Changes(ctx, "b1", "b1-call-0")
	if err != nil || len(chs) != 4 {
		t.Fatalf("Changes = %+v, %v", chs, err)
	}
	want := []fs.FileMode{fs.ModeDir | 0o750, fs.ModeSymlink | 0o777, 0o600, 0}
	for i, c := range chs {
		if c.Before.Mode != want[i] {
			t.Errorf("%s: before mode %v, want %v", c.Path, c.Before.Mode, want[i])
		}
	}
	if a := chs[3].After; a == nil || !a.Exists || a.Mode != fs.ModeDir|0o700 {
		t.Errorf("the directory made: after %+v, want a directory 0700", a)
	}
	if got, err := j.PreimageContent(ctx, "b1", "b1-call-0", "/r/d/l"); err != nil || !bytes.Equal(got, []byte("../x/y")) {
		t.Errorf("the link's pre-image = %q, %v; want its target", got, err)
	}
}

// A journal of schema version 2 is migrated: the pre-images it holds are
// files, as they were.
func TestMigrateVersion2(t *testing.T) {
	path := filepath.Join(t.TempDir(), "journal.db")
	db := rawDB(t, path)
	for _, q := range []string{migrations[0], migrations[1], "PRAGMA user_version = 2",
		`INSERT INTO batches (id, conversation, created_at, state, updated_at, owner_pid, owner_start) VALUES ('batch_1', 'c', 1, 'done', 1, 1, 0)`,
		`INSERT INTO calls (batch_id, seq, id, tool, arguments, disposition) VALUES ('batch_1', 0, 'call_1', 'write_file', '{}', 'execute')`,
		`INSERT INTO preimages (batch_id, call_id, path, seq, recorded_at, existed, mode, size, sha256, undoable, after_exists, after_mode, after_size, after_sha256)
			VALUES ('batch_1', 'call_1', '/w/a', 0, 1, 1, 420, 1, 'x', 1, 1, 420, 2, 'y')`,
	} {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()
	j := openJournal(t, path, Options{})
	chs, err := j.Changes(context.Background(), "batch_1", "call_1")
	if err != nil || len(chs) != 1 {
		t.Fatalf("Changes = %+v, %v", chs, err)
	}
	if c := chs[0]; c.Before.Mode != 0o644 || c.After == nil || c.After.Mode != 0o644 {
		t.Errorf("migrated change %+v (after %+v); want a file 0644 before and after", c, c.After)
	}
}
