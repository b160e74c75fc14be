package e2e

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A call that cannot succeed is refused before anyone is asked, and the
// words of a refusal say what happened: who said no, which setting set a
// limit, which directory is missing.

// TestStaleCallIsRefusedBeforeAsking: over MCP, an overwrite or patch of
// a file the conversation never read, or of one that changed since, is
// refused as StaleFile with what to do, and the client is never asked;
// once the file is read again the same write is asked about, and runs.
func TestStaleCallIsRefusedBeforeAsking(t *testing.T) {
	w := newWorkspace(t)
	w.file(t, "a.txt", "before\n")
	var asked atomic.Int32
	s := serveMCP(t, w, &mcp.ClientOptions{ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		asked.Add(1)
		return &mcp.ElicitResult{Action: "accept"}, nil
	}})
	ctx := testContext(t)
	stale := []struct {
		name  string
		prep  func()
		tool  string
		args  map[string]any
		words []string
	}{
		{"overwrite unread", nil, "write_file", map[string]any{"path": "a.txt", "content": "after\n"},
			[]string{"StaleFile: call ", "(write_file) was not run, and nobody was asked to approve it", "a.txt: File was not read before writing", "read it with read_file first"}},
		{"patch unread", nil, "apply_patch", map[string]any{"patch": "LP1\nF a.txt\nT\nmore\n.\nEND\n"},
			[]string{"StaleFile: call ", "(apply_patch) was not run, and nobody was asked", "a.txt: File was not read before patching"}},
		{"overwrite changed since read", func() {
			s.call(t, ctx, "read_file", map[string]any{"path": "a.txt"})
			w.file(t, "a.txt", "changed by someone else\n")
		}, "write_file", map[string]any{"path": "a.txt", "content": "after\n"},
			[]string{"StaleFile: ", "a.txt: File content changed since last read", "read it again with read_file"}},
	}
	for _, tc := range stale {
		if tc.prep != nil {
			tc.prep()
		}
		before, _ := os.ReadFile(filepath.Join(w.dir, "a.txt"))
		res, text := s.call(t, ctx, tc.tool, tc.args)
		if !res.IsError {
			t.Fatalf("%s: ran: %q", tc.name, text)
		}
		for _, want := range tc.words {
			if !strings.Contains(text, want) {
				t.Errorf("%s: result %q lacks %q", tc.name, text, want)
			}
		}
		if n := asked.Load(); n != 0 {
			t.Fatalf("%s: the client was asked %d times about a call that could not succeed", tc.name, n)
		}
		if after, _ := os.ReadFile(filepath.Join(w.dir, "a.txt")); string(after) != string(before) {
			t.Errorf("%s: a.txt changed to %q", tc.name, after)
		}
	}

	s.call(t, ctx, "read_file", map[string]any{"path": "a.txt"})
	if res, text := s.call(t, ctx, "write_file", map[string]any{"path": "a.txt", "content": "after\n"}); res.IsError || asked.Load() != 1 {
		t.Fatalf("write after a read: isError %v %q, asked %d times; want asked once, then written", res.IsError, text, asked.Load())
	}
	if got, _ := os.ReadFile(filepath.Join(w.dir, "a.txt")); string(got) != "after\n" {
		t.Errorf("a.txt holds %q after the approved write", got)
	}
}

// TestStaleCallIsNotHeldOrPrompted: the other places a person is asked,
// the CLI's question (here without a terminal, where the call used to
// be denied for want of one) and the batch API's held batches, never see
// a stale call either: it is StaleFile at once.
func TestStaleCallIsNotHeldOrPrompted(t *testing.T) {
	w := newWorkspace(t)
	w.file(t, "a.txt", "before\n")

	r, _, code := w.call(t, "write_file", `{"path":"a.txt","content":"after\n"}`)
	if code != 1 || r.Error == nil || r.Error.Kind != "StaleFile" || !strings.Contains(r.Error.Message, "nobody was asked") {
		t.Errorf("CLI, unread overwrite: exit %d %+v, want StaleFile", code, r.Error)
	}

	s := serveHTTP(t, w, "--hold", "2m")
	b := s.batch(t, "POST", "/v1/batches", map[string]any{"conversation_id": "c1", "calls": []map[string]any{
		{"id": "w1", "name": "write_file", "arguments": map[string]any{"path": "a.txt", "content": "after\n"}}}}, 201)
	if len(b.Calls) != 1 || b.Calls[0].Disposition != "pre_resolved" || b.Calls[0].Result == nil || b.Calls[0].Result.Error.Kind != "StaleFile" {
		t.Errorf("batch API, unread overwrite: %+v, want pre_resolved StaleFile, not held for a decision", b)
	}
	done := s.waitState(t, b.BatchID, "done")
	if len(done.Results) != 1 || done.Results[0].Error == nil || done.Results[0].Error.Kind != "StaleFile" {
		t.Errorf("batch API, unread overwrite: results %+v", done.Results)
	}

	// An MCP client that cannot be asked: not held, answered at once.
	ctx := testContext(t)
	cs := s.connect(t, ctx, nil, nil)
	res, text, err := callText(ctx, cs, "write_file", map[string]any{"path": "a.txt", "content": "after\n"})
	if err != nil || !res.IsError || !strings.HasPrefix(text, "StaleFile: ") {
		t.Errorf("held MCP client, unread overwrite: %v %q, want StaleFile at once", err, text)
	}
	if status, out := s.api(t, "GET", "/v1/batches?state=awaiting_approval", nil); status != 200 || strings.Contains(string(out), "write_file") {
		t.Errorf("a stale call is held: %d %s", status, out)
	}
	if got, _ := os.ReadFile(filepath.Join(w.dir, "a.txt")); string(got) != "before\n" {
		t.Errorf("a.txt holds %q", got)
	}
}

