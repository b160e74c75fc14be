package conformance

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/toolhost/toolhost/abi"
	"github.com/toolhost/toolhost/host/internal/argpath"
	"github.com/toolhost/toolhost/host/internal/config"
	"github.com/toolhost/toolhost/host/internal/engine"
	"github.com/toolhost/toolhost/host/internal/hostfn"
	"github.com/toolhost/toolhost/host/internal/runtime"
)

// The dynamic checks ("behaviour under attack") call a
// plugin's tools as a hostile model would, each check in fresh
// workspaces, and judge the plugin by what the host observed: the host
// functions it called with the paths it gave (engine.RunOptions.Observe)
// and the bytes it returned before the host cut them (ObserveOutput).

const (
	// startLimit is how long a plugin may take to start (_initialize and
	// describe). A healthy one starts in milliseconds; the host's own
	// limit is higher (runtime.DefaultStartupTimeout), but a plugin that
	// needs seconds spends them out of each first call's deadline.
	startLimit = 3 * time.Second
	// callTimeout bounds every call of the checks other than
	// call.deadline, so a tool that spins costs the suite seconds, not
	// its configured timeout.
	callTimeout = 5 * time.Second
	// grace is how much later than its deadline a call may return and
	// still have returned promptly.
	grace = 2 * time.Second
	// summaryTimeout is the engine's bound on a summary.
	summaryTimeout = 5 * time.Second
)

// attackState is what the dynamic checks learn about one plugin that
// later checks rely on: a plugin that does not start, or a tool whose
// ordinary calls run until their deadline, is reported once, by the
// check that found it, and the others skip it rather than wait on it.
type attackState struct {
	mu      sync.Mutex
	noStart string
	stuck   map[string]string
}

// dynamicChecks call the plugin's tools as a hostile model would, each in
// a fresh workspace.
func dynamicChecks() []check {
	st := &attackState{stuck: map[string]string{}}
	perTool := func(id string, run func(context.Context, *subject, *abi.Manifest) Result) check {
		return check{id: id, perTool: true, run: st.guard(run)}
	}
	return []check{
		{id: "start.spin", run: st.startSpin},
		perTool("call.deadline", st.callDeadline),
		perTool("call.generated", callGenerated),
		perTool("call.invalid", callInvalid),
		perTool("call.escape", callEscape),
		perTool("call.huge", callHuge),
		perTool("call.output-cap", callOutputCap),
		perTool("summary.pure", summaryPure),
		perTool("call.deterministic", callDeterministic),
		perTool("call.unnamed-files", callUnnamedFiles),
	}
}

// guard skips a tool check when the plugin cannot be called at all, or
// the tool's calls only end at their deadline.
func (st *attackState) guard(run func(context.Context, *subject, *abi.Manifest) Result) func(context.Context, *subject, *abi.Manifest) Result {
	return func(ctx context.Context, s *subject, m *abi.Manifest) Result {
		st.mu.Lock()
		noStart, stuck := st.noStart, st.stuck[m.Name]
		st.mu.Unlock()
		switch {
		case s.loadErr != nil:
			return skip("the host does not load the plugin (see load), so its tools cannot be called")
		case noStart != "":
			return skip("the plugin does not start (see start.spin): " + noStart)
		case stuck != "":
			return skip("the tool's calls run until their deadline (see call.deadline)")
		case s.opts.execRefused(m) != "":
			return skip(s.opts.execRefused(m))
		}
		return run(ctx, s, m)
	}
}

// startResult is how a plugin's start-up went: how long it took, its
// error, and whether the start-up limit stopped it.
type startResult struct {
	elapsed time.Duration
	err     error
	stuck   bool
}

// startProbe starts the plugin once per run and remembers how it went:
// start.spin reports it, and manifest.section skips a describe that a
// spinning start-up would keep from ever running.
func (s *subject) startProbe(ctx context.Context) startResult {
	s.startOnce.Do(func() {
		if s.kind == KindNative {
			s.start = startNative(ctx, s)
			return
		}
		start := time.Now()
		err := startAny(ctx, s)
		s.start = startResult{elapsed: time.Since(start), err: err, stuck: err != nil}
	})
	return s.start
}

