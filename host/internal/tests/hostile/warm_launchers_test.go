package hostile_test

// Red team: run_command's warm launchers, started ahead of need by a
// launcher server that toolhost starts once. A prompt-injected model
// runs commands that look for the server and the other launchers, try
// to use the pool up or outlive their call, and end in every way a
// command can; toolhost itself is stopped normally and with kill -9.
// Each command leaves a sleep with an argument of its own (31.7...), so
// that a survivor is found by its command line alone.

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/toolhost/toolhost/host"
	"github.com/toolhost/toolhost/host/internal/config"
	"github.com/toolhost/toolhost/host/internal/confine"
	"github.com/toolhost/toolhost/host/internal/engine"
	"github.com/toolhost/toolhost/internal/testplugin"
)

// The command lines of the launcher server and of a warm launcher.
const (
	warmServerArg   = "__toolhost-launchers"
	warmLauncherArg = "__toolhost-confine-warm"
)

// warmBinary is the toolhost binary for the CLI tests: the one make
// build made when TOOLHOST_BIN names it, else one built for the test.
func warmBinary(t *testing.T) string {
	t.Helper()
	if bin := os.Getenv("TOOLHOST_BIN"); bin != "" {
		return bin
	}
	return toolhostBinary(t)
}

var (
	warmLauncherOnce sync.Once
	warmLauncherBin  string
	warmLauncherErr  error
)

// warmHostLauncher is a toolhost binary that launches the commands of a
// host this test binary opens. A launcher server answers only a host of
// its own protocol fingerprint, which includes the commit a build
// records and a test binary records none: a binary of make build would
// leave every command on the cold path, and the warm launchers
// untested. So it is built from these sources without that record.
func warmHostLauncher(t *testing.T) string {
	t.Helper()
	warmLauncherOnce.Do(func() {
		dir, err := testplugin.SharedDir("warm-launcher", "host/cmd/toolhost")
		if err != nil {
			warmLauncherErr = err
			return
		}
		tmp, err := os.CreateTemp(dir, "toolhost-*")
		if err != nil {
			warmLauncherErr = err
			return
		}
		tmp.Close()
		cmd := exec.Command("go", "build", "-buildvcs=false", "-o", tmp.Name(), "github.com/toolhost/toolhost/host/cmd/toolhost")
		if out, err := cmd.CombinedOutput(); err != nil {
			os.Remove(tmp.Name())
			warmLauncherErr = fmt.Errorf("go build: %v\n%s", err, out)
			return
		}
		warmLauncherBin = filepath.Join(dir, "toolhost")
		warmLauncherErr = os.Rename(tmp.Name(), warmLauncherBin)
	})
	if warmLauncherErr != nil {
		t.Fatal(warmLauncherErr)
	}
	return warmLauncherBin
}

// warmOpen opens a host whose commands are confined by a toolhost
// binary of the same sources, so that they start in warm launchers;
// mutate, when set, changes the configuration first. The test closes
// the host at its end.
func warmOpen(t *testing.T, mutate func(*config.Config)) (*host.Host, string) {
	t.Helper()
	h, root := warmOpenUnclosed(t, mutate)
	t.Cleanup(func() { h.Close(context.Background()) })
	return h, root
}

// warmOpenUnclosed is warmOpen for a test that closes the host itself.
func warmOpenUnclosed(t *testing.T, mutate func(*config.Config)) (*host.Host, string) {
	t.Helper()
	if _, err := os.Stat("/proc/self/ns/user"); err != nil {
		t.Skip("no user namespaces: commands cannot be confined here")
	}
	root := t.TempDir()
	cfg := config.Default()
	cfg.Tools.Sandbox.AllowedRoots = []string{root}
	cfg.Tools.Approval.Denylist = nil
	if mutate != nil {
		mutate(cfg)
	}
	h, err := host.Open(context.Background(), host.Options{PluginDir: pluginDir(t), Config: cfg, CacheDir: testplugin.CacheDir(t),
		Launcher: warmHostLauncher(t), StateDir: filepath.Join(t.TempDir(), "state")})
	if err != nil {
		t.Fatal(err)
	}
	return h, root
}

