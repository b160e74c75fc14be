package hostile_test

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/toolhost/toolhost/internal/testenv"
)

// pmSetup skips where commands are not confined or git is missing, and
// returns the binary, a home and a root that is a repository with one
// commit, made by the operator.
func pmSetup(t *testing.T) (bin, home, root string) {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Skip("run_command's confinement is Linux only")
	}
	testenv.LookPath(t, "git", "apt-get install git (as root)")
	bin = toolhostBinary(t)
	home = t.TempDir()
	root = filepath.Join(home, "repo")
	if err := os.Mkdir(root, 0o755); err != nil {
		t.Fatal(err)
	}
	gdlRepo(t, home, root)
	return bin, home, root
}

// pmRun runs command in root through the binary and returns its output.
func pmRun(t *testing.T, bin, home, root, command string) string {
	t.Helper()
	c := gdlStart(t, bin, home, root, command)
	return c.wait(t)
}

// pmNotRun fails t when the marker exists: git outside the sandbox ran
// what a command planted.
func pmNotRun(t *testing.T, mark, when string) {
	t.Helper()
	if plantPresent(mark) {
		t.Fatalf("%s, git outside the sandbox ran the program a command planted (%s exists)", when, mark)
	}
}

// pmFsmonitor is a config section whose core.fsmonitor touches mark.
func pmFsmonitor(mark string) string {
	return `printf '[core]\n\tfsmonitor = "touch ` + mark + `; false"\n'`
}

// TestPlantedMoreHardLink: a command makes a repository, adds it as a
// gitlink, and leaves a hard link to its config in the root (the config
// is clean, so the check after the call finds nothing). A later call,
// where that config is bound read-only, appends a core.fsmonitor to the
// hard link, the same file by another path, and waits; the operator runs
// git status at the top, during the call and after it.
// Expected: git never runs the program: the read-only config is not the
// file the link reaches, and what reaches a config is set aside.
func TestPlantedMoreHardLink(t *testing.T) {
	bin, home, root := pmSetup(t)
	mark := filepath.Join(t.TempDir(), "ran")
	out := pmRun(t, bin, home, root, gdlIdentity+"git init -q sub && (cd sub && git commit -q --allow-empty -m s) && git add sub && ln sub/.git/config notes.txt && echo linked")
	if !strings.Contains(out, "linked") {
		t.Fatalf("the first call did not link the config:\n%s", out)
	}
	gdlTry(home, root, "status")
	pmNotRun(t, mark, "after the first call")

	c := gdlStart(t, bin, home, root, "("+pmFsmonitor(mark)+" >> notes.txt; echo appended=$?)"+gdlHold)
	gdlAwait(t, c, root)
	gdlTry(home, root, "status")
	pmNotRun(t, mark, "during the second call")
	mustWrite(t, filepath.Join(root, ".gdl-release"), "")
	out = c.wait(t)
	t.Logf("second call's output:\n%s", out)
	if !strings.Contains(out, "appended=0") {
		t.Fatalf("the second call could not write its own file notes.txt:\n%s", out)
	}
	gdlTry(home, root, "status")
	pmNotRun(t, mark, "after the second call")
	if b, _ := os.ReadFile(filepath.Join(root, "sub/.git/config")); strings.Contains(string(b), "fsmonitor") {
		t.Errorf("sub/.git/config holds the command's core.fsmonitor:\n%s", b)
	}
}

// TestPlantedMoreDeep: a command makes a repository seven levels below
// the root, deeper than the search before a call reads, and writes a
// core.fsmonitor into it; the operator then runs git add -A and git
// status at the top, which adds it as an embedded repository and
// recurses into it.
// Expected: the key is set aside and the call's output says so; git
// never runs the program.
func TestPlantedMoreDeep(t *testing.T) {
	bin, home, root := pmSetup(t)
	mark := filepath.Join(t.TempDir(), "ran")
	out := pmRun(t, bin, home, root, gdlIdentity+"mkdir -p d1/d2/d3/d4/d5/d6/d7 && cd d1/d2/d3/d4/d5/d6/d7 && git init -q && git commit -q --allow-empty -m s && git config core.fsmonitor 'touch "+mark+"; false' && echo planted")
	if !strings.Contains(out, "planted") {
		t.Fatalf("the command did not plant the repository:\n%s", out)
	}
	if !strings.Contains(out, "core.fsmonitor") || !strings.Contains(out, "d1/d2/d3/d4/d5/d6/d7/.git/toolhost-quarantine") {
		t.Errorf("the call's output does not say that the deep repository's core.fsmonitor was set aside:\n%s", out)
	}
	gdlTry(home, root, "add", "-A")
	gdlTry(home, root, "status")
	pmNotRun(t, mark, "after the call")
}

// TestPlantedMoreSearchBound: a command writes more entries than the
// check after the call reads (20000) and makes a repository among the
// newest, past the bound.
// Expected: the call's output says, in a sandbox: line naming the root,
// that the check stopped and what to do.
func TestPlantedMoreSearchBound(t *testing.T) {
	bin, home, root := pmSetup(t)
	out := pmRun(t, bin, home, root, "mkdir big && (cd big && seq 1 20500 | xargs touch) && mkdir later && git init -q later && echo made")
	if !strings.Contains(out, "made") {
		t.Fatalf("the command did not make the files:\n%s", out)
	}
	var line string
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "sandbox:") && strings.Contains(l, root) && strings.Contains(l, "20000") {
			line = l
		}
	}
	if line == "" {
		t.Fatalf("the call's output does not say that the check after it stopped at its bound in %s:\n%s", root, out)
	}
	if !strings.Contains(line, "git") {
		t.Errorf("the line does not say what to do: %s", line)
	}
}

// TestPlantedMoreKilled: a command makes a repository with a
// core.fsmonitor, adds it as a gitlink, and waits; toolhost is killed
// (SIGKILL) before the call ends, so the check after it never runs. Any
// later call of another toolhost on the same state directory applies the
// killed call's stage (the index naming the gitlink).
// Expected: the later toolhost also runs the killed call's check: the key
// is set aside, and the operator's git status at the top does not run
// it.
func TestPlantedMoreKilled(t *testing.T) {
	bin, home, root := pmSetup(t)
	mark := filepath.Join(t.TempDir(), "ran")
	c := gdlStart(t, bin, home, root, gdlIdentity+"git init -q sub && (cd sub && git commit -q --allow-empty -m s) && git -C sub config core.fsmonitor 'touch "+mark+"; false' && git add sub"+gdlHold)
	gdlAwait(t, c, root)
	if err := c.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	c.cmd.Wait()
	mustWrite(t, filepath.Join(root, ".gdl-release"), "")

	pmRun(t, bin, home, root, "true")
	if b, _ := os.ReadFile(filepath.Join(root, "sub/.git/config")); strings.Contains(string(b), "fsmonitor") {
		t.Errorf("after the next call, sub/.git/config still holds the killed call's core.fsmonitor:\n%s", b)
	}
	if b, err := os.ReadFile(filepath.Join(root, "sub/.git/toolhost-quarantine/config")); err != nil || !strings.Contains(string(b), "fsmonitor") {
		t.Errorf("the killed call's core.fsmonitor is not kept in sub/.git/toolhost-quarantine: %v", err)
	}
	gdlTry(home, root, "status")
	pmNotRun(t, mark, "after the killed call and the next")
}
