//go:build linux

package confine

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The red team's cases: attacks on run_command's sandbox
// that the escape suite's cases did not try, each run through the real
// toolhost binary and checked from outside as the suite does. Each one
// failed when it was written; the comment says how the attack works and
// what would stop it.

// .git/hooks and .git/config are read-only inside the
// root, but git reads a repository's hooks and configuration from its
// common directory, which a file .git/commondir names. A command that
// writes .git/commondir (the rest of .git is writable) points the
// repository at a directory of its own holding hooks/pre-commit and a
// config (core.fsmonitor, core.hooksPath, ...): the next git command the
// user runs outside the sandbox runs the command's code.
func TestRedteamGitCommondir(t *testing.T) {
	t.Parallel()
	f := newFixture(t, world{})
	commit(t, f.root)
	ran := filepath.Join(f.outside, "hook-ran")
	o := f.run(t, `mkdir -p evil/hooks && cp -r .git/objects .git/refs .git/HEAD .git/config evil/
printf '#!/bin/sh\necho pwned > `+ran+`\n' > evil/hooks/pre-commit; chmod +x evil/hooks/pre-commit
echo ../evil > .git/commondir
echo `+probeEnd)
	ranToEnd(t, o)
	git := exec.Command("git", "-c", "user.name=t", "-c", "user.email=t@e", "commit", "-q", "--allow-empty", "-m", "after the call")
	git.Dir = f.root
	out, err := git.CombinedOutput()
	t.Logf("git commit outside the sandbox: %v %s", err, out)
	if exists(ran) {
		t.Errorf("the user's git commit outside the sandbox ran a hook the command planted through .git/commondir: %s", o)
	}
	if p := filepath.Join(f.root, ".git", "commondir"); exists(p) {
		t.Errorf("the command created %s, which moves the repository's hooks and config to a directory it writes: %s", p, o)
	}
}

// Many repositories keep their hooks in the tree and
// make .git/hooks a symlink to them (.git/hooks -> ../.githooks). Build
// binds the directory the link names read-only, but the link itself
// stays an ordinary entry of the writable .git: the command replaces it
// with a directory of its own hooks.
func TestRedteamSymlinkedHooks(t *testing.T) {
	t.Parallel()
	f := newFixture(t, world{})
	hooks := filepath.Join(f.root, ".git", "hooks")
	if err := os.Rename(hooks, filepath.Join(f.root, ".githooks")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../.githooks", hooks); err != nil {
		t.Fatal(err)
	}
	o := f.run(t, `rm .git/hooks; mkdir .git/hooks; echo 'echo pwned' > .git/hooks/pre-commit; chmod +x .git/hooks/pre-commit
echo `+probeEnd)
	ranToEnd(t, o)
	if fi, err := os.Lstat(hooks); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("the command replaced the symlink %s with a directory of its own (%v, %v): %s", hooks, fi.Mode(), err, o)
	}
}

// Build protects the hooks and config of at most 64
// directories of .git/modules, in name order. One call makes 70 empty
// ones that sort first; the next call finds a real submodule's git
// directory past the bound, unprotected, and writes its hooks.
func TestRedteamSubmoduleHooksPastTheBound(t *testing.T) {
	t.Parallel()
	f := newFixture(t, world{})
	sub := filepath.Join(f.root, ".git", "modules", "zlib")
	writeFile(t, filepath.Join(sub, "config"), "[core]\n\tbare = false\n")
	writeFile(t, filepath.Join(sub, "hooks", "README"), "the submodule's hooks\n")
	f.watch(filepath.Join(sub, "hooks"), filepath.Join(sub, "config"))
	o := f.run(t, `for i in $(seq 100 170); do mkdir -p .git/modules/a$i; done; echo `+probeEnd)
	ranToEnd(t, o)
	o = f.run(t, `echo 'echo pwned' > .git/modules/zlib/hooks/pre-commit; chmod +x .git/modules/zlib/hooks/pre-commit
echo '[core]' >> .git/modules/zlib/config; echo `+probeEnd)
	ranToEnd(t, o)
}

