package e2e

import (
	"context"
	"encoding/json"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The ids a user aims at: every batch and call has a journal id no other
// shares, every result the CLI prints names its batch, the history says
// what each batch was about, and an id several calls share is refused
// rather than guessed.

// callOut is `toolhost call`'s output, with where the journal keeps it.
type callOut struct {
	ID        string `json:"id"`
	OK        bool   `json:"ok"`
	BatchID   string `json:"batch_id"`
	JournalID string `json:"journal_id"`
}

// callIDs runs `toolhost call`, which must succeed, and decodes the ids
// it prints.
func (w *workspace) callIDs(t *testing.T, tool, args string, extra ...string) callOut {
	t.Helper()
	var out callOut
	if err := json.Unmarshal([]byte(w.runOK(t, callArgs(tool, args, extra...)...)), &out); err != nil || !out.OK {
		t.Fatalf("toolhost call %s: %v, %+v", tool, err, out)
	}
	return out
}

// listed is `toolhost journal list --format json` with the tool and path.
type listed struct {
	Batches []struct {
		BatchID string `json:"batch_id"`
		Tool    string `json:"tool"`
		Path    string `json:"path"`
		Calls   int    `json:"calls"`
	} `json:"batches"`
}

// shownCall is a call of `toolhost journal show --format json`.
type shownCall struct {
	ID        string          `json:"id"`
	JournalID string          `json:"journal_id"`
	Name      string          `json:"name"`
	Path      string          `json:"path"`
	Arguments json.RawMessage `json:"arguments"`
}

// journalCalls is every call of the batches `journal list` shows,
// newest batch first.
func journalCalls(t *testing.T, w *workspace) []shownCall {
	t.Helper()
	var calls []shownCall
	for _, b := range jsonOut[listed](t, w, "journal", "list", "--format", "json").Batches {
		shown := jsonOut[struct {
			Calls []shownCall `json:"calls"`
		}](t, w, "journal", "show", b.BatchID, "--format", "json")
		calls = append(calls, shown.Calls...)
	}
	return calls
}

// TestCallIDsUnique: two `toolhost call` runs get their own batch and
// call journal ids, printed with the result, even when both are given
// the same --id; without --id a call is named by its journal id. A
// `toolhost batch` names each call's journal id beside the model's id.
func TestCallIDsUnique(t *testing.T) {
	w := newWorkspace(t)
	w.file(t, "a.txt", "a\n")
	first := w.callIDs(t, "read_file", `{"path":"a.txt"}`)
	second := w.callIDs(t, "read_file", `{"path":"a.txt"}`)
	for _, c := range []callOut{first, second} {
		if c.BatchID == "" || c.JournalID != c.BatchID+".1" || c.ID != c.JournalID {
			t.Errorf("toolhost call printed %+v; want a batch id, the call's journal id BATCH.1, and that id as its id", c)
		}
	}
	if first.BatchID == second.BatchID || first.ID == second.ID {
		t.Errorf("two toolhost call runs share ids: %+v and %+v", first, second)
	}
	named := []callOut{w.callIDs(t, "read_file", `{"path":"a.txt"}`, "--id", "call_1"), w.callIDs(t, "read_file", `{"path":"a.txt"}`, "--id", "call_1")}
	if named[0].ID != "call_1" || named[1].ID != "call_1" || named[0].JournalID == named[1].JournalID {
		t.Errorf("two calls given --id call_1: %+v; want that id kept and two journal ids", named)
	}
	var seen []string
	for _, c := range journalCalls(t, w) {
		if slices.Contains(seen, c.JournalID) {
			t.Errorf("journal id %s twice in the journal", c.JournalID)
		}
		seen = append(seen, c.JournalID)
	}
	if len(seen) != 4 {
		t.Errorf("the journal holds calls %v, want 4", seen)
	}

	file := writeBatchFile(t, "b", []map[string]any{batchCall("call_1", "read_file", map[string]any{"path": "a.txt"}), batchCall("call_2", "read_file", map[string]any{"path": "a.txt"})})
	ran := jsonOut[struct {
		BatchID string `json:"batch_id"`
		Results []struct {
			ID        string `json:"id"`
			JournalID string `json:"journal_id"`
		} `json:"results"`
	}](t, w, "batch", "--file", file)
	if len(ran.Results) != 2 || ran.Results[0].ID != "call_1" || ran.Results[0].JournalID != ran.BatchID+".1" || ran.Results[1].JournalID != ran.BatchID+".2" {
		t.Errorf("toolhost batch printed %+v; want each result with its journal id", ran)
	}
}

// TestMCPCallIDsUnique: calls over MCP in two sessions (two server runs)
// get distinct ids, and each call's id is its journal id.
func TestMCPCallIDsUnique(t *testing.T) {
	w := newWorkspace(t)
	w.file(t, "a.txt", "a\n")
	for range 2 {
		s := serveMCP(t, w, nil)
		ctx := testContext(t)
		for range 2 {
			if res, text := s.call(t, ctx, "read_file", map[string]any{"path": "a.txt"}); res.IsError {
				t.Fatalf("read_file over MCP: %s", text)
			}
		}
		s.session.Close()
	}
	calls := journalCalls(t, w)
	var ids []string
	for _, c := range calls {
		if c.ID != c.JournalID {
			t.Errorf("an MCP call's id %q is not its journal id %q", c.ID, c.JournalID)
		}
		if slices.Contains(ids, c.ID) {
			t.Errorf("call id %s in two MCP calls", c.ID)
		}
		ids = append(ids, c.ID)
	}
	if len(ids) != 4 {
		t.Errorf("the journal holds MCP calls %v, want 4", ids)
	}
}

// TestPreviewDryRunNotJournaled: the dry run that draws an approval's
// diff is not a batch of the history; the call asked about is.
func TestPreviewDryRunNotJournaled(t *testing.T) {
	w := newWorkspace(t)
	w.file(t, "out.txt", "before\n")
	asked := 0
	s := serveMCP(t, w, &mcp.ClientOptions{ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		if strings.Contains(req.Params.Message, "from a dry run") {
			asked++
		}
		return &mcp.ElicitResult{Action: "accept"}, nil
	}})
	ctx := testContext(t)
	s.call(t, ctx, "read_file", map[string]any{"path": "out.txt"})
	if res, text := s.call(t, ctx, "write_file", map[string]any{"path": "out.txt", "content": "after\n"}); res.IsError {
		t.Fatalf("approved write: %s", text)
	}
	s.session.Close()
	if asked != 1 {
		t.Fatalf("the client was asked with a dry run's diff %d times, want once", asked)
	}
	list := jsonOut[listed](t, w, "journal", "list", "--format", "json")
	var tools []string
	for _, b := range list.Batches {
		tools = append(tools, b.Tool)
	}
	if !slices.Equal(tools, []string{"write_file", "read_file"}) {
		t.Errorf("journal list shows batches of %v, want write_file and read_file only (no dry run)", tools)
	}
	for _, c := range journalCalls(t, w) {
		if strings.Contains(string(c.Arguments), "dry_run") {
			t.Errorf("the journal holds the dry run %s: %s", c.JournalID, c.Arguments)
		}
	}
}

