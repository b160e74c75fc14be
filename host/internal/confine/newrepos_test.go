//go:build linux

package confine

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/toolhost/toolhost/internal/testenv"
)

// TestRunsProgram: the keys git runs a program for, or reads another
// file for, and a few that it does not.
func TestRunsProgram(t *testing.T) {
	cases := []struct {
		key, value string
		want       bool
	}{
		{"core.fsmonitor", "touch x; false", true},
		{"core.fsmonitor", "true", false},
		{"core.hookspath", ".husky", true},
		{"core.sshcommand", "ssh -i x", true},
		{"core.pager", "less", true},
		{"core.editor", "vi", true},
		{"core.askpass", "x", true},
		{"core.gitproxy", "x", true},
		{"core.alternaterefscommand", "x", true},
		{"credential.helper", "store", true},
		{"credential.https://example.com.helper", "x", true},
		{"filter.lfs.clean", "x", true},
		{"filter.a.b.process", "x", true},
		{"filter.x.required", "true", true},
		{"diff.x.textconv", "x", true},
		{"diff.x.command", "x", true},
		{"diff.external", "x", true},
		{"merge.x.driver", "x", true},
		{"include.path", "x", true},
		{"includeif.gitdir:/x/.path", "x", true},
		{"alias.st", "!touch x", true},
		{"alias.st", "  !touch x", true},
		{"alias.st", "status", false},
		{"gpg.program", "x", true},
		{"gpg.ssh.program", "x", true},
		{"gpg.ssh.defaultkeycommand", "x", true},
		{"sequence.editor", "x", true},
		{"uploadpack.packobjectshook", "x", true},
		{"remote.origin.uploadpack", "x", true},
		{"remote.origin.receivepack", "x", true},
		{"remote.origin.vcs", "x", true},
		{"protocol.ext.allow", "always", true},
		{"protocol.allow", "always", true},
		{"submodule.x.update", "!x", true},
		{"submodule.x.update", "rebase", false},
		{"pager.log", "x", true},
		{"interactive.difffilter", "x", true},
		{"difftool.x.cmd", "x", true},
		{"mergetool.x.path", "x", true},
		{"man.x.cmd", "x", true},
		{"browser.x.path", "x", true},
		{"tar.tgz.command", "x", true},
		{"trailer.x.command", "x", true},
		{"sendemail.smtpserver", "/bin/x", true},
		{"sendemail.tocmd", "x", true},
		{"imap.tunnel", "x", true},
		{"hook.x.command", "x", true},
		{"lfs.customtransfer.x.path", "x", true},
		{"guitool.x.cmd", "x", true},
		{"core.repositoryformatversion", "0", false},
		{"core.bare", "false", false},
		{"remote.origin.url", "https://example.com/x", false},
		{"branch.main.merge", "refs/heads/main", false},
		{"user.name", "x", false},
		{"submodule.x.url", "../x", false},
	}
	for _, c := range cases {
		first, last := strings.Index(c.key, "."), strings.LastIndex(c.key, ".")
		sub := ""
		if first < last {
			sub = c.key[first+1 : last]
		}
		if got := runsProgram(c.key[:first], sub, c.key[last+1:], c.value); got != c.want {
			t.Errorf("runsProgram(%s = %q) = %v, want %v", c.key, c.value, got, c.want)
		}
		if c.want && !mentionsProgramKey([]byte("["+c.key[:first]+"]\n"+c.key[last+1:]+" = v\n")) {
			t.Errorf("mentionsProgramKey misses %s, which runsProgram names", c.key)
		}
	}
}

