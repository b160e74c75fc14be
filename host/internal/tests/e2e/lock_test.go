package e2e

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// lockedDir is a plugin directory holding copies of built-in plugins, as
// shipped (packed), not yet locked.
func lockedDir(t *testing.T, names ...string) string {
	t.Helper()
	dir := t.TempDir()
	for _, name := range names {
		copyPlugin(t, name, dir, name)
	}
	return dir
}

// copyPlugin copies the built-in plugin name into dir as as.
func copyPlugin(t *testing.T, name, dir, as string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(filepath.Dir(toolhost), "plugins", name+".wasm"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, as+".wasm"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	return data
}

// appendSection changes a module without breaking it: a custom section
// at its end. It returns the hashes before and after.
func appendSection(t *testing.T, path string) (was, is string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	changed := append(data, 0, 9, 7, 'c', 'h', 'a', 'n', 'g', 'e', 'd', 1)
	if err := os.WriteFile(path, changed, 0o644); err != nil {
		t.Fatal(err)
	}
	return sha(data), sha(changed)
}

func sha(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

func wantIn(t *testing.T, what, got string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(got, w) {
			t.Errorf("%s lacks %q:\n%s", what, w, got)
		}
	}
}

// Toolhost lock writes one line per plugin, sorted, with
// its SHA-256, says what it wrote, and an unchanged plugin is then served
// by call, batch and serve.
func TestLockThenServe(t *testing.T) {
	dir := lockedDir(t, "write_file", "read_file")
	w := newWorkspace(t)
	out := w.runOK(t, "lock", "--plugins", dir)
	if !regexp.MustCompile(`(?m)^[0-9a-f]{12}  read_file\.wasm\n[0-9a-f]{12}  write_file\.wasm\nwrote .*toolhost\.lock \(2 plugins\)\n$`).MatchString(out) {
		t.Errorf("toolhost lock printed:\n%s", out)
	}
	lock, _ := os.ReadFile(filepath.Join(dir, "toolhost.lock"))
	read, _ := os.ReadFile(filepath.Join(dir, "read_file.wasm"))
	wantIn(t, "toolhost.lock", string(lock), "# toolhost.lock", sha(read)+"  read_file.wasm\n")

	w.file(t, "a.txt", "hello\n")
	r, stderr, code := w.call(t, "read_file", `{"path":"a.txt"}`, "--plugins", dir)
	if code != 0 || !r.OK || !strings.Contains(r.Content, "hello") {
		t.Fatalf("call of a locked plugin: exit %d, %+v\n%s", code, r, stderr)
	}
	file := writeBatchFile(t, "locked", []map[string]any{{"id": "r1", "name": "read_file", "arguments": map[string]any{"path": "a.txt"}}})
	if out, stderr, code := w.run(t, "batch", "--file", file, "--plugins", dir); code != 0 || !strings.Contains(out, "hello") {
		t.Fatalf("batch of a locked plugin: exit %d\n%s\n%s", code, out, stderr)
	}
	s := serveMCP(t, w, nil, "--plugins", dir, "--root", w.dir)
	if res, text := s.call(t, testContext(t), "read_file", map[string]any{"path": "a.txt"}); res.IsError || !strings.Contains(text, "hello") {
		t.Errorf("serve, tools/call of a locked plugin: %s", text)
	}
}

// A plugin changed after locking, or another module
// under its name, is refused by call, batch and serve at start, naming
// the plugin, the two hashes and what to do; and so is a plugin added
// after locking.
func TestLockRefusesChangedAndUnlisted(t *testing.T) {
	type change func(t *testing.T, dir string) []string // what the refusal names
	tests := []struct {
		name   string
		change change
	}{
		{"section appended", func(t *testing.T, dir string) []string {
			was, is := appendSection(t, filepath.Join(dir, "read_file.wasm"))
			return []string{"read_file.wasm", was, is, "run toolhost lock", "restore"}
		}},
		{"another plugin under its name", func(t *testing.T, dir string) []string {
			was, _ := os.ReadFile(filepath.Join(dir, "write_file.wasm"))
			is := copyPlugin(t, "list_directory", dir, "write_file")
			return []string{"write_file.wasm", sha(was), sha(is), "run toolhost lock"}
		}},
		{"added after locking", func(t *testing.T, dir string) []string {
			is := copyPlugin(t, "list_directory", dir, "list_directory")
			return []string{"list_directory.wasm", sha(is), "not listed", "run toolhost lock"}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := lockedDir(t, "read_file", "write_file")
			w := newWorkspace(t)
			w.runOK(t, "lock", "--plugins", dir)
			want := tt.change(t, dir)
			w.file(t, "a.txt", "hello\n")
			file := writeBatchFile(t, "locked", []map[string]any{{"id": "r1", "name": "read_file", "arguments": map[string]any{"path": "a.txt"}}})
			for _, args := range [][]string{
				{"call", "read_file", "--args", `{"path":"a.txt"}`},
				{"batch", "--file", file},
				{"serve", "--stdio"},
			} {
				out, stderr, code := w.run(t, append(args, "--plugins", dir)...)
				if code != 2 || strings.Contains(out, "hello") {
					t.Errorf("toolhost %s: exit %d, stdout %q; want the plugin directory refused (exit 2)", args[0], code, out)
				}
				wantIn(t, "toolhost "+args[0]+" stderr", stderr, want...)
			}
		})
	}
}

// Without the warm-up, serve reads a packed module's code when it is
// first called. Changed after serve started, the module is refused then,
// naming the plugin and both hashes: the changed code never runs. (With
// the warm-up, the default, serve reads, vets and compiles each module at
// start and never reads the file again, so the vetted code is what runs.)
func TestLockRefusesModuleReplacedWhileServing(t *testing.T) {
	dir := lockedDir(t, "read_file", "write_file")
	w := newWorkspace(t)
	w.runOK(t, "lock", "--plugins", dir)
	w.file(t, "a.txt", "hello\n")
	s := serveMCP(t, w, nil, "--plugins", dir, "--root", w.dir, "--warm=false")
	was, is := appendSection(t, filepath.Join(dir, "read_file.wasm"))
	for range 2 { // a second call does not retry into the changed code
		res, text := s.call(t, testContext(t), "read_file", map[string]any{"path": "a.txt"})
		if !res.IsError || strings.Contains(text, "hello") {
			t.Fatalf("read_file changed after serve started ran: %s", text)
		}
		wantIn(t, "tools/call result", text, "read_file.wasm", was, is, "toolhost lock")
	}
}

// Lock --check writes nothing, exits 0 when the plugins
// match and 1 naming each difference otherwise.
func TestLockCheck(t *testing.T) {
	dir := lockedDir(t, "read_file", "write_file")
	w := newWorkspace(t)
	if _, stderr, code := w.run(t, "lock", "--check", "--plugins", dir); code != 1 || !strings.Contains(stderr, "run toolhost lock") {
		t.Errorf("--check without a lock: exit %d, %s", code, stderr)
	}
	w.runOK(t, "lock", "--plugins", dir)
	lock, _ := os.ReadFile(filepath.Join(dir, "toolhost.lock"))
	if out := w.runOK(t, "lock", "--check", "--plugins", dir); !strings.Contains(out, "matches") {
		t.Errorf("--check on an unchanged directory: %s", out)
	}
	was, is := appendSection(t, filepath.Join(dir, "read_file.wasm"))
	added := copyPlugin(t, "list_directory", dir, "list_directory")
	_, stderr, code := w.run(t, "lock", "--check", "--plugins", dir)
	if code != 1 {
		t.Errorf("--check with differences: exit %d, want 1", code)
	}
	wantIn(t, "--check stderr", stderr, "read_file.wasm", was, is, "list_directory.wasm", sha(added), "not listed", "2 plugin(s) differ")
	if now, _ := os.ReadFile(filepath.Join(dir, "toolhost.lock")); string(now) != string(lock) {
		t.Error("--check changed the lock")
	}
}

// A malformed lock line stops call and lock --check,
// naming the file and the line.
func TestLockMalformedLine(t *testing.T) {
	dir := lockedDir(t, "read_file")
	w := newWorkspace(t)
	w.runOK(t, "lock", "--plugins", dir)
	f, err := os.OpenFile(filepath.Join(dir, "toolhost.lock"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("# another comment\nnot-a-hash  ../elsewhere.wasm\n")
	f.Close()
	w.file(t, "a.txt", "hello\n")
	out, stderr, code := w.run(t, "call", "read_file", "--args", `{"path":"a.txt"}`, "--plugins", dir)
	if code != 2 || strings.Contains(out, "hello") {
		t.Errorf("call under a malformed lock: exit %d, stdout %q", code, out)
	}
	wantIn(t, "call stderr", stderr, "toolhost.lock:5", "not-a-hash")
	_, stderr, code = w.run(t, "lock", "--check", "--plugins", dir)
	if code != 1 {
		t.Errorf("lock --check under a malformed lock: exit %d", code)
	}
	wantIn(t, "lock --check stderr", stderr, "toolhost.lock:5")
}

// A module whose file name holds a newline cannot write
// a line of its choosing into the lock. Named "x\n<hash>  write_file.wasm",
// it would pin <hash> for a write_file.wasm nobody reviewed, to be
// dropped in after the lock is written. toolhost lock refuses to write,
// naming the file, and writes no lock.
func TestLockRefusesInjectedName(t *testing.T) {
	dir := lockedDir(t, "read_file")
	w := newWorkspace(t)
	unreviewed, err := os.ReadFile(filepath.Join(filepath.Dir(toolhost), "plugins", "write_file.wasm"))
	if err != nil {
		t.Fatal(err)
	}
	name := "notes\n" + sha(unreviewed) + "  write_file.wasm"
	if err := os.WriteFile(filepath.Join(dir, name), []byte("not a module"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, stderr, code := w.run(t, "lock", "--plugins", dir)
	lock, _ := os.ReadFile(filepath.Join(dir, "toolhost.lock"))
	if strings.Contains(string(lock), "  write_file.wasm") {
		t.Fatalf("the lock pins a write_file.wasm that is not in the directory:\n%s", lock)
	}
	if code != 1 || lock != nil {
		t.Errorf("lock with a file named with a newline: exit %d, lock written: %v", code, lock != nil)
	}
	wantIn(t, "lock stderr", stderr, `notes\n`, "control character", "rename the file")
}