// startSpin checks that the plugin starts within startLimit, and that a
// start-up that spins is stopped there (SRD FR-EXE-03).
func (st *attackState) startSpin(ctx context.Context, s *subject, _ *abi.Manifest) Result {
	if s.loadErr != nil {
		return skip("the host does not load the plugin (see load)")
	}
	r := s.startProbe(ctx)
	if r.err == nil {
		return pass(fmt.Sprintf("started in %s (limit %s)", round(r.elapsed), startLimit))
	}
	st.mu.Lock()
	st.noStart = r.err.Error()
	st.mu.Unlock()
	var findings []string
	if r.stuck && r.elapsed > startLimit+grace {
		findings = append(findings, fmt.Sprintf("the spinning start-up was stopped only after %s, more than %s past the %s limit", round(r.elapsed), grace, startLimit))
	}
	return fail(r.err.Error(), findings...)
}

// startNative starts one instance of a native plugin in a runtime of its
// own, whose start-up limit is startLimit: its error names the stage.
// The module is compiled first and the clock starts after: the host's
// start-up limit starts after compiling too, which on a cold cache takes
// seconds that are not the plugin's doing (red team item a).
func startNative(ctx context.Context, s *subject) startResult {
	rt, err := runtime.New(ctx, runtime.Config[hostfn.Env]{CacheDir: s.opts.CacheDir, StartupTimeout: startLimit, HostFunctions: hostfn.Functions(), Logger: s.opts.Logger})
	if err != nil {
		return startResult{err: err}
	}
	defer rt.Close(context.WithoutCancel(ctx))
	p, err := rt.Load(ctx, s.Module)
	if err == nil {
		err = p.Compile(ctx)
	}
	if err != nil {
		return startResult{err: err}
	}
	start := time.Now()
	err = p.Warm(ctx, 1)
	r := startResult{elapsed: time.Since(start)}
	var se *runtime.StartupError
	switch {
	case errors.As(err, &se) && se.Limit > 0:
		r.stuck = true
		r.err = fmt.Errorf("start-up did not finish within %s: it was stopped in %s (look for an init function or a global initializer that never returns)", startLimit, se.Stage)
	case errors.As(err, &se):
		r.err = fmt.Errorf("start-up failed in %s: %s", se.Stage, firstLine(se.Message))
	default:
		r.err = err
	}
	return r
}

// startAny starts a plugin of any kind through a workspace: its first
// call waits for it to start, within startLimit.
func startAny(ctx context.Context, s *subject) error {
	if len(s.tools) == 0 {
		return errors.New("the plugin offers no tool to call")
	}
	m := &s.tools[0]
	w, err := s.open(ctx, fixtures(fixtureOptions{}), attackConfig(s, startLimit))
	if err != nil {
		return err
	}
	defer w.Close(ctx)
	args := newGenerator(m, pathFixtures()).valid(1)[0]
	res := w.call(ctx, m.Name, mustJSON(args))
	if res.Error != nil && strings.Contains(res.Error.Message, "did not start") {
		return fmt.Errorf("start-up did not finish within %s: %s", startLimit, res.Error.Message)
	}
	return nil
}

// callDeadline checks that a call given a short deadline returns within
// it (and grace), and that the tool's calls on ordinary arguments finish
// before it: a tool that only the host's deadline stops is at fault
// (SRD FR-EXE-03, T-TMO-01). A first call, under the start-up limit,
// starts the plugin, so that a slow start on a loaded machine is not
// taken for a slow call.
func (st *attackState) callDeadline(ctx context.Context, s *subject, m *abi.Manifest) Result {
	deadline := max(s.opts.Timeout, 100*time.Millisecond)
	w, err := s.open(ctx, fixtures(fixtureOptions{}), attackConfig(s, startLimit))
	if err != nil {
		return fail("the workspace did not open: " + err.Error())
	}
	defer w.Close(ctx)
	sets := newGenerator(m, pathFixtures()).valid(4)
	stuck := func(raw json.RawMessage, limit time.Duration, why string) Result {
		st.mu.Lock()
		st.stuck[m.Name] = why
		st.mu.Unlock()
		return fail(fmt.Sprintf("a call on ordinary arguments did not finish within %s on its own", limit),
			fmt.Sprintf("args %s: ran until its %s deadline and was stopped (%s); a tool must finish ordinary calls on its own", show(raw), limit, why))
	}
	warm := mustJSON(sets[0])
	if res := w.call(ctx, m.Name, warm); timedOut(res) {
		return stuck(warm, startLimit, res.Error.Message)
	}
	var findings []string
	var slowest time.Duration
	for _, args := range sets[1:] {
		raw := mustJSON(args)
		cctx, cancel := context.WithTimeout(ctx, deadline)
		start := time.Now()
		res := w.call(cctx, m.Name, raw)
		elapsed := time.Since(start)
		expired := errors.Is(cctx.Err(), context.DeadlineExceeded)
		cancel()
		slowest = max(slowest, elapsed)
		if elapsed > deadline+grace {
			findings = append(findings, fmt.Sprintf("args %s: returned after %s, more than %s past its %s deadline", show(raw), round(elapsed), grace, deadline))
		}
		if !res.OK && (expired || timedOut(res)) {
			if len(findings) > 0 {
				return fail(fmt.Sprintf("with a %s deadline, a call did not return promptly", deadline), findings...)
			}
			return stuck(raw, deadline, res.Error.Message)
		}
	}
	if len(findings) > 0 {
		return fail(fmt.Sprintf("with a %s deadline, calls did not return promptly", deadline), unique(findings)...)
	}
	return pass(fmt.Sprintf("%d calls with a %s deadline returned on their own, the slowest in %s", len(sets)-1, deadline, round(slowest)))
}