// warmRun runs one run_command call with args, narrowed by n.
func warmRun(t *testing.T, h *host.Host, ctx context.Context, n engine.Narrowing, args map[string]any) engine.Result {
	t.Helper()
	b := engine.Batch{Conversation: "c", Calls: []engine.Call{call("1", "run_command", jsonArgs(t, args))}}
	return process(t, h, ctx, b, host.BatchOptions{Approver: approveAll(), Narrowing: n}, 60*time.Second)[0]
}

// warmOutput is what the command wrote, whether it succeeded or not.
func warmOutput(r engine.Result) string {
	if r.OK || r.Error == nil {
		return r.Content
	}
	var d struct {
		Output string `json:"output"`
	}
	json.Unmarshal(r.Error.Details, &d)
	return d.Output
}

// warmDetails decodes a failed call's details.
func warmDetails(t *testing.T, r engine.Result) map[string]any {
	t.Helper()
	if r.Error == nil {
		t.Fatalf("the call succeeded: %+v", r)
	}
	var d map[string]any
	if err := json.Unmarshal(r.Error.Details, &d); err != nil {
		t.Fatalf("details %s: %v", r.Error.Details, err)
	}
	return d
}

// warmProc is one process of the machine.
type warmProc struct {
	ppid    int
	cmdline string
}

// warmProcs lists the machine's processes by pid.
func warmProcs() map[int]warmProc {
	out := map[int]warmProc{}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// The fields after the command's name, which may hold anything
		// but ends at the last ')'.
		i := strings.LastIndexByte(string(stat), ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(stat[i+1:]))
		if len(f) < 2 {
			continue
		}
		ppid, _ := strconv.Atoi(f[1])
		cmd, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		out[pid] = warmProc{ppid: ppid, cmdline: strings.TrimSpace(strings.ReplaceAll(string(cmd), "\x00", " "))}
	}
	return out
}

// warmDescendants returns root's descendants whose command line holds
// marker, by pid, with their command lines.
func warmDescendants(root int, marker string) map[int]string {
	procs := warmProcs()
	out := map[int]string{}
	for pid, p := range procs {
		if !strings.Contains(p.cmdline, marker) {
			continue
		}
		for a, seen := p.ppid, 0; a > 1 && seen < 64; a, seen = procs[a].ppid, seen+1 {
			if a == root {
				out[pid] = p.cmdline
				break
			}
		}
	}
	return out
}

// warmMatching returns the processes whose command line holds marker.
func warmMatching(marker string) map[int]string {
	out := map[int]string{}
	for pid, p := range warmProcs() {
		if strings.Contains(p.cmdline, marker) {
			out[pid] = p.cmdline
		}
	}
	return out
}

