package conformance

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/toolhost/toolhost/abi"
	"github.com/toolhost/toolhost/host/internal/config"
	"github.com/toolhost/toolhost/host/internal/engine"
	"github.com/toolhost/toolhost/host/internal/inside"
	"github.com/toolhost/toolhost/host/internal/journal"
)

// Case is one file of a plugin's own cases, conformance/NAME.json: fixtures laid out in a fresh workspace, calls made in order
// in one conversation, what each must return, and what the files must
// hold afterwards.
type Case struct {
	Description string `json:"description"`
	// Files, Dirs and Symlinks are the fixtures, relative to the
	// workspace root: file contents, empty directories, and links
	// (path → target, the target written as given).
	Files    map[string]string `json:"files"`
	Dirs     []string          `json:"dirs"`
	Symlinks map[string]string `json:"symlinks"`
	// Read lists fixture files the case's conversation has read before
	// its first step, as read_file would record them: a tool that
	// changes an existing file (edit_file) needs that, and a case calls
	// only its own plugin's tools.
	Read  []string `json:"read"`
	Steps []Step   `json:"steps"`
	// A case of one call may give it at the top level instead of Steps.
	Tool   string          `json:"tool"`
	Args   json.RawMessage `json:"args"`
	Expect *Expect         `json:"expect"`
	// ExpectFiles is what files hold after the last step: a content, or
	// null for a file that must not exist.
	ExpectFiles map[string]*string `json:"expect_files"`
}

// Step is one call of a case.
type Step struct {
	Tool   string          `json:"tool"`
	Args   json.RawMessage `json:"args"`
	Expect *Expect         `json:"expect"`
}

// Expect is what a call must return. Unset fields are not checked; OK
// defaults to true unless an error kind or message is expected.
type Expect struct {
	OK              *bool    `json:"ok"`
	Content         *string  `json:"content"`
	Contains        []string `json:"contains"`
	ErrorKind       string   `json:"error_kind"`
	MessageContains []string `json:"message_contains"`
	// Structured is a JSON object whose every member the result's
	// structured object must hold, with an equal value; members it does
	// not name (a time, a hash) are not checked.
	Structured json.RawMessage `json:"structured"`
}

// caseFile is a case file as found: its id, and the case or why it could
// not be read.
type caseFile struct {
	path  string
	stem  string
	c     *Case
	tools []string // the tools it calls, when even a malformed file names them
	err   error
}

// caseDir is where a plugin's cases are: --cases, else conformance/ in
// the plugin's folder, or beside the module in a directory of modules.
func (s *subject) caseDir() string {
	switch {
	case s.opts.Cases != "":
		return s.opts.Cases
	case s.Dir != "":
		return filepath.Join(s.Dir, "conformance")
	}
	return filepath.Join(filepath.Dir(s.Module), "conformance")
}

// ParseCase reads a case file. Unknown fields are errors, so that a typo
// in an expectation does not pass unchecked.
func ParseCase(data []byte) (*Case, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var c Case
	if err := dec.Decode(&c); err != nil {
		return nil, jsonError(data, err)
	}
	if dec.More() {
		return nil, errors.New("more than one JSON value: a case file holds one object")
	}
	if err := c.normalize(); err != nil {
		return nil, err
	}
	return &c, nil
}

// jsonError names the line of a syntax or type error.
func jsonError(data []byte, err error) error {
	var off int64 = -1
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		off = se.Offset
	case errors.As(err, &te):
		off = te.Offset
	}
	if off < 0 || off > int64(len(data)) {
		return err
	}
	return fmt.Errorf("line %d: %w", bytes.Count(data[:off], []byte("\n"))+1, err)
}

// normalize folds a one-call case into Steps and checks what JSON cannot.
func (c *Case) normalize() error {
	if c.Tool != "" || c.Args != nil || c.Expect != nil {
		if len(c.Steps) > 0 {
			return errors.New("both steps and a top-level tool: give one or the other")
		}
		c.Steps = []Step{{Tool: c.Tool, Args: c.Args, Expect: c.Expect}}
		c.Tool, c.Args, c.Expect = "", nil, nil
	}
	if len(c.Steps) == 0 {
		return errors.New("no steps: give steps, or tool, args and expect at the top level")
	}
	if len(c.Steps) > maxCaseSteps {
		return fmt.Errorf("%d steps, more than the %d a case may make; split it into several cases", len(c.Steps), maxCaseSteps)
	}
	for i, st := range c.Steps {
		if st.Tool == "" {
			return fmt.Errorf("step %d names no tool", i+1)
		}
		if st.Args != nil && !isObject(st.Args) {
			return fmt.Errorf("step %d (%s): args must be a JSON object", i+1, st.Tool)
		}
	}
	var paths []string
	paths = append(paths, slices.Collect(maps.Keys(c.Files))...)
	paths = append(paths, c.Dirs...)
	paths = append(paths, slices.Collect(maps.Keys(c.Symlinks))...)
	paths = append(paths, slices.Collect(maps.Keys(c.ExpectFiles))...)
	for _, p := range c.Read {
		if _, ok := c.Files[p]; !ok {
			return fmt.Errorf("read names %q, which is not among the case's files", p)
		}
	}
	for _, p := range paths {
		if !filepath.IsLocal(filepath.FromSlash(p)) {
			return fmt.Errorf("fixture path %q escapes the workspace root; use a relative path with no .. component", p)
		}
	}
	return nil
}

