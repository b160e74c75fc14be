package hostfn

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolhost/toolhost/abi"
	"github.com/toolhost/toolhost/host/internal/readcache"
	"github.com/toolhost/toolhost/host/internal/sandbox"
)

// writerCaps are the capabilities of a plugin that reads and writes
// files, as the existing tests' calls had.
func writerCaps() []abi.Capability {
	return []abi.Capability{abi.CapFSRead, abi.CapFSWrite, abi.CapFSList}
}

// opsEnv is a call holding fs.write and fs.delete over a root holding:
//
//	a.txt            "alpha\nbeta\n" (0640, read by the conversation)
//	u.txt            never read
//	d/ (0750)        x "X", sub/ (0700) y "Y", link -> ../a.txt
//	g/               .git/config, keep.txt
//	toolhost.toml    toolhost's configuration
//	.git/config      git's
//	gen/out.txt      read-only (gen/**)
//	state -> STATE   a link to toolhost's state directory, outside the root
func opsEnv(t *testing.T) (*Env, string, string) {
	t.Helper()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	state, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{
		"a.txt": "alpha\nbeta\n", "u.txt": "U", "d/x": "X", "d/sub/y": "Y",
		"g/.git/config": "[core]\n", "g/keep.txt": "K", "toolhost.toml": "[tools]\n", ".git/config": "[core]\n", "gen/out.txt": "O",
		filepath.Join(state, "journal.db"): "J",
	}
	for name, content := range files {
		p := name
		if !filepath.IsAbs(p) {
			p = filepath.Join(dir, name)
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	opsMust(t, os.Chmod(filepath.Join(dir, "a.txt"), 0o640))
	opsMust(t, os.Chmod(filepath.Join(dir, "d"), 0o750))
	opsMust(t, os.Chmod(filepath.Join(dir, "d/sub"), 0o700))
	opsMust(t, os.Symlink("../a.txt", filepath.Join(dir, "d/link")))
	opsMust(t, os.Symlink(state, filepath.Join(dir, "state")))
	sb, err := sandbox.New(sandbox.Config{Roots: []string{dir}, ProtectedDirs: []string{state}, ReadOnlyPatterns: []string{"gen/**"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sb.Close() })
	caps := append(writerCaps(), abi.CapFSDelete)
	env := &Env{Call: Call{CallID: "c1", Sandbox: sb, Capabilities: caps}, Files: Files{Reads: readcache.New()}}
	p, _ := sb.Resolve("a.txt")
	env.Reads.Record(p.Abs, sha256.Sum256([]byte("alpha\nbeta\n")), time.Now())
	return env, dir, state
}

func opsMust(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// runOps makes the commit as fs_commit does: resolved, checked, then
// committed.
func runOps(env *Env, ops ...abi.CommitFile) ([]abi.WriteInfo, error) {
	targets, err := prepareCommit(env, ops)
	if err != nil {
		return nil, err
	}
	resp, err := commitFiles(context.Background(), &env.Call, &env.Files, targets)
	if err != nil {
		return nil, err
	}
	return abi.DecodeCommitResult(resp)
}

func opsRemove(path string, recursive bool) abi.CommitFile {
	f := abi.CommitFile{Flags: abi.CommitDelete, Path: path}
	if recursive {
		f.Flags |= abi.CommitRecursive
	}
	return f
}

func opsMove(src, dst string, overwrite bool) abi.CommitFile {
	f := abi.CommitFile{Flags: abi.CommitMove, Path: dst, Data: []byte(src)}
	if overwrite {
		f.Flags |= abi.CommitOverwrite
	}
	return f
}

func opsMkdir(path string) abi.CommitFile { return abi.CommitFile{Flags: abi.CommitMkdir, Path: path} }

// Removals, moves and new directories: what each may touch, and that a
// refused one changes nothing (all or nothing with the other operations
// of its commit).
func TestCommitOps(t *testing.T) {
	tests := []struct {
		name   string
		caps   []abi.Capability // nil: fs.read, fs.write, fs.list and fs.delete
		ops    []abi.CommitFile
		kind   abi.ErrorKind // "" for success
		msg    []string
		absent []string // afterwards
		exist  []string
	}{
		{name: "delete a file", ops: []abi.CommitFile{opsRemove("u.txt", false)}, absent: []string{"u.txt"}},
		{name: "delete a file not read", ops: []abi.CommitFile{opsRemove("a.txt", false)}, absent: []string{"a.txt"}},
		{name: "a directory needs recursive", ops: []abi.CommitFile{opsRemove("d", false)}, kind: abi.KindExecutionFailed,
			msg: []string{"d is a directory", "set recursive"}, exist: []string{"d/x"}},
		{name: "delete a tree", ops: []abi.CommitFile{opsRemove("d/", true)}, absent: []string{"d"}, exist: []string{"a.txt"}},
		{name: "a link is deleted, not what it leads to", ops: []abi.CommitFile{opsRemove("d/link", false)}, absent: []string{"d/link"}, exist: []string{"a.txt"}},
		{name: "a link to the state directory is deleted, the state kept", ops: []abi.CommitFile{opsRemove("state", false)}, absent: []string{"state"}},
		{name: "a tree holding a git directory", ops: []abi.CommitFile{opsRemove("g", true)}, kind: abi.KindSandboxViolation,
			msg: []string{"may not delete g", "g/.git", "**/.git", "nothing was changed"}, exist: []string{"g/keep.txt", "g/.git/config"}},
		{name: "git's config", ops: []abi.CommitFile{opsRemove(".git/config", false)}, kind: abi.KindSandboxViolation, msg: []string{".git/config"}, exist: []string{".git/config"}},
		{name: "toolhost's configuration", ops: []abi.CommitFile{opsRemove("toolhost.toml", false)}, kind: abi.KindSandboxViolation, msg: []string{"toolhost.toml"}, exist: []string{"toolhost.toml"}},
		{name: "a read-only file", ops: []abi.CommitFile{opsRemove("gen/out.txt", false)}, kind: abi.KindSandboxViolation, msg: []string{"read-only"}, exist: []string{"gen/out.txt"}},
		{name: "the root", ops: []abi.CommitFile{opsRemove(".", true)}, kind: abi.KindSandboxViolation, msg: []string{"root of the sandbox"}, exist: []string{"a.txt"}},
		{name: "outside the root", ops: []abi.CommitFile{opsRemove("../x", false)}, kind: abi.KindSandboxViolation},
		{name: "missing", ops: []abi.CommitFile{opsRemove("nope", false)}, kind: abi.KindExecutionFailed, msg: []string{"nothing to delete"}},
		{name: "with a write, all or nothing", ops: []abi.CommitFile{opsRemove("u.txt", false), opsRemove("nope", false)}, kind: abi.KindExecutionFailed, exist: []string{"u.txt"}},

		{name: "move a file, making parents", ops: []abi.CommitFile{opsMove("u.txt", "n/e/w.txt", false)}, absent: []string{"u.txt"}, exist: []string{"n/e/w.txt"}},
		{name: "move a tree", ops: []abi.CommitFile{opsMove("d", "e", false)}, absent: []string{"d"}, exist: []string{"e/x", "e/sub/y", "e/link"}},
		{name: "onto an existing file", ops: []abi.CommitFile{opsMove("u.txt", "a.txt", false)}, kind: abi.KindExecutionFailed,
			msg: []string{"a.txt exists", "overwrite"}, exist: []string{"u.txt"}},
		{name: "overwrite a file read", ops: []abi.CommitFile{opsMove("u.txt", "a.txt", true)}, absent: []string{"u.txt"}},
		{name: "overwrite a file never read", ops: []abi.CommitFile{opsMove("a.txt", "u.txt", true)}, kind: abi.KindStaleFile, exist: []string{"a.txt", "u.txt"}},
		{name: "git's config out", ops: []abi.CommitFile{opsMove(".git/config", "config", false)}, kind: abi.KindSandboxViolation, msg: []string{".git/config"}, exist: []string{".git/config"}, absent: []string{"config"}},
		{name: "over toolhost's configuration", ops: []abi.CommitFile{opsMove("u.txt", "toolhost.toml", true)}, kind: abi.KindSandboxViolation, msg: []string{"toolhost.toml"}, exist: []string{"u.txt"}},
		{name: "a hook into git's directory", ops: []abi.CommitFile{opsMove("u.txt", ".git/hooks/pre-commit", false)}, kind: abi.KindSandboxViolation, exist: []string{"u.txt"}, absent: []string{".git/hooks"}},
		{name: "a tree holding git's directory", ops: []abi.CommitFile{opsMove("g", "h", false)}, kind: abi.KindSandboxViolation, msg: []string{"g/.git"}, exist: []string{"g/keep.txt"}},
		{name: "into the read-only place", ops: []abi.CommitFile{opsMove("d", "gen/d", false)}, kind: abi.KindSandboxViolation, exist: []string{"d/x"}},
		{name: "into itself", ops: []abi.CommitFile{opsMove("d", "d/sub/d", false)}, kind: abi.KindBadArgs, msg: []string{"into itself"}, exist: []string{"d/x"}},

		{name: "make directories", ops: []abi.CommitFile{opsMkdir("m/n/o")}, exist: []string{"m/n/o"}},
		{name: "an existing directory", ops: []abi.CommitFile{opsMkdir("d")}, exist: []string{"d/x"}},
		{name: "over a file", ops: []abi.CommitFile{opsMkdir("u.txt")}, kind: abi.KindExecutionFailed, msg: []string{"not a directory"}},
		{name: "in git's directory", ops: []abi.CommitFile{opsMkdir(".git/hooks")}, kind: abi.KindSandboxViolation, absent: []string{".git/hooks"}},

		{name: "delete without fs.delete", caps: writerCaps(), ops: []abi.CommitFile{opsRemove("u.txt", false)}, kind: abi.KindExecutionFailed,
			msg: []string{"capability fs.delete"}, exist: []string{"u.txt"}},
		{name: "move without fs.delete", caps: writerCaps(), ops: []abi.CommitFile{opsMove("u.txt", "v.txt", false)}, kind: abi.KindExecutionFailed, msg: []string{"fs.delete"}, exist: []string{"u.txt"}},
		{name: "write without fs.write", caps: []abi.Capability{abi.CapFSDelete}, ops: []abi.CommitFile{{Path: "new.txt", Data: []byte("n"), Flags: abi.CommitNew}},
			kind: abi.KindExecutionFailed, msg: []string{"capability fs.write"}, absent: []string{"new.txt"}},
		{name: "unknown flags", ops: []abi.CommitFile{{Path: "u.txt", Flags: 1 << 20}}, kind: abi.KindExecutionFailed, msg: []string{"does not know"}, exist: []string{"u.txt"}},
		{name: "two operations at once", ops: []abi.CommitFile{{Path: "u.txt", Flags: abi.CommitDelete | abi.CommitMkdir}}, kind: abi.KindExecutionFailed, msg: []string{"more than one"}},
		{name: "a tree and a file in it", ops: []abi.CommitFile{opsRemove("d", true), {Path: "d/new", Data: []byte("n"), Flags: abi.CommitNew}},
			kind: abi.KindExecutionFailed, msg: []string{"inside the other"}, exist: []string{"d/x"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env, dir, state := opsEnv(t)
			if tt.caps != nil {
				env.Capabilities = tt.caps
			}
			_, err := runOps(env, tt.ops...)
			var he *Error
			switch {
			case tt.kind == "" && err != nil:
				t.Fatalf("commit: %v", err)
			case tt.kind != "" && (!errors.As(err, &he) || he.Kind != tt.kind):
				t.Fatalf("error %v, want kind %s", err, tt.kind)
			}
			for _, m := range tt.msg {
				if !strings.Contains(he.Message, m) {
					t.Errorf("message %q does not say %q", he.Message, m)
				}
			}
			for _, name := range tt.absent {
				if _, err := os.Lstat(filepath.Join(dir, name)); !errors.Is(err, fs.ErrNotExist) {
					t.Errorf("%s exists afterwards (%v)", name, err)
				}
			}
			for _, name := range tt.exist {
				if _, err := os.Lstat(filepath.Join(dir, name)); err != nil {
					t.Errorf("%s is gone afterwards: %v", name, err)
				}
			}
			if b, err := os.ReadFile(filepath.Join(state, "journal.db")); err != nil || string(b) != "J" {
				t.Errorf("the state directory changed: %q, %v", b, err)
			}
		})
	}
}

// An additive tool (create_directory) may create and never replace,
// opsRemove or move.
func TestCommitOpsAdditive(t *testing.T) {
	for _, op := range []abi.CommitFile{opsRemove("u.txt", false), opsMove("u.txt", "v.txt", false), {Path: "u.txt", Data: []byte("x")}} {
		env, dir, _ := opsEnv(t)
		env.Additive = true
		_, err := runOps(env, op)
		if he := hostErr(t, err); !strings.Contains(he.Message, "only adds") {
			t.Errorf("flags %#x: %v, want a refusal saying the tool only adds", op.Flags, err)
		}
		if b, _ := os.ReadFile(filepath.Join(dir, "u.txt")); string(b) != "U" {
			t.Errorf("u.txt = %q after a refused operation", b)
		}
	}
	env, dir, _ := opsEnv(t)
	env.Additive = true
	infos, err := runOps(env, opsMkdir("new/dir"))
	if err != nil || len(infos) != 1 || infos[0].Flags&abi.WriteCreated == 0 {
		t.Fatalf("mkdir by an additive tool: %+v, %v", infos, err)
	}
	if fi, err := os.Stat(filepath.Join(dir, "new/dir")); err != nil || !fi.IsDir() {
		t.Errorf("new/dir: %v", err)
	}
}

// A dry run describes what would go, for the approval: a file's size,
// lines and first lines; a tree's files and bytes; a link as a link; and
// whether undo could restore it.
func TestCommitOpsDryRun(t *testing.T) {
	env, dir, _ := opsEnv(t)
	var long strings.Builder
	for i := range 25 {
		long.WriteString("line " + strings.Repeat("x", i) + "\r\n")
	}
	opsMust(t, os.WriteFile(filepath.Join(dir, "long.txt"), []byte(long.String()), 0o644))
	env.Journal = &opsJournal{max: 1 << 10}
	for _, tt := range []struct {
		op   abi.CommitFile
		want []string
	}{
		{opsRemove("a.txt", false), []string{"would delete a.txt: a file of 11 bytes, 2 lines", "    1  alpha", "    2  beta", "toolhost undo can restore it"}},
		{opsRemove("long.txt", false), []string{"25 lines", "   10  line xxxxxxxxx\r", "[15 more lines not shown]"}},
		{opsRemove("d", true), []string{"would delete d: a directory holding 3 files and 1 directory, 2 bytes in all", "undo can restore"}},
		{opsRemove("state", false), []string{"a symbolic link to", "the link itself"}},
		{opsMove("a.txt", "b/a.txt", false), []string{"would move a.txt to b/a.txt, creating directory b", "2 lines", "undo can move it back"}},
		{opsMkdir("d"), []string{"d exists already"}},
		{opsMkdir("p/q"), []string{"would create directory p/q and its missing parents p"}},
	} {
		targets, err := prepareCommit(env, []abi.CommitFile{tt.op})
		if err != nil {
			t.Fatal(err)
		}
		out, err := dryRun(context.Background(), &env.Call, targets)
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range tt.want {
			if !strings.Contains(string(out), w) {
				t.Errorf("%s %s: dry run %q does not say %q", tt.op.Path, tt.op.Data, out, w)
			}
		}
	}
	env.Journal = &opsJournal{max: 4}
	targets, _ := prepareCommit(env, []abi.CommitFile{opsRemove("a.txt", false)})
	out, _ := dryRun(context.Background(), &env.Call, targets)
	if !strings.Contains(string(out), "cannot be undone") || !strings.Contains(string(out), "max_preimage_bytes (4)") {
		t.Errorf("a file over the journal's cap: %q, want it to say it cannot be undone", out)
	}
	if _, err := os.Lstat(filepath.Join(dir, "a.txt")); err != nil {
		t.Errorf("a dry run deleted a.txt: %v", err)
	}
	// An approval's preview is not journaled itself; the call it shows
	// is, and the description says what that call's journal keeps.
	for _, tt := range []struct {
		preview int64
		want    string
	}{
		{1 << 10, "toolhost undo can restore it"},
		{4, "max_preimage_bytes (4)"},
		{0, "toolhost keeps no journal here"},
	} {
		env.Journal, env.DryRun, env.PreviewJournalBytes = nil, true, tt.preview
		targets, _ := prepareCommit(env, []abi.CommitFile{opsRemove("a.txt", false)})
		if out, _ := dryRun(context.Background(), &env.Call, targets); !strings.Contains(string(out), tt.want) {
			t.Errorf("a preview of a call journaled with max_preimage_bytes %d: %q, want it to say %q", tt.preview, out, tt.want)
		}
	}
}

// Everything a removal takes is journaled before it goes: every file with
// its content and mode, every directory with its mode, every link with
// its target; afterwards each is recorded absent. A opsMove records both
// ends, and the directories it made.
func TestCommitOpsJournal(t *testing.T) {
	env, dir, _ := opsEnv(t)
	j := &opsJournal{max: 1 << 20}
	env.Journal = j
	if _, err := runOps(env, opsRemove("d", true)); err != nil {
		t.Fatal(err)
	}
	want := map[string]FileState{
		"d":       {Exists: true, Mode: fs.ModeDir | 0o750},
		"d/x":     {Exists: true, Mode: 0o644, Size: 1, Content: []byte("X")},
		"d/sub":   {Exists: true, Mode: fs.ModeDir | 0o700},
		"d/sub/y": {Exists: true, Mode: 0o644, Size: 1, Content: []byte("Y")},
		"d/link":  {Exists: true, Mode: fs.ModeSymlink | 0o777, Size: 8, Content: []byte("../a.txt")},
	}
	if len(j.before) != len(want) || len(j.after) != len(want) {
		t.Fatalf("journaled %d before, %d after; want %d each", len(j.before), len(j.after), len(want))
	}
	for _, st := range j.before {
		rel, _ := filepath.Rel(dir, st.Path)
		w, ok := want[filepath.ToSlash(rel)]
		if !ok || st.Exists != w.Exists || st.Mode != w.Mode || st.Size != w.Size || string(st.Content) != string(w.Content) {
			t.Errorf("before %s: %+v, want %+v", rel, st, w)
		}
	}
	for _, st := range j.after {
		if st.Exists {
			t.Errorf("after %s: exists, want absent", st.Path)
		}
	}

	env, dir, _ = opsEnv(t)
	j = &opsJournal{max: 1 << 20}
	env.Journal = j
	if _, err := runOps(env, opsMove("a.txt", "n/a.txt", false)); err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, st := range j.before {
		rel, _ := filepath.Rel(dir, st.Path)
		got["before "+filepath.ToSlash(rel)] = opsDescribe(st)
	}
	for _, st := range j.after {
		rel, _ := filepath.Rel(dir, st.Path)
		got["after "+filepath.ToSlash(rel)] = opsDescribe(st)
	}
	sum := sha256.Sum256([]byte("alpha\nbeta\n"))
	for k, v := range map[string]string{
		"before n": "absent", "after n": "dir 0755",
		"before a.txt": "file 0640 alpha\nbeta\n", "after a.txt": "absent",
		"before n/a.txt": "absent", "after n/a.txt": "file 0640 " + hex.EncodeToString(sum[:]),
	} {
		if got[k] != v {
			t.Errorf("%s: %q, want %q", k, got[k], v)
		}
	}
}

func opsDescribe(st FileState) string {
	switch {
	case !st.Exists:
		return "absent"
	case st.Mode.IsDir():
		return "dir " + opsMode(st.Mode)
	case st.Content != nil:
		return "file " + opsMode(st.Mode) + " " + string(st.Content)
	}
	return "file " + opsMode(st.Mode) + " " + hex.EncodeToString(st.SHA256[:])
}

func opsMode(m fs.FileMode) string { return fmt.Sprintf("%04o", m.Perm()) }

// opsJournal keeps what the host functions hand the journal, to check
// exactly that; the journal's own records of it are tested through
// host.Open and the binary.
type opsJournal struct {
	max           int64
	before, after []FileState
}

func (j *opsJournal) ProcessStarted(int) error { return nil }
func (j *opsJournal) MaxPreimageBytes() int64  { return j.max }
func (j *opsJournal) AfterChange(_ context.Context, files []FileState) {
	j.after = append(j.after, files...)
}
func (j *opsJournal) BeforeChange(_ context.Context, files []FileState) error {
	j.before = append(j.before, files...)
	return nil
}

// A tree's removal waits for a write another call is making below it,
// and a tree that changed meanwhile (a file added while it waited) is
// refused as stale, not removed with what was never journaled.
func TestCommitOpsTreeWaitsForWritesBelow(t *testing.T) {
	env, dir, _ := opsEnv(t)
	unlock, err := env.Sandbox.Lock(context.Background(), filepath.Join(dir, "d/x"))
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := newGuest(1<<16).commit(context.Background(), env, []abi.CommitFile{opsRemove("d", true)}, 0)
		done <- err
	}()
	select {
	case err := <-done:
		unlock()
		t.Fatalf("the removal of d did not wait for the write below it: %v", err)
	case <-time.After(200 * time.Millisecond):
	}
	opsMust(t, os.WriteFile(filepath.Join(dir, "d/new"), []byte("N"), 0o644))
	unlock()
	he := hostErr(t, <-done)
	if he.Kind != abi.KindStaleFile || !strings.Contains(he.Message, "changed while toolhost checked it") {
		t.Fatalf("error %v, want StaleFile saying d changed", he)
	}
	for _, name := range []string{"d/x", "d/sub/y", "d/new"} {
		if _, err := os.Lstat(filepath.Join(dir, name)); err != nil {
			t.Errorf("%s is gone after a refused removal: %v", name, err)
		}
	}
}

// A move reaches across the sandbox's roots (and their file systems):
// the file leaves one root and arrives in the other, journaled at both.
func TestCommitOpsMoveAcrossRoots(t *testing.T) {
	var roots []string
	for range 2 {
		dir, err := filepath.EvalSymlinks(t.TempDir())
		opsMust(t, err)
		roots = append(roots, dir)
	}
	if shm, err := os.MkdirTemp("/dev/shm", "opsroot"); err == nil {
		// Another file system, where there is one: the move copies.
		t.Cleanup(func() { os.RemoveAll(shm) })
		roots[1] = shm
	}
	opsMust(t, os.WriteFile(filepath.Join(roots[0], "a.txt"), []byte("across\n"), 0o600))
	sb, err := sandbox.New(sandbox.Config{Roots: roots, AllowAbsolute: true})
	opsMust(t, err)
	t.Cleanup(func() { sb.Close() })
	j := &opsJournal{max: 1 << 10}
	env := &Env{Call: Call{CallID: "c1", Sandbox: sb, Capabilities: []abi.Capability{abi.CapFSDelete}, Journal: j}, Files: Files{Reads: readcache.New()}}
	dst := filepath.Join(roots[1], "in/b.txt")
	if _, err := runOps(env, opsMove("a.txt", dst, false)); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(dst); err != nil || string(b) != "across\n" {
		t.Errorf("%s = %q, %v", dst, b, err)
	}
	if fi, err := os.Stat(dst); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("%s lost its mode: %v", dst, err)
	}
	if _, err := os.Lstat(filepath.Join(roots[0], "a.txt")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a.txt is still in the first root: %v", err)
	}
	var paths []string
	for _, st := range j.after {
		paths = append(paths, st.Path)
	}
	if len(paths) != 3 {
		t.Errorf("journaled after the move: %v; want the source, the directory made and the destination", paths)
	}
}

// A directory made over a regular file, and a move whose destination's
// directory became a link out of the root after it was resolved, are
// refused with a message naming the call, the path, what is there and
// what to do, never the operating system's own words.
func TestCommitOpsMessages(t *testing.T) {
	env, dir, state := opsEnv(t)
	_, err := runOps(env, opsMkdir("a.txt"))
	if err == nil || !strings.Contains(err.Error(), "call ") || !strings.Contains(err.Error(), "a.txt exists and is not a directory (a regular file)") {
		t.Errorf("mkdir over a file: %v", err)
	}
	opsMust(t, os.MkdirAll(filepath.Join(dir, "dst"), 0o755))
	targets, err := resolveCommit(&env.Call, &env.Files, []abi.CommitFile{opsMove("u.txt", "dst/m5", false)})
	if err != nil {
		t.Fatal(err)
	}
	opsMust(t, os.Rename(filepath.Join(dir, "dst"), filepath.Join(dir, "dst.old")))
	opsMust(t, os.Symlink(state, filepath.Join(dir, "dst")))
	err = checkCommit(context.Background(), &env.Call, &env.Files, targets)
	if err == nil {
		t.Fatal("a move into a directory swapped for a link out of the root was not refused")
	}
	for _, w := range []string{"call ", "dst/m5", "symbolic link", "nothing was changed", "retry"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("the refusal %q does not say %q", err, w)
		}
	}
	if strings.Contains(err.Error(), "statat") || strings.Contains(err.Error(), "escapes from parent") {
		t.Errorf("the refusal gives the operating system's words: %v", err)
	}
}
