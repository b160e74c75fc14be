package readcache

import (
	"crypto/sha256"
	"encoding/hex"
	"testing"
	"time"
)

// FR-TOOL-PATCH-02c: what a cache gives to store is what was recorded
// since it was last stored, never what it merged from storage; merging
// keeps the newer read of a path.
func TestUnsavedAndMerge(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	a, b := sha256.Sum256([]byte("a")), sha256.Sum256([]byte("b"))
	c := New()
	c.Record("/w/x.txt", a, t0)
	got, mark := c.Unsaved()
	if len(got) != 1 || got[0].Path != "/w/x.txt" {
		t.Fatalf("Unsaved = %+v, want the one read", got)
	}
	c.Record("/w/y.txt", a, t0) // recorded while the first was being stored
	c.Saved(mark)
	if got, _ := c.Unsaved(); len(got) != 1 || got[0].Path != "/w/y.txt" {
		t.Fatalf("Unsaved after Saved = %+v, want only the read recorded since", got)
	}
	c.Merge([]Entry{{Path: "/w/x.txt", SHA256: hexSum(b), ReadAt: t0.Add(time.Minute)}, {Path: "/w/z.txt", SHA256: hexSum(a), ReadAt: t0.Add(-time.Minute)}})
	for _, tt := range []struct {
		path       string
		sum        [32]byte
		read, same bool
	}{
		{"/w/x.txt", b, true, true}, // another process's newer read wins
		{"/w/z.txt", a, true, true},
		{"/w/none", a, false, false},
	} {
		if read, same := c.Matches(tt.path, tt.sum); read != tt.read || same != tt.same {
			t.Errorf("Matches(%s) = %v,%v; want %v,%v", tt.path, read, same, tt.read, tt.same)
		}
	}
	if got, _ := c.Unsaved(); len(got) != 1 {
		t.Errorf("Unsaved after Merge = %+v: merged entries are stored already", got)
	}
}

func hexSum(sum [32]byte) string { return hex.EncodeToString(sum[:]) }

// The generation moves when a path's content changes, not when the same
// content is read again (a call compares it with the generation it began at).
func TestGeneration(t *testing.T) {
	c := New()
	a, b := sha256.Sum256([]byte("a")), sha256.Sum256([]byte("b"))
	now := time.Now()
	c.Record("/w/x", a, now)
	start := c.Generation()
	c.Record("/w/x", a, now.Add(time.Second)) // read again, same content
	c.Record("/w/y", a, now)                  // another file
	if c.ChangedSince("/w/x", start, "other") {
		t.Error("re-reading unchanged content counts as a change")
	}
	c.Record("/w/x", b, now.Add(2*time.Second))
	if !c.ChangedSince("/w/x", start, "other") {
		t.Error("a new digest does not count as a change")
	}
	if c.ChangedSince("/w/never", 0, "other") {
		t.Error("a path never recorded counts as changed")
	}
}

// Re-reading unchanged content is no change, and keeps who made the
// last one: batch y reading what batch x wrote must not make x's next
// write look stale, while y still sees x's change.
func TestReReadKeepsOrigin(t *testing.T) {
	c := New()
	a, b := sha256.Sum256([]byte("a")), sha256.Sum256([]byte("b"))
	now := time.Now()
	c.RecordFrom("/w/f", a, now, "x")
	start := c.Generation()
	c.RecordFrom("/w/f", b, now, "x") // x writes
	c.RecordFrom("/w/f", b, now, "y") // y reads the same content
	if c.ChangedSince("/w/f", start, "x") {
		t.Error("x's own change counts as another batch's after y re-read it")
	}
	if c.ChangedSince("/w/f", start, "y") {
		t.Error("y re-read x's change, yet it counts as unseen by y")
	}
	if !c.ChangedSince("/w/f", start, "z") {
		t.Error("z, which never read the file since, does not see x's change")
	}
}

// A cache tells its owner of each read as it is recorded (a batch killed after a read must not lose it).
func TestOnRecord(t *testing.T) {
	c := New()
	n := 0
	c.OnRecord(func() { n++ })
	c.Record("/w/a", sha256.Sum256([]byte("a")), time.Now())
	c.RecordFrom("/w/b", sha256.Sum256([]byte("b")), time.Now(), "batch_1")
	if n != 2 {
		t.Errorf("OnRecord called %d times for two reads", n)
	}
}
