package hostfn

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/toolhost/toolhost/abi"
	"github.com/toolhost/toolhost/host/internal/sandbox"
)

// fs_lstat describes a last name that is a symbolic link without
// following it, and tells its target only where a tool may go: a link
// out of the roots or to a denied path says only that.
func TestFSLstat(t *testing.T) {
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for name, content := range map[string]string{"a.txt": "A\n", "secret/s.txt": "S\n"} {
		os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755)
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	outside := t.TempDir()
	for link, target := range map[string]string{
		"lnk": "a.txt", "out": filepath.Join(outside, "x"), "key": "secret/s.txt", "secret/lnk": "../a.txt", "gone": "missing.txt",
	} {
		if err := os.Symlink(target, filepath.Join(dir, link)); err != nil {
			t.Fatal(err)
		}
	}
	sb, err := sandbox.New(sandbox.Config{Roots: []string{dir}, DeniedPatterns: []string{"secret/**"}})
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Close()
	g := newGuest(1 << 16)
	env := &Env{Call: Call{CallID: "c", Sandbox: sb, Capabilities: []abi.Capability{abi.CapFSRead}}}
	lstat := func(env *Env, name string) (abi.FileInfo, abi.LinkInfo, error) {
		p, n := g.put([]byte(name))
		resp, err := g.call(context.Background(), env, abi.FnFSLstat, p, n)
		if err != nil {
			return abi.FileInfo{}, abi.LinkInfo{}, err
		}
		fi, rest, err := abi.DecodeFileInfo(resp)
		if err != nil {
			t.Fatal(err)
		}
		li, _, err := abi.DecodeLinkInfo(rest)
		if err != nil {
			t.Fatal(err)
		}
		return fi, li, nil
	}
	for _, tt := range []struct {
		name string
		typ  abi.FileType
		li   abi.LinkInfo
	}{
		{"a.txt", abi.TypeFile, abi.LinkInfo{}},
		{"lnk", abi.TypeSymlink, abi.LinkInfo{Target: "a.txt"}},
		{"gone", abi.TypeSymlink, abi.LinkInfo{Target: "missing.txt"}},
		{"out", abi.TypeSymlink, abi.LinkInfo{Flags: abi.LinkOutside}},
		{"key", abi.TypeSymlink, abi.LinkInfo{Flags: abi.LinkDenied}},
	} {
		fi, li, err := lstat(env, tt.name)
		if err != nil {
			t.Errorf("fs_lstat %s: %v", tt.name, err)
			continue
		}
		if fi.Type != tt.typ || li != tt.li || fi.Path != tt.name {
			t.Errorf("fs_lstat %s = %+v %+v, want type %v, path %s, %+v", tt.name, fi, li, tt.typ, tt.name, tt.li)
		}
	}
	// A link inside a denied directory is refused like the directory.
	if _, _, err := lstat(env, "secret/lnk"); hostErr(t, err).Kind != abi.KindSandboxViolation {
		t.Errorf("fs_lstat secret/lnk = %v, want a sandbox violation", err)
	}
	// A call may describe the link its arguments name, though the engine
	// resolved that name to where the link leads; no other.
	named, err := sb.Resolve("lnk")
	if err != nil {
		t.Fatal(err)
	}
	scoped := &Env{Call: Call{CallID: "s", Sandbox: sb, Capabilities: []abi.Capability{abi.CapFSRead},
		Resolved: map[string]sandbox.Path{"lnk": named}, Readable: &ReadScope{Paths: map[string]bool{named.Abs: true}}}}
	if _, li, err := lstat(scoped, "lnk"); err != nil || li.Target != "a.txt" {
		t.Errorf("fs_lstat of the named link = %+v, %v", li, err)
	}
	if _, _, err := lstat(scoped, "gone"); hostErr(t, err).Details["reason"] != string(reasonNotNamed) {
		t.Errorf("fs_lstat of a link the call did not name = %v, want NotNamed", err)
	}
	// A link named as itself (describes_links) is described by fs_lstat,
	// and followed, so refused, by every other host function.
	for _, name := range []string{"out", "key"} {
		entry, err := ResolveEntry(sb, name)
		if err != nil || !entry.Entry() {
			t.Fatalf("ResolveEntry(%s) = %+v, %v; want the link itself", name, entry, err)
		}
		env := &Env{Call: Call{CallID: "e", Sandbox: sb, Capabilities: []abi.Capability{abi.CapFSRead},
			Resolved: map[string]sandbox.Path{name: entry}, Readable: &ReadScope{Paths: map[string]bool{entry.Abs: true}}}}
		if _, li, err := lstat(env, name); err != nil || li.Flags == 0 || li.Target != "" {
			t.Errorf("fs_lstat %s = %+v, %v; want only a flag", name, li, err)
		}
		if _, _, err := g.read(env, name, 0, -1, 0); hostErr(t, err).Kind != abi.KindSandboxViolation {
			t.Errorf("fs_read %s = %v, want a sandbox violation", name, err)
		}
		p, n := g.put([]byte(name))
		if _, err := g.call(context.Background(), env, abi.FnFSStat, p, n); hostErr(t, err).Kind != abi.KindSandboxViolation {
			t.Errorf("fs_stat %s = %v, want a sandbox violation", name, err)
		}
	}
}
