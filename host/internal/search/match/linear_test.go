package match

import (
	"strings"
	"testing"
	"time"
)

// A regex whose class takes in a line end ([^yz], \s) must not run to
// the end of the file from every line: a 400 KB file of 20,000 lines
// took minutes, quadratic in its lines.
func TestScanClassesStayInTheLine(t *testing.T) {
	data := []byte(strings.Repeat("aaaaaaaaaaaaaaaaaaa\n", 20000) + "ay\n")
	for _, q := range []string{`[ab][^yz]*[yz]`, `a\s*y`, `a(.|\n)*y`, `[^q]+y`} {
		m, err := Compile(Options{Query: q, Regex: true, CaseSensitive: true})
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		lines, count := m.Scan(data, 10)
		// A generous bound that proves it is not quadratic, not a speed claim.
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("%s: Scan took %v", q, d)
		}
		if count != 1 || len(lines) != 1 || lines[0].Number != 20001 {
			t.Errorf("%s: %d matches %+v, want line 20001 only", q, count, lines)
		}
	}
	// With multiline the same class may cross lines.
	m, err := Compile(Options{Query: `a\s*y`, Regex: true, Multiline: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, count := m.Scan([]byte("a\n\ny\n"), 5); count != 1 {
		t.Errorf("multiline a\\s*y across lines: %d matches, want 1", count)
	}
}
