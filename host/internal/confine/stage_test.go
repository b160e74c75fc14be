//go:build linux

package confine

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// BenchmarkStagedGitDir measures what staging the git directory costs a
// call, Build, launch and the cleanup that applies the stage included:
// `true`, and `git commit` of one file, in a repository, with the git
// directory staged (as Build does) and bound writable with its hooks,
// config and info read-only (as Build did before), in the same run.
// commit-reflog is the commit in a repository whose HEAD reflog holds
// 50,000 entries (7.6 MB): logs/ is staged, so the commit's reflog line
// copies it into the stage and back. The layout through is the stage as
// it was before logs/ was staged and the directories bound through
// swept: logs/ bound through, no sweep.
func BenchmarkStagedGitDir(b *testing.B) {
	if _, err := exec.LookPath("git"); err != nil {
		b.Skip("git is not installed")
	}
	home, _ := os.UserHomeDir()
	for _, command := range []string{"true", "commit", "commit-reflog"} {
		for _, layout := range []string{"staged", "through", "bound"} {
			b.Run(layout+"/"+command, func(b *testing.B) {
				root := canonicalTempDir(b)
				for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"commit", "-q", "--allow-empty", "-m", "init"}} {
					cmd := exec.Command("git", args...)
					cmd.Dir = root
					cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=b", "GIT_AUTHOR_EMAIL=b@example.com", "GIT_COMMITTER_NAME=b", "GIT_COMMITTER_EMAIL=b@example.com")
					if out, err := cmd.CombinedOutput(); err != nil {
						b.Fatalf("git %v: %v\n%s", args, err, out)
					}
				}
				if command == "commit-reflog" {
					benchReflog(b, filepath.Join(root, ".git", "logs", "HEAD"), 50000)
				}
				s := Settings{Mode: ModeWorkspaceWrite, Network: NetworkOff, StateDir: b.TempDir(), Home: home, Path: os.Getenv("PATH"), Environ: os.Environ(), Search: NewSearchCache()}
				i := 0
				var tb, tr, tc time.Duration
				for b.Loop() {
					i++
					t0 := time.Now()
					p, cleanup, err := Build(context.Background(), s, Call{ID: "bench", Roots: []string{root}})
					if err != nil {
						b.Fatal(err)
					}
					switch layout {
					case "bound":
						p.Mounts = stageBound(p.Mounts)
					case "through":
						p.Mounts = stageThroughLogs(p.Mounts)
					}
					p.Env = append(p.Env, "GIT_AUTHOR_NAME=b", "GIT_AUTHOR_EMAIL=b@example.com", "GIT_COMMITTER_NAME=b", "GIT_COMMITTER_EMAIL=b@example.com")
					line := "true"
					if command != "true" {
						line = fmt.Sprintf("echo %d >> f && git add f && git commit -q -m c%d", i, i)
					}
					t1 := time.Now()
					if r := mustRun(b, p, line); r.code != 0 {
						b.Fatalf("%s: exit %d: %s", line, r.code, r.stderr)
					}
					t2 := time.Now()
					cleanup()
					tb, tr, tc = tb+t1.Sub(t0), tr+time.Since(t1)-time.Since(t2), tc+time.Since(t2)
				}
				b.ReportMetric(float64(tb.Microseconds())/float64(i), "build-µs/op")
				b.ReportMetric(float64(tr.Microseconds())/float64(i), "run-µs/op")
				b.ReportMetric(float64(tc.Microseconds())/float64(i), "cleanup-µs/op")
			})
		}
	}
}

// benchReflog appends n entries to the reflog p, as years of checkouts
// and commits leave.
func benchReflog(b *testing.B, p string, n int) {
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	w := bufio.NewWriter(f)
	zero := strings.Repeat("0", 40)
	for i := range n {
		fmt.Fprintf(w, "%s %040x b <b@example.com> %d +0000\tcheckout: moving from main to topic-%d\n", zero, i, 1700000000+i, i)
	}
	if err := w.Flush(); err != nil {
		b.Fatal(err)
	}
}

