package hostfn

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/tetratelabs/wazero/api"

	"github.com/toolhost/toolhost/abi"
	"github.com/toolhost/toolhost/host/internal/confine"
	"github.com/toolhost/toolhost/host/internal/jobs"
	"github.com/toolhost/toolhost/host/internal/proc"
)

// Bounds of a proc_exec request, checked before anything runs.
const (
	// maxExecRequestBytes is the most a request may be: the longest
	// command, its stdin and its variables, with room for JSON's escapes
	// (\u0000 is six bytes for one).
	maxExecRequestBytes = 8 << 20
	// maxStdinBytes is the most stdin a command may be given; more
	// belongs in a file the command reads.
	maxStdinBytes = 1 << 20
	maxEnvVars    = 64
	maxEnvValue   = 32 << 10
	maxEnvTotal   = 128 << 10
	// maxReportBytes bounds what is read of $TOOLHOST_REPORT, below the
	// call's scan limit.
	maxReportBytes = 8 << 20
	// reportPrefix begins the name of a confined command's report file
	// in its private tmp.
	reportPrefix = "toolhost-report-"
	// wrapRoom is what feedStdin may add to a wrapped command.
	wrapRoom = 128
)

// bashPath is the shell proc_exec prefers: with pipefail a pipeline's
// failure is not hidden by a last command that succeeds (false | true).
const bashPath = "/bin/bash"

// envName is what a variable's name may look like: what every shell can
// set and export.
var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// refusedEnv are variables a call may not add, each with why. They change
// which code runs without the command's text showing it: what the
// dynamic loader, a shell or an interpreter loads or runs first, which
// program a name finds, and what git runs for its helpers. A model that
// needs one writes it in the command itself (NAME=value command), where
// approval and the log show it; the environment channel is not shown
// with the command.
var refusedEnv = map[string]string{
	"BASH_ENV":              "bash runs the file it names before the command",
	"ENV":                   "sh runs the file it names before the command",
	"SHELLOPTS":             "it changes how bash parses and runs the command",
	"BASHOPTS":              "it changes how bash parses and runs the command",
	"PS4":                   "bash expands it, running what it holds, while tracing",
	"IFS":                   "it changes how the shell splits every word of the command",
	"PROMPT_COMMAND":        "bash runs what it holds",
	"GCONV_PATH":            "the C library loads code from the directory it names",
	"LOCPATH":               "the C library loads locale data from the directory it names",
	"NLSPATH":               "the C library loads message catalogs from where it names",
	"HOSTALIASES":           "it changes what host names resolve to",
	"RES_OPTIONS":           "it changes how host names are resolved",
	"GLIBC_TUNABLES":        "it changes the C library's behaviour, and has been a way to take over setuid programs",
	"PYTHONSTARTUP":         "Python runs the file it names",
	"PYTHONHOME":            "Python loads its standard library from the directory it names",
	"PYTHONPATH":            "Python imports modules from the directories it names before the project's and the system's",
	"NODE_OPTIONS":          "node takes options from it, --require among them, which loads code first",
	"PERL5OPT":              "perl takes options from it, -M among them, which loads code first",
	"PERL5LIB":              "perl loads modules from the directories it names first",
	"RUBYOPT":               "ruby takes options from it, -r among them, which loads code first",
	"RUBYLIB":               "ruby loads libraries from the directories it names first",
	"JAVA_TOOL_OPTIONS":     "the JVM takes options from it, -javaagent among them, which loads code first",
	"PATH":                  "it decides which program each name of the command runs",
	"GIT_SSH":               "git runs the program it names",
	"GIT_SSH_COMMAND":       "git runs the command it holds",
	"GIT_PROXY_COMMAND":     "git runs the command it holds",
	"GIT_ASKPASS":           "git runs the program it names",
	"SSH_ASKPASS":           "ssh runs the program it names",
	"GIT_EXEC_PATH":         "git runs its subcommands from the directory it names",
	"GIT_EXTERNAL_DIFF":     "git runs the program it names",
	"GIT_CONFIG_PARAMETERS": "git takes configuration from it, some of which runs commands",
	"GIT_CONFIG_COUNT":      "git takes configuration from it, some of which runs commands",
	"GIT_CONFIG_GLOBAL":     "git reads configuration from the file it names, some of which runs commands",
	"GIT_CONFIG_SYSTEM":     "git reads configuration from the file it names, some of which runs commands",
}

