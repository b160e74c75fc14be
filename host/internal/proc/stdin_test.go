//go:build linux

package proc

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"
)

// Spec.Stdin reaches the command and is closed after it; without it the
// command reads end of file at once.
func TestRunStdin(t *testing.T) {
	big := bytes.Repeat([]byte("0123456789abcdef"), 64<<10) // 1 MiB: more than a pipe holds
	tests := []struct {
		name        string
		command     string
		stdin       []byte
		wantOut     string
		wantBytes   int64
		wantWritten int64
	}{
		{name: "cat", command: "cat", stdin: []byte("one\ntwo\n"), wantOut: "one\ntwo\n", wantWritten: 8},
		{name: "no trailing newline", command: "cat; echo .", stdin: []byte("x"), wantOut: "x.\n", wantWritten: 1},
		{name: "empty is closed", command: "cat; echo done", stdin: []byte{}, wantOut: "done\n"},
		{name: "nil reads dev null", command: "read x; echo \"[$x] $?\"", wantOut: "[] 1\n"},
		{name: "larger than a pipe", command: "wc -c", stdin: big, wantOut: "1048576\n", wantWritten: int64(len(big))},
		{name: "binary", command: "od -An -c | tr -s ' '", stdin: []byte{0, '\n'}, wantOut: " \\0 \\n\n", wantWritten: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := spec(t, tt.command)
			s.Stdin = tt.stdin
			res := mustRun(t, s)
			if got := string(res.Stdout); got != tt.wantOut {
				t.Errorf("stdout = %q, want %q (stderr %q)", got, tt.wantOut, res.Stderr)
			}
			if res.StdinWritten != tt.wantWritten {
				t.Errorf("StdinWritten = %d, want %d", res.StdinWritten, tt.wantWritten)
			}
		})
	}
}

// A command that never reads its stdin neither hangs nor fails, even
// when the input is more than the pipe holds: the writer gives up once
// the command is gone, and the broken pipe is not an error.
func TestRunStdinNotRead(t *testing.T) {
	for _, command := range []string{"exit 0", "exec 0<&-; sleep 0.1; echo ok", "sleep 0.1 & echo ok"} {
		s := spec(t, command)
		s.Stdin = bytes.Repeat([]byte("y"), 1<<20)
		began := time.Now()
		res, err := Run(context.Background(), s)
		if err != nil {
			t.Fatalf("%q: %v", command, err)
		}
		if res.ExitCode != 0 {
			t.Errorf("%q: exit %d, stderr %q", command, res.ExitCode, res.Stderr)
		}
		if res.StdinWritten >= 1<<20 {
			t.Errorf("%q: all of stdin written (%d) though the command read none", command, res.StdinWritten)
		}
		if d := time.Since(began); d > 5*time.Second {
			t.Errorf("%q took %v: the stdin writer held the command", command, d)
		}
	}
}

// A command killed by its deadline while the writer waits for it to
// read returns with the deadline, not stuck on the write.
func TestRunStdinKilled(t *testing.T) {
	s := spec(t, "sleep 30")
	s.Stdin = bytes.Repeat([]byte("z"), 1<<20)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	began := time.Now()
	_, err := Run(ctx, s)
	if err == nil || !strings.Contains(err.Error(), "deadline") {
		t.Fatalf("err = %v, want the deadline", err)
	}
	if d := time.Since(began); d > 5*time.Second {
		t.Errorf("took %v after a 200ms deadline", d)
	}
}

// The line counts count the newlines of each stream, cut or not.
func TestRunLineCounts(t *testing.T) {
	s := spec(t, "seq 1 100000; echo a >&2; printf b >&2")
	s.MaxCapture, s.TailCapture = 100, 100
	res := mustRun(t, s)
	if res.StdoutLines != 100000 || res.StderrLines != 1 {
		t.Errorf("lines = %d, %d; want 100000, 1", res.StdoutLines, res.StderrLines)
	}
}
