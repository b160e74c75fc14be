package hostfn

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolhost/toolhost/abi"
	"github.com/toolhost/toolhost/host/internal/config"
	"github.com/toolhost/toolhost/host/internal/confine"
	"github.com/toolhost/toolhost/host/internal/jobs"
	"github.com/toolhost/toolhost/host/internal/proc"
)

// execEnv is a call that runs commands unconfined in a fresh workspace,
// with a sanitized environment holding PATH.
func execEnv(t *testing.T) (*workspace, *Env) {
	t.Helper()
	w := newWorkspace(t, map[string]string{"sub/f.txt": "x\n"})
	env := w.env("call-exec")
	env.Commands = Commands{
		Confiner:       confine.Unconfined("tests of proc_exec"),
		Environ:        []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "LC_ALL=C"},
		NonInteractive: config.DefaultNonInteractiveEnv(),
		MaxTimeout:     10 * time.Minute,
	}
	return w, env
}

// execCall runs req through proc_exec as a guest would, within the
// call's deadline d.
func execCall(t *testing.T, env *Env, d time.Duration, req abi.ExecRequest) (abi.ExecResult, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	return execRaw(t, ctx, env, abi.AppendExecRequest(nil, req))
}

func execRaw(t *testing.T, ctx context.Context, env *Env, raw []byte) (abi.ExecResult, error) {
	t.Helper()
	g := newGuest(len(raw) + 64)
	p, n := g.put(raw)
	resp, err := g.call(ctx, env, abi.FnProcExec, p, n, 0)
	if err != nil {
		return abi.ExecResult{}, err
	}
	var r abi.ExecResult
	if err := json.Unmarshal(resp, &r); err != nil {
		t.Fatalf("response %s: %v", resp, err)
	}
	return r, nil
}

func mustExec(t *testing.T, env *Env, req abi.ExecRequest) abi.ExecResult {
	t.Helper()
	r, err := execCall(t, env, time.Minute, req)
	if err != nil {
		t.Fatalf("proc_exec %q: %v", req.Command, err)
	}
	return r
}

func strp(s string) *string { return &s }

func needBash(t *testing.T) {
	t.Helper()
	if _, err := os.Stat(bashPath); err != nil {
		t.Skipf("no %s here: commands run with sh, without pipefail", bashPath)
	}
}

// The command runs in bash with pipefail, in the directory asked for,
// with the variables the call adds over the non-interactive defaults,
// with the stdin it is given or an empty one.
func TestProcExecRuns(t *testing.T) {
	needBash(t)
	_, env := execEnv(t)
	tests := []struct {
		name     string
		req      abi.ExecRequest
		wantOut  string
		wantCode int
	}{
		{"FR-EXE-06/pipefail", abi.ExecRequest{Command: "false | true"}, "", 1},
		{"pipefail shown", abi.ExecRequest{Command: "echo $BASH_VERSION >/dev/null; set -o | grep pipefail | tr -s ' \t' ' '"}, "pipefail on\n", 0},
		{"cwd", abi.ExecRequest{Command: "cat f.txt; basename \"$PWD\"", Cwd: "sub"}, "x\nsub\n", 0},
		{"env reaches the command", abi.ExecRequest{Command: `printf '%s|%s\n' "$GREETING" "$EMPTY"`, Env: map[string]string{"GREETING": "hello 'world' $HOME", "EMPTY": ""}}, "hello 'world' $HOME|\n", 0},
		{"non-interactive defaults", abi.ExecRequest{Command: `echo "$CI $GIT_TERMINAL_PROMPT $PAGER $DEBIAN_FRONTEND $TERM"`}, "1 0 cat noninteractive dumb\n", 0},
		{"the call's variables win", abi.ExecRequest{Command: `echo "$CI $TERM"`, Env: map[string]string{"CI": "0", "TERM": "xterm"}}, "0 xterm\n", 0},
		{"stdin reaches cat", abi.ExecRequest{Command: "cat", Stdin: strp("line one\nline two")}, "line one\nline two", 0},
		{"read without stdin ends at once", abi.ExecRequest{Command: "read x; echo \"status $?\""}, "status 1\n", 0},
		{"stdin not read", abi.ExecRequest{Command: "echo ok", Stdin: strp(strings.Repeat("y", 1<<20))}, "ok\n", 0},
		{"quotes survive the wrapping", abi.ExecRequest{Command: `echo 'it'"'"'s' "a\"b"`}, "it's a\"b\n", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			began := time.Now()
			r := mustExec(t, env, tt.req)
			if r.Stdout != tt.wantOut || r.ExitCode != tt.wantCode {
				t.Errorf("stdout %q exit %d, want %q exit %d (stderr %q)", r.Stdout, r.ExitCode, tt.wantOut, tt.wantCode, r.Stderr)
			}
			if r.Shell != "bash" || !r.Pipefail || r.Killed != "" {
				t.Errorf("shell %q pipefail %v killed %q, want bash, true, none", r.Shell, r.Pipefail, r.Killed)
			}
			if d := time.Since(began); d > 10*time.Second {
				t.Errorf("took %v", d)
			}
		})
	}
}