// A command's cgroup (memory_max, pids_max) is
// named after the call id, which the caller chooses (the batch API, MCP
// clients passing a model's ids on, `toolhost call --id`). An id that
// is not one path element ("a/b", ".", "..") or that a concurrent call
// already uses gets no cgroup, and the command runs without its memory
// and process limits: a tool argument turns part of the confinement off.
func TestRedteamCallIDDropsLimits(t *testing.T) {
	t.Parallel()
	const pidsMax = 20
	f := newFixture(t, world{config: fmt.Sprintf("[tools.timeouts]\nshell_commands_seconds = 30\n[tools.run_command]\npids_max = %d\n", pidsMax)})
	// A bounded burst: 40 sleeps, which the call's end kills.
	// The burst runs in a subshell, which a refused fork ends, and the
	// count uses builtins only: at the limit no fork succeeds.
	o := f.startID(t, "a/b", `( for i in $(seq 40); do sleep 30 & done ) 2>/dev/null
n=0; for p in /proc/[0-9]*; do n=$((n+1)); done
echo "processes: $n"
echo `+probeEnd).wait(t)
	f.verify(t, o)
	ranToEnd(t, o)
	for _, a := range o.result.Confinement {
		if !slices.Contains(a.Cgroup, "pids") || !slices.Contains(a.Cgroup, "memory") {
			t.Errorf("with call id \"a/b\" the command ran without its cgroup limits (cgroup %q; with an ordinary id it has memory and pids here): %s", a.Cgroup, o)
		}
	}
	var n int
	for _, line := range strings.Split(o.output, "\n") {
		if _, err := fmt.Sscanf(line, "processes: %d", &n); err == nil && n > pidsMax {
			t.Errorf("the command ran %d processes at once, past pids_max = %d: %s", n, pidsMax, o)
		}
	}
}

// The allowlist proxy is shared by every call of a
// toolhost process and serves 256 client connections at once. A command
// connects to its socket, bind-mounted at /run/toolhost/proxy.sock,
// directly (around the relay and its bound of 128), opens a CONNECT
// tunnel on every slot to an allowed host that stays silent, and ends.
// The tunnels outlive the call (the proxy waits for the remote side or
// five idle minutes), so every later call's network is dead: here the
// next call of the same batch cannot fetch from an allowed server.
func TestRedteamProxyExhaustedAcrossCalls(t *testing.T) {
	t.Parallel()
	f := newFixture(t, world{network: "allowlist", config: `
[tools.run_command]
network = "allowlist"
allowed_domains = ["127.0.0.1"]
`})
	silent := silentListener(t)
	web := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "SERVED-"+f.mark) })}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go web.Serve(ln)
	t.Cleanup(func() { web.Close() })
	hog := `/usr/bin/python3 - <<'PY'
import socket
held = []
for i in range(300):
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(3)
    try:
        s.connect("/run/toolhost/proxy.sock")
        s.sendall(b"CONNECT ` + silent + ` HTTP/1.1\r\nHost: x\r\n\r\n")
        s.recv(100)
    except OSError as e:
        print("stopped at", i, e)
        break
    held.append(s)
print("tunnels", len(held))
PY
echo ` + probeEnd
	fetch := `curl -sS -m 20 http://` + ln.Addr().String() + `/; echo; echo ` + probeEnd
	results := f.batch(t, hog, fetch)
	if len(results) != 2 {
		t.Fatalf("want 2 results, got %d", len(results))
	}
	t.Logf("the hog: %s", results[0].Content)
	if !strings.Contains(results[1].Content, "SERVED-"+f.mark) {
		t.Errorf("after a command held the proxy's connections and ended, the next call could not fetch from an allowed server: %+v", results[1])
	}
}

// Each call's private tmp is a directory under
// the state directory that the call's cleanup removes. When toolhost is
// killed with SIGKILL mid-command (the OOM killer, a crash), nothing
// removes it, not even the next toolhost using the same state
// directory: what a command wrote to /tmp stays on the host's disk,
// unbounded and out of the user's sight.
func TestRedteamPrivateTmpLeftAfterKill(t *testing.T) {
	t.Parallel()
	f := newFixture(t, world{})
	c := f.start(t, `head -c 4000000 /dev/zero > /tmp/{mark}-left; echo up > started; sleep 1000`)
	if !waitFile(filepath.Join(f.root, "started"), time.Minute) {
		c.cmd.Process.Kill()
		t.Fatalf("the command never started: %s", c.wait(t))
	}
	c.killed = true
	if err := c.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	c.wait(t)
	// The next toolhost using the state directory.
	o := f.run(t, `echo `+probeEnd)
	ranToEnd(t, o)
	left, _ := filepath.Glob(filepath.Join(f.state, "sandbox", "tmp", "*"))
	if len(left) > 0 {
		t.Errorf("the private tmp of a call whose toolhost was killed is still on the host after the next toolhost ran: %q", left)
	}
}

// commit makes one commit in dir's repository, with the host's git.
func commit(t *testing.T, dir string) {
	t.Helper()
	git := exec.Command("git", "-c", "user.name=t", "-c", "user.email=t@e", "commit", "-q", "--allow-empty", "-m", "first")
	git.Dir = dir
	if out, err := git.CombinedOutput(); err != nil {
		t.Fatalf("git commit in %s: %v\n%s", dir, err, out)
	}
}

// silentListener accepts connections on 127.0.0.1 and never answers nor
// closes them until the test ends; it returns its address.
func silentListener(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var held []net.Conn
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				break
			}
			held = append(held, c)
		}
		for _, c := range held {
			c.Close()
		}
	}()
	t.Cleanup(func() { ln.Close(); <-done })
	return ln.Addr().String()
}

