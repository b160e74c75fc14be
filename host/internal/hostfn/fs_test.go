package hostfn

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolhost/toolhost/abi"
	"github.com/toolhost/toolhost/host/internal/sandbox"
)

func TestIsBinary(t *testing.T) {
	tests := []struct {
		name     string
		data     string
		complete bool
		want     bool
	}{
		{"text", "hello\n", true, false},
		{"empty", "", true, false},
		{"NUL", "a\x00b", true, true},
		{"NUL after 8 KiB", strings.Repeat("a", 8192) + "\x00", true, false},
		{"invalid UTF-8", "a\xffb", true, true},
		{"rune cut at end of partial read", "é"[:1], false, false},
		{"rune cut at end of file", "é"[:1], true, true},
	}
	for _, tt := range tests {
		if got := isBinary([]byte(tt.data), tt.complete); got != tt.want {
			t.Errorf("%s: isBinary = %v, want %v", tt.name, got, tt.want)
		}
	}
}

// The line scanner behind read_file's ranges (T-READ-01, T-READ-02).
func TestLineReader(t *testing.T) {
	dir := t.TempDir()
	content := "one\ntwo\r\nthree\nfour" // no final newline, one CRLF line
	if err := os.WriteFile(filepath.Join(dir, "f.txt"), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	sb, err := sandbox.New(sandbox.Config{Roots: []string{dir}})
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Close()
	p, err := sb.Resolve("f.txt")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		start, end uint32
		scan       int64
		out        string
		lines      uint32
		eof        bool
		err        error
	}{
		{1, 1, 1 << 20, "one\n", 1, false, nil},
		{2, 3, 1 << 20, "two\r\nthree\n", 2, false, nil},
		{4, 0, 1 << 20, "four", 1, true, nil},
		{3, 99, 1 << 20, "three\nfour", 2, true, nil},
		{5, 9, 1 << 20, "", 0, true, nil},
		{1, 1, 4, "one\n", 1, false, nil},
		{1, 2, 4, "", 0, false, errScanLimit},
		{1, 0, 10, "", 0, false, errScanLimit},
	}
	for _, tt := range tests {
		f, err := p.OpenFile()
		if err != nil {
			t.Fatal(err)
		}
		r := lineReader{ctx: context.Background(), f: f, start: tt.start, end: tt.end, scanLimit: tt.scan, record: true}
		err = r.run()
		f.Close()
		if !errors.Is(err, tt.err) {
			t.Errorf("lines %d-%d scan %d: err %v, want %v", tt.start, tt.end, tt.scan, err, tt.err)
			continue
		}
		if err != nil {
			continue
		}
		if string(r.out) != tt.out || r.lines != tt.lines || r.eof != tt.eof {
			t.Errorf("lines %d-%d: got %q (%d lines, eof %v), want %q (%d, %v)", tt.start, tt.end, r.out, r.lines, r.eof, tt.out, tt.lines, tt.eof)
		}
		if r.sum != sha256.Sum256([]byte(content)) {
			t.Errorf("lines %d-%d: recorded digest is not the whole file's", tt.start, tt.end)
		}
	}
}

func TestClassify(t *testing.T) {
	tests := []struct {
		err    error
		status abi.Status
		kind   abi.ErrorKind
	}{
		{&sandbox.DenialError{Reason: sandbox.Traversal, Attempted: "../x"}, abi.StatusDenied, abi.KindSandboxViolation},
		{os.ErrNotExist, abi.StatusNotFound, abi.KindExecutionFailed},
		{os.ErrPermission, abi.StatusIO, abi.KindExecutionFailed},
		{errors.New("disk on fire"), abi.StatusIO, abi.KindExecutionFailed},
		{fail(abi.StatusStale, abi.KindStaleFile, "x"), abi.StatusStale, abi.KindStaleFile},
	}
	for _, tt := range tests {
		e := classify("some/path", tt.err)
		if e.Status != tt.status || e.Kind != tt.kind {
			t.Errorf("classify(%v) = %v/%v, want %v/%v", tt.err, e.Status, e.Kind, tt.status, tt.kind)
		}
		if tt.status != abi.StatusDenied && tt.status != abi.StatusStale && !strings.Contains(e.Message, "some/path") {
			t.Errorf("classify(%v) message %q does not name the path", tt.err, e.Message)
		}
	}
	// A missing path sends the model to its parent, not to itself, even
	// when it was named with a trailing slash.
	for _, tc := range []struct{ name, parent string }{
		{"some/path", "some"},
		{"some/path/", "some"},
		{"missing/", "."},
		{"missing", "."},
		{"a/b//", "a"},
	} {
		want := fmt.Sprintf("list_directory of %q shows what is there", tc.parent)
		if e := classify(tc.name, os.ErrNotExist); !strings.Contains(e.Message, want) {
			t.Errorf("classify(%q) message %q; want it to say %s", tc.name, e.Message, want)
		}
	}
}

func TestGranted(t *testing.T) {
	got, err := Granted([]abi.Capability{abi.CapFSRead, abi.CapFSList})
	if err != nil {
		t.Fatal(err)
	}
	want := "event_emit fs_diff fs_list fs_lstat fs_read fs_read_lines fs_stat response_take"
	if strings.Join(got, " ") != want {
		t.Errorf("Granted = %v, want %s", got, want)
	}
	if _, err := Granted([]abi.Capability{"net.everything"}); err == nil {
		t.Error("unknown capability accepted")
	}
}
