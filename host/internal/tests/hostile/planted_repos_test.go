package hostile_test

import (
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

// plantGitEnv is the environment of the git the tests run as the
// operator, outside the sandbox: a home of its own, no system
// configuration, an identity for commits.
func plantGitEnv(home string) []string {
	return append(os.Environ(), "HOME="+home, "XDG_CONFIG_HOME="+filepath.Join(home, ".config"), "GIT_CONFIG_NOSYSTEM=1",
		"GIT_AUTHOR_NAME=op", "GIT_AUTHOR_EMAIL=op@example.com", "GIT_COMMITTER_NAME=op", "GIT_COMMITTER_EMAIL=op@example.com")
}

// plantGit runs git with args in dir as the operator, and fails t when
// it fails.
func plantGit(t *testing.T, home, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = plantGitEnv(home)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s in %s: %v\n%s", strings.Join(args, " "), dir, err, out)
	}
	return string(out)
}

// plantCase is one way a command plants a repository whose config or
// hooks git outside the sandbox would run.
type plantCase struct {
	name string
	// setup prepares the root (a clone, a repository) as the operator.
	setup func(t *testing.T, home, upstream, root string)
	// command is what the model runs; MARK stands for the marker's path,
	// which the command cannot write.
	command string
	// operator is what the operator runs in the root afterwards, git's
	// arguments.
	operator []string
	// set is what the call's output and the quarantine must name.
	set []string
	// kept is a file of a quarantine (relative to the root) and a text it
	// must hold.
	kept, keptText string
}

// plantIdentity lets the command's git commit inside the sandbox, whose
// home is empty.
const plantIdentity = "export GIT_AUTHOR_NAME=m GIT_AUTHOR_EMAIL=m@example.com GIT_COMMITTER_NAME=m GIT_COMMITTER_EMAIL=m@example.com; "

// TestPlantedRepositoriesDoNotRunOutside: a command makes a repository in
// the root (git init and git add of it as a gitlink; a submodule of a
// clone it populates; a clone) and writes into its config or hooks a
// program. Afterwards the operator runs ordinary git in the root,
// outside the sandbox, with their own rights.
// Expected: git does not run what the command wrote; the call's output
// says what was set aside and where; the text is kept in the git
// directory's toolhost-quarantine.
func TestPlantedRepositoriesDoNotRunOutside(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("run_command's confinement is Linux only")
	}
	testenv.LookPath(t, "git", "apt-get install git (as root)")
	bin := toolhostBinary(t)
	cases := []plantCase{{
		name: "init and add a gitlink",
		setup: func(t *testing.T, home, _, root string) {
			plantGit(t, home, root, "init", "-q", ".")
			plantGit(t, home, root, "commit", "-q", "--allow-empty", "-m", "init")
		},
		command: plantIdentity + "git init -q sub && git -C sub config core.fsmonitor 'touch MARK; false' && " +
			"git -C sub commit -q --allow-empty -m x && git add sub 2>/dev/null && echo planted",
		operator: []string{"status"},
		set:      []string{"core.fsmonitor"},
		kept:     "sub/.git/toolhost-quarantine/config", keptText: "touch ",
	}, {
		name: "populate an uninitialized submodule",
		setup: func(t *testing.T, home, upstream, root string) {
			plantGit(t, home, root, "clone", "-q", filepath.Join(upstream, "top"), ".")
			if fi, err := os.Stat(filepath.Join(root, "lib")); err != nil || !fi.IsDir() || plantPresent(filepath.Join(root, "lib", ".git")) {
				t.Fatalf("the clone's submodule lib/ is not an empty, uninitialized directory: %v", err)
			}
		},
		command:  "cd lib && git init -q && git config core.fsmonitor 'touch MARK; false' && echo planted",
		operator: []string{"status"},
		set:      []string{"core.fsmonitor"},
		kept:     "lib/.git/toolhost-quarantine/config", keptText: "touch ",
	}, {
		name: "a new repository's hook and alias",
		setup: func(t *testing.T, home, _, root string) {
			plantGit(t, home, root, "init", "-q", ".")
		},
		command: "git init -q dep && " +
			"printf '#!/bin/sh\\ntouch MARK\\n' > dep/.git/hooks/pre-commit && chmod +x dep/.git/hooks/pre-commit && " +
			"git -C dep config alias.st '!touch MARK' && echo planted",
		operator: []string{"-C", "dep", "commit", "-q", "--allow-empty", "-m", "op"},
		set:      []string{"hooks/pre-commit", "alias.st"},
		kept:     "dep/.git/toolhost-quarantine/hooks-pre-commit", keptText: "touch ",
	}}
	upstream := plantUpstream(t)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			root := t.TempDir()
			home := t.TempDir()
			mark := filepath.Join(t.TempDir(), "ran-outside")
			c.setup(t, home, upstream, root)
			cfg := filepath.Join(home, "operator.toml")
			mustWrite(t, cfg, "[tools.approval]\nmode = \"auto\"\ndenylist = []\n")
			env := []string{"HOME=" + home, "XDG_CONFIG_HOME=" + filepath.Join(home, ".config"), "XDG_STATE_HOME=" + filepath.Join(home, ".state")}
			r := opfCall(t, bin, root, env, []string{"--state-dir", filepath.Join(home, "state"), "--config", cfg}, strings.ReplaceAll(c.command, "MARK", mark))
			if !strings.Contains(r.Content, "planted") {
				t.Fatalf("the command did not plant the repository:\n%s", r.Content)
			}
			if plantPresent(mark) {
				t.Fatalf("the marker %s exists before the operator ran git: the sandbox let the command write it", mark)
			}

			plantGit(t, home, root, c.operator...)
			plantGit(t, home, root, "status")
			if plantPresent(mark) {
				t.Errorf("the operator's git %s ran what the command wrote (%s exists)", strings.Join(c.operator, " "), mark)
			}
			for _, s := range c.set {
				if !strings.Contains(r.Content, s) || !strings.Contains(r.Content, "toolhost-quarantine") {
					t.Errorf("the call's output does not say that %s was set aside, and where:\n%s", s, r.Content)
				}
			}
			b, err := os.ReadFile(filepath.Join(root, c.kept))
			if err != nil || !strings.Contains(string(b), c.keptText) {
				t.Errorf("what was set aside is not kept in %s (%v):\n%s", c.kept, err, b)
			}
			readme, err := os.ReadFile(filepath.Join(root, filepath.Dir(c.kept), "README"))
			if err != nil || !strings.Contains(string(readme), "If you trust them") {
				t.Errorf("the quarantine has no README saying what to do: %v", err)
			}
		})
	}
}

