package e2e

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// readToolsMCP is `toolhost call --format json`: what an MCP client
// receives.
type readToolsMCP struct {
	Content           string         `json:"content"`
	StructuredContent map[string]any `json:"structuredContent"`
	IsError           bool           `json:"isError"`
}

func readToolsCall(t *testing.T, w *workspace, tool, args string, extra ...string) readToolsMCP {
	t.Helper()
	out, stderr, _ := w.run(t, append(callArgs(tool, args, "--format", "json"), extra...)...)
	var r readToolsMCP
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("call %s %s: stdout is not an MCP result (%v)\nstdout: %s\nstderr: %s", tool, args, err, out, stderr)
	}
	return r
}

// file_info's every field, as an MCP client gets them, for a text file,
// a binary file, a directory, a file past the scan limit, a symbolic link
// (itself, its target, then what it leads to) and one to nothing; and looking
// at a file is not reading it: a write over it afterwards is still stale.
func TestFileInfoFieldsThroughCLI(t *testing.T) {
	w := newWorkspace(t)
	w.file(t, "notes.txt", "one\ntwo\nthree")
	w.file(t, "blob.bin", "a\x00b")
	w.file(t, "big.txt", strings.Repeat("x\n", 2000))
	if err := os.Mkdir(filepath.Join(w.dir, "src"), 0o750); err != nil {
		t.Fatal(err)
	}
	mtime := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, name := range []string{"notes.txt", "blob.bin", "src"} {
		if err := os.Chtimes(filepath.Join(w.dir, name), mtime, mtime); err != nil {
			t.Fatal(err)
		}
	}
	// Modes set whatever the umask.
	for name, mode := range map[string]os.FileMode{"notes.txt": 0o640, "blob.bin": 0o644, "big.txt": 0o644, "src": 0o750} {
		if err := os.Chmod(filepath.Join(w.dir, name), mode); err != nil {
			t.Fatal(err)
		}
	}
	sum := func(s string) string { h := sha256.Sum256([]byte(s)); return hex.EncodeToString(h[:]) }
	for link, target := range map[string]string{"link.txt": "notes.txt", "gone": "missing.txt"} {
		if err := os.Symlink(target, filepath.Join(w.dir, link)); err != nil {
			t.Fatal(err)
		}
	}

	tests := []struct {
		path string
		w    *workspace
		want map[string]any
		text string
	}{
		{"notes.txt", w, map[string]any{"path": "notes.txt", "type": "file", "size": 13.0, "mode": "0640", "mtime": "2026-01-02T03:04:05Z",
			"binary": false, "lines": 3.0, "sha256": sum("one\ntwo\nthree")}, "notes.txt: file, 13 bytes, text, 3 lines, mode 0640, modified 2026-01-02T03:04:05Z\n"},
		{"blob.bin", w, map[string]any{"path": "blob.bin", "type": "file", "size": 3.0, "mode": "0644", "mtime": "2026-01-02T03:04:05Z",
			"binary": true, "sha256": sum("a\x00b")}, "blob.bin: file, 3 bytes, binary, mode 0644"},
		{"src", w, map[string]any{"path": "src", "type": "dir", "size": -1.0, "mode": "0750", "mtime": "2026-01-02T03:04:05Z",
			"binary": false}, "src: dir, "},
		{"big.txt", w.withEnv("TOOLHOST_TOOLS_READ_FILE_MAX_SCAN_BYTES=1000"), map[string]any{"path": "big.txt", "type": "file", "size": 4000.0,
			"mode": "0644", "mtime": "", "binary": false, "scan_limit_bytes": 1000.0}, "larger than the scan limit of 1000 bytes (max_scan_bytes): lines and sha256 not computed"},
		// A symbolic link is itself described, then what it leads to.
		{"link.txt", w, map[string]any{"path": "link.txt", "type": "symlink", "size": 9.0, "mode": "0777", "mtime": "", "binary": false,
			"target": "notes.txt", "leads_to": map[string]any{"path": "notes.txt", "type": "file", "size": 13.0, "mode": "0640",
				"mtime": "2026-01-02T03:04:05Z", "binary": false, "lines": 3.0, "sha256": sum("one\ntwo\nthree")}},
			"link.txt: symlink to notes.txt, 9 bytes, mode 0777, "},
		{"gone", w, map[string]any{"path": "gone", "type": "symlink", "size": 11.0, "mode": "0777", "mtime": "", "binary": false,
			"target": "missing.txt", "target_missing": true}, "gone: symlink to missing.txt, 11 bytes"},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			r := readToolsCall(t, tt.w, "file_info", `{"path":"`+tt.path+`"}`)
			if r.IsError || !strings.Contains(r.Content, tt.text) {
				t.Fatalf("file_info %s: isError %v, text %q, want it to contain %q", tt.path, r.IsError, r.Content, tt.text)
			}
			got := r.StructuredContent
			// A directory's size and a fixture's mtime are the file
			// system's: checked for form only.
			if tt.want["size"] == -1.0 {
				if _, ok := got["size"].(float64); !ok {
					t.Errorf("size %v is not a number", got["size"])
				}
				tt.want["size"] = got["size"]
			}
			if tt.want["mtime"] == "" {
				if _, err := time.Parse(time.RFC3339Nano, got["mtime"].(string)); err != nil {
					t.Errorf("mtime %v is not RFC 3339: %v", got["mtime"], err)
				}
				tt.want["mtime"] = got["mtime"]
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("structuredContent\n got %v\nwant %v", got, tt.want)
			}
		})
	}

	conv := []string{"--conversation", "look"}
	readToolsCall(t, w, "file_info", `{"path":"notes.txt"}`, conv...)
	r, _, code := w.call(t, "write_file", `{"path":"notes.txt","content":"clobbered"}`, append(conv, "--allow", "write_file")...)
	if code != 1 || r.Error == nil || r.Error.Kind != "StaleFile" {
		t.Fatalf("a write after file_info alone: exit %d %+v, want StaleFile (file_info is not a read)", code, r.Error)
	}
}