// TestNeutralizeConfig: git's own reading of a config file the command
// wrote, in syntax git accepts but a simple reader might not, loses
// exactly the keys that run programs; every other key keeps its value;
// the original is kept with a header naming what was removed.
func TestNeutralizeConfig(t *testing.T) {
	testenv.LookPath(t, "git", "apt-get install git (as root)")
	gd := t.TempDir()
	p := filepath.Join(gd, "config")
	text := "[core]\n\trepositoryformatversion = 0\n\tbare\n" +
		"\tFSMONITOR = \"touch x; \\\n false\" ; a comment\n" +
		"[Core]\n\tpager = less\n" +
		"[core \"sub\"]\n\tpager = fine\n" + // core.sub.pager: no key git reads, but named like one
		"[filter.a]\n\tclean = x\n" +
		"[remote \"or.igin\"]\n\turl = \"https://example.com/a b\\tc\"\n\tfetch = +refs/heads/*:refs/remotes/origin/*\n" +
		"[alias]\n\tst = status # comment\n\tx = \"!sh -c 'touch y'\"\n" +
		"[includeIf \"gitdir:/x/\"]\n\tpath = /elsewhere\n" +
		"[user]\n\tname = \"a \\\"quoted\\\" name\"\n"
	mustWrite(t, p, text)
	keys, whole, err := testGitDirHandle(t, gd).neutralizeConfig(context.Background(), "config")
	if err != nil || whole {
		t.Fatalf("neutralizeConfig: %v (whole %v)", err, whole)
	}
	want := []string{"core.fsmonitor", "core.pager", "core.sub.pager", "filter.a.clean", "alias.x", "includeif.gitdir:/x/.path"}
	if !slices.Equal(keys, want) {
		t.Errorf("removed %q, want %q", keys, want)
	}
	got, err := listConfig(context.Background(), p, nil)
	if err != nil {
		t.Fatal(err)
	}
	var kept []string
	for _, e := range got {
		kept = append(kept, e.key()+"="+e.value)
	}
	wantKept := []string{"core.repositoryformatversion=0", "core.bare=", "remote.or.igin.url=https://example.com/a b\tc",
		"remote.or.igin.fetch=+refs/heads/*:refs/remotes/origin/*", "alias.st=status", `user.name=a "quoted" name`}
	if !slices.Equal(kept, wantKept) {
		t.Errorf("kept %q, want %q", kept, wantKept)
	}
	b, err := os.ReadFile(filepath.Join(gd, quarantineDir, "config"))
	if err != nil || !strings.HasSuffix(string(b), text) || !strings.Contains(string(b), "#   core.fsmonitor\n") {
		t.Errorf("the quarantine does not hold the original after a header naming the keys (%v):\n%s", err, b)
	}
	// Kept as a config file git still reads.
	if again, err := listConfig(context.Background(), filepath.Join(gd, quarantineDir, "config"), nil); err != nil || len(again) != len(got)+len(want) {
		t.Errorf("git reads the kept copy as %d keys (%v), want %d", len(again), err, len(got)+len(want))
	}
}

// TestNeutralizeConfigWithoutGit: with no git to read the file, one that
// names anything like a program key is set aside whole; one that does
// not is left.
func TestNeutralizeConfigWithoutGit(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	gd := t.TempDir()
	p := filepath.Join(gd, "config")
	mustWrite(t, p, "[core]\n\tbare = false\n")
	if keys, whole, err := testGitDirHandle(t, gd).neutralizeConfig(context.Background(), "config"); err != nil || whole || keys != nil {
		t.Errorf("a harmless config: keys %q, whole %v, %v; want it left", keys, whole, err)
	}
	mustWrite(t, p, "[core]\n\tfsmonitor = x\n")
	if _, whole, err := testGitDirHandle(t, gd).neutralizeConfig(context.Background(), "config"); err != nil || !whole || pathPresent(p) {
		t.Errorf("a config naming core.fsmonitor without git: whole %v, %v, present %v; want it moved aside", whole, err, pathPresent(p))
	}
	if b, err := os.ReadFile(filepath.Join(gd, quarantineDir, "config")); err != nil || !strings.Contains(string(b), "fsmonitor") {
		t.Errorf("the quarantine does not hold it: %v", err)
	}
}

