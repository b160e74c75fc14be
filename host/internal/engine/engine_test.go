package engine

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolhost/toolhost/abi"
	"github.com/toolhost/toolhost/host/internal/confine"
	"github.com/toolhost/toolhost/host/internal/hostfn"
	"github.com/toolhost/toolhost/host/internal/output"
	"github.com/toolhost/toolhost/host/internal/readcache"
	"github.com/toolhost/toolhost/host/internal/registry"
	"github.com/toolhost/toolhost/host/internal/runtime"
	"github.com/toolhost/toolhost/host/internal/sandbox"
	"github.com/toolhost/toolhost/internal/testplugin"
)

var (
	buildOnce sync.Once
	pluginDir string

	registryOnce sync.Once
	sharedReg    *registry.Registry
)

// plugins builds the built-in tools and the test plugins once.
func plugins(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		pkgs := []string{"plugins/read_file", "plugins/write_file", "plugins/list_directory", "plugins/apply_patch", "plugins/run_command", "plugins/edit_file", "plugins/delete_file", "plugins/move_file", "host/internal/runtime/testdata/spin", "host/internal/runtime/testdata/impure",
			"host/internal/engine/testdata/liar_write", "host/internal/engine/testdata/liar_exec", "host/internal/engine/testdata/liar_big", "host/internal/engine/testdata/sneaky_write"}
		dir, err := testplugin.SharedDir("engine", pkgs...)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range pkgs {
			testplugin.Build(t, dir, p)
		}
		pluginDir = dir
	})
	if pluginDir == "" {
		t.Fatal("plugin build failed earlier")
	}
	return pluginDir
}

type fixture struct {
	root  string
	eng   *Engine
	reads *readcache.Cache
}

// testRegistry loads the plugins into one runtime shared by every test:
// compiling them again per test would cost seconds each under -race.
func testRegistry(t *testing.T) *registry.Registry {
	t.Helper()
	registryOnce.Do(func() {
		ctx := context.Background()
		rt, err := runtime.New(ctx, runtime.Config[hostfn.Env]{CacheDir: testplugin.CacheDir(t), HostFunctions: hostfn.Functions()})
		if err != nil {
			t.Fatal(err)
		}
		reg, err := registry.Load(ctx, rt, plugins(t))
		if err != nil {
			t.Fatal(err)
		}
		sharedReg = reg
	})
	if sharedReg == nil {
		t.Fatal("registry setup failed earlier")
	}
	return sharedReg
}

func newFixture(t *testing.T, limits abi.Limits) *fixture {
	return configFixture(t, Config{Limits: limits})
}

// configFixture is an engine configured by cfg over a fresh root, with the
// shared registry, a sandbox (read-only .git/**) and one read cache.
func configFixture(t *testing.T, cfg Config) *fixture {
	t.Helper()
	root := t.TempDir()
	sb, err := sandbox.New(sandbox.Config{Roots: []string{root}, IncludeDefaultDenies: true, ReadOnlyPatterns: []string{"frozen/**"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sb.Close() })
	f := &fixture{root: root, reads: readcache.New()}
	cfg.Registry, cfg.Sandbox = testRegistry(t), sb
	cfg.ReadCache = func(string) *readcache.Cache { return f.reads }
	if cfg.Confiner == nil {
		// These tests are of the engine and the command runner; the
		// sandbox around commands has its own suites (host/internal/confine,
		// host/internal/tests/confine).
		cfg.Confiner = confine.Unconfined("engine tests")
	}
	f.eng = New(cfg)
	return f
}

func (f *fixture) write(t *testing.T, name, content string) {
	t.Helper()
	path := filepath.Join(f.root, name)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func (f *fixture) call(t *testing.T, tool, args string) Result {
	t.Helper()
	return f.eng.execute(context.Background(), Call{ID: "call_1", Name: tool, Arguments: json.RawMessage(args)}, callOptions{Conversation: "c"})
}

func wantError(t *testing.T, r Result, kind abi.ErrorKind, substr string) {
	t.Helper()
	if r.OK || r.Error == nil || r.Error.Kind != kind || !strings.Contains(r.Error.Message, substr) {
		t.Fatalf("result %+v (error %+v), want %s mentioning %q", r, r.Error, kind, substr)
	}
}

func lines(n int) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "line %d\n", i)
	}
	return b.String()
}

