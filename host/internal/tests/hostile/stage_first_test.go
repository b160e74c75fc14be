package hostile_test

import (
	"runtime"
	"strings"
	"testing"

	"github.com/toolhost/toolhost/internal/testenv"
)

// TestStageFirstSubmoduleAndWorktree: a repository's first git worktree
// add or git submodule add makes .git/worktrees or .git/modules, which
// did not exist when the call began and so were not bound through to
// disk; what the command did must not be lost when the stage is applied.
func TestStageFirstSubmoduleAndWorktree(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("run_command's confinement is Linux only")
	}
	testenv.LookPath(t, "git", "apt-get install git (as root)")
	bin := toolhostBinary(t)
	cases := []struct {
		name, command string
		check         [][]string // git commands outside, in the root, that must succeed after the call
		want          string     // in the output of the last check
	}{
		{
			name:    "worktree",
			command: gdlIdentity + "git worktree add -q -b side wt",
			check:   [][]string{{"worktree", "list"}, {"-C", "wt", "status", "--short"}, {"-C", "wt", "rev-parse", "--abbrev-ref", "HEAD"}},
			want:    "side",
		},
		{
			name: "submodule",
			command: gdlIdentity + "git init -q -b main other && git -C other commit -q --allow-empty -m o && " +
				"git -c protocol.file.allow=always submodule add -q \"$PWD/other\" lib && git commit -q -m sub",
			check: [][]string{{"submodule", "status"}, {"-C", "lib", "log", "--oneline"}, {"-C", "lib", "rev-parse", "--git-dir"}},
			want:  ".git/modules/lib",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			home, root := t.TempDir(), t.TempDir()
			gdlRepo(t, home, root)
			c := gdlStart(t, bin, home, root, tc.command)
			out := c.wait(t)
			var last string
			for _, args := range tc.check {
				got, err := gdlTry(home, root, args...)
				if err != nil {
					t.Fatalf("git %s after the call: %v\n%s\ncall output:\n%s", strings.Join(args, " "), err, got, out)
				}
				last = got
			}
			if !strings.Contains(last, tc.want) {
				t.Errorf("git %s: %q, want %q\ncall output:\n%s", strings.Join(tc.check[len(tc.check)-1], " "), last, tc.want, out)
			}
		})
	}
}
