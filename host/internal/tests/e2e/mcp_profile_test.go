package e2e

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// profilesConfig defines roles like those config init shows: a reviewer
// that only reads (run_command is listed, but the policy denies it), and
// a coder whose every call is asked about.
const profilesConfig = `[profiles.reviewer]
description = "read-only review"
tools = ["read_file", "list_directory", "run_command"]

[profiles.coder]
tools = ["read_file", "write_file"]
confirm_all = true
`

// Each profile is an MCP endpoint offering only its
// tools (/mcp/NAME over HTTP, --profile NAME on stdio); a tool outside
// it is neither listed nor callable, a tool the policy denies stays
// denied, a profile's stricter approval holds, and /mcp keeps the whole
// policy.
func TestMCPProfiles(t *testing.T) {
	w := newWorkspace(t).withConfig(t, profilesConfig)
	w.file(t, "notes.txt", "one\ntwo\n")
	ctx := testContext(t)
	hs := serveHTTP(t, w)
	if !strings.Contains(hs.stderr.String(), "profile reviewer at "+hs.base+"/mcp/reviewer") {
		t.Errorf("the start-up lines do not name the reviewer's endpoint:\n%s", hs.stderr)
	}
	// The coder's client declines every question.
	declines := &mcp.ClientOptions{ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		return &mcp.ElicitResult{Action: "decline"}, nil
	}}
	connect := func(path string, opts *mcp.ClientOptions) *mcp.ClientSession {
		t.Helper()
		at := *hs
		at.url = hs.base + path
		return at.connect(t, ctx, opts, nil)
	}
	stdio := serveMCP(t, w, nil, "--profile", "reviewer")
	tests := []struct {
		name    string
		session *mcp.ClientSession
		tools   []string
		reads   bool // read_file runs without asking
	}{
		{"HTTP /mcp/reviewer", connect("/mcp/reviewer", nil), []string{"list_directory", "read_file"}, true},
		{"stdio --profile reviewer", stdio.session, []string{"list_directory", "read_file"}, true},
		{"HTTP /mcp/coder asks even before a read", connect("/mcp/coder", declines), []string{"read_file", "write_file"}, false},
		{"HTTP /mcp, the whole policy", connect("/mcp", nil), profileAllButCommands(t), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			list, err := tt.session.ListTools(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			if got := toolNames(list.Tools); !slices.Equal(got, tt.tools) {
				t.Errorf("tools/list %v, want %v", got, tt.tools)
			}
			res, text, err := callText(ctx, tt.session, "read_file", map[string]any{"path": "notes.txt"})
			if read := err == nil && !res.IsError && strings.Contains(text, "two"); read != tt.reads {
				t.Errorf("read_file read the file: %v, want %v (%v %q)", read, tt.reads, err, text)
			}
			if slices.Contains(tt.tools, "write_file") {
				return
			}
			res, text, err = callText(ctx, tt.session, "write_file", map[string]any{"path": "new.txt", "content": "x"})
			if err == nil && !res.IsError {
				t.Errorf("write_file outside the profile ran: %q", text)
			}
			if fileExists(filepath.Join(w.dir, "new.txt")) {
				t.Errorf("write_file outside the profile wrote new.txt")
			}
		})
	}
}

// An unknown profile stops serve with the profiles there are.
func TestMCPProfileUnknown(t *testing.T) {
	w := newWorkspace(t).withConfig(t, profilesConfig)
	out, stderr, code := w.run(t, "serve", "--stdio", "--profile", "admin")
	if code != 2 || out != "" || !strings.Contains(stderr, `no profile "admin"`) || !strings.Contains(stderr, "coder, reviewer") {
		t.Errorf("exit %d, stdout %q, stderr %q; want exit 2 naming the profiles", code, out, stderr)
	}
}

// profileAllButCommands is every built-in tool beside the binary but
// run_command, which the default policy denies: what the whole policy
// offers.
func profileAllButCommands(t *testing.T) []string {
	t.Helper()
	mods, err := filepath.Glob(filepath.Join(filepath.Dir(toolhost), "plugins", "*.wasm"))
	if err != nil || len(mods) == 0 {
		t.Fatalf("no plugins beside %s: %v", toolhost, err)
	}
	var names []string
	for _, m := range mods {
		if name := strings.TrimSuffix(filepath.Base(m), ".wasm"); name != "run_command" {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return names
}
