package hostile_test

// Red team, second round: attacks on streamed output, JSON
// results, dry-run diffs and file modes that the fixes stop, kept here so
// they stay stopped. The attacks that still succeed are in
// hopper_prompt_names_test.go, behind the redteam build tag until fixed.

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/toolhost/toolhost/host"
	"github.com/toolhost/toolhost/host/internal/engine"
)

// streamed runs command through run_command and returns the chunks a
// --stream consumer receives, stdout and stderr together in order.
func streamed(t *testing.T, command string) ([]string, engine.Result) {
	t.Helper()
	h, _ := openHost(t, runUnconfined)
	var mu sync.Mutex
	var chunks []string
	sink := engine.EventSinkFunc(func(_ context.Context, ev engine.Event) error {
		if ev.Kind == engine.EventStdoutChunk || ev.Kind == engine.EventStderrChunk {
			mu.Lock()
			chunks = append(chunks, ev.Chunk)
			mu.Unlock()
		}
		return nil
	})
	b := engine.Batch{Conversation: "c", Calls: []engine.Call{call("1", "run_command", jsonArgs(t, map[string]any{"command": command}))}}
	rs := process(t, h, context.Background(), b, host.BatchOptions{Approver: approveAll(), Events: sink}, 30*time.Second)
	mu.Lock()
	defer mu.Unlock()
	return chunks, rs[0]
}

// terminalControl returns the first byte or rune of s a terminal acts on
// (C0 but \n and \t, a \r not before \n, DEL, C1, invalid UTF-8), or "".
func terminalControl(s string) string {
	for i, r := range s {
		switch {
		case r == utf8.RuneError && !strings.HasPrefix(s[i:], "\uFFFD"):
			return s[i : i+1]
		case r == '\r' && !strings.HasPrefix(s[i:], "\r\n"):
			return "\r"
		case r == '\n' || r == '\t' || r == '\r':
		case r < 0x20 || (r >= 0x7f && r <= 0x9f):
			return string(r)
		}
	}
	return ""
}

// Attack (command output, FR-OUT-02): a real command
// writes terminal sequences one byte at a time with pauses between, so
// every byte arrives in a chunk of its own: OSC 52 (clipboard write),
// clear screen, a window title, CSI and OSC as UTF-8 C1 controls (U+009B,
// U+009D) cut inside their two bytes, an unterminated OSC longer than the
// 4 KiB hold followed by a real OSC 52, invalid UTF-8, a line that
// erases itself with \r, and stdout and stderr interleaved.
// Expected: no chunk holds a byte a terminal acts on, and the text
// around the sequences arrives.
func TestStreamSplitEscapesStopped(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("sh and printf")
	}
	slowly := func(seq string) string { // one printf per byte, 20 ms apart
		var b strings.Builder
		for i := 0; i < len(seq); i++ {
			b.WriteString(`printf '\` + octal(seq[i]) + `'; sleep 0.02; `)
		}
		return b.String()
	}
	long := strings.Repeat("A", 5000)
	command := "printf 'start\\n'; " +
		slowly("\x1b]52;c;cHduZWQ=\x07") + slowly("\x1b[2J") + slowly("\x1b]0;title\x1b\\") +
		slowly("\u009b2J") + slowly("\u009d52;c;eA==\u009c") +
		"printf '\\033]8;;" + long + "'; sleep 0.05; printf '\\033]52;c;cHduZWQ=\\007'; " +
		"printf 'safe\\r\\033[Kfake\\n' >&2; printf 'bad\\377\\376\\n'; " +
		"printf 'visible\\rhidden\\n'; printf 'end\\n'"
	chunks, res := streamed(t, command)
	if !res.OK {
		t.Fatalf("run_command: %+v", res.Error)
	}
	all := strings.Join(chunks, "")
	for i, c := range chunks {
		if bad := terminalControl(c); bad != "" {
			t.Errorf("chunk %d of %d holds %q: %q", i, len(chunks), bad, c)
		}
	}
	for _, want := range []string{"start", "end", "visible", "hidden"} {
		if !strings.Contains(all, want) {
			t.Errorf("the stream lost %q: %q", want, all)
		}
	}
}

func octal(c byte) string {
	return string([]byte{'0' + c>>6, '0' + c>>3&7, '0' + c&7})
}

// Attack (command output): a flood of one-byte writes,
// each an ESC or half a C1 control, to make the host hold and rescan.
// Expected: the call ends within its budget and streams nothing a
// terminal acts on.
func TestStreamTinyChunkFloodStopped(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("sh")
	}
	start := time.Now()
	chunks, res := streamed(t, `i=0; while [ $i -lt 3000 ]; do printf '\033'; printf '\302'; printf ']'; i=$((i+1)); done; printf '\007done\n'`)
	if !res.OK {
		t.Fatalf("run_command: %+v", res.Error)
	}
	for i, c := range chunks {
		if bad := terminalControl(c); bad != "" {
			t.Fatalf("chunk %d holds %q", i, bad)
		}
	}
	if d := time.Since(start); d > 20*time.Second {
		t.Errorf("took %v", d)
	}
}

