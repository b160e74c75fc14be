package hostile_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolhost/toolhost/internal/testplugin"
)

// Through the real binary and the real read_multiple_files, whose
// manifest names its paths inside an array ("paths/*"): every element is
// checked against the sandbox before the plugin runs, and one the sandbox
// refuses (a denied file, one outside the root) fails the whole call as
// a sandbox violation naming that element by its JSON pointer, without
// any file's content, instead of reaching the plugin unchecked.
func TestReadMultipleFilesChecksEveryPathThroughCLI(t *testing.T) {
	bin := toolhostBinary(t)
	base := t.TempDir()
	dir := filepath.Join(base, "project")
	for name, content := range map[string]string{
		filepath.Join(dir, "a.txt"):          "alpha\n",
		filepath.Join(dir, "sub", "b.txt"):   "beta\n",
		filepath.Join(dir, "keys", "id_rsa"): "the private key\n",
		filepath.Join(base, "outside.txt"):   "the outside secret\n",
	} {
		mustWrite(t, name, content)
	}

	out, code := pathArgsCLICall(t, bin, dir, `{"paths":["a.txt","sub/b.txt"]}`)
	if code != 0 || !strings.Contains(out, "alpha") || !strings.Contains(out, "beta") {
		t.Fatalf("reading two files: exit %d\n%s", code, out)
	}
	for _, tc := range []struct{ args, argument string }{
		{`{"paths":["a.txt","keys/id_rsa"]}`, `"/paths/1"`},
		{`{"paths":["a.txt","sub/b.txt","../outside.txt"]}`, `"/paths/2"`},
		{`{"paths":["a.txt","` + filepath.Join(base, "outside.txt") + `"]}`, `"/paths/1"`},
	} {
		out, code := pathArgsCLICall(t, bin, dir, tc.args)
		if code != 1 || !strings.Contains(out, "SandboxViolation") || !strings.Contains(out, "argument "+tc.argument) {
			t.Errorf("%s: exit %d, want 1 and a SandboxViolation naming argument %s:\n%s", tc.args, code, tc.argument, out)
		}
		if strings.Contains(out, "secret") || strings.Contains(out, "private key") || strings.Contains(out, "alpha") {
			t.Errorf("%s: the refusal shows a file's content:\n%s", tc.args, out)
		}
	}
}

// pathArgsCLICall runs `toolhost call read_multiple_files` in dir, in a
// home of its own, and returns its result's text and exit status.
func pathArgsCLICall(t *testing.T, bin, dir, args string) (string, int) {
	t.Helper()
	home := t.TempDir()
	cmd := exec.Command(bin, "--state-dir", filepath.Join(home, "state"), "--plugins", realPlugins(t), "call", "read_multiple_files", "--args", args, "--format", "json")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "HOME="+home, "XDG_CONFIG_HOME="+filepath.Join(home, ".config"),
		"XDG_STATE_HOME="+filepath.Join(home, ".state"), "TOOLHOST_CACHE_DIR="+testplugin.CacheDir(t))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		code = exit.ExitCode()
	case err != nil:
		t.Fatalf("toolhost call: %v", err)
	}
	var res struct {
		Content string `json:"content"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &res); err != nil {
		t.Fatalf("toolhost call %s: stdout is not a result (%v)\nstdout: %s\nstderr: %s", args, err, stdout.String(), stderr.String())
	}
	return res.Content, code
}
