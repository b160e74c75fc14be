package journal

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// The pre-images of one change of several files are
// recorded in one transaction, the first per call and path kept; a file
// over the cap, or not read whole, is recorded as not undoable with the
// reason; postimages are recorded for all in one transaction, and
// BatchChanges names the call of each change.
func TestRecordPreimagesAndPostimages(t *testing.T) {
	j := openJournal(t, Memory, Options{MaxPreimageBytes: 8})
	ctx := context.Background()
	mustDo(t, j.BeginBatch(ctx, testBatch("b1", 2)))
	files := []FileBefore{
		{Path: "/r/a.txt", Exists: true, Mode: 0o640, Size: 3, Content: []byte("old")},
		{Path: "/r/new.txt"},
		{Path: "/r/empty.txt", Exists: true, Mode: 0o600}, // no content at all, nil
		{Path: "/r/big.bin", Exists: true, Mode: 0o644, Size: 100, Content: []byte("012345678")}, // cut at cap+1
	}
	ok, err := j.RecordPreimages(ctx, "b1", "b1-call-0", files)
	if err != nil {
		t.Fatal(err)
	}
	if !ok[0] || !ok[1] || !ok[2] || ok[3] {
		t.Fatalf("undoable = %v, want true, true, true, false", ok)
	}
	// A second change of a.txt by the same call keeps the first pre-image.
	if _, err := j.RecordPreimages(ctx, "b1", "b1-call-0", []FileBefore{{Path: "/r/a.txt", Exists: true, Size: 3, Content: []byte("mid")}}); err != nil {
		t.Fatal(err)
	}
	mustDo(t, j.RecordPostimages(ctx, "b1", "b1-call-0", []FileAfter{
		{Path: "/r/a.txt", Image: Image{Exists: true, Mode: 0o640, Size: 3, SHA256: "x"}},
		{Path: "/r/new.txt", Image: Image{Exists: true, Mode: 0o644, Size: 1, SHA256: "y"}},
	}))
	if got, err := j.PreimageContent(ctx, "b1", "b1-call-0", "/r/a.txt"); err != nil || !bytes.Equal(got, []byte("old")) {
		t.Errorf("pre-image of a.txt = %q, %v; want the first, old", got, err)
	}
	if got, err := j.PreimageContent(ctx, "b1", "b1-call-0", "/r/new.txt"); err != nil || got != nil {
		t.Errorf("pre-image of new.txt = %q, %v; want none (it did not exist)", got, err)
	}
	if got, err := j.PreimageContent(ctx, "b1", "b1-call-0", "/r/empty.txt"); err != nil || got == nil || len(got) != 0 {
		t.Errorf("pre-image of empty.txt = %q, %v; want empty content", got, err)
	}
	if _, err := j.PreimageContent(ctx, "b1", "b1-call-0", "/r/big.bin"); err == nil || !strings.Contains(err.Error(), "max_preimage_bytes (8)") {
		t.Errorf("pre-image of big.bin: %v, want not undoable naming the cap", err)
	}
	chs, err := j.BatchChanges(ctx, "b1")
	if err != nil || len(chs) != 4 {
		t.Fatalf("BatchChanges = %+v, %v; want four", chs, err)
	}
	if chs[0].CallID != "b1-call-0" || chs[0].Path != "/r/a.txt" || chs[0].Before.Mode != 0o640 || chs[0].After == nil || chs[0].After.SHA256 != "x" {
		t.Errorf("first change %+v", chs[0])
	}
	if chs[3].After != nil || chs[3].Undoable || chs[3].Before.Size != 100 {
		t.Errorf("big.bin change %+v, want no postimage, not undoable, size 100", chs[3])
	}
	// All or nothing: a postimage without a pre-image records none.
	err = j.RecordPostimages(ctx, "b1", "b1-call-1", []FileAfter{{Path: "/r/a.txt"}})
	if err == nil || !strings.Contains(err.Error(), "no previous content") {
		t.Errorf("postimage without pre-image: %v", err)
	}
	if _, err := j.RecordPreimages(ctx, "b1", "nope", files); err == nil || !strings.Contains(err.Error(), `no call "nope"`) {
		t.Errorf("pre-images of an unknown call: %v", err)
	}
}
