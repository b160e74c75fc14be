package match

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestAgainstRipgrep compares Scan's line numbers and columns with
// `rg --column -n` on generated files, where ripgrep is installed.
func TestAgainstRipgrep(t *testing.T) {
	rg, err := exec.LookPath("rg")
	if err != nil {
		t.Skip("ripgrep (rg) is not installed, so there is nothing to compare with")
	}
	words := []string{"foo", "Foo", "FOO", "bar", "func", "main", "Error", "x", " ", "\t", "é", "É", "\n", "\n", "\n"}
	rnd := rand.New(rand.NewPCG(1, 2))
	queries := []struct {
		q     string
		flags []string
		o     Options
	}{
		{"foo", []string{"-s", "-F"}, Options{Query: "foo", CaseSensitive: true}},
		{"foo", []string{"-i", "-F"}, Options{Query: "foo"}},
		{"é", []string{"-i", "-F"}, Options{Query: "é"}},
		{`func \w+`, []string{"-s"}, Options{Query: `func \w+`, Regex: true, CaseSensitive: true}},
		{`e?rror`, []string{"-i"}, Options{Query: `e?rror`, Regex: true}},
		{`^\s*x`, []string{"-s"}, Options{Query: `^\s*x`, Regex: true, CaseSensitive: true}},
	}
	dir := t.TempDir()
	compared := 0
	for n := range 20 {
		var b strings.Builder
		for range rnd.IntN(400) {
			b.WriteString(words[rnd.IntN(len(words))])
		}
		path := filepath.Join(dir, fmt.Sprintf("f%d.txt", n))
		if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		for _, q := range queries {
			m, err := Compile(q.o)
			if err != nil {
				t.Fatal(err)
			}
			lines, _ := m.Scan([]byte(b.String()), 1<<20)
			var got bytes.Buffer
			for _, l := range lines {
				fmt.Fprintf(&got, "%d:%d\n", l.Number, l.Column)
			}
			args := append([]string{"--column", "-n", "--no-config", "-o", "-m", "1000000"}, q.flags...)
			out, _ := exec.Command(rg, append(args, "-e", q.q, path)...).Output()
			var want bytes.Buffer
			seen := map[string]bool{}
			for _, line := range strings.Split(string(out), "\n") {
				parts := strings.SplitN(line, ":", 3)
				if len(parts) == 3 && !seen[parts[0]] { // -o lists each match; the first is the line's column
					seen[parts[0]] = true
					fmt.Fprintf(&want, "%s:%s\n", parts[0], parts[1])
				}
			}
			compared += len(seen)
			if got.String() != want.String() {
				t.Errorf("file %d query %q %v:\nScan:\n%s\nrg:\n%s", n, q.q, q.flags, got.String(), want.String())
			}
		}
	}
	if compared == 0 {
		t.Fatal("ripgrep found no line in any generated file: the comparison compared nothing")
	}
}
