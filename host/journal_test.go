package host_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/toolhost/toolhost/abi"
	"github.com/toolhost/toolhost/host"
	"github.com/toolhost/toolhost/host/internal/config"
	"github.com/toolhost/toolhost/host/internal/engine"
	"github.com/toolhost/toolhost/host/internal/inside"
	"github.com/toolhost/toolhost/host/internal/journal"
	"github.com/toolhost/toolhost/internal/testplugin"
)

// childEnv makes the test binary a child that opens a host and runs a
// batch under conditions the test itself must not live under.
const childEnv = "TOOLHOST_HOST_TEST_CHILD"

func TestMain(m *testing.M) {
	if mode := os.Getenv(childEnv); mode != "" {
		os.Exit(journalChild(mode, os.Args[1:]))
	}
	os.Exit(m.Run())
}

// journalChild, mode "fsize": open a host on PLUGINS, CACHE, STATE, ROOT,
// limit file sizes to LIMIT bytes, run a batch writing a large file, and
// print its results as JSON.
func journalChild(mode string, args []string) int {
	if mode != "fsize" || len(args) != 5 {
		fmt.Fprintln(os.Stderr, "usage: fsize PLUGINS CACHE STATE ROOT LIMIT")
		return 2
	}
	ctx := context.Background()
	cfg := config.Default()
	cfg.Tools.Sandbox.AllowedRoots = []string{args[3]}
	h, err := host.Open(ctx, host.Options{PluginDir: args[0], CacheDir: args[1], StateDir: args[2], Config: cfg})
	if err != nil {
		fmt.Fprintln(os.Stderr, "open:", err)
		return 1
	}
	defer h.Close(ctx)
	limit, _ := strconv.ParseUint(args[4], 10, 64)
	if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &syscall.Rlimit{Cur: limit, Max: limit}); err != nil {
		fmt.Fprintln(os.Stderr, "setrlimit:", err)
		return 1
	}
	big, _ := json.Marshal(map[string]string{"path": "big.txt", "content": strings.Repeat("x", 200<<10)})
	_, results := h.Process(ctx, engine.Batch{ID: "batch_full", Calls: []engine.Call{
		call("r1", "list_directory", `{"path": "."}`),
		{ID: "w1", Name: "write_file", Arguments: big},
	}}, host.BatchOptions{Approver: approveAll()})
	json.NewEncoder(os.Stdout).Encode(results)
	return 0
}

// openJournaled opens a host with a state directory, so with a journal.
func openJournaled(t *testing.T, state string, mutate func(*config.Config)) (*host.Host, string) {
	t.Helper()
	h, root := open(t, func(c *config.Config, o *host.Options) {
		o.StateDir = state
		if mutate != nil {
			mutate(c)
		}
	})
	if h.Inside(inside.Key{}).Journal == nil {
		t.Fatal("a host with a state directory keeps no journal")
	}
	return h, root
}

