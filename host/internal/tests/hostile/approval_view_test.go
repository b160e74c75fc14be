package hostile_test

// Attack (prompt-injected model, against a person approving through
// /v1): a call's summary is a headline, cut in the middle and with
// secrets redacted. A command that hides its work in the cut
// ("… ; touch PWNED_mid ; …") or behind a redaction
// ("GITHUB_TOKEN=$(touch${IFS}PWNED_red)") shows as harmless, and a
// patch of many files names its last ones only past the cut. Whoever
// decides through the batch API (a batch it planned, or an MCP call held
// because its client cannot be asked) or reads a pending call in the
// journal API must see what the MCP prompt shows: every argument in
// full and unredacted, every file as the sandbox resolved it, the flags
// saying the summary is not all of it, why the call is asked, and for a
// write the diff.

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolhost/toolhost/internal/testplugin"
)

// approvalViewCommand is the red team's command: a cut in the middle of
// its summary hides the first touch, redaction the second.
var approvalViewCommand = "echo '" + strings.Repeat("a", 100) + "' ; touch PWNED_mid ; echo '" +
	strings.Repeat("b", 80) + "' ; GITHUB_TOKEN=$(touch${IFS}PWNED_red) true"

// approvalViewFiles are the 13 files the patch creates, .envrc (which
// direnv runs) last, where a cut summary drops it.
func approvalViewFiles() []string {
	var files []string
	for i := range 12 {
		files = append(files, fmt.Sprintf("src/module_%02d/generated_fixture.txt", i))
	}
	return append(files, ".envrc")
}

// approvalViewPatch creates each file with one line naming it.
func approvalViewPatch(files []string) string {
	var b strings.Builder
	b.WriteString("LP1\n")
	for _, f := range files {
		fmt.Fprintf(&b, "F %s\nT\nline of %s\n.\n", f, f)
	}
	b.WriteString("END\n")
	return b.String()
}

// approvalViewServer is `toolhost serve --http` started from the built
// binary, asking before every side effect.
type approvalViewServer struct {
	root, base, token string
	hc                *http.Client
}

var (
	approvalViewEndpoint = regexp.MustCompile(`MCP at (http://127\.0\.0\.1:\d+)/mcp`)
	approvalViewToken    = regexp.MustCompile(`bearer token: ([A-Za-z0-9]+) \(made at start`)
)

// approvalViewServe starts it with the operator configuration's [tools]
// table holding tools (TOML lines, "" for the defaults).
func approvalViewServe(t *testing.T, tools string) *approvalViewServer {
	t.Helper()
	bin := toolhostBinary(t)
	home, root := t.TempDir(), t.TempDir()
	cfg := filepath.Join(home, "operator.toml")
	os.WriteFile(cfg, []byte("[tools]\n"+tools+"\n[tools.approval]\nmode = \"prompt\"\ndenylist = []\nauto_approve_new_files = false\n"), 0o600)
	cmd := exec.Command(bin, "--state-dir", filepath.Join(home, "state"), "--config", cfg, "--plugins", realPlugins(t),
		"serve", "--http", "127.0.0.1:0", "--root", root)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "HOME="+home, "XDG_CONFIG_HOME="+filepath.Join(home, ".config"),
		"XDG_STATE_HOME="+filepath.Join(home, ".state"), "TOOLHOST_CACHE_DIR="+testplugin.CacheDir(t))
	stderr := &approvalViewText{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	var waitErr error
	go func() { waitErr = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(15 * time.Second):
			cmd.Process.Kill()
			<-exited
		}
		if t.Failed() {
			t.Logf("toolhost serve stderr:\n%s", stderr)
		}
	})
	deadline := time.Now().Add(time.Minute)
	for {
		out := stderr.String()
		m, tm := approvalViewEndpoint.FindStringSubmatch(out), approvalViewToken.FindStringSubmatch(out)
		if m != nil && tm != nil && strings.Contains(out, "connect Claude Code: ") {
			return &approvalViewServer{root: root, base: m[1], token: tm[1], hc: &http.Client{Timeout: time.Minute}}
		}
		select {
		case <-exited:
			t.Fatalf("toolhost serve exited (%v) before listening:\n%s", waitErr, out)
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("toolhost serve printed no endpoint within a minute:\n%s", out)
		}
	}
}

