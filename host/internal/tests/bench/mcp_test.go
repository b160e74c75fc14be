package bench

import (
	"crypto/rand"
	"testing"

	"github.com/toolhost/toolhost/internal/testenv"
)

// TestMCPStdioAnswers checks what BenchmarkMCPStdio measures, with make
// test (make bench): every server starts, lists the tools, and
// answers three calls of each workload correctly, so the benchmark never
// times an error path. A server that cannot run here (the Node one
// without Node.js or its npm package, the Go peer without its module) is
// skipped, or fails where it is required (testenv: CI,
// TOOLHOST_REQUIRE_NODE, TOOLHOST_REQUIRE_PEER).
func TestMCPStdioAnswers(t *testing.T) {
	root, content := fixture(t)
	for _, s := range servers(root, content) {
		t.Run(s.name, func(t *testing.T) {
			if s.available != nil {
				testenv.Need(t, s.need, s.available(), "")
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

// TestMCPHTTPAnswers checks what BenchmarkMCPHTTP measures: toolhost
// serve --http and the native server's HTTP mode start, open a session
// with the benchmark's client and answer read_file with the file.
func TestMCPHTTPAnswers(t *testing.T) {
	root, content := fixture(t)
	token := rand.Text()
	for _, c := range []struct {
		name  string
		argv  []string
		env   []string
		token string
	}{
		{"toolhost", []string{built.toolhost, "serve", "--http", "127.0.0.1:0", "--root", root}, []string{"TOOLHOST_TOKEN=" + token}, token},
		{"native", []string{built.native, "-http", "127.0.0.1:0", root}, nil, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, err := startHTTP(c.name, c.argv, append(serverEnv(), c.env...), root, c.token)
			if err != nil {
				t.Fatal(err)
			}
			defer s.stop()
			sess, err := s.openSession()
			if err != nil {
				t.Fatal(err)
			}
			for range 3 {
				r, err := sess.callTool("read_file", map[string]any{"path": readPath})
				if err != nil {
					t.Fatal(err)
				}
				if r.text() != content {
					t.Fatalf("read_file gave %d bytes that differ from the file's %d: %.120q", len(r.text()), len(content), r.text())
				}
			}
			if err := sess.close(); err != nil {
				t.Error(err)
			}
			t.Logf("%s answered as %s", c.name, sess.answerType)
		})
	}
}
