package hostile_test

import (
	"strings"
	"testing"

	"github.com/toolhost/toolhost/host/internal/config"
)

// A new file is auto-approved (auto_approve_new_files) unless it makes
// another program run code. These make agents, editors and build tools
// launch programs the moment they start in the project, or at the next
// command the operator types there for another purpose:
//   - agents' project settings naming MCP servers or hooks (Codex,
//     Amazon Q, Kiro, Roo Code, Continue, Windsurf);
//   - cargo's configuration (a runner or rustc wrapper for every cargo
//     command, and rust-analyzer runs cargo when the editor opens);
//   - mise's configuration (hooks and env sourcing on entering the
//     directory);
//   - Neovim's and Vim's project files, run when the editor starts
//     there with 'exrc';
//   - lefthook's local configuration, run at the next commit.
//
// Each must be asked about, not written unasked as a new file.
func TestCodePathsAgentsEditorsBuildTools(t *testing.T) {
	h, _ := openHost(t, nil)
	for _, p := range []string{
		".gemini/settings.json", ".codex/config.toml", "opencode.json", ".zed/settings.json",
		".amazonq/mcp.json", ".kiro/settings/mcp.json", ".roo/mcp.json", ".continue/config.json",
		".windsurf/mcp.json", ".cargo/config.toml", "mise.toml", ".nvim.lua", ".exrc", "lefthook-local.yml",
	} {
		rs := runBatch(t, h, nil, write(t, "w", p, "x = 1\n"))
		if rs[0].OK {
			t.Errorf("write_file %s ran as a new file with nobody asked (an agent, editor or build tool runs code from it)", p)
		} else if !strings.Contains(rs[0].Error.Message, cpNotApproved) {
			t.Errorf("write_file %s was refused (%s), not for want of approval", p, rs[0].Error.Message)
		}
	}
}

// Every entry of the one maintained list is asked about when written as
// a new file through the real host: its example path, in the root and
// in a subdirectory. A file beside them that runs nothing is still
// written unasked, so the list does not ask about everything.
func TestCodePathsEveryEntryAsks(t *testing.T) {
	h, _ := openHost(t, nil)
	for i, e := range config.CodePathEntries() {
		for _, p := range []string{e.Example, "sub/dir/" + e.Example} {
			rs := runBatch(t, h, nil, write(t, "w", p, "x\n"))
			if rs[0].OK {
				t.Errorf("entry %d %s (%s): write_file %s ran as a new file with nobody asked", i, e.Pattern, e.Loader, p)
			} else if !strings.Contains(rs[0].Error.Message, cpNotApproved) {
				t.Errorf("entry %d %s: write_file %s was refused (%s), not for want of approval", i, e.Pattern, p, rs[0].Error.Message)
			}
		}
	}
	rs := runBatch(t, h, nil, write(t, "w", "docs/notes.txt", "x\n"))
	if !rs[0].OK {
		t.Fatalf("write_file docs/notes.txt (runs nothing) was not auto-approved: %+v", rs[0].Error)
	}
}

// cpNotApproved is what the refusal of a call that needed a person's
// approval says when nobody was there to give it.
const cpNotApproved = "was not approved and did not run"
