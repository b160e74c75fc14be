package main

import (
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"slices"

	"github.com/spf13/cobra"

	"github.com/toolhost/toolhost/host/engine"
	"github.com/toolhost/toolhost/host/hostfn"
	"github.com/toolhost/toolhost/host/readcache"
	"github.com/toolhost/toolhost/host/registry"
	"github.com/toolhost/toolhost/host/sandbox"
)

type callFlags struct {
	args, argsFile string
	roots          []string
	conversation   string
	id             string
	allow          []string
	stream         bool
}

func newCallCommand(g *globals) *cobra.Command {
	f := &callFlags{}
	cmd := &cobra.Command{
		Use:   "call <tool> (--args JSON | --args-file FILE)",
		Short: "Run one tool call and print its result as JSON",
		Long: `Run one tool call and print its result as JSON:
  {"id", "name", "ok": true, "content"} or {"id", "name", "ok": false, "error": {"kind", "message", "details"}}
Exit status: 0 when the call succeeded, 1 when the tool returned an error, 2 for usage errors.
Calls with the same --conversation share what was read, which stale-file protection checks
before an existing file is overwritten.

Tools that require approval (run_command) are refused unless named with --allow, until
approval policy is configurable (NFR-SEC-06).`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usageErrorf("call takes exactly one tool name, got %d arguments", len(args))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error { return runCall(cmd, g, f, args[0]) },
	}
	fl := cmd.Flags()
	fl.StringVar(&f.args, "args", "", "arguments as a JSON object")
	fl.StringVar(&f.argsFile, "args-file", "", "file holding the arguments as a JSON object (- for stdin)")
	fl.StringArrayVar(&f.roots, "root", nil, "allowed root directory (repeatable; the first is the working directory; default .)")
	fl.StringVar(&f.conversation, "conversation", "default", "conversation id: calls with the same id share their read cache")
	fl.StringVar(&f.id, "id", "call_1", "tool call id")
	fl.StringArrayVar(&f.allow, "allow", nil, "run this tool although it requires approval (repeatable)")
	fl.BoolVar(&f.stream, "stream", false, "copy streamed output (run_command's stdout and stderr) to stderr as it arrives")
	return cmd
}

func (f *callFlags) arguments() (json.RawMessage, error) {
	var raw []byte
	switch {
	case f.args != "" && f.argsFile != "":
		return nil, usageErrorf("give either --args or --args-file, not both")
	case f.args != "":
		raw = []byte(f.args)
	case f.argsFile == "-":
		b, err := io.ReadAll(os.Stdin)
		if err != nil {
			return nil, usageErrorf("reading arguments from stdin: %v", err)
		}
		raw = b
	case f.argsFile != "":
		b, err := os.ReadFile(f.argsFile)
		if err != nil {
			return nil, usageErrorf("--args-file: %v", err)
		}
		raw = b
	default:
		raw = []byte("{}")
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil {
		return nil, usageErrorf("arguments must be a JSON object: %v", err)
	}
	return raw, nil
}

func runCall(cmd *cobra.Command, g *globals, f *callFlags, tool string) error {
	ctx := cmd.Context()
	raw, err := f.arguments()
	if err != nil {
		return err
	}
	log := g.logger()
	stateDir, err := g.state()
	if err != nil {
		return usageErrorf("%v", err)
	}
	roots := f.roots
	if len(roots) == 0 {
		roots = []string{"."}
	}
	sb, err := sandbox.New(sandbox.Config{
		Roots: roots, IncludeDefaultDenies: true,
		ProtectedDirs: protected(stateDir, g.cache()),
	})
	if err != nil {
		return usageErrorf("sandbox: %v", err)
	}
	defer sb.Close()
	store, err := readcache.NewStore(filepath.Join(stateDir, "reads"))
	if err != nil {
		return usageErrorf("state directory %s: %v", stateDir, err)
	}
	reads, err := store.Load(f.conversation)
	if err != nil {
		return usageErrorf("%v", err)
	}
	rt, reg, err := loadRegistry(ctx, g, log)
	if err != nil {
		return err
	}
	defer rt.Close(ctx)
	if err := f.checkApproval(reg, tool); err != nil {
		return err
	}
	eng := engine.New(engine.Config{
		Registry: reg, Sandbox: sb, Logger: log,
		ReadCache: func(string) *readcache.Cache { return reads },
	})
	opts := engine.Options{Conversation: f.conversation}
	if f.stream {
		opts.Emit = func(ev hostfn.Event) { os.Stderr.Write(ev.Data) }
	}
	res := eng.Execute(ctx, engine.Call{ID: f.id, Name: tool, Arguments: raw}, opts)
	if err := store.Save(f.conversation, reads); err != nil {
		log.Error("cannot save the read cache; the next call may refuse to overwrite what this one read", "err", err)
	}
	if err := printJSON(res); err != nil {
		return err
	}
	if !res.OK {
		return &exitError{code: exitToolError, err: errSilent}
	}
	return nil
}

// checkApproval refuses a tool whose manifest requires approval unless
// --allow names it: the CLI has no one to ask yet.
func (f *callFlags) checkApproval(reg *registry.Registry, tool string) error {
	t, ok := reg.Lookup(tool)
	if !ok || !t.Manifest.RequiresApproval || slices.Contains(f.allow, tool) {
		return nil
	}
	return usageErrorf("%s requires approval and is denied by default (risk: %s); to run it anyway, pass --allow %s", tool, t.Manifest.RiskLevel, tool)
}

// protected lists toolhost's own directories, which no tool may touch.
func protected(dirs ...string) []string {
	var out []string
	for _, d := range dirs {
		if d == "" {
			continue
		}
		if abs, err := filepath.Abs(d); err == nil {
			out = append(out, abs)
		}
	}
	return out
}