// do sends a request with the token and decodes the JSON answer into v.
func (s *approvalViewServer) do(t *testing.T, method, path, body string, v any) int {
	t.Helper()
	req, err := http.NewRequest(method, s.base+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+s.token)
	resp, err := s.hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Fatalf("%s %s: %d, the answer is not JSON: %v", method, path, resp.StatusCode, err)
	}
	return resp.StatusCode
}

// approvalViewOf is what a surface shows about a call awaiting a
// decision, as the API answers it.
type approvalViewOf struct {
	ID       string `json:"id"`
	Approval *struct {
		Summary          string            `json:"summary"`
		SummaryTruncated bool              `json:"summary_truncated"`
		SummaryRedacted  bool              `json:"summary_redacted"`
		SummaryNote      string            `json:"summary_note"`
		Reason           string            `json:"reason"`
		Arguments        map[string]string `json:"arguments"`
		Paths            []struct {
			Rel string `json:"rel"`
		} `json:"paths"`
		Diff *struct {
			Text        string `json:"text"`
			Unavailable string `json:"unavailable"`
		} `json:"diff"`
	} `json:"approval"`
}

// approvalViewCheckCommand holds the view of the red team's command to
// what the MCP prompt shows.
func approvalViewCheckCommand(t *testing.T, where string, v approvalViewOf) {
	t.Helper()
	a := v.Approval
	if a == nil {
		t.Errorf("%s: call %s shows no approval view (no full arguments, flags or reason), only its summary", where, v.ID)
		return
	}
	if got := a.Arguments["command"]; got != approvalViewCommand {
		t.Errorf("%s: the command shown is %q, want it in full and unredacted: %q", where, got, approvalViewCommand)
	}
	if !a.SummaryTruncated || !a.SummaryRedacted || a.SummaryNote == "" {
		t.Errorf("%s: summary %q with summary_truncated %v, summary_redacted %v, note %q: want both flags and a note saying the summary is not what runs",
			where, a.Summary, a.SummaryTruncated, a.SummaryRedacted, a.SummaryNote)
	}
	if a.Reason == "" {
		t.Errorf("%s: no reason says why the command is asked about", where)
	}
}