// FR-RES-01, FR-RES-04a/b: through host.Open with a real
// journal file, a batch with a read and an approved write leaves the batch
// with both calls, in order, their arguments with secrets redacted, the
// decision and who made it, and their results; the batch is done.
func TestJournalRecordsBatch(t *testing.T) {
	state := t.TempDir()
	h, root := openJournaled(t, state, func(c *config.Config) { c.Tools.Approval.AutoApproveNewFiles = false })
	const secret = "sk-abcdefghijklmnop0123456789"
	ctx := context.Background()
	p, results := h.Process(ctx, engine.Batch{ID: "batch_1", Conversation: "conv", Calls: []engine.Call{
		call("r1", "list_directory", `{"path": "."}`),
		call("w1", "write_file", `{"path": "notes.txt", "content": "key `+secret+`\n"}`),
	}}, host.BatchOptions{Approver: approveAll()})
	if p.Calls[1].Disposition != engine.RequiresConfirmation {
		t.Fatalf("write disposition %s, want it to need confirmation", p.Calls[1].Disposition)
	}
	for _, r := range results {
		if !r.OK {
			t.Fatalf("call %s failed: %+v", r.ID, r.Error)
		}
	}
	if _, err := os.Stat(filepath.Join(root, "notes.txt")); err != nil {
		t.Fatalf("the write did not happen: %v", err)
	}
	b, err := h.Inside(inside.Key{}).Journal.Batch(ctx, "batch_1")
	if err != nil {
		t.Fatal(err)
	}
	if b.State != journal.StateDone || b.Conversation != "conv" || len(b.Calls) != 2 {
		t.Fatalf("journaled batch %+v, want done, conversation conv, two calls", b)
	}
	r1, w1 := b.Calls[0], b.Calls[1]
	if r1.ID != "r1" || r1.Tool != "list_directory" || r1.Disposition != string(engine.ExecuteNow) || r1.Decision != "" {
		t.Errorf("read call journaled as %+v", r1)
	}
	if w1.ID != "w1" || w1.Tool != "write_file" || w1.Decision != journal.Approved || w1.DecidedBy != "the test" {
		t.Errorf("write call journaled as %+v, want approved by the test", w1)
	}
	if strings.Contains(string(w1.Arguments), secret) || !strings.Contains(string(w1.Arguments), "[REDACTED]") ||
		!strings.Contains(string(w1.Arguments), "notes.txt") {
		t.Errorf("write arguments journaled as %s, want the path kept and the secret redacted", w1.Arguments)
	}
	for i, c := range b.Calls {
		if c.Started.IsZero() || c.Result == nil || !c.Result.OK || c.Result.Finished.Before(c.Started) {
			t.Errorf("call %s: started %v, result %+v; want a start, then an OK result", c.ID, c.Started, c.Result)
		}
		if i > 0 && c.Started.Before(b.Calls[i-1].Result.Finished) {
			t.Errorf("call %s started before the result of %s was recorded", c.ID, b.Calls[i-1].ID)
		}
	}
	if b.Calls[0].Result.Content != results[0].Content {
		t.Errorf("read result journaled as %q, want %q", b.Calls[0].Result.Content, results[0].Content)
	}
}

// Calls resolved without running are journaled with
// their results and never as started: a denied call with who denied it, a
// duplicate id (under an id of its own in the journal) and an unknown tool.
func TestJournalRecordsCallsThatDidNotRun(t *testing.T) {
	h, _ := openJournaled(t, t.TempDir(), func(c *config.Config) { c.Tools.Approval.AutoApproveNewFiles = false })
	ctx := context.Background()
	deny := engine.ApproverFunc(func(context.Context, []engine.Confirmation) (engine.Decision, error) {
		return engine.DenyAll("the reviewer"), nil
	})
	_, results := h.Process(ctx, engine.Batch{ID: "batch_2", Calls: []engine.Call{
		call("w1", "write_file", `{"path": "a.txt", "content": "x"}`),
		call("d", "list_directory", `{}`),
		call("d", "list_directory", `{}`),
		call("u1", "no_such_tool", `{}`),
	}}, host.BatchOptions{Approver: deny})
	b, err := h.Inside(inside.Key{}).Journal.Batch(ctx, "batch_2")
	if err != nil {
		t.Fatal(err)
	}
	if b.State != journal.StateDone || len(b.Calls) != 4 {
		t.Fatalf("journaled batch %+v, want done with four calls", b)
	}
	wantIDs := []string{"w1", "d#2", "d#3", "u1"}
	for i, c := range b.Calls {
		if c.ID != wantIDs[i] {
			t.Errorf("call %d journaled as %q, want %q", i, c.ID, wantIDs[i])
		}
		if !c.Started.IsZero() {
			t.Errorf("call %s journaled as started; it never ran", c.ID)
		}
		if c.Result == nil || c.Result.OK || c.Result.ErrorMessage != results[i].Error.Message {
			t.Errorf("call %s journaled result %+v, want the engine's %+v", c.ID, c.Result, results[i].Error)
		}
	}
	if b.Calls[0].Decision != journal.Denied || b.Calls[0].DecidedBy != "the reviewer" {
		t.Errorf("denied call journaled as %+v", b.Calls[0])
	}
}

