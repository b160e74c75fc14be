//go:build linux

package hostfn

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolhost/toolhost/abi"
	"github.com/toolhost/toolhost/host/internal/confine"
	"github.com/toolhost/toolhost/host/internal/confine/launcher"
	"github.com/toolhost/toolhost/host/internal/confine/spec"
)

// TestMain makes the test binary the confined launcher when a test
// starts it as one, as cmd/toolhost does for the toolhost binary.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == spec.LauncherArg {
		os.Exit(launcher.Main(os.Args))
	}
	os.Exit(m.Run())
}

// execConfinedEnv is execEnv with commands confined (workspace-write, no
// network), the test binary as the launcher; it skips where the kernel
// cannot confine.
func execConfinedEnv(t *testing.T) (*workspace, *Env) {
	t.Helper()
	w, env := execEnv(t)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	state, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	home := t.TempDir()
	support := confine.Probe(context.Background())
	if err := support.Require(confine.ModeWorkspaceWrite, confine.NetworkOff); err != nil {
		t.Skipf("this kernel cannot confine commands: %v", err)
	}
	s := confine.Settings{Mode: confine.ModeWorkspaceWrite, Network: confine.NetworkOff, StateDir: state, Home: home, Path: os.Getenv("PATH"), Environ: env.Commands.Environ}
	env.Commands.Confiner = confine.NewConfiner(s, support, self, nil)
	return w, env
}

// Confined, the command still gets bash with pipefail, the call's
// variables over the defaults, and a report file in its private tmp
// that the host reads back; the tmp goes with the call.
func TestProcExecConfined(t *testing.T) {
	needBash(t)
	_, env := execConfinedEnv(t)
	r := mustExec(t, env, abi.ExecRequest{Command: "false | true"})
	if r.ExitCode != 1 || r.Shell != "bash" || !r.Pipefail {
		t.Errorf("false | true: exit %d shell %q pipefail %v (stderr %q)", r.ExitCode, r.Shell, r.Pipefail, r.Stderr)
	}
	r = mustExec(t, env, abi.ExecRequest{Command: `echo "$GREETING $CI $TMPDIR"`, Env: map[string]string{"GREETING": "hi", "CI": "yes"}})
	if r.Stdout != "hi yes /tmp\n" {
		t.Errorf("env: %q (stderr %q)", r.Stdout, r.Stderr)
	}
	r = mustExec(t, env, abi.ExecRequest{Command: `echo "$TOOLHOST_REPORT"; echo '<testsuite tests="1"/>' > "$TOOLHOST_REPORT"`, Report: true})
	if r.Report != "<testsuite tests=\"1\"/>\n" || !strings.HasPrefix(r.Stdout, "/tmp/"+reportPrefix) {
		t.Errorf("report %q, path %q (stderr %q)", r.Report, r.Stdout, r.Stderr)
	}
	left, _ := filepath.Glob(filepath.Join(env.Commands.Confiner.Settings().StateDir, "sandbox", "tmp", "*", reportPrefix+"*"))
	if len(left) != 0 {
		t.Errorf("reports left after the call: %v", left)
	}
	// A link to a file of the host's, which the command cannot read, is
	// not followed by the host either.
	secret := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(secret, []byte("host secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	r = mustExec(t, env, abi.ExecRequest{Command: `ln -sf ` + secret + ` "$TOOLHOST_REPORT"`, Report: true})
	if r.Report != "" {
		t.Errorf("a link to %s was read: %q", secret, r.Report)
	}
	began := time.Now()
	r, err := execCall(t, env, time.Minute, abi.ExecRequest{Command: "sleep 10", TimeoutMS: 300})
	if err != nil || r.Killed != abi.KilledTimeout || time.Since(began) > 5*time.Second {
		t.Errorf("timeout: %+v, %v after %v", r, err, time.Since(began))
	}
}

// Confined, stdin reaches the command whole, ends where it ends, and a
// command that does not read it is not held by it.
func TestProcExecConfinedStdin(t *testing.T) {
	_, env := execConfinedEnv(t)
	for _, tt := range []struct{ command, stdin, want string }{
		{"cat", "to the sandbox\n", "to the sandbox\n"},
		{"wc -c; cat", strings.Repeat("z", 1<<20), "1048576\n"},
		{"read a; read b; echo \"[$a] [$b] $?\"", "one", "[one] [] 1\n"},
		{"echo ok", strings.Repeat("n", 1<<20), "ok\n"},
		{"cat | tr a-z A-Z", "piped", "PIPED"},
	} {
		r := mustExec(t, env, abi.ExecRequest{Command: tt.command, Stdin: strp(tt.stdin)})
		if r.Stdout != tt.want || r.ExitCode != 0 {
			t.Errorf("%s: stdout %q exit %d, want %q (stderr %q)", tt.command, r.Stdout, r.ExitCode, tt.want, r.Stderr)
		}
	}
	if r := mustExec(t, env, abi.ExecRequest{Command: "read x; echo \"status $?\""}); r.Stdout != "status 1\n" {
		t.Errorf("no stdin: %q", r.Stdout)
	}
}

// A confined background command runs in the sandbox prepared by its
// call, which the job releases when it ends: its private tmp (its stdin
// with it) is gone then, not when the call returned.
func TestProcExecConfinedBackground(t *testing.T) {
	_, env := execConfinedEnv(t)
	m := execJobs(t, env)
	r := mustExec(t, env, abi.ExecRequest{Command: "sleep 0.5; cat; ls /tmp | grep -c toolhost-stdin-", Background: true, Stdin: strp("in the job\n")})
	if r.JobID == "" {
		t.Fatalf("no job: %+v", r)
	}
	tmps := filepath.Join(env.Commands.Confiner.Settings().StateDir, "sandbox", "tmp", "*")
	if left, _ := filepath.Glob(tmps); len(left) != 1 {
		t.Errorf("while the job runs, the tmps are %v; want its one", left)
	}
	zero := int64(0)
	var out abi.JobResult
	var err error
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); {
		if out, err = m.Do(context.Background(), "conv-exec", abi.JobRequest{Op: abi.JobOutputOp, ID: r.JobID, SinceByte: &zero, WaitMS: 5000}); err != nil || !out.Job.Running {
			break
		}
	}
	if err != nil || out.Job.Running || out.Job.Output != "in the job\n1\n" {
		t.Fatalf("job: %+v, %v", out.Job, err)
	}
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if left, _ := filepath.Glob(tmps); len(left) == 0 {
			return
		}
	}
	left, _ := filepath.Glob(tmps)
	t.Errorf("after the job ended, the tmps are %v; want none", left)
}
