package hostile_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/toolhost/toolhost/internal/testenv"
	"github.com/toolhost/toolhost/internal/testplugin"
)

// gdlEnv is the environment of the git the tests run as the operator,
// outside the sandbox: a home of its own, no system configuration, an
// identity for commits.
func gdlEnv(home string) []string {
	return append(os.Environ(), "HOME="+home, "XDG_CONFIG_HOME="+filepath.Join(home, ".config"), "GIT_CONFIG_NOSYSTEM=1",
		"GIT_AUTHOR_NAME=op", "GIT_AUTHOR_EMAIL=op@example.com", "GIT_COMMITTER_NAME=op", "GIT_COMMITTER_EMAIL=op@example.com")
}

// gdlGit runs git with args in dir as the operator and returns its
// output; a failure fails t.
func gdlGit(t *testing.T, home, dir string, args ...string) string {
	t.Helper()
	out, err := gdlTry(home, dir, args...)
	if err != nil {
		t.Fatalf("git %s in %s: %v\n%s", strings.Join(args, " "), dir, err, out)
	}
	return out
}

// gdlTry runs git as gdlGit does, and returns its error.
func gdlTry(home, dir string, args ...string) (string, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = gdlEnv(home)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// gdlRepo makes root a repository with one commit, as the operator.
func gdlRepo(t *testing.T, home, root string) {
	t.Helper()
	gdlGit(t, home, root, "init", "-q", "-b", "main", ".")
	mustWrite(t, filepath.Join(root, "a.txt"), "a\n")
	gdlGit(t, home, root, "add", "a.txt")
	gdlGit(t, home, root, "commit", "-q", "-m", "init")
}

// gdlCall is `toolhost call run_command` of command in root, started and
// not waited for.
type gdlCall struct {
	cmd *exec.Cmd
	out strings.Builder
}

// gdlStart starts command in root through the binary, in a home and
// state directory of the test's.
func gdlStart(t *testing.T, bin, home, root, command string) *gdlCall {
	t.Helper()
	cfg := filepath.Join(home, "operator.toml")
	mustWrite(t, cfg, "[tools.approval]\nmode = \"auto\"\ndenylist = []\n")
	c := &gdlCall{}
	c.cmd = exec.Command(bin, "--state-dir", filepath.Join(home, "state"), "--config", cfg, "--plugins", realPlugins(t),
		"call", "run_command", "--allow", "run_command", "--args", jsonArgs(t, map[string]any{"command": command}))
	c.cmd.Dir = root
	c.cmd.Env = append(gdlEnv(home), "TOOLHOST_CACHE_DIR="+testplugin.CacheDir(t))
	c.cmd.Stdout = &c.out
	c.cmd.Stderr = os.Stderr
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if c.cmd.ProcessState == nil {
			c.cmd.Process.Kill()
			c.cmd.Wait()
		}
	})
	return c
}

// wait waits for the call and returns its result's content; a call that
// failed fails t.
func (c *gdlCall) wait(t *testing.T) string {
	t.Helper()
	c.cmd.Wait()
	var r opfResult
	if err := json.Unmarshal([]byte(c.out.String()), &r); err != nil {
		t.Fatalf("toolhost call: %v\n%s", err, c.out.String())
	}
	if !r.OK {
		t.Fatalf("run_command failed: %+v\n%s", r.Error, r.Content)
	}
	return r.Content
}

// gdlHold is the end of a command that waits, after it wrote READY in
// the root, until the test writes RELEASE there (30 s at most).
const gdlHold = ` && touch .gdl-ready && i=0; while [ ! -e .gdl-release ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i+1)); done; echo held`

// gdlAwait waits until the command wrote the ready file, or its call
// ended.
func gdlAwait(t *testing.T, c *gdlCall, root string) {
	t.Helper()
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if pathExists(filepath.Join(root, ".gdl-ready")) {
			return
		}
	}
	t.Fatalf("the command never got ready: %s", c.out.String())
}