// startID is fixture.start with the call id given to toolhost (--id).
func (f *fixture) startID(t *testing.T, id, command string) *call {
	t.Helper()
	return f.startToolhost(t, []string{"call", "run_command", "--id", id}, map[string]string{"command": f.withMark(command)})
}

// withMark is command (a template) behind the line that exports the
// case's marker, as fixture.start sends it.
func (f *fixture) withMark(command string) string {
	return markVar + "=" + f.mark + "; export " + markVar + "\n" + f.expand(command)
}

// startToolhost starts toolhost with args, the fixture's state
// directory and environment, and input as the JSON file named by
// --args-file (call) or --file (batch).
func (f *fixture) startToolhost(t *testing.T, args []string, input any) *call {
	t.Helper()
	b, err := json.Marshal(input)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "input.json")
	writeFile(t, file, string(b))
	flag := "--args-file"
	if args[0] == "batch" {
		flag = "--file"
	}
	f.before = snapshot(f.watched...)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	c := &call{cancel: cancel}
	c.cmd = exec.CommandContext(ctx, toolhost, append(append([]string{"--state-dir", f.state}, args...), flag, file, "--allow", "run_command")...)
	c.cmd.Dir = f.root
	c.cmd.Env = append(os.Environ(), "HOME="+f.home, "XDG_CONFIG_HOME="+filepath.Join(f.home, ".config"), "TOOLHOST_TEST_SECRET="+f.envSecret)
	c.cmd.Stdout, c.cmd.Stderr = &c.stdout, &c.stderr
	c.cmd.WaitDelay = 10 * time.Second
	c.start = time.Now()
	if err := c.cmd.Start(); err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() { c.cmd.Process.Kill(); cancel() })
	return c
}

// batchResult is one result of `toolhost batch`.
type batchResult struct {
	ID      string          `json:"id"`
	OK      bool            `json:"ok"`
	Content string          `json:"content"`
	Error   json.RawMessage `json:"error"`
}

// batch runs commands (templates) as one batch of run_command calls in
// one toolhost process, in order, and returns their results after the
// checks every case gets (fixture.verify's, on the whole batch).
func (f *fixture) batch(t *testing.T, commands ...string) []batchResult {
	t.Helper()
	for _, c := range commands {
		needTools(t, c)
	}
	type callIn struct {
		ID        string            `json:"id"`
		Name      string            `json:"name"`
		Arguments map[string]string `json:"arguments"`
	}
	var calls []callIn
	for i, c := range commands {
		calls = append(calls, callIn{ID: fmt.Sprintf("call_%d", i+1), Name: "run_command", Arguments: map[string]string{"command": f.withMark(c)}})
	}
	c := f.startToolhost(t, []string{"batch"}, map[string]any{"conversation_id": "redteam", "turn_id": "t1", "calls": calls})
	err := c.cmd.Wait()
	c.cancel()
	t.Logf("toolhost batch: %v, after %v\nstderr: %s", err, time.Since(c.start).Round(time.Millisecond), c.stderr.String())
	var out struct {
		Results []batchResult `json:"results"`
	}
	if err := json.Unmarshal(c.stdout.Bytes(), &out); err != nil {
		t.Fatalf("toolhost batch printed no results (%v): %s", err, c.stdout.String())
	}
	whole := &outcome{stdout: c.stdout.String(), stderr: c.stderr.String(), killed: true}
	f.verify(t, whole)
	return out.Results
}

// Secrets are unreadable in every mode, also when a
// root holds them (a root that is $HOME): Build hides each one by its
// path. The hide is a mount on the secret itself, so the command cannot
// rename the secret, but it can rename a directory above it that is not
// a mount point (~/.config above ~/.config/gh): the hidden tree moves
// with it, still hidden in this call, and the next call, whose Build
// looks for ~/.config/gh and finds nothing there, shows ~/.cfg2/gh in
// full. The same holds for toolhost's state directory in a root.
func TestRedteamSecretRenamedAwayFromItsHide(t *testing.T) {
	t.Parallel()
	f := newFixture(t, world{})
	args := []string{"call", "run_command", "--root", f.home}
	o := f.startToolhost(t, args, map[string]string{"command": f.withMark(`mv {home}/.config {home}/.cfg2; echo ` + probeEnd)}).wait(t)
	f.verify(t, o)
	ranToEnd(t, o)
	o = f.startToolhost(t, args, map[string]string{"command": f.withMark(`cat {home}/.cfg2/gh/hosts.yml {home}/.cfg2/gcloud/credentials.db; echo ` + probeEnd)}).wait(t)
	f.verify(t, o)
	ranToEnd(t, o)
}
