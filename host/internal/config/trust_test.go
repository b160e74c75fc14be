package config

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// Trust is recorded by canonical path, so a link to a
// trusted directory is the same directory and a directory reached through
// a link cannot be trusted by another name; the file is the operator's
// alone (0600 in a 0700 directory).
func TestTrustRoundTrip(t *testing.T) {
	userDir := filepath.Join(t.TempDir(), "toolhost")
	a, b := t.TempDir(), t.TempDir()
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(a, link); err != nil {
		t.Fatal(err)
	}
	if dirs, err := Trusted(userDir); err != nil || len(dirs) != 0 {
		t.Fatalf("no trust file: %q %v", dirs, err)
	}
	for _, d := range []string{link, b, a} {
		if _, err := Trust(userDir, d); err != nil {
			t.Fatal(err)
		}
	}
	want := []string{a, b}
	slices.Sort(want)
	if dirs, err := Trusted(userDir); err != nil || !slices.Equal(dirs, want) {
		t.Fatalf("trusted %q %v, want %q", dirs, err, want)
	}
	if ok, err := IsTrusted(userDir, link); err != nil || !ok {
		t.Errorf("link to a trusted directory: %v %v", ok, err)
	}
	for path, mode := range map[string]os.FileMode{userDir: 0o700, filepath.Join(userDir, TrustFile): 0o600} {
		if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != mode {
			t.Errorf("%s: %v, want mode %v", path, err, mode)
		}
	}
	if _, was, err := Untrust(userDir, a); err != nil || !was {
		t.Fatalf("untrust: %v %v", was, err)
	}
	if _, was, err := Untrust(userDir, a); err != nil || was {
		t.Errorf("untrust twice: %v %v", was, err)
	}
	// A directory that is gone can still be forgotten.
	if err := os.RemoveAll(b); err != nil {
		t.Fatal(err)
	}
	if _, was, err := Untrust(userDir, b); err != nil || !was {
		t.Errorf("untrust a removed directory: %v %v", was, err)
	}
	if dirs, err := Trusted(userDir); err != nil || len(dirs) != 0 {
		t.Errorf("after untrusting all: %q %v", dirs, err)
	}
	if _, err := Trust(userDir, filepath.Join(a, "missing")); err == nil {
		t.Error("trusted a directory that does not exist")
	}
}

// A broken trust file is the operator's to fix: Load stops and names it.
func TestBrokenTrustFile(t *testing.T) {
	userDir, ws := t.TempDir(), t.TempDir()
	trust := writeFile(t, userDir, TrustFile, "dirs = 3\n")
	writeFile(t, ws, "toolhost.toml", "")
	_, err := Load(Options{UserDir: userDir, Dir: ws})
	if err == nil || !strings.Contains(err.Error(), trust) {
		t.Errorf("broken trust file: %v", err)
	}
}