func pathExists(p string) bool {
	_, err := os.Lstat(p)
	return err == nil
}

// gdlIdentity lets the command's git commit inside the sandbox.
const gdlIdentity = "export GIT_AUTHOR_NAME=m GIT_AUTHOR_EMAIL=m@example.com GIT_COMMITTER_NAME=m GIT_COMMITTER_EMAIL=m@example.com; "

// TestGitDirLiveChangesDoNotRunOutside: a command plants, in the git
// directory of the root's repository (or its core.hooksPath), what makes
// git run a program or read another repository's objects, and then
// waits. While it waits, the operator (an editor, a shell prompt) runs
// git status in the root, outside the sandbox, with their own rights;
// after the call, git status and git commit.
// Expected: git outside never runs the planted program and the planted
// file never appears in the real git directory, neither during the call
// nor after it.
func TestGitDirLiveChangesDoNotRunOutside(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("run_command's confinement is Linux only")
	}
	testenv.LookPath(t, "git", "apt-get install git (as root)")
	bin := toolhostBinary(t)
	cases := []struct {
		name string
		// setup prepares the repository, as the operator.
		setup func(t *testing.T, home, root string)
		// command plants; MARK stands for the marker's path.
		command string
		// planted is the file (relative to the root) that must never
		// appear, "" when the marker says enough.
		planted string
	}{{
		name: "commondir",
		// The command makes a copy of the repository whose config runs
		// a program, and points the real git directory at it.
		command: "cp -r .git evil && printf '[core]\\n\\tfsmonitor = \"touch MARK; false\"\\n' >> evil/config && echo ../evil > .git/commondir",
		planted: ".git/commondir",
	}, {
		name: "config.worktree",
		setup: func(t *testing.T, home, root string) {
			gdlGit(t, home, root, "config", "core.repositoryformatversion", "1")
			gdlGit(t, home, root, "config", "extensions.worktreeConfig", "true")
		},
		command: "printf '[core]\\n\\tfsmonitor = \"touch MARK; false\"\\n' > .git/config.worktree",
		planted: ".git/config.worktree",
	}, {
		name: "alternates",
		// Another object store: git outside would read objects the
		// command chose.
		command: "mkdir -p /tmp/o && echo /tmp/o > .git/objects/info/alternates",
		planted: ".git/objects/info/alternates",
	}, {
		name: "hooksPath not yet made",
		setup: func(t *testing.T, home, root string) {
			gdlGit(t, home, root, "config", "core.hooksPath", ".githooks")
		},
		command: "mkdir -p .githooks && printf '#!/bin/sh\\ntouch MARK\\n' > .githooks/pre-commit && chmod +x .githooks/pre-commit",
		planted: ".githooks/pre-commit",
	}, {
		name: "hooksPath under home",
		setup: func(t *testing.T, home, root string) {
			gdlGit(t, home, root, "config", "core.hooksPath", "~/hk")
		},
		command: "mkdir -p hk && printf '#!/bin/sh\\ntouch MARK\\n' > hk/pre-commit && chmod +x hk/pre-commit",
		planted: "hk/pre-commit",
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			home := t.TempDir()
			root := home
			if tc.name != "hooksPath under home" {
				root = filepath.Join(home, "repo")
				os.Mkdir(root, 0o755)
			}
			mark := filepath.Join(t.TempDir(), "ran")
			gdlRepo(t, home, root)
			if tc.setup != nil {
				tc.setup(t, home, root)
			}
			command := strings.ReplaceAll(tc.command, "MARK", mark)
			c := gdlStart(t, bin, home, root, "("+command+"; echo planted=$?)"+gdlHold)
			gdlAwait(t, c, root)
			check := func(when string) {
				t.Helper()
				if pathExists(mark) {
					t.Fatalf("%s the call, git outside the sandbox ran what the command planted", when)
				}
				if tc.planted != "" && pathExists(filepath.Join(root, tc.planted)) {
					t.Errorf("%s the call, the command's %s is in the real repository", when, tc.planted)
				}
			}
			gdlTry(home, root, "status")
			check("during")
			mustWrite(t, filepath.Join(root, "b.txt"), "b\n")
			gdlTry(home, root, "add", "b.txt")
			gdlTry(home, root, "commit", "-q", "-m", "during")
			check("during")
			mustWrite(t, filepath.Join(root, ".gdl-release"), "")
			out := c.wait(t)
			t.Logf("command output:\n%s", out)
			gdlTry(home, root, "status")
			mustWrite(t, filepath.Join(root, "c.txt"), "c\n")
			gdlTry(home, root, "add", "c.txt")
			gdlTry(home, root, "commit", "-q", "-m", "after")
			check("after")
			if got := gdlGit(t, home, root, "log", "--format=%s"); !strings.Contains(got, "after") {
				t.Errorf("the operator's commit after the call is not in the log:\n%s", got)
			}
		})
	}
}