// refusedEnvPrefixes are families of variables a call may not add.
var refusedEnvPrefixes = []struct{ prefix, why string }{
	{"LD_", "the dynamic loader takes libraries and options from it (LD_PRELOAD loads code into every program)"},
	{"TOOLHOST_", "toolhost's own variables are set by the host (TOOLHOST_REPORT) or configure toolhost itself"},
	{"BASH_FUNC_", "bash imports it as a function, which can take the place of any command's name"},
	{"MALLOC_", "it changes the C library's allocator"},
	{"GIT_CONFIG_KEY_", "git takes configuration from it, some of which runs commands"},
	{"GIT_CONFIG_VALUE_", "git takes configuration from it, some of which runs commands"},
}

// procExec runs one command for a plugin holding proc.exec, as an
// abi.ExecRequest (SRD FR-EXE-05/06): bash with pipefail, a timeout of
// its own, variables the call adds over non-interactive defaults, stdin
// given or empty, its whole output kept for job_output, a report file,
// or as a background job of the conversation.
func procExec(ctx context.Context, c *Call, cmds *Commands, mem api.Memory, stack []uint64) ([]byte, error) {
	if err := c.dryRunRefusal("run a command"); err != nil {
		return nil, err
	}
	if n := uint32(stack[1]); n > maxExecRequestBytes {
		return nil, fail(abi.StatusTooLarge, abi.KindBadArgs, "proc_exec: a request of %d bytes is more than the %d one may have; write long input to a file and have the command read it", n, maxExecRequestBytes)
	}
	raw, err := guestBytes(mem, uint32(stack[0]), uint32(stack[1]))
	if err != nil {
		return nil, err
	}
	var req abi.ExecRequest
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		return nil, fail(abi.StatusInvalid, abi.KindBadArgs, "proc_exec: the request is not an exec request (%v); send an abi.ExecRequest as JSON", err)
	}
	if dec.More() {
		return nil, fail(abi.StatusInvalid, abi.KindBadArgs, "proc_exec: the request has more after its JSON object; send one abi.ExecRequest")
	}
	if err := checkExec(req); err != nil {
		return nil, err
	}
	if err := checkEnv(req.Env, cmds.EnvRules.HiddenName); err != nil {
		return nil, err
	}
	if req.Background && cmds.Jobs == nil {
		return nil, fail(abi.StatusInvalid, abi.KindExecutionFailed, "call %s: this host runs no background commands (it has no job manager); run the command in the foreground, with a timeout_ms", c.CallID)
	}
	dir, err := c.workDir(req.Cwd)
	if err != nil {
		return nil, err
	}
	shell, command := execShell(req.Command)
	// The wrapping (exec /bin/bash -o pipefail -c '...', each ' written
	// as four bytes), and a redirect of stdin, must fit in the kernel's
	// limit on one argument too.
	if len(command)+wrapRoom > maxCommandBytes {
		return nil, fail(abi.StatusInvalid, abi.KindBadArgs, "the command is %d bytes once quoted for the shell, more than the %d bytes a command may have; write a script file and run it", len(command), maxCommandBytes-wrapRoom)
	}
	environ := execEnviron(cmds.Environ, cmds.NonInteractive, req.Env)
	e := &execution{c: c, cmds: cmds, req: req, dir: dir, shell: shell}
	if req.Report && cmds.Confiner != nil && cmds.Confiner.Mode() != confine.ModeOff {
		// A confined command's environment is fixed when its sandbox is
		// prepared; the file is made after, in the sandbox's tmp.
		e.reportName = reportPrefix + randomHex(8)
		environ = setEnv(environ, "TOOLHOST_REPORT", "/tmp/"+e.reportName)
	}
	run, err := cmds.confine(ctx, c, dir, environ)
	if err != nil {
		return nil, err
	}
	e.run = run
	if req.Report {
		inside, cleanup, err := e.makeReport()
		if err != nil {
			run.Close()
			return nil, err
		}
		defer cleanup()
		environ = setEnv(environ, "TOOLHOST_REPORT", inside)
	}
	spec := proc.Spec{Command: command, Dir: dir, Env: environ}
	if l := run.Launch(); l != nil {
		spec.Launcher = l
	}
	if req.Stdin != nil {
		if err := e.feedStdin(&spec, *req.Stdin); err != nil {
			run.Close()
			return nil, err
		}
	}
	if req.Background {
		return e.background(ctx, spec)
	}
	defer run.Close()
	return e.foreground(ctx, spec)
}

