package hostile_test

import (
	"testing"
)

// A new file is auto-approved (auto_approve_new_files) unless it makes
// another program run code: the default code patterns name git hook
// managers (.husky/, .pre-commit-config.yaml) and agents' and editors'
// project settings (.mcp.json, .claude/, .cursor/, .vscode/). These are
// the same kinds of file under other tools' names:
//   - lefthook's configuration, which the hook it installed in .git/hooks
//     reads at every commit: a "run:" in lefthook.yml, or in
//     lefthook-local.yml (merged in, usually not committed), runs on the
//     operator's next git commit;
//   - Gemini CLI's and opencode's project settings, whose MCP servers
//     are commands those agents start in the project;
//   - Zed's project settings, whose language servers and context
//     servers are commands the editor starts when the project opens.
//
// Each must be asked about, not written unasked as a new file.
func TestRedteamCodePatternsMissOtherToolsSettings(t *testing.T) {
	h, _ := openHost(t, nil)
	for _, p := range []string{
		"lefthook.yml", ".lefthook.yml", "lefthook-local.yml", "sub/lefthook.yaml",
		".gemini/settings.json", "opencode.json", ".opencode/opencode.json",
		".zed/settings.json", ".zed/tasks.json",
	} {
		rs := runBatch(t, h, nil, write(t, "w", p, "pre-commit:\n  commands:\n    x:\n      run: touch pwned\n"))
		if rs[0].OK {
			t.Errorf("write_file %s ran as a new file with nobody asked (it makes a hook manager, an agent or an editor run code)", p)
		}
	}
}
