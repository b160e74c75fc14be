package host_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolhost/toolhost/abi"
	"github.com/toolhost/toolhost/host"
	"github.com/toolhost/toolhost/host/internal/config"
	"github.com/toolhost/toolhost/host/internal/engine"
	"github.com/toolhost/toolhost/internal/testplugin"
)

// lockedPlugins returns a plugin directory inside parent holding read_file
// and write_file, packed (loaded without their code, as `make` ships
// them), and locked.
func lockedPlugins(t *testing.T, parent string) string {
	t.Helper()
	dir := filepath.Join(parent, "plugins")
	os.MkdirAll(dir, 0o755)
	for _, name := range []string{"read_file.wasm", "write_file.wasm"} {
		raw, err := os.ReadFile(filepath.Join(pluginDir(t), name))
		if err != nil {
			t.Fatal(err)
		}
		packed, err := host.PackPlugin(context.Background(), raw)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), packed, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := host.Lock(dir); err != nil {
		t.Fatal(err)
	}
	return dir
}

// changed is module with a custom section appended: still a valid module,
// no longer the one locked.
func changed(t *testing.T, path string) (before, after string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	more := append(data, 0, 9, 7, 'c', 'h', 'a', 'n', 'g', 'e', 'd', 1)
	if err := os.WriteFile(path, more, 0o644); err != nil {
		t.Fatal(err)
	}
	return sum(data), sum(more)
}

func sum(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

func openLocked(t *testing.T, plugins, root string) (*host.Host, error) {
	t.Helper()
	cfg := config.Default()
	cfg.Tools.Sandbox.AllowedRoots = []string{root}
	return host.Open(context.Background(), host.Options{PluginDir: plugins, Config: cfg, CacheDir: testplugin.CacheDir(t)})
}

func wantAll(t *testing.T, what, got string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(got, w) {
			t.Errorf("%s %q lacks %q", what, got, w)
		}
	}
}

// With a lock in the plugin directory, Open serves the
// modules it pins and refuses, naming the plugin and both hashes, one that
// changed or that the lock does not list.
func TestOpenEnforcesLock(t *testing.T) {
	t.Run("unchanged", func(t *testing.T) {
		root := t.TempDir()
		h, err := openLocked(t, lockedPlugins(t, t.TempDir()), root)
		if err != nil {
			t.Fatal(err)
		}
		defer h.Close(context.Background())
		os.WriteFile(filepath.Join(root, "a.txt"), []byte("hello\n"), 0o644)
		_, rs := h.Process(context.Background(), engine.Batch{Conversation: "c", Calls: []engine.Call{call("1", "read_file", `{"path":"a.txt"}`)}}, host.BatchOptions{})
		if !rs[0].OK {
			t.Fatalf("locked plugin not served: %+v", rs[0].Error)
		}
	})
	t.Run("changed", func(t *testing.T) {
		plugins := lockedPlugins(t, t.TempDir())
		was, is := changed(t, filepath.Join(plugins, "write_file.wasm"))
		h, err := openLocked(t, plugins, t.TempDir())
		if err == nil {
			h.Close(context.Background())
			t.Fatal("Open served a plugin changed since it was locked")
		}
		wantAll(t, "error", err.Error(), "write_file.wasm", was, is, "toolhost lock")
	})
	t.Run("unlisted", func(t *testing.T) {
		plugins := lockedPlugins(t, t.TempDir())
		data, _ := os.ReadFile(filepath.Join(pluginDir(t), "list_directory.wasm"))
		os.WriteFile(filepath.Join(plugins, "list_directory.wasm"), data, 0o644)
		h, err := openLocked(t, plugins, t.TempDir())
		if err == nil {
			h.Close(context.Background())
			t.Fatal("Open served a plugin the lock does not list")
		}
		wantAll(t, "error", err.Error(), "list_directory.wasm", sum(data), "not listed", "toolhost lock")
	})
	t.Run("corrupted", func(t *testing.T) {
		// A byte appended makes the module unreadable: the lock, checked
		// before anything parses it, says what changed.
		plugins := lockedPlugins(t, t.TempDir())
		path := filepath.Join(plugins, "read_file.wasm")
		was, _ := os.ReadFile(path)
		f, _ := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
		f.WriteString("x")
		f.Close()
		is, _ := os.ReadFile(path)
		h, err := openLocked(t, plugins, t.TempDir())
		if err == nil {
			h.Close(context.Background())
			t.Fatal("Open served a corrupted module")
		}
		wantAll(t, "error", err.Error(), "read_file.wasm", sum(was), sum(is), "toolhost lock")
	})
	t.Run("malformed", func(t *testing.T) {
		plugins := lockedPlugins(t, t.TempDir())
		f, _ := os.OpenFile(filepath.Join(plugins, host.LockFile), os.O_APPEND|os.O_WRONLY, 0)
		f.WriteString("deadbeef  x.wasm\n")
		f.Close()
		h, err := openLocked(t, plugins, t.TempDir())
		if err == nil {
			h.Close(context.Background())
			t.Fatal("Open accepted a malformed lock")
		}
		wantAll(t, "error", err.Error(), host.LockFile+":5", "deadbeef")
	})
}