// warmGone waits up to limit for none of procs to run any more (a pid
// reused by another command line does not count), and returns those
// still running.
func warmGone(procs map[int]string, limit time.Duration) map[int]string {
	deadline := time.Now().Add(limit)
	for {
		left := map[int]string{}
		now := warmProcs()
		for pid, cmd := range procs {
			if p, ok := now[pid]; ok && p.cmdline == cmd {
				left[pid] = cmd
			}
		}
		if len(left) == 0 || time.Now().After(deadline) {
			return left
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// warmNoSurvivor fails the test if a process whose command line holds
// marker still runs after a grace period.
func warmNoSurvivor(t *testing.T, marker string) {
	t.Helper()
	if left := warmGone(warmMatching(marker), 3*time.Second); len(left) > 0 {
		t.Errorf("processes of the command outlived it: %v", left)
	}
}

// warmIsWarm reports whether an output holding "init <cmdline>" came from a
// command whose PID namespace's init was a warm launcher.
func warmIsWarm(out string) bool {
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, "init ") && strings.Contains(line, warmLauncherArg) {
			return true
		}
	}
	return false
}

// Attack (model): a command lists every process it can see, its own
// descriptors and where they lead, looking for the launcher server, the
// launchers waiting for the next commands, or the socket its own
// launcher received it on.
// Expected: the command sees one launcher, its own (PID 1 of its
// namespace), no server and no other launcher; its shell holds stdin,
// stdout and stderr only, and no socket.
func TestWarmCommandSeesOnlyItsOwnLauncher(t *testing.T) {
	h, _ := warmOpen(t, nil)
	const cmd = `ls -l /proc/$$/fd
for p in /proc/[0-9]*; do echo "proc ${p#/proc/} $(tr '\0' ' ' < $p/cmdline)"; done
echo "init $(tr '\0' ' ' < /proc/1/cmdline)"`
	warm := 0
	for i := 0; i < 4; i++ {
		r := warmRun(t, h, context.Background(), engine.Narrowing{}, map[string]any{"command": cmd})
		if !r.OK {
			t.Fatalf("run_command: %+v", r.Error)
		}
		out := r.Content
		if warmIsWarm(out) {
			warm++
		}
		var fds []string
		for _, line := range strings.Split(out, "\n") {
			// ls -l: "lr-x------ 1 u g 64 date 0 -> /dev/null".
			if f := strings.Fields(line); len(f) >= 3 && f[len(f)-2] == "->" {
				fds = append(fds, f[len(f)-3])
			}
		}
		if !slices.Equal(fds, []string{"0", "1", "2"}) {
			t.Errorf("the shell holds descriptors %v, want 0, 1 and 2 only:\n%s", fds, out)
		}
		if strings.Contains(out, "socket:") {
			t.Errorf("the shell holds a socket:\n%s", out)
		}
		for _, line := range strings.Split(out, "\n") {
			if !strings.HasPrefix(line, "proc ") || !strings.Contains(line, "__toolhost") {
				continue
			}
			if !strings.HasPrefix(line, "proc 1 ") || strings.Contains(line, warmServerArg) {
				t.Errorf("the command sees a launcher other than its own: %q\n%s", line, out)
			}
		}
		// The launcher refills in the background; the next command
		// finds one waiting.
		time.Sleep(200 * time.Millisecond)
	}
	if warm == 0 {
		t.Fatal("no command ran in a warm launcher: the attack did not reach them")
	}
	if waiting := warmDescendants(os.Getpid(), warmLauncherArg); len(waiting) == 0 {
		t.Error("no warm launcher waits after the commands: the pool does not refill")
	}
}

// Attack (model): the operator allows the host's network; a profile
// narrows it to none. Commands of both kinds alternate, so that each
// kind could be handed a launcher made for the other.
// Expected: a command narrowed to network off never has the host's
// network namespace, and one with network on always has it.
func TestWarmNetworkModeFollowsEachCommand(t *testing.T) {
	h, _ := warmOpen(t, func(c *config.Config) { c.Tools.RunCommand.Network = config.NetworkOn })
	hostNet, err := os.Readlink("/proc/self/ns/net")
	if err != nil {
		t.Skip("no network namespace to compare with")
	}
	const cmd = `echo "net $(readlink /proc/self/ns/net)"; echo "init $(tr '\0' ' ' < /proc/1/cmdline)"`
	warm := map[bool]int{}
	for i := 0; i < 8; i++ {
		off := i%2 == 1
		n := engine.Narrowing{}
		if off {
			n.CommandNetwork = confine.NetworkOff
		}
		r := warmRun(t, h, context.Background(), n, map[string]any{"command": cmd})
		if !r.OK {
			t.Fatalf("run_command (network off %v): %+v", off, r.Error)
		}
		same := strings.Contains(r.Content, "net "+hostNet+"\n")
		if off == same {
			t.Errorf("network off %v: the command's network namespace is the host's: %v\n%s", off, same, r.Content)
		}
		if len(r.Confinement) != 1 || slices.Contains(r.Confinement[0].Namespaces, "net") != off {
			t.Errorf("network off %v: confinement %+v", off, r.Confinement)
		}
		if warmIsWarm(r.Content) {
			warm[off]++
		}
		time.Sleep(150 * time.Millisecond)
	}
	if warm[true] == 0 || warm[false] == 0 {
		t.Fatalf("warm launchers ran %d commands with network on and %d with it off: want some of each", warm[false], warm[true])
	}
}

// Attack (model): more commands at once than launchers wait, then a
// command that leaves children behind (in the background, in a session
// of their own, under nohup), then one that forks past the process limit
// until its timeout.
// Expected: every command runs confined (the ones that find no launcher
// waiting start one of their own), nothing a command started outlives
// its call, and the command after them still runs confined.
func TestWarmPoolExhaustionStaysConfined(t *testing.T) {
	h, _ := warmOpen(t, nil)
	hostNet, _ := os.Readlink("/proc/self/ns/net")
	confined := func(r engine.Result, what string) {
		t.Helper()
		if len(r.Confinement) != 1 || !r.Confinement[0].Seccomp || !slices.Contains(r.Confinement[0].Namespaces, "pid") || !slices.Contains(r.Confinement[0].Namespaces, "net") {
			t.Errorf("%s: not confined: %+v", what, r.Confinement)
		}
		if hostNet != "" && strings.Contains(warmOutput(r), "net "+hostNet) {
			t.Errorf("%s: ran with the host's network:\n%s", what, warmOutput(r))
		}
	}
	const probe = `echo "net $(readlink /proc/self/ns/net)"; echo "init $(tr '\0' ' ' < /proc/1/cmdline)"`
	const n = 8
	results := make([]engine.Result, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = warmRun(t, h, context.Background(), engine.Narrowing{}, map[string]any{"command": "sleep 0.4; " + probe})
		}()
	}
	wg.Wait()
	for i, r := range results {
		if !r.OK {
			t.Errorf("concurrent command %d: %+v", i, r.Error)
			continue
		}
		confined(r, "concurrent command "+strconv.Itoa(i))
	}

	r := warmRun(t, h, context.Background(), engine.Narrowing{}, map[string]any{
		"command": "sleep 31.71 & (setsid sleep 31.72 &); nohup sleep 31.73 >/dev/null 2>&1 & (trap '' HUP TERM; exec sleep 31.74) & echo started"})
	if !r.OK {
		t.Fatalf("background children: %+v", r.Error)
	}
	confined(r, "background children")
	warmNoSurvivor(t, "sleep 31.7")

	begin := time.Now()
	r = warmRun(t, h, context.Background(), engine.Narrowing{}, map[string]any{
		"command": "i=0; while [ $i -lt 700 ]; do sleep 31.75 & i=$((i+1)); done; wait", "timeout_ms": 4000})
	if r.OK {
		t.Errorf("700 processes under a limit of 512 ran to their end: %s", r.Content)
	}
	if d := time.Since(begin); d > 20*time.Second {
		t.Errorf("the forking command ended %v after its start, with a timeout of 4 s", d)
	}
	warmNoSurvivor(t, "sleep 31.75")

	r = warmRun(t, h, context.Background(), engine.Narrowing{}, map[string]any{"command": probe})
	if !r.OK {
		t.Fatalf("the command after the attacks: %+v", r.Error)
	}
	confined(r, "the command after the attacks")

	// Every cgroup left in the v2 hierarchy is a waiting launcher's.
	time.Sleep(500 * time.Millisecond)
	own := filepath.Join("/sys/fs/cgroup/unified", "toolhost-"+strconv.Itoa(os.Getpid()))
	entries, _ := os.ReadDir(own)
	var empty []string
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		procs, err := os.ReadFile(filepath.Join(own, e.Name(), "cgroup.procs"))
		if err == nil && len(strings.TrimSpace(string(procs))) == 0 {
			empty = append(empty, e.Name())
		}
	}
	if len(empty) > 0 {
		t.Errorf("cgroups left behind by the commands, holding no process: %v", empty)
	}
}