// T-READ-01: line ranges are 1-based and inclusive; invalid ranges are
// BadArgs; an end past EOF reads through EOF.
func TestReadFileLineRanges_T_READ_01(t *testing.T) {
	f := newFixture(t, abi.Limits{})
	f.write(t, "ten.txt", lines(10))
	tests := []struct {
		args    string
		want    string
		errKind abi.ErrorKind
		errText string
	}{
		{`{"path":"ten.txt","start_line":2,"end_line":3}`, "line 2\nline 3\n", "", ""},
		{`{"path":"ten.txt","start_line":9,"end_line":50}`, "line 9\nline 10\n", "", ""},
		{`{"path":"ten.txt","start_line":10}`, "line 10\n", "", ""},
		{`{"path":"ten.txt","end_line":1}`, "line 1\n", "", ""},
		{`{"path":"ten.txt","start_line":0}`, "", abi.KindBadArgs, "/start_line"},
		{`{"path":"ten.txt","end_line":0}`, "", abi.KindBadArgs, "/end_line"},
		{`{"path":"ten.txt","start_line":5,"end_line":4}`, "", abi.KindBadArgs, "after end_line"},
		{`{"path":"ten.txt","start_line":11}`, "", abi.KindBadArgs, "past the end"},
	}
	for _, tt := range tests {
		r := f.call(t, "read_file", tt.args)
		if tt.errKind != "" {
			wantError(t, r, tt.errKind, tt.errText)
			continue
		}
		if !r.OK || r.Content != tt.want {
			t.Errorf("%s: got %+v, want %q", tt.args, r, tt.want)
		}
	}
}

// T-READ-02: a range read that would scan past max_scan_bytes fails with
// advice to narrow the range; one within it succeeds.
func TestReadFileScanLimit_T_READ_02(t *testing.T) {
	f := newFixture(t, abi.Limits{MaxScanBytes: 4096})
	f.write(t, "big.txt", lines(2000)) // ~18 KB
	r := f.call(t, "read_file", `{"path":"big.txt","start_line":1,"end_line":5}`)
	if !r.OK || r.Content != lines(5) {
		t.Fatalf("range inside the scan limit: %+v", r)
	}
	r = f.call(t, "read_file", `{"path":"big.txt","start_line":1500,"end_line":1501}`)
	wantError(t, r, abi.KindExecutionFailed, "narrower line range")
}

func TestReadFileWholeAndBinary(t *testing.T) {
	f := newFixture(t, abi.Limits{MaxFileReadBytes: 1000, AvailableCapacityBytes: 64 << 10})
	f.write(t, "small.txt", "hello\n")
	f.write(t, "large.txt", strings.Repeat("x", 2000))
	bin := []byte{0x89, 'P', 'N', 'G', 0, 1, 2, 3, 0xff}
	if err := os.WriteFile(filepath.Join(f.root, "blob.bin"), bin, 0o644); err != nil {
		t.Fatal(err)
	}
	if r := f.call(t, "read_file", `{"path":"small.txt"}`); !r.OK || r.Content != "hello\n" {
		t.Fatalf("small: %+v", r)
	}
	wantError(t, f.call(t, "read_file", `{"path":"large.txt"}`), abi.KindExecutionFailed, "start_line and end_line")
	r := f.call(t, "read_file", `{"path":"blob.bin"}`)
	want := "[binary:base64]\n" + base64.StdEncoding.EncodeToString(bin)
	if !r.OK || r.Content != want {
		t.Fatalf("binary: %q, want %q", r.Content, want)
	}
	wantError(t, f.call(t, "read_file", `{"path":"blob.bin","start_line":1}`), abi.KindBadArgs, "binary")
	wantError(t, f.call(t, "read_file", `{"path":"nope.txt"}`), abi.KindExecutionFailed, "no such file")
	wantError(t, f.call(t, "read_file", `{"path":"."}`), abi.KindExecutionFailed, "is a directory")
}

// FR-TOOL-READ-01b: a large binary file is cut by the tool itself, inside
// the output limit, and flagged [truncated].
func TestReadFileBinaryTruncated(t *testing.T) {
	f := newFixture(t, abi.Limits{MaxOutputBytes: 300})
	blob := make([]byte, 5000)
	if err := os.WriteFile(filepath.Join(f.root, "blob.bin"), blob, 0o644); err != nil {
		t.Fatal(err)
	}
	r := f.call(t, "read_file", `{"path":"blob.bin"}`)
	if !r.OK || !strings.HasPrefix(r.Content, "[binary:base64][truncated]\n") || len(r.Content) > 300 {
		t.Fatalf("got %d bytes: %.80q", len(r.Content), r.Content)
	}
	if strings.Contains(r.Content, output.TruncationMarker) {
		t.Fatal("framework truncation applied to binary output")
	}
}

// T-VAL-02: schema-invalid arguments are pre-resolved and the plugin never
// runs: write_file with an unknown argument creates nothing.
func TestSchemaInvalidArgsNotExecuted_T_VAL_02(t *testing.T) {
	f := newFixture(t, abi.Limits{})
	r := f.call(t, "write_file", `{"path":"new.txt","content":"x","bogus":true}`)
	wantError(t, r, abi.KindBadArgs, "call_1")
	if _, err := os.Stat(filepath.Join(f.root, "new.txt")); !os.IsNotExist(err) {
		t.Fatalf("plugin ran despite invalid arguments: %v", err)
	}
	r = f.call(t, "read_file", `{"path":5,"start_line":"x"}`)
	wantError(t, r, abi.KindBadArgs, "/path")
	if !strings.Contains(r.Error.Message, "/start_line") {
		t.Errorf("not every violation listed: %s", r.Error.Message)
	}
}

