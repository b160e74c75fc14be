// Package bench measures toolhost against native Go doing the same work,
// in the same run, and reports the ratio ("x-native"). Run with make bench.
package bench

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/toolhost/toolhost/abi"
	"github.com/toolhost/toolhost/host/internal/confine"
	"github.com/toolhost/toolhost/host/internal/engine"
	"github.com/toolhost/toolhost/host/internal/hostfn"
	"github.com/toolhost/toolhost/host/internal/readcache"
	"github.com/toolhost/toolhost/host/internal/registry"
	"github.com/toolhost/toolhost/host/internal/runtime"
	"github.com/toolhost/toolhost/host/internal/sandbox"
	"github.com/toolhost/toolhost/internal/testplugin"
)

type env struct {
	dir   string
	sb    *sandbox.Sandbox
	reg   *registry.Registry
	eng   *engine.Engine
	reads *readcache.Cache
	root  *os.Root
	// confined is eng with run_command's default sandbox:
	// commands run through the toolhost binary's launcher.
	confined *engine.Engine
	// cold is confined without launchers started ahead of need: every
	// command starts its own.
	cold  *engine.Engine
	state string // the confiner's state directory
}

var (
	setupOnce sync.Once
	shared    *env
)

// TestMain removes the workspace the benchmarks shared, which outlives
// any one benchmark.
func TestMain(m *testing.M) {
	code := m.Run()
	if shared != nil {
		shared.root.Close()
		os.RemoveAll(shared.dir)
		os.RemoveAll(shared.state)
	}
	os.Exit(code)
}

func pluginDir(b *testing.B) string {
	if bin := os.Getenv("TOOLHOST_BIN"); bin != "" {
		return filepath.Join(filepath.Dir(bin), "plugins")
	}
	return testplugin.BuildAll(b, "plugins/read_file", "plugins/write_file", "plugins/list_directory", "plugins/apply_patch", "plugins/run_command", "plugins/edit_file", "plugins/multi_edit")
}

func setup(b *testing.B) *env {
	b.Helper()
	setupOnce.Do(func() {
		ctx := context.Background()
		dir, err := os.MkdirTemp("", "toolhost-bench")
		if err != nil {
			b.Fatal(err)
		}
		write := func(name string, data []byte) {
			p := filepath.Join(dir, name)
			os.MkdirAll(filepath.Dir(p), 0o755)
			if err := os.WriteFile(p, data, 0o644); err != nil {
				b.Fatal(err)
			}
		}
		write("small.txt", bytes.Repeat([]byte("0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcde\n"), 64)) // 4 KiB
		var big strings.Builder
		for i := 1; big.Len() < 1<<20; i++ {
			fmt.Fprintf(&big, "%06d the quick brown fox jumps over the lazy dog, again and again and again\n", i)
		}
		write("big.txt", []byte(big.String()))
		for i := range 100 {
			write(fmt.Sprintf("list/f%03d.txt", i), []byte("x"))
		}
		rt, err := runtime.New(ctx, runtime.Config[hostfn.Env]{CacheDir: testplugin.CacheDir(b), HostFunctions: hostfn.Functions()})
		if err != nil {
			b.Fatal(err)
		}
		reg, err := registry.Load(ctx, rt, pluginDir(b))
		if err != nil {
			b.Fatal(err)
		}
		sb, err := sandbox.New(sandbox.Config{Roots: []string{dir}, IncludeDefaultDenies: true})
		if err != nil {
			b.Fatal(err)
		}
		root, err := os.OpenRoot(dir)
		if err != nil {
			b.Fatal(err)
		}
		e := &env{dir: dir, sb: sb, reg: reg, reads: readcache.New(), root: root}
		// Every tool runs without a confirmation (so no summary export is
		// called): the benchmarks measure a call through plan and run,
		// as close as the tool loop allows to the plugin's own work.
		pol := benchPolicy()
		e.eng = engine.New(engine.Config{Registry: reg, Sandbox: sb, Policy: pol, ReadCache: func(string) *readcache.Cache { return e.reads },
			Confiner: confine.Unconfined("benchmark baseline")})
		if e.state, err = os.MkdirTemp("", "toolhost-bench-state"); err != nil {
			b.Fatal(err)
		}
		e.confined = engine.New(engine.Config{Registry: reg, Sandbox: sb, Policy: pol, ReadCache: func(string) *readcache.Cache { return e.reads },
			Confiner: benchConfiner(b, e.state, true)})
		e.cold = engine.New(engine.Config{Registry: reg, Sandbox: sb, Policy: pol, ReadCache: func(string) *readcache.Cache { return e.reads },
			Confiner: benchConfiner(b, e.state, false)})
		for _, t := range reg.Tools() {
			if err := t.Plugin.Warm(ctx, 2); err != nil {
				b.Fatal(err)
			}
		}
		shared = e
	})
	if shared == nil {
		b.Fatal("setup failed")
	}
	return shared
}

