package confine

import (
	"os"
	"path/filepath"
	"testing"
)

// TestBuildHidesOperatorFiles: the operator's files (Settings.Hidden)
// are hidden wherever a root shows them, in both modes, at the path their
// links lead to; a missing one adds nothing; nothing is mounted below a
// hidden directory, not even a repository inside it that an earlier
// search listed.
func TestBuildHidesOperatorFiles(t *testing.T) {
	home := fakeHome(t)
	for _, mode := range []Mode{ModeWorkspaceWrite, ModeReadOnly} {
		t.Run(string(mode), func(t *testing.T) {
			root := t.TempDir()
			conf := filepath.Join(root, "operator.toml")
			mustWrite(t, conf, "[server]\ntoken = \"x\"\n")
			userDir := filepath.Join(root, "cfg", "toolhost")
			mustWrite(t, filepath.Join(userDir, "toolhost.toml"), "")
			mustWrite(t, filepath.Join(userDir, ".git", "HEAD"), "ref: refs/heads/main\n")
			mustMkdir(t, filepath.Join(userDir, ".git", "hooks"))
			target := filepath.Join(root, "dotfiles", "journal.db")
			mustWrite(t, target, "journal")
			link := filepath.Join(root, "journal.db")
			if err := os.Symlink(target, link); err != nil {
				t.Fatal(err)
			}
			s := testSettings(t, home)
			s.Mode = mode
			s.Hidden = []string{conf, userDir, link, filepath.Join(root, "missing.db")}
			// What an earlier search found inside the hidden directory.
			writeKnown(s.StateDir, root, []string{filepath.Join(userDir, ".git")})
			p := mustBuild(t, s, Call{ID: "c1", Roots: []string{root}})
			for _, h := range []string{conf, userDir, target} {
				if m := effectiveMount(p, h); m == nil || m.Kind != MountHide || m.Target != h {
					t.Errorf("%s: %+v, want hidden", h, m)
				}
			}
			if m := findMount(p, MountHide, link); m != nil {
				t.Errorf("the link itself is hidden (%+v); the launcher cannot mount over a link", m)
			}
			if m := effectiveMount(p, filepath.Join(root, "missing.db")); m == nil || m.Kind == MountHide {
				t.Errorf("a missing hidden file: %+v, want the root's mount", m)
			}
			for _, m := range p.Mounts {
				if m.Target != userDir && within(m.Target, userDir) {
					t.Errorf("a mount below the hidden %s: %+v", userDir, m)
				}
			}
		})
	}
}