// A command's own timeout stops it, and the call returns normally with
// its output, killed="timeout" and a note saying which limit it was;
// the operator's maximum and the call's deadline bound the timeout too.
func TestProcExecTimeout(t *testing.T) {
	_, env := execEnv(t)
	env.Commands.MaxTimeout = 700 * time.Millisecond
	tests := []struct {
		name     string
		deadline time.Duration
		timeout  int64
		note     string
	}{
		{"timeout_ms", time.Minute, 300, "its timeout_ms (300 ms)"},
		{"clamped to max_timeout_ms", time.Minute, 60_000, "max_timeout_ms"},
		// Past what a Duration holds it overflowed to a negative one and
		// ran unclamped to the call's deadline.
		{"too large for a Duration, clamped", time.Minute, 9223372036855, "max_timeout_ms"},
		{"the call's deadline", 500 * time.Millisecond, 0, "shell_commands_seconds"},
		{"max_timeout_ms for 0", time.Minute, 0, "max_timeout_ms allows;"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			began := time.Now()
			r, err := execCall(t, env, tt.deadline, abi.ExecRequest{Command: "echo started; sleep 10", TimeoutMS: tt.timeout})
			took := time.Since(began)
			if err != nil {
				t.Fatalf("a command stopped by its timeout failed the call: %v", err)
			}
			if took > 5*time.Second {
				t.Errorf("sleep 10 stopped after %v", took)
			}
			if r.Killed != abi.KilledTimeout || r.ExitCode != -1 || r.Stdout != "started\n" {
				t.Errorf("killed %q exit %d stdout %q, want timeout, -1, started", r.Killed, r.ExitCode, r.Stdout)
			}
			if !strings.Contains(r.Stderr+r.StderrTail, tt.note) {
				t.Errorf("stderr %q does not name %q", r.Stderr+r.StderrTail, tt.note)
			}
		})
	}
	// A cancelled call kills the command: killed="cancel".
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(300*time.Millisecond, cancel)
	began := time.Now()
	r, err := execRaw(t, ctx, env, abi.AppendExecRequest(nil, abi.ExecRequest{Command: "sleep 10"}))
	if err != nil || r.Killed != abi.KilledCancel || time.Since(began) > 5*time.Second {
		t.Errorf("cancelled: %+v, %v after %v; want killed=cancel at once", r, err, time.Since(began))
	}
}