// callGenerated calls the tool with arguments generated from its schema:
// none may trap (FR-EXE-04b).
func callGenerated(ctx context.Context, s *subject, m *abi.Manifest) Result {
	w, err := s.open(ctx, fixtures(fixtureOptions{link: true}), attackConfig(s, callTimeout))
	if err != nil {
		return fail("the workspace did not open: " + err.Error())
	}
	defer w.Close(ctx)
	var findings []string
	ok, errs := 0, 0
	for _, args := range newGenerator(m, pathFixtures()).valid(generatedSets) {
		raw := mustJSON(args)
		res := w.call(ctx, m.Name, raw)
		switch {
		case trapped(res):
			findings = append(findings, fmt.Sprintf("args %s: %s", show(raw), res.Error.Message))
		case res.OK:
			ok++
		default:
			errs++
		}
		if timedOut(res) {
			break
		}
	}
	if len(findings) > 0 {
		return fail("arguments its schema allows made the tool trap", unique(findings)...)
	}
	return pass(fmt.Sprintf("%d calls with generated arguments, none trapped (%d succeeded, %d returned an error)", ok+errs, ok, errs))
}

// callInvalid calls the tool with arguments its schema refuses and with
// bytes that are not JSON: each must be refused as BadArgs, never trap
// (FR-VAL-01, T-VAL-02).
func callInvalid(ctx context.Context, s *subject, m *abi.Manifest) Result {
	w, err := s.open(ctx, fixtures(fixtureOptions{}), attackConfig(s, callTimeout))
	if err != nil {
		return fail("the workspace did not open: " + err.Error())
	}
	defer w.Close(ctx)
	g := newGenerator(m, pathFixtures())
	cases := g.invalid(g.valid(1)[0])
	var findings []string
	for _, c := range cases {
		res := w.call(ctx, m.Name, c.args)
		switch {
		case trapped(res):
			findings = append(findings, fmt.Sprintf("args %s (%s): trapped: %s", show(c.args), c.why, res.Error.Message))
		case res.OK:
			findings = append(findings, fmt.Sprintf("args %s (%s): accepted, want BadArgs", show(c.args), c.why))
		case res.Error.Kind != abi.KindBadArgs:
			findings = append(findings, fmt.Sprintf("args %s (%s): %s, want BadArgs", show(c.args), c.why, res.Error.Kind))
		}
	}
	if len(findings) > 0 {
		return fail("invalid arguments were not refused as BadArgs", unique(findings)...)
	}
	return pass(fmt.Sprintf("%d invalid arguments, each refused as BadArgs", len(cases)))
}