// TestSettle: after a call, a repository the command made loses what
// git would run (config keys, hooks but samples, a config.worktree); a
// repository that existed before, whose config and hook had hard links
// (a command's, made while it was writable), keeps the operator's keys
// and hook: Build replaced them by copies, which the writes through the
// links do not reach and the check does not count as changed; a sample
// hook stays.
func TestSettle(t *testing.T) {
	testenv.LookPath(t, "git", "apt-get install git (as root)")
	home := fakeHome(t)
	root := canonicalTempDir(t)
	gitInitAt(t, root)
	old := filepath.Join(root, "old")
	gitInitAt(t, old)
	mustWrite(t, filepath.Join(old, ".git/config"), "[core]\n\tpager = operators-pager\n")
	mustWrite(t, filepath.Join(old, ".git/hooks/pre-commit"), "#!/bin/sh\noperators\n")
	for from, to := range map[string]string{"old/.git/config": "notes.txt", "old/.git/hooks/pre-commit": "hook.txt"} {
		if err := os.Link(filepath.Join(root, from), filepath.Join(root, to)); err != nil {
			t.Fatal(err)
		}
	}
	s := testSettings(t, home)
	s.Search = NewSearchCache()
	_, st, cleanup, err := buildCall(context.Background(), s, Call{ID: "c1", Roots: []string{root}})
	if err != nil {
		t.Fatal(err)
	}
	defer cleanup()
	for _, p := range []string{"old/.git/config", "old/.git/hooks/pre-commit"} {
		if fi, err := os.Stat(filepath.Join(root, p)); err != nil || fi.Sys().(*syscall.Stat_t).Nlink != 1 {
			t.Errorf("%s still has other hard links after Build: %v", p, err)
		}
	}

	// What "the command" does (read-only binds are not in force here).
	appendFile(t, filepath.Join(root, "notes.txt"), "[core]\n\tfsmonitor = evil\n")
	appendFile(t, filepath.Join(root, "hook.txt"), "evil\n")
	gitInitAt(t, filepath.Join(root, "new"))
	mustWrite(t, filepath.Join(root, "new/.git/config"), "[core]\n\tbare = false\n\tsshCommand = evil\n")
	mustWrite(t, filepath.Join(root, "new/.git/config.worktree"), "[core]\n\thooksPath = /evil\n")
	mustWrite(t, filepath.Join(root, "new/.git/hooks/post-checkout"), "#!/bin/sh\nevil\n")
	mustWrite(t, filepath.Join(root, "new/.git/hooks/pre-push.sample"), "#!/bin/sh\n")
	// A submodule's git directory in the new repository's .git/modules,
	// and its checkout's .git file.
	mod := filepath.Join(root, "new/.git/modules/lib")
	gitInitBare(t, mod)
	mustWrite(t, filepath.Join(mod, "config"), "[alias]\n\tx = !evil\n")
	mustWrite(t, filepath.Join(root, "new/lib/.git"), "gitdir: ../.git/modules/lib\n")

	found := st.run(context.Background())
	byDir := map[string]Neutralized{}
	for _, n := range found {
		byDir[n.GitDir] = n
		if n.Err != nil {
			t.Errorf("%s: %v", n.GitDir, n.Err)
		}
	}
	n := byDir[filepath.Join(root, "new/.git")]
	if !slices.Equal(n.Keys, []string{"core.sshcommand", "core.hookspath"}) || !slices.Equal(n.Files, []string{"hooks/post-checkout"}) || n.Repo != filepath.Join(root, "new/.git") {
		t.Errorf("new/.git: %+v; want core.sshcommand, core.hookspath and hooks/post-checkout set aside", n)
	}
	if !pathPresent(filepath.Join(root, "new/.git/hooks/pre-push.sample")) || pathPresent(filepath.Join(root, "new/.git/hooks/post-checkout")) {
		t.Errorf("the hooks left: want the sample, not post-checkout")
	}
	if m := byDir[mod]; !slices.Equal(m.Keys, []string{"alias.x"}) || m.Repo != filepath.Join(root, "new/lib/.git") {
		t.Errorf("the submodule's git directory: %+v; want alias.x set aside, reported for new/lib/.git", m)
	}
	if o, ok := byDir[filepath.Join(old, ".git")]; ok {
		t.Errorf("the repository protected before the call was changed: %+v", o)
	}
	if b, _ := os.ReadFile(filepath.Join(old, ".git/config")); !strings.Contains(string(b), "operators-pager") || strings.Contains(string(b), "evil") {
		t.Errorf("old/.git/config: want the operator's pager and not the command's fsmonitor:\n%s", b)
	}
	if b, _ := os.ReadFile(filepath.Join(old, ".git/hooks/pre-commit")); string(b) != "#!/bin/sh\noperators\n" {
		t.Errorf("old/.git/hooks/pre-commit: want the operator's hook as it was:\n%s", b)
	}
	if len(found) != 2 {
		t.Errorf("found %d git directories to neutralize, want 2: %+v", len(found), found)
	}
	h := st.hint(found)
	if !strings.Contains(h, "new/.git (config core.sshcommand, core.hookspath; hooks/post-checkout)") || !strings.Contains(h, "new/.git/toolhost-quarantine") {
		t.Errorf("hint = %q, want it to name new/.git, what was removed and where it was kept", h)
	}
	// Once: a second run reports the same and changes nothing more.
	if again := st.run(context.Background()); len(again) != len(found) {
		t.Errorf("a second run found %d, want the first's %d", len(again), len(found))
	}
}

// appendFile appends text to the file p, as a shell's >> does: in place.
func appendFile(t *testing.T, p, text string) {
	t.Helper()
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(text); err != nil {
		t.Fatal(err)
	}
	f.Close()
}

