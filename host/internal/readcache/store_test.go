package readcache

import (
	"crypto/sha256"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"
)

// saveRead records one read of path in c and saves it.
func saveRead(t testing.TB, s *Store, conv string, c *Cache, path, content string, at time.Time) {
	t.Helper()
	c.Record(path, sha256.Sum256([]byte(content)), at)
	if err := s.Save(conv, c); err != nil {
		t.Fatal(err)
	}
}

// Saving a read appends it: the file is not replaced on every call (issue
// 11, make bench: replacing it cost more than the rest of a read), until
// the appended records outgrow the last whole record, when it is written
// whole again; every read survives either way (FR-TOOL-PATCH-02c).
func TestStoreAppendsThenRewritesWhole(t *testing.T) {
	s, err := NewStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	c, err := s.Load("conv")
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	saveRead(t, s, "conv", c, "/w/0", "v0", t0)
	first, err := os.Stat(s.fileName("conv"))
	if err != nil {
		t.Fatal(err)
	}
	replaced := 0
	last := first
	const reads = 2000 // ~200 bytes each: past compactSlack at least once
	for i := 1; i < reads; i++ {
		saveRead(t, s, "conv", c, fmt.Sprintf("/w/%d", i%50), fmt.Sprintf("v%d", i), t0.Add(time.Duration(i)*time.Second))
		info, err := os.Stat(s.fileName("conv"))
		if err != nil {
			t.Fatal(err)
		}
		if !os.SameFile(last, info) {
			replaced++
		}
		last = info
	}
	if replaced == 0 || replaced > reads/100 {
		t.Errorf("the file was replaced %d times in %d saves; want a few rewrites, the rest appends", replaced, reads)
	}
	if last.Size() > 2*50*200+compactSlack+4096 {
		t.Errorf("the file holds %d bytes for 50 paths: the appended records were never folded", last.Size())
	}
	got, err := s.Load("conv")
	if err != nil {
		t.Fatal(err)
	}
	if n := len(got.Entries()); n != 50 {
		t.Errorf("loaded %d paths, want 50", n)
	}
	for i := reads - 50; i < reads; i++ {
		if read, same := got.Matches(fmt.Sprintf("/w/%d", i%50), sha256.Sum256([]byte(fmt.Sprintf("v%d", i)))); !read || !same {
			t.Errorf("/w/%d: read %v, same %v; want its last read, v%d", i%50, read, same, i)
		}
	}
}

// Two processes of one conversation append in turn: each Save merges what
// the other appended since, and the newest read of a path wins.
func TestStoreSaveMergesOthersAppends(t *testing.T) {
	s, _ := NewStore(t.TempDir())
	a, _ := s.Load("conv")
	b, _ := s.Load("conv")
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	saveRead(t, s, "conv", a, "/w/x", "a1", t0)
	saveRead(t, s, "conv", b, "/w/y", "b1", t0.Add(time.Second))
	saveRead(t, s, "conv", a, "/w/x", "a2", t0.Add(2*time.Second))
	saveRead(t, s, "conv", b, "/w/x", "b2", t0.Add(3*time.Second))
	if _, same := a.Matches("/w/y", sha256.Sum256([]byte("b1"))); !same {
		t.Error("a's Save did not merge the read b appended before it")
	}
	got, err := s.Load("conv")
	if err != nil {
		t.Fatal(err)
	}
	if _, same := got.Matches("/w/x", sha256.Sum256([]byte("b2"))); !same {
		t.Error("the newest read of /w/x (b2) lost to an older one")
	}
	if _, same := got.Matches("/w/y", sha256.Sum256([]byte("b1"))); !same {
		t.Error("/w/y is lost")
	}
}

// A record a crash cut short is skipped (its reads count as unread: a
// refused write at worst, never an allowed one) and the next Save writes
// the file whole, readable again. A file that is not JSON from its start
// is still named as corrupt by Load, and Save makes it whole too.
func TestStoreCutRecord(t *testing.T) {
	s, _ := NewStore(t.TempDir())
	c, _ := s.Load("conv")
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	saveRead(t, s, "conv", c, "/w/x", "x", t0)
	f, err := os.OpenFile(s.fileName("conv"), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"conversation":"conv","entries":[{"path":"/w/cut","sha2`)
	f.Close()
	got, err := s.Load("conv")
	if err != nil {
		t.Fatalf("Load with a cut last record: %v", err)
	}
	if read, _ := got.Matches("/w/x", sha256.Sum256([]byte("x"))); !read {
		t.Error("the whole record before the cut one is lost")
	}
	if read, _ := got.Matches("/w/cut", sha256.Sum256([]byte("cut"))); read {
		t.Error("the cut record counts as a read")
	}
	saveRead(t, s, "conv", got, "/w/y", "y", t0.Add(time.Second))
	data, _ := os.ReadFile(s.fileName("conv"))
	if strings.Contains(string(data), "/w/cut") {
		t.Errorf("the cut record is still in the file after a Save: %s", data)
	}
	again, err := s.Load("conv")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"/w/x", "/w/y"} {
		if read, _ := again.Matches(p, sha256.Sum256([]byte(p[len(p)-1:]))); !read {
			t.Errorf("%s is lost after the file was written whole", p)
		}
	}

	if err := os.WriteFile(s.fileName("bad"), []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Load("bad"); err == nil || !strings.Contains(err.Error(), s.fileName("bad")) {
		t.Errorf("Load of a file corrupt from its start: err = %v, want one naming the file", err)
	}
	fresh := New()
	saveRead(t, s, "bad", fresh, "/w/z", "z", t0)
	if got, err := s.Load("bad"); err != nil {
		t.Errorf("after a Save, the corrupt file still does not load: %v", err)
	} else if read, _ := got.Matches("/w/z", sha256.Sum256([]byte("z"))); !read {
		t.Error("the read saved over a corrupt file is lost")
	}
}

// A file written before records were appended (one object, no newline)
// loads, and a Save appends to it.
func TestStoreReadsOneObjectFile(t *testing.T) {
	s, _ := NewStore(t.TempDir())
	old := fmt.Sprintf(`{"conversation":"conv","entries":[{"path":"/w/old","sha256":"%x","read_at":"2026-01-02T03:04:05Z"}]}`, sha256.Sum256([]byte("old")))
	if err := os.WriteFile(s.fileName("conv"), []byte(old), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := s.Load("conv")
	if err != nil {
		t.Fatal(err)
	}
	saveRead(t, s, "conv", c, "/w/new", "new", time.Date(2026, 1, 2, 3, 5, 0, 0, time.UTC))
	got, err := s.Load("conv")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"old", "new"} {
		if _, same := got.Matches("/w/"+p, sha256.Sum256([]byte(p))); !same {
			t.Errorf("/w/%s is lost", p)
		}
	}
}

// BenchmarkStoreSave is the cost a read adds through toolhost serve: one
// recorded read, saved.
func BenchmarkStoreSave(b *testing.B) {
	s, _ := NewStore(b.TempDir())
	c, _ := s.Load("conv")
	t0 := time.Now()
	i := 0
	for b.Loop() {
		c.Record(fmt.Sprintf("/w/%d", i%100), sha256.Sum256([]byte{byte(i)}), t0.Add(time.Duration(i)))
		if err := s.Save("conv", c); err != nil {
			b.Fatal(err)
		}
		i++
	}
}