// TestGitDirLiveGitWorksInside: an agent's ordinary git work inside the
// sandbox: commit, branch, checkout, stash, rebase, gc, tag.
// Expected: each works, and the operator sees the result after the call:
// the commits, branches, the stash, the checked-out branch, a clean
// status and a sound repository.
func TestGitDirLiveGitWorksInside(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("run_command's confinement is Linux only")
	}
	testenv.LookPath(t, "git", "apt-get install git (as root)")
	bin := toolhostBinary(t)
	home := t.TempDir()
	root := filepath.Join(home, "repo")
	os.Mkdir(root, 0o755)
	gdlRepo(t, home, root)
	script := gdlIdentity + `set -e
echo one > one.txt && git add one.txt && git commit -q -m one
git checkout -q -b feature
echo two > two.txt && git add two.txt && git commit -q -m two
git checkout -q main
echo three > three.txt && git add three.txt && git commit -q -m three
git checkout -q feature
git rebase -q main
echo wip > wip.txt && git add wip.txt && git stash -q
git tag v1
git gc -q
git pack-refs --all
git status --porcelain
echo done`
	c := gdlStart(t, bin, home, root, script)
	mustWrite(t, filepath.Join(root, ".gdl-release"), "")
	out := c.wait(t)
	if !strings.Contains(out, "done") {
		t.Fatalf("git inside the sandbox failed:\n%s", out)
	}
	if strings.Contains(out, "not kept") || strings.Contains(out, "could not be") {
		t.Errorf("something git wrote in ordinary work was not kept:\n%s", out)
	}
	if got := strings.TrimSpace(gdlGit(t, home, root, "rev-parse", "--abbrev-ref", "HEAD")); got != "feature" {
		t.Errorf("after the call HEAD is %q, want feature (the command checked it out)", got)
	}
	if got := gdlGit(t, home, root, "log", "--format=%s", "feature"); got != "two\nthree\none\ninit\n" {
		t.Errorf("feature after the rebase inside:\n%s", got)
	}
	if got := gdlGit(t, home, root, "stash", "list"); !strings.Contains(got, "stash@{0}") {
		t.Errorf("the stash made inside is not seen outside: %q", got)
	}
	if got := gdlGit(t, home, root, "tag"); got != "v1\n" {
		t.Errorf("tags after the call: %q", got)
	}
	if got := gdlGit(t, home, root, "status", "--porcelain", "--untracked-files=no"); got != "" {
		t.Errorf("status after the call is not clean (the index was not kept):\n%s", got)
	}
	gdlGit(t, home, root, "fsck", "--no-progress")
	mustWrite(t, filepath.Join(root, "d.txt"), "d\n")
	gdlGit(t, home, root, "add", "d.txt")
	gdlGit(t, home, root, "commit", "-q", "-m", "operator")
}
