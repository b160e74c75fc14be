package hostile_test

// Attack (prompt-injected model, against a person approving a write): a
// file's new content hides what it does in bytes a diff drops or a
// terminal acts on. "safe\rrm -rf ~ " followed by erase-line and
// cursor-up sequences reads as "safe" where a terminal draws it, and a
// right-to-left override with a zero-width space reorders or hides what
// follows. The diff a person approves on must show every byte that will
// be written, those characters written out as the argument details show
// them (␍, <U+001B>, <U+202E>, <U+200B>), on every surface: the /v1
// view's JSON, the MCP question and the terminal's prompt; never
// silently dropped, never raw.

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/creack/pty"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// avdContent is the red team's new content for v.txt.
const avdContent = "line1\nsafe\rrm -rf ~ \u001b[2K\u001b[1A\nline2\u202e\u200b\n"

// avdShown are the diff's rows as they must show: every byte written out.
var avdShown = []string{"+safe␍rm -rf ~ <U+001B>[2K<U+001B>[1A", "+line2<U+202E><U+200B>"}

// avdCheck holds the diff a surface shows to avdShown: each added line
// with every byte written out, and none of the characters raw.
func avdCheck(t *testing.T, surface, diff string) {
	t.Helper()
	for _, want := range avdShown {
		if !strings.Contains(diff, want) {
			t.Errorf("%s: the diff does not show %q, every byte that will be written:\n%s", surface, want, diff)
		}
	}
	for _, raw := range []string{"\r", "\u001b", "\u202e", "\u200b"} {
		if strings.Contains(diff, raw) {
			t.Errorf("%s: the diff holds %q raw, for the surface to act on:\n%q", surface, raw, diff)
		}
	}
}

// avdDiff is the diff text of a view, from the text a surface shows it in:
// what follows the line introducing it.
func avdDiff(text string) string {
	_, diff, ok := strings.Cut(text, "The change it would make")
	if !ok {
		return "(no diff shown) " + text
	}
	return diff
}

// The /v1 view's diff and the MCP question's show every byte of the
// content to be written, rendered visibly.
func TestApprovalDiffShowsEveryByteOverHTTP(t *testing.T) {
	s := approvalViewServe(t, "")
	if err := os.WriteFile(filepath.Join(s.root, "v.txt"), []byte("line1\nold\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	args, _ := json.Marshal(map[string]any{"path": "v.txt", "content": avdContent})

	// /v1: read first (replacing a file unread is refused), then write.
	var read struct {
		BatchID string `json:"batch_id"`
		State   string `json:"state"`
	}
	s.do(t, "POST", "/v1/batches", `{"conversation_id":"avd","calls":[{"id":"r","name":"read_file","arguments":{"path":"v.txt"}}]}`, &read)
	for end := time.Now().Add(time.Minute); read.State != "done" && time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		s.do(t, "GET", "/v1/batches/"+read.BatchID, "", &read)
	}
	if read.State != "done" {
		t.Fatalf("the read of v.txt is %q after a minute, want done", read.State)
	}
	var planned struct {
		BatchID string `json:"batch_id"`
		State   string `json:"state"`
		Calls   []struct {
			Approval *struct {
				Diff *struct {
					Text        string `json:"text"`
					Unavailable string `json:"unavailable"`
				} `json:"diff"`
				ArgumentDetails []struct {
					Name  string   `json:"name"`
					Lines []string `json:"lines"`
				} `json:"argument_details"`
			} `json:"approval"`
		} `json:"calls"`
	}
	body := `{"conversation_id":"avd","calls":[{"id":"w","name":"write_file","arguments":` + string(args) + `}]}`
	if status := s.do(t, "POST", "/v1/batches", body, &planned); status != http.StatusCreated || len(planned.Calls) != 1 || planned.Calls[0].Approval == nil {
		t.Fatalf("POST /v1/batches: %d, %+v; want the write awaiting approval with its view", status, planned)
	}
	a := planned.Calls[0].Approval
	switch {
	case a.Diff == nil:
		t.Error("/v1: the write shows no diff")
	case a.Diff.Unavailable != "":
		t.Errorf("/v1: the diff is unavailable: %s", a.Diff.Unavailable)
	default:
		avdCheck(t, "/v1 approval.diff.text", a.Diff.Text)
	}
	for _, d := range a.ArgumentDetails {
		if d.Name == "content" && !strings.Contains(strings.Join(d.Lines, "\n"), "safe␍rm -rf ~ <U+001B>[2K") {
			t.Errorf("/v1: argument_details shows the content as %q", d.Lines)
		}
	}
	var decided map[string]any
	s.do(t, "POST", "/v1/batches/"+planned.BatchID+"/decision", `{"decision":"deny_all"}`, &decided)

	// MCP: the question the client is asked.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	asked := make(chan string, 1)
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "avd", Version: "1"}, &mcp.ClientOptions{
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			select {
			case asked <- req.Params.Message:
			default:
			}
			return &mcp.ElicitResult{Action: "decline"}, nil
		}}).Connect(ctx, &mcp.StreamableClientTransport{Endpoint: s.base + "/mcp",
		HTTPClient: &http.Client{Transport: approvalViewBearer(s.token)}, MaxRetries: -1, DisableStandaloneSSE: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "read_file", Arguments: map[string]any{"path": "v.txt"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "write_file", Arguments: map[string]any{"path": "v.txt", "content": avdContent}}); err != nil {
		t.Fatal(err)
	}
	select {
	case q := <-asked:
		avdCheck(t, "the MCP question", avdDiff(q))
	default:
		t.Error("the MCP client was not asked about the write")
	}
	if got, _ := os.ReadFile(filepath.Join(s.root, "v.txt")); string(got) != "line1\nold\n" {
		t.Errorf("v.txt is %q after every surface denied the write", got)
	}
}

// The terminal's prompt (toolhost call) shows every byte of the content
// in the diff, rendered visibly.
func TestApprovalDiffShowsEveryByteInTheTerminal(t *testing.T) {
	dir := t.TempDir()
	args, _ := json.Marshal(map[string]any{"path": "v.txt", "content": avdContent})
	argsFile := filepath.Join(t.TempDir(), "args.json")
	os.WriteFile(argsFile, args, 0o644)
	cmd := cliCommand(t, dir, "write_file", "")
	cmd.Args = append(cmd.Args[:len(cmd.Args)-2], "--args-file", argsFile, "--id", "1")
	var stdout bytes.Buffer
	cmd.Stdout = &stdout
	tty, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 50, Cols: 120})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait(); tty.Close() }()
	var mu sync.Mutex
	var shown bytes.Buffer
	go func() {
		buf := make([]byte, 64<<10)
		for {
			n, err := tty.Read(buf)
			mu.Lock()
			shown.Write(buf[:n])
			mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	var out string
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		mu.Lock()
		out = shown.String()
		mu.Unlock()
		if strings.HasSuffix(out, "[y/N] ") {
			break
		}
	}
	if !strings.HasSuffix(out, "[y/N] ") {
		t.Fatalf("no question after 30 s; the terminal shows %q, stdout %s", out, stdout.String())
	}
	io.WriteString(tty, "n\r")
	diff := avdDiff(out)
	// The terminal's own line ends are CR LF; the diff's rows are checked
	// without them.
	avdCheck(t, "the terminal's prompt", strings.ReplaceAll(diff, "\r\n", "\n"))
	if _, err := os.Stat(filepath.Join(dir, "v.txt")); err == nil {
		t.Error("v.txt was written after the person answered n")
	}
}
