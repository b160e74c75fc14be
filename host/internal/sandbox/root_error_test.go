package sandbox

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A root that cannot be one is refused with one "sandbox: " prefix, the
// root named, and what to do.
func TestRootErrors(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		root  string
		words []string
		is    error
	}{
		{"missing", filepath.Join(dir, "nonexistent"), []string{`sandbox: root "` + filepath.Join(dir, "nonexistent") + `" does not exist; create it`, "tools.sandbox.allowed_roots"}, fs.ErrNotExist},
		{"a file", file, []string{`sandbox: root "` + file + `" is not a directory; give a directory`}, nil},
		{"empty", "", []string{`sandbox: root "" is empty`}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := New(Config{Roots: []string{tt.root}})
			if err == nil {
				t.Fatal("New succeeded")
			}
			msg := err.Error()
			if strings.Count(msg, "sandbox: ") != 1 || !strings.HasPrefix(msg, "sandbox: ") {
				t.Errorf("%q: want exactly one leading \"sandbox: \"", msg)
			}
			for _, w := range tt.words {
				if !strings.Contains(msg, w) {
					t.Errorf("%q lacks %q", msg, w)
				}
			}
			if tt.is != nil && !errors.Is(err, tt.is) {
				t.Errorf("%v is not %v", err, tt.is)
			}
		})
	}
}