// A run_command's process group is journaled while the
// command runs, with its leader's start time, so that recovery after a
// crash can find and kill what is left of it.
func TestJournalRecordsProcessGroup(t *testing.T) {
	h, _ := openJournaled(t, t.TempDir(), func(c *config.Config) {
		c.Tools.Approval.Denylist = nil
		c.Tools.Approval.Mode = "auto"
		// The journal records the shell's own pid: unconfined, the one
		// $$ prints (a confined shell sees its PID namespace's).
		unconfined(c)
	})
	ctx := context.Background()
	_, results := h.Process(ctx, engine.Batch{ID: "batch_p", Calls: []engine.Call{
		call("c1", "run_command", `{"command": "echo $$"}`),
	}}, host.BatchOptions{Approver: approveAll()})
	if !results[0].OK {
		t.Fatalf("run_command failed: %+v", results[0].Error)
	}
	b, err := h.Inside(inside.Key{}).Journal.Batch(ctx, "batch_p")
	if err != nil {
		t.Fatal(err)
	}
	ps := b.Calls[0].Processes
	if len(ps) != 1 || ps[0].StartTime == 0 || !strings.Contains(results[0].Content, strconv.Itoa(ps[0].PGID)) {
		t.Fatalf("journaled process groups %+v, result %q: want the shell's pid, with its start time", ps, results[0].Content)
	}
}

// FR-RES-04c: a host without a state directory and no
// [journal] path keeps no journal; one with a path keeps it there, even
// in memory.
func TestJournalWhere(t *testing.T) {
	h, _ := open(t, nil)
	if h.Inside(inside.Key{}).Journal != nil {
		t.Errorf("a host without a state directory keeps a journal at %s", h.Inside(inside.Key{}).Journal.Path())
	}
	file := filepath.Join(t.TempDir(), "elsewhere.db")
	for _, path := range []string{file, journal.Memory} {
		h, _ := open(t, func(c *config.Config, o *host.Options) { c.Journal.Path = path })
		if h.Inside(inside.Key{}).Journal == nil || h.Inside(inside.Key{}).Journal.Path() != path {
			t.Errorf("[journal] path %s: the host's journal is %v", path, h.Inside(inside.Key{}).Journal)
			continue
		}
		_, results := h.Process(context.Background(), engine.Batch{ID: "b", Calls: []engine.Call{call("r1", "list_directory", `{}`)}}, host.BatchOptions{})
		if b, err := h.Inside(inside.Key{}).Journal.Batch(context.Background(), "b"); err != nil || !results[0].OK || len(b.Calls) != 1 {
			t.Errorf("[journal] path %s: batch %+v, %v (result %+v)", path, b, err, results[0])
		}
	}
	if _, err := os.Stat(file); err != nil {
		t.Errorf("the configured journal file: %v", err)
	}
}

// The fault test of "Done when": a journal that cannot be
// read (a directory in its place, a damaged file) fails host.Open with
// the journal's message naming the file and what to do, and the file is
// left exactly as it was.
func TestJournalOpenFails(t *testing.T) {
	tests := []struct {
		name  string
		make  func(path string) error
		wants []string
	}{
		{"directory in its place", func(path string) error { return os.Mkdir(path, 0o755) }, []string{"is a directory", "move the directory aside", "[journal] path"}},
		{"not a database", func(path string) error { return os.WriteFile(path, []byte("not a journal\n"), 0o644) },
			[]string{"damaged", "move it aside", "never deletes"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			state := t.TempDir()
			path := filepath.Join(state, "journal.db")
			if err := tt.make(path); err != nil {
				t.Fatal(err)
			}
			before, _ := os.ReadFile(path)
			cfg := config.Default()
			cfg.Tools.Sandbox.AllowedRoots = []string{t.TempDir()}
			h, err := host.Open(context.Background(), host.Options{PluginDir: pluginDir(t), CacheDir: testplugin.CacheDir(t), StateDir: state, Config: cfg})
			if err == nil {
				h.Close(context.Background())
				t.Fatal("Open succeeded over an unreadable journal")
			}
			for _, want := range append(tt.wants, path) {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not say %q", err, want)
				}
			}
			if after, _ := os.ReadFile(path); !bytes.Equal(before, after) {
				t.Errorf("the journal file was changed")
			}
		})
	}
}