// TestJournalListToolAndPath: journal list says what each batch was
// about, its first call's tool and the first path, relative to where
// the command runs, as a table and as JSON.
func TestJournalListToolAndPath(t *testing.T) {
	w := newWorkspace(t)
	w.file(t, "sub/notes.md", "n\n")
	read := w.callIDs(t, "read_file", `{"path":"sub/notes.md"}`)
	list := w.callIDs(t, "list_directory", `{"path":"sub"}`)
	table := w.runOK(t, "journal", "list")
	for _, row := range []string{
		`(?m)^BATCH\s+CREATED\s+STATE\s+TOOL\s+PATH\s+CONVERSATION`,
		`(?m)^` + read.BatchID + `\s+\S+\s+done\s+read_file\s+sub/notes\.md\s+default\s+1\s`,
		`(?m)^` + list.BatchID + `\s+\S+\s+done\s+list_directory\s+sub\s+default\s+1\s`,
	} {
		if !regexp.MustCompile(row).MatchString(table) {
			t.Errorf("journal list:\n%s\nwant a line matching %s", table, row)
		}
	}
	got := jsonOut[listed](t, w, "journal", "list", "--format", "json")
	if len(got.Batches) != 2 || got.Batches[1].Tool != "read_file" || !strings.HasSuffix(got.Batches[1].Path, "/sub/notes.md") ||
		got.Batches[0].Tool != "list_directory" || !strings.HasSuffix(got.Batches[0].Path, "/sub") {
		t.Errorf("journal list --format json: %+v, want each batch's tool and path", got)
	}
}