// TestSettleSeesWritesPastBinds: a repository that existed before the
// call, its config and hooks bound read-only, whose config and a hook
// are written in place during the call, as a hard link Build could not
// break would write them, loses what git would run: whether the command
// changed a file is its ctime, not the path the bind covers. One not
// written keeps its keys.
func TestSettleSeesWritesPastBinds(t *testing.T) {
	testenv.LookPath(t, "git", "apt-get install git (as root)")
	root := canonicalTempDir(t)
	gitInitAt(t, root)
	for _, d := range []string{"a", "b"} {
		gitInitAt(t, filepath.Join(root, d))
		mustWrite(t, filepath.Join(root, d, ".git/config"), "[core]\n\tpager = mine\n")
		mustWrite(t, filepath.Join(root, d, ".git/hooks/post-merge"), "#!/bin/sh\nmine\n")
	}
	p, st, cleanup, err := buildCall(context.Background(), testSettings(t, fakeHome(t)), Call{ID: "c1", Roots: []string{root}})
	if err != nil {
		t.Fatal(err)
	}
	defer cleanup()
	if m := deciding(p.Mounts, lastByTarget(p.Mounts), filepath.Join(root, "a/.git/config")); m == nil || m.Kind != MountRead {
		t.Fatalf("a/.git/config is not bound read-only: %+v", m)
	}
	st.since = time.Now().UnixNano() // what was written before is the operator's
	time.Sleep(20 * time.Millisecond)
	appendFile(t, filepath.Join(root, "a/.git/config"), "[core]\n\tfsmonitor = evil\n")
	appendFile(t, filepath.Join(root, "a/.git/hooks/post-merge"), "evil\n")
	found := st.run(context.Background())
	if len(found) != 1 || found[0].GitDir != filepath.Join(root, "a/.git") || !slices.Equal(found[0].Keys, []string{"core.pager", "core.fsmonitor"}) || !slices.Equal(found[0].Files, []string{"hooks/post-merge"}) {
		t.Errorf("found %+v; want a/.git's core.pager, core.fsmonitor and hooks/post-merge set aside, nothing of b/.git", found)
	}
	if b, _ := os.ReadFile(filepath.Join(root, "b/.git/config")); !strings.Contains(string(b), "pager = mine") {
		t.Errorf("b/.git/config, unchanged, lost its key:\n%s", b)
	}
}

// TestSettleLeavesOldFiles: a repository the search had not found before
// the call (past its bounds), whose config the command did not change,
// keeps its keys: only what changed during the call is the command's.
func TestSettleLeavesOldFiles(t *testing.T) {
	testenv.LookPath(t, "git", "apt-get install git (as root)")
	home := fakeHome(t)
	root := canonicalTempDir(t)
	deep := filepath.Join(root, "a/b/c/d/e/f/g")
	gitInitAt(t, deep)
	mustWrite(t, filepath.Join(deep, ".git/config"), "[core]\n\tpager = mine\n")
	s := testSettings(t, home)
	_, st, cleanup, err := buildCall(context.Background(), s, Call{ID: "c1", Roots: []string{root}})
	if err != nil {
		t.Fatal(err)
	}
	defer cleanup()
	st.since = time.Now().UnixNano() // the call began after the file was written
	if found := st.neutralize(context.Background(), []string{filepath.Join(deep, ".git")}); len(found) != 0 {
		t.Errorf("an unchanged config was neutralized: %+v", found)
	}
}