// The fault test of "Done when": the disk refuses the
// journal's write (a file size limit, as a full disk would). No call of
// the batch runs, each result says the journal could not record it and
// why, naming the file; nothing is written to the workspace.
func TestJournalDiskRefusesWrite(t *testing.T) {
	state, root := t.TempDir(), t.TempDir()
	plugins, cache := pluginDir(t), testplugin.CacheDir(t)
	// The journal exists, so that opening it needs no growth.
	cfg := config.Default()
	cfg.Tools.Sandbox.AllowedRoots = []string{root}
	h, err := host.Open(context.Background(), host.Options{PluginDir: plugins, CacheDir: cache, StateDir: state, Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	h.Close(context.Background())
	cmd := exec.Command(os.Args[0], plugins, cache, state, root, "65536")
	cmd.Env = append(os.Environ(), childEnv+"=fsize")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, stderr.String())
	}
	var results []engine.Result
	if err := json.Unmarshal(out, &results); err != nil || len(results) != 2 {
		t.Fatalf("child printed %s (%v)", out, err)
	}
	path := filepath.Join(state, "journal.db")
	for _, r := range results {
		if r.OK || r.Error == nil || r.Error.Kind != abi.KindExecutionFailed {
			t.Errorf("call %s: %+v, want it not run", r.ID, r)
			continue
		}
		for _, want := range []string{r.ID, "did not run", path, "nothing was run"} {
			if !strings.Contains(r.Error.Message, want) {
				t.Errorf("call %s: message %q does not say %q", r.ID, r.Error.Message, want)
			}
		}
	}
	if _, err := os.Stat(filepath.Join(root, "big.txt")); err == nil {
		t.Errorf("the write ran although the journal could not record it")
	}
}

// A journal the configuration puts inside the workspace
// is out of every tool's reach, as the state directory is: a tool that
// could write it could forge what recovery acts on.
func TestJournalPathProtected(t *testing.T) {
	root := t.TempDir()
	path := filepath.Join(root, "journal.db")
	h, _ := open(t, func(c *config.Config, o *host.Options) {
		c.Tools.Sandbox.AllowedRoots = []string{root}
		c.Journal.Path = path
	})
	_, results := h.Process(context.Background(), engine.Batch{ID: "b", Calls: []engine.Call{
		call("r1", "read_file", `{"path": "journal.db"}`),
		call("r2", "read_file", `{"path": "journal.db-wal"}`),
	}}, host.BatchOptions{})
	for _, r := range results {
		if r.OK || r.Error == nil || r.Error.Kind != abi.KindSandboxViolation {
			t.Errorf("call %s read the journal: %+v", r.ID, r)
		}
	}
}

// A batch narrowed to a dry run (an approval prompt's preview) is never
// journaled, whether its calls were planned to run or refused while
// planning: the history holds the batch someone was asked about, not each
// preview drawn for it.
func TestJournalSkipsDryRuns(t *testing.T) {
	h, _ := openJournaled(t, t.TempDir(), nil)
	ctx := context.Background()
	for _, tc := range []struct {
		id   string
		call engine.Call
	}{
		{"batch_preview_write", call("w1", "write_file", `{"path": "new.txt", "content": "x"}`)},
		{"batch_preview_refused", call("u1", "no_such_tool", `{}`)},
		{"batch_preview_outside", call("w2", "write_file", `{"path": "../outside.txt", "content": "x"}`)},
	} {
		p, _ := h.Process(ctx, engine.Batch{ID: tc.id, Calls: []engine.Call{tc.call}},
			host.BatchOptions{Approver: approveAll(), Narrowing: engine.Narrowing{DryRun: true}})
		if len(p.Calls) != 1 {
			t.Fatalf("%s: planned %d calls", tc.id, len(p.Calls))
		}
		if b, err := h.Inside(inside.Key{}).Journal.Batch(ctx, tc.id); err == nil {
			t.Errorf("%s: a dry run was journaled as %+v", tc.id, b)
		}
	}
	// The same refused call outside a dry run is journaled.
	h.Process(ctx, engine.Batch{ID: "batch_real", Calls: []engine.Call{call("u1", "no_such_tool", `{}`)}},
		host.BatchOptions{Approver: approveAll()})
	if _, err := h.Inside(inside.Key{}).Journal.Batch(ctx, "batch_real"); err != nil {
		t.Errorf("a refused call outside a dry run: %v, want it journaled", err)
	}
}
