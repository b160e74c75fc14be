package server

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestApprovalShowsDiff: the elicitation for write_file and apply_patch
// shows the diff of a dry run of the same call, made while asking and
// writing nothing; when the dry run fails, one line says why and the
// person is still asked.
func TestApprovalShowsDiff(t *testing.T) {
	patch := "LP1\nF a.txt\nR\nold\n.\npatched\n.\nEND\n"
	for _, tc := range []struct {
		name   string
		read   bool // read a.txt first, so replacing it passes the stale-file rule
		tool   string
		args   map[string]any
		answer string
		want   []string // in the question
		not    []string
		after  string // a.txt's content after the call
		result string // in the result's text
		// unasked: the call is refused before anyone is asked.
		unasked bool
	}{
		{name: "write accepted", read: true, tool: "write_file", args: map[string]any{"path": "a.txt", "content": "new\n"}, answer: "accept",
			want: []string{"from a dry run", "    │-old\n    │+new\n"}, after: "new\n"},
		{name: "write declined", read: true, tool: "write_file", args: map[string]any{"path": "a.txt", "content": "new\n"}, answer: "decline",
			want: []string{"    │-old\n    │+new\n"}, after: "old\n"},
		{name: "patch", read: true, tool: "apply_patch", args: map[string]any{"patch": patch}, answer: "decline",
			want: []string{"    │-old\n    │+patched\n"}, after: "old\n"},
		{name: "dry run fails", read: true, tool: "apply_patch", args: map[string]any{"patch": strings.Replace(patch, "R\nold", "R\nabsent", 1)}, answer: "accept",
			want: []string{"The change it would make:\n    ⋮ diff unavailable: PatchFailed: ", "not found"}, not: []string{"│+patched", "<U+2026>"}, after: "old\n", result: "absent"},
		// Replacing an unread file would fail as stale after the person
		// accepted: it is refused before anyone is asked.
		{name: "unread", tool: "write_file", args: map[string]any{"path": "a.txt", "content": "new\n"}, answer: "accept",
			after: "old\n", result: "StaleFile: call ", unasked: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var during []string
			c := serveTest(t, Options{}, false, func(c *testClient, _ *mcp.ElicitRequest) string {
				b, _ := os.ReadFile(filepath.Join(c.root, "a.txt"))
				during = append(during, string(b))
				return tc.answer
			})
			file := filepath.Join(c.root, "a.txt")
			if err := os.WriteFile(file, []byte("old\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			if tc.read {
				c.call(t, "read_file", map[string]any{"path": "a.txt"}, nil)
			}
			_, text := c.call(t, tc.tool, tc.args, nil)
			if !strings.Contains(text, tc.result) {
				t.Errorf("result %q lacks %q", text, tc.result)
			}
			qs := c.questions()
			if tc.unasked {
				if len(qs) != 0 {
					t.Errorf("asked %d times, want never: %q", len(qs), qs)
				}
				if b, _ := os.ReadFile(file); string(b) != tc.after {
					t.Errorf("a.txt holds %q after the call, want %q", b, tc.after)
				}
				return
			}
			if len(qs) != 1 {
				t.Fatalf("asked %d times, want once (the dry run is not asked about): %q", len(qs), qs)
			}
			for _, w := range tc.want {
				if !strings.Contains(qs[0], w) {
					t.Errorf("question lacks %q:\n%s", w, qs[0])
				}
			}
			for _, n := range tc.not {
				if strings.Contains(qs[0], n) {
					t.Errorf("question holds %q:\n%s", n, qs[0])
				}
			}
			if during[0] != "old\n" {
				t.Errorf("a.txt holds %q while the person is asked: the dry run wrote", during[0])
			}
			if b, _ := os.ReadFile(file); string(b) != tc.after {
				t.Errorf("a.txt holds %q after the call, want %q", b, tc.after)
			}
		})
	}
}