// callEscape sets each path argument to a path out of the sandbox: each
// must be refused (FR-VAL-02, T-SBX-*). And whatever the arguments, every
// host function the plugin called must stay inside the root, off denied
// paths and out of the state directory: an attempt is a failure even
// when the host refused it.
func callEscape(ctx context.Context, s *subject, m *abi.Manifest) Result {
	w, err := s.open(ctx, fixtures(fixtureOptions{link: true}), attackConfig(s, callTimeout))
	if err != nil {
		return fail("the workspace did not open: " + err.Error())
	}
	defer w.Close(ctx)
	g := newGenerator(m, pathFixtures())
	base := g.valid(1)[0]
	var findings []string
	calls := []engine.Result{w.call(ctx, m.Name, mustJSON(base))}
	forms := escapeForms(w)
	// A tool that removes or moves (fs.delete) acts on the entry a path
	// names: a final symbolic link is the link itself, never what it
	// leads to, so removing or moving a link that leads out of the root
	// stays inside it.
	entries := slices.Contains(m.Capabilities, abi.CapFSDelete)
	// A tool that describes links (describes_links, without side
	// effects) may describe a link that leads out, as a link, as long as
	// it never tells where it leads.
	describes := m.DescribesLinks && !m.SideEffecting
	accepted := func(res engine.Result, name string, f escapeForm) string {
		switch {
		case !res.OK:
			return ""
		case describes && f.link:
			if told := res.Content + string(res.Structured); strings.Contains(told, filepath.Join("..", "outside")) || strings.Contains(told, filepath.Join(w.dir, "outside")) {
				return fmt.Sprintf("argument %s = %q (%s) was described with where it leads: %s", name, f.path, f.why, show([]byte(res.Content)))
			}
			return ""
		case entries && f.link:
			return ""
		}
		return fmt.Sprintf("argument %s = %q (%s) was accepted: %s", name, f.path, f.why, show([]byte(res.Content)))
	}
	tried := 0
	for _, name := range stringPathArgs(g) {
		for _, f := range forms {
			args := clone(base)
			args[name] = f.path
			raw := mustJSON(args)
			res := w.call(ctx, m.Name, raw)
			calls = append(calls, res)
			tried++
			if finding := accepted(res, name, f); finding != "" {
				findings = append(findings, finding)
			}
		}
	}
	for _, s := range nestedPathArgs(m) {
		for _, f := range forms {
			args := deepCopy(base).(map[string]any)
			setPaths(args, s.Keys(), func() string { return f.path }, true)
			raw := mustJSON(args)
			res := w.call(ctx, m.Name, raw)
			calls = append(calls, res)
			tried++
			if finding := accepted(res, s.String(), f); finding != "" {
				findings = append(findings, finding)
			}
		}
	}
	for _, res := range calls {
		as, _ := w.observed(res.ID)
		for _, a := range as {
			// fs_lstat never follows the last name, as a removal does not.
			if where := w.escapes(a, (entries && a.Function == abi.FnFSCommit) || a.Function == abi.FnFSLstat); where != "" {
				findings = append(findings, fmt.Sprintf("call %s: %s %q, %s, %s", res.ID, a.Function, a.Path, where, outcome(a)))
			}
		}
	}
	if len(findings) > 0 {
		return fail("the tool reached, or tried to reach, outside the sandbox", unique(findings)...)
	}
	if tried == 0 {
		return pass(fmt.Sprintf("no path arguments; its %d call touched nothing outside the root", len(calls)))
	}
	return pass(fmt.Sprintf("%d escaping path arguments refused; no host function reached outside the root", tried))
}

// escapeForm is a path out of the sandbox, and what kind it is; link
// marks a path whose final component is a symbolic link leading out,
// which names the link itself for a tool that removes or moves.
type escapeForm struct {
	path, why string
	link      bool
}

func escapeForms(w *workspace) []escapeForm {
	outside := filepath.Join(w.dir, "outside", "secret.txt")
	return []escapeForm{
		{"../x", "a .. component", false},
		{"a/../../x", "a .. component inside the path", false},
		{outside, "an absolute path outside the root", false},
		{"out/secret.txt", "a symlink in the root pointing out of it", false},
		{"out", "a symlink in the root pointing out of it", true},
		{".env", "a denied pattern (" + deniedFixture + ")", false},
		{"keys/id_rsa", "a default denied pattern (**/id_rsa*)", false},
		{w.state, "the state directory", false},
		{filepath.Join(w.state, "journal.db"), "a file in the state directory", false},
	}
}

// stringPathArgs are the path arguments the schema has as properties.
func stringPathArgs(g generator) []string {
	names, _ := g.properties()
	var out []string
	for _, n := range names {
		if g.isPath(n) {
			out = append(out, n)
		}
	}
	return out
}

