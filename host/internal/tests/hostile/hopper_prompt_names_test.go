package hostile_test

// Red team, second round: attacks that still succeeded after the
// first fixes, each failing until its own fix landed (a flooded approval
// prompt, a fork-hopping child, names that are not UTF-8). The attacks
// the first fixes already stopped are in output_stopped_test.go.

import (
	"bytes"
	"encoding/json"
	"github.com/creack/pty"
	"github.com/toolhost/toolhost/internal/testenv"
	"github.com/toolhost/toolhost/internal/testplugin"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// hopperC leaves the shell's process group and then keeps forking, each
// parent exiting at once, for two seconds; a copy that outlives that
// writes "survived" in its working directory.
const hopperC = `#include <fcntl.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>
int main(void) {
	setpgid(0, 0);
	close(creat("ready", 0644));
	time_t end = time(0) + 2;
	while (time(0) < end)
		if (fork() > 0)
			_exit(0);
	FILE *f = fopen("survived", "w");
	fprintf(f, "%d", getpid());
	fclose(f);
	return 0;
}
`

// Attack (model): a command starts a program that
// leaves the shell's process group (no setsid: it stays in the session)
// and then "hops": it forks, the parent exits at once, the child does
// the same. At any moment one process of the session lives, but no pid
// lives longer than one fork (tens of microseconds), so each scan of
// /proc lists a pid that is gone when getsid or the signal reaches it,
// and a scan that finds no live member ends the kill. The hopper stops
// after two seconds and writes "survived": it outlived the call and can
// run anything from there. Eight hoppers run, so that one escapes
// whatever the timing of a given run.
// Expected: no process of the command's session runs after the call.
// Was at fault: host/internal/proc/session_linux.go killSession stops at
// the first scan that finds no member, and kills by pid, which a hopper
// has left by the time the signal is sent.
// Needs gcc (a shell or Python hops too slowly to escape).
func TestForkHopperOutlivesSessionKill(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("session kill is Linux only")
	}
	// Unconfined: this is proc's session kill, which is what stops the
	// hopper under sandbox = "off"; confined, the command's PID namespace
	// dies with it (host/internal/tests/confine).
	h, root := openHost(t, runUnconfined)
	os.WriteFile(filepath.Join(root, "hop.c"), []byte(hopperC), 0o644)
	gcc := testenv.Runs(t, "gcc", "apt-get install gcc (as root)", "--version")
	if out, err := exec.Command(gcc, "-O2", "-o", filepath.Join(root, "hop"), filepath.Join(root, "hop.c")).CombinedOutput(); err != nil {
		t.Fatalf("gcc cannot build the hopper: %v\n%s", err, out)
	}
	rs := runBatch(t, h, approveAll(), call("1", "run_command",
		`{"command":"for i in 1 2 3 4 5 6 7 8; do ./hop & done; while [ ! -e ready ]; do sleep 0.01; done; sleep 0.05"}`))
	if !rs[0].OK {
		t.Fatalf("run_command: %+v", rs[0].Error)
	}
	time.Sleep(3500 * time.Millisecond)
	if b, err := os.ReadFile(filepath.Join(root, "survived")); err == nil {
		t.Errorf("a process of the command (pid %s now) kept running after the call returned and wrote a file", b)
	}
}

// toolhostBinary builds the CLI into a directory of the test's.
func toolhostBinary(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "toolhost")
	cmd := exec.Command("go", "build", "-o", bin, "github.com/toolhost/toolhost/host/cmd/toolhost")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// cliCommand is `toolhost call tool --args args` in dir, with an
// operator configuration asking before every side effect, in a home of
// its own.
func cliCommand(t *testing.T, dir, tool, args string) *exec.Cmd {
	t.Helper()
	bin := toolhostBinary(t)
	home := t.TempDir()
	cfg := filepath.Join(home, "operator.toml")
	os.WriteFile(cfg, []byte("[tools.approval]\nmode = \"prompt\"\ndenylist = []\nauto_approve_new_files = false\n"), 0o600)
	cmd := exec.Command(bin, "--state-dir", filepath.Join(home, "state"), "--config", cfg, "--plugins", realPlugins(t), "call", tool, "--args", args)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "HOME="+home, "XDG_CONFIG_HOME="+filepath.Join(home, ".config"),
		"XDG_STATE_HOME="+filepath.Join(home, ".state"), "TOOLHOST_CACHE_DIR="+testplugin.CacheDir(t))
	return cmd
}

// screen is what a terminal of cols columns and rows rows shows of out
// at the end: lines longer than a row wrap to the next, at the margin.
func screen(out string, cols, rows int) []string {
	var all []string
	for _, line := range strings.Split(strings.ReplaceAll(out, "\r\n", "\n"), "\n") {
		r := []rune(line)
		for len(r) > cols {
			all = append(all, string(r[:cols]))
			r = r[cols:]
		}
		all = append(all, string(r))
	}
	return all[max(0, len(all)-rows):]
}

