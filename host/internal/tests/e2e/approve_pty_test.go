package e2e

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

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
	// The call is named as a model would name it, which the question shows.
	term := startTerminalCommand(t, w.command(w.argv(callArgs(tool, args, "--id", "call_1")...)...))
	term.tool = tool
	return term
}

// startTerminalCommand starts cmd with its stdin and stderr on a
// pseudo-terminal and its stdout (the result, apart from the question)
// kept aside.
func startTerminalCommand(t *testing.T, cmd *exec.Cmd) *terminal {
	t.Helper()
	term := &terminal{t: t, cmd: cmd, done: make(chan struct{})}
	cmd.Stdout = &term.stdout
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
		cmd.Wait()
		tty.Close()
	})
	return term
}

// waitFor returns what the terminal showed once it shows s, line ends as
// "\n".
func (term *terminal) waitFor(s string) string {
	term.t.Helper()
	return term.waitForN(s, 1)
}

// waitForN is waitFor once the terminal shows s n times.
func (term *terminal) waitForN(s string, n int) string {
	term.t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		term.mu.Lock()
		shown := strings.ReplaceAll(term.screen.String(), "\r\n", "\n")
		term.mu.Unlock()
		if strings.Count(shown, s) >= n {
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

// On a real terminal: the question shows the whole
// arguments that will run, whatever the summary hid: a command behind a
// redacted "secret", a second line behind a long first one, a path
// behind ./././, and file content whose fake question cannot pass for
// toolhost's.
func TestApprovalShowsWhatRuns(t *testing.T) {
	t.Run("command hidden by redaction", func(t *testing.T) {
		w := newWorkspace(t).withConfig(t, promptConfig)
		marker := filepath.Join(t.TempDir(), "pwned")
		command := "GITHUB_TOKEN=$(touch${IFS}" + marker + "|base64) true"
		term := startTerminal(t, w, "run_command", jsonArgs(t, map[string]any{"command": command}))
		shown := unfold(term.waitFor("[y/N] "))
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
		shown := unfold(term.waitFor("[y/N] "))
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
		shown := unfold(term.waitFor("\nApprove call call_1? [y/N] "))
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

// unfold joins the rows the question folded to the terminal's width
// back into the lines they show.
func unfold(shown string) string {
	return strings.ReplaceAll(shown, "\n    ┆", "")
}

// On a real terminal: a value longer
// than a screen shows its first and last lines, every row folded to the
// terminal's width, with a recap naming the file right above the
// question; v shows every line and asks again.
func TestApprovalLongValue(t *testing.T) {
	w := newWorkspace(t).withConfig(t, promptConfig)
	var lines []string
	for i := range 60 {
		lines = append(lines, fmt.Sprintf("line %d %s", i, strings.Repeat("x", 150)))
	}
	content := strings.Join(lines, "\n") + strings.Repeat("\n", 5000)
	term := startTerminal(t, w, "write_file", jsonArgs(t, map[string]any{"path": "././notes.md", "content": content}))
	shown := term.waitFor("[y/N] ")
	for _, want := range []string{
		"\n    │line 19 ", "\n    ⋮ 5,020 more lines not shown (4,980 empty); answer v to view all\n",
		"\n┃ content: " + group(len(content)) + " bytes, 5,060 lines (5,000 empty)\n",
		"\n┃ path: 12 bytes\n┃   → file notes.md\n┗━ y runs it, v shows every argument in full, anything else denies it\nApprove call call_1? [y/N] ",
	} {
		if !strings.Contains(shown, want) {
			t.Errorf("the question does not show %q:\n%s", want, shown)
		}
	}
	for _, row := range strings.Split(shown, "\n") {
		if n := utf8.RuneCountInString(row); n >= 100 {
			t.Errorf("a row of %d characters on a terminal of 100 columns: %q", n, row)
		}
	}
	if strings.Contains(shown, "\n    │line 20 ") {
		t.Errorf("the default view shows every line:\n%s", shown)
	}
	if _, err := io.WriteString(term.tty, "v\r"); err != nil {
		t.Fatal(err)
	}
	shown = unfold(term.waitForN("Approve call call_1? [y/N] ", 2))
	all := shown[strings.Index(shown, "[y/N] v\n"):]
	for _, l := range lines {
		if !strings.Contains(all, "\n    │"+l+"\n") {
			t.Errorf("v does not show the line %q", l)
		}
	}
	if !strings.Contains(all, "\n    ⋮ 5,000 empty lines\n") {
		t.Errorf("v does not count the empty lines:\n%s", all)
	}
	if r := term.answer("n"); r.OK {
		t.Errorf("denied write ran: %+v", r)
	}
	if _, err := os.Stat(filepath.Join(w.dir, "notes.md")); err == nil {
		t.Error("notes.md written after a no")
	}
}

// group is n with its thousands separated, as toolhost counts.
func group(n int) string {
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