// TestApprovalViewShowsWhatRuns: a batch planned by POST /v1/batches,
// the same batch in the journal API, and an MCP call held for /v1 each
// show the red team's command in full and unredacted, with the flags and
// the reason, and the 13-file patch with every file resolved and its
// diff; the journal still stores the arguments redacted; denying runs
// nothing.
func TestApprovalViewShowsWhatRuns(t *testing.T) {
	s := approvalViewServe(t, "")
	files := approvalViewFiles()
	patch := approvalViewPatch(files)
	body, _ := json.Marshal(map[string]any{"conversation_id": "approval-view", "calls": []map[string]any{
		{"id": "cmd", "name": "run_command", "arguments": map[string]any{"command": approvalViewCommand}},
		{"id": "patch", "name": "apply_patch", "arguments": map[string]any{"patch": patch}},
	}})
	var planned struct {
		BatchID string           `json:"batch_id"`
		State   string           `json:"state"`
		Calls   []approvalViewOf `json:"calls"`
	}
	if status := s.do(t, "POST", "/v1/batches", string(body), &planned); status != http.StatusCreated || planned.State != "awaiting_approval" || len(planned.Calls) != 2 {
		t.Fatalf("POST /v1/batches: %d, state %q, %d calls; want 201, awaiting_approval, 2", status, planned.State, len(planned.Calls))
	}
	approvalViewCheckCommand(t, "POST /v1/batches", planned.Calls[0])
	if a := planned.Calls[1].Approval; a == nil {
		t.Error("POST /v1/batches: the patch shows no approval view")
	} else {
		if a.Arguments["patch"] != patch {
			t.Errorf("the patch shown is %q, want it whole", a.Arguments["patch"])
		}
		var rels []string
		for _, p := range a.Paths {
			rels = append(rels, p.Rel)
		}
		for _, f := range files {
			if !slices.Contains(rels, f) {
				t.Errorf("the patch's files shown are %q: %s is not among them", rels, f)
			}
		}
		switch {
		case a.Diff == nil:
			t.Error("the patch shows no diff")
		case a.Diff.Unavailable != "":
			t.Errorf("the patch's diff is unavailable: %s", a.Diff.Unavailable)
		default:
			for _, f := range files {
				if !strings.Contains(a.Diff.Text, f) || !strings.Contains(a.Diff.Text, "+line of "+f) {
					t.Errorf("the diff does not show %s created with its line:\n%s", f, a.Diff.Text)
				}
			}
		}
	}

	// The journal API shows the pending call as it will run, and the
	// journal keeps storing it redacted.
	var journaled struct {
		Calls []struct {
			approvalViewOf
			Arguments   map[string]string `json:"arguments"`
			Disposition string            `json:"disposition"`
		} `json:"calls"`
	}
	if status := s.do(t, "GET", "/v1/journal/batches/"+planned.BatchID, "", &journaled); status != http.StatusOK || len(journaled.Calls) != 2 {
		t.Fatalf("GET /v1/journal/batches/%s: %d, %d calls", planned.BatchID, status, len(journaled.Calls))
	}
	approvalViewCheckCommand(t, "GET /v1/journal/batches/ID", journaled.Calls[0].approvalViewOf)
	if got := journaled.Calls[0].Arguments["command"]; strings.Contains(got, "touch${IFS}PWNED_red") {
		t.Errorf("the journal stores the command unredacted: %q", got)
	}

	// An MCP client that cannot be asked: its call is held for /v1.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "approval-view", Version: "1"}, nil).Connect(ctx,
		&mcp.StreamableClientTransport{Endpoint: s.base + "/mcp", HTTPClient: &http.Client{Transport: approvalViewBearer(s.token)}, MaxRetries: -1, DisableStandaloneSSE: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	held := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "run_command", Arguments: map[string]any{"command": approvalViewCommand}})
		held <- err
	}()
	var heldID string
	for deadline := time.Now().Add(time.Minute); heldID == "" && time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		var list struct {
			Batches []struct {
				BatchID    string           `json:"batch_id"`
				HeldForMCP bool             `json:"held_for_mcp"`
				Calls      []approvalViewOf `json:"calls"`
			} `json:"batches"`
		}
		s.do(t, "GET", "/v1/batches?state=awaiting_approval", "", &list)
		for _, b := range list.Batches {
			if b.HeldForMCP && len(b.Calls) == 1 {
				heldID = b.BatchID
				approvalViewCheckCommand(t, "GET /v1/batches (a held MCP call)", b.Calls[0])
			}
		}
	}
	if heldID == "" {
		t.Fatal("the MCP call was not held for a decision through /v1 within a minute")
	}
	var one struct {
		Calls []approvalViewOf `json:"calls"`
	}
	s.do(t, "GET", "/v1/batches/"+heldID, "", &one)
	if len(one.Calls) == 1 {
		approvalViewCheckCommand(t, "GET /v1/batches/ID (a held MCP call)", one.Calls[0])
	}

	var decided map[string]any
	s.do(t, "POST", "/v1/batches/"+heldID+"/decision", `{"decision":"deny_all"}`, &decided)
	s.do(t, "POST", "/v1/batches/"+planned.BatchID+"/decision", `{"decision":"deny_all"}`, &decided)
	if err := <-held; err != nil {
		t.Errorf("the held MCP call: %v", err)
	}
	for _, f := range []string{"PWNED_mid", "PWNED_red", ".envrc"} {
		if _, err := os.Stat(filepath.Join(s.root, f)); err == nil {
			t.Errorf("%s exists: a denied call ran", f)
		}
	}
}

