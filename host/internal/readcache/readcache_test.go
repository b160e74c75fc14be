package readcache

import (
	"crypto/sha256"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// FR-TOOL-PATCH-02c: entries carry canonical path, SHA-256 and read time,
// and survive between processes through the store.
func TestStoreRoundTripAndMerge(t *testing.T) {
	dir := t.TempDir()
	store, err := NewStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	a := sha256.Sum256([]byte("a"))
	b := sha256.Sum256([]byte("b"))

	first, _ := store.Load("conv-1")
	first.Record("/w/x.txt", a, t0)
	// Another process saves a newer read of the same path and another file.
	second, _ := store.Load("conv-1")
	second.Record("/w/x.txt", b, t0.Add(time.Minute))
	second.Record("/w/y.txt", a, t0)
	if err := store.Save("conv-1", second); err != nil {
		t.Fatal(err)
	}
	if err := store.Save("conv-1", first); err != nil {
		t.Fatal(err)
	}

	got, err := store.Load("conv-1")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		path       string
		sum        [32]byte
		read, same bool
	}{
		{"/w/x.txt", b, true, true}, // the newer read wins the merge
		{"/w/x.txt", a, true, false},
		{"/w/y.txt", a, true, true},
		{"/w/z.txt", a, false, false},
	}
	for _, tt := range tests {
		read, same := got.Matches(tt.path, tt.sum)
		if read != tt.read || same != tt.same {
			t.Errorf("Matches(%s) = %v,%v; want %v,%v", tt.path, read, same, tt.read, tt.same)
		}
	}
	other, _ := store.Load("conv-2")
	if n := len(other.Entries()); n != 0 {
		t.Errorf("conversations leak: conv-2 has %d entries", n)
	}
}

func TestLoadCorruptFileNamesIt(t *testing.T) {
	dir := t.TempDir()
	store, _ := NewStore(dir)
	if err := os.WriteFile(store.fileName("c"), []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := store.Load("c")
	if err == nil || !filepath.IsAbs(store.fileName("c")) {
		t.Fatalf("Load of corrupt cache: err = %v", err)
	}
}

// The generation moves when a path's content changes, not when the same
// content is read again (issue 9 item 8: a call compares it with the
// generation it began at).
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
