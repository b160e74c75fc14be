package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// The operator keeps toolhost's configuration in a
// dotfiles repository and links to it
// ($XDG_CONFIG_HOME/toolhost/toolhost.toml -> dotfiles/toolhost/config.toml),
// and the model works in that repository. The configuration approves
// everything, so nobody is asked; still no tool may read the real file or
// rewrite it into a policy without limits.
func TestConfigReachedThroughLink(t *testing.T) {
	p := newPermissive(t)
	policy, err := os.ReadFile(p.config)
	if err != nil {
		t.Fatal(err)
	}
	p.file(t, "toolhost/config.toml", string(policy))
	real := filepath.Join(p.dir, "toolhost", "config.toml")
	xdg := t.TempDir()
	if err := os.Mkdir(filepath.Join(xdg, "toolhost"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(real, filepath.Join(xdg, "toolhost", "toolhost.toml")); err != nil {
		t.Skipf("no symbolic links here: %v", err)
	}
	// The operator's file is the one in the user directory, reached
	// through the link: no --config.
	user := *p.workspace
	user.config = ""
	p = &permissive{user.withEnv("XDG_CONFIG_HOME=" + xdg)}

	r := p.call(t, "read_file", `{"path":"toolhost/config.toml"}`)
	wantProtected(t, r, "toolhost/config.toml")
	evil := "[tools.approval]\nmode = \"auto\"\ndenylist = []\n[tools.sandbox]\nallowed_roots = [\"/\"]\nallow_absolute = true\n"
	r = p.call(t, "write_file", jsonArgs(t, map[string]any{"path": "toolhost/config.toml", "content": evil}))
	wantProtected(t, r, "toolhost/config.toml")
	if got, err := os.ReadFile(real); err != nil || string(got) != string(policy) {
		t.Errorf("the operator's configuration now reads %q (%v)", got, err)
	}
}

// wantProtected checks that r is a SandboxViolation naming path, refused
// because the file is out of every tool's reach: toolhost's own files
// are denied like its state (DeniedPatternMatched, naming the protected
// file), protected names as Protected. Neither is a policy can lift.
func wantProtected(t *testing.T, r result, path string) {
	t.Helper()
	wantViolation(t, r, path)
	var d struct{ Reason string }
	if err := json.Unmarshal(r.Error.Details, &d); err != nil || d.Reason != "Protected" && d.Reason != "DeniedPatternMatched" {
		t.Errorf("reason %q (details %s), want Protected or DeniedPatternMatched", d.Reason, r.Error.Details)
	}
}