// checkExec checks the request's scalars: the command's size, the
// timeout's sign, stdin's size, and options that do not go together.
func checkExec(req abi.ExecRequest) error {
	switch {
	case strings.TrimSpace(req.Command) == "":
		return fail(abi.StatusInvalid, abi.KindBadArgs, "command is empty; give the shell command to run")
	case len(req.Command) > maxCommandBytes:
		return fail(abi.StatusInvalid, abi.KindBadArgs, "a command of %d bytes is longer than the %d bytes a command may have; write a script file and run it", len(req.Command), maxCommandBytes)
	case strings.IndexByte(req.Command, 0) >= 0:
		return fail(abi.StatusInvalid, abi.KindBadArgs, "command holds a NUL byte, which no command line can carry; write a script file and run it")
	case req.TimeoutMS < 0:
		return fail(abi.StatusInvalid, abi.KindBadArgs, "timeout_ms %d is negative; give the milliseconds the command may run, or 0 for the call's deadline", req.TimeoutMS)
	case req.Stdin != nil && len(*req.Stdin) > maxStdinBytes:
		return fail(abi.StatusTooLarge, abi.KindBadArgs, "stdin of %d bytes is more than the %d a command may be given; write it to a file and redirect it (command < file)", len(*req.Stdin), maxStdinBytes)
	case req.Background && req.Report:
		return fail(abi.StatusInvalid, abi.KindBadArgs, "report needs a command run in the foreground: a background job's report would come back to no one; drop background, or have the job write its report to a file")
	case req.Background && req.TimeoutMS > 0:
		return fail(abi.StatusInvalid, abi.KindBadArgs, "timeout_ms applies to a command run in the foreground; a background job runs until it ends or job_kill stops it (and at most the operator's tools.jobs.max_seconds); drop one of the two")
	}
	return nil
}

// checkEnv refuses the variables a call may not add (refusedEnv, the
// secret filter's names by hidden), and bounds their number and size.
func checkEnv(env map[string]string, hidden func(string) string) error {
	if len(env) > maxEnvVars {
		return fail(abi.StatusInvalid, abi.KindBadArgs, "env: %d variables are more than the %d a command may be given; set the rest in the command or a script", len(env), maxEnvVars)
	}
	names := make([]string, 0, len(env))
	for k := range env {
		names = append(names, k)
	}
	slices.Sort(names) // the first refusal is the same on every call
	total := 0
	for _, name := range names {
		value := env[name]
		if !envName.MatchString(name) {
			return fail(abi.StatusInvalid, abi.KindBadArgs, "env: %q is not a variable name (a letter or _, then letters, digits, _); rename it", name)
		}
		if why := refusedEnvName(name); why != "" {
			return fail(abi.StatusDenied, abi.KindBadArgs, "env: %s may not be set this way: %s; if the command needs it, write it in the command itself (%s=... command), where it is shown with the command", name, why, name)
		}
		if rule := hidden(name); rule != "" {
			return fail(abi.StatusDenied, abi.KindBadArgs, "env: %s may not be set: commands never see a variable of that name (the secret filter hides it: %s); pass what the command needs another way, or ask the operator", name, rule)
		}
		if len(value) > maxEnvValue {
			return fail(abi.StatusTooLarge, abi.KindBadArgs, "env: the value of %s is %d bytes, more than the %d a variable may have; write it to a file and have the command read it", name, len(value), maxEnvValue)
		}
		if strings.IndexByte(value, 0) >= 0 {
			return fail(abi.StatusInvalid, abi.KindBadArgs, "env: the value of %s holds a NUL byte, which no environment can carry", name)
		}
		total += len(name) + len(value) + 2
	}
	if total > maxEnvTotal {
		return fail(abi.StatusTooLarge, abi.KindBadArgs, "env: the variables take %d bytes, more than the %d they may have together; write large values to files", total, maxEnvTotal)
	}
	return nil
}

