package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestServeLoadsConfigOnce: toolhost serve --http reads the
// configuration once, so a project file it ignores is warned about once,
// not once per step of the start.
func TestServeLoadsConfigOnce(t *testing.T) {
	ws, state := t.TempDir(), t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	for _, v := range []string{"TOOLHOST_CONFIG", "TOOLHOST_TOKEN"} {
		t.Setenv(v, "") // restored when the test ends
		os.Unsetenv(v)
	}
	if err := os.WriteFile(filepath.Join(ws, "toolhost.toml"), []byte("[tools.approval]\nmode = \"auto\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Chdir(ws)
	stderr := captureStderr(t)
	// A context already ended: the server starts, then shuts down at once.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	run(ctx, []string{"serve", "--http", "127.0.0.1:0", "--plugins", t.TempDir(), "--state-dir", state, "--cache-dir", filepath.Join(state, "cache")})
	out := stderr()
	if n := strings.Count(out, "configuration file ignored"); n != 1 {
		t.Errorf("the ignored project file is warned about %d times, want once:\n%s", n, out)
	}
}

// captureStderr sends os.Stderr to a file until the test ends; the
// returned func reads what was written so far.
func captureStderr(t *testing.T) func() string {
	t.Helper()
	f, err := os.Create(filepath.Join(t.TempDir(), "stderr"))
	if err != nil {
		t.Fatal(err)
	}
	old := os.Stderr
	os.Stderr = f
	t.Cleanup(func() { os.Stderr = old; f.Close() })
	return func() string {
		b, _ := os.ReadFile(f.Name())
		return string(b)
	}
}
