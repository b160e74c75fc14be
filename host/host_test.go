package host_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/toolhost/toolhost/abi"
	"github.com/toolhost/toolhost/host"
	"github.com/toolhost/toolhost/host/internal/config"
	"github.com/toolhost/toolhost/host/internal/engine"
	"github.com/toolhost/toolhost/internal/testplugin"
)

// pluginDir is the directory of the built-in plugins.
func pluginDir(t *testing.T) string { return testplugin.BuiltIns(t) }

// open opens a host on a fresh workspace with the default configuration.
func open(t *testing.T, mutate func(*config.Config, *host.Options)) (*host.Host, string) {
	t.Helper()
	root := t.TempDir()
	cfg := config.Default()
	cfg.Tools.Sandbox.AllowedRoots = []string{root}
	opts := host.Options{PluginDir: pluginDir(t), Config: cfg, CacheDir: testplugin.CacheDir(t)}
	if mutate != nil {
		mutate(cfg, &opts)
	}
	h, err := host.Open(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close(context.Background()) })
	return h, root
}

// unconfined makes cfg run commands without run_command's sandbox, for
// tests of other concerns (the journal, approvals): the sandbox has its
// own suites (host/internal/confine, host/internal/tests/confine). Sandbox
// "off" takes network "on" with it, as the configuration requires.
func unconfined(cfg *config.Config) {
	cfg.Tools.RunCommand.Sandbox = config.SandboxOff
	cfg.Tools.RunCommand.Network = config.NetworkOn
}

// openState opens a host on root keeping its state in state, as each
// toolhost process on one machine does; the caller closes it.
func openState(t *testing.T, root, state string) *host.Host {
	t.Helper()
	cfg := config.Default()
	cfg.Tools.Sandbox.AllowedRoots = []string{root}
	h, err := host.Open(context.Background(), host.Options{PluginDir: pluginDir(t), Config: cfg, CacheDir: testplugin.CacheDir(t), StateDir: state})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func call(id, name, args string) engine.Call {
	return engine.Call{ID: id, Name: name, Arguments: json.RawMessage(args)}
}

func approveAll() engine.Approver {
	return engine.ApproverFunc(func(context.Context, []engine.Confirmation) (engine.Decision, error) {
		return engine.ApproveAll("the test"), nil
	})
}

func TestOpenErrors(t *testing.T) {
	missingRoot := config.Default()
	missingRoot.Tools.Sandbox.AllowedRoots = []string{filepath.Join(t.TempDir(), "absent")}
	badMode := config.Default()
	badMode.Tools.Approval.Mode = "yolo"
	tests := []struct {
		name string
		opts host.Options
		want string
	}{
		{"invalid configuration", host.Options{PluginDir: pluginDir(t), Config: badMode}, "yolo"},
		{"no plugin directory", host.Options{}, "PluginDir is empty"},
		{"plugin directory absent", host.Options{PluginDir: filepath.Join(t.TempDir(), "nothing")}, "nothing"},
		{"plugin directory without plugins", host.Options{PluginDir: t.TempDir()}, "holds no *.wasm plugins"},
		{"root absent", host.Options{PluginDir: pluginDir(t), Config: missingRoot}, "absent"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, err := host.Open(context.Background(), tt.opts)
			if err == nil {
				h.Close(context.Background())
				t.Fatalf("Open succeeded, want an error containing %q", tt.want)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q does not contain %q", err, tt.want)
			}
		})
	}
}

// The tools offered follow the configured mode and policy (FR-MODE-01):
// run_command is installed but denied by default, so it is not offered.
func TestToolsFollowPolicy(t *testing.T) {
	h, _ := open(t, nil)
	names := func(ms []abi.Manifest) string {
		var s []string
		for _, m := range ms {
			s = append(s, m.Name)
		}
		return strings.Join(s, ",")
	}
	installed := names(h.Installed())
	if !strings.Contains(installed, "run_command") {
		t.Errorf("Installed() = %s, want run_command among them", installed)
	}
	want := strings.Replace(strings.Replace(installed, "run_command,", "", 1), ",run_command", "", 1)
	if got := names(h.Tools()); got != want || !strings.Contains(got, "apply_patch,") || !strings.Contains(got, "read_file,") || !strings.Contains(got, "write_file") {
		t.Errorf("Tools() = %s, want %s: every installed tool but run_command", got, want)
	}
	disabled, _ := open(t, func(c *config.Config, _ *host.Options) { c.Tools.Mode = config.ModeDisabled })
	if got := disabled.Tools(); len(got) != 0 {
		t.Errorf("disabled mode offers %d tools, want none", len(got))
	}
}