// TestDenialWordsSayWhoDecided: whoever answered no is reported as kind
// DeniedByUser, an MCP client's answer as the client's (toolhost cannot
// know that a person chose it); a call no answer came for stays a
// SandboxViolation with reason NotAsked.
func TestDenialWordsSayWhoDecided(t *testing.T) {
	tests := []struct {
		name   string
		answer func() (*mcp.ElicitResult, error)
		words  []string
		not    []string
	}{
		{"client declines", func() (*mcp.ElicitResult, error) { return &mcp.ElicitResult{Action: "decline"}, nil },
			[]string{"DeniedByUser: ", `Denied by the MCP client, which answered "decline" to the approval question`, "did not run"}, []string{"user", "SandboxViolation"}},
		{"client cancels", func() (*mcp.ElicitResult, error) { return &mcp.ElicitResult{Action: "cancel"}, nil },
			[]string{"DeniedByUser: ", `which answered "cancel"`}, []string{"SandboxViolation"}},
		{"asking fails", func() (*mcp.ElicitResult, error) { return nil, errors.New("no window to show the question in") },
			[]string{"SandboxViolation: ", "Denied by default, because asking the MCP client failed", `"reason":"NotAsked"`}, []string{"DeniedByUser"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorkspace(t)
			w.file(t, "a.txt", "before\n")
			s := serveMCP(t, w, &mcp.ClientOptions{ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
				return tc.answer()
			}})
			ctx := testContext(t)
			s.call(t, ctx, "read_file", map[string]any{"path": "a.txt"})
			res, text := s.call(t, ctx, "write_file", map[string]any{"path": "a.txt", "content": "after\n"})
			if !res.IsError {
				t.Fatalf("ran: %q", text)
			}
			for _, want := range tc.words {
				if !strings.Contains(text, want) {
					t.Errorf("result %q lacks %q", text, want)
				}
			}
			for _, not := range tc.not {
				if strings.Contains(text, not) {
					t.Errorf("result %q holds %q", text, not)
				}
			}
		})
	}

	// The batch API's deny_all is its client's answer.
	w := newWorkspace(t)
	w.file(t, "a.txt", "before\n")
	s := serveHTTP(t, w)
	s.waitState(t, s.batch(t, "POST", "/v1/batches", map[string]any{"conversation_id": "c1", "calls": []map[string]any{
		{"id": "r", "name": "read_file", "arguments": map[string]any{"path": "a.txt"}}}}, 201).BatchID, "done")
	b := s.batch(t, "POST", "/v1/batches", map[string]any{"conversation_id": "c1", "calls": []map[string]any{
		{"id": "w", "name": "write_file", "arguments": map[string]any{"path": "a.txt", "content": "after\n"}}}}, 201)
	s.batch(t, "POST", "/v1/batches/"+b.BatchID+"/decision", map[string]any{"decision": "deny_all"}, 200)
	if r := s.waitState(t, b.BatchID, "done").Results; len(r) != 1 || r[0].Error == nil || r[0].Error.Kind != "DeniedByUser" || !strings.Contains(r[0].Error.Message, "batch API") {
		t.Errorf("deny_all through the batch API: %+v, want DeniedByUser naming the batch API's client", r)
	}

	// No terminal to ask on: nobody answered.
	cli := newWorkspace(t)
	cli.file(t, "a.txt", "before\n")
	cli.call(t, "read_file", `{"path":"a.txt"}`, "--conversation", "d")
	r, _, _ := cli.call(t, "write_file", `{"path":"a.txt","content":"after\n"}`, "--conversation", "d")
	if r.Error == nil || r.Error.Kind != "SandboxViolation" || !strings.Contains(string(r.Error.Details), `"NotAsked"`) {
		t.Errorf("CLI without a terminal: %+v, want SandboxViolation NotAsked", r.Error)
	}
}