// Variables that change what runs unseen, toolhost's own, and those the
// secret filter hides are refused, each naming the variable and why.
func TestProcExecEnvRefused(t *testing.T) {
	_, env := execEnv(t)
	env.Commands.EnvRules = config.Environment{Keep: []string{"MY_PASSPHRASE"}}
	tests := []struct {
		name string
		env  map[string]string
		why  string
	}{
		{"LD_PRELOAD", map[string]string{"LD_PRELOAD": "/tmp/x.so"}, "dynamic loader"},
		{"ld_library_path, any case", map[string]string{"ld_library_path": "/tmp"}, "dynamic loader"},
		{"TOOLHOST_X", map[string]string{"TOOLHOST_X": "1"}, "toolhost's own"},
		{"BASH_ENV", map[string]string{"BASH_ENV": "/tmp/x"}, "bash runs"},
		{"BASH_FUNC_", map[string]string{"BASH_FUNC_ls": "() { id; }"}, "function"},
		{"PYTHONPATH", map[string]string{"PYTHONPATH": "src"}, "imports modules"},
		{"PATH", map[string]string{"PATH": "/tmp"}, "which program"},
		{"GIT_SSH_COMMAND", map[string]string{"GIT_SSH_COMMAND": "sh -c id"}, "git runs"},
		{"a secret-looking name", map[string]string{"GITHUB_TOKEN": "x"}, "secret filter"},
		{"a denylisted name", map[string]string{"AWS_SECRET_ACCESS_KEY": "x"}, "denylist glob"},
		{"a secret name", map[string]string{"DB_PASSWORD": "x"}, "secret filter"},
		{"a secret name kept only for another", map[string]string{"OTHER_PASSPHRASE": "x"}, "secret-looking name"},
		{"not a name", map[string]string{"1X": "x"}, "not a variable name"},
		{"a name with =", map[string]string{"A=B": "x"}, "not a variable name"},
		{"a NUL in the value", map[string]string{"A": "x\x00y"}, "NUL"},
		{"a long value", map[string]string{"A": strings.Repeat("v", 32<<10+1)}, "more than"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := execCall(t, env, time.Minute, abi.ExecRequest{Command: "true", Env: tt.env})
			he := hostErr(t, err)
			var name string
			for k := range tt.env {
				name = k
			}
			if he.Kind != abi.KindBadArgs || !strings.Contains(he.Message, name) || !strings.Contains(he.Message, tt.why) {
				t.Errorf("%s %q, want BadArgs naming %s and %q", he.Kind, he.Message, name, tt.why)
			}
		})
	}
	// What keep passes, a call may set; the count and total are bounded.
	if r := mustExec(t, env, abi.ExecRequest{Command: `echo "$MY_PASSPHRASE"`, Env: map[string]string{"MY_PASSPHRASE": "p"}}); r.Stdout != "p\n" {
		t.Errorf("a kept name: %q", r.Stdout)
	}
	many := map[string]string{}
	for i := range 65 {
		many["V"+strings.Repeat("X", i)] = "1"
	}
	if _, err := execCall(t, env, time.Minute, abi.ExecRequest{Command: "true", Env: many}); !strings.Contains(hostErr(t, err).Message, "65 variables") {
		t.Errorf("65 variables: %v", err)
	}
	big := map[string]string{}
	for i := range 5 {
		big["V"+strings.Repeat("X", i)] = strings.Repeat("v", 30<<10)
	}
	if _, err := execCall(t, env, time.Minute, abi.ExecRequest{Command: "true", Env: big}); !strings.Contains(hostErr(t, err).Message, "together") {
		t.Errorf("150 KiB of variables: %v", err)
	}
}

// The request is untrusted input: decoded strictly, bounded before it
// is read, refused in a dry run.
func TestProcExecRequestRefused(t *testing.T) {
	_, env := execEnv(t)
	ctx := context.Background()
	for _, tt := range []struct {
		name, raw, in string
	}{
		{"unknown field", `{"command":"true","shell":"zsh"}`, "shell"},
		{"not JSON", `{"command":`, "not an exec request"},
		{"two objects", `{"command":"true"}{"command":"id"}`, "more after"},
		{"empty command", `{"command":"  "}`, "empty"},
		{"negative timeout", `{"command":"true","timeout_ms":-1}`, "negative"},
		{"background and report", `{"command":"true","background":true,"report":true}`, "report"},
		{"background without jobs", `{"command":"true","background":true}`, "no job manager"},
		{"stdin too large", `{"command":"cat","stdin":"` + strings.Repeat("a", 1<<20+1) + `"}`, "stdin"},
		{"cwd outside", `{"command":"true","cwd":"../"}`, ".."},
		{"too long once quoted", `{"command":"echo ` + strings.Repeat("'", 40<<10) + `"}`, "once quoted"},
		{"too long", `{"command":"` + strings.Repeat("a", 128<<10+1) + `"}`, "longer than"},
	} {
		_, err := execRaw(t, ctx, env, []byte(tt.raw))
		if he := hostErr(t, err); !strings.Contains(he.Message, tt.in) {
			t.Errorf("%s: %s %q, want it to name %q", tt.name, he.Kind, he.Message, tt.in)
		}
	}
	g := newGuest(64)
	p, _ := g.put([]byte("{}"))
	if _, err := g.call(ctx, env, abi.FnProcExec, p, uint64(maxExecRequestBytes+1), 0); hostErr(t, err).Status != abi.StatusTooLarge {
		t.Errorf("an oversized request: %v, want too large", err)
	}
	env.DryRun = true
	if _, err := execRaw(t, ctx, env, []byte(`{"command":"true"}`)); err == nil {
		t.Error("a dry run ran a command")
	}
}

