package hostfn

import (
	"testing"

	"github.com/toolhost/toolhost/host/internal/sandbox"
)

func TestReadScopeAllows(t *testing.T) {
	named := map[string]bool{"/r/src": true, "/r/notes.txt": true}
	for _, tc := range []struct {
		abs          string
		below, allow bool
	}{
		{"/r/src", false, true},
		{"/r/notes.txt", false, true},
		{"/r/src/a.go", false, false},
		{"/r/src/a.go", true, true},
		{"/r/src/deep/er/a.go", true, true},
		{"/r/srcx/a.go", true, false}, // a sibling sharing the prefix
		{"/r", true, false},           // above
		{"/r/other.txt", true, false},
		{"/r/notes.txt/x", true, true}, // below a file: the sandbox finds nothing there
	} {
		s := &ReadScope{Paths: named, Below: tc.below}
		if got := s.allows(sandbox.Path{Abs: tc.abs}); got != tc.allow {
			t.Errorf("below=%v allows(%s) = %v, want %v", tc.below, tc.abs, got, tc.allow)
		}
	}
}
