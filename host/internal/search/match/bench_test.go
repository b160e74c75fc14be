package match

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/toolhost/toolhost/internal/testenv"
)

// benchCorpus is the Go source tree's .go files, read once per benchmark.
func benchCorpus(b *testing.B) [][]byte {
	b.Helper()
	var files [][]byte
	root := filepath.Join(testenv.GOROOT(b), "src")
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".go") {
			return err
		}
		data, err := os.ReadFile(p)
		if err == nil {
			files = append(files, data)
		}
		return err
	})
	if err != nil || len(files) == 0 {
		b.Skipf("no Go source tree at %s: %v", root, err)
	}
	return files
}

func BenchmarkScan(b *testing.B) {
	files := benchCorpus(b)
	var size int64
	for _, f := range files {
		size += int64(len(f))
	}
	cases := []struct {
		name string
		o    Options
	}{
		{"literal", Options{Query: "func main", CaseSensitive: true}},
		{"ci-literal", Options{Query: "error"}},
		{"regex", Options{Query: `func \w+Error`, Regex: true, CaseSensitive: true}},
	}
	for _, c := range cases {
		m, err := Compile(c.o)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(c.name+"/match", func(b *testing.B) {
			b.SetBytes(size)
			for range b.N {
				var wg sync.WaitGroup
				for w := range 2 { // the walker's two goroutines
					wg.Add(1)
					go func() {
						defer wg.Done()
						for i := w; i < len(files); i += 2 {
							m.Scan(files[i], 200)
						}
					}()
				}
				wg.Wait()
			}
		})
		b.Run(c.name+"/naive-per-line", func(b *testing.B) {
			b.SetBytes(size)
			re := regexp.MustCompile(regexFor(c.o))
			q := []byte(c.o.Query)
			for range b.N {
				for _, f := range files {
					for line := range bytes.Lines(f) {
						switch {
						case c.o.Regex:
							re.Match(line)
						case c.o.CaseSensitive:
							bytes.Index(line, q)
						default:
							bytes.Index(bytes.ToLower(line), q)
						}
					}
				}
			}
		})
		b.Run(c.name+"/regexp-whole-buffer", func(b *testing.B) {
			b.SetBytes(size)
			re := regexp.MustCompile("(?m)" + regexFor(c.o))
			for range b.N {
				for _, f := range files {
					re.FindAllIndex(f, -1)
				}
			}
		})
	}
}

func regexFor(o Options) string {
	p := o.Query
	if !o.Regex {
		p = regexp.QuoteMeta(p)
	}
	if !o.CaseSensitive {
		p = "(?i)" + p
	}
	return p
}