// benchPolicy is the policy the benchmarks' engines run under: nothing
// asks for a confirmation (so no summary export is called), run_command
// included, and no path is denied.
func benchPolicy() engine.Policy {
	pol := engine.DefaultPolicy()
	pol.Denylist = nil
	pol.Approval = engine.ApprovalAuto
	never := false
	pol.Overrides = map[string]engine.Override{"run_command": {RequiresApproval: &never}}
	return pol
}

// pairSpaced times host and baseline call by call, alternating,
// spacedCalls times each whatever b.N is, with pause before each call,
// and reports the medians: a model thinks between commands, which lets
// whatever a path prepares in the background be ready, as it is in use.
// ns/op is the whole run's: the framework then runs it once.
func pairSpaced(b *testing.B, host, baseline func() error, base string, pause time.Duration) {
	for range 5 {
		if err := host(); err != nil {
			b.Fatal(err)
		}
		if err := baseline(); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	hs, bs := make([]time.Duration, 0, spacedCalls), make([]time.Duration, 0, spacedCalls)
	for range spacedCalls {
		for _, c := range []struct {
			fn  func() error
			out *[]time.Duration
		}{{host, &hs}, {baseline, &bs}} {
			time.Sleep(pause)
			start := time.Now()
			if err := c.fn(); err != nil {
				b.Fatal(err)
			}
			*c.out = append(*c.out, time.Since(start))
		}
	}
	slices.Sort(hs)
	slices.Sort(bs)
	hostNs, baseNs := float64(hs[len(hs)/2].Nanoseconds()), float64(bs[len(bs)/2].Nanoseconds())
	b.ReportMetric(hostNs, "median-ns/call")
	b.ReportMetric(baseNs, base+"-median-ns/call")
	b.ReportMetric(hostNs/baseNs, "x-"+base)
	b.ReportMetric((hostNs-baseNs)/1e6, "added-ms/call")
}

// spacedCalls is how many calls pairSpaced times of each path.
const spacedCalls = 200

// pair times toolhost and the native baseline over the same number of
// iterations; ns/op is toolhost's, and the native time and the ratio are
// reported beside it.
func pair(b *testing.B, host, native func() error) { pairNamed(b, host, native, "native") }

// pairNamed is pair against a baseline called base: it reports base-ns/op,
// x-base and added-ms/op (toolhost's time less the baseline's).
func pairNamed(b *testing.B, host, baseline func() error, base string) {
	for range 20 { // warm both paths
		if err := host(); err != nil {
			b.Fatal(err)
		}
		if err := baseline(); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := host(); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	hostNs := float64(b.Elapsed().Nanoseconds()) / float64(b.N)
	start := time.Now()
	for i := 0; i < b.N; i++ {
		if err := baseline(); err != nil {
			b.Fatal(err)
		}
	}
	baseNs := float64(time.Since(start).Nanoseconds()) / float64(b.N)
	b.ReportMetric(baseNs, base+"-ns/op")
	b.ReportMetric(hostNs/baseNs, "x-"+base)
	if base != "native" {
		b.ReportMetric((hostNs-baseNs)/1e6, "added-ms/op")
	}
}

// execute runs one call as a batch of its own, approved.
func (e *env) execute(tool, args string) func() error {
	b := engine.Batch{Conversation: "bench", Calls: []engine.Call{{ID: "b", Name: tool, Arguments: json.RawMessage(args)}}}
	approve := engine.ApproverFunc(func(context.Context, []engine.Confirmation) (engine.Decision, error) {
		return engine.ApproveAll("bench"), nil
	})
	return func() error {
		_, rs := e.eng.Process(context.Background(), b, approve, engine.RunOptions{})
		if r := rs[0]; !r.OK {
			return r.Error
		}
		return nil
	}
}

// direct calls the plugin through the runtime, skipping the engine's
// validation and preflight, to show what each layer costs.
func (e *env) direct(b *testing.B, tool, args, path string) func() error {
	t, _ := e.reg.Lookup(tool)
	p, err := e.sb.Resolve(path)
	if err != nil {
		b.Fatal(err)
	}
	req := abi.Request{ID: "b", Tool: tool, Args: json.RawMessage(args), Limits: engine.DefaultLimits()}
	return func() error {
		env := &hostfn.Env{Call: hostfn.Call{Sandbox: e.sb, Resolved: map[string]sandbox.Path{path: p}, Limits: req.Limits}, Files: hostfn.Files{Reads: e.reads}}
		r, err := t.Plugin.Call(context.Background(), env, req)
		if err == nil && r.Kind != "" {
			err = fmt.Errorf("%s: %s", r.Kind, r.Content)
		}
		return err
	}
}

// nativeRead is what read_file does, in plain Go: open through os.Root,
// stat, read, sniff for NUL and UTF-8, hash, record.
func (e *env) nativeRead(name string) func() error {
	return func() error {
		f, err := e.root.Open(name)
		if err != nil {
			return err
		}
		defer f.Close()
		st, err := f.Stat()
		if err != nil {
			return err
		}
		data := make([]byte, st.Size())
		if _, err := io.ReadFull(f, data); err != nil {
			return err
		}
		if bytes.IndexByte(data[:min(len(data), 8192)], 0) >= 0 || !utf8.Valid(data) {
			return fmt.Errorf("binary")
		}
		e.reads.Record(filepath.Join(e.dir, name), sha256.Sum256(data), time.Now())
		_ = string(data)
		return nil
	}
}

// nativeLines returns lines start..end the way read_file does: one pass,
// collecting the range and hashing the whole file.
func (e *env) nativeLines(name string, start, end int) func() error {
	return func() error {
		f, err := e.root.Open(name)
		if err != nil {
			return err
		}
		defer f.Close()
		h := sha256.New()
		data, err := io.ReadAll(io.TeeReader(f, h))
		if err != nil {
			return err
		}
		var out []byte
		line := 1
		for len(data) > 0 && line <= end {
			i := bytes.IndexByte(data, '\n')
			next := data[i+1:]
			if line >= start {
				out = append(out, data[:i+1]...)
			}
			data, line = next, line+1
		}
		e.reads.Record(filepath.Join(e.dir, name), [32]byte(h.Sum(nil)), time.Now())
		_ = string(out)
		return nil
	}
}

func (e *env) nativeList(name string) func() error {
	type entry struct {
		Name, Path, Type string
		Size             int64
		Modified         string
	}
	return func() error {
		f, err := e.root.Open(name)
		if err != nil {
			return err
		}
		defer f.Close()
		des, err := f.ReadDir(-1)
		if err != nil {
			return err
		}
		out := make([]entry, 0, len(des))
		for _, de := range des {
			fi, err := de.Info()
			if err != nil {
				return err
			}
			out = append(out, entry{de.Name(), name + "/" + de.Name(), "file", fi.Size(), fi.ModTime().UTC().Format(time.RFC3339)})
		}
		_, err = json.Marshal(map[string]any{"path": name, "entries": out, "truncated": false})
		return err
	}
}

func BenchmarkReadFile4KB(b *testing.B) {
	e := setup(b)
	b.Run("engine", func(b *testing.B) { pair(b, e.execute("read_file", `{"path":"small.txt"}`), e.nativeRead("small.txt")) })
	b.Run("runtime", func(b *testing.B) {
		pair(b, e.direct(b, "read_file", `{"path":"small.txt"}`, "small.txt"), e.nativeRead("small.txt"))
	})
}

func BenchmarkReadFileLines1000to1100of1MB(b *testing.B) {
	e := setup(b)
	args := `{"path":"big.txt","start_line":1000,"end_line":1100}`
	b.Run("engine", func(b *testing.B) { pair(b, e.execute("read_file", args), e.nativeLines("big.txt", 1000, 1100)) })
	b.Run("runtime", func(b *testing.B) {
		pair(b, e.direct(b, "read_file", args, "big.txt"), e.nativeLines("big.txt", 1000, 1100))
	})
}

func BenchmarkListDirectory100(b *testing.B) {
	e := setup(b)
	b.Run("engine", func(b *testing.B) { pair(b, e.execute("list_directory", `{"path":"list"}`), e.nativeList("list")) })
}

func BenchmarkWriteFile4KB(b *testing.B) {
	e := setup(b)
	content := strings.Repeat("z", 4096)
	args, _ := json.Marshal(map[string]string{"path": "out/w.txt", "content": content})
	p, err := e.sb.Resolve("out/native.txt")
	if err != nil {
		b.Fatal(err)
	}
	native := func() error {
		_, err := e.sb.WriteFileAtomic(p, []byte(content), true)
		e.reads.Record(p.Abs, sha256.Sum256([]byte(content)), time.Now())
		return err
	}
	b.Run("engine", func(b *testing.B) { pair(b, e.execute("write_file", string(args)), native) })
}

// BenchmarkCallStartup runs `toolhost call read_file` as a new process:
// cold (empty compile cache) and warm (cache filled by the previous run).
func BenchmarkCallStartup(b *testing.B) {
	bin := os.Getenv("TOOLHOST_BIN")
	if bin == "" {
		b.Skip("TOOLHOST_BIN not set; run through make bench")
	}
	e := setup(b)
	run := func(cache string) error {
		cmd := exec.Command(bin, "--cache-dir", cache, "--state-dir", b.TempDir(), "call", "read_file", "--args", `{"path":"small.txt"}`)
		cmd.Dir = e.dir
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("%v: %s", err, out)
		}
		return nil
	}
	b.Run("cold", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			b.StopTimer()
			cache := b.TempDir()
			b.StartTimer()
			if err := run(cache); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("warm", func(b *testing.B) {
		cache := b.TempDir()
		if err := run(cache); err != nil {
			b.Fatal(err)
		}
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			if err := run(cache); err != nil {
				b.Fatal(err)
			}
		}
	})
}
