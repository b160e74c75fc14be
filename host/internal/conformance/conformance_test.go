package conformance

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/toolhost/toolhost/internal/testplugin"
)

// A built-in plugin loads: its kind and tool are known before any check.
func TestLoadBuiltIn(t *testing.T) {
	dir := testplugin.BuiltIns(t)
	s, err := load(context.Background(), Plugin{Module: filepath.Join(dir, "read_file.wasm")}, Options{CacheDir: testplugin.CacheDir(t)})
	t.Cleanup(s.cleanup)
	if err != nil || s.loadErr != nil {
		t.Fatalf("load: %v / %v", err, s.loadErr)
	}
	if s.kind != KindNative || len(s.tools) != 1 || s.tools[0].Name != "read_file" || len(s.described) != 1 {
		t.Fatalf("kind %s tools %v described %v", s.kind, s.tools, s.described)
	}
}
