package sandbox

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
)

// A path is judged as written, before any link in it is followed, and at
// every place a link leads on through: a link inside a denied directory
// leads nowhere, and a denial never tells where it would have led.
func TestResolve_DeniedAsWritten(t *testing.T) {
	f := newFixture(t, Config{DeniedPatterns: []string{"secret/**", "vault"}})
	mustWrite(t, filepath.Join(f.root, "secret/s.txt"), "S")
	mustWrite(t, filepath.Join(f.root, "vault/v.txt"), "V")
	mustSymlink(t, "../a.txt", filepath.Join(f.root, "secret/lnk")) // out of the denied place
	mustSymlink(t, "s.txt", filepath.Join(f.root, "secret/lnk2"))   // within it
	mustSymlink(t, "sub", filepath.Join(f.root, "secret/dir"))      // a directory of it
	mustSymlink(t, "secret/lnk", filepath.Join(f.root, "hop"))      // through it
	mustSymlink(t, "secret", filepath.Join(f.root, "door"))         // into it
	mustSymlink(t, filepath.Join(f.root, "a.txt"), filepath.Join(f.root, "vault/abs"))

	for _, tt := range []struct{ path, pattern string }{
		{"secret/lnk", "secret/**"},
		{"secret/lnk2", "secret/**"},
		{"secret/dir/b.txt", "secret/**"},
		{"hop", "secret/**"},
		{"door/s.txt", "secret/**"},
		{"door", "secret/**"},
		{"vault/v.txt", "vault"}, // below a denied directory
		{"vault/abs", "vault"},
	} {
		t.Run(tt.path, func(t *testing.T) {
			de := wantDenied(t, f.s, tt.path, DeniedPatternMatched)
			if de.Pattern != tt.pattern {
				t.Errorf("pattern %q, want %q", de.Pattern, tt.pattern)
			}
			if written := filepath.Join(f.root, tt.path); de.Resolved != "" && de.Resolved != written {
				t.Errorf("the denial tells %q, want only the path written (%s) or nothing", de.Resolved, written)
			}
			if strings.Contains(de.Error(), "a.txt") || (strings.Contains(de.Error(), "s.txt") && !strings.Contains(tt.path, "s.txt")) {
				t.Errorf("the message tells where the link leads: %s", de.Error())
			}
		})
	}
	for _, p := range []string{"a.txt", "sub/b.txt", "secretary.txt", "vaults/x"} {
		wantResolved(t, f.s, p, p)
	}
}

// Names no tool may write are judged as written too: git follows a .git
// that is a link, so .git/config through it is git's configuration
// whatever the directory it leads to is called; a read-only pattern
// holds the same way.
func TestCheckWrite_ProtectedAsWritten(t *testing.T) {
	f := newFixture(t, Config{ReadOnlyPatterns: []string{"vendor/**"}})
	mustWrite(t, filepath.Join(f.root, "realgit/config"), "[core]\n")
	mustWrite(t, filepath.Join(f.root, "third/lib.go"), "package lib\n")
	mustSymlink(t, "realgit", filepath.Join(f.root, ".git"))
	mustSymlink(t, "third", filepath.Join(f.root, "vendor"))
	for _, tt := range []struct {
		path   string
		reason Reason
	}{
		{".git/config", Protected},
		{".git/hooks/pre-commit", Protected},
		{"vendor/lib.go", ReadOnly},
	} {
		p, err := f.s.Resolve(tt.path)
		if err != nil {
			t.Fatalf("Resolve(%q): %v", tt.path, err)
		}
		var de *DenialError
		if err := f.s.CheckWrite(p); !errors.As(err, &de) || de.Reason != tt.reason {
			t.Errorf("CheckWrite(%q) = %v, want a %v denial", tt.path, err, tt.reason)
		}
		if _, ro := f.s.ReadOnly(p); !ro {
			t.Errorf("ReadOnly(%q) = false", tt.path)
		}
	}
	// The same directories under their own names are ordinary.
	for _, name := range []string{"realgit/config", "third/lib.go"} {
		p, err := f.s.Resolve(name)
		if err != nil {
			t.Fatal(err)
		}
		if err := f.s.CheckWrite(p); err != nil {
			t.Errorf("CheckWrite(%q) = %v, want nil", name, err)
		}
	}
}
