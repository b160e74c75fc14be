package bench

import (
	"testing"

	"github.com/toolhost/toolhost/internal/testenv"
)

// TestMCPStdioAnswers checks what BenchmarkMCPStdio measures, with make
// test (make bench): every server starts, lists the tools, and
// answers three calls of each workload correctly, so the benchmark never
// times an error path. A server that cannot run here (the Node one
// without Node.js or its npm package) is skipped, or fails where Node is
// required (testenv: CI, TOOLHOST_REQUIRE_NODE).
func TestMCPStdioAnswers(t *testing.T) {
	root, content := fixture(t)
	for _, s := range servers(root, content) {
		t.Run(s.name, func(t *testing.T) {
			if s.available != nil {
				testenv.Need(t, "NODE", s.available(), "")
			}
			r, err := launch(s, root)
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range s.workloads() {
				for range 3 {
					if err := r.do(w); err != nil {
						t.Error(err)
					}
				}
			}
			if err := r.close(); err != nil {
				t.Error(err)
			}
			t.Logf("%s: tools/list answered %v after spawn", s.name, r.startup)
		})
	}
}
