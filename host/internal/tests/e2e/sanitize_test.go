package e2e

import (
	"bytes"
	"encoding/json"
	"strings"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"
)

// execution is one run of the binary: its output, exit code, how long it
// took and its peak resident memory.
type execution struct {
	stdout, stderr string
	code           int
	elapsed        time.Duration
	maxRSS         int64 // bytes
}

// measure runs one tool call in w, killing toolhost after limit, and
// decodes its result.
func measure(t *testing.T, w *workspace, limit time.Duration, tool, args string, extra ...string) (result, execution) {
	t.Helper()
	cmd := w.command(w.argv(callArgs(tool, args, extra...)...)...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	timer := time.AfterFunc(limit, func() { cmd.Process.Kill() })
	defer timer.Stop()
	start := time.Now()
	err := cmd.Wait()
	x := execution{stdout: out.String(), stderr: errb.String(), elapsed: time.Since(start)}
	x.code = exitCode(t, err)
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		x.maxRSS = ru.Maxrss << 10 // kilobytes on Linux
	}
	if x.elapsed >= limit {
		t.Fatalf("toolhost call %s did not end within %v\nstderr: %s", tool, limit, x.stderr)
	}
	return decodeResult(t, tool, x.stdout, x.stderr), x
}

// controls returns the terminal controls in s: C0 but \n and \t, DEL, C1
// (as UTF-8 or as raw 8-bit bytes), bidi and zero-width characters.
func controls(s string) []string {
	var found []string
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1 && s[i] >= 0x80 && s[i] <= 0x9f,
			r < 0x20 && r != '\n' && r != '\t', r >= 0x7f && r <= 0x9f,
			r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069, r >= 0x200b && r <= 0x200f:
			found = append(found, strings.ToValidUTF8(s[max(0, i-10):min(len(s), i+10)], "?"))
		}
		i += size
	}
	return found
}

// --stream copies run_command's output to the terminal
// as it comes; escapes cut across the command's writes (an OSC 52
// clipboard write, clear screen, a window title, a CSI by its C1 byte)
// must not reach it, even in part, and a rune cut across writes must
// arrive whole.
func TestStream_EscapesSplitAcrossWrites(t *testing.T) {
	o := newWorkspace(t).withConfig(t, "")
	command := `printf 'A\033]52;c;aGk='; sleep 0.2; printf '\aB\033['; sleep 0.2; printf '2JC\033]0;pwn'; sleep 0.2; ` +
		`printf 'ed\aD\302'; sleep 0.2; printf '\2332JE\342\224'; sleep 0.2; printf '\200F\n'; sleep 0.2; ` +
		`printf 'G\033]52;c;' >&2; sleep 0.2; printf 'aGk=\a\302' >&2; sleep 0.2; printf '\233HH\n' >&2`
	r, x := measure(t, o, time.Minute, "run_command", jsonArgs(t, map[string]any{"command": command}), "--stream", "--allow", "run_command")
	if !r.OK {
		t.Fatalf("run_command failed: %+v\nstderr: %s", r.Error, x.stderr)
	}
	if c := controls(x.stderr); len(c) > 0 {
		t.Errorf("the terminal got controls near %q\nstderr: %q", c, x.stderr)
	}
	for _, want := range []string{"ABCDE\u2500F\n", "GH\n"} {
		if !strings.Contains(x.stderr, want) {
			t.Errorf("streamed output lacks %q, the whole output sanitized: a chunk boundary let part of a sequence through\nstderr: %q", want, x.stderr)
		}
	}
	for _, leak := range []string{"aGk=", "52;c", "2J", "pwn", "\uFFFD"} {
		if strings.Contains(x.stderr, leak) {
			t.Errorf("streamed output shows %q, part of a split sequence\nstderr: %q", leak, x.stderr)
		}
	}
}

// File names are hostile input. A U+009B in a name
// must not swallow the JSON punctuation after it (which could close the
// name and add entries), and every control, newline or bidi override is
// escaped: the listing is valid JSON whose names are the real names,
// with no control byte in the text.
func TestListDirectory_HostileNamesStayJSON(t *testing.T) {
	o := newWorkspace(t).withConfig(t, "")
	names := []string{
		"\u009b\"},{\"name\":\"fake",
		"\u009b\\\"},{\\\"name\\\":\\\"fake2",
		"title\x1b]0;pwned\x07end",
		"clear\x1b[2Jscreen",
		"new\nline",
		"bidi\u202etxt.exe",
		"c1\u0085\u009c\x7fdel",
		"plain.txt",
	}
	for _, n := range names {
		o.file(t, n, "x")
	}
	r, x := measure(t, o, time.Minute, "list_directory", `{"path":".","structured":true}`)
	if !r.OK {
		t.Fatalf("list_directory failed: %+v\nstderr: %s", r.Error, x.stderr)
	}
	if c := controls(r.Content); len(c) > 0 {
		t.Errorf("the listing has controls near %q: %q", c, r.Content)
	}
	var listing struct {
		Entries []struct {
			Name string `json:"name"`
			Path string `json:"path"`
		} `json:"entries"`
		Truncated bool `json:"truncated"`
	}
	if err := json.Unmarshal(r.Structured, &listing); err != nil {
		t.Fatalf("the listing's structured result is not JSON: %v\n%q", err, r.Structured)
	}
	// One line per entry, and a totals line: no name starts a line of
	// its own.
	if n := strings.Count(r.Content, "\n"); n != len(names)+1 {
		t.Errorf("the text has %d lines for %d entries: %q", n, len(names), r.Content)
	}
	if len(listing.Entries) != len(names) || listing.Truncated {
		t.Errorf("%d entries (truncated %v), want the %d real names", len(listing.Entries), listing.Truncated, len(names))
	}
	// The text shows each name as it is, its hidden characters written
	// out, so a model sees what the name holds.
	for _, shown := range []string{`\u{9b}"},{"name":"fake  1`, `\u{9b}\"},{\"name\":\"fake2  1`, `title\x1b]0;pwned\x07end  1`,
		`clear\x1b[2Jscreen  1`, `new\x0aline  1`, `bidi\u{202e}txt.exe  1`, `c1\u{85}\u{9c}\x7fdel  1`, "plain.txt  1"} {
		if !strings.Contains(r.Content, shown+"\n") {
			t.Errorf("the listing lacks the line %q: %q", shown, r.Content)
		}
	}
}