// An output larger than the limit keeps its head and its tail, where the
// error is, and says how much was left out.
func TestProcExecLargeOutput(t *testing.T) {
	_, env := execEnv(t)
	env.Limits.MaxOutputBytes = 64 << 10
	limit := int(env.Call.outputLimit())
	r := mustExec(t, env, abi.ExecRequest{Command: "yes 'a line of the build log' | head -n 200000; echo 'error: the build failed at the end'; exit 2"})
	const line = "a line of the build log\n"
	wantBytes := int64(200000*len(line) + len("error: the build failed at the end\n"))
	if r.ExitCode != 2 || r.StdoutBytes != wantBytes || r.StdoutLines != 200001 || !r.StdoutCut {
		t.Fatalf("exit %d, %d bytes, %d lines, cut %v; want 2, %d, 200001, true", r.ExitCode, r.StdoutBytes, r.StdoutLines, r.StdoutCut, wantBytes)
	}
	if len(r.Stdout) != limit || !strings.HasPrefix(r.Stdout, line) {
		t.Errorf("head: %d bytes, want %d of the log", len(r.Stdout), limit)
	}
	if len(r.StdoutTail) != limit || !strings.HasSuffix(r.StdoutTail, line+"error: the build failed at the end\n") {
		t.Errorf("tail: %d bytes ending %q", len(r.StdoutTail), r.StdoutTail[max(0, len(r.StdoutTail)-80):])
	}
	if r.OutputID != "" {
		t.Errorf("output id %q without a job manager to keep it", r.OutputID)
	}
	// A short output is whole: no cut, no id.
	if r := mustExec(t, env, abi.ExecRequest{Command: "echo a; echo b >&2"}); r.StdoutCut || r.StderrCut || r.StdoutLines != 1 || r.StderrLines != 1 || r.StdoutTail != "" {
		t.Errorf("a short output: %+v", r)
	}
}

// With GIT_TERMINAL_PROMPT=0 git fails at once where a server asks for a
// password, instead of waiting for a terminal.
func TestProcExecGitDoesNotPrompt(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git here")
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("WWW-Authenticate", `Basic realm="x"`)
		w.WriteHeader(http.StatusUnauthorized)
	}))
	defer srv.Close()
	_, env := execEnv(t)
	began := time.Now()
	r := mustExec(t, env, abi.ExecRequest{Command: "git -c credential.helper= ls-remote " + srv.URL + "/repo.git", TimeoutMS: 20_000})
	if r.ExitCode == 0 || r.Killed != "" || time.Since(began) > 10*time.Second {
		t.Fatalf("git: exit %d killed %q after %v; want a failure at once", r.ExitCode, r.Killed, time.Since(began))
	}
	if !strings.Contains(r.Stderr, "terminal prompts disabled") {
		t.Errorf("stderr %q does not say prompts are disabled", r.Stderr)
	}
}