// refusedEnvName says why a call may not add name, "" when it may.
func refusedEnvName(name string) string {
	upper := strings.ToUpper(name)
	if why, ok := refusedEnv[upper]; ok {
		return why
	}
	for _, p := range refusedEnvPrefixes {
		if strings.HasPrefix(upper, p.prefix) {
			return p.why
		}
	}
	return ""
}

// execShell is the shell that runs command, and the sh -c argument that
// runs it there: proc (and the confined launcher) start sh -c, which
// execs bash with pipefail where there is bash.
func execShell(command string) (shell, arg string) {
	if fi, err := os.Stat(bashPath); err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0 {
		return "bash", "exec " + bashPath + " -o pipefail -c " + shellQuote(command)
	}
	return "sh", command
}

// shellQuote quotes s as one word for sh: single quotes, each one inside
// written '\”.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// execEnviron is the command's environment: the host's (sanitized), the
// non-interactive defaults over it, the call's variables over both.
func execEnviron(host, defaults []string, add map[string]string) []string {
	env := slices.Clone(host)
	for _, kv := range defaults {
		name, value, _ := strings.Cut(kv, "=")
		env = setEnv(env, name, value)
	}
	names := make([]string, 0, len(add))
	for k := range add {
		names = append(names, k)
	}
	slices.Sort(names)
	for _, k := range names {
		env = setEnv(env, k, add[k])
	}
	return env
}

// setEnv sets name in env, in place of every entry of that name.
func setEnv(env []string, name, value string) []string {
	env = slices.DeleteFunc(env, func(kv string) bool {
		k, _, _ := strings.Cut(kv, "=")
		return k == name
	})
	return append(env, name+"="+value)
}

// execution is one proc_exec command being run.
type execution struct {
	c     *Call
	cmds  *Commands
	req   abi.ExecRequest
	dir   string
	shell string
	run   *confine.Run

	reportName string // the report's file name; "" without one
	reportHost string // its path on the host
}

// Which limit a command's timeout is (timeoutNote says it).
const (
	limitAsked    = iota // the call's timeout_ms
	limitOperator        // max_timeout_ms, below what the call asked
	limitDeadline        // the call's deadline
)

// feedStdin gives the command its stdin. Unconfined, proc writes it to
// a pipe. The confined launcher starts the shell on /dev/null, so there
// it is a file in the call's private tmp, which only this command sees
// and which goes with the tmp, redirected to the shell: the command
// reads it to its end as it would a pipe closed after it.
func (e *execution) feedStdin(spec *proc.Spec, stdin string) error {
	if e.run.Launch() == nil {
		spec.Stdin = []byte(stdin)
		return nil
	}
	tmp := callTmp(e.run, e.cmds.Confiner, e.c.CallID)
	if tmp == "" {
		return fail(abi.StatusInvalid, abi.KindExecutionFailed, "call %s: the sandbox gives this command no place for its stdin; write the input to a file in the workspace and redirect it (command < file)", e.c.CallID)
	}
	name := "toolhost-stdin-" + randomHex(8)
	if err := os.WriteFile(filepath.Join(tmp, name), []byte(stdin), 0o400); err != nil {
		return fail(abi.StatusIO, abi.KindExecutionFailed, "call %s: cannot write the command's stdin: %v", e.c.CallID, err)
	}
	shell := bashPath + " -o pipefail"
	if e.shell != "bash" {
		shell = "/bin/sh"
	}
	spec.Command = "exec " + shell + " -c " + shellQuote(e.req.Command) + " < /tmp/" + name
	return nil
}