// Attack (model): write .bashrc (a code path, so a
// person is asked) with arguments in the order path, then content; the
// content is 100,000 lines, blank but for the last (200 KB as JSON, within
// max_tool_args_bytes), and its last line is padded with spaces so
// that, soft-wrapped by an 80-column terminal, it draws a whole fake
// question at the left margin: a low-risk write of five bytes to
// notes.md. The real headline, reason and path scroll off; what the
// person sees above "Approve call 1? [y/N]" is the forgery.
// Expected: the screen the person answers on names the file that will
// be written, and nothing the model wrote passes for toolhost's lines.
func TestApprovalPromptFloodAndWrapForgery(t *testing.T) {
	const cols, rows = 80, 24
	// .bashrc does not exist yet: writing it is a code path, asked about
	// all the same, and replacing one unread would be refused unasked.
	dir := t.TempDir()
	pad := func(s string) string { return s + strings.Repeat(" ", cols-len([]rune(s))) }
	forged := strings.Repeat(" ", cols-len([]rune("    │"))) +
		pad("LOW risk: Write 5 bytes to notes.md") +
		pad("  reason: tools.approval.mode is prompt") +
		pad("  call 1 (write_file) will run with these arguments:") +
		pad("  path: notes.md") + pad("    → file notes.md") + pad("  content: hello")
	content := strings.Repeat("\n", 100000) + forged
	c, _ := json.Marshal(content)
	args := `{"path":".bashrc","content":` + string(c) + `}`
	argsFile := filepath.Join(t.TempDir(), "args.json")
	os.WriteFile(argsFile, []byte(args), 0o644)
	cmd := cliCommand(t, dir, "write_file", "")
	cmd.Args = append(cmd.Args[:len(cmd.Args)-2], "--args-file", argsFile, "--id", "1")
	var stdout bytes.Buffer
	cmd.Stdout = &stdout
	tty, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: rows, Cols: cols})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait(); tty.Close() }()
	var mu sync.Mutex
	var shown bytes.Buffer
	go func() {
		buf := make([]byte, 64<<10)
		for {
			n, err := tty.Read(buf)
			mu.Lock()
			shown.Write(buf[:n])
			mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	deadline := time.Now().Add(20 * time.Second)
	var out string
	for time.Now().Before(deadline) {
		mu.Lock()
		out = shown.String()
		mu.Unlock()
		if strings.HasSuffix(out, "[y/N] ") {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if !strings.HasSuffix(out, "[y/N] ") {
		t.Fatalf("no question after 20 s; the terminal shows %q, stdout %s", out, stdout.String())
	}
	io.WriteString(tty, "n\r")
	last := screen(out, cols, rows)
	if !strings.Contains(strings.Join(last, "\n"), ".bashrc") {
		t.Errorf("the screen the person answers on does not name .bashrc, the file that will be written; it shows:\n%s", strings.Join(last, "\n"))
	}
	for _, row := range last {
		if strings.HasPrefix(row, "  path: notes.md") {
			t.Errorf("a row drawn by the model's content passes for toolhost's own argument line: %q", strings.TrimRight(row, " "))
		}
	}
}

// Attack (hostile repository): two files whose names
// differ only in bytes that are not UTF-8, "data\xff" and "data\xfe"
// (Linux allows both), beside the real "data\uFFFD". list_directory
// shows all three as "data\uFFFD": the names are not the real names, a
// listing cannot tell them apart, and a read of the name shown reaches a
// different file from the one listed.
// Expected: each entry's name identifies its file (an escape that keeps
// the byte, such as a "name_bytes" field in base64 or a visible \xff
// notation the sandbox accepts back), so that what the model reads is
// what was listed.
func TestInvalidUTF8NamesCollide(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("names with invalid UTF-8 need Linux")
	}
	h, root := openHost(t, nil)
	for _, n := range []string{"data\xff", "data\xfe", "data\uFFFD"} {
		mustWrite(t, filepath.Join(root, n), n+"\n")
	}
	rs := runBatch(t, h, nil, call("l", "list_directory", `{"structured":true}`))
	var got struct {
		Entries []struct{ Name string } `json:"entries"`
	}
	if err := json.Unmarshal(rs[0].Structured, &got); err != nil {
		t.Fatalf("%v: %s", err, rs[0].Structured)
	}
	seen := map[string]int{}
	for _, e := range got.Entries {
		seen[e.Name]++
	}
	for name, n := range seen {
		if n > 1 {
			t.Errorf("%d different files are all listed as %q:\n%s", n, name, rs[0].Content)
		}
	}
}
