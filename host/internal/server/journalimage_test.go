package server

import (
	"io/fs"
	"testing"

	"github.com/toolhost/toolhost/host/internal/journal"
)

// A change's image says what kind of entry it was: a directory or a link
// by its type, a file by none.
func TestJournalImageType(t *testing.T) {
	for _, tc := range []struct {
		img  journal.Image
		want JournalImage
	}{
		{journal.Image{}, JournalImage{}},
		{journal.Image{Exists: true, Mode: 0o640, Size: 3, SHA256: "ab"}, JournalImage{Exists: true, Mode: "0640", Size: 3, SHA256: "ab"}},
		{journal.Image{Exists: true, Mode: fs.ModeDir | 0o750}, JournalImage{Exists: true, Type: "dir", Mode: "0750"}},
		{journal.Image{Exists: true, Mode: fs.ModeSymlink | 0o777, Size: 6, SHA256: "cd"}, JournalImage{Exists: true, Type: "symlink", Mode: "0777", Size: 6, SHA256: "cd"}},
	} {
		if got := viewImage(tc.img); got != tc.want {
			t.Errorf("viewImage(%+v) = %+v, want %+v", tc.img, got, tc.want)
		}
	}
}