// TestAmbiguousIDRefused: an id two calls were given is refused by undo
// and journal show, listing both newest first with tool, path and time
// and saying to use the journal id; nothing is changed, and the journal
// id then does what was asked.
func TestAmbiguousIDRefused(t *testing.T) {
	w := newWorkspace(t)
	w.file(t, "old.txt", "old\n")
	w.file(t, "new.txt", "new\n")
	w.callIDs(t, "read_file", `{"path":"old.txt"}`)
	w.callIDs(t, "read_file", `{"path":"new.txt"}`)
	older := w.callIDs(t, "write_file", `{"path":"old.txt","content":"old changed\n"}`, "--id", "call_1", "--allow", "write_file")
	newer := w.callIDs(t, "write_file", `{"path":"new.txt","content":"new changed\n"}`, "--id", "call_1", "--allow", "write_file")

	for _, tc := range []struct {
		args []string
		code int
		cmd  string // what the message suggests
	}{
		{[]string{"undo", "call_1"}, 1, "toolhost undo "},
		{[]string{"undo", "call_1", "--format", "json"}, 1, "toolhost undo "},
		{[]string{"journal", "show", "call_1"}, 2, "toolhost journal show "},
		{[]string{"journal", "show", "call_1", "--format", "json"}, 2, "toolhost journal show "},
	} {
		out, stderr, code := w.run(t, tc.args...)
		if code != tc.code || out != "" {
			t.Errorf("toolhost %v: exit %d, stdout %q; want exit %d and nothing on stdout", tc.args, code, out, tc.code)
		}
		rows := regexp.MustCompile(`(?m)^\s+(\S+)\s+write_file\s+(\S+)\s+(\d{4}-\d\d-\d\dT\S+)$`).FindAllStringSubmatch(stderr, -1)
		if len(rows) != 2 || rows[0][1] != newer.JournalID || rows[0][2] != "new.txt" || rows[1][1] != older.JournalID || rows[1][2] != "old.txt" {
			t.Errorf("toolhost %v listed %q:\n%s\nwant %s new.txt then %s old.txt, each with its time", tc.args, rows, stderr, newer.JournalID, older.JournalID)
		}
		for _, want := range []string{"call_1", "2 calls have this id", "journal id", tc.cmd + newer.JournalID} {
			if !strings.Contains(stderr, want) {
				t.Errorf("toolhost %v: %q lacks %q", tc.args, stderr, want)
			}
		}
	}
	w.fileIs(t, "old.txt", "old changed\n", 0o644)
	w.fileIs(t, "new.txt", "new changed\n", 0o644)

	rep := w.undo(t, older.JournalID)
	if rep.BatchID != older.BatchID || rep.CallJournalID != older.JournalID || rep.CallID != "call_1" {
		t.Errorf("undo %s: %+v", older.JournalID, rep)
	}
	w.fileIs(t, "old.txt", "old\n", 0o644)
	w.fileIs(t, "new.txt", "new changed\n", 0o644)
	if show := w.runOK(t, "journal", "show", newer.JournalID); !strings.Contains(show, "call "+newer.JournalID+"  write_file") || strings.Contains(show, older.JournalID) {
		t.Errorf("journal show %s:\n%s", newer.JournalID, show)
	}
}