// timeout is how long the command may run (0: no limit of its own), and
// which limit that is. A timeout_ms of 0 asks for the call's deadline.
// A command stopped at the call's deadline would take its output with
// the call; one stopped a moment before returns it (killed="timeout").
func (e *execution) timeout(ctx context.Context) (d time.Duration, limit int) {
	// Milliseconds past what a Duration holds would overflow to a
	// negative one and slip past both clamps: they are as good as forever.
	d = time.Duration(min(e.req.TimeoutMS, int64(math.MaxInt64/time.Millisecond))) * time.Millisecond
	if most := e.cmds.MaxTimeout; most > 0 && (d == 0 || d > most) {
		d, limit = most, limitOperator
	}
	if dl, ok := ctx.Deadline(); ok {
		left := time.Until(dl)
		room := left - min(max(left/20, 100*time.Millisecond), 2*time.Second)
		if d == 0 || d > room {
			d, limit = max(room, time.Millisecond), limitDeadline
		}
	}
	return d, limit
}

// foreground runs the command to its end and returns its result.
func (e *execution) foreground(ctx context.Context, spec proc.Spec) ([]byte, error) {
	c, cmds := e.c, e.cmds
	capture := int(c.outputLimit())
	spec.MaxCapture, spec.TailCapture = capture, capture
	var kept *jobs.Kept
	if cmds.Jobs != nil {
		var err error
		if kept, err = cmds.Jobs.Keep(c.Conversation, c.CallID, e.req.Command); err != nil {
			// Keeping the output is for reading it later; the command
			// runs without.
			kept = nil
		}
	}
	if kept != nil || c.Emit != nil {
		spec.Sink = func(ctx context.Context, s proc.Stream, chunk []byte) error {
			if kept != nil {
				kept.Write(chunk)
			}
			if c.Emit != nil {
				return c.Emit(ctx, Event{CallID: c.CallID, Kind: uint32(s), Data: chunk})
			}
			return nil
		}
	}
	if c.Journal != nil {
		spec.Started = c.Journal.ProcessStarted
	}
	limit, which := e.timeout(ctx)
	runCtx, cancel := ctx, context.CancelFunc(func() {})
	if limit > 0 {
		runCtx, cancel = context.WithTimeout(ctx, limit)
	}
	defer cancel()
	began := time.Now()
	res, err := proc.Run(runCtx, spec)
	took := time.Since(began)
	defer kept.Close() // nil-safe; closed below once its end is known
	var notRun *proc.NotRunError
	if !errors.As(err, &notRun) {
		cmds.recordConfinement(e.run.Applied())
	}
	out := abi.ExecResult{ExitCode: res.ExitCode, Signal: res.Signal, DurationMS: took.Milliseconds(), Shell: e.shell, Pipefail: e.shell == "bash"}
	if err != nil {
		switch {
		case notRun != nil:
			return nil, fail(abi.StatusDenied, abi.KindExecutionFailed, "call %s: the command did not run: its sandbox could not be set up: %v", c.CallID, notRun.Err)
		case errors.Is(err, context.Canceled) && ctx.Err() != nil:
			out.Killed = abi.KilledCancel
		case errors.Is(err, context.DeadlineExceeded):
			out.Killed = abi.KilledTimeout
		case ctx.Err() != nil:
			// Stopped while starting (the journal could not record it).
			if stop := interrupted(ctx.Err(), "the command ran past its deadline; its processes were killed"); stop != nil {
				return nil, stop
			}
		default:
			return nil, fail(abi.StatusIO, abi.KindExecutionFailed, "cannot start the command: %v", err)
		}
		out.ExitCode = -1
	}
	// A limit that killed a child the command survived (exit 0) did not
	// kill the command; the sandbox's hint still says it happened. The
	// cgroup's counters are read only for a failure.
	if out.Killed == "" && res.ExitCode != 0 {
		if memory, pids := limitsHit(e.run); memory {
			out.Killed = abi.KilledMemory
		} else if pids {
			out.Killed = abi.KilledPids
		}
	}
	// job_output of the kept output then says how the command ended.
	kept.SetExit(out.ExitCode, out.Signal, out.Killed)
	kept.Close()
	notes := e.run.Hint(res.Stderr, res.StderrTail)
	if out.Killed == abi.KilledTimeout {
		notes = joinLines(notes, timeoutNote(limit, which, e.req.TimeoutMS))
	}
	if notes != "" {
		var added int
		res.Stderr, res.StderrTail, added = appendHint(res.Stderr, res.StderrTail, capture, notes)
		res.StderrBytes += int64(added)
		res.StderrLines += int64(strings.Count(notes, "\n") + 2)
	}
	out.Stdout, out.StdoutTail, out.StdoutBytes, out.StdoutLines = string(res.Stdout), string(res.StdoutTail), res.StdoutBytes, res.StdoutLines
	out.Stderr, out.StderrTail, out.StderrBytes, out.StderrLines = string(res.Stderr), string(res.StderrTail), res.StderrBytes, res.StderrLines
	out.StdoutCut = int64(len(res.Stdout)+len(res.StdoutTail)) < res.StdoutBytes
	out.StderrCut = int64(len(res.Stderr)+len(res.StderrTail)) < res.StderrBytes
	if kept != nil && (out.StdoutCut || out.StderrCut) {
		// A whole output needs no id: the model has it all.
		out.OutputID = kept.ID()
	}
	if e.reportHost != "" {
		out.Report, out.ReportBytes, out.ReportCut = readReport(e.reportHost, min(c.scanLimit(), maxReportBytes))
	}
	return json.Marshal(out)
}