// BenchmarkAfterCommand measures what the check after a call costs: a
// whole confined call (Build with a SearchCache, the command through the
// launcher, the cleanup) without it ("before") and with it ("after"),
// in the same run, for `true`, a `git commit` of one file, and an
// npm-install-like command that writes 10,000 small files in 1,000
// directories; settle-ms is the check alone. The root is a repository of
// 1,000 files in 50 directories.
func BenchmarkAfterCommand(b *testing.B) {
	if _, err := exec.LookPath("git"); err != nil {
		b.Skip("git is not installed")
	}
	root := canonicalTempDir(b)
	gitB(b, root, "init", "-q", ".")
	for i := range 1000 {
		mustWriteB(b, filepath.Join(root, fmt.Sprintf("src/d%d/f%d.go", i%50, i)), "package x\n")
	}
	// The packages the npm-like command unpacks: 1,000 packages of 10
	// files, in a tar kept in the root (a command reads nothing outside).
	pkgs := canonicalTempDir(b)
	for i := range 1000 {
		for j := range 10 {
			mustWriteB(b, filepath.Join(pkgs, fmt.Sprintf("node_modules/p%d/lib/f%d.js", i, j)), "module.exports = 1\n")
		}
	}
	if out, err := exec.Command("tar", "-cf", filepath.Join(root, "pkgs.tar"), "-C", pkgs, "node_modules").CombinedOutput(); err != nil {
		b.Fatalf("tar: %v: %s", err, out)
	}
	gitB(b, root, "add", "-A")
	gitB(b, root, "commit", "-q", "-m", "init")
	s := Settings{Mode: ModeWorkspaceWrite, Network: NetworkOff, StateDir: b.TempDir(), Home: b.TempDir(), Path: "/usr/bin:/bin",
		Environ: []string{"PATH=/usr/bin:/bin", "GIT_AUTHOR_NAME=b", "GIT_AUTHOR_EMAIL=b@example.com", "GIT_COMMITTER_NAME=b", "GIT_COMMITTER_EMAIL=b@example.com"},
		Search:  NewSearchCache()}
	commands := []struct{ name, command string }{
		{"true", "true"},
		{"git-commit", "date +%s%N > one.txt && git add one.txt && git commit -q -m one"},
		{"npm-10k-files", "rm -rf node_modules && tar -xf pkgs.tar"},
	}
	for _, c := range commands {
		for _, after := range []bool{false, true} {
			name := c.name + "/before"
			if after {
				name = c.name + "/after"
			}
			b.Run(name, func(b *testing.B) {
				var settleTime time.Duration
				for b.Loop() {
					p, st, cleanup, err := buildCall(context.Background(), s, Call{ID: "bench", Roots: []string{root}})
					if err != nil {
						b.Fatal(err)
					}
					if r := mustRun(b, p, c.command); r.code != 0 {
						b.Fatalf("%s: exit %d: %s", c.command, r.code, r.stderr)
					}
					if after {
						t0 := time.Now()
						if found := st.run(context.Background()); len(found) != 0 {
							b.Fatalf("found %+v", found)
						}
						settleTime += time.Since(t0)
					} else {
						// The cleanup skips the check; the watch, started by
						// buildCall, is what BenchmarkWatch measures.
						st.once.Do(func() { st.watch.stop() })
					}
					cleanup()
				}
				if after {
					b.ReportMetric(float64(settleTime.Microseconds())/1000/float64(b.N), "settle-ms/op")
				}
			})
		}
	}
}

func mustWriteB(b *testing.B, p, s string) {
	b.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
		b.Fatal(err)
	}
}

func gitB(b testing.TB, dir string, args ...string) {
	b.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "HOME="+dir, "GIT_AUTHOR_NAME=b", "GIT_AUTHOR_EMAIL=b@example.com", "GIT_COMMITTER_NAME=b", "GIT_COMMITTER_EMAIL=b@example.com")
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("git %v: %v: %s", args, err, out)
	}
}

// TestIndexGitlinks: the gitlinks of an index git wrote, in each version
// of the format, and nothing else of it.
func TestIndexGitlinks(t *testing.T) {
	testenv.LookPath(t, "git", "apt-get install git (as root)")
	for _, version := range []string{"2", "3", "4"} {
		t.Run("v"+version, func(t *testing.T) {
			root := canonicalTempDir(t)
			gitB(t, root, "init", "-q", ".")
			for _, d := range []string{"a/sub", "a/sub2", "deep/er/lib"} {
				gitB(t, filepath.Join(root), "init", "-q", d)
				gitB(t, filepath.Join(root, d), "commit", "-q", "--allow-empty", "-m", "x")
			}
			mustWrite(t, filepath.Join(root, "a/file"), "x")
			mustWrite(t, filepath.Join(root, "a/sub-file-with-a-long-name"), "x")
			gitB(t, root, "add", "a/file", "a/sub", "a/sub-file-with-a-long-name", "a/sub2", "deep/er/lib")
			if version == "3" {
				mustWrite(t, filepath.Join(root, "a/new"), "x")
				gitB(t, root, "add", "--intent-to-add", "a/new") // an extended flag
			}
			gitB(t, root, "update-index", "--index-version", version)
			got, err := indexGitlinks(filepath.Join(root, ".git/index"), 20)
			if err != nil || !slices.Equal(got, []string{"a/sub", "a/sub2", "deep/er/lib"}) {
				t.Errorf("indexGitlinks = %q, %v; want a/sub, a/sub2, deep/er/lib", got, err)
			}
		})
	}
}

// BenchmarkIndexGitlinks reads this repository's own index.
func BenchmarkIndexGitlinks(b *testing.B) {
	p, _ := filepath.Abs("../../../.git/index")
	if !pathPresent(p) {
		b.Skip("not run from a checkout")
	}
	for b.Loop() {
		if _, err := indexGitlinks(p, 20); err != nil {
			b.Fatal(err)
		}
	}
}

