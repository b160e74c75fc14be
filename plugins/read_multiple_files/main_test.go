package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/toolhost/toolhost/internal/fileread"
)

func TestSchemaBoundsPaths(t *testing.T) {
	var s struct {
		Properties struct {
			Paths struct {
				MaxItems int `json:"maxItems"`
			} `json:"paths"`
		} `json:"properties"`
	}
	if err := json.Unmarshal([]byte(schema), &s); err != nil {
		t.Fatal(err)
	}
	if s.Properties.Paths.MaxItems != maxPaths {
		t.Errorf("the schema's maxItems is %d, the handler's bound %d", s.Properties.Paths.MaxItems, maxPaths)
	}
}

// TestShare checks the division of the output limit: within the limit
// whatever the files want, a small file gets what it wants beside large
// ones, and files past the room for even minRoom each are not read.
func TestShare(t *testing.T) {
	const limit = 64 << 10
	tests := []struct {
		name       string
		want       []int64
		limit      int64
		whole      []int // indexes that must get all they want
		unreadFrom int   // first index not read; len(want) for none
	}{
		{"all fit", []int64{100, 200, 300}, limit, []int{0, 1, 2}, 3},
		{"small after large", []int64{1 << 20, 50, 1 << 20}, limit, []int{1}, 3},
		{"one huge", []int64{1 << 30}, limit, nil, 1},
		{"many files", repeat(100, 1<<10), limit, nil, 100},
		{"too many for the limit", repeat(100, 10), 8 << 10, nil, 21},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			paths := make([]string, len(tt.want))
			for i := range paths {
				paths[i] = fmt.Sprintf("dir/file%03d.txt", i)
			}
			rooms, unread := share(paths, tt.want, tt.limit)
			if len(rooms) != tt.unreadFrom || len(unread) != len(paths)-tt.unreadFrom {
				t.Fatalf("%d rooms and %d unread, want %d and %d", len(rooms), len(unread), tt.unreadFrom, len(paths)-tt.unreadFrom)
			}
			// The worst case: every file fills its room and adds a cut
			// note, and the footer takes all its room.
			total := int64(footerRoom)
			for i, r := range rooms {
				if r < minRoom {
					t.Errorf("file %d: room %d, less than minRoom", i, r)
				}
				total += r + int64(len(header(paths[i]))+len(paths[i])+fileread.MaxNote)
			}
			if total > tt.limit {
				t.Errorf("at most %d bytes, more than the limit of %d", total, tt.limit)
			}
			for _, i := range tt.whole {
				if rooms[i] < tt.want[i] {
					t.Errorf("file %d wants %d, got a room of %d", i, tt.want[i], rooms[i])
				}
			}
		})
	}
}

func repeat(n int, v int64) []int64 {
	s := make([]int64, n)
	for i := range s {
		s[i] = v
	}
	return s
}

func TestFooterNamesWhatIsMissing(t *testing.T) {
	if got := footer(3, 3, 0, nil, nil, 100); got != "" {
		t.Errorf("nothing missing: footer %q, want none", got)
	}
	many := make([]string, 100)
	for i := range many {
		many[i] = strings.Repeat("x", 40) + fmt.Sprint(i)
	}
	got := footer(102, 1, 1, []string{"cut.txt"}, many, 65536)
	for _, want := range []string{"[1 of 102 files read; 1 failed", "cut to fit: cut.txt", "not read, no room left in the output limit of 65536 bytes: " + many[0], " more; read them with read_file"} {
		if !strings.Contains(got, want) {
			t.Errorf("footer %q does not contain %q", got, want)
		}
	}
	if len(got) > footerRoom {
		t.Errorf("footer of %d bytes, more than footerRoom %d", len(got), footerRoom)
	}
}

func TestDisplayPathCannotForgeAHeader(t *testing.T) {
	for _, p := range []string{"a\n==> b <==", "x <==", "==> y", "c\rd"} {
		if got := header(p); strings.Count(got, "\n") != 1 || !strings.HasPrefix(got, "==> \"") {
			t.Errorf("header(%q) = %q, want one quoted line", p, got)
		}
	}
	if got := header("src/a.go"); got != "==> src/a.go <==\n" {
		t.Errorf("header = %q", got)
	}
}
