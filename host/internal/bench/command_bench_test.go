package bench

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/toolhost/toolhost/host/internal/config"
	"github.com/toolhost/toolhost/host/internal/confine"
	"github.com/toolhost/toolhost/host/internal/confine/spec"
	"github.com/toolhost/toolhost/host/internal/engine"
	"github.com/toolhost/toolhost/host/internal/readcache"
	"github.com/toolhost/toolhost/host/internal/sandbox"
	"github.com/toolhost/toolhost/internal/testplugin"
)

// BenchmarkRunCommand: run_command through the whole engine (schema,
// sandbox check of cwd, plugin, process group, capture, sanitize) beside
// exec.Command running the same shell command and collecting its output.
// The confined cases run the command under run_command's default sandbox
// and are compared with the same call unconfined: the
// ratio is what confinement costs, and added-ms/op its start-up. The
// confined case takes launchers started ahead of need, as the host
// does, back to back; confined_spaced the same, 200 calls 25 ms apart
// as a model's thinking spaces them, and medians;
// confined_cold starts a launcher for each command;
// confined_spaced_in_git is confined_spaced in a git repository.
func BenchmarkRunCommand(b *testing.B) {
	e := setup(b)
	for _, bc := range []struct{ name, command string }{
		{"true", "true"},
		{"cat_1MB", "cat big.txt"},
	} {
		args, _ := json.Marshal(map[string]string{"command": bc.command})
		native := func() error {
			cmd := exec.Command("sh", "-c", bc.command)
			cmd.Dir = e.dir
			_, err := cmd.Output()
			return err
		}
		b.Run(bc.name+"/unconfined", func(b *testing.B) { pair(b, e.execute("run_command", string(args)), native) })
		confined := run(e.confined, "run_command", string(args))
		b.Run(bc.name+"/confined", func(b *testing.B) {
			pairNamed(b, confined, e.execute("run_command", string(args)), "unconfined")
		})
		b.Run(bc.name+"/confined_spaced", func(b *testing.B) {
			pairSpaced(b, confined, e.execute("run_command", string(args)), "unconfined", 25*time.Millisecond)
		})
		b.Run(bc.name+"/confined_cold", func(b *testing.B) {
			pairNamed(b, run(e.cold, "run_command", string(args)), e.execute("run_command", string(args)), "unconfined")
		})
	}
	// In a git repository, where agents work, the command sees the git
	// directory through a stage of its own (an overlay whose upper layer
	// is in the state directory), which each call makes and applies.
	args, _ := json.Marshal(map[string]string{"command": "true"})
	repo := gitRepoEngine(b, e)
	b.Run("true/confined_spaced_in_git", func(b *testing.B) {
		pairSpaced(b, run(repo, "run_command", string(args)), e.execute("run_command", string(args)), "unconfined", 25*time.Millisecond)
	})
}

// gitRepoEngine is e's confined engine with a git repository of its own
// as its root, and its own warm launchers.
func gitRepoEngine(b *testing.B, e *env) *engine.Engine {
	dir := b.TempDir()
	if out, err := exec.Command("git", "init", "-q", dir).CombinedOutput(); err != nil {
		b.Skipf("git init: %v: %s", err, out)
	}
	sb, err := sandbox.New(sandbox.Config{Roots: []string{dir}, IncludeDefaultDenies: true})
	if err != nil {
		b.Fatal(err)
	}
	c := benchConfiner(b, e.state, true)
	b.Cleanup(c.Close)
	return engine.New(engine.Config{Registry: e.reg, Sandbox: sb, Policy: benchPolicy(), ReadCache: func(string) *readcache.Cache { return e.reads }, Confiner: c})
}

// run is env.execute on another engine.
func run(eng *engine.Engine, tool, args string) func() error {
	b := engine.Batch{Conversation: "bench", Calls: []engine.Call{{ID: "b", Name: tool, Arguments: json.RawMessage(args)}}}
	approve := engine.ApproverFunc(func(context.Context, []engine.Confirmation) (engine.Decision, error) {
		return engine.ApproveAll("bench"), nil
	})
	return func() error {
		_, rs := eng.Process(context.Background(), b, approve, engine.RunOptions{})
		if r := rs[0]; !r.OK {
			return r.Error
		}
		return nil
	}
}

// benchConfiner is run_command's default sandbox, launched by the
// toolhost binary (make bench's, or one built for the run), with the
// default limits: the memory and process limits give each command a
// cgroup where the machine has one, whose cost is part of the start-up.
// warm starts launchers ahead of need, as the host does.
func benchConfiner(b *testing.B, state string, warm bool) *confine.Confiner {
	bin, err := testplugin.Toolhost(state)
	if err != nil {
		b.Fatal(err)
	}
	home, _ := os.UserHomeDir()
	s := confine.Settings{
		Mode: confine.ModeWorkspaceWrite, Network: confine.NetworkOff, StateDir: state,
		Home: home, Path: os.Getenv("PATH"),
		Limits: confine.Limits{
			FileSizeBytes: spec.DefaultFileSizeBytes,
			OpenFiles:     spec.DefaultOpenFiles,
			MemoryBytes:   spec.DefaultMemoryBytes,
			Pids:          spec.DefaultPids,
		},
	}
	s.Environ, _ = config.Environment{}.Sanitize(os.Environ())
	support := confine.Probe(context.Background())
	if err := support.Require(s.Mode, s.Network); err != nil {
		b.Fatalf("this machine cannot confine commands: %v", err)
	}
	c := confine.NewConfiner(s, support, bin, nil)
	if warm {
		c.PoolLaunchers(confine.SmallLauncherBeside(bin))
		c.Warm()
	}
	return c
}