// background starts the command as a job of the call's conversation; the
// job, not the call, owns the confinement from then on.
func (e *execution) background(ctx context.Context, spec proc.Spec) ([]byte, error) {
	c := e.c
	id, err := e.cmds.Jobs.Start(ctx, c.Conversation, jobs.Command{Spec: spec, Shown: e.req.Command, Cwd: e.req.Cwd, Release: e.run.Close})
	if err != nil {
		// Release was not handed over: the job did not start.
		e.run.Close()
		if stop := interrupted(err, "the call ran past its deadline while its job was started; the command did not run"); stop != nil {
			return nil, stop
		}
		return nil, fail(abi.StatusInvalid, abi.KindExecutionFailed, "call %s: the background command did not start: %v", c.CallID, err)
	}
	e.cmds.recordConfinement(e.run.Applied())
	return json.Marshal(abi.ExecResult{JobID: id, ExitCode: 0, Shell: e.shell, Pipefail: e.shell == "bash"})
}

// timeoutNote says, after the output of a command its timeout stopped,
// which limit it was and how to get more.
func timeoutNote(limit time.Duration, which int, asked int64) string {
	ms := limit.Milliseconds()
	switch which {
	case limitAsked:
		return fmt.Sprintf("toolhost: the command was stopped after its timeout_ms (%d ms)", ms)
	case limitOperator:
		if asked == 0 {
			return fmt.Sprintf("toolhost: the command was stopped after %d ms, the most [tools.run_command] max_timeout_ms allows; run it in the background (background: true) and read its output with job_output", ms)
		}
		return fmt.Sprintf("toolhost: the command was stopped after %d ms, the most [tools.run_command] max_timeout_ms allows (%d ms were asked); run it in the background (background: true) and read its output with job_output", ms, asked)
	}
	return fmt.Sprintf("toolhost: the command was stopped after %d ms, just before the call's deadline ([tools.timeouts] shell_commands_seconds bounds every command, whatever timeout_ms or max_timeout_ms say); run it in the background (background: true) and read its output with job_output", ms)
}

func joinLines(a, b string) string {
	if a == "" {
		return b
	}
	return a + "\n" + b
}

// limitsHit says whether the command's cgroup recorded a process killed
// at the memory limit, or a fork refused at the process limit. The
// confinement exposes them through LimitsHit where it can; without it
// nothing is reported.
func limitsHit(run *confine.Run) (memory, pids bool) {
	if l, ok := any(run).(interface{ LimitsHit() (memory, pids bool) }); ok {
		return l.LimitsHit()
	}
	return false, false
}

