//go:build linux

package confine

import (
	"context"
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