func isObject(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) > 0 && raw[0] == '{'
}

// Tools returns the tools a case calls, sorted.
func (c *Case) Tools() []string {
	var tools []string
	for _, st := range c.Steps {
		tools = append(tools, st.Tool)
	}
	slices.Sort(tools)
	return slices.Compact(tools)
}

// readCases reads every *.json in dir, sorted by name. A missing
// directory holds no cases.
func readCases(dir string) ([]caseFile, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return nil, err
	}
	sort.Strings(paths)
	var out []caseFile
	for _, path := range paths {
		cf := caseFile{path: path, stem: strings.TrimSuffix(filepath.Base(path), ".json")}
		data, err := readRegular(path, maxCaseBytes)
		if err == nil {
			cf.c, err = ParseCase(data)
		}
		if err != nil {
			cf.err = err
			cf.tools = looseTools(data)
		} else {
			cf.tools = cf.c.Tools()
		}
		out = append(out, cf)
	}
	return out, nil
}

// looseTools finds the tools a malformed case names, if its JSON parses
// at all, so its failure is reported under the plugin it was meant for.
func looseTools(data []byte) []string {
	var loose struct {
		Tool  string `json:"tool"`
		Steps []struct {
			Tool string `json:"tool"`
		} `json:"steps"`
	}
	if json.Unmarshal(data, &loose) != nil {
		return nil
	}
	tools := []string{}
	if loose.Tool != "" {
		tools = append(tools, loose.Tool)
	}
	for _, st := range loose.Steps {
		if st.Tool != "" {
			tools = append(tools, st.Tool)
		}
	}
	slices.Sort(tools)
	return slices.Compact(tools)
}

// runCases runs the plugin's own cases (conformance/*.json) whose every
// tool is one of the plugin's; a case for other tools belongs to another
// plugin sharing the directory. A malformed file that names no tool is
// reported under every plugin that looks at it.
func runCases(ctx context.Context, s *subject, emit func(Result)) {
	dir := s.caseDir()
	files, err := readCases(dir)
	if err != nil {
		emit(Result{Check: "cases", Status: StatusFail, Detail: fmt.Sprintf("case directory %s: %v", dir, err)})
		return
	}
	var mine []string
	for _, m := range s.described {
		mine = append(mine, m.Name)
	}
	for _, m := range s.tools {
		mine = append(mine, m.Name)
	}
	ran := 0
	for _, cf := range files {
		if !belongs(cf.tools, mine) {
			continue
		}
		ran++
		r := Result{Check: "case:" + cf.stem}
		if len(cf.tools) > 0 {
			r.Tool = cf.tools[0]
		}
		switch {
		case cf.err != nil:
			r.Status, r.Detail = StatusFail, fmt.Sprintf("case file %s is malformed: %v; fix the file", cf.path, cf.err)
		case s.loadErr != nil:
			r.Status, r.Detail = StatusSkip, "the host refuses the plugin (see load)"
		case s.execTool(cf.tools) != "":
			r.Status, r.Detail = StatusSkip, "a step calls "+s.execTool(cf.tools)+": "+s.opts.execRefused(&abi.Manifest{Capabilities: []abi.Capability{abi.CapProcExec}})
		default:
			start := time.Now()
			r = runCase(ctx, s, cf, r)
			r.Elapsed = time.Since(start)
		}
		emit(r)
	}
	if ran == 0 {
		emit(Result{Check: "cases", Status: StatusSkip, Detail: fmt.Sprintf("no case in %s calls this plugin's tools; add conformance/*.json cases beside the plugin", dir)})
	}
}

// execTool is the first of tools that runs commands and that the run
// may not call (Options.AllowExec), or "".
func (s *subject) execTool(tools []string) string {
	for _, m := range append(slices.Clone(s.tools), s.described...) {
		if slices.Contains(tools, m.Name) && s.opts.execRefused(&m) != "" {
			return m.Name
		}
	}
	return ""
}

