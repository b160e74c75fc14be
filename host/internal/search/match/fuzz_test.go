package match

import (
	"bytes"
	"testing"
)

// FuzzScan: no panic; count-only agrees with the detailed count; every
// reported line holds a match of the query.
func FuzzScan(f *testing.F) {
	f.Add("foo", false, []byte("a foo\nFOO\r\nx"))
	f.Add(`f\w+o$`, true, []byte("fao\n\nfxxo\r\n"))
	f.Add("é", false, []byte("É\n\xff\xfe\n"))
	f.Fuzz(func(t *testing.T, query string, regex bool, data []byte) {
		m, err := Compile(Options{Query: query, Regex: regex, ContextLines: 1})
		if err != nil {
			return
		}
		lines, n := m.Scan(data, 1<<20)
		if _, c := m.Scan(data, 0); c != n || len(lines) != n {
			t.Fatalf("count-only %d, detailed count %d, %d lines", c, n, len(lines))
		}
		all := bytes.Split(data, []byte("\n"))
		for _, l := range lines {
			if l.Number < 1 || l.Number > len(all) || l.Column < 1 {
				t.Fatalf("line %d column %d out of range", l.Number, l.Column)
			}
			line := bytes.TrimSuffix(all[l.Number-1], []byte("\r"))
			if one, _ := m.Scan(append(line, '\n'), 1); len(one) != 1 {
				t.Fatalf("reported line %d %q holds no match", l.Number, line)
			}
		}
	})
}