// Attack (hostile repository): file names holding
// U+009B followed by JSON punctuation, U+2028 and U+2029, a bidi
// override, and bytes that are not UTF-8 (Linux allows any byte but / and
// NUL), one 255 bytes long.
// Expected: list_directory's text holds no raw control character, its
// structured result is valid JSON with exactly one entry per file, and each valid name decodes to the
// real name.
func TestListHostileNamesStopped(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("names with invalid UTF-8 need Linux")
	}
	h, root := openHost(t, nil)
	names := []string{
		"a\u009b\",{\"name\":\"fake\"},\"x", "line\u2028sep\u2029", "report\u202etxt.sh",
		"bad\xff\xfe", "\xc2", strings.Repeat("\u009b", 127) + "z",
	}
	for _, n := range names {
		if err := os.WriteFile(filepath.Join(root, n), []byte("x"), 0o644); err != nil {
			t.Fatalf("%q: %v", n, err)
		}
	}
	rs := runBatch(t, h, nil, call("l", "list_directory", `{"structured":true}`))
	if !rs[0].OK {
		t.Fatalf("list_directory: %+v", rs[0].Error)
	}
	content := rs[0].Content
	if bad := terminalControl(content); bad != "" {
		t.Errorf("the result holds %q", bad)
	}
	var got struct {
		Entries []struct{ Name string } `json:"entries"`
	}
	if err := json.Unmarshal(rs[0].Structured, &got); err != nil {
		t.Fatalf("structured result is not valid JSON: %v\n%s", err, rs[0].Structured)
	}
	if len(got.Entries) != len(names) {
		t.Errorf("%d entries for %d files:\n%s", len(got.Entries), len(names), content)
	}
	seen := map[string]bool{}
	for _, e := range got.Entries {
		seen[e.Name] = true
	}
	// A C1 control is written \u{XX}, as the text shows it: the host
	// strips terminal controls from results, so the name could not
	// travel as itself.
	c1 := strings.NewReplacer("\u009b", `\u{9b}`)
	for _, n := range names {
		if utf8.ValidString(n) && !seen[c1.Replace(n)] {
			t.Errorf("name %q is not listed as itself (C1 controls written out)", n)
		}
	}
}

// Attack (model + hostile repository): a dry run of
// write_file against a link to /dev/zero inside the root, a FIFO with no
// writer, and a 10 GB sparse file.
// Expected: each returns at once with the diff omitted and why; nothing
// is read to its end and nothing is written.
func TestDryRunSpecialFilesStopped(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("devices and FIFOs")
	}
	h, root := openHost(t, nil)
	if err := os.Symlink("/dev/zero", filepath.Join(root, "zero")); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(root, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(filepath.Join(root, "sparse"))
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(10 << 30); err != nil {
		t.Skipf("no sparse file: %v", err)
	}
	f.Close()
	for _, name := range []string{"zero", "fifo", "sparse"} {
		start := time.Now()
		rs := runBatch(t, h, approveAll(), call("d", "write_file", jsonArgs(t, map[string]any{"path": name, "content": "x\n", "dry_run": true})))
		if d := time.Since(start); d > 3*time.Second {
			t.Errorf("dry run on %s took %v", name, d)
		}
		text := rs[0].Content
		if !rs[0].OK {
			text = rs[0].Error.Message
		}
		if rs[0].OK && !strings.Contains(text, "diff omitted") {
			t.Errorf("dry run on %s: %.300s", name, text)
		}
	}
	if fi, _ := os.Stat(filepath.Join(root, "sparse")); fi.Size() != 10<<30 {
		t.Error("the sparse file was changed by a dry run")
	}
}

// Attack (model): overwrite a setuid file and a file of
// mode 000, with the umask at 000 and at 077.
// Expected: the new content keeps the old permissions but never the
// setuid bit (a write by any program clears it); new files get 0666 less
// the umask.
func TestModesOnWriteStopped(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("umask and setuid")
	}
	for _, umask := range []int{0, 0o077} {
		old := syscall.Umask(umask)
		h, root := openHost(t, nil)
		suid, none := filepath.Join(root, "suid"), filepath.Join(root, "none")
		mustWrite(t, suid, "#!/bin/sh\n")
		os.Chmod(suid, 0o4755)
		mustWrite(t, none, "secret\n")
		os.Chmod(none, 0)
		rs := runBatch(t, h, approveAll(),
			call("r", "read_file", `{"path":"suid"}`),
			write(t, "w1", "suid", "#!/bin/sh\nid\n"), write(t, "w2", "new.txt", "x"))
		syscall.Umask(old)
		for _, r := range rs {
			if !r.OK {
				t.Fatalf("umask %03o: call %s: %+v", umask, r.ID, r.Error)
			}
		}
		if fi, _ := os.Stat(suid); fi.Mode()&os.ModeSetuid != 0 || fi.Mode().Perm() != 0o755 {
			t.Errorf("umask %03o: overwritten setuid file has mode %v, want -rwxr-xr-x", umask, fi.Mode())
		}
		if fi, _ := os.Stat(filepath.Join(root, "new.txt")); fi.Mode().Perm() != 0o666&^os.FileMode(umask) {
			t.Errorf("umask %03o: new file has mode %v", umask, fi.Mode().Perm())
		}
		if fi, _ := os.Stat(none); fi.Mode().Perm() != 0 {
			t.Errorf("umask %03o: mode 000 file now %v", umask, fi.Mode().Perm())
		}
	}
}
