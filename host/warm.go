package host

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/toolhost/toolhost/abi"
	"github.com/toolhost/toolhost/host/internal/registry"
	"github.com/toolhost/toolhost/host/internal/runtime"
)

// WarmUp readies the plugins behind the named tools before any call needs
// them: each is compiled (through the compilation cache in
// Options.CacheDir, which it fills) and one instance of it started, so a
// first call costs what any other does instead of the 1–3 s of a cold
// compile. It works through the plugins one at a time, the tools agents
// call first ahead of the rest (WarmOrder), each compile on one core, so
// a server warming up in the background keeps a core for its clients; a
// call that arrives for a plugin being compiled waits for that compile
// rather than starting a second one.
//
// When a named tool runs commands (proc.exec), WarmUp also starts the
// confined commands' launchers ahead of need, so that its first command
// skips their start-up too.
//
// A plugin that fails is skipped and named in the error; its calls will
// report the failure too. WarmUp returns how many plugins it readied, and
// stops early, with ctx's error, when ctx ends. Unknown names are
// ignored.
func (h *Host) WarmUp(ctx context.Context, tools []string) (int, error) {
	seen := make(map[registry.Plugin]bool)
	var errs []error
	warmed := 0
	ctx = runtime.Background(ctx)
	for _, name := range WarmOrder(tools) {
		t, ok := h.reg.Lookup(name)
		if !ok || seen[t.Plugin] {
			continue
		}
		seen[t.Plugin] = true
		if slices.Contains(t.Manifest.Capabilities, abi.CapProcExec) {
			h.commands.confiner.Warm()
		}
		if ctx.Err() != nil {
			return warmed, errors.Join(append(errs, fmt.Errorf("warm-up stopped: %w", context.Cause(ctx)))...)
		}
		start := time.Now()
		// Compiling does not heed ctx; starting an instance does. A
		// warm-up stopped during a compile keeps the compile (and the
		// cache entry) and starts nothing.
		err := t.Plugin.Compile(ctx)
		if ctx.Err() != nil {
			return warmed, errors.Join(append(errs, fmt.Errorf("warm-up stopped: %w", context.Cause(ctx)))...)
		}
		if err == nil {
			err = t.Plugin.Warm(ctx, 1)
		}
		if ctx.Err() != nil {
			// The instance was stopped by the end of the warm-up, not by a
			// fault of the plugin's: nothing to warn about.
			return warmed, errors.Join(append(errs, fmt.Errorf("warm-up stopped: %w", context.Cause(ctx)))...)
		}
		if err != nil {
			h.log.Warn("plugin could not be warmed up; its first call will try again", "tool", name, "plugin", t.Plugin.Path(), "err", err)
			errs = append(errs, fmt.Errorf("tool %s (%s): %w", name, t.Plugin.Path(), err))
			continue
		}
		warmed++
		h.log.Debug("warmed plugin", "tool", name, "plugin", t.Plugin.Path(), "elapsed", time.Since(start))
	}
	return warmed, errors.Join(errs...)
}

// firstCalled are the tools an agent starting on a task calls first,
// the most likely first.
var firstCalled = []string{
	"read_file", "list_directory", "search", "glob", "edit_file", "write_file",
	"file_info", "read_multiple_files", "run_command", "multi_edit", "apply_patch",
	"edit_region", "run_tests", "create_directory", "move_file", "delete_file",
}

// WarmOrder returns tools in the order a warm-up readies them: those an
// agent calls first ahead, the rest in the order given. A server warming
// up after its first tools/list thus has read_file compiled by the time
// its agent's first call comes, rather than apply_patch.
func WarmOrder(tools []string) []string {
	rank := func(name string) int {
		if i := slices.Index(firstCalled, name); i >= 0 {
			return i
		}
		return len(firstCalled)
	}
	ordered := slices.Clone(tools)
	slices.SortStableFunc(ordered, func(a, b string) int { return rank(a) - rank(b) })
	return ordered
}