// read_multiple_files over three files, the middle one missing: each
// shown as read_file shows it, the missing one's error in its place; each
// file read counts as read, so a write or an append over it then goes
// through, and over one changed since is stale.
func TestReadMultipleFilesThroughCLI(t *testing.T) {
	w := newWorkspace(t)
	w.file(t, "a.txt", "alpha\n")
	w.file(t, "c.txt", "gamma\n")
	conv := []string{"--conversation", "multi"}

	r := readToolsCall(t, w, "read_multiple_files", `{"paths":["a.txt","b.txt","c.txt"]}`, conv...)
	want := "==> a.txt <==\nalpha\n" +
		"==> b.txt <==\n[error ExecutionFailed] b.txt: no such file or directory; list_directory of \".\" shows what is there\n" +
		"==> c.txt <==\ngamma\n" +
		"[2 of 3 files read; 1 failed (their errors are above)]\n"
	if r.IsError || r.Content != want {
		t.Fatalf("read_multiple_files: isError %v\n got %q\nwant %q", r.IsError, r.Content, want)
	}

	allow := append(conv, "--allow", "write_file")
	if res, _, code := w.call(t, "write_file", `{"path":"a.txt","content":"ALPHA\n"}`, allow...); code != 0 || !strings.HasPrefix(res.Content, "modified: a.txt") {
		t.Fatalf("write over a file read_multiple_files read: exit %d %+v", code, res)
	}
	if res, _, code := w.call(t, "write_file", `{"path":"c.txt","content":"delta\n","append":true}`, allow...); code != 0 || !strings.HasPrefix(res.Content, "appended: c.txt") {
		t.Fatalf("append to a file read_multiple_files read: exit %d %+v", code, res)
	}
	for name, want := range map[string]string{"a.txt": "ALPHA\n", "c.txt": "gamma\ndelta\n"} {
		if b, _ := os.ReadFile(filepath.Join(w.dir, name)); string(b) != want {
			t.Errorf("%s holds %q, want %q", name, b, want)
		}
	}

	// Read again, then changed behind the conversation's back: stale.
	readToolsCall(t, w, "read_multiple_files", `{"paths":["c.txt"]}`, conv...)
	w.file(t, "c.txt", "changed on disk\n")
	if res, _, code := w.call(t, "write_file", `{"path":"c.txt","content":"x\n","append":true}`, allow...); code != 1 || res.Error == nil || res.Error.Kind != "StaleFile" {
		t.Fatalf("append to a file changed since it was read: exit %d %+v, want StaleFile", code, res.Error)
	}
	if b, _ := os.ReadFile(filepath.Join(w.dir, "c.txt")); string(b) != "changed on disk\n" {
		t.Errorf("c.txt holds %q after a refused append", b)
	}

	// read_file's line numbers, as edit_file strips them.
	r = readToolsCall(t, w, "read_file", `{"path":"c.txt","line_numbers":true}`, conv...)
	if r.IsError || r.Content != "1→changed on disk\n" {
		t.Errorf("read_file line_numbers: isError %v, %q", r.IsError, r.Content)
	}
}

// read_file with line numbers on a file whose numbered text passes the
// output limit: cut after a whole line, within the limit, saying where to
// read on, not cut anywhere by the host.
func TestReadFileLineNumbersCutAtALine(t *testing.T) {
	w := newWorkspace(t).withEnv("TOOLHOST_TOOLS_OUTPUT_AVAILABLE_CAPACITY_BYTES=2000")
	var b strings.Builder
	for i := range 300 {
		b.WriteString(strings.Repeat("x", i%7) + "\n")
	}
	w.file(t, "long.txt", b.String())
	r := readToolsCall(t, w, "read_file", `{"path":"long.txt","line_numbers":true}`)
	body, note, cut := strings.Cut(r.Content, "[truncated] showing lines 1-")
	if r.IsError || !cut || len(r.Content) > 2000 || !strings.HasSuffix(body, "\n") {
		t.Fatalf("isError %v, %d bytes (limit 2000):\n%s", r.IsError, len(r.Content), r.Content)
	}
	lines := strings.Split(strings.TrimSuffix(body, "\n"), "\n")
	last := len(lines)
	for i, l := range lines {
		if want := fmt.Sprintf("%d→%s", i+1, strings.Repeat("x", i%7)); l != want {
			t.Fatalf("line %d is %q, want %q", i+1, l, want)
		}
	}
	if want := fmt.Sprintf("%d of long.txt (%d bytes); read on with read_file start_line %d\n", last, b.Len(), last+1); note != want {
		t.Errorf("note %q, want %q", note, want)
	}
}