// TestReadLimitWordsNameTheSetting: a file over read_file's limit is
// refused with the one number in force and the setting that set it,
// whichever of the two it is.
func TestReadLimitWordsNameTheSetting(t *testing.T) {
	tests := []struct {
		name   string
		config string
		words  []string
		not    []string
	}{
		{"the room for a result is smaller (the defaults)", "",
			[]string{"big.txt is 100000 bytes, more than the read limit of 65536 bytes", "tools.output.available_capacity_bytes", "start_line and end_line"}, []string{"204800"}},
		{"max_file_read_bytes is smaller", "[tools.read_file]\nmax_file_read_bytes = 1000\n",
			[]string{"more than the read limit of 1000 bytes, set by tools.read_file.max_file_read_bytes"}, []string{"65536", "available_capacity_bytes"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorkspace(t).withConfig(t, tc.config)
			w.file(t, "big.txt", strings.Repeat("0123456789", 10000))
			r, _, code := w.call(t, "read_file", `{"path":"big.txt"}`)
			if code != 1 || r.Error == nil {
				t.Fatalf("exit %d %+v", code, r)
			}
			for _, want := range tc.words {
				if !strings.Contains(r.Error.Message, want) {
					t.Errorf("message %q lacks %q", r.Error.Message, want)
				}
			}
			for _, not := range tc.not {
				if strings.Contains(r.Error.Message, not) {
					t.Errorf("message %q holds %q", r.Error.Message, not)
				}
			}
		})
	}
}

// TestMissingRootWords: a root that does not exist is named once, with
// "sandbox: " once, and what to do.
func TestMissingRootWords(t *testing.T) {
	w := newWorkspace(t)
	missing := filepath.Join(w.dir, "nonexistent")
	for _, args := range [][]string{
		callArgs("read_file", `{"path":"a.txt"}`, "--root", missing),
		{"serve", "--stdio", "--root", missing},
	} {
		_, stderr, code := w.run(t, args...)
		if code == 0 || strings.Count(stderr, "sandbox: ") != 1 || !strings.Contains(stderr, `root "`+missing+`" does not exist`) || !strings.Contains(stderr, "tools.sandbox.allowed_roots") {
			t.Errorf("%v: exit %d, stderr %q; want one \"sandbox: \", the root named as missing and what to do", args[:2], code, stderr)
		}
	}
}

// TestErrorsArePlainText: an error toolhost prints on stderr is a
// message: what a user typed that it quotes (here a configuration path
// holding a terminal escape) loses its control sequences, and nothing is
// drawn with the markers an approval prompt shows text with.
func TestErrorsArePlainText(t *testing.T) {
	w := newWorkspace(t)
	cfg := filepath.Join(t.TempDir(), "op\x1b[31mred\x1b]0;title\x07.toml")
	_, stderr, code := w.run(t, "--config", cfg, "call", "read_file", "--args", `{"path":"a.txt"}`)
	if code == 0 || !strings.Contains(stderr, "opred") {
		t.Fatalf("exit %d, stderr %q; want a configuration error naming the file", code, stderr)
	}
	for _, bad := range []string{"\x1b", "\x07", "⏎", "<U+"} {
		if strings.Contains(stderr, bad) {
			t.Errorf("stderr %q holds %q", stderr, bad)
		}
	}
}

// TestStaleCallAtATerminalIsNotAsked: at a terminal, where a call that
// needs approval is asked about, a stale overwrite ends at once with
// StaleFile, and no question is shown.
func TestStaleCallAtATerminalIsNotAsked(t *testing.T) {
	w := newWorkspace(t).withConfig(t, promptConfig)
	w.file(t, "a.txt", "before\n")
	term := startTerminal(t, w, "write_file", `{"path":"a.txt","content":"after\n"}`)
	exitCode(t, term.cmd.Wait())
	<-term.done
	term.mu.Lock()
	shown := term.screen.String()
	term.mu.Unlock()
	r := decodeResult(t, "write_file", term.stdout.String(), shown)
	if r.OK || r.Error.Kind != "StaleFile" || !strings.Contains(r.Error.Message, "nobody was asked") {
		t.Errorf("result %+v, want StaleFile", r.Error)
	}
	if strings.Contains(shown, "[y/N]") || strings.Contains(shown, "toolhost asks") {
		t.Errorf("the terminal asked about a call that could not succeed:\n%s", shown)
	}
}

// TestUndoRefusalIsPlainText: undo's StaleFile refusal lists the files
// that changed one a line, as a message, not drawn with a prompt's ⏎.
func TestUndoRefusalIsPlainText(t *testing.T) {
	w := newWorkspace(t)
	w.file(t, "a.txt", "a0")
	w.mustCall(t, "read_file", `{"path": "a.txt"}`, "--conversation", "s", "--id", "r1")
	w.mustCall(t, "write_file", `{"path": "a.txt", "content": "a1"}`, "--conversation", "s", "--id", "w1", "--allow", "write_file")
	w.file(t, "a.txt", "edited by hand")
	_, stderr, code := w.run(t, "undo", "w1")
	if code != 1 || !strings.Contains(stderr, "StaleFile") || !strings.Contains(stderr, "\n  "+filepath.Join(realDir(t, w.dir), "a.txt")+": ") {
		t.Fatalf("undo after an outside edit: exit %d, stderr %q; want the changed file on a line of its own", code, stderr)
	}
	for _, bad := range []string{"⏎", "<U+"} {
		if strings.Contains(stderr, bad) {
			t.Errorf("stderr %q holds %q", stderr, bad)
		}
	}
}