// stageThroughLogs turns the stages of mounts into the layout before
// logs/ was staged: logs/ bound through, the sweep marked done.
func stageThroughLogs(mounts []Mount) []Mount {
	out := slices.Clone(mounts)
	for _, m := range mounts {
		if m.Kind != MountStage || isObjectsInfo(m.Target) {
			continue
		}
		os.Remove(filepath.Join(m.Stage, stageRecord)) // no sweep
		if logs := filepath.Join(m.Target, "logs"); isDir(logs) {
			out = append(out, Mount{Kind: MountWrite, Source: logs, Target: logs})
		}
	}
	return out
}

// stageBound turns the stages of mounts into the layout Build made
// before git directories were staged: the git directory bound writable
// (with its read-only parts on top), nothing bound through.
func stageBound(mounts []Mount) []Mount {
	var staged []string
	for _, m := range mounts {
		if m.Kind == MountStage {
			staged = append(staged, m.Target)
		}
	}
	var out []Mount
	for _, m := range mounts {
		switch {
		case m.Kind == MountStage && isObjectsInfo(m.Target):
			continue
		case m.Kind == MountStage:
			m = Mount{Kind: MountWrite, Source: m.Source, Target: m.Target}
		case m.Kind == MountWrite && slices.Contains(staged, filepath.Dir(m.Target)) && slices.Contains(stagedThrough, filepath.Base(m.Target)):
			continue
		}
		out = append(out, m)
	}
	return out
}

// TestStageUsable: a staging directory must be this user's alone and on
// a filesystem an overlay can keep its upper layer on.
func TestStageUsable(t *testing.T) {
	ok := filepath.Join(t.TempDir(), "stage")
	if err := stageUsable(ok); err != nil {
		t.Errorf("a fresh directory under the test's: %v", err)
	}
	open := t.TempDir()
	os.Chmod(open, 0o755)
	link := filepath.Join(t.TempDir(), "link")
	os.Symlink(ok, link)
	for _, d := range []string{open, link} {
		if err := stageUsable(d); err == nil {
			t.Errorf("%s was accepted to hold stages", d)
		}
	}
}

// TestBuildUnstagedFallsBack: where no stage can be had, a git directory
// is bound writable, as before stages, and what git reads as
// configuration that the command made there is removed after the call.
func TestBuildUnstagedFallsBack(t *testing.T) {
	home := fakeHome(t)
	root := t.TempDir()
	git := filepath.Join(root, ".git")
	mustMkdir(t, filepath.Join(git, "objects"))
	b, err := newBuilder(context.Background(), testSettings(t, home), Call{ID: "c1", Roots: []string{root}})
	if err != nil {
		t.Fatal(err)
	}
	tmp, err := b.makeDirs("c1", "")
	if err != nil {
		t.Fatal(err)
	}
	b.stageErr = errors.New("no stage here")
	p, err := b.build(tmp)
	if err != nil {
		t.Fatal(err)
	}
	if findMount(p, MountWrite, git) == nil || findMount(p, MountStage, git) != nil {
		t.Fatalf(".git is not bound writable: %+v", effectiveMount(p, git))
	}
	for _, rel := range []string{"commondir", "config.worktree", "objects/info/alternates"} {
		mustWrite(t, filepath.Join(git, rel), "planted\n")
	}
	b.afterCall()
	for _, rel := range []string{"commondir", "config.worktree", "objects/info/alternates"} {
		if pathExists(filepath.Join(git, rel)) {
			t.Errorf(".git/%s, made during the call, is still there after it", rel)
		}
	}
}

