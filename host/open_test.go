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