// TestSettleDeepGitlink: a repository the command made deeper than the
// search reads, and added to the root's index as a gitlink (git status
// at the top recurses into it), or placed where .gitmodules names a
// submodule, is checked all the same.
func TestSettleDeepGitlink(t *testing.T) {
	testenv.LookPath(t, "git", "apt-get install git (as root)")
	root := canonicalTempDir(t)
	gitB(t, root, "init", "-q", ".")
	mustWrite(t, filepath.Join(root, ".gitmodules"), "[submodule \"m\"]\n\tpath = x/y/z/w/v/u/t/mod\n\turl = ../m\n")
	_, st, cleanup, err := buildCall(context.Background(), testSettings(t, fakeHome(t)), Call{ID: "c1", Roots: []string{root}})
	if err != nil {
		t.Fatal(err)
	}
	defer cleanup()
	for _, d := range []string{"a/b/c/d/e/f/g/sub", "x/y/z/w/v/u/t/mod"} {
		gitB(t, root, "init", "-q", d)
		gitB(t, filepath.Join(root, d), "config", "core.fsmonitor", "touch planted; false")
	}
	gitB(t, filepath.Join(root, "a/b/c/d/e/f/g/sub"), "commit", "-q", "--allow-empty", "-m", "x")
	gitB(t, root, "add", "a/b/c/d/e/f/g/sub")
	found := st.run(context.Background())
	var dirs []string
	for _, n := range found {
		dirs = append(dirs, strings.TrimPrefix(n.Repo, root+"/"))
	}
	slices.Sort(dirs)
	if !slices.Equal(dirs, []string{"a/b/c/d/e/f/g/sub/.git", "x/y/z/w/v/u/t/mod/.git"}) {
		t.Errorf("neutralized %q, want both deep repositories", dirs)
	}
}

// TestSettleWatchesEmptySubmodules: while the command runs, a repository
// made in a submodule's directory that was empty when the call began
// loses its core.fsmonitor as soon as it is written, before the check
// after the call; that check reports it.
func TestSettleWatchesEmptySubmodules(t *testing.T) {
	testenv.LookPath(t, "git", "apt-get install git (as root)")
	root := canonicalTempDir(t)
	gitB(t, root, "init", "-q", ".")
	mustWrite(t, filepath.Join(root, ".gitmodules"), "[submodule \"lib\"]\n\tpath = lib\n\turl = ../lib\n")
	mustMkdir(t, filepath.Join(root, "lib"))
	_, st, cleanup, err := buildCall(context.Background(), testSettings(t, fakeHome(t)), Call{ID: "c1", Roots: []string{root}})
	if err != nil {
		t.Fatal(err)
	}
	defer cleanup()
	if st.watch == nil {
		t.Fatal("lib/, an empty submodule directory, is not watched")
	}
	lib := filepath.Join(root, "lib")
	gitB(t, lib, "init", "-q")
	gitB(t, lib, "config", "core.fsmonitor", "touch planted; false")
	deadline := time.Now().Add(5 * time.Second)
	for {
		b, _ := os.ReadFile(filepath.Join(lib, ".git/config"))
		if !strings.Contains(string(b), "fsmonitor") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("lib/.git/config still holds core.fsmonitor 5 s after it was written:\n%s", b)
		}
		time.Sleep(5 * time.Millisecond)
	}
	found := st.run(context.Background())
	if len(found) != 1 || found[0].Repo != filepath.Join(lib, ".git") || !slices.Contains(found[0].Keys, "core.fsmonitor") {
		t.Errorf("found %+v, want lib/.git's core.fsmonitor", found)
	}
}