// TestBuildStagesLogs: a git directory's logs are staged with its top,
// not bound through: git outside appends to a reflog and would follow a
// link the command put there. objects and refs are bound through.
func TestBuildStagesLogs(t *testing.T) {
	home := fakeHome(t)
	root := t.TempDir()
	git := filepath.Join(root, ".git")
	for _, d := range []string{"objects", "refs", "logs"} {
		mustMkdir(t, filepath.Join(git, d))
	}
	p, cleanup, err := Build(context.Background(), testSettings(t, home), Call{ID: "c1", Roots: []string{root}})
	if err != nil {
		t.Fatal(err)
	}
	defer cleanup()
	if findMount(p, MountStage, git) == nil {
		t.Skipf("no stage here: %v", p.Uncovered)
	}
	if m := findMount(p, MountWrite, filepath.Join(git, "logs")); m != nil {
		t.Errorf(".git/logs is bound through: %+v", m)
	}
	for _, d := range []string{"objects", "refs"} {
		if findMount(p, MountWrite, filepath.Join(git, d)) == nil {
			t.Errorf(".git/%s is not bound through", d)
		}
	}
}

// TestApplyStageSweepsLinks: after the call, what the command made in
// the directories bound through that git would follow (a link, a fifo)
// is removed and named, and what would run a program in the state of a
// rebase in a worktree's git directory it made is disabled; regular
// files, directories and a link made before the call stay; a second
// application finds nothing to do.
func TestApplyStageSweepsLinks(t *testing.T) {
	git := filepath.Join(t.TempDir(), ".git")
	for _, d := range []string{"objects/ab", "objects/pack", "refs/heads/a/b/c", "modules/lib/logs"} {
		mustMkdir(t, filepath.Join(git, d))
	}
	old := filepath.Join(git, "objects", "pack", "old-link")
	if err := os.Symlink("/elsewhere", old); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1100 * time.Millisecond) // past sweepThrough's margin
	d := t.TempDir()
	mustMkdir(t, filepath.Join(d, "upper"))
	if err := recordStage(d, git); err != nil {
		t.Fatal(err)
	}
	// The command's.
	outside := t.TempDir()
	made := []string{"objects/cd", "refs/heads/a/b/c/evil", "refs/heads/x", "modules/lib/logs/HEAD"}
	for _, rel := range made {
		if err := os.Symlink(outside, filepath.Join(git, rel)); err != nil {
			t.Fatal(err)
		}
	}
	if err := syscall.Mkfifo(filepath.Join(git, "objects", "ab", "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	made = append(made, "objects/ab/fifo")
	mustWrite(t, filepath.Join(git, "objects", "ab", "0123"), "object")
	mustWrite(t, filepath.Join(git, "refs", "heads", "a", "b", "c", "d"), "ref")
	// A worktree's git directory the command made, written through.
	wt := filepath.Join(git, "worktrees", "new", "rebase-merge")
	mustMkdir(t, wt)
	mustWrite(t, filepath.Join(wt, "git-rebase-todo"), "pick 1 a\nexec touch x\n")
	mustWrite(t, filepath.Join(wt, "strategy"), "slevil\n")
	mustWrite(t, filepath.Join(wt, "head-name"), "refs/heads/side\n")

	notes := applyStage(Mount{Kind: MountStage, Source: git, Target: git, Stage: d})
	t.Logf("notes: %q", notes)
	for _, rel := range made {
		if pathExists(filepath.Join(git, rel)) {
			t.Errorf(".git/%s, made by the command, is still there", rel)
		}
		if !slices.ContainsFunc(notes, func(n string) bool { return strings.Contains(n, filepath.Join(git, rel)+",") }) {
			t.Errorf("no note names .git/%s", rel)
		}
	}
	for _, rel := range []string{"objects/ab/0123", "refs/heads/a/b/c/d", "objects/pack/old-link", "worktrees/new/rebase-merge/head-name"} {
		if !pathExists(filepath.Join(git, rel)) {
			t.Errorf(".git/%s was removed", rel)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(wt, "git-rebase-todo")); string(b) != "pick 1 a\n"+execPrefix+"exec touch x\n" {
		t.Errorf("the new worktree's to-do list after the call: %q", b)
	}
	if pathExists(filepath.Join(wt, "strategy")) {
		t.Errorf("the new worktree's merge strategy slevil is still there")
	}
	if len(notes) != len(made)+2 {
		t.Errorf("%d notes, want %d", len(notes), len(made)+2)
	}
	if again := applyStage(Mount{Kind: MountStage, Source: git, Target: git, Stage: d}); len(again) != 0 {
		t.Errorf("the second application: %q, want nothing", again)
	}
}

// TestStateFilter: what git --continue would run, in a rebase's or
// sequencer's state the command wrote, is disabled; the rest is kept as
// it was.
func TestStateFilter(t *testing.T) {
	cases := []struct {
		rel, in, want string
		kept          bool // applied at all
		note          string
	}{
		{"rebase-merge/git-rebase-todo", "pick 1234 one\nexec make test\n  x  rm -rf ~\nEXEC\tid\nexecute\n# exec no\nbreak\n",
			"pick 1234 one\n" + execPrefix + "exec make test\n" + execPrefix + "x  rm -rf ~\n" + execPrefix + "EXEC\tid\nexecute\n# exec no\nbreak\n", true, "3 exec lines"},
		{"rebase-merge/git-rebase-todo.backup", "x true\r\n", execPrefix + "x true\r\n", true, `"x true"`},
		{"sequencer/todo", "pick 1 a\nexec\n", "pick 1 a\n" + execPrefix + "exec\n", true, "1 exec line"},
		{"worktrees/wt/rebase-merge/git-rebase-todo", "exec a\n", execPrefix + "exec a\n", true, "exec a"},
		{"rebase-merge/git-rebase-todo", "pick 1 a\n", "pick 1 a\n", true, ""},
		{"rebase-merge/strategy", "ort\n", "ort\n", true, ""},
		{"rebase-apply/strategy", "ours", "ours\n", true, ""},
		{"rebase-merge/strategy", "slevil\n", "", false, "git-merge-slevil"},
		{"rebase-merge/strategy", "../../x\n", "", false, "git-merge-../../x"},
		{"sequencer/opts", "[options]\n\tstrategy = ort\n\tstrategy-option = theirs\n", "[options]\n\tstrategy = ort\n\tstrategy-option = theirs\n", true, ""},
		{"sequencer/opts", "[options]\n\tstrategy = slevil\n\tsignoff = true\n", "[options]\n# disabled by toolhost, a sandboxed command wrote it: strategy = slevil\n\tsignoff = true\n", true, "slevil"},
		{"sequencer/opts", "[x \"a][\"][options]STRATEGY=\"ort\"\n", "# disabled by toolhost, a sandboxed command wrote it: [x \"a][\"][options]STRATEGY=\"ort\"\n", true, "STRATEGY"},
		{"sequencer/opts", "[options]\n\tstrategy\n", "[options]\n# disabled by toolhost, a sandboxed command wrote it: strategy\n", true, "strategy"},
		{"rebase-apply/apply-opt", "", "", true, ""},
		{"rebase-apply/apply-opt", " '--whitespace=fix' '-C1' '-p2' '--directory=sub' '--reject'", " '--whitespace=fix' '-C1' '-p2' '--directory=sub' '--reject'", true, ""},
		{"rebase-apply/apply-opt", " '--build-fake-ancestor=/home/u/.bashrc'", "", false, "build-fake-ancestor"},
		{"rebase-apply/apply-opt", " '--directory=/etc'", "", false, "apply-opt"},
		{"worktrees/wt/rebase-apply/apply-opt", " '--whitespace=fix' '--index'", "", false, "--index"},
		// Not state git --continue reads as such.
		{"refs/heads/rebase-merge/strategy", "1234\n", "1234\n", true, ""},
		{"rebase-merge/done", "exec a\n", "exec a\n", true, ""},
		{"rebase-merge/x/git-rebase-todo", "exec a\n", "exec a\n", true, ""},
	}
	for _, tc := range cases {
		out, note, kept := []byte(tc.in), "", true
		if f := stateFilter(tc.rel); f != nil {
			out, note, kept = f([]byte(tc.in))
		}
		if kept != tc.kept || (kept && string(out) != tc.want) {
			t.Errorf("%s %q: %q kept %v, want %q kept %v", tc.rel, tc.in, out, kept, tc.want, tc.kept)
		}
		if (tc.note == "") != (note == "") || !strings.Contains(note, tc.note) {
			t.Errorf("%s %q: note %q, want one naming %q", tc.rel, tc.in, note, tc.note)
		}
	}
}

// TestStateFilterWithGit: a cherry-pick of two commits stopped at a
// conflict leaves sequencer/opts; with a strategy a command wrote there,
// the operator's git cherry-pick --continue runs git-merge-<name> from
// PATH, and after disableOptsStrategy it does not. The first half shows
// the test can fail.
func TestStateFilterWithGit(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	for _, filtered := range []bool{false, true} {
		dir := t.TempDir()
		bin := filepath.Join(dir, "bin")
		mark := filepath.Join(dir, "ran")
		mustMkdir(t, bin)
		mustWrite(t, filepath.Join(bin, "git-merge-slevil"), "#!/bin/sh\ntouch "+mark+"\nexit 1\n")
		os.Chmod(filepath.Join(bin, "git-merge-slevil"), 0o755)
		repo := filepath.Join(dir, "repo")
		git := func(args ...string) (string, error) {
			cmd := exec.Command("git", args...)
			cmd.Dir = repo
			cmd.Env = append(os.Environ(), "HOME="+dir, "GIT_CONFIG_NOSYSTEM=1", "PATH="+bin+":"+os.Getenv("PATH"),
				"GIT_AUTHOR_NAME=a", "GIT_AUTHOR_EMAIL=a@example.com", "GIT_COMMITTER_NAME=a", "GIT_COMMITTER_EMAIL=a@example.com")
			out, err := cmd.CombinedOutput()
			return string(out), err
		}
		mustMkdir(t, repo)
		script := [][]string{
			{"init", "-q", "-b", "main"}, {"commit", "-q", "--allow-empty", "-m", "base"}, {"checkout", "-q", "-b", "side"},
		}
		for _, args := range script {
			if out, err := git(args...); err != nil {
				t.Fatalf("git %v: %v\n%s", args, err, out)
			}
		}
		for i, text := range []string{"side\n", "two\n"} {
			mustWrite(t, filepath.Join(repo, fmt.Sprintf("f%d", i)), text)
			git("add", ".")
			git("commit", "-q", "-m", fmt.Sprint(i))
		}
		git("checkout", "-q", "main")
		mustWrite(t, filepath.Join(repo, "f0"), "main\n")
		git("add", ".")
		git("commit", "-q", "-m", "main")
		if out, err := git("cherry-pick", "side~1", "side"); err == nil {
			t.Fatalf("the cherry-pick did not stop at its conflict:\n%s", out)
		}
		opts := filepath.Join(repo, ".git", "sequencer", "opts")
		b, err := os.ReadFile(opts) // written only when an option is set
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			t.Fatal(err)
		}
		b = append(b, "[options]\n\tstrategy = slevil\n"...)
		if filtered {
			b, _, _ = stateFilter("sequencer/opts")(b)
		}
		mustWrite(t, opts, string(b))
		mustWrite(t, filepath.Join(repo, "f0"), "resolved\n")
		git("add", "f0")
		out, _ := git("cherry-pick", "--continue")
		if ran := pathExists(mark); ran == filtered {
			t.Errorf("filtered %v: git-merge-slevil ran: %v\n%s", filtered, ran, out)
		}
	}
}

// BenchmarkSweepThrough measures the sweep of the directories bound
// through after a call (sweepThrough) in a git directory with loose
// objects in each of the 256 fan-out directories, two packs and 1,000
// branches in 10 directories: after a call that wrote nothing there
// (true), and after one that wrote an object in each of 3 fan-out
// directories and a branch (commit).
func BenchmarkSweepThrough(b *testing.B) {
	git := filepath.Join(b.TempDir(), ".git")
	for i := range 256 {
		d := filepath.Join(git, "objects", fmt.Sprintf("%02x", i))
		os.MkdirAll(d, 0o755)
		for j := range 20 {
			os.WriteFile(filepath.Join(d, fmt.Sprintf("%038x", j)), []byte("x"), 0o444)
		}
	}
	os.MkdirAll(filepath.Join(git, "objects", "pack"), 0o755)
	os.MkdirAll(filepath.Join(git, "objects", "info"), 0o755)
	for i := range 1000 {
		d := filepath.Join(git, "refs", "heads", fmt.Sprintf("team%d", i%10))
		os.MkdirAll(d, 0o755)
		os.WriteFile(filepath.Join(d, fmt.Sprintf("topic-%d", i)), []byte("0123\n"), 0o644)
	}
	time.Sleep(1100 * time.Millisecond) // the repository is older than the call
	for _, command := range []string{"true", "commit"} {
		b.Run(command, func(b *testing.B) {
			d := b.TempDir()
			os.Mkdir(filepath.Join(d, "upper"), 0o700)
			recordStage(d, git)
			i := 0
			for b.Loop() {
				i++
				b.StopTimer()
				unix.Removexattr(d, sweptAttr)
				if command == "commit" {
					for _, fan := range []string{"0a", "7f", "e3"} {
						os.WriteFile(filepath.Join(git, "objects", fan, fmt.Sprintf("c%037x", i)), []byte("x"), 0o444)
					}
					os.WriteFile(filepath.Join(git, "refs", "heads", "team3", fmt.Sprintf("new-%d", i)), []byte("0123\n"), 0o644)
				}
				b.StartTimer()
				if notes := sweepThrough(Mount{Kind: MountStage, Source: git, Target: git, Stage: d}); len(notes) > 0 {
					b.Fatal(notes)
				}
			}
		})
	}
}

// BenchmarkApplyReflog measures the application of a staged HEAD
// reflog (50,000 entries, 7.6 MB) that a commit appended a line to: the copy
// from the stage into the real git directory.
func BenchmarkApplyReflog(b *testing.B) {
	git := filepath.Join(b.TempDir(), ".git")
	os.MkdirAll(filepath.Join(git, "logs"), 0o755)
	d := b.TempDir()
	up := filepath.Join(d, "upper", "logs", "HEAD")
	for b.Loop() {
		b.StopTimer()
		os.MkdirAll(filepath.Dir(up), 0o700)
		os.WriteFile(up, nil, 0o644)
		benchReflog(b, up, 50000)
		b.StartTimer()
		if notes := applyUpper(Mount{Kind: MountStage, Source: git, Target: git, Stage: d}); len(notes) > 0 {
			b.Fatal(notes)
		}
	}
	if fi, err := os.Stat(filepath.Join(git, "logs", "HEAD")); err != nil || fi.Size() < 7<<20 {
		b.Fatalf("the reflog was not applied: %v", err)
	}
}

// TestSweepLinksBounded: a tree deeper than the sweep reads is not
// walked past its bound, and the sweep says so rather than stay silent.
func TestSweepLinksBounded(t *testing.T) {
	refs := filepath.Join(t.TempDir(), "refs")
	deep := refs
	for i := range sweepMaxDepth + 2 {
		deep = filepath.Join(deep, fmt.Sprint(i%10))
	}
	mustMkdir(t, deep)
	if err := os.Symlink("/elsewhere", filepath.Join(deep, "link")); err != nil {
		t.Fatal(err)
	}
	removed, err := sweepLinks(refs, time.Now().Add(-time.Minute))
	if err == nil || !strings.Contains(err.Error(), "directories deep") {
		t.Errorf("a link %d directories deep: removed %v, err %v; want the bound named", sweepMaxDepth+2, removed, err)
	}
}
