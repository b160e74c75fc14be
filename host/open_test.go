package host_test

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/toolhost/toolhost/host"
	"github.com/toolhost/toolhost/host/internal/config"
	"github.com/toolhost/toolhost/internal/testplugin"
)

// Open opens the journal and the plugins at once. When both fail, the
// error is always the journal's, as when they opened in turn, and the
// part that did not fail is closed with the rest.
func TestOpenReportsTheFirstPartThatFailed(t *testing.T) {
	for range 5 {
		state := t.TempDir()
		if err := os.Mkdir(filepath.Join(state, "journal.db"), 0o755); err != nil {
			t.Fatal(err)
		}
		cfg := config.Default()
		cfg.Tools.Sandbox.AllowedRoots = []string{t.TempDir()}
		h, err := host.Open(context.Background(), host.Options{PluginDir: t.TempDir(), CacheDir: testplugin.CacheDir(t), StateDir: state, Config: cfg})
		if err == nil {
			h.Close(context.Background())
			t.Fatal("Open succeeded over a journal that is a directory and no plugins")
		}
		if !strings.Contains(err.Error(), "is a directory") || strings.Contains(err.Error(), "holds no") {
			t.Fatalf("Open: %v, want the journal's error alone", err)
		}
	}
}

// WarmUp readies each named tool's plugin once and says how many it
// readied; one whose context has ended readies nothing and says it stopped.
func TestWarmUp(t *testing.T) {
	cfg := config.Default()
	cfg.Tools.Sandbox.AllowedRoots = []string{t.TempDir()}
	h, err := host.Open(context.Background(), host.Options{PluginDir: pluginDir(t), CacheDir: testplugin.CacheDir(t), Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close(context.Background())
	stopped, stop := context.WithCancel(context.Background())
	stop()
	if n, err := h.WarmUp(stopped, []string{"read_file"}); n != 0 || err == nil || !strings.Contains(err.Error(), "warm-up stopped") {
		t.Errorf("WarmUp on an ended context = %d, %v; want 0 and that it stopped", n, err)
	}
	if n, err := h.WarmUp(context.Background(), []string{"list_directory", "read_file", "read_file", "no_such_tool"}); n != 2 || err != nil {
		t.Errorf("WarmUp = %d, %v; want 2 plugins readied", n, err)
	}
}

// An Open that fails closes every part that did open: no file (the
// journal's database) stays open, no goroutine runs on, and no temporary
// directory (the commands' state, made when no state directory is
// given) is left behind.
func TestOpenThatFailsLeavesNothingOpen(t *testing.T) {
	if _, err := os.Stat("/proc/self/fd"); err != nil {
		t.Skip("counts open files in /proc/self/fd")
	}
	broken := t.TempDir()
	if err := os.WriteFile(filepath.Join(broken, "broken.wasm"), []byte("not a module"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		plugins string
		state   func(t *testing.T) string
		want    string
	}{
		{"a broken plugin, journal and commands open", broken, func(t *testing.T) string { return t.TempDir() }, "broken.wasm"},
		{"a broken plugin, commands' state in a temporary directory", broken, func(*testing.T) string { return "" }, "broken.wasm"},
		{"a journal that cannot open, plugins and commands open", pluginDir(t), func(t *testing.T) string {
			state := t.TempDir()
			if err := os.Mkdir(filepath.Join(state, "journal.db"), 0o755); err != nil {
				t.Fatal(err)
			}
			return state
		}, "is a directory"},
	}
	// The compiled modules' cache is made before TMPDIR points at the
	// directory that must stay empty.
	cache := testplugin.CacheDir(t)
	// The runtime's poller opens its descriptors once, for the first
	// pipe, and keeps them: made now, they are in both counts.
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	r.Close()
	w.Close()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tmp := t.TempDir()
			t.Setenv("TMPDIR", tmp)
			cfg := config.Default()
			cfg.Tools.Sandbox.AllowedRoots = []string{t.TempDir()}
			opts := host.Options{PluginDir: tt.plugins, CacheDir: cache, StateDir: tt.state(t), Config: cfg}
			files, goroutines := openFiles(t), runtime.NumGoroutine()
			h, err := host.Open(context.Background(), opts)
			if err == nil {
				h.Close(context.Background())
				t.Fatal("Open succeeded")
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Open: %v, want %q", err, tt.want)
			}
			if now := openFiles(t); now != files {
				t.Errorf("%d files open after the failed Open, %d before it", now, files)
			}
			// A bound that proves the goroutines end, not how fast.
			for deadline := time.Now().Add(10 * time.Second); runtime.NumGoroutine() > goroutines && time.Now().Before(deadline); {
				time.Sleep(10 * time.Millisecond)
			}
			if now := runtime.NumGoroutine(); now > goroutines {
				t.Errorf("%d goroutines after the failed Open, %d before it", now, goroutines)
			}
			if left, _ := os.ReadDir(tmp); len(left) > 0 {
				t.Errorf("the failed Open left %s in the temporary directory", left[0].Name())
			}
		})
	}
}

// openFiles counts the process's open file descriptors.
func openFiles(t *testing.T) int {
	t.Helper()
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(fds)
}
