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
	"time"

	"github.com/toolhost/toolhost/abi"
	"github.com/toolhost/toolhost/host/internal/readcache"
	"github.com/toolhost/toolhost/host/internal/sandbox"
)

// commitEnv is an Env over a root holding a.txt ("A", read), b.txt ("B",
// read, then changed on disk), u.txt (never read) and gen/config (read-only: .git itself is protected whatever the patterns).
func commitEnv(t *testing.T) (*Env, string) {
	t.Helper()
	dir := t.TempDir()
	for name, content := range map[string]string{"a.txt": "A", "b.txt": "B", "u.txt": "U", "gen/config": "G"} {
		p := filepath.Join(dir, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	sb, err := sandbox.New(sandbox.Config{Roots: []string{dir}, ReadOnlyPatterns: []string{"gen/**"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sb.Close() })
	env := &Env{Call: Call{Sandbox: sb, Capabilities: writerCaps()}, Files: Files{Reads: readcache.New()}}
	for name, content := range map[string]string{"a.txt": "A", "b.txt": "B", "gen/config": "G"} {
		p, _ := sb.Resolve(name)
		env.Reads.Record(p.Abs, sha256.Sum256([]byte(content)), time.Now())
	}
	os.WriteFile(filepath.Join(dir, "b.txt"), []byte("B changed"), 0o644)
	return env, dir
}

// fs_commit's contract (abi/README.md): sandbox, then freshness of every
// file, then all or nothing; FR-TOOL-PATCH-01a/02.
func TestCommit(t *testing.T) {
	tests := []struct {
		name   string
		files  []abi.CommitFile
		kind   abi.ErrorKind // "" for success
		msg    string
		result map[string]string // content afterwards ("" = absent)
	}{
		{"modify and create", []abi.CommitFile{{Path: "a.txt", Data: []byte("A2")}, {Path: "d/new.txt", Data: []byte("N"), Flags: abi.CommitNew | abi.CommitCreateDirs}},
			"", "", map[string]string{"a.txt": "A2", "d/new.txt": "N"}},
		{"not read", []abi.CommitFile{{Path: "a.txt", Data: []byte("A2")}, {Path: "u.txt", Data: []byte("x")}},
			abi.KindStaleFile, "u.txt: File was not read before patching", map[string]string{"a.txt": "A", "u.txt": "U"}},
		{"changed since read", []abi.CommitFile{{Path: "a.txt", Data: []byte("A2")}, {Path: "b.txt", Data: []byte("x")}},
			abi.KindStaleFile, "File content changed since last read", map[string]string{"a.txt": "A"}},
		{"new file exists now", []abi.CommitFile{{Path: "a.txt", Data: []byte("A2")}, {Path: "u.txt", Data: []byte("x"), Flags: abi.CommitNew}},
			abi.KindStaleFile, "created since", map[string]string{"a.txt": "A", "u.txt": "U"}},
		{"deleted since read", []abi.CommitFile{{Path: "gone.txt", Data: []byte("x")}},
			abi.KindStaleFile, "deleted since last read", map[string]string{"gone.txt": ""}},
		{"same file twice", []abi.CommitFile{{Path: "a.txt", Data: []byte("1")}, {Path: "./a.txt", Data: []byte("2")}},
			abi.KindExecutionFailed, "are the same file", map[string]string{"a.txt": "A"}},
		{"sandbox", []abi.CommitFile{{Path: "a.txt", Data: []byte("A2")}, {Path: "../x", Data: []byte("x"), Flags: abi.CommitNew}},
			abi.KindSandboxViolation, `"../x"`, map[string]string{"a.txt": "A"}},
		{"read-only", []abi.CommitFile{{Path: "a.txt", Data: []byte("A2")}, {Path: "gen/config", Data: []byte("x")}},
			abi.KindSandboxViolation, "read-only pattern", map[string]string{"a.txt": "A", "gen/config": "G"}},
		{"missing parent without create_dirs", []abi.CommitFile{{Path: "a.txt", Data: []byte("A2")}, {Path: "nodir/x", Data: []byte("x"), Flags: abi.CommitNew}},
			abi.KindExecutionFailed, "no file was changed", map[string]string{"a.txt": "A"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env, dir := commitEnv(t)
			targets, err := prepareCommit(env, tt.files)
			if err == nil {
				_, err = commitFiles(context.Background(), &env.Call, &env.Files, targets)
			}
			var he *Error
			switch {
			case tt.kind == "" && err != nil:
				t.Fatalf("commit: %v", err)
			case tt.kind != "" && (!errors.As(err, &he) || he.Kind != tt.kind || !strings.Contains(he.Message, tt.msg)):
				t.Fatalf("error %v, want %s containing %q", err, tt.kind, tt.msg)
			}
			for name, want := range tt.result {
				got, err := os.ReadFile(filepath.Join(dir, name))
				if (want == "" && err == nil) || (want != "" && string(got) != want) {
					t.Errorf("%s = %q (%v), want %q", name, got, err, want)
				}
			}
			if tt.kind == "" {
				p, _ := env.Sandbox.Resolve("a.txt")
				if _, same := env.Reads.Matches(p.Abs, sha256.Sum256([]byte("A2"))); !same {
					t.Error("the new content was not recorded: the next edit would need a re-read")
				}
			}
		})
	}
}

// for_update reads (FR-TOOL-PATCH-02d): whole file, vouched for by the read
// cache, within the scan limit.
func TestReadForUpdate(t *testing.T) {
	env, _ := commitEnv(t)
	env.Limits.MaxScanBytes = 4
	tests := []struct {
		path string
		want string
		msg  string
	}{
		{"a.txt", "A", ""},
		{"u.txt", "", "File was not read before patching"},
		{"b.txt", "", "more than max_scan_bytes (4)"},
	}
	for _, tt := range tests {
		p, f, st, err := openRegular(&env.Call, "fs_read", tt.path)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := readForUpdate(&env.Call, &env.Files, tt.path, p, f, st)
		f.Close()
		if tt.msg != "" {
			if err == nil || !strings.Contains(err.Error(), tt.msg) {
				t.Errorf("%s: error %v, want %q", tt.path, err, tt.msg)
			}
			continue
		}
		info, data, derr := abi.DecodeReadInfo(resp)
		if err != nil || derr != nil || string(data) != tt.want || info.Flags&abi.ReadEOF == 0 {
			t.Errorf("%s: %q %+v %v %v", tt.path, data, info, err, derr)
		}
	}
}

// prepareCommit is resolveCommit then checkCommit, as a dry run makes them.
func prepareCommit(env *Env, files []abi.CommitFile) ([]commitTarget, error) {
	targets, err := resolveCommit(&env.Call, &env.Files, files)
	if err == nil {
		err = checkCommit(context.Background(), &env.Call, &env.Files, targets)
	}
	return targets, err
}

// An fs_commit of more files than Files.MaxCommitFiles
// (tools.apply_patch.max_files) is refused before any file is looked at,
// dry run or not, naming the call, the count, the limit and the key; at
// the limit it commits.
func TestCommit_MaxFiles(t *testing.T) {
	w := newWorkspace(t, nil)
	files := func(n int) []abi.CommitFile {
		fs := make([]abi.CommitFile, n)
		for i := range fs {
			fs[i] = abi.CommitFile{Path: fmt.Sprintf("d%d/n%d", i%2, i), Data: []byte("N"), Flags: abi.CommitNew | abi.CommitCreateDirs}
		}
		return fs
	}
	for _, flags := range []uint32{0, abi.CommitDryRun} {
		env := w.env("call_7")
		env.MaxCommitFiles = 3
		_, err := newGuest(1<<20).commit(context.Background(), env, files(4), flags)
		he := hostErr(t, err)
		if he.Status != abi.StatusTooLarge || he.Kind != abi.KindExecutionFailed {
			t.Errorf("flags %d: status %v kind %v, want too large, execution failed", flags, he.Status, he.Kind)
		}
		for _, want := range []string{"call call_7", "4 files", "(3)", "tools.apply_patch.max_files", "nothing was changed"} {
			if !strings.Contains(he.Message, want) {
				t.Errorf("flags %d: message %q does not say %q", flags, he.Message, want)
			}
		}
		if entries, _ := os.ReadDir(w.dir); len(entries) != 0 {
			t.Fatalf("flags %d: a refused commit left %d entries", flags, len(entries))
		}
	}
	env := w.env("call_8")
	env.MaxCommitFiles = 3
	if _, err := newGuest(1<<20).commit(context.Background(), env, files(3), 0); err != nil {
		t.Fatalf("a commit of as many files as allowed: %v", err)
	}
	if got := w.content("d0/n2"); got != "N" {
		t.Errorf("d0/n2 = %q after the commit", got)
	}
}