// TestCLIResultsNameTheirBatch: undo's text and JSON reports, and
// recover's, name the batch; --format json is undo's flag as every other
// command's, --json an alias that says so on stderr.
func TestCLIResultsNameTheirBatch(t *testing.T) {
	w := newWorkspace(t)
	w.file(t, "a.txt", "a\n")
	w.callIDs(t, "read_file", `{"path":"a.txt"}`)
	c := w.callIDs(t, "write_file", `{"path":"a.txt","content":"b\n"}`, "--allow", "write_file")

	text := w.runOK(t, "undo", c.JournalID, "--dry-run")
	if !strings.Contains(text, "call "+c.JournalID+" (batch "+c.BatchID+")") {
		t.Errorf("undo --dry-run:\n%s\nwant the call and its batch named", text)
	}
	for _, args := range [][]string{{"undo", c.JournalID, "--dry-run", "--format", "json"}, {"undo", c.JournalID, "--dry-run", "--json"}} {
		out, stderr, code := w.run(t, args...)
		var rep struct {
			BatchID       string `json:"batch_id"`
			CallJournalID string `json:"call_journal_id"`
			DryRun        bool   `json:"dry_run"`
			Files         []struct {
				Action string `json:"action"`
			} `json:"files"`
		}
		if err := json.Unmarshal([]byte(out), &rep); err != nil || code != 0 || rep.BatchID != c.BatchID || rep.CallJournalID != c.JournalID || !rep.DryRun || len(rep.Files) != 1 {
			t.Errorf("toolhost %v: exit %d, %+v (%v)\n%s\n%s", args, code, rep, err, out, stderr)
		}
		if deprecated := slices.Contains(args, "--json"); deprecated != strings.Contains(stderr, "use --format json") {
			t.Errorf("toolhost %v: stderr %q; want a notice to use --format json exactly for --json", args, stderr)
		}
	}
	if _, stderr, code := w.run(t, "undo", c.JournalID, "--json", "--format", "text"); code != 2 || !strings.Contains(stderr, "disagree") {
		t.Errorf("undo --json --format text: exit %d, %s; want a usage error", code, stderr)
	}
	if _, stderr, code := w.run(t, "undo", c.JournalID, "--format", "yaml"); code != 2 || !strings.Contains(stderr, "text or json") {
		t.Errorf("undo --format yaml: exit %d, %s; want a usage error", code, stderr)
	}
	text = w.runOK(t, "undo", c.JournalID)
	if !strings.Contains(text, "undid call "+c.JournalID+" (batch "+c.BatchID+")") || !strings.Contains(text, "journaled as call batch_") {
		t.Errorf("undo:\n%s\nwant the call, its batch and the undo's own ids", text)
	}
	w.fileIs(t, "a.txt", "a\n", 0o644)
}

// TestRecoverKeepPartialFlag: recover's choice to keep what a crash
// left is --keep-partial; --resume, which resumed nothing, is hidden and
// says so when used.
func TestRecoverKeepPartialFlag(t *testing.T) {
	w := newWorkspace(t)
	w.file(t, "a.txt", "a\n")
	c := w.callIDs(t, "read_file", `{"path":"a.txt"}`)
	help := w.runOK(t, "journal", "recover", "--help")
	if !strings.Contains(help, "--keep-partial") || strings.Contains(help, "--resume") {
		t.Errorf("journal recover --help:\n%s\nwant --keep-partial and no --resume", help)
	}
	_, stderr, code := w.run(t, "journal", "recover", c.BatchID, "--resume")
	if code != 2 || !strings.Contains(stderr, "use --keep-partial") || !strings.Contains(stderr, "is done, not interrupted") {
		t.Errorf("journal recover --resume: exit %d, %s; want the notice, then the refusal of a done batch", code, stderr)
	}
	_, stderr, code = w.run(t, "journal", "recover", c.JournalID, "--keep-partial")
	if code != 2 || !strings.Contains(stderr, "that is a call") || !strings.Contains(stderr, "toolhost journal recover "+c.BatchID+" --keep-partial") {
		t.Errorf("journal recover CALL: exit %d, %s; want the call's batch named", code, stderr)
	}
}

// TestJournalShowPlainJSON: <, > and & in arguments read as themselves
// in journal show, as text and as JSON, and in journal export.
func TestJournalShowPlainJSON(t *testing.T) {
	w := newWorkspace(t)
	content := "if a < b && b > c {}\n"
	c := w.callIDs(t, "write_file", jsonArgs(t, map[string]any{"path": "x.go", "content": content}), "--allow", "write_file")
	for _, args := range [][]string{{"journal", "show", c.BatchID}, {"journal", "show", c.JournalID, "--format", "json"}, {"journal", "export", "--since", "1h"}} {
		out := w.runOK(t, args...)
		if strings.Contains(out, `\u003c`) || strings.Contains(out, `\u003e`) || strings.Contains(out, `\u0026`) || !strings.Contains(out, "a < b && b > c") {
			t.Errorf("toolhost %v escapes <, > or &:\n%s", args, out)
		}
	}
}