// Attack (model): commands that end in every way a command can: an
// exit code, its shell killed by SIGKILL and by SIGTERM, a timeout, the
// caller giving up, and a background job killed with job_kill.
// Expected: each is reported as it happened, and none leaves a process
// behind.
func TestWarmCommandEndsAreReported(t *testing.T) {
	h, _ := warmOpen(t, nil)
	ctx := context.Background()
	// A first command lets the pool fill.
	if r := warmRun(t, h, ctx, engine.Narrowing{}, map[string]any{"command": "true"}); !r.OK {
		t.Fatalf("true: %+v", r.Error)
	}
	time.Sleep(200 * time.Millisecond)

	// 125 is the launcher's own "did not run", 137 what a shell killed
	// by SIGKILL would give: the command's own exits are told apart.
	for _, code := range []float64{3, 125, 137} {
		c := strconv.Itoa(int(code))
		r := warmRun(t, h, ctx, engine.Narrowing{}, map[string]any{"command": "exit " + c})
		if d := warmDetails(t, r); d["exit_code"] != code || d["signal"] != nil || r.Error.Kind != "ExecutionFailed" {
			t.Errorf("exit %s: %s, details %v", c, r.Error.Kind, d)
		}
	}
	// A stopped shell is ended by its timeout.
	r := warmRun(t, h, ctx, engine.Narrowing{}, map[string]any{"command": "kill -STOP $$", "timeout_ms": 500})
	if r.OK || r.Error.Kind != "Timeout" {
		t.Errorf("a stopped shell with a timeout of 500 ms: %+v", r)
	}
	for sig, name := range map[string]string{"-9": "killed", "-TERM": "terminated"} {
		r := warmRun(t, h, ctx, engine.Narrowing{}, map[string]any{"command": "kill " + sig + " $$; sleep 5"})
		if d := warmDetails(t, r); d["signal"] != name {
			t.Errorf("kill %s $$: details %v, want signal %q", sig, d, name)
		}
	}

	begin := time.Now()
	r = warmRun(t, h, ctx, engine.Narrowing{}, map[string]any{"command": "sleep 31.76 & sleep 31.77", "timeout_ms": 500})
	if r.OK || r.Error.Kind != "Timeout" {
		t.Errorf("a timeout of 500 ms: %+v", r)
	}
	if d := time.Since(begin); d > 10*time.Second {
		t.Errorf("a timeout of 500 ms ended the command after %v", d)
	}
	warmNoSurvivor(t, "sleep 31.76")
	warmNoSurvivor(t, "sleep 31.77")

	cctx, cancel := context.WithCancel(ctx)
	time.AfterFunc(500*time.Millisecond, cancel)
	begin = time.Now()
	warmRun(t, h, cctx, engine.Narrowing{}, map[string]any{"command": "sleep 31.78"})
	if d := time.Since(begin); d > 10*time.Second {
		t.Errorf("a cancelled call returned after %v", d)
	}
	warmNoSurvivor(t, "sleep 31.78")

	r = warmRun(t, h, ctx, engine.Narrowing{}, map[string]any{"command": "(setsid sleep 31.79 &); sleep 31.80", "background": true})
	if !r.OK {
		t.Fatalf("background: %+v", r.Error)
	}
	var job struct {
		JobID string `json:"job_id"`
	}
	json.Unmarshal(r.Structured, &job)
	if job.JobID == "" {
		t.Fatalf("no job id: %s", r.Structured)
	}
	deadline := time.Now().Add(10 * time.Second)
	for len(warmMatching("sleep 31.80")) == 0 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	b := engine.Batch{Conversation: "c", Calls: []engine.Call{call("k", "job_kill", jsonArgs(t, map[string]any{"id": job.JobID}))}}
	if k := process(t, h, ctx, b, host.BatchOptions{Approver: approveAll()}, time.Minute)[0]; !k.OK {
		t.Fatalf("job_kill: %+v", k.Error)
	}
	warmNoSurvivor(t, "sleep 31.79")
	warmNoSurvivor(t, "sleep 31.80")
}