// belongs reports whether a case's tools are all the plugin's. A file
// naming no tool (malformed beyond reading) belongs to every plugin.
func belongs(tools, mine []string) bool {
	if tools == nil {
		return true
	}
	if len(tools) == 0 {
		return false
	}
	for _, t := range tools {
		if !slices.Contains(mine, t) {
			return false
		}
	}
	return true
}

// runCase runs one case in a fresh workspace.
func runCase(ctx context.Context, s *subject, cf caseFile, r Result) Result {
	c := cf.c
	w, err := s.open(ctx, c.lay, allowAll)
	if err != nil {
		r.Status, r.Detail = StatusFail, fmt.Sprintf("case %s: the workspace did not open: %v", cf.path, err)
		return r
	}
	defer w.Close(ctx)
	if err := w.recordReads(ctx, c.Read); err != nil {
		r.Status, r.Detail = StatusFail, fmt.Sprintf("case %s: recording the reads it lists: %v", cf.path, err)
		return r
	}
	var findings []string
	for i, st := range c.Steps {
		args := st.Args
		if args == nil {
			args = json.RawMessage(`{}`)
		}
		got := w.call(ctx, st.Tool, args)
		for _, f := range st.Expect.mismatches(got) {
			findings = append(findings, fmt.Sprintf("step %d (%s): %s", i+1, st.Tool, f))
		}
	}
	findings = append(findings, c.checkFiles(w.root)...)
	what := c.Description
	if what == "" {
		what = fmt.Sprintf("%d step(s)", len(c.Steps))
	}
	if len(findings) > 0 {
		r.Status, r.Detail, r.Findings = StatusFail, fmt.Sprintf("%s: %d expectation(s) not met", what, len(findings)), findings
		return r
	}
	r.Status, r.Detail = StatusPass, what
	return r
}

// allowAll lifts the denylist (run_command is on it by default): a case
// tests the plugin, not the policy.
func allowAll(cfg *config.Config) { cfg.Tools.Approval.Denylist = nil }

// lay puts the case's fixtures in root: directories, files, then links,
// all through an os.Root so that no fixture lands outside it, even
// through a link laid earlier.
func (c *Case) lay(root string) error {
	rt, err := os.OpenRoot(root)
	if err != nil {
		return err
	}
	defer rt.Close()
	for _, d := range c.Dirs {
		if err := rt.MkdirAll(filepath.FromSlash(d), 0o755); err != nil {
			return err
		}
	}
	for _, name := range slices.Sorted(maps.Keys(c.Files)) {
		p := filepath.FromSlash(name)
		if dir := filepath.Dir(p); dir != "." {
			if err := rt.MkdirAll(dir, 0o755); err != nil {
				return err
			}
		}
		if err := rt.WriteFile(p, []byte(c.Files[name]), 0o644); err != nil {
			return err
		}
	}
	for _, name := range slices.Sorted(maps.Keys(c.Symlinks)) {
		p := filepath.FromSlash(name)
		if dir := filepath.Dir(p); dir != "." {
			if err := rt.MkdirAll(dir, 0o755); err != nil {
				return err
			}
		}
		if err := rt.Symlink(c.Symlinks[name], p); err != nil {
			return err
		}
	}
	return nil
}

// mismatches lists how a result differs from what was expected.
func (e *Expect) mismatches(got engine.Result) []string {
	if e == nil {
		e = &Expect{}
	}
	wantOK := e.ErrorKind == "" && len(e.MessageContains) == 0
	if e.OK != nil {
		wantOK = *e.OK
	}
	var out []string
	switch {
	case wantOK && !got.OK:
		return []string{"expected success, got " + resultText(got)}
	case !wantOK && got.OK:
		return []string{"expected an error, got success: " + quote(got.Content)}
	}
	if e.Content != nil && got.Content != *e.Content {
		out = append(out, fmt.Sprintf("content: expected %s, got %s", quote(*e.Content), quote(got.Content)))
	}
	for _, sub := range e.Contains {
		if !strings.Contains(got.Content, sub) {
			out = append(out, fmt.Sprintf("content: expected it to contain %s, got %s", quote(sub), quote(got.Content)))
		}
	}
	out = append(out, e.structuredMismatches(got)...)
	if got.OK {
		return out
	}
	if e.ErrorKind != "" && string(got.Error.Kind) != e.ErrorKind {
		out = append(out, fmt.Sprintf("error kind: expected %s, got %s", e.ErrorKind, resultText(got)))
	}
	for _, sub := range e.MessageContains {
		if !strings.Contains(got.Error.Message, sub) {
			out = append(out, fmt.Sprintf("error message: expected it to contain %s, got %s", quote(sub), quote(got.Error.Message)))
		}
	}
	return out
}

