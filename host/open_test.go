package host_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

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