// A packed module's code is read when it is first
// compiled, after Open. Changed in between, it is refused then: the call
// fails naming the plugin and both hashes, and the changed code never runs.
func TestLockedPluginReplacedAfterOpen(t *testing.T) {
	root := t.TempDir()
	os.WriteFile(filepath.Join(root, "a.txt"), []byte("hello\n"), 0o644)
	plugins := lockedPlugins(t, t.TempDir())
	h, err := openLocked(t, plugins, root)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close(context.Background())
	was, is := changed(t, filepath.Join(plugins, "read_file.wasm"))
	for _, id := range []string{"1", "2"} { // the second does not retry into the changed code
		_, rs := h.Process(context.Background(), engine.Batch{Conversation: "c", Calls: []engine.Call{
			call(id, "read_file", `{"path":"a.txt"}`)}}, host.BatchOptions{})
		if rs[0].OK || rs[0].Error.Kind != abi.KindExecutionFailed {
			t.Fatalf("call %s of a changed plugin: %+v, want ExecutionFailed", id, rs[0])
		}
		wantAll(t, "message", rs[0].Error.Message, "read_file.wasm", was, is, "toolhost lock")
	}
}

// The lock lies in the plugin directory, out of every tool's reach even
// when that directory is inside a root: a tool cannot re-pin a plugin.
func TestLockProtectedFromTools(t *testing.T) {
	root := t.TempDir()
	plugins := lockedPlugins(t, root)
	lock, _ := os.ReadFile(filepath.Join(plugins, host.LockFile))
	h, err := openLocked(t, plugins, root)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close(context.Background())
	_, rs := h.Process(context.Background(), engine.Batch{Conversation: "c", Calls: []engine.Call{
		call("1", "write_file", `{"path":"plugins/toolhost.lock","content":"# nothing pinned\n"}`),
	}}, host.BatchOptions{Approver: approveAll()})
	if rs[0].OK || rs[0].Error.Kind != abi.KindSandboxViolation {
		t.Errorf("write to the lock: %+v, want a SandboxViolation", rs[0])
	}
	if now, _ := os.ReadFile(filepath.Join(plugins, host.LockFile)); string(now) != string(lock) {
		t.Errorf("a tool changed the lock:\n%s", now)
	}
}

// Lock pins modules in immediate subdirectories too (an Extism plugin
// beside its manifest), and CheckLock reports each difference.
func TestLockAndCheckLock(t *testing.T) {
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "hyper", "deeper"), 0o755)
	os.WriteFile(filepath.Join(dir, "a.wasm"), []byte("a"), 0o644)
	os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("n"), 0o644)
	os.WriteFile(filepath.Join(dir, "hyper", "plugin.wasm"), []byte("h"), 0o644)
	os.WriteFile(filepath.Join(dir, "hyper", "deeper", "x.wasm"), []byte("x"), 0o644)
	// A hidden folder is not loaded, so it is not pinned either: the lock
	// lists what the registry serves.
	os.MkdirAll(filepath.Join(dir, ".old"), 0o755)
	os.WriteFile(filepath.Join(dir, ".old", "plugin.wasm"), []byte("o"), 0o644)
	got, err := host.Lock(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := []host.LockedPlugin{{Path: "a.wasm", SHA256: sum([]byte("a"))}, {Path: "hyper/plugin.wasm", SHA256: sum([]byte("h"))}}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("Lock = %v, want %v", got, want)
	}
	if problems, err := host.CheckLock(dir); err != nil || len(problems) != 0 {
		t.Fatalf("CheckLock right after Lock = %v, %v", problems, err)
	}
	os.WriteFile(filepath.Join(dir, "hyper", "plugin.wasm"), []byte("H"), 0o644)
	os.WriteFile(filepath.Join(dir, "b.wasm"), []byte("b"), 0o644)
	os.Remove(filepath.Join(dir, "a.wasm"))
	problems, err := host.CheckLock(dir)
	if err != nil || len(problems) != 3 {
		t.Fatalf("CheckLock = %v, %v; want three problems", problems, err)
	}
	wantAll(t, "problem", problems[0].Error(), "b.wasm", "not listed")
	wantAll(t, "problem", problems[1].Error(), "hyper/plugin.wasm", sum([]byte("h")), sum([]byte("H")))
	wantAll(t, "problem", problems[2].Error(), "a.wasm", "not in the plugin directory")

	if _, err := host.CheckLock(t.TempDir()); err == nil || !strings.Contains(err.Error(), "toolhost lock") {
		t.Errorf("CheckLock without a lock: %v", err)
	}
}