func TestUnknownToolAndArgsLimit(t *testing.T) {
	f := newFixture(t, abi.Limits{})
	wantError(t, f.call(t, "rm_rf", `{}`), abi.KindUnknownTool, "read_file")
	f.eng.cfg.MaxArgsBytes = 64
	r := f.call(t, "write_file", `{"path":"a.txt","content":"`+strings.Repeat("y", 100)+`"}`)
	wantError(t, r, abi.KindSandboxViolation, "max_tool_args_bytes")
}

// T-SBX-01/02/03 through the engine's preflight: the plugin never sees a
// path the sandbox refuses.
func TestPreflightDenials(t *testing.T) {
	f := newFixture(t, abi.Limits{})
	f.write(t, ".ssh/id_rsa", "KEY")
	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "secret"), []byte("SECRET"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside, "secret"), filepath.Join(f.root, "link")); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"../x", "/etc/passwd", ".ssh/id_rsa", "link", "a/../../b"} {
		r := f.call(t, "read_file", `{"path":"`+p+`"}`)
		wantError(t, r, abi.KindSandboxViolation, "")
		if strings.Contains(r.Error.Message, "SECRET") || strings.Contains(r.Error.Message, "KEY") {
			t.Fatalf("denial leaked content: %s", r.Error.Message)
		}
	}
}

// T-OUT-01 and T-OUT-02 end to end: output over the limit is cut with the
// marker inside it; terminal controls never reach the caller.
func TestOutputTruncatedAndSanitized_T_OUT_01_T_OUT_02(t *testing.T) {
	f := newFixture(t, abi.Limits{MaxOutputBytes: 100})
	f.write(t, "long.txt", strings.Repeat("abcdefghij", 50))
	f.write(t, "evil.txt", "ok\x1b[2J\x1b]0;pwned\x07 done\n")
	r := f.call(t, "read_file", `{"path":"long.txt"}`)
	if !r.OK || len(r.Content) != 100 || !strings.HasSuffix(r.Content, output.TruncationMarker) {
		t.Fatalf("truncation: %d bytes %q", len(r.Content), r.Content)
	}
	r = f.call(t, "read_file", `{"path":"evil.txt"}`)
	if !r.OK || r.Content != "ok done\n" {
		t.Fatalf("sanitize: %q", r.Content)
	}
}

// T-TMO-01: a call past its timeout yields Timeout promptly, and the next
// call runs normally.
func TestTimeoutThenContinue_T_TMO_01(t *testing.T) {
	f := newFixture(t, abi.Limits{})
	// Warm instances, so the 200 ms deadline is spent by the guest alone:
	// a cold call's start-up counts against it too, and takes longer than
	// that on a loaded machine under -race.
	spin, _ := testRegistry(t).Lookup("spin")
	if err := spin.Plugin.Warm(context.Background(), 2); err != nil { // one for the spin, one after it
		t.Fatal(err)
	}
	start := time.Now()
	r := f.call(t, "spin", `{"spin":true}`) // manifest timeout: 200 ms
	wantError(t, r, abi.KindTimeout, "timed out")
	if el := time.Since(start); el > 5*time.Second {
		t.Fatalf("timeout took %v", el)
	}
	if r := f.call(t, "spin", `{}`); !r.OK || r.Content != "done" {
		t.Fatalf("after timeout: %+v", r)
	}
}

func TestCancelledByCaller(t *testing.T) {
	f := newFixture(t, abi.Limits{})
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(100*time.Millisecond, cancel)
	r := f.eng.execute(ctx, Call{ID: "c9", Name: "spin", Arguments: json.RawMessage(`{"spin":true}`)}, callOptions{})
	wantError(t, r, abi.KindCancelled, "Cancelled by user")
}

