//go:build linux

package confine

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// BenchmarkStagedGitDir measures what staging the git directory costs a
// call, Build, launch and the cleanup that applies the stage included:
// `true`, and `git commit` of one file, in a repository, with the git
// directory staged (as Build does) and bound writable with its hooks,
// config and info read-only (as Build did before), in the same run.
func BenchmarkStagedGitDir(b *testing.B) {
	if _, err := exec.LookPath("git"); err != nil {
		b.Skip("git is not installed")
	}
	home, _ := os.UserHomeDir()
	for _, layout := range []string{"staged", "bound"} {
		for _, command := range []string{"true", "commit"} {
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
					if layout == "bound" {
						p.Mounts = stageBound(p.Mounts)
					}
					p.Env = append(p.Env, "GIT_AUTHOR_NAME=b", "GIT_AUTHOR_EMAIL=b@example.com", "GIT_COMMITTER_NAME=b", "GIT_COMMITTER_EMAIL=b@example.com")
					line := "true"
					if command == "commit" {
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
	tmp, err := b.makeDirs("c1")
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
