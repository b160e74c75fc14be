package e2e

import (
	"os"
	"path/filepath"
	"testing"
)

// config init --force over an existing file, readable by everyone (an
// older init, a file copied from elsewhere): the file it leaves may come
// to hold the server's bearer token, so it is private whatever mode the
// file it replaced had.
func TestRedteamConfigInitForceMakesFilePrivate(t *testing.T) {
	o := newConfigUser(t)
	w := o.in(newWorkspace(t))
	if err := os.MkdirAll(o.userDir(), 0o700); err != nil {
		t.Fatal(err)
	}
	toml := filepath.Join(o.userDir(), "toolhost.toml")
	if err := os.WriteFile(toml, []byte("# old\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(toml, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, stderr, code := w.run(t, "config", "init", "--force"); code != 0 {
		t.Fatalf("config init --force: exit %d %s", code, stderr)
	}
	fi, err := os.Stat(toml)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("config init --force left %s mode %v; want 0600", toml, fi.Mode().Perm())
	}
}
