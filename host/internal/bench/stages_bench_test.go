package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolhost/toolhost/abi"
	"github.com/toolhost/toolhost/host/internal/engine"
	"github.com/toolhost/toolhost/host/internal/hostfn"
	"github.com/toolhost/toolhost/host/internal/inside"
	"github.com/toolhost/toolhost/host/internal/journal"
	"github.com/toolhost/toolhost/host/internal/output"
	"github.com/toolhost/toolhost/host/internal/readcache"
	"github.com/toolhost/toolhost/host/internal/sandbox"
)

// BenchmarkReadFileStages breaks a read_file of a 200-line file (what
// the MCP benchmark reads) into the engine's stages, each timed alone
// with its allocations, so that a regression shows where it happened:
//
//   - schema: decoding the arguments and checking them against the
//     tool's schema;
//   - plan: the whole plan of a one-call batch (schema, policy, the
//     sandbox's preflight of the path), what the engine does before the
//     journal and the plugin;
//   - plugin: the plugin's call through the runtime with its host
//     functions (the read, the record for stale-file protection);
//   - sanitize+cap: the text made safe to show and held to the limit;
//   - process: the whole call, journal off;
//   - process+journal: the whole call with the journal on disk, so the
//     difference is what journaling a call costs on its path (the
//     applier's work happens beside it; BenchmarkJournalCall in
//     host/internal/journal counts that too).
//
// The encoding of the MCP answer is BenchmarkAppendResult in
// host/internal/server.
func BenchmarkReadFileStages(b *testing.B) {
	e := setup(b)
	ctx := context.Background()
	var text strings.Builder
	for i := 1; i <= 200; i++ {
		fmt.Fprintf(&text, "line %03d: the quick brown fox jumps over the lazy dog, and back\n", i)
	}
	if err := os.WriteFile(filepath.Join(e.dir, "stages.txt"), []byte(text.String()), 0o644); err != nil {
		b.Fatal(err)
	}
	args := json.RawMessage(`{"path":"stages.txt"}`)
	call := engine.Call{ID: "s", Name: "read_file", Arguments: args}
	batch := engine.Batch{Conversation: "bench", Calls: []engine.Call{call}}
	tool, ok := e.reg.Lookup("read_file")
	if !ok {
		b.Fatal("no read_file plugin")
	}
	p, err := e.sb.Resolve("stages.txt")
	if err != nil {
		b.Fatal(err)
	}
	limits := engine.DefaultLimits()
	req := abi.Request{ID: "s", Tool: "read_file", Conversation: "bench", Args: args, Limits: limits}
	approve := engine.ApproverFunc(func(context.Context, []engine.Confirmation) (engine.Decision, error) {
		return engine.ApproveAll("bench"), nil
	})
	j, err := journal.Open(ctx, filepath.Join(b.TempDir(), "journal.db"), journal.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { j.Close() })
	journaled := engine.New(engine.Config{Registry: e.reg, Sandbox: e.sb, Policy: benchPolicy(), Journal: inside.EngineJournal(j),
		ReadCache: func(string) *readcache.Cache { return e.reads }, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	plugin := func() (abi.Result, error) {
		env := &hostfn.Env{Call: hostfn.Call{CallID: "s", Conversation: "bench", Sandbox: e.sb, Resolved: map[string]sandbox.Path{"stages.txt": p}, Limits: limits},
			Files: hostfn.Files{Reads: e.reads}}
		r, err := tool.Plugin.Call(ctx, env, req)
		if err == nil && r.Kind != "" {
			err = fmt.Errorf("%s: %s", r.Kind, r.Content)
		}
		return r, err
	}
	out, err := plugin()
	if err != nil {
		b.Fatal(err)
	}
	process := func(eng *engine.Engine) func() error {
		return func() error {
			_, rs := eng.Process(ctx, batch, approve, engine.RunOptions{})
			if !rs[0].OK {
				return rs[0].Error
			}
			return nil
		}
	}
	stages := []struct {
		name string
		run  func() error
	}{
		{"schema", func() error {
			var v any
			if err := json.Unmarshal(args, &v); err != nil {
				return err
			}
			if vs := tool.ValidateArgs(v); len(vs) > 0 {
				return fmt.Errorf("%v", vs)
			}
			return nil
		}},
		{"plan", func() error {
			if r := e.eng.Plan(ctx, batch).Calls[0].Result; r != nil && !r.OK {
				return r.Error
			}
			return nil
		}},
		{"plugin", func() error { _, err := plugin(); return err }},
		{"sanitize+cap", func() error {
			if s := output.Truncate(output.SanitizeJSON(string(out.Content)), int(limits.OutputLimit())); len(s) != text.Len() {
				return fmt.Errorf("%d bytes, want %d", len(s), text.Len())
			}
			return nil
		}},
		{"process", process(e.eng)},
		{"process+journal", process(journaled)},
	}
	for _, s := range stages {
		b.Run(s.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if err := s.run(); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N), "µs/call")
		})
	}
}