// The report file is private to the command, outside the workspace, and
// what the command wrote there comes back; a link the command put in its
// place is not followed.
func TestProcExecReport(t *testing.T) {
	w, env := execEnv(t)
	r := mustExec(t, env, abi.ExecRequest{Command: `test -f "$TOOLHOST_REPORT" && test ! -s "$TOOLHOST_REPORT" && echo '<testsuite/>' > "$TOOLHOST_REPORT"; echo "$TOOLHOST_REPORT"`, Report: true})
	if r.Report != "<testsuite/>\n" || r.ReportBytes != 13 || r.ReportCut {
		t.Fatalf("report %q (%d bytes, cut %v), stdout %q stderr %q", r.Report, r.ReportBytes, r.ReportCut, r.Stdout, r.Stderr)
	}
	path := strings.TrimSpace(r.Stdout)
	if strings.HasPrefix(path, w.dir) {
		t.Errorf("the report %s is in the workspace", path)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("the report %s outlived the call: %v", path, err)
	}
	secret := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(secret, []byte("host secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, cmd := range []string{`ln -sf ` + secret + ` "$TOOLHOST_REPORT"`, `rm "$TOOLHOST_REPORT"; mkfifo "$TOOLHOST_REPORT"`} {
		r = mustExec(t, env, abi.ExecRequest{Command: cmd, Report: true})
		if r.Report != "" || r.ReportBytes != 0 {
			t.Errorf("%s: report %q (%d bytes), want none", cmd, r.Report, r.ReportBytes)
		}
	}
	env.Limits.MaxScanBytes = 1000
	r = mustExec(t, env, abi.ExecRequest{Command: `head -c 5000 /dev/zero > "$TOOLHOST_REPORT"`, Report: true})
	if len(r.Report) != 1000 || r.ReportBytes != 5000 || !r.ReportCut {
		t.Errorf("a long report: %d bytes of %d, cut %v", len(r.Report), r.ReportBytes, r.ReportCut)
	}
	// Without report the variable is not there.
	if r := mustExec(t, env, abi.ExecRequest{Command: `echo "[${TOOLHOST_REPORT-unset}]"`}); r.Stdout != "[unset]\n" {
		t.Errorf("without report: %q", r.Stdout)
	}
}

// BenchmarkExecShell is what running a command in bash with pipefail
// (exec'd from sh -c) costs over sh -c alone, for a command that does
// nothing: the whole of proc_exec's wrapping.
func BenchmarkExecShell(b *testing.B) {
	if _, err := os.Stat(bashPath); err != nil {
		b.Skip("no bash")
	}
	_, wrapped := execShell("true")
	for _, bm := range []struct{ name, command string }{{"sh", "true"}, {"bash-pipefail", wrapped}} {
		b.Run(bm.name, func(b *testing.B) {
			spec := proc.Spec{Command: bm.command, Dir: b.TempDir(), Env: []string{"PATH=" + os.Getenv("PATH")}}
			for b.Loop() {
				if res, err := proc.Run(context.Background(), spec); err != nil || res.ExitCode != 0 {
					b.Fatal(res, err)
				}
			}
		})
	}
}

// execJobs gives env a job manager keeping outputs in a fresh directory.
func execJobs(t *testing.T, env *Env) *jobs.Manager {
	t.Helper()
	m, err := jobs.New(jobs.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	env.Commands.Jobs = m
	env.Call.Conversation = "conv-exec"
	return m
}

// A cut output names where the whole of it is kept, and job_output reads
// it there by that id; a whole one needs no id.
func TestProcExecKeptOutput(t *testing.T) {
	_, env := execEnv(t)
	m := execJobs(t, env)
	env.Limits.MaxOutputBytes = 4 << 10
	r := mustExec(t, env, abi.ExecRequest{Command: "seq 1 20000; echo the end"})
	if !r.StdoutCut || r.OutputID == "" {
		t.Fatalf("cut %v, output id %q; want an id for a cut output", r.StdoutCut, r.OutputID)
	}
	var whole strings.Builder
	for from := int64(0); ; {
		out, err := m.Do(context.Background(), "conv-exec", abi.JobRequest{Op: abi.JobOutputOp, ID: r.OutputID, SinceByte: &from, MaxBytes: 1 << 20})
		if err != nil {
			t.Fatal(err)
		}
		whole.WriteString(out.Job.Output)
		if out.Job.NextByte == from {
			break
		}
		from = out.Job.NextByte
	}
	if int64(whole.Len()) != r.StdoutBytes || !strings.HasSuffix(whole.String(), "20000\nthe end\n") {
		t.Errorf("kept %d bytes ending %q, want the %d written", whole.Len(), whole.String()[max(0, whole.Len()-20):], r.StdoutBytes)
	}
	if r := mustExec(t, env, abi.ExecRequest{Command: "echo short"}); r.OutputID != "" {
		t.Errorf("a whole output got id %q", r.OutputID)
	}
}

// A background command returns at once with a job id; the job, not the
// call, runs it, with the same shell, variables and stdin.
func TestProcExecBackground(t *testing.T) {
	_, env := execEnv(t)
	m := execJobs(t, env)
	began := time.Now()
	r := mustExec(t, env, abi.ExecRequest{Command: `sleep 0.3; cat; echo "$GREETING"; false | true`, Background: true, Env: map[string]string{"GREETING": "from the job"}, Stdin: strp("fed\n")})
	if r.JobID == "" || time.Since(began) > 2*time.Second {
		t.Fatalf("background: %+v after %v", r, time.Since(began))
	}
	zero := int64(0)
	out, err := m.Do(context.Background(), "conv-exec", abi.JobRequest{Op: abi.JobOutputOp, ID: r.JobID, SinceByte: &zero, WaitMS: 10_000})
	for err == nil && out.Job.Running {
		out, err = m.Do(context.Background(), "conv-exec", abi.JobRequest{Op: abi.JobOutputOp, ID: r.JobID, SinceByte: &zero, WaitMS: 10_000})
	}
	if err != nil {
		t.Fatal(err)
	}
	wantCode := 0
	if r.Pipefail {
		wantCode = 1
	}
	if out.Job.Output != "fed\nfrom the job\n" || out.Job.ExitCode == nil || *out.Job.ExitCode != wantCode {
		t.Errorf("job: output %q exit %v, want the stdin, the variable and exit %d", out.Job.Output, out.Job.ExitCode, wantCode)
	}
}
