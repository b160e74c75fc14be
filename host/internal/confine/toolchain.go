package confine

import (
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/toolhost/toolhost/host/internal/secrets"
)

// systemDirs are the trees every command may read, in
// the order they are mounted. Those missing here are skipped; those that
// are symbolic links (/bin -> usr/bin on merged-/usr systems) are
// recreated as links (see symlinkMount).
var systemDirs = []string{"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt"}

// toolchains are the directories outside the system trees that the
// programs on PATH need, to be bound read-only at their own paths.
type toolchains struct {
	dirs  []string // real directories
	links []string // PATH entries that are symbolic links, recreated inside
}

// findToolchains finds the installations behind the directories of path
// (a PATH value) that lie outside the system trees, for a user whose
// home is home and whose environment is env. It starts no process: the
// Go module cache and Rust's homes are read from env with the tools'
// documented defaults, so it can run for every call.
//
// For a PATH entry X/bin (or X/sbin, X/shims) the installation is X
// (/usr/local/go, ~/.pyenv, ~/.nvm/versions/node/v20), unless X would
// expose too much: $HOME or one of its ancestors, /, or a directory that
// holds a secret (~/.cargo holds credentials, ~/.local the keyrings);
// then only the entry itself is bound. rustup's proxies in CARGO_HOME/bin
// need RUSTUP_HOME too.
func findToolchains(path, home string, env map[string]string) toolchains {
	var t toolchains
	secrets := secretPaths(home, env)
	for _, d := range filepath.SplitList(path) {
		if !filepath.IsAbs(d) {
			continue // a relative PATH entry names nothing fixed
		}
		d = filepath.Clean(d)
		real, err := filepath.EvalSymlinks(d)
		if err != nil || !isDir(real) {
			continue
		}
		if real != d && !underAny(d, systemDirs) {
			t.links = append(t.links, d)
		}
		if underAny(real, systemDirs) {
			continue
		}
		dir := installRoot(real, home, secrets)
		if exposesSecret(dir, secrets) {
			continue
		}
		t.dirs = append(t.dirs, dir)
		if cargo := cargoHome(home, env); cargo != "" && real == filepath.Join(cargo, "bin") {
			if r := rustupHome(home, env); r != "" {
				t.dirs = append(t.dirs, r)
			}
		}
	}
	t.dirs = dedupe(existingDirs(t.dirs))
	t.links = dedupe(t.links)
	return t
}

// installRoot is the installation a PATH directory belongs to: its parent
// for bin, sbin and shims directories, when that parent may be shown.
func installRoot(dir, home string, secrets []string) string {
	switch filepath.Base(dir) {
	case "bin", "sbin", "shims":
	default:
		return dir
	}
	parent := filepath.Dir(dir)
	// pyenv's plugins keep their shims at ~/.pyenv/plugins/<name>/shims.
	if grand := filepath.Dir(filepath.Dir(parent)); filepath.Base(filepath.Dir(parent)) == "plugins" && grand != "/" && !exposesSecret(grand, secrets) && !within(home, grand) {
		parent = grand
	}
	if parent == "/" || within(home, parent) || exposesSecret(parent, secrets) {
		return dir
	}
	return parent
}

// stores are the caches of downloaded packages the user already has:
// readable, so builds whose dependencies are downloaded work offline, and
// writable only when the operator shares caches.
func stores(home string, env map[string]string) []string {
	var s []string
	if m := goModCache(home, env); m != "" {
		s = append(s, m)
	}
	if cargo := cargoHome(home, env); cargo != "" {
		s = append(s, filepath.Join(cargo, "registry"), filepath.Join(cargo, "git"))
	}
	return existingDirs(s)
}

// goModCache is `go env GOMODCACHE` without running go: GOMODCACHE, else
// the first GOPATH entry's pkg/mod, else ~/go/pkg/mod.
func goModCache(home string, env map[string]string) string {
	if m := env["GOMODCACHE"]; filepath.IsAbs(m) {
		return filepath.Clean(m)
	}
	if gp := filepath.SplitList(env["GOPATH"]); len(gp) > 0 && filepath.IsAbs(gp[0]) {
		return filepath.Join(gp[0], "pkg", "mod")
	}
	if home == "" {
		return ""
	}
	return filepath.Join(home, "go", "pkg", "mod")
}

func cargoHome(home string, env map[string]string) string {
	if c := env["CARGO_HOME"]; filepath.IsAbs(c) {
		return filepath.Clean(c)
	}
	if home == "" {
		return ""
	}
	return filepath.Join(home, ".cargo")
}

// rustupHome is RUSTUP_HOME, else ~/.rustup; "" when neither is known (no
// home), never a relative path.
func rustupHome(home string, env map[string]string) string {
	if r := env["RUSTUP_HOME"]; filepath.IsAbs(r) {
		return filepath.Clean(r)
	}
	if home == "" {
		return ""
	}
	return filepath.Join(home, ".rustup")
}

// secretPaths are the absolute paths no command may read, for home
// (existing or not), the agent socket env names, and /run/user.
func secretPaths(home string, env map[string]string) []string {
	s := []string{secrets.RunUser}
	if home != "" && home != "/" {
		for _, rel := range secrets.Home() {
			s = append(s, filepath.Join(home, rel))
		}
	}
	for _, k := range []string{"SSH_AUTH_SOCK", "GNUPGHOME"} {
		if v := env[k]; filepath.IsAbs(v) {
			s = append(s, filepath.Clean(v))
		}
	}
	if c := cargoHome(home, env); c != "" {
		s = append(s, filepath.Join(c, "credentials"), filepath.Join(c, "credentials.toml"))
	}
	return dedupe(s)
}

// exposesSecret reports whether mounting dir would show a secret: dir is
// a secret, lies in one, or contains one.
func exposesSecret(dir string, secrets []string) bool {
	for _, s := range secrets {
		if within(dir, s) || within(s, dir) {
			return true
		}
	}
	return false
}

// within reports whether path is dir or lies inside it. Both are clean
// and absolute.
func within(path, dir string) bool {
	if dir == "/" {
		return strings.HasPrefix(path, "/")
	}
	return path == dir || strings.HasPrefix(path, dir) && path[len(dir)] == '/'
}

func underAny(path string, dirs []string) bool {
	return slices.ContainsFunc(dirs, func(d string) bool { return within(path, d) })
}

func isDir(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}

func existingDirs(ds []string) []string {
	var out []string
	for _, d := range ds {
		if isDir(d) {
			out = append(out, d)
		}
	}
	return out
}

// dedupe drops repeated entries, keeping the first of each in its place.
// It runs on lists a command controls (the repositories nested in a root,
// thousands of them), so it stays linear.
func dedupe(s []string) []string {
	out := s[:0:0]
	seen := make(map[string]bool, len(s))
	for _, v := range s {
		if !seen[v] {
			seen[v] = true
			out = append(out, v)
		}
	}
	return out
}
