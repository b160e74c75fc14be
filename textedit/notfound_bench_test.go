package textedit

import (
	"strings"
	"testing"
)

// BenchmarkNotFoundRepeated is the worst case of a failed search: a file
// of one line repeated and an old_string of many copies of it that ends
// in a line the file lacks, so every file line is like every old line.
func BenchmarkNotFoundRepeated(b *testing.B) {
	for _, n := range []struct {
		name        string
		file, lines int
	}{{"file4000_old1000", 4000, 1000}, {"file4000_old4000", 4000, 4000}, {"file20000_old4000", 20000, 4000}, {"file200000_old20001", 200000, 20000}} {
		b.Run(n.name, func(b *testing.B) {
			file := strings.Repeat("a\n", n.file)
			old := strings.Repeat("a\n", n.lines) + "b"
			for b.Loop() {
				f, err := ParseString(file)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := f.Replace(old, "c", false); err == nil {
					b.Fatal("found old_string")
				}
			}
		})
	}
}
