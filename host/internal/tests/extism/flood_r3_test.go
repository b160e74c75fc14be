package extism_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/toolhost/toolhost/abi"
	"github.com/toolhost/toolhost/host"
	"github.com/toolhost/toolhost/host/internal/config"
	"github.com/toolhost/toolhost/host/internal/engine"
	"github.com/toolhost/toolhost/host/internal/tests/extism"
	"github.com/toolhost/toolhost/internal/testplugin"
)

// floodSource is a hyper-mcp guest whose tool sends notifications without
// end: "small" ones, or ones "big" as the block it allocates (32 MiB of a
// 64 MiB cap).
const floodSource = `package main

import pdk "github.com/extism/go-pdk"

//go:wasmimport extism:host/user notify_progress
func notifyProgress(uint64)

//go:wasmexport list_tools
func listTools() int32 {
	pdk.OutputString(` + "`" + `{"tools":[{"name":"small","inputSchema":{"type":"object"}},{"name":"big","inputSchema":{"type":"object"}}]}` + "`" + `)
	return 0
}

//go:wasmexport call_tool
func callTool() int32 {
	in := pdk.InputString()
	n := 64
	if len(in) > 0 && contains(in, "\"big\"") {
		n = 32 << 20
	}
	msg := make([]byte, n)
	copy(msg, ` + "`" + `{"progress":1,"message":"` + "`" + `)
	for i := 24; i < n-2; i++ {
		msg[i] = 'x'
	}
	copy(msg[n-2:], ` + "`" + `"}` + "`" + `)
	m := pdk.AllocateBytes(msg)
	for {
		notifyProgress(m.Offset())
		m = pdk.AllocateBytes(msg)
	}
}

func contains(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return true
		}
	}
	return false
}

func main() {}
`

// buildFlood builds floodSource into dir/flood.wasm.
func buildFlood(t *testing.T, dir string) {
	t.Helper()
	src := t.TempDir()
	for _, f := range []string{"go.mod", "go.sum"} {
		b, err := os.ReadFile(filepath.Join(extism.Dir(t), "plugins", f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(src, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(src, "main.go"), []byte(floodSource), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("go", "build", "-buildmode=c-shared", "-o", filepath.Join(dir, "flood.wasm"), ".")
	cmd.Dir = src
	cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm", "GOWORK=off", "GOFLAGS=-mod=mod")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build the flooding guest: %v\n%s", err, b)
	}
}

// stuckSink is an event consumer that never reads: each Send blocks
// until its context ends.
type stuckSink struct{}

func (stuckSink) Send(ctx context.Context, _ engine.Event) error {
	<-ctx.Done()
	return ctx.Err()
}

// FR-EXE-03: an Extism tool that sends
// notifications without end to a consumer that does not read is still
// stopped at its deadline, and the next call (on a fresh instance) is
// too.
func TestNotificationFloodContained(t *testing.T) {
	dir := t.TempDir()
	buildFlood(t, dir)
	cfg := defaultConfig(t)
	one := 1
	cfg.Tools.Overrides["small"] = config.Override{TimeoutSeconds: &one}
	h := openDir(t, cfg, dir)
	for i, tool := range []string{"small", "small"} {
		start := time.Now()
		var r engine.Result
		done := make(chan struct{})
		go func() {
			defer close(done)
			r = run(t, h, "flood"+string(rune('a'+i)), tool, `{}`, stuckSink{})
		}()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			t.Fatalf("%s: the call did not end within 30 s of a 1 s deadline", tool)
		}
		if r.OK || r.Error.Kind != abi.KindTimeout {
			t.Fatalf("%s: %+v, want a Timeout", tool, r)
		}
		took := time.Since(start)
		t.Logf("%s: %v", tool, took)
		if took > 10*time.Second {
			t.Errorf("%s: stopped after %v, want about 1 s", tool, took)
		}
	}
}

// openDir opens a host on the plugin directory dir with cfg.
func openDir(t *testing.T, cfg *config.Config, dir string) *host.Host {
	t.Helper()
	h, err := host.Open(context.Background(), host.Options{PluginDir: dir, Config: cfg, CacheDir: testplugin.CacheDir(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close(context.Background()) })
	return h
}