// escapes says where an access went that a tool must never go: outside
// the root (lexically, or through a symlink), to a denied path, or into
// the state directory; "" when it stayed inside. An entry access (a
// removal or a move) names its final component itself, so only the
// directories above it are followed.
func (w *workspace) escapes(a engine.Access, entry bool) string {
	switch a.Denial {
	case string(abi.DenialTraversal), string(abi.DenialAbsolutePath), string(abi.DenialPathOutsideSandbox):
		return "outside the root"
	case string(abi.DenialDeniedPatternMatched):
		return "a denied path"
	}
	if a.Function == abi.FnEventEmit {
		return ""
	}
	abs := a.Path
	if !filepath.IsAbs(abs) {
		abs = filepath.Join(w.root, abs)
	}
	abs = filepath.Clean(abs)
	switch {
	case within(abs, w.state):
		return "the state directory"
	case !within(abs, w.root):
		return "outside the root"
	}
	realRoot, err := filepath.EvalSymlinks(w.root)
	if err != nil {
		return ""
	}
	real := resolveExisting(abs)
	if entry {
		real = filepath.Join(resolveExisting(filepath.Dir(abs)), filepath.Base(abs))
	}
	if !within(real, realRoot) {
		return "outside the root (through a symlink)"
	}
	return ""
}

// resolveExisting resolves the symlinks of the longest part of abs that
// exists, and appends the rest.
func resolveExisting(abs string) string {
	rest := ""
	for p := abs; ; p = filepath.Dir(p) {
		if real, err := filepath.EvalSymlinks(p); err == nil {
			return filepath.Join(real, rest)
		}
		if p == filepath.Dir(p) {
			return abs
		}
		rest = filepath.Join(filepath.Base(p), rest)
	}
}

func within(path, dir string) bool {
	return path == dir || strings.HasPrefix(path, dir+string(filepath.Separator))
}

// outcome is whether the host allowed an access, or how it refused it.
func outcome(a engine.Access) string {
	switch {
	case a.Err == nil:
		return "allowed"
	case a.Denial != "":
		return "refused (" + a.Denial + ")"
	}
	return "refused: " + firstLine(a.Err.Error())
}

// callHuge gives the tool's first string argument a value near
// max_tool_args_bytes: handled without a trap, within the deadline; and
// one past it: refused (FR-LIM-03).
func callHuge(ctx context.Context, s *subject, m *abi.Manifest) Result {
	g := newGenerator(m, pathFixtures())
	name := hugeArg(g)
	if name == "" {
		// No string argument: an extra one, which the schema may refuse;
		// the host must still handle it whole.
		name = "huge"
	}
	w, err := s.open(ctx, fixtures(fixtureOptions{}), attackConfig(s, callTimeout))
	if err != nil {
		return fail("the workspace did not open: " + err.Error())
	}
	defer w.Close(ctx)
	limit := s.config(w.root).Tools.MaxToolArgsBytes
	base := g.valid(1)[0]
	base[name] = ""
	size := limit - len(mustJSON(base)) - 16
	var findings []string
	args := clone(base)
	args[name] = strings.Repeat("a", size)
	start := time.Now()
	res := w.call(ctx, m.Name, mustJSON(args))
	elapsed := time.Since(start)
	switch {
	case trapped(res):
		findings = append(findings, fmt.Sprintf("argument %s of %d bytes: %s", name, size, res.Error.Message))
	case elapsed > callTimeout+grace:
		findings = append(findings, fmt.Sprintf("argument %s of %d bytes: returned after %s, past its %s deadline", name, size, round(elapsed), callTimeout))
	}
	got := "succeeded"
	if res.Error != nil {
		got = string(res.Error.Kind)
	}
	args[name] = strings.Repeat("a", size+64)
	over := w.call(ctx, m.Name, mustJSON(args))
	if over.OK || over.Error.Kind != abi.KindSandboxViolation {
		findings = append(findings, fmt.Sprintf("argument %s of %d bytes, past max_tool_args_bytes (%d): %s, want a LimitsExceeded refusal", name, size+64, limit, resultKind(over)))
	}
	if len(findings) > 0 {
		return fail("a huge argument was not handled", unique(findings)...)
	}
	return pass(fmt.Sprintf("argument %s of %d bytes: %s in %s; %d bytes past max_tool_args_bytes refused", name, size, got, round(elapsed), size+64))
}

// hugeArg is the string property to make huge: one that is not a path
// first, since a huge path is refused before the plugin sees it.
func hugeArg(g generator) string {
	names, props := g.properties()
	path := ""
	for _, n := range names {
		if schemaType(props[n]) != "string" || props[n]["enum"] != nil || props[n]["const"] != nil {
			continue
		}
		if !g.isPath(n) {
			return n
		}
		if path == "" {
			path = n
		}
	}
	return path
}

func resultKind(r engine.Result) string {
	if r.OK {
		return "accepted"
	}
	return string(r.Error.Kind)
}

