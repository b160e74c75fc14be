package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Through the CLI: even under approval mode auto, a write
// that makes vendor/ a bare git repository (which git would open, running
// its core.fsmonitor) is not run without a person, and --allow does not
// cover it; under the default policy a new .envrc is asked about, not run
// as a new file, while a plain new file still runs unasked.
func TestCodeRunningWritesAsk(t *testing.T) {
	w := newWorkspace(t)
	for _, d := range []string{"vendor/objects", "vendor/refs"} {
		if err := os.MkdirAll(filepath.Join(w.dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	auto := w.withConfig(t, "[tools.approval]\nmode = \"auto\"\n")
	head := `{"path":"vendor/HEAD","content":"ref: refs/heads/main\n"}`
	for _, extra := range [][]string{nil, {"--allow", "write_file"}} {
		r, _, _ := auto.call(t, "write_file", head, extra...)
		if r.OK || !strings.Contains(r.Error.Message, "vendor/ would become a git repository (HEAD beside objects/ and refs/): git run there could execute code from it") {
			t.Errorf("write_file vendor/HEAD %v under mode auto: %+v", extra, r)
		}
		if _, err := os.Lstat(filepath.Join(w.dir, "vendor", "HEAD")); err == nil {
			t.Fatalf("vendor/HEAD was written %v", extra)
		}
	}

	r, _, _ := w.call(t, "write_file", `{"path":".envrc","content":"touch pwned\n"}`)
	if r.OK || !strings.Contains(r.Error.Message, ".envrc, which matches **/.envrc (tools.approval.code_patterns)") {
		t.Errorf("write_file .envrc: %+v", r)
	}
	if _, err := os.Lstat(filepath.Join(w.dir, ".envrc")); err == nil {
		t.Error(".envrc was written unasked")
	}

	if r, _, _ := w.call(t, "write_file", `{"path":"notes.txt","content":"x\n"}`); !r.OK {
		t.Errorf("write_file notes.txt: %+v", r.Error)
	}
	if _, err := os.Lstat(filepath.Join(w.dir, "notes.txt")); err != nil {
		t.Error("notes.txt was not written")
	}
}
