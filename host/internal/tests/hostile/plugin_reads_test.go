package hostile_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A call may touch only the paths its arguments name (sdk/README.md):
// a plugin given "notes.txt" to read must not read the operator's other
// files in the root (a private key, a .git config, another project's
// source) and hand them to the model. Writes were held to the named
// paths; reads must be too: fs_read, fs_read_lines, fs_stat and fs_list
// of a path no path argument names are refused, and the named path still
// reads.
func TestPluginReadsOnlyNamedPaths(t *testing.T) {
	h, root := openHost(t, nil, "preadsnamed")
	preadsWrite(t, filepath.Join(root, "notes.txt"), "notes\n")
	preadsWrite(t, filepath.Join(root, "private", "secret.txt"), "the secret\n")

	rs := runBatch(t, h, nil, call("ok", "preadsnamed", jsonArgs(t, map[string]any{"path": "notes.txt"})))
	if !rs[0].OK || rs[0].Content != "notes\n" {
		t.Fatalf("reading the named path: %+v", rs[0])
	}
	for _, op := range []string{"read", "lines", "stat", "list"} {
		other := "private/secret.txt"
		if op == "list" {
			other = "private"
		}
		rs := runBatch(t, h, nil, call(op, "preadsnamed", jsonArgs(t, map[string]any{"path": "notes.txt", "other": other, "op": op})))
		if rs[0].OK {
			t.Errorf("%s of %s, which no path argument names, succeeded: %q", op, other, rs[0].Content)
			continue
		}
		if strings.Contains(rs[0].Error.Message, "the secret") {
			t.Errorf("%s: the refusal shows the file: %s", op, rs[0].Error.Message)
		}
	}
}

// The declared exception reaches no further than it says: a tool whose
// manifest says it reads what it finds below the directory it was given
// (reads_under_path_args) reads below that directory, and is refused
// beside or above it.
func TestPluginReadsUnderNamedDirectoryOnly(t *testing.T) {
	h, root := openHost(t, nil, "preadsunder")
	preadsWrite(t, filepath.Join(root, "src", "a", "b.txt"), "found\n")
	preadsWrite(t, filepath.Join(root, "srcx", "secret.txt"), "the secret\n")
	preadsWrite(t, filepath.Join(root, "secret.txt"), "the secret\n")
	for _, tc := range []struct {
		other, op string
		ok        bool
	}{
		{"src/a/b.txt", "read", true},
		{"src/a", "list", true},
		{"srcx/secret.txt", "read", false},
		{"secret.txt", "read", false},
		{".", "list", false},
		{"srcx", "stat", false},
	} {
		rs := runBatch(t, h, nil, call("r", "preadsunder", jsonArgs(t, map[string]any{"path": "src", "other": tc.other, "op": tc.op})))
		if rs[0].OK != tc.ok {
			t.Errorf("preadsunder given src: %s of %s: ok = %v, want %v (%+v)", tc.op, tc.other, rs[0].OK, tc.ok, rs[0].Error)
		}
		if !tc.ok && strings.Contains(rs[0].Content, "secret") {
			t.Errorf("reading %s showed the file", tc.other)
		}
	}
}

func preadsWrite(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}
