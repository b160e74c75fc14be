package search

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/toolhost/toolhost/abi"
	"github.com/toolhost/toolhost/host/internal/sandbox"
	"github.com/toolhost/toolhost/internal/testenv"
)

// benchCorpus is a copy of the Go distribution's src/, made once per
// run, read once so the page cache is warm.
func benchCorpus(b *testing.B) string {
	b.Helper()
	src := filepath.Join(testenv.GOROOT(b), "src")
	if _, err := os.Stat(src); err != nil {
		b.Skipf("no Go source tree at %s: %v", src, err)
	}
	dir := filepath.Join(os.TempDir(), "toolhost-search-bench")
	if _, err := os.Stat(filepath.Join(dir, "src")); err != nil {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			b.Fatal(err)
		}
		if out, err := exec.Command("cp", "-r", src, dir).CombinedOutput(); err != nil {
			b.Fatalf("copying %s: %v\n%s", src, err, out)
		}
	}
	root := filepath.Join(dir, "src")
	filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			os.ReadFile(p)
		}
		return nil
	})
	return root
}

// BenchmarkSearchGoSource searches a copy of Go's src/ through Run, as
// fs_search does, and ripgrep on the same tree with the same settings in
// the same run; rg-ratio is toolhost's time over ripgrep's.
func BenchmarkSearchGoSource(b *testing.B) {
	root := benchCorpus(b)
	sb, err := sandbox.New(sandbox.Config{Roots: []string{root}})
	if err != nil {
		b.Fatal(err)
	}
	defer sb.Close()
	start, err := sb.Resolve(".")
	if err != nil {
		b.Fatal(err)
	}
	rg, _ := exec.LookPath("rg")
	for _, c := range []struct {
		name string
		req  abi.SearchRequest
		rg   []string
	}{
		{"literal", abi.SearchRequest{Query: "func main", CaseSensitive: true}, []string{"-s", "func main"}},
		{"ci-literal", abi.SearchRequest{Query: "error"}, []string{"-i", "error"}},
		{"regex", abi.SearchRequest{Query: `func \w+Error\(`, Regex: true, CaseSensitive: true}, []string{"-s", `func \w+Error\(`}},
		{"glob", abi.SearchRequest{Mode: abi.SearchGlob, Include: []string{"**/*_test.go"}}, []string{"--files", "-g", "*_test.go"}},
	} {
		b.Run(c.name, func(b *testing.B) {
			req := c.req
			if err := Normalize(&req); err != nil {
				b.Fatal(err)
			}
			var rgTime time.Duration
			if rg != "" {
				const runs = 5
				for range runs {
					cmd := exec.Command(rg, append([]string{"--no-require-git", "--no-ignore-global", "--no-config", "-n", "--column",
						"--max-filesize", "2097152"}, c.rg...)...)
					cmd.Dir = root
					t0 := time.Now()
					cmd.Run()
					rgTime += time.Since(t0)
				}
				rgTime /= runs
			}
			b.ResetTimer()
			t0 := time.Now()
			for range b.N {
				if _, err := Run(context.Background(), start, req, Options{Sandbox: sb, Display: func(p sandbox.Path) string { return p.Rel }, ScanLimit: 2 << 20}); err != nil {
					b.Fatal(err)
				}
			}
			per := time.Since(t0) / time.Duration(b.N)
			b.ReportMetric(float64(per.Microseconds())/1000, "ms/search")
			if rgTime > 0 {
				b.ReportMetric(float64(rgTime.Microseconds())/1000, "rg-ms")
				b.ReportMetric(float64(per)/float64(rgTime), "rg-ratio")
			}
		})
	}
}
