package hostile_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/toolhost/toolhost/internal/testenv"
)

// slGit runs git as the operator (gdlEnv) with the root's bin directory
// first on PATH, as a project's tool directory often is (direnv,
// node_modules/.bin), and returns its output and error.
func slGit(home, root string, args ...string) (string, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = root
	cmd.Env = append(gdlEnv(home), "PATH="+filepath.Join(root, "bin")+string(os.PathListSeparator)+os.Getenv("PATH"))
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// TestStageLinksGitOutsideStaysInRoots: a command writes, in the git
// directory of the root's repository, what makes the operator's git
// write outside the roots or run a program when the operator next runs
// git there: a symbolic link in logs/ (git appends a reflog line, one
// the command chose through a branch name, to the file it names, such as
// ~/.bashrc), in objects/ or refs/ (git writes objects or refs into the
// directory it names), a rebase's to-do list with an exec line, or a
// rebase's merge strategy that names a program.
// Expected: git outside never writes to the link's target or into the
// directory it names, never runs the program, neither while the command
// runs (for logs/) nor after the call; the output says what was
// removed or disabled.
func TestStageLinksGitOutsideStaysInRoots(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("run_command's confinement is Linux only")
	}
	testenv.LookPath(t, "git", "apt-get install git (as root)")
	bin := toolhostBinary(t)
	cases := []struct {
		name string
		// setup prepares the repository, as the operator.
		setup func(t *testing.T, home, root string)
		// command plants; TARGET is a file outside the roots, OUTDIR an
		// empty directory outside them, MARK a file that must never
		// appear.
		command string
		// during: git outside is run while the command waits too.
		during bool
		// outside are the operator's git commands after the plant.
		outside [][]string
		// said is what the call's output must say.
		said string
	}{{
		name:    "reflog file link",
		command: `git checkout -qb "feat;touch\${IFS}MARK;#" && ln -sf TARGET .git/logs/HEAD`,
		during:  true,
		outside: [][]string{{"checkout", "-q", "main"}, {"checkout", "-q", "-b", "op-branch"}, {"checkout", "-q", "main"}},
		said:    "logs/HEAD",
	}, {
		name:    "reflog directory link",
		command: `rm -rf .git/logs/refs/heads && ln -s OUTDIR .git/logs/refs/heads`,
		during:  true,
		outside: [][]string{{"branch", "op-branch"}, {"branch", "-f", "op-branch", "HEAD"}},
		said:    "logs/refs/heads",
	}, {
		name: "object fan-out link",
		// The fan-out directory of the object the operator's next
		// git add writes.
		command: `h=$(printf 'sl-blob\n' | git hash-object --stdin) && d=.git/objects/$(echo $h | cut -c1-2) && rm -rf $d && ln -s OUTDIR $d`,
		outside: [][]string{{"add", "blob.txt"}, {"commit", "-q", "-m", "blob"}},
		said:    "objects/",
	}, {
		name:    "ref directory link",
		command: `ln -s OUTDIR .git/refs/heads/sldir`,
		outside: [][]string{{"branch", "sldir/x"}, {"update-ref", "refs/heads/sldir/y", "HEAD"}},
		said:    "refs/heads/sldir",
	}, {
		// A ref is written through a lock file renamed onto it: a link
		// there is replaced, never followed. Checked, not fixed.
		name:    "ref file link",
		command: `ln -s TARGET .git/refs/heads/slfile`,
		during:  true,
		outside: [][]string{{"update-ref", "--no-deref", "refs/heads/slfile", "HEAD"}, {"branch", "-f", "slfile", "HEAD"}},
	}, {
		name: "rebase exec line",
		command: gdlIdentity + `echo 2 > two.txt && git add two.txt && git commit -q -m two && ` +
			`GIT_SEQUENCE_EDITOR="printf 'break\nexec touch MARK\n' >" git rebase -i HEAD~1; git status --short`,
		outside: [][]string{{"status"}, {"rebase", "--continue"}},
		said:    "exec touch",
	}, {
		name: "rebase merge strategy",
		command: gdlIdentity + `mkdir -p bin && printf '#!/bin/sh\ntouch MARK\nexit 1\n' > bin/git-merge-slevil && chmod +x bin/git-merge-slevil && ` +
			`echo 2 > two.txt && git add two.txt && git commit -q -m two && echo 3 > three.txt && git add three.txt && git commit -q -m three && ` +
			`c=$(git rev-parse HEAD) && GIT_SEQUENCE_EDITOR="printf 'break\npick $c\n' >" git rebase -i HEAD~2; echo slevil > .git/rebase-merge/strategy`,
		outside: [][]string{{"rebase", "--continue"}},
		said:    "slevil",
	}, {
		// The repository has a linked worktree, so .git/worktrees is
		// bound through, and a worktree the command adds is written
		// there directly, not staged.
		name: "rebase exec line in a new worktree",
		setup: func(t *testing.T, home, root string) {
			gdlGit(t, home, root, "worktree", "add", "-q", "-b", "op", filepath.Join(home, "op-wt"))
		},
		command: gdlIdentity + `git worktree add -q -b side wt2 && cd wt2 && echo 2 > two.txt && git add two.txt && git commit -q -m two && ` +
			`GIT_SEQUENCE_EDITOR="printf 'break\nexec touch MARK\n' >" git rebase -i HEAD~1`,
		outside: [][]string{{"-C", "wt2", "status"}, {"-C", "wt2", "rebase", "--continue"}},
		said:    "exec touch",
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			home := t.TempDir()
			root := filepath.Join(home, "repo")
			os.Mkdir(root, 0o755)
			target := filepath.Join(home, ".bashrc")
			mustWrite(t, target, "# the operator's\n")
			outdir := filepath.Join(home, "out")
			os.Mkdir(outdir, 0o755)
			mark := filepath.Join(home, "PWNED")
			gdlRepo(t, home, root)
			if tc.setup != nil {
				tc.setup(t, home, root)
			}
			command := strings.NewReplacer("TARGET", target, "OUTDIR", outdir, "MARK", mark).Replace(tc.command)
			c := gdlStart(t, bin, home, root, "("+command+"; echo planted=$?)"+gdlHold)
			gdlAwait(t, c, root)
			check := func(when string) {
				t.Helper()
				if pathExists(mark) {
					t.Errorf("%s the call, git outside the sandbox ran what the command planted", when)
				}
				if b, _ := os.ReadFile(target); string(b) != "# the operator's\n" {
					t.Errorf("%s the call, git outside wrote to %s, outside the roots:\n%s", when, target, b)
				}
				if entries, _ := os.ReadDir(outdir); len(entries) > 0 {
					t.Errorf("%s the call, git outside wrote into %s, outside the roots: %s", when, outdir, entries[0].Name())
				}
			}
			mustWrite(t, filepath.Join(root, "blob.txt"), "sl-blob\n")
			if tc.during {
				for _, args := range tc.outside {
					slGit(home, root, args...)
				}
				check("during")
			}
			mustWrite(t, filepath.Join(root, ".gdl-release"), "")
			out := c.wait(t)
			t.Logf("command output:\n%s", out)
			if !strings.Contains(out, "planted=0") {
				t.Fatalf("the command could not plant:\n%s", out)
			}
			for _, args := range tc.outside {
				got, err := slGit(home, root, args...)
				t.Logf("git %s after the call: %v\n%s", strings.Join(args, " "), err, got)
			}
			check("after")
			if tc.said != "" && !strings.Contains(out, tc.said) {
				t.Errorf("the output does not name %q:\n%s", tc.said, out)
			}
		})
	}
}