// plantUpstream makes, outside any root, a repository top with a
// submodule lib (itself a repository there), to clone.
func plantUpstream(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	home := t.TempDir()
	lib := filepath.Join(dir, "lib")
	top := filepath.Join(dir, "top")
	for _, d := range []string{lib, top} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		plantGit(t, home, d, "init", "-q", ".")
	}
	mustWrite(t, filepath.Join(lib, "lib.txt"), "lib\n")
	plantGit(t, home, lib, "add", "lib.txt")
	plantGit(t, home, lib, "commit", "-q", "-m", "lib")
	plantGit(t, home, top, "-c", "protocol.file.allow=always", "submodule", "add", "-q", lib, "lib")
	plantGit(t, home, top, "commit", "-q", "-m", "top")
	return dir
}

func plantPresent(p string) bool {
	_, err := os.Lstat(p)
	return err == nil
}

// TestPlantedWhileCommandRuns: a command plants a repository git at the
// top recurses into, writes a core.fsmonitor into it, and keeps running;
// meanwhile the operator runs git status at the top. The repository is
// the checkout of a submodule the clone left empty, or one the command
// made and added to the index as a gitlink.
// Expected: by the time the operator's git runs (a fifth of a second
// after the write), the key is set aside already, not only when the
// command ends; the call's output says so.
func TestPlantedWhileCommandRuns(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("run_command's confinement is Linux only")
	}
	testenv.LookPath(t, "git", "apt-get install git (as root)")
	bin := toolhostBinary(t)
	upstream := plantUpstream(t)
	cases := []struct{ name, repo, command string }{
		{"populate an empty submodule", "lib", "cd lib && git init -q && git config core.fsmonitor 'touch MARK; false' && cd .."},
		{"add a gitlink", "sub", plantIdentity + "git init -q sub && git -C sub commit -q --allow-empty -m x && " +
			"git -C sub config core.fsmonitor 'touch MARK; false' && git add sub 2>/dev/null"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			root := t.TempDir()
			home := t.TempDir()
			mark := filepath.Join(t.TempDir(), "ran-outside")
			plantGit(t, home, root, "clone", "-q", filepath.Join(upstream, "top"), ".")
			cfg := filepath.Join(home, "operator.toml")
			mustWrite(t, cfg, "[tools.approval]\nmode = \"auto\"\ndenylist = []\n")
			command := strings.ReplaceAll(c.command, "MARK", mark) + " && touch configured && sleep 3 && echo planted"
			cmd := exec.Command(bin, "--state-dir", filepath.Join(home, "state"), "--config", cfg, "--plugins", realPlugins(t),
				"call", "run_command", "--allow", "run_command", "--args", jsonArgs(t, map[string]string{"command": command}))
			cmd.Dir = root
			cmd.Env = append(os.Environ(), "TOOLHOST_CACHE_DIR="+testplugin.CacheDir(t), "HOME="+home,
				"XDG_CONFIG_HOME="+filepath.Join(home, ".config"), "XDG_STATE_HOME="+filepath.Join(home, ".state"))
			var out strings.Builder
			cmd.Stdout = &out
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			deadline := time.Now().Add(30 * time.Second)
			for !plantPresent(filepath.Join(root, "configured")) {
				if time.Now().After(deadline) {
					cmd.Process.Kill()
					cmd.Wait()
					t.Fatalf("the command did not plant %s/ within 30 s:\n%s", c.repo, out.String())
				}
				time.Sleep(10 * time.Millisecond)
			}
			time.Sleep(200 * time.Millisecond)
			plantGit(t, home, root, "status")
			if plantPresent(mark) {
				t.Errorf("the operator's git status, run while the command ran, ran the core.fsmonitor it wrote into %s/ (%s exists)", c.repo, mark)
			}
			if err := cmd.Wait(); err != nil {
				t.Fatalf("toolhost call: %v\n%s", err, out.String())
			}
			if !strings.Contains(out.String(), "planted") || !strings.Contains(out.String(), "core.fsmonitor") || !strings.Contains(out.String(), c.repo+"/.git/toolhost-quarantine") {
				t.Errorf("the call's output does not say that %s/'s core.fsmonitor was set aside, and where:\n%s", c.repo, out.String())
			}
		})
	}
}