// Attack (model): a background job runs when the host closes.
// Expected: Close ends the job, every warm launcher and the launcher
// server.
func TestWarmHostCloseEndsLaunchers(t *testing.T) {
	h, _ := warmOpenUnclosed(t, nil)
	closed := false
	defer func() {
		if !closed {
			h.Close(context.Background())
		}
	}()
	r := warmRun(t, h, context.Background(), engine.Narrowing{}, map[string]any{"command": "(setsid sleep 31.81 &); sleep 31.82", "background": true})
	if !r.OK {
		t.Fatalf("background: %+v", r.Error)
	}
	deadline := time.Now().Add(10 * time.Second)
	var ours map[int]string
	for time.Now().Before(deadline) {
		ours = warmDescendants(os.Getpid(), "__toolhost")
		var server, launchers bool
		for _, cmd := range ours {
			server = server || strings.Contains(cmd, warmServerArg)
			launchers = launchers || strings.Contains(cmd, warmLauncherArg)
		}
		if server && launchers && len(warmMatching("sleep 31.82")) > 0 {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if len(ours) < 2 {
		t.Fatalf("the host runs no launcher server and warm launchers: %v", ours)
	}
	closed = true
	h.Close(context.Background())
	if left := warmGone(ours, 3*time.Second); len(left) > 0 {
		t.Errorf("launchers outlived the host's Close: %v", left)
	}
	warmNoSurvivor(t, "sleep 31.8")
}

// warmCLI is `toolhost call run_command` of args in a fresh git
// repository, with run_command allowed, in a home of its own.
func warmCLI(t *testing.T, args string) *exec.Cmd {
	t.Helper()
	if _, err := os.Stat("/proc/self/ns/user"); err != nil {
		t.Skip("no user namespaces: commands cannot be confined here")
	}
	bin := warmBinary(t)
	home, dir := t.TempDir(), t.TempDir()
	if out, err := exec.Command("git", "init", "-q", dir).CombinedOutput(); err != nil {
		t.Fatalf("git init: %v\n%s", err, out)
	}
	cmd := exec.Command(bin, "--state-dir", filepath.Join(home, "state"), "--plugins", realPlugins(t),
		"call", "run_command", "--allow", "run_command", "--args", args)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "HOME="+home, "XDG_CONFIG_HOME="+filepath.Join(home, ".config"),
		"XDG_STATE_HOME="+filepath.Join(home, ".state"), "TOOLHOST_CACHE_DIR="+testplugin.CacheDir(t))
	return cmd
}

// Attack (model): a command that leaves children behind, in its session
// and in one of their own, and toolhost killed with SIGKILL meanwhile
// (by the operator, or by the OOM killer), when nothing of it can clean
// up.
// Expected: the launcher server, every warm launcher and the command's
// processes die with toolhost.
func TestWarmKilledToolhostLeavesNoProcess(t *testing.T) {
	cmd := warmCLI(t, `{"command":"sleep 31.83 & (setsid sleep 31.84 &); sleep 31.85"}`)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	deadline := time.Now().Add(20 * time.Second)
	var ours map[int]string
	for time.Now().Before(deadline) {
		ours = warmDescendants(cmd.Process.Pid, "")
		n := 0
		for _, c := range ours {
			if strings.Contains(c, warmServerArg) || strings.Contains(c, "sleep 31.84") || strings.Contains(c, "sleep 31.85") {
				n++
			}
		}
		if n == 3 {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if len(ours) < 4 {
		t.Fatalf("toolhost did not start the command in time; its processes: %v", ours)
	}
	// The session of its own left the tree: found by its command line.
	for pid, c := range warmMatching("sleep 31.8") {
		ours[pid] = c
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	if left := warmGone(ours, 3*time.Second); len(left) > 0 {
		t.Errorf("processes outlived toolhost killed with SIGKILL: %v", left)
	}
}

// Attack: none; toolhost runs one command and exits normally.
// Expected: toolhost leaves no cgroup behind: neither the warm
// launchers' nor its own directory in the v2 hierarchy.
// Failed before the fix: a waiting launcher's cgroup is removed at Close
// (warmLauncher.removeCgroup), but not the toolhost-<pid> directory
// holding it, which Cgroup.Close removes only when it is empty at the
// command's end, and it never is while launchers wait; it stays until
// another toolhost process finds it stale.
func TestWarmNormalExitLeavesNoCgroup(t *testing.T) {
	const unified = "/sys/fs/cgroup/unified"
	if _, err := os.Stat(filepath.Join(unified, "cgroup.procs")); err != nil {
		t.Skip("no v2 cgroup hierarchy at " + unified)
	}
	cmd := warmCLI(t, `{"command":"true"}`)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("toolhost: %v\n%s", err, out)
	}
	dir := filepath.Join(unified, "toolhost-"+strconv.Itoa(cmd.Process.Pid))
	if _, err := os.Stat(dir); err == nil {
		left, _ := os.ReadDir(dir)
		var names []string
		for _, e := range left {
			if e.IsDir() {
				names = append(names, e.Name())
			}
		}
		t.Errorf("toolhost exited and left its cgroup %s, holding %v", dir, names)
	}
}

// Attack (looping command, or the OOM killer): the launchers waiting in
// the pool die before their commands arrive, and then the launcher
// server itself.
// Expected: the next commands still run, confined, in a launcher started
// for them or by a server started again; none runs unconfined, none
// fails for a launcher it never used.
// Failed before the fix: a launcher killed while waiting may still hold its socket
// when Launch.Spawn sends it the command (the kill is not done, or the
// launcher dies between take and send): the send succeeds, the launcher
// exits without a status line, and the command fails with "its launcher
// ... exited before confining it" instead of taking the cold path. The
// launcher server's death kills every waiting launcher the same way.
func TestWarmDeadLaunchersFallBackConfined(t *testing.T) {
	h, _ := warmOpen(t, nil)
	hostNet, _ := os.Readlink("/proc/self/ns/net")
	const probe = `echo "net $(readlink /proc/self/ns/net)"; echo "init $(tr '\0' ' ' < /proc/1/cmdline)"`
	check := func(what string) {
		t.Helper()
		r := warmRun(t, h, context.Background(), engine.Narrowing{}, map[string]any{"command": probe})
		if !r.OK {
			t.Errorf("%s: %+v", what, r.Error)
			return
		}
		if len(r.Confinement) != 1 || !r.Confinement[0].Seccomp || !slices.Contains(r.Confinement[0].Namespaces, "net") ||
			(hostNet != "" && strings.Contains(r.Content, "net "+hostNet)) {
			t.Errorf("%s: not confined: %+v\n%s", what, r.Confinement, r.Content)
		}
	}
	check("the first command")
	for round := range 3 {
		deadline := time.Now().Add(5 * time.Second)
		var waiting map[int]string
		for time.Now().Before(deadline) {
			if waiting = warmDescendants(os.Getpid(), warmLauncherArg); len(waiting) >= 2 {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		if len(waiting) == 0 {
			t.Fatalf("round %d: no warm launcher waits", round)
		}
		for pid := range waiting {
			syscall.Kill(pid, syscall.SIGKILL)
		}
		// At once, while the killed launchers may still be exiting.
		check(fmt.Sprintf("round %d, right after the waiting launchers were killed", round))
		check(fmt.Sprintf("round %d, the command after", round))
	}
	for pid := range warmDescendants(os.Getpid(), warmServerArg) {
		syscall.Kill(pid, syscall.SIGKILL)
	}
	check("right after the launcher server was killed")
	time.Sleep(300 * time.Millisecond)
	check("after the launcher server was killed")
}

// Attack: none by a command; the launcher server stalls past its
// answer's timeout (a loaded machine; here it is stopped), so the pool
// gives up on it and starts another.
// Expected: a background job already running in a launcher of the old
// server keeps running: the pool replacing its server must not end the
// commands it started.
// Failed before the fix: every launcher is the server's child with a parent-death
// signal (launcher.startWarm), and the pool ends a server it gives up on
// (launcherServer.shutdown after serverTimeout, and warmPool.start when
// the small launcher binary fails once, for any reason): the server
// exits and the kernel kills every command running in its launchers.
func TestWarmServerReplacedKeepsRunningJobs(t *testing.T) {
	h, root := warmOpen(t, nil)
	ctx := context.Background()
	if r := warmRun(t, h, ctx, engine.Narrowing{}, map[string]any{"command": "true"}); !r.OK {
		t.Fatalf("true: %+v", r.Error)
	}
	time.Sleep(300 * time.Millisecond)
	r := warmRun(t, h, ctx, engine.Narrowing{}, map[string]any{"command": "tr '\\0' ' ' < /proc/1/cmdline > init; sleep 31.90", "background": true})
	if !r.OK {
		t.Fatalf("background: %+v", r.Error)
	}
	// The shell's own command line names the sleep before tr has
	// written init: wait for both.
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if b, _ := os.ReadFile(filepath.Join(root, "init")); len(b) > 0 && len(warmMatching("sleep 31.90")) > 0 {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	job := warmMatching("sleep 31.90")
	if len(job) == 0 {
		t.Fatal("the job did not start")
	}
	if b, _ := os.ReadFile(filepath.Join(root, "init")); !strings.Contains(string(b), warmLauncherArg) {
		t.Fatalf("the job did not run in a warm launcher: its init is %q", b)
	}
	servers := warmDescendants(os.Getpid(), warmServerArg)
	if len(servers) != 1 {
		t.Fatalf("launcher servers: %v", servers)
	}
	for pid := range servers {
		syscall.Kill(pid, syscall.SIGSTOP)
		defer syscall.Kill(pid, syscall.SIGCONT)
	}
	// Takes the waiting launchers, so that the pool asks the stopped
	// server for more, and gives up on it after its timeout.
	for range 3 {
		warmRun(t, h, ctx, engine.Narrowing{}, map[string]any{"command": "true"})
	}
	time.Sleep(11 * time.Second)
	if left := warmGone(job, 0); len(left) == 0 {
		t.Fatal("the job died while the server was stopped")
	}
	for pid := range servers {
		syscall.Kill(pid, syscall.SIGCONT)
	}
	time.Sleep(time.Second)
	if left := warmGone(job, 0); len(left) == 0 {
		t.Error("the background job was killed when the pool gave up on the launcher server")
	}
}

// Attack (model): a command as long as a command may be, then a
// workspace holding ever more project files, each of which the policy
// binds read-only, until the policy and command no longer fit the one
// datagram a warm launcher reads; the command writes to one of them.
// Expected: each runs whole and confined, in a warm launcher or, past
// the datagram, in one started for it; the project file stays as it was.
func TestWarmLargePoliciesRunWhole(t *testing.T) {
	h, root := warmOpen(t, nil)
	// What a command may be once quoted for the shell.
	const maxCommand = 130944 - 64
	marker := "; echo end-of-command"
	cmd := ": " + strings.Repeat("x", maxCommand-2-len(marker)) + marker
	r := warmRun(t, h, context.Background(), engine.Narrowing{}, map[string]any{"command": cmd})
	if !r.OK || !strings.Contains(r.Content, "end-of-command") {
		t.Fatalf("a command of %d bytes: %+v %q", len(cmd), r.Error, r.Content)
	}
	long := strings.Repeat("y", 200)
	made := 0
	kinds := map[bool]int{}
	for _, n := range []int{150, 250, 300, 330, 360, 390, 420, 600} {
		for ; made < n; made++ {
			dir := filepath.Join(root, fmt.Sprintf("d%04d-%s", made, long))
			if err := os.Mkdir(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, "toolhost.toml"), []byte("# kept\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		target := fmt.Sprintf("d%04d-%s/toolhost.toml", n-1, long)
		cmd := `echo "init $(tr '\0' ' ' < /proc/1/cmdline)"; echo changed > ` + target + `; echo end-of-command`
		r := warmRun(t, h, context.Background(), engine.Narrowing{}, map[string]any{"command": cmd})
		out := warmOutput(r)
		if !strings.Contains(out, "end-of-command") {
			t.Errorf("%d project files: the command did not run whole: %+v\n%.500s", n, r.Error, out)
		}
		if len(r.Confinement) != 1 || !r.Confinement[0].Seccomp {
			t.Errorf("%d project files: confinement %+v", n, r.Confinement)
		}
		if b, _ := os.ReadFile(filepath.Join(root, target)); string(b) != "# kept\n" {
			t.Errorf("%d project files: the command rewrote %s: %q", n, target, b)
		}
		kinds[warmIsWarm(out)]++
		time.Sleep(100 * time.Millisecond)
	}
	if kinds[true] == 0 || kinds[false] == 0 {
		t.Errorf("commands in warm launchers: %d, in launchers of their own: %d; want some of each, across the datagram's size", kinds[true], kinds[false])
	}
}

// Attack (model): a command leaves a child in a session of its own and
// returns; toolhost then exits normally.
// Expected: nothing toolhost started runs after it exited: not the
// child, not a warm launcher, not the launcher server.
func TestWarmNormalExitEndsLaunchers(t *testing.T) {
	cmd := warmCLI(t, `{"command":"(setsid sleep 31.92 &); sleep 1"}`)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	deadline := time.Now().Add(20 * time.Second)
	ours := map[int]string{}
	for time.Now().Before(deadline) {
		for pid, c := range warmDescendants(cmd.Process.Pid, "") {
			ours[pid] = c
		}
		var server, launcher bool
		for _, c := range ours {
			server = server || strings.Contains(c, warmServerArg)
			launcher = launcher || strings.Contains(c, warmLauncherArg)
		}
		if server && launcher && len(warmMatching("sleep 31.92")) > 0 {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	for pid, c := range warmMatching("sleep 31.92") {
		ours[pid] = c
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("toolhost: %v", err)
	}
	if len(ours) < 3 {
		t.Fatalf("toolhost ran no launcher server, warm launcher and command: %v", ours)
	}
	if left := warmGone(ours, 3*time.Second); len(left) > 0 {
		t.Errorf("processes outlived toolhost's normal exit: %v", left)
	}
}