// FR-TOOL-PATCH-02a/b semantics for write_file: overwriting needs a fresh
// read; creating does not; the write refreshes the record.
func TestWriteFileStaleProtection(t *testing.T) {
	f := newFixture(t, abi.Limits{})
	f.write(t, "a.txt", "one\n")
	if err := os.Chmod(filepath.Join(f.root, "a.txt"), 0o600); err != nil {
		t.Fatal(err)
	}
	wantError(t, f.call(t, "write_file", `{"path":"a.txt","content":"two\n"}`), abi.KindStaleFile, "not read")
	if r := f.call(t, "read_file", `{"path":"a.txt"}`); !r.OK {
		t.Fatal(r.Error)
	}
	f.write(t, "a.txt", "changed behind our back\n")
	wantError(t, f.call(t, "write_file", `{"path":"a.txt","content":"two\n"}`), abi.KindStaleFile, "changed since")
	if r := f.call(t, "read_file", `{"path":"a.txt","start_line":1,"end_line":1}`); !r.OK {
		t.Fatal(r.Error)
	}
	if r := f.call(t, "write_file", `{"path":"a.txt","content":"two\n"}`); !r.OK || !strings.HasPrefix(r.Content, "modified: a.txt") {
		t.Fatalf("write after read: %+v", r)
	}
	if r := f.call(t, "write_file", `{"path":"a.txt","content":"three\n"}`); !r.OK {
		t.Fatalf("second write without re-reading: %+v", r.Error)
	}
	st, err := os.Stat(filepath.Join(f.root, "a.txt"))
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("mode not kept: %v %v", st.Mode(), err)
	}
	if r := f.call(t, "write_file", `{"path":"sub/dir/new.txt","content":"n"}`); !r.OK || !strings.HasPrefix(r.Content, "created: sub/dir/new.txt") {
		t.Fatalf("create: %+v", r)
	}
	wantError(t, f.call(t, "write_file", `{"path":"other/new.txt","content":"n","create_dirs":false}`), abi.KindExecutionFailed, "create_dirs")
	r := f.call(t, "write_file", `{"path":"a.txt","content":"four\n","dry_run":true}`)
	if !r.OK || !strings.Contains(r.Content, "-three") || !strings.Contains(r.Content, "+four") {
		t.Fatalf("dry run: %+v", r)
	}
	if b, _ := os.ReadFile(filepath.Join(f.root, "a.txt")); string(b) != "three\n" {
		t.Fatalf("dry run wrote: %q", b)
	}
}

func TestListDirectory(t *testing.T) {
	f := newFixture(t, abi.Limits{})
	f.write(t, "b.txt", "bb")
	f.write(t, "a/inner.txt", "i")
	f.write(t, ".hidden", "h")
	f.write(t, "keys/server.pem", "k")
	if err := os.Symlink("/etc", filepath.Join(f.root, "etc-link")); err != nil {
		t.Fatal(err)
	}
	r := f.call(t, "list_directory", `{"depth":2,"structured":true}`)
	if !r.OK {
		t.Fatal(r.Error)
	}
	var got struct {
		Path    string `json:"path"`
		Entries []struct {
			Name, Path, Type, Modified string
			Size                       int64
		} `json:"entries"`
		Truncated bool `json:"truncated"`
	}
	if err := json.Unmarshal(r.Structured, &got); err != nil {
		t.Fatalf("structured result not JSON: %v\n%s", err, r.Structured)
	}
	var paths []string
	for _, e := range got.Entries {
		paths = append(paths, e.Path+":"+e.Type)
		if _, err := time.Parse(time.RFC3339, e.Modified); err != nil {
			t.Errorf("%s: modified %q is not RFC 3339", e.Path, e.Modified)
		}
	}
	want := "a:dir a/inner.txt:file b.txt:file etc-link:symlink keys:dir"
	if strings.Join(paths, " ") != want {
		t.Fatalf("entries %v, want %s", paths, want)
	}
	if !strings.Contains(r.Content, "a/\na/inner.txt  ") || !strings.Contains(r.Content, "etc-link@\n") {
		t.Errorf("text is not the compact listing: %s", r.Content)
	}
	r = f.call(t, "list_directory", `{"max_entries":1,"structured":true}`)
	if !r.OK || !strings.Contains(string(r.Structured), `"truncated":true`) || !strings.Contains(r.Content, "raise max_entries") {
		t.Fatalf("max_entries: %+v", r)
	}
}

// A call whose plugin was still starting when the deadline came never ran:
// its Timeout says so, and does not warn that it may have acted; a tool
// stopped while running does (FR-EXE-03).
func TestRunErrorTellsStartupFromRun_FR_EXE_03(t *testing.T) {
	e := New(Config{})
	startup := e.runError(context.Background(), "write_file", true, &runtime.InterruptedError{Plugin: "write_file", Cause: context.DeadlineExceeded, Startup: true}, time.Second, time.Second)
	if startup.Kind != abi.KindTimeout || !strings.Contains(startup.Message, "nothing ran") || strings.Contains(startup.Message, "may have changed") {
		t.Errorf("start-up stopped: %+v", startup)
	}
	running := e.runError(context.Background(), "write_file", true, &runtime.InterruptedError{Plugin: "write_file", Cause: context.DeadlineExceeded}, time.Second, time.Second)
	if running.Kind != abi.KindTimeout || !strings.Contains(running.Message, "may have changed") {
		t.Errorf("run stopped: %+v", running)
	}
}