// callOutputCap checks that what the plugin returns, before the host cuts
// it, is within the call's output cap, whatever it claims
// (abi.ResultNoTruncate): FR-REG-04b, T-OUT-01.
func callOutputCap(ctx context.Context, s *subject, m *abi.Manifest) Result {
	w, err := s.open(ctx, fixtures(fixtureOptions{big: true}), attackConfig(s, callTimeout))
	if err != nil {
		return fail("the workspace did not open: " + err.Error())
	}
	defer w.Close(ctx)
	var findings []string
	largest, limit := 0, 0
	for _, args := range newGenerator(m, append([]string{"big.txt"}, pathFixtures()...)).valid(generatedSets) {
		raw := mustJSON(args)
		res := w.call(ctx, m.Name, raw)
		_, outs := w.observed(res.ID)
		for _, o := range outs {
			largest, limit = max(largest, o.Bytes), o.Limit
			if o.Bytes > o.Limit {
				claim := ""
				if o.NoTruncate {
					claim = ", while claiming it kept within it (no_truncate)"
				}
				size := fmt.Sprintf("%d bytes", o.Bytes)
				if o.Bytes >= 2*o.Limit {
					// The host copies at most about twice the cap out of
					// the plugin (engine.Output.Bytes): the rest was never read.
					size = fmt.Sprintf("%d bytes or more (the host reads no more than about twice the cap)", o.Bytes)
				}
				findings = append(findings, fmt.Sprintf("args %s: returned %s, over the output cap of %d bytes%s", show(raw), size, o.Limit, claim))
			}
		}
		if n := len(res.Content) + len(res.Structured); limit > 0 && n > limit {
			findings = append(findings, fmt.Sprintf("args %s: the host passed on %d bytes (text and structured object), over the cap of %d", show(raw), n, limit))
		}
		if timedOut(res) {
			break
		}
	}
	if len(findings) > 0 {
		return fail("the tool's output went past the output cap", unique(findings)...)
	}
	return pass(fmt.Sprintf("largest output %d bytes, within the cap of %d", largest, limit))
}

// summaryPure asks for the tool's approval summaries: they may call no
// host function, and must return within their deadline (FR-REG-01a,
// FR-APR-06).
func summaryPure(ctx context.Context, s *subject, m *abi.Manifest) Result {
	w, err := s.open(ctx, fixtures(fixtureOptions{}), attackConfig(s, callTimeout))
	if err != nil {
		return fail("the workspace did not open: " + err.Error())
	}
	defer w.Close(ctx)
	w.narrowing = engine.Narrowing{ConfirmAll: true} // every call's summary is asked for
	w.deny = true                                    // and none runs
	var findings []string
	sets := newGenerator(m, pathFixtures()).valid(3)
	for _, args := range sets {
		raw := mustJSON(args)
		start := time.Now()
		res := w.call(ctx, m.Name, raw)
		if elapsed := time.Since(start); elapsed > summaryTimeout+grace {
			findings = append(findings, fmt.Sprintf("args %s: the summary took %s, past its %s deadline", show(raw), round(elapsed), summaryTimeout))
		}
		as, _ := w.observed(res.ID)
		for _, a := range as {
			if a.Summary {
				findings = append(findings, fmt.Sprintf("args %s: the summary called %s %q (refused)", show(raw), a.Function, a.Path))
			}
		}
		if res.Error != nil && strings.Contains(res.Error.Message, "could not describe") && strings.Contains(res.Error.Message, "deadline") {
			findings = append(findings, fmt.Sprintf("args %s: %s", show(raw), res.Error.Message))
		}
	}
	if len(findings) > 0 {
		return fail("the approval summary is not pure formatting of the arguments", unique(findings)...)
	}
	return pass(fmt.Sprintf("%d summaries, none called a host function", len(sets)))
}

// callDeterministic makes the same calls on the same fixtures in two
// fresh workspaces: the results must be the same, unless the manifest
// declares the tool nondeterministic.
func callDeterministic(ctx context.Context, s *subject, m *abi.Manifest) Result {
	if m.Nondeterministic {
		return skip("the manifest declares the tool nondeterministic (\"nondeterministic\": true): two identical calls may differ")
	}
	sets := newGenerator(m, pathFixtures()).valid(3)
	var runs [2][]string
	for i := range runs {
		w, err := s.open(ctx, fixtures(fixtureOptions{}), attackConfig(s, callTimeout))
		if err != nil {
			return fail("the workspace did not open: " + err.Error())
		}
		for _, args := range sets {
			runs[i] = append(runs[i], w.normalize(w.call(ctx, m.Name, mustJSON(args))))
		}
		w.Close(ctx)
	}
	var findings []string
	for k, args := range sets {
		if runs[0][k] != runs[1][k] {
			findings = append(findings, fmt.Sprintf("args %s: first %s, then %s", show(mustJSON(args)), show([]byte(runs[0][k])), show([]byte(runs[1][k]))))
		}
	}
	if len(findings) > 0 {
		return fail("identical calls on identical fixtures gave different results; declare \"nondeterministic\": true if that is intended", unique(findings)...)
	}
	return pass(fmt.Sprintf("%d calls gave the same results in two fresh workspaces", len(sets)))
}

