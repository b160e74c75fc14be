package confine

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestHintOnConfinedCommand: a command confined by Build's policy writes
// to and reads a directory of the host's /tmp; inside, /tmp is the call's
// private directory, so the tools say only "No such file or directory" or
// "Directory nonexistent", and the hint says the path is outside what
// commands see (the hint gap). A directory the command
// made in its own tmp gets none.
func TestHintOnConfinedCommand(t *testing.T) {
	home, err := os.UserHomeDir()
	if err != nil {
		t.Fatal(err)
	}
	host, err := os.MkdirTemp("/tmp", "e14host-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(host) })
	mustWrite(t, filepath.Join(host, "in"), "the host's\n")
	root := canonicalTempDir(t)
	s := Settings{Mode: ModeWorkspaceWrite, Network: NetworkOff, StateDir: canonicalTempDir(t), Home: home, Path: os.Getenv("PATH"), Environ: os.Environ()}
	p := mustBuild(t, s, Call{ID: "hint", Roots: []string{root}})

	r := mustRun(t, p, "echo x > "+host+"/out; touch "+host+"/out2; cat "+host+"/in; mkdir -p /tmp/mine && touch /tmp/mine/x/y; true")
	if r.code != 0 || strings.Contains(r.stdout, "the host's") {
		t.Fatalf("exit %d, stdout %q: the command read the host's /tmp", r.code, r.stdout)
	}
	if _, err := os.Stat(filepath.Join(host, "out")); err == nil {
		t.Fatalf("the command wrote into the host's /tmp")
	}
	hint := Hint(p, []byte(r.stderr))
	for _, name := range []string{"out", "out2", "in"} {
		want := "sandbox: " + filepath.Join(host, name) + " is outside what commands can see; /tmp is this call's private directory, removed when it ends; writable: " + root
		if !strings.Contains(hint, want) {
			t.Errorf("stderr %q\nhint %q\nwant a line %q...", r.stderr, hint, want)
		}
	}
	if strings.Contains(hint, "/tmp/mine") {
		t.Errorf("a directory of the call's own tmp got a hint: %q", hint)
	}
}
