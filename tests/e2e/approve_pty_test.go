package e2e

import (
	"bytes"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/creack/pty"
)

// terminal is a toolhost process whose stdin and stderr are a
// pseudo-terminal, as a person at a terminal runs it: the approval
// question is asked on it.
type terminal struct {
	t      *testing.T
	tool   string
	cmd    *exec.Cmd
	tty    *os.File
	stdout bytes.Buffer

	mu     sync.Mutex
	screen bytes.Buffer
	done   chan struct{}
}

// startTerminal starts a call of tool with args in w.
func startTerminal(t *testing.T, w *workspace, tool, args string) *terminal {
	t.Helper()
	cmd := w.command(w.argv(callArgs(tool, args)...)...)
	term := &terminal{t: t, tool: tool, cmd: cmd, done: make(chan struct{})}
	cmd.Stdout = &term.stdout // the result, apart from the question
	tty, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 50, Cols: 100})
	if err != nil {
		t.Fatal(err)
	}
	term.tty = tty
	go func() {
		defer close(term.done)
		buf := make([]byte, 4096)
		for {
			n, err := tty.Read(buf)
			term.mu.Lock()
			term.screen.Write(buf[:n])
			term.mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	t.Cleanup(func() {
		cmd.Process.Kill()
		tty.Close()
	})
	return term
}

// waitFor returns what the terminal showed once it shows s, line ends as
// "\n".
func (term *terminal) waitFor(s string) string {
	term.t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		term.mu.Lock()
		shown := strings.ReplaceAll(term.screen.String(), "\r\n", "\n")
		term.mu.Unlock()
		if strings.Contains(shown, s) {
			return shown
		}
		time.Sleep(20 * time.Millisecond)
	}
	term.t.Fatalf("the terminal never showed %q; it shows:\n%s", s, term.screen.String())
	return ""
}

// answer types a line and waits for toolhost to end, returning its result.
func (term *terminal) answer(line string) result {
	term.t.Helper()
	if _, err := io.WriteString(term.tty, line+"\r"); err != nil {
		term.t.Fatal(err)
	}
	exitCode(term.t, term.cmd.Wait()) // the result says why
	term.mu.Lock()
	defer term.mu.Unlock()
	return decodeResult(term.t, term.tool, term.stdout.String(), term.screen.String())
}

// promptConfig is an operator's configuration that asks before side
// effects and lets run_command be asked about.
const promptConfig = `[tools.approval]
mode = "prompt"
denylist = []
auto_approve_new_files = false
`

// issue 10 item 3, on a real terminal: the question shows the whole
// arguments that will run, whatever the summary hid: a command behind a
// redacted "secret", a second line behind a long first one, a path
// behind ./././, and file content whose fake question cannot pass for
// toolhost's.
func TestApprovalShowsWhatRuns_Issue10Item3(t *testing.T) {
	t.Run("command hidden by redaction", func(t *testing.T) {
		w := newWorkspace(t).withConfig(t, promptConfig)
		marker := filepath.Join(t.TempDir(), "pwned")
		command := "GITHUB_TOKEN=$(touch${IFS}" + marker + "|base64) true"
		term := startTerminal(t, w, "run_command", jsonArgs(t, map[string]any{"command": command}))
		shown := term.waitFor("[y/N] ")
		if !strings.Contains(shown, "\n  command: "+command+"\n") {
			t.Errorf("the question does not show the command %q:\n%s", command, shown)
		}
		if !strings.Contains(shown, "secrets hidden in the summary; the full arguments below are what will run") {
			t.Errorf("the question does not say the summary was redacted:\n%s", shown)
		}
		if r := term.answer("n"); r.OK || !strings.Contains(r.Error.Message, "Denied by the user at the terminal") {
			t.Errorf("result %+v", r)
		}
		if _, err := os.Stat(marker); err == nil {
			t.Error("the hidden command ran")
		}
	})

	t.Run("second line behind a long first one", func(t *testing.T) {
		w := newWorkspace(t).withConfig(t, promptConfig)
		marker := filepath.Join(t.TempDir(), "pwned")
		first := "echo " + strings.Repeat("harmless ", 23) + "done"
		if len(first) != 216 {
			t.Fatalf("first line has %d characters", len(first))
		}
		term := startTerminal(t, w, "run_command", jsonArgs(t, map[string]any{"command": first + "\ntouch " + marker}))
		shown := term.waitFor("[y/N] ")
		for _, want := range []string{"\n  command: 2 lines\n", "\n    │" + first + "\n", "\n    │touch " + marker + "\n", "summary shortened"} {
			if !strings.Contains(shown, want) {
				t.Errorf("the question does not show %q:\n%s", want, shown)
			}
		}
		term.answer("n")
		if _, err := os.Stat(marker); err == nil {
			t.Error("the second line ran")
		}
	})

	t.Run("path cleaned and content in full", func(t *testing.T) {
		w := newWorkspace(t).withConfig(t, promptConfig)
		content := "hello\nApprove call call_1? [y/N] y\nend\n"
		term := startTerminal(t, w, "write_file", jsonArgs(t, map[string]any{"path": "./././a/./b.txt", "content": content}))
		shown := term.waitFor("\nApprove call call_1? [y/N] ")
		for _, want := range []string{
			"\n  path: ./././a/./b.txt\n    → file a/b.txt\n",
			"\n  content: 4 lines\n    │hello\n    │Approve call call_1? [y/N] y\n    │end\n    │\n",
		} {
			if !strings.Contains(shown, want) {
				t.Errorf("the question does not show %q:\n%s", want, shown)
			}
		}
		if n := strings.Count(shown, "\nApprove call"); n != 1 {
			t.Errorf("%d lines start with the question:\n%s", n, shown)
		}
		if r := term.answer("y"); !r.OK {
			t.Fatalf("approved write failed: %+v", r.Error)
		}
		if got, err := os.ReadFile(filepath.Join(w.dir, "a", "b.txt")); err != nil || string(got) != content {
			t.Errorf("a/b.txt = %q, %v", got, err)
		}
	})
}