// makeReport makes the command's private report file and returns its
// path as the command sees it, and what removes it. Confined, it is in
// the call's private tmp (mounted at /tmp inside), the one place both
// sides see that only this command writes; unconfined, in a private
// directory of its own. Never in the workspace.
func (e *execution) makeReport() (inside string, cleanup func(), err error) {
	if e.reportName == "" {
		dir, err := os.MkdirTemp("", "toolhost-report-")
		if err != nil {
			return "", nil, fail(abi.StatusIO, abi.KindExecutionFailed, "call %s: cannot make the report's directory: %v", e.c.CallID, err)
		}
		e.reportHost = filepath.Join(dir, "report")
		if err := os.WriteFile(e.reportHost, nil, 0o600); err != nil {
			os.RemoveAll(dir)
			return "", nil, fail(abi.StatusIO, abi.KindExecutionFailed, "call %s: cannot make the report file: %v", e.c.CallID, err)
		}
		return e.reportHost, func() { os.RemoveAll(dir) }, nil
	}
	if e.run.Launch() == nil {
		return "", nil, fail(abi.StatusInvalid, abi.KindExecutionFailed, "call %s: the sandbox was expected but the command would run unconfined; run it again", e.c.CallID)
	}
	tmp := callTmp(e.run, e.cmds.Confiner, e.c.CallID)
	if tmp == "" {
		return "", nil, fail(abi.StatusInvalid, abi.KindExecutionFailed, "call %s: the sandbox gives this command no place for a report the host can read; run it without report, writing the report to a file in the workspace", e.c.CallID)
	}
	e.reportHost = filepath.Join(tmp, e.reportName)
	if err := os.WriteFile(e.reportHost, nil, 0o600); err != nil {
		return "", nil, fail(abi.StatusIO, abi.KindExecutionFailed, "call %s: cannot make the report file: %v", e.c.CallID, err)
	}
	// The tmp, and the report with it, goes with the confinement.
	return "/tmp/" + e.reportName, func() {}, nil
}

// callTmp is the host's path of the confined call's private tmp, "" when
// it cannot be told. The confinement exposes it through TmpDir where it
// can; else it is found by the name the confinement gives it
// (StateDir/sandbox/tmp/call-PID-ID-*), and only when exactly one
// directory of this process has this call's id.
func callTmp(run *confine.Run, cf *confine.Confiner, callID string) string {
	if t, ok := any(run).(interface{ TmpDir() string }); ok {
		return t.TmpDir()
	}
	if cf == nil || cf.Settings().StateDir == "" {
		return ""
	}
	id := tmpSafeName(callID)
	if id == "" {
		return ""
	}
	pattern := filepath.Join(cf.Settings().StateDir, "sandbox", "tmp", fmt.Sprintf("call-%d-%s-*", os.Getpid(), id))
	found, _ := filepath.Glob(pattern)
	found = slices.DeleteFunc(found, func(p string) bool {
		// call-PID-ab-* also matches call-PID-ab-cd-*, another call's.
		return strings.Contains(strings.TrimPrefix(p, strings.TrimSuffix(pattern, "*")), "-")
	})
	if len(found) != 1 {
		return ""
	}
	if fi, err := os.Lstat(found[0]); err != nil || !fi.IsDir() {
		return ""
	}
	if real, err := filepath.EvalSymlinks(found[0]); err == nil {
		return real
	}
	return found[0]
}

// tmpSafeName is the part of a call id the confinement puts in its tmp's
// name: letters, digits, - and _, at most 32.
func tmpSafeName(id string) string {
	var sb strings.Builder
	for _, r := range id {
		if sb.Len() == 32 {
			break
		}
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' {
			sb.WriteRune(r)
		}
	}
	return sb.String()
}

// readReport reads at most limit bytes of the report the command wrote.
// The command may have replaced the file: only a regular file is read,
// never one a link leads to (a link to a file of the host's would hand
// the model what the sandbox hides), and never a FIFO's writer's wait.
func readReport(path string, limit int64) (report string, size int64, cut bool) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return "", 0, false
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		return "", 0, false
	}
	data, _ := io.ReadAll(io.LimitReader(f, limit))
	size = max(fi.Size(), int64(len(data)))
	return string(data), size, size > int64(len(data))
}

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}