type approvalViewBearer string

func (b approvalViewBearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+string(b))
	return http.DefaultTransport.RoundTrip(r)
}

// approvalViewText is a process's stderr, read while it is written.
type approvalViewText struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *approvalViewText) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *approvalViewText) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestApprovalViewLargeArgumentsAreNotCut: arguments larger than an
// approval shows (1 MiB) are left out of the view whole, never cut: the
// view names each argument with its size and files, says where the
// arguments are served, and that address serves them exactly as they
// will run; the answer stays far smaller than the arguments.
func TestApprovalViewLargeArgumentsAreNotCut(t *testing.T) {
	// The operator lets a call's arguments be 8 MiB (256 KiB by default).
	s := approvalViewServe(t, "max_tool_args_bytes = 8388608")
	content := strings.Repeat("line of a large generated file\n", 2<<20/31)
	args, _ := json.Marshal(map[string]any{"path": "big.txt", "content": content})
	body := `{"conversation_id": "approval-view-large", "calls": [{"id": "big", "name": "write_file", "arguments": ` + string(args) + `}]}`
	req, _ := http.NewRequest("POST", s.base+"/v1/batches", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+s.token)
	start := time.Now()
	resp, err := s.hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	answer, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	t.Logf("POST of %d bytes of arguments: %d bytes answered in %v", len(args), len(answer), time.Since(start))
	var planned struct {
		BatchID string `json:"batch_id"`
		Calls   []struct {
			Approval *struct {
				Arguments       json.RawMessage `json:"arguments"`
				ArgumentBytes   int             `json:"argument_bytes"`
				Omitted         string          `json:"omitted"`
				ArgumentDetails []struct {
					Name    string   `json:"name"`
					Lines   []string `json:"lines"`
					Size    int      `json:"size"`
					Omitted bool     `json:"omitted"`
				} `json:"argument_details"`
				Paths []struct {
					Rel string `json:"rel"`
				} `json:"paths"`
			} `json:"approval"`
		} `json:"calls"`
	}
	if err := json.Unmarshal(answer, &planned); err != nil || len(planned.Calls) != 1 || planned.Calls[0].Approval == nil {
		t.Fatalf("POST /v1/batches: %d %v, want one call with its approval:\n%.2000s", resp.StatusCode, err, answer)
	}
	a := planned.Calls[0].Approval
	where := "/v1/batches/" + planned.BatchID + "/calls/1/arguments"
	if string(a.Arguments) != "null" || a.ArgumentBytes != len(args) || !strings.Contains(a.Omitted, where) {
		t.Errorf("arguments %.80s (%d bytes), omitted %q: want none shown, their size %d, and where they are (%s)", a.Arguments, a.ArgumentBytes, a.Omitted, len(args), where)
	}
	for _, d := range a.ArgumentDetails {
		if !d.Omitted || d.Lines != nil || d.Size == 0 {
			t.Errorf("argument %s: omitted %v, %d lines, size %d: want it named with its size, its text left out", d.Name, d.Omitted, len(d.Lines), d.Size)
		}
	}
	if len(a.Paths) != 1 || a.Paths[0].Rel != "big.txt" {
		t.Errorf("paths %+v, want big.txt", a.Paths)
	}
	if len(answer) > len(args)/4 {
		t.Errorf("the answer holds %d bytes for %d bytes of arguments: the view was not bounded", len(answer), len(args))
	}
	req, _ = http.NewRequest("GET", s.base+where, nil)
	req.Header.Set("Authorization", "Bearer "+s.token)
	resp, err = s.hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	served, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || string(served) != string(args) {
		t.Errorf("GET %s: %d, %d bytes; want 200 and the %d bytes of arguments as sent", where, resp.StatusCode, len(served), len(args))
	}
	var decided map[string]any
	s.do(t, "POST", "/v1/batches/"+planned.BatchID+"/decision", `{"decision":"deny_all"}`, &decided)
}