// normalize is a result as JSON, with the workspace's own directory
// written as <workspace>: two workspaces differ in nothing else.
func (w *workspace) normalize(r engine.Result) string {
	b, _ := json.Marshal(r)
	s := string(b)
	if real, err := filepath.EvalSymlinks(w.dir); err == nil {
		s = strings.ReplaceAll(s, real, "<workspace>")
	}
	return strings.ReplaceAll(s, w.dir, "<workspace>")
}

// callUnnamedFiles checks that the tool touches only the files its path
// arguments name, or what is under a directory one names.
func callUnnamedFiles(ctx context.Context, s *subject, m *abi.Manifest) Result {
	switch {
	case m.WritesUnnamedPaths:
		return skip("the manifest declares writes_unnamed_paths: the files it touches are named inside its arguments, not by path arguments")
	case slices.Contains(m.Capabilities, abi.CapProcExec):
		return skip("the tool runs commands (proc.exec), which may touch any file in the root")
	}
	w, err := s.open(ctx, fixtures(fixtureOptions{}), attackConfig(s, callTimeout))
	if err != nil {
		return fail("the workspace did not open: " + err.Error())
	}
	defer w.Close(ctx)
	g := newGenerator(m, pathFixtures())
	_, props := g.properties()
	var findings []string
	reported := map[string]bool{}
	touched := 0
	for _, args := range g.valid(generatedSets) {
		raw := mustJSON(args)
		res := w.call(ctx, m.Name, raw)
		named := namedPaths(g, props, args)
		as, _ := w.observed(res.ID)
		for _, a := range as {
			if a.Summary || a.Function == abi.FnEventEmit || a.Function == abi.FnProcJob {
				continue // neither names a file: a job is the conversation's
			}
			touched++
			key := a.Function + "\x00" + a.Path
			if rel, ok := w.relative(a.Path); (!ok || !coveredBy(rel, named)) && !reported[key] {
				reported[key] = true
				findings = append(findings, fmt.Sprintf("%s %q, which no path argument names (%s), first with args %s", a.Function, a.Path, outcome(a), show(raw)))
			}
		}
		if timedOut(res) {
			break
		}
	}
	if len(findings) > 0 {
		return fail("the tool touched files its call did not name", unique(findings)...)
	}
	return pass(fmt.Sprintf("%d host function calls, each on a path its arguments named", touched))
}

// namedPaths are the paths a call's arguments name, cleaned: each path
// argument given, or its schema default when left out.
func namedPaths(g generator, props map[string]map[string]any, args map[string]any) []string {
	var out []string
	names, _ := g.properties()
	for _, name := range names {
		if !g.isPath(name) {
			continue
		}
		v, ok := args[name].(string)
		if !ok {
			v, ok = props[name]["default"].(string)
		}
		if !ok {
			continue
		}
		if v == "" {
			v = "."
		}
		out = append(out, filepath.Clean(v))
	}
	var nested []string
	for _, s := range nestedPathArgs(g.m) {
		nested = append(nested, s.String())
	}
	found, _ := argpath.Find(nested, args, 0)
	for _, f := range found {
		if !f.Absent {
			out = append(out, filepath.Clean(f.Text))
		}
	}
	return out
}

// relative is path, as a plugin gave it, relative to the root, cleaned;
// false when it is not inside.
func (w *workspace) relative(path string) (string, bool) {
	if path == "" {
		return ".", true
	}
	if filepath.IsAbs(path) {
		rel, err := filepath.Rel(w.root, path)
		if err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
			return path, false
		}
		return rel, true
	}
	rel := filepath.Clean(path)
	return rel, rel != ".." && !strings.HasPrefix(rel, "../")
}

func coveredBy(rel string, named []string) bool {
	for _, n := range named {
		if n == "." || rel == n || strings.HasPrefix(rel, n+"/") {
			return true
		}
	}
	return false
}