// A conversation's reads survive the host (FR-TOOL-PATCH-02a): a second
// host on the same state directory lets the conversation overwrite what
// the first one read, and refuses another conversation.
func TestReadCachePersistsAcrossHosts(t *testing.T) {
	state := t.TempDir()
	root := t.TempDir()
	os.WriteFile(filepath.Join(root, "a.txt"), []byte("old\n"), 0o644)
	openAt := func() *host.Host { return openState(t, root, state) }
	first := openAt()
	_, rs := first.Process(context.Background(), engine.Batch{Conversation: "c1", Calls: []engine.Call{call("r", "read_file", `{"path":"a.txt"}`)}}, host.BatchOptions{})
	first.Close(context.Background())
	if !rs[0].OK {
		t.Fatalf("read: %+v", rs[0].Error)
	}
	second := openAt()
	defer second.Close(context.Background())
	write := call("w", "write_file", `{"path":"a.txt","content":"new\n"}`)
	_, rs = second.Process(context.Background(), engine.Batch{Conversation: "c2", Calls: []engine.Call{write}}, host.BatchOptions{Approver: approveAll()})
	if rs[0].OK || rs[0].Error.Kind != abi.KindStaleFile {
		t.Fatalf("another conversation overwrote an unread file: %+v", rs[0])
	}
	_, rs = second.Process(context.Background(), engine.Batch{Conversation: "c1", Calls: []engine.Call{write}}, host.BatchOptions{Approver: approveAll()})
	if !rs[0].OK {
		t.Fatalf("the conversation that read a.txt could not overwrite it: %+v", rs[0].Error)
	}
}

// toolhost's own directories are out of every tool's reach, even inside a
// root: the state directory (read caches) and the plugin directory (what
// runs next).
func TestOwnDirectoriesProtected(t *testing.T) {
	root := t.TempDir()
	plugins := filepath.Join(root, "plugins")
	os.MkdirAll(plugins, 0o755)
	src := pluginDir(t)
	entries, _ := os.ReadDir(src)
	for _, e := range entries {
		if e.IsDir() { // the built-ins' conformance cases
			continue
		}
		data, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(plugins, e.Name()), data, 0o644)
	}
	cfg := config.Default()
	cfg.Tools.Sandbox.AllowedRoots = []string{root}
	h, err := host.Open(context.Background(), host.Options{
		PluginDir: plugins, Config: cfg, CacheDir: testplugin.CacheDir(t), StateDir: filepath.Join(root, "state"),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close(context.Background())
	calls := []engine.Call{
		call("1", "write_file", `{"path":"plugins/zz.wasm","content":"x"}`),
		call("2", "write_file", `{"path":"state/reads/x","content":"x"}`),
		call("3", "read_file", `{"path":"state/reads/x"}`),
		call("4", "list_directory", `{"path":"plugins"}`),
	}
	_, rs := h.Process(context.Background(), engine.Batch{Conversation: "c", Calls: calls}, host.BatchOptions{Approver: approveAll()})
	for _, r := range rs {
		if r.OK || r.Error.Kind != abi.KindSandboxViolation {
			t.Errorf("call %s reached toolhost's own directory: %+v", r.ID, r)
		}
	}
	if _, err := os.Stat(filepath.Join(plugins, "zz.wasm")); err == nil {
		t.Error("a tool created a module in the plugin directory")
	}
}

// A long-running host keeps a bounded number of read caches in memory: the
// least recently used is evicted, saved first when there is a state
// directory (the conversation can still overwrite what it read), forgotten
// otherwise (its overwrites are refused as stale, never allowed).
func TestReadCachesBounded(t *testing.T) {
	for _, withState := range []bool{true, false} {
		t.Run(map[bool]string{true: "with state directory", false: "in memory"}[withState], func(t *testing.T) {
			h, root := open(t, func(_ *config.Config, o *host.Options) {
				if withState {
					o.StateDir = t.TempDir()
				}
			})
			os.WriteFile(filepath.Join(root, "a.txt"), []byte("old\n"), 0o644)
			read := []engine.Call{call("r", "read_file", `{"path":"a.txt"}`)}
			for i := range 300 {
				_, rs := h.Process(context.Background(), engine.Batch{Conversation: "conv-" + strconv.Itoa(i), Calls: read}, host.BatchOptions{})
				if !rs[0].OK {
					t.Fatalf("read in conversation %d: %+v", i, rs[0].Error)
				}
			}
			write := []engine.Call{call("w", "write_file", `{"path":"a.txt","content":"new\n"}`)}
			_, rs := h.Process(context.Background(), engine.Batch{Conversation: "conv-0", Calls: write}, host.BatchOptions{Approver: approveAll()})
			if withState && !rs[0].OK {
				t.Errorf("evicted conversation lost its reads despite a state directory: %+v", rs[0].Error)
			}
			if !withState && (rs[0].OK || rs[0].Error.Kind != abi.KindStaleFile) {
				t.Errorf("evicted conversation without a state directory: got %+v, want StaleFile", rs[0])
			}
		})
	}
}

// Closing a host twice, as a deferred Close after an explicit one does,
// is harmless: the second does nothing and says what the first said.
func TestCloseTwice(t *testing.T) {
	root := t.TempDir()
	cfg := config.Default()
	cfg.Tools.Sandbox.AllowedRoots = []string{root}
	h, err := host.Open(context.Background(), host.Options{PluginDir: pluginDir(t), Config: cfg, CacheDir: testplugin.CacheDir(t), StateDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	first := h.Close(context.Background())
	if second := h.Close(context.Background()); !errors.Is(second, first) && (first != nil || second != nil) {
		t.Errorf("the second Close returned %v, the first %v", second, first)
	}
}
