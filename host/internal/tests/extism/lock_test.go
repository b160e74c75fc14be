package extism_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolhost/toolhost/host"
	"github.com/toolhost/toolhost/host/internal/tests/extism"
	"github.com/toolhost/toolhost/internal/testplugin"
)

// An Extism plugin is pinned like a native one: once locked, it loads
// unchanged, and a changed module, in the directory or in its own folder,
// is refused naming it.
func TestLockPinsExtismPlugins(t *testing.T) {
	for _, file := range []string{"hypertools.wasm", "hyper/plugin.wasm"} {
		t.Run(file, func(t *testing.T) {
			dir := t.TempDir()
			path := extism.Install(t, dir, "hypertools", file)
			if _, err := host.Lock(dir); err != nil {
				t.Fatal(err)
			}
			open := func() (*host.Host, error) {
				return host.Open(context.Background(), host.Options{PluginDir: dir, Config: defaultConfig(t), CacheDir: testplugin.CacheDir(t)})
			}
			h, err := open()
			if err != nil {
				t.Fatalf("the locked, unchanged plugin is refused: %v", err)
			}
			h.Close(context.Background())

			f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			// A custom section: the module still loads, only its hash changed.
			f.Write([]byte{0, 3, 1, 'x', 'y'})
			f.Close()
			h, err = open()
			if err == nil {
				h.Close(context.Background())
				t.Fatal("a changed Extism module was loaded despite the lock")
			}
			if !strings.Contains(err.Error(), filepath.ToSlash(file)) || !strings.Contains(err.Error(), "toolhost lock") {
				t.Fatalf("the refusal does not name the module and what to do: %v", err)
			}
		})
	}
}