// fixtureOptions choose what a workspace holds beyond the plain files.
type fixtureOptions struct {
	// link adds out, a symlink in the root to a directory outside it.
	// Its own time cannot be fixed, so workspaces that are compared
	// leave it out.
	link bool
	// big adds big.txt, larger than any output cap.
	big bool
}

// pathFixtures are the values path arguments take, in turn.
func pathFixtures() []string { return []string{"a.txt", "sub/b.txt", "sub", "a.txt", "new.txt", "."} }

// fixtureTime is every fixture's modification time, so that listings of
// two workspaces are the same.
var fixtureTime = time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC)

// fixtures lays out a workspace's root: a few text files, a denied one
// (.env), and optionally a symlink out of the root and a big file. A
// directory beside the root, outside/, holds what escapes would reach.
func fixtures(o fixtureOptions) func(root string) error {
	return func(root string) error {
		files := map[string]string{
			"a.txt":                 "one\ntwo\nthree\n",
			"sub/b.txt":             "bee\n",
			".env":                  "DATABASE_URL=postgres://app:hunter2@db.internal/app\n",
			"keys/id_rsa":           "not a real key\n",
			"../outside/secret.txt": "outside the root\n",
		}
		if o.big {
			files["big.txt"] = strings.Repeat("a line of text that repeats\n", 12<<10)
		}
		for name, content := range files {
			p := filepath.Join(root, filepath.FromSlash(name))
			if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
				return err
			}
			if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
				return err
			}
		}
		// Every file and directory gets the same time, so that listings
		// of two workspaces are the same.
		err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.Type()&fs.ModeSymlink != 0 {
				return err
			}
			return os.Chtimes(p, fixtureTime, fixtureTime)
		})
		if err != nil || !o.link {
			return err
		}
		return os.Symlink(filepath.Join("..", "outside"), filepath.Join(root, "out"))
	}
}

// attackConfig returns a configuration step that gives every tool of s
// the deadline d (whole seconds, as configuration holds them) and denies
// .env files, beside the default denied patterns, as operators do.
func attackConfig(s *subject, d time.Duration) func(*config.Config) {
	secs := max(int(math.Ceil(d.Seconds())), 1)
	return func(cfg *config.Config) {
		overrides := make(map[string]config.Override, len(s.tools))
		for name, o := range cfg.Tools.Overrides {
			overrides[name] = o
		}
		for _, m := range s.tools {
			o := overrides[m.Name]
			o.TimeoutSeconds = &secs
			overrides[m.Name] = o
		}
		cfg.Tools.Overrides = overrides
		cfg.Tools.Sandbox.DeniedPatterns = append(slices.Clone(cfg.Tools.Sandbox.DeniedPatterns), deniedFixture)
	}
}

// deniedFixture is the pattern that makes the .env fixture a denied path.
const deniedFixture = "**/.env"

func trapped(r engine.Result) bool {
	return r.Error != nil && r.Error.Kind == abi.KindPanicked
}

func timedOut(r engine.Result) bool {
	return r.Error != nil && r.Error.Kind == abi.KindTimeout
}

func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		return json.RawMessage("{}")
	}
	return b
}

// show is arguments or a result for a finding: control characters
// escaped, and cut in the middle past 160 bytes.
func show(b []byte) string {
	s := engine.Visible(string(b))
	const keep = 80
	if len(s) <= 2*keep {
		return s
	}
	head, tail := keep, len(s)-keep
	for head > 0 && (s[head]&0xC0) == 0x80 {
		head--
	}
	for tail < len(s) && (s[tail]&0xC0) == 0x80 {
		tail++
	}
	return fmt.Sprintf("%s…(%d bytes)…%s", s[:head], len(b), s[tail:])
}

// unique drops repeated findings, counting them: a plugin that does the
// same wrong thing in every call is reported once per thing.
func unique(findings []string) []string {
	count := map[string]int{}
	var order []string
	for _, f := range findings {
		if count[f] == 0 {
			order = append(order, f)
		}
		count[f]++
	}
	out := make([]string, len(order))
	for i, f := range order {
		out[i] = f
		if n := count[f]; n > 1 {
			out[i] += fmt.Sprintf(" (%d times)", n)
		}
	}
	return out
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// round is a duration for a detail: milliseconds, or microseconds below
// one.
func round(d time.Duration) time.Duration {
	if d < time.Millisecond {
		return d.Round(time.Microsecond)
	}
	return d.Round(time.Millisecond)
}
