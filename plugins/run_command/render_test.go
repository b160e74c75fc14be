package main

import (
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/toolhost/toolhost/abi"
)

// result builds what the host returns for the given full streams when it
// keeps keep bytes of each end.
func result(stdout, stderr string, keep int) abi.ExecResult {
	r := abi.ExecResult{StdoutBytes: int64(len(stdout)), StderrBytes: int64(len(stderr)),
		StdoutLines: int64(strings.Count(stdout, "\n")), StderrLines: int64(strings.Count(stderr, "\n"))}
	r.Stdout, r.StdoutTail = split(stdout, keep)
	r.Stderr, r.StderrTail = split(stderr, keep)
	r.StdoutCut = len(stdout) > 2*keep
	r.StderrCut = len(stderr) > 2*keep
	return r
}

func split(s string, keep int) (head, tail string) {
	if len(s) <= keep {
		return s, ""
	}
	rest := s[keep:]
	return s[:keep], rest[max(0, len(rest)-keep):]
}

func numbered(n int) string {
	var b strings.Builder
	for i := range n {
		b.WriteString("line " + strings.Repeat("x", i%7) + "\n")
	}
	return b.String()
}

// SRD 3.6.10's shape, fitted to the output limit (FR-OUT-04).
func TestRender(t *testing.T) {
	long := numbered(5000)
	tests := []struct {
		name           string
		stdout, stderr string
		limit          int
		want           string   // exact, when set
		contains       []string // otherwise
	}{
		{name: "stdout only", stdout: "a\n", limit: 100, want: "a\n"},
		{name: "with stderr", stdout: "a\n", stderr: "e\n", limit: 100, want: "a\n\n\n[stderr]\ne\n"},
		{name: "only stderr", stderr: "e", limit: 100, want: "\n\n[stderr]\ne"},
		{name: "empty", limit: 100, want: ""},
		{name: "long stdout keeps both ends", stdout: long, limit: 1000,
			contains: []string{"line \nline x\n", "bytes of stdout omitted ...]\n", "line xxxxxx\n"}},
		{name: "stderr keeps a quarter", stdout: long, stderr: long, limit: 2000,
			contains: []string{"bytes of stdout omitted", "[stderr]\nline", "bytes of stderr omitted"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, _ := render(result(tt.stdout, tt.stderr, 64<<10), tt.limit)
			if tt.want != "" || len(tt.contains) == 0 {
				if got != tt.want {
					t.Errorf("render = %q, want %q", got, tt.want)
				}
				return
			}
			for _, c := range tt.contains {
				if !strings.Contains(got, c) {
					t.Errorf("render lacks %q:\n%s", c, got)
				}
			}
			if len(got) > tt.limit {
				t.Errorf("render is %d bytes, limit %d", len(got), tt.limit)
			}
			if strings.HasSuffix(tt.name, "quarter") {
				if i := strings.Index(got, "[stderr]"); len(got)-i < tt.limit/5 {
					t.Errorf("stderr got %d of %d bytes", len(got)-i, tt.limit)
				}
			}
		})
	}
}

// Whatever the sizes, the text fits the limit, stays valid UTF-8 when the
// output was, and says how much it left out.
func TestRenderFits(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for range 500 {
		out := strings.Repeat("é1\n", rng.IntN(3000))
		errs := strings.Repeat("ü", rng.IntN(3000))
		limit := 200 + rng.IntN(6000)
		keep := 100 + rng.IntN(4000)
		got, omitted := render(result(out, errs, keep), limit)
		if len(got) > limit {
			t.Fatalf("%d+%d bytes, keep %d, limit %d: rendered %d", len(out), len(errs), keep, limit, len(got))
		}
		if !utf8.ValidString(got) {
			t.Fatalf("invalid UTF-8 for %d+%d bytes, limit %d: %q", len(out), len(errs), limit, got)
		}
		if omitted < 0 || (omitted > 0) != strings.Contains(got, "omitted ...]") {
			t.Fatalf("%d+%d bytes, limit %d: omitted %d, note in text: %v", len(out), len(errs), limit, omitted, strings.Contains(got, "omitted ...]"))
		}
		if len(out)+len(errs) > limit && !strings.Contains(got, "omitted ...]") {
			t.Fatalf("no omission note for %d+%d bytes, limit %d", len(out), len(errs), limit)
		}
	}
}

// The note says how many lines and bytes were left out, and how to read
// them all when the host kept the output.
func TestRenderNote(t *testing.T) {
	long := numbered(5000) + "FATAL: the error at the end\n"
	r := result(long, "", 8<<10)
	r.OutputID = "out-abc"
	got, omitted := render(r, 4000)
	shown := strings.Count(got, "\n") - 2 // the note's own two newlines
	wantLines := strings.Count(long, "\n") - shown
	for _, want := range []string{
		"[... " + strconv.Itoa(wantLines) + " lines, " + strconv.FormatInt(omitted, 10) + " bytes of stdout omitted; job_output {\"id\": \"out-abc\", \"since_byte\": 0} reads the whole output ...]",
		"FATAL: the error at the end\n",
		"line \nline x\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("render lacks %q:\n%s", want, got)
		}
	}
	if len(got) > 4000 {
		t.Errorf("render is %d bytes, limit 4000", len(got))
	}
}