// structuredMismatches lists the members of Expect.Structured that the
// result's structured object lacks or holds with another value.
func (e *Expect) structuredMismatches(got engine.Result) []string {
	if len(e.Structured) == 0 {
		return nil
	}
	var want, have map[string]any
	if err := json.Unmarshal(e.Structured, &want); err != nil {
		return []string{fmt.Sprintf("structured: the case's expectation is not a JSON object (%v): %s", err, quote(string(e.Structured)))}
	}
	if len(got.Structured) == 0 || json.Unmarshal(got.Structured, &have) != nil {
		return []string{fmt.Sprintf("structured: expected an object holding %s, got none", quote(string(e.Structured)))}
	}
	var out []string
	for _, k := range slices.Sorted(maps.Keys(want)) {
		if v, ok := have[k]; !ok || !reflect.DeepEqual(v, want[k]) {
			w, _ := json.Marshal(want[k])
			g, _ := json.Marshal(v)
			if !ok {
				g = []byte("nothing")
			}
			out = append(out, fmt.Sprintf("structured: expected %q to be %s, got %s", k, quote(string(w)), quote(string(g))))
		}
	}
	return out
}

func resultText(r engine.Result) string {
	if r.OK {
		return "success: " + quote(r.Content)
	}
	if r.Error == nil {
		return "an error without a kind"
	}
	return fmt.Sprintf("error %s: %s", r.Error.Kind, quote(r.Error.Message))
}

// checkFiles compares the files under root with ExpectFiles.
func (c *Case) checkFiles(root string) []string {
	rt, err := os.OpenRoot(root)
	if err != nil {
		return []string{"cannot open the workspace to check files: " + err.Error()}
	}
	defer rt.Close()
	var out []string
	for _, name := range slices.Sorted(maps.Keys(c.ExpectFiles)) {
		want := c.ExpectFiles[name]
		p := filepath.FromSlash(name)
		limit := 0
		if want != nil {
			limit = len(*want)
		}
		got, err := readAtMost(rt, p, limit)
		switch {
		case want == nil && errors.Is(err, fs.ErrNotExist):
		case want == nil && err == nil:
			out = append(out, fmt.Sprintf("file %s: expected it not to exist, it holds %s", name, quote(string(got))))
		case want == nil:
			if _, lerr := rt.Lstat(p); !errors.Is(lerr, fs.ErrNotExist) {
				out = append(out, fmt.Sprintf("file %s: expected it not to exist, it does (%v)", name, err))
			}
		case err != nil:
			out = append(out, fmt.Sprintf("file %s: expected %s, %v", name, quote(*want), err))
		case string(got) != *want:
			out = append(out, fmt.Sprintf("file %s: expected %s, got %s", name, quote(*want), quote(string(got))))
		}
	}
	return out
}

// readAtMost reads name in rt, but no more than one byte past limit: a
// plugin may have left a file larger than memory, and the comparison
// needs only to know that it differs; a FIFO a command made is refused,
// not waited on.
func readAtMost(rt *os.Root, name string, limit int) ([]byte, error) {
	f, err := rt.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if info, err := f.Stat(); err == nil && !info.Mode().IsRegular() && !info.IsDir() {
		return nil, fmt.Errorf("not a regular file (%s)", info.Mode().Type())
	}
	return io.ReadAll(io.LimitReader(f, int64(limit)+1))
}

// maxShown is how much of a content a finding quotes.
const maxShown = 160

// quote is s as a finding shows it: Go-quoted (newlines and controls
// escaped) and cut in the middle when long.
func quote(s string) string { return fmt.Sprintf("%q", cut(s, maxShown)) }

// cut shortens s to about n bytes, keeping its start and end.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	head, tail := n*2/3, n/3
	for head > 0 && !utf8.RuneStart(s[head]) {
		head--
	}
	start := len(s) - tail
	for start < len(s) && !utf8.RuneStart(s[start]) {
		start++
	}
	return fmt.Sprintf("%s…(%d bytes)…%s", s[:head], start-head, s[start:])
}

// recordReads records in the workspace's conversation that it read each
// of paths (fixtures, relative to the root) as they are now, the way
// read_file's read would: in the journal the host loads a conversation's
// reads from on its first call.
func (w *workspace) recordReads(ctx context.Context, paths []string) error {
	if len(paths) == 0 {
		return nil
	}
	j := w.h.Inside(inside.Key{}).Journal
	if j == nil {
		return errors.New("the host keeps no journal, so no read can be recorded")
	}
	reads := make([]journal.Read, 0, len(paths))
	for _, p := range paths {
		abs, err := filepath.EvalSymlinks(filepath.Join(w.root, filepath.FromSlash(p)))
		if err != nil {
			return err
		}
		data, err := os.ReadFile(abs)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(data)
		reads = append(reads, journal.Read{Path: abs, SHA256: hex.EncodeToString(sum[:]), ReadAt: time.Now()})
	}
	return j.SaveReads(ctx, w.conversation, reads)
}