// testGitDirHandle opens the git directory gd for the set-aside, as the
// check after a call does.
func testGitDirHandle(t *testing.T, gd string) *gitDirHandle {
	t.Helper()
	fd, err := unix.Open(gd, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	h := &gitDirHandle{st: &settle{}, path: gd, fd: fd, q: -1}
	t.Cleanup(h.close)
	return h
}

// TestSettleLinksAndFifos: what a command leaves to mislead the check
// run with the operator's rights: a git directory reached through a link
// to a repository outside the roots (whose config toolhost must not
// rewrite), a config that is a link to a file outside, a hooks that is
// a link, and FIFOs where git reads a .git file, a commondir, an index
// (which must not hold the check).
func TestSettleLinksAndFifos(t *testing.T) {
	testenv.LookPath(t, "git", "apt-get install git (as root)")
	root := canonicalTempDir(t)
	outside := canonicalTempDir(t)
	gitB(t, root, "init", "-q", ".")
	_, st, cleanup, err := buildCall(context.Background(), testSettings(t, fakeHome(t)), Call{ID: "c1", Roots: []string{root}})
	if err != nil {
		t.Fatal(err)
	}
	defer cleanup()
	// The operator's repository outside, changed recently.
	gitB(t, outside, "init", "-q", "theirs")
	gitB(t, filepath.Join(outside, "theirs"), "config", "core.pager", "their-pager")
	mustWrite(t, filepath.Join(outside, "theirs/.git/hooks/pre-commit"), "#!/bin/sh\n")
	mustWrite(t, filepath.Join(outside, "elsewhere.config"), "[core]\n\teditor = their-editor\n")
	// In the root: a link to it, a repository whose config and hooks are
	// links out, and FIFOs.
	if err := os.Symlink(filepath.Join(outside, "theirs"), filepath.Join(root, "linked")); err != nil {
		t.Fatal(err)
	}
	gitB(t, root, "init", "-q", "links")
	os.Remove(filepath.Join(root, "links/.git/config"))
	os.Symlink(filepath.Join(outside, "elsewhere.config"), filepath.Join(root, "links/.git/config"))
	os.RemoveAll(filepath.Join(root, "links/.git/hooks"))
	os.Symlink(filepath.Join(outside, "theirs/.git/hooks"), filepath.Join(root, "links/.git/hooks"))
	mustMkdir(t, filepath.Join(root, "fifo"))
	for _, p := range []string{"fifo/.git", "links/.git/commondir", "links/.git/index"} {
		if err := unix.Mkfifo(filepath.Join(root, p), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	gitB(t, root, "init", "-q", "lib")
	mustWrite(t, filepath.Join(root, ".gitmodules"), "[submodule \"lib\"]\n\tpath = lib\n")

	done := make(chan []Neutralized, 1)
	go func() { done <- st.run(context.Background()) }()
	var found []Neutralized
	select {
	case found = <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("the check after the call did not end within 30 s: a FIFO held it")
	}
	// A git directory found before the command swapped a directory on
	// its path for a link (a race the watch meets while the command runs).
	if n := st.neutralizeGitDir(context.Background(), filepath.Join(root, "linked/.git")); len(n.Keys) > 0 || len(n.Files) > 0 || n.Err == nil {
		t.Errorf("a git directory reached through a link: %+v; want nothing done, and an error saying why", n)
	}
	if b, _ := os.ReadFile(filepath.Join(outside, "theirs/.git/config")); !strings.Contains(string(b), "their-pager") {
		t.Errorf("the config of a repository outside the roots was rewritten:\n%s", b)
	}
	if b, _ := os.ReadFile(filepath.Join(outside, "elsewhere.config")); !strings.Contains(string(b), "their-editor") {
		t.Errorf("a file outside the roots, a config's link target, was rewritten:\n%s", b)
	}
	if !pathPresent(filepath.Join(outside, "theirs/.git/hooks/pre-commit")) || pathPresent(filepath.Join(outside, "theirs/.git", quarantineDir)) {
		t.Errorf("a hook outside the roots was moved")
	}
	var links *Neutralized
	for i := range found {
		if found[i].GitDir == filepath.Join(root, "links/.git") {
			links = &found[i]
		}
	}
	if links == nil || !slices.Equal(links.Files, []string{"config", "hooks"}) {
		t.Fatalf("links/.git: %+v; want its linked config and hooks moved aside whole", found)
	}
	if fi, err := os.Lstat(filepath.Join(root, "links/.git", quarantineDir, "config")); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("the linked config is not kept, as a link, in the quarantine: %v", err)
	}
}

// BenchmarkSettleThisRepository measures the check after a call on this
// package's own checkout when the tests run from one, with a warm
// SearchCache, as after a command that changed nothing: nothing counts as
// changed (since lies in the future), so the check cannot touch the
// checkout.
func BenchmarkSettleThisRepository(b *testing.B) {
	repo, err := filepath.Abs("../../..")
	if err != nil || !isDir(filepath.Join(repo, ".git")) {
		b.Skip("not run from a checkout")
	}
	s := Settings{Mode: ModeWorkspaceWrite, Network: NetworkOff, StateDir: b.TempDir(), Home: b.TempDir(), Path: "/usr/bin:/bin", Search: NewSearchCache()}
	var settleTime time.Duration
	for b.Loop() {
		_, st, cleanup, err := buildCall(context.Background(), s, Call{ID: "bench", Roots: []string{repo}})
		if err != nil {
			b.Fatal(err)
		}
		st.since = 1 << 62
		t0 := time.Now()
		st.run(context.Background())
		settleTime += time.Since(t0)
		cleanup()
	}
	b.ReportMetric(float64(settleTime.Microseconds())/1000/float64(b.N), "settle-ms/op")
}

// TestSettleWatchesIndex: while the command runs, a repository it adds
// to the root's index as a gitlink (where git is bound writable rather
// than staged, the index changes at once) loses its core.fsmonitor as
// soon as the index names it.
func TestSettleWatchesIndex(t *testing.T) {
	testenv.LookPath(t, "git", "apt-get install git (as root)")
	root := canonicalTempDir(t)
	gitB(t, root, "init", "-q", ".")
	_, st, cleanup, err := buildCall(context.Background(), testSettings(t, fakeHome(t)), Call{ID: "c1", Roots: []string{root}})
	if err != nil {
		t.Fatal(err)
	}
	defer cleanup()
	if st.watch == nil {
		t.Fatal("the root's git directory is not watched for its index")
	}
	sub := filepath.Join(root, "sub")
	gitB(t, root, "init", "-q", "sub")
	gitB(t, sub, "commit", "-q", "--allow-empty", "-m", "x")
	gitB(t, sub, "config", "core.fsmonitor", "touch planted; false")
	time.Sleep(50 * time.Millisecond)
	if b, _ := os.ReadFile(filepath.Join(sub, ".git/config")); !strings.Contains(string(b), "fsmonitor") {
		t.Fatalf("sub/, not yet a gitlink, was changed before the index named it:\n%s", b)
	}
	gitB(t, root, "add", "sub")
	deadline := time.Now().Add(5 * time.Second)
	for {
		b, _ := os.ReadFile(filepath.Join(sub, ".git/config"))
		if !strings.Contains(string(b), "fsmonitor") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("sub/.git/config still holds core.fsmonitor 5 s after the index named sub:\n%s", b)
		}
		time.Sleep(5 * time.Millisecond)
	}
	if found := st.run(context.Background()); len(found) != 1 || found[0].Repo != filepath.Join(sub, ".git") {
		t.Errorf("found %+v, want sub/.git", found)
	}
}

// BenchmarkWatch measures starting and stopping the watch of a call in a
// root that is one repository with one empty submodule directory.
func BenchmarkWatch(b *testing.B) {
	root := canonicalTempDir(b)
	gitB(b, root, "init", "-q", ".")
	mustWriteB(b, filepath.Join(root, ".gitmodules"), "[submodule \"lib\"]\n\tpath = lib\n")
	if err := os.Mkdir(filepath.Join(root, "lib"), 0o755); err != nil {
		b.Fatal(err)
	}
	s := Settings{Mode: ModeWorkspaceWrite, Network: NetworkOff, StateDir: b.TempDir(), Home: b.TempDir(), Path: "/usr/bin:/bin"}
	_, st, cleanup, err := buildCall(context.Background(), s, Call{ID: "bench", Roots: []string{root}})
	if err != nil {
		b.Fatal(err)
	}
	st.watch.stop()
	defer cleanup()
	for b.Loop() {
		w := st.startWatch()
		if w == nil || len(w.wds) != 2 {
			b.Fatalf("watching %v, want the git directory and lib/", w)
		}
		w.stop()
	}
}

// BenchmarkSettleDeepTree measures the check after a call in a root of
// 10,000 files in 2,000 directories, half of them deeper than the search
// before a call reads (walkMaxDepth): "warm" after a command that changed
// nothing (a warm SearchCache), "new" after one that made every
// directory (none cached).
func BenchmarkSettleDeepTree(b *testing.B) {
	root := canonicalTempDir(b)
	gitB(b, root, "init", "-q", ".")
	for i := range 2000 {
		// 200 chains of 10 directories, 5 files in each.
		d := filepath.Join(root, fmt.Sprintf("c%d", i/10))
		for j := range i % 10 {
			d = filepath.Join(d, fmt.Sprintf("l%d", j))
		}
		for k := range 5 {
			mustWriteB(b, filepath.Join(d, fmt.Sprintf("f%d.txt", k)), "x\n")
		}
	}
	time.Sleep(ctimeSlack + 500*time.Millisecond) // older than a cache forgets
	s := Settings{Mode: ModeWorkspaceWrite, Network: NetworkOff, StateDir: b.TempDir(), Home: b.TempDir(), Path: "/usr/bin:/bin", Search: NewSearchCache()}
	for _, warm := range []bool{true, false} {
		name := "new"
		if warm {
			name = "warm"
		}
		b.Run(name, func(b *testing.B) {
			var settleTime time.Duration
			for b.Loop() {
				if !warm {
					s.Search = NewSearchCache()
				}
				_, st, cleanup, err := buildCall(context.Background(), s, Call{ID: "bench", Roots: []string{root}})
				if err != nil {
					b.Fatal(err)
				}
				st.since = 1 << 62
				t0 := time.Now()
				st.run(context.Background())
				settleTime += time.Since(t0)
				cleanup()
			}
			b.ReportMetric(float64(settleTime.Microseconds())/1000/float64(b.N), "settle-ms/op")
		})
	}
}
