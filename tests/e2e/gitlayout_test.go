package e2e

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// callResult runs a call through the CLI without a terminal and returns
// its result.
func callResult(t *testing.T, dir, config, tool, args string, extra ...string) result {
	t.Helper()
	cmd := operatorCmd(t, dir, config, append([]string{"call", tool, "--args", args}, extra...)...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	cmd.Run() // the exit code is the result's; the result says why
	var r result
	if err := json.Unmarshal(out.Bytes(), &r); err != nil {
		t.Fatalf("call %s %s: stdout is not a result (%v)\nstdout: %s\nstderr: %s", tool, args, err, out.String(), errb.String())
	}
	return r
}

// issue 10 item 2 through the CLI: even under approval mode auto, a write
// that makes vendor/ a bare git repository (which git would open, running
// its core.fsmonitor) is not run without a person, and --allow does not
// cover it; under the default policy a new .envrc is asked about, not run
// as a new file, while a plain new file still runs unasked.
func TestCodeRunningWritesAsk_Issue10Item2(t *testing.T) {
	dir := t.TempDir()
	for _, d := range []string{"vendor/objects", "vendor/refs"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	const auto = "[tools.approval]\nmode = \"auto\"\n"
	head := `{"path":"vendor/HEAD","content":"ref: refs/heads/main\n"}`
	for _, extra := range [][]string{nil, {"--allow", "write_file"}} {
		r := callResult(t, dir, auto, "write_file", head, extra...)
		if r.OK || !strings.Contains(r.Error.Message, "vendor/ would become a git repository (HEAD beside objects/ and refs/): git run there could execute code from it") {
			t.Errorf("write_file vendor/HEAD %v under mode auto: %+v", extra, r)
		}
		if _, err := os.Lstat(filepath.Join(dir, "vendor", "HEAD")); err == nil {
			t.Fatalf("vendor/HEAD was written %v", extra)
		}
	}

	r := callResult(t, dir, "", "write_file", `{"path":".envrc","content":"touch pwned\n"}`)
	if r.OK || !strings.Contains(r.Error.Message, ".envrc, which matches **/.envrc (tools.approval.code_patterns)") {
		t.Errorf("write_file .envrc: %+v", r)
	}
	if _, err := os.Lstat(filepath.Join(dir, ".envrc")); err == nil {
		t.Error(".envrc was written unasked")
	}

	if r := callResult(t, dir, "", "write_file", `{"path":"notes.txt","content":"x\n"}`); !r.OK {
		t.Errorf("write_file notes.txt: %+v", r.Error)
	}
	if _, err := os.Lstat(filepath.Join(dir, "notes.txt")); err != nil {
		t.Error("notes.txt was not written")
	}
}
