package egress

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSocketFile: the socket is made with mode 0600; a stale socket is
// replaced; a live one, a regular file, a directory or a symbolic link
// is left alone with an error naming the path.
func TestSocketFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "p.sock")

	// A stale socket: bound, then its listener gone without removing it.
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	ln.SetUnlinkOnClose(false)
	ln.Close()

	p, err := Listen(context.Background(), path, Rules{}, nil)
	if err != nil {
		t.Fatalf("over a stale socket: %v", err)
	}
	fi, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Type() != os.ModeSocket || fi.Mode().Perm() != 0o600 {
		t.Errorf("socket mode %v, want a socket with 0600", fi.Mode())
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("files beside the socket: %v", entries)
	}
	if _, err := Listen(context.Background(), path, Rules{}, nil); err == nil || !strings.Contains(err.Error(), "another process listens") {
		t.Errorf("over a live socket: %v", err)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(path); !os.IsNotExist(err) {
		t.Errorf("after Close: %v", err)
	}

	target := filepath.Join(dir, "target")
	if err := os.WriteFile(target, []byte("keep"), 0o600); err != nil {
		t.Fatal(err)
	}
	for name, make := range map[string]func(string) error{
		"regular file":  func(p string) error { return os.WriteFile(p, []byte("keep"), 0o600) },
		"directory":     func(p string) error { return os.Mkdir(p, 0o700) },
		"symbolic link": func(p string) error { return os.Symlink(target, p) },
	} {
		p := filepath.Join(dir, strings.ReplaceAll(name, " ", "-"))
		if err := make(p); err != nil {
			t.Fatal(err)
		}
		_, err := Listen(context.Background(), p, Rules{}, nil)
		if err == nil || !strings.Contains(err.Error(), p) || !strings.Contains(err.Error(), "a "+name+" is there") {
			t.Errorf("over a %s: %v", name, err)
		}
		if fi, err := os.Lstat(p); err != nil || fi.Mode().Type() == os.ModeSocket {
			t.Errorf("the %s was replaced: %v %v", name, fi, err)
		}
	}
	if b, _ := os.ReadFile(target); string(b) != "keep" {
		t.Errorf("the symbolic link's target changed: %q", b)
	}

	for _, bad := range []string{"relative.sock", "/" + strings.Repeat("x", maxSocketPath)} {
		if _, err := Listen(context.Background(), bad, Rules{}, nil); err == nil {
			t.Errorf("Listen(%q) succeeded", bad)
		}
	}
	if _, err := Listen(context.Background(), filepath.Join(dir, "r.sock"), Rules{Allowed: []string{"http://x"}}, nil); err == nil || !strings.Contains(err.Error(), "allowed_domains[0]") {
		t.Errorf("bad rules: %v", err)
	}
}
