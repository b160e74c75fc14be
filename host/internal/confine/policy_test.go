package confine

import (
	"context"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/toolhost/toolhost/host/internal/config"
	"github.com/toolhost/toolhost/host/internal/confine/spec"
)

// fakeHome makes a home directory holding every secret the sandbox hides
// item 2, and toolchains and package stores like a developer's.
func fakeHome(t *testing.T) string {
	t.Helper()
	home := t.TempDir()
	dirs := []string{
		".ssh", ".aws", ".gnupg", ".config/gh", ".docker", ".kube", ".config/gcloud",
		".local/share/keyrings", ".password-store", ".claude", ".codex", ".gemini", ".cursor",
		".config/github-copilot",
		".pyenv/versions/3.11.7/bin", ".pyenv/shims", ".pyenv/bin", ".pyenv/plugins/pyenv-virtualenv/shims",
		".cargo/bin", ".cargo/registry/index", ".rustup/toolchains", "go/pkg/mod/example.com", "go/bin",
		".nvm/versions/node/v20/bin", ".local/bin", "bin", ".config/git", ".config/go",
		".cache/go-build", ".cache/pip", ".npm", "project", ".claude/local/bin",
	}
	for _, d := range dirs {
		mustMkdir(t, filepath.Join(home, d))
	}
	files := []string{
		".ssh/id_rsa", ".aws/credentials", ".netrc", ".git-credentials", ".npmrc", ".pypirc",
		".cargo/credentials", ".cargo/credentials.toml", ".claude.json", ".config/gh/hosts.yml",
		".gitconfig", ".config/git/config", ".config/git/credentials", ".pyenv/versions/3.11.7/bin/python3",
		".cargo/bin/cargo", ".nvm/versions/node/v20/bin/node",
	}
	for _, f := range files {
		mustWrite(t, filepath.Join(home, f), "secret-or-tool")
	}
	return home
}

// homeSecretsOf are the secrets fakeHome made, as absolute paths.
func homeSecretsOf(home string) []string {
	var s []string
	for _, rel := range []string{
		".ssh", ".aws", ".gnupg", ".config/gh", ".netrc", ".git-credentials", ".docker", ".kube",
		".config/gcloud", ".npmrc", ".pypirc", ".cargo/credentials", ".cargo/credentials.toml",
		".local/share/keyrings", ".password-store", ".claude", ".claude.json", ".codex", ".gemini",
		".cursor", ".config/github-copilot", ".config/git/credentials",
	} {
		s = append(s, filepath.Join(home, rel))
	}
	return s
}

// fakePath is a PATH over home's toolchains, the system's, and entries
// that must find nothing: relative, missing, inside a secret.
func fakePath(home string) string {
	return strings.Join([]string{
		filepath.Join(home, ".pyenv/plugins/pyenv-virtualenv/shims"), filepath.Join(home, ".pyenv/shims"),
		filepath.Join(home, ".pyenv/bin"), filepath.Join(home, ".cargo/bin"), filepath.Join(home, "go/bin"),
		filepath.Join(home, ".nvm/versions/node/v20/bin"), filepath.Join(home, ".local/bin"),
		filepath.Join(home, "bin"), filepath.Join(home, ".claude/local/bin"), filepath.Join(home, "missing/bin"),
		"relative/bin", "/usr/local/bin", "/usr/bin", "/bin",
	}, string(os.PathListSeparator))
}

func testSettings(t *testing.T, home string) Settings {
	t.Helper()
	return Settings{
		Mode: ModeWorkspaceWrite, Network: NetworkOff, StateDir: t.TempDir(),
		Home: home, Path: fakePath(home), ProjectFileNames: config.ProjectFileNames(),
		Environ: []string{"PATH=" + fakePath(home), "HOME=" + home, "SSH_AUTH_SOCK=" + filepath.Join(home, ".ssh/agent.sock"), "LANG=C.UTF-8"},
	}
}

func mustMkdir(t *testing.T, p string) {
	t.Helper()
	if err := os.MkdirAll(p, 0o755); err != nil {
		t.Fatal(err)
	}
}

func mustWrite(t *testing.T, p, s string) {
	t.Helper()
	mustMkdir(t, filepath.Dir(p))
	if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

func mustBuild(t *testing.T, s Settings, c Call) *Policy {
	t.Helper()
	p, cleanup, err := Build(context.Background(), s, c)
	if err != nil {
		t.Fatalf("Build: %v", err)
	}
	t.Cleanup(cleanup)
	checkMountOrder(t, p)
	return p
}

// effectiveMount is the mount that decides what path is inside p's root:
// the deepest holding it, the latest of equals, found by a plain scan,
// the tests' own reading of the launcher's order, independent of the
// index Build and Hint share (deciding).
func effectiveMount(p *Policy, path string) *Mount {
	var last *Mount
	for i, m := range p.Mounts {
		if within(path, m.Target) && (last == nil || depth(m.Target) >= depth(last.Target)) {
			last = &p.Mounts[i]
		}
	}
	return last
}

func findMount(p *Policy, kind MountKind, target string) *Mount {
	for i, m := range p.Mounts {
		if m.Kind == kind && m.Target == target {
			return &p.Mounts[i]
		}
	}
	return nil
}

// checkMountOrder: targets absolute and clean, sources present (a link
// may be a source), and no mount after one it lies in.
func checkMountOrder(t *testing.T, p *Policy) {
	t.Helper()
	for i, m := range p.Mounts {
		if !isAbsClean(m.Target) {
			t.Errorf("mount %d: target %q not absolute and clean", i, m.Target)
		}
		if m.Kind == MountRead || m.Kind == MountWrite {
			if _, err := os.Lstat(m.Source); err != nil {
				t.Errorf("mount %d: source: %v", i, err)
			}
		}
		for _, later := range p.Mounts[i+1:] {
			if later.Target != m.Target && within(m.Target, later.Target) {
				t.Errorf("%s is mounted before %s, which holds it: the later one would cover it", m.Target, later.Target)
			}
		}
	}
}

// TestBuildNeverShowsSecrets: whatever the roots, mode or cache sharing,
// no secret is the source or target of a mount that shows it, none is a
// Landlock path, and where a shown tree holds one, a hide covers it.
func TestBuildNeverShowsSecrets(t *testing.T) {
	home := fakeHome(t)
	project := filepath.Join(home, "project")
	tests := []struct {
		name  string
		roots []string
		mode  Mode
		share bool
		extra []string
		link  bool // $HOME reached through a symbolic link
	}{
		{"project in home", []string{project}, ModeWorkspaceWrite, false, nil, false},
		{"home is the root", []string{home}, ModeWorkspaceWrite, false, nil, false},
		{"home is the root, read-only", []string{home}, ModeReadOnly, false, nil, false},
		{"shared caches", []string{project}, ModeWorkspaceWrite, true, nil, false},
		{"parent of home is the root", []string{filepath.Dir(home)}, ModeWorkspaceWrite, false, nil, false},
		{"home is extra writable", []string{project}, ModeWorkspaceWrite, false, []string{home}, false},
		{"home through a link", []string{project}, ModeWorkspaceWrite, false, nil, true},
		{"home through a link is the root", []string{home}, ModeWorkspaceWrite, true, nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := testSettings(t, home)
			s.Mode, s.ShareCaches, s.ExtraWritable = tt.mode, tt.share, tt.extra
			if tt.link {
				s.Home = filepath.Join(t.TempDir(), "home")
				if err := os.Symlink(home, s.Home); err != nil {
					t.Fatal(err)
				}
				s.Path = fakePath(s.Home)
			}
			p := mustBuild(t, s, Call{ID: "c1", Roots: tt.roots, Dir: tt.roots[0]})
			for _, m := range p.Mounts {
				if m.Source != "" && resolvedDir(m.Source) != filepath.Dir(m.Source) {
					t.Errorf("%+v: the source passes through a link, which the launcher refuses", m)
				}
			}
			// Sources are host paths (links resolved), targets and Landlock
			// paths are what the command sees.
			for _, secret := range homeSecretsOf(home) {
				for _, m := range p.Mounts {
					if m.Kind != MountHide && m.Kind != MountTmpfs && within(m.Source, secret) {
						t.Errorf("secret %s shown by %+v", secret, m)
					}
				}
			}
			for _, secret := range homeSecretsOf(s.Home) {
				for _, m := range p.Mounts {
					if m.Kind != MountHide && m.Kind != MountTmpfs && within(m.Target, secret) {
						t.Errorf("secret %s shown by %+v", secret, m)
					}
				}
				for _, l := range slices.Concat(p.Writable, p.Readable) {
					if within(l, secret) {
						t.Errorf("secret %s in Landlock's list as %s", secret, l)
					}
				}
				if m := effectiveMount(p, secret); m != nil && (m.Kind == MountRead || m.Kind == MountWrite) {
					t.Errorf("secret %s visible inside through %+v", secret, m)
				}
			}
			if m := effectiveMount(p, "/etc/shadow"); pathExists("/etc/shadow") && (m == nil || m.Kind != MountHide) {
				t.Errorf("/etc/shadow is not hidden: %+v", m)
			}
			for _, kv := range p.Env {
				if strings.HasPrefix(kv, "SSH_AUTH_SOCK=") {
					t.Errorf("the agent socket reaches the command: %s", kv)
				}
			}
		})
	}
}

// TestBuildRefusesRootsInSecrets: a root or writable path inside a secret
// fails the call with a message naming both, as does /.
func TestBuildRefusesRootsInSecrets(t *testing.T) {
	home := fakeHome(t)
	for _, tt := range []struct {
		roots, extra []string
		want         string
	}{
		{[]string{filepath.Join(home, ".ssh")}, nil, ".ssh"},
		{[]string{filepath.Join(home, "project")}, []string{filepath.Join(home, ".aws")}, ".aws"},
		{[]string{"/"}, nil, "/ cannot be a root"},
		{[]string{"relative"}, nil, "not absolute"},
	} {
		s := testSettings(t, home)
		s.ExtraWritable = tt.extra
		_, _, err := Build(context.Background(), s, Call{ID: "c9", Roots: tt.roots, Dir: tt.roots[0]})
		if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "c9") {
			t.Errorf("roots %v extra %v: err = %v, want one naming the call and %q", tt.roots, tt.extra, err, tt.want)
		}
	}
}

// TestBuildToolchainsAndStores: toolchains and package stores are
// readable, not writable; $HOME is an empty scratch tmpfs with git's user
// settings on top; shared caches make the user's caches writable.
func TestBuildToolchainsAndStores(t *testing.T) {
	home := fakeHome(t)
	s := testSettings(t, home)
	project := filepath.Join(home, "project")
	p := mustBuild(t, s, Call{ID: "c1", Roots: []string{project}})
	if p.Dir != project {
		t.Errorf("Dir = %q, want the root", p.Dir)
	}
	if m := findMount(p, MountTmpfs, home); m == nil {
		t.Errorf("no scratch tmpfs at $HOME")
	}
	for _, ro := range []string{".pyenv", ".cargo/bin", ".rustup", "go/pkg/mod", ".cargo/registry", ".gitconfig", ".config/git/config", ".config/go", ".nvm/versions/node/v20"} {
		if m := effectiveMount(p, filepath.Join(home, ro)); m == nil || m.Kind != MountRead {
			t.Errorf("~/%s: %+v, want read-only", ro, m)
		}
	}
	for _, hidden := range []string{".cargo", ".local", ".cache", ".npm"} {
		if m := effectiveMount(p, filepath.Join(home, hidden)); m == nil || m.Kind != MountTmpfs {
			t.Errorf("~/%s: %+v, want only the scratch home", hidden, m)
		}
	}
	s.ShareCaches = true
	p = mustBuild(t, s, Call{ID: "c2", Roots: []string{project}})
	for _, rw := range []string{".cache/go-build", ".cache/pip", ".npm", "go/pkg/mod", ".cargo/registry"} {
		if m := effectiveMount(p, filepath.Join(home, rw)); m == nil || m.Kind != MountWrite {
			t.Errorf("shared ~/%s: %+v, want writable", rw, m)
		}
	}
	if m := effectiveMount(p, cacheTarget); m != nil {
		t.Errorf("shared caches still mount toolhost's: %+v", m)
	}
}

// TestBuildSystemTrees: the system directories are read-only; a system
// directory that is a link (/bin -> usr/bin) is listed with the link as
// Source, after the directory it names.
func TestBuildSystemTrees(t *testing.T) {
	home := fakeHome(t)
	p := mustBuild(t, testSettings(t, home), Call{ID: "c1", Roots: []string{filepath.Join(home, "project")}})
	for _, d := range systemDirs {
		fi, err := os.Lstat(d)
		if err != nil {
			continue
		}
		m := findMount(p, MountRead, d)
		if m == nil || m.Source != d {
			t.Errorf("%s: %+v, want read-only at its own path", d, m)
			continue
		}
		if fi.Mode()&os.ModeSymlink != 0 {
			real, err := filepath.EvalSymlinks(d)
			if err != nil {
				continue
			}
			if e := effectiveMount(p, real); e == nil || e.Kind != MountRead || slices.Contains(p.Readable, d) {
				t.Errorf("link %s -> %s: the real directory is not shown read-only (%+v), or the link is a Landlock path", d, real, e)
			}
		}
	}
}

// TestBuildReadOnlyMode: roots read-only, tmp and caches still writable.
func TestBuildReadOnlyMode(t *testing.T) {
	home := fakeHome(t)
	root := t.TempDir()
	mustMkdir(t, filepath.Join(root, ".git/hooks"))
	extra := t.TempDir()
	s := testSettings(t, home)
	s.Mode, s.ExtraWritable = ModeReadOnly, []string{extra}
	p := mustBuild(t, s, Call{ID: "c1", Roots: []string{root}})
	for _, d := range []string{root, extra, filepath.Join(root, ".git")} {
		if m := effectiveMount(p, d); m == nil || m.Kind != MountRead {
			t.Errorf("%s: %+v, want read-only", d, m)
		}
		if slices.Contains(p.Writable, d) {
			t.Errorf("%s is writable to Landlock", d)
		}
	}
	for _, d := range []string{"/tmp", "/var/tmp", cacheTarget} {
		if m := effectiveMount(p, d); m == nil || m.Kind != MountWrite || !slices.Contains(p.Writable, d) {
			t.Errorf("%s: %+v, want writable", d, m)
		}
	}
}

// TestBuildProtectsGit: .git becomes a mount point, its hooks, config and
// info read-only, also in submodules, a missing hooks directory is made
// so it can be protected, a hooksPath inside the root is protected, and a
// link the command planted leads nowhere new.
func TestBuildProtectsGit(t *testing.T) {
	home := fakeHome(t)
	root := t.TempDir()
	git := filepath.Join(root, ".git")
	mustWrite(t, filepath.Join(git, "config"), "[core]\n\thooksPath = .husky\n")
	mustMkdir(t, filepath.Join(git, "info"))
	mustMkdir(t, filepath.Join(root, ".husky"))
	mustWrite(t, filepath.Join(git, "modules/sub/config"), "")
	mustMkdir(t, filepath.Join(git, "modules/sub/hooks"))
	// A worktree in another root, whose git directory is in this one.
	wt := t.TempDir()
	mustWrite(t, filepath.Join(git, "worktrees/wt/commondir"), "../..\n")
	mustWrite(t, filepath.Join(wt, ".git"), "gitdir: "+filepath.Join(git, "worktrees/wt")+"\n")
	// A third root whose .git file points outside every root, at a secret.
	lure := t.TempDir()
	mustWrite(t, filepath.Join(lure, ".git"), "gitdir: "+filepath.Join(home, ".ssh")+"\n")

	p := mustBuild(t, testSettings(t, home), Call{ID: "c1", Roots: []string{root, wt, lure}, Dir: root})
	if m := findMount(p, MountStage, git); m == nil {
		t.Errorf(".git is not staged")
	}
	for _, ro := range []string{".git/hooks", ".git/config", ".git/info", ".git/modules/sub/hooks", ".git/modules/sub/config", ".husky"} {
		if m := effectiveMount(p, filepath.Join(root, ro)); m == nil || m.Kind != MountRead {
			t.Errorf("%s: %+v, want read-only", ro, m)
		}
	}
	if !isDir(filepath.Join(git, "hooks")) {
		t.Errorf("the missing hooks directory was not made")
	}
	if m := effectiveMount(p, filepath.Join(wt, ".git")); m == nil || m.Kind != MountRead {
		t.Errorf("worktree's .git file: %+v, want read-only", m)
	}
	if m := findMount(p, MountStage, filepath.Join(git, "worktrees/wt")); m == nil {
		t.Errorf("the worktree's git directory is not staged")
	}
	for _, m := range p.Mounts {
		if m.Kind != MountHide && within(m.Source, filepath.Join(home, ".ssh")) {
			t.Errorf("the lure's gitdir was mounted: %+v", m)
		}
	}

	// hooks as a link out of the writable trees: not followed.
	root2 := t.TempDir()
	mustMkdir(t, filepath.Join(root2, ".git"))
	if err := os.Symlink(filepath.Join(home, ".ssh"), filepath.Join(root2, ".git/hooks")); err != nil {
		t.Fatal(err)
	}
	p = mustBuild(t, testSettings(t, home), Call{ID: "c2", Roots: []string{root2}})
	for _, m := range p.Mounts {
		if m.Kind != MountHide && within(m.Source, filepath.Join(home, ".ssh")) {
			t.Errorf("a hooks link led a mount out: %+v", m)
		}
	}
}

// TestBuildProtectedAndState: toolhost's configuration inside a writable
// root is read-only; its state directory is hidden where a tree shows
// it, while the call's tmp and cache stay mounted.
func TestBuildProtectedAndState(t *testing.T) {
	home := fakeHome(t)
	root := t.TempDir()
	conf := filepath.Join(root, ".toolhost.toml")
	mustWrite(t, conf, "")
	lureConf := filepath.Join(root, "lure.toml")
	if err := os.Symlink(filepath.Join(home, ".ssh/id_rsa"), lureConf); err != nil {
		t.Fatal(err)
	}
	state := filepath.Join(root, "state")
	mustMkdir(t, state)
	s := testSettings(t, home)
	s.StateDir = state
	s.Protected = []string{conf, lureConf, filepath.Join(root, "missing.toml"), filepath.Join(home, ".config/toolhost/config.toml"), state}
	p := mustBuild(t, s, Call{ID: "c1", Roots: []string{root}})
	if m := effectiveMount(p, conf); m == nil || m.Kind != MountRead {
		t.Errorf("config in the root: %+v, want read-only", m)
	}
	if m := effectiveMount(p, filepath.Join(root, "missing.toml")); m == nil || m.Kind != MountWrite {
		t.Errorf("a missing protected file: %+v, want nothing bound (the root's mount)", m)
	}
	if m := effectiveMount(p, state); m == nil || m.Kind != MountHide {
		t.Errorf("state directory: %+v, want hidden", m)
	}
	if m := effectiveMount(p, "/tmp"); m == nil || m.Kind != MountWrite || !within(m.Source, state) {
		t.Errorf("/tmp: %+v, want the call's tmp in the state directory", m)
	}
	if m := effectiveMount(p, cacheTarget); m == nil || m.Kind != MountWrite || !within(m.Source, state) {
		t.Errorf("cache: %+v", m)
	}
	for _, m := range p.Mounts {
		if m.Kind != MountHide && within(m.Source, filepath.Join(home, ".ssh")) {
			t.Errorf("a protected link led a mount out: %+v", m)
		}
	}
}

// TestBuildEnv: TMPDIR and the caches point inside, GOPROXY is off
// without a network, the proxy variables are set for the allowlist, and
// PWD is the call's working directory, not toolhost's.
func TestBuildEnv(t *testing.T) {
	home := fakeHome(t)
	root := t.TempDir()
	sock := filepath.Join(t.TempDir(), "proxy.sock")
	mustWrite(t, sock, "") // stands for the socket
	for _, tt := range []struct {
		name    string
		network Network
		share   bool
		want    []string
		absent  []string
	}{
		{"off", NetworkOff, false,
			[]string{"TMPDIR=/tmp", "GOPROXY=off", "GOCACHE=" + cacheTarget + "/go-build", "GOTMPDIR=" + cacheTarget + "/go-tmp",
				"npm_config_cache=" + cacheTarget + "/npm", "PIP_CACHE_DIR=" + cacheTarget + "/pip", "UV_CACHE_DIR=" + cacheTarget + "/uv",
				"XDG_CACHE_HOME=" + cacheTarget + "/xdg", "HOME=" + home, "LANG=C.UTF-8", "CARGO_NET_OFFLINE=true", "PWD=" + root},
			[]string{"HTTPS_PROXY=", "SSH_AUTH_SOCK="}},
		{"allowlist", NetworkAllowlist, false,
			[]string{"HTTP_PROXY=http://127.0.0.1:3128", "HTTPS_PROXY=http://127.0.0.1:3128", "https_proxy=http://127.0.0.1:3128",
				"ALL_PROXY=socks5h://127.0.0.1:3128", "NO_PROXY=", "TMPDIR=/tmp"},
			[]string{"GOPROXY=off"}},
		{"on, shared caches", NetworkOn, true, []string{"TMPDIR=/tmp", "GOPROXY=https://proxy.example"}, []string{"GOPROXY=off", "GOCACHE=", "HTTP_PROXY=", "XDG_CACHE_HOME="}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := testSettings(t, home)
			s.Network, s.ShareCaches, s.ProxySocket = tt.network, tt.share, sock
			s.Environ = append(s.Environ, "TMPDIR=/somewhere", "GOPROXY=https://proxy.example", "PWD=/where/toolhost/runs")
			p := mustBuild(t, s, Call{ID: "c1", Roots: []string{root}})
			for _, w := range tt.want {
				if !slices.Contains(p.Env, w) {
					t.Errorf("env lacks %s", w)
				}
			}
			for _, a := range tt.absent {
				for _, kv := range p.Env {
					if strings.HasPrefix(kv, a) {
						t.Errorf("env has %s", kv)
					}
				}
			}
			keys := map[string]bool{}
			for _, kv := range p.Env {
				k, _, _ := strings.Cut(kv, "=")
				if keys[k] {
					t.Errorf("%s is set twice", k)
				}
				keys[k] = true
			}
			if tt.network == NetworkAllowlist {
				if p.ProxySocket != proxyTarget || p.ProxyPort != proxyPort {
					t.Errorf("proxy = %s:%d", p.ProxySocket, p.ProxyPort)
				}
				if m := findMount(p, MountRead, proxyTarget); m == nil || m.Source != sock {
					t.Errorf("proxy socket mount: %+v", m)
				}
			}
		})
	}
}

// TestBuildRefusesBadSettings: a state directory that is empty or
// relative, the off mode, and an allowlist without a proxy are errors.
func TestBuildRefusesBadSettings(t *testing.T) {
	home := fakeHome(t)
	root := t.TempDir()
	for _, tt := range []struct {
		name string
		edit func(*Settings)
		want string
	}{
		{"empty state", func(s *Settings) { s.StateDir = "" }, "state directory"},
		{"relative state", func(s *Settings) { s.StateDir = "state" }, "state directory"},
		{"off", func(s *Settings) { s.Mode = ModeOff }, "unconfined"},
		{"unknown mode", func(s *Settings) { s.Mode = "yolo" }, "not a mode"},
		{"allowlist without proxy", func(s *Settings) { s.Network = NetworkAllowlist }, "proxy"},
	} {
		s := testSettings(t, home)
		tt.edit(&s)
		p, cleanup, err := Build(context.Background(), s, Call{ID: "c1", Roots: []string{root}})
		cleanup()
		if err == nil || !strings.Contains(err.Error(), tt.want) || p != nil {
			t.Errorf("%s: err = %v, want one about %q", tt.name, err, tt.want)
		}
	}
	if _, _, err := Build(context.Background(), testSettings(t, home), Call{ID: "c1", Roots: []string{root}, Dir: t.TempDir()}); err == nil {
		t.Errorf("a working directory outside the roots was accepted")
	}
}

// TestBuildTmpAndCache: the call's tmp is private (0700), named safely
// whatever the call id, and removed by the cleanup without following a
// link out of it; the cache is the root's and outlives the call.
func TestBuildTmpAndCache(t *testing.T) {
	home := fakeHome(t)
	root, other := t.TempDir(), t.TempDir()
	s := testSettings(t, home)
	p, cleanup, err := Build(context.Background(), s, Call{ID: "../../escape/x", Roots: []string{root}})
	if err != nil {
		t.Fatal(err)
	}
	tmp := findMount(p, MountWrite, "/tmp").Source
	if !within(tmp, filepath.Join(s.StateDir, "sandbox", "tmp")) {
		t.Fatalf("tmp %s is not under the state directory", tmp)
	}
	if fi, err := os.Stat(tmp); err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("tmp: %v %v, want a 0700 directory", fi.Mode(), err)
	}
	outside := filepath.Join(t.TempDir(), "keep")
	mustWrite(t, outside, "keep")
	mustMkdir(t, filepath.Join(tmp, "d"))
	if err := os.Symlink(filepath.Dir(outside), filepath.Join(tmp, "d", "link")); err != nil {
		t.Fatal(err)
	}
	cache := findMount(p, MountWrite, cacheTarget).Source
	cleanup()
	cleanup()
	if _, err := os.Lstat(tmp); !os.IsNotExist(err) {
		t.Errorf("tmp not removed: %v", err)
	}
	if !pathExists(outside) {
		t.Errorf("the cleanup followed a link out of the tmp")
	}
	if !isDir(cache) {
		t.Errorf("the root's cache went with the call")
	}
	p2 := mustBuild(t, s, Call{ID: "c2", Roots: []string{root}})
	p3 := mustBuild(t, s, Call{ID: "c3", Roots: []string{other}})
	if c2, c3 := findMount(p2, MountWrite, cacheTarget).Source, findMount(p3, MountWrite, cacheTarget).Source; c2 != cache || c3 == cache {
		t.Errorf("caches: same root %s and %s, other root %s", cache, c2, c3)
	}
}

// TestBuildLimits: file size and open files get defaults; what is set
// stays.
func TestBuildLimits(t *testing.T) {
	home := fakeHome(t)
	s := testSettings(t, home)
	p := mustBuild(t, s, Call{ID: "c1", Roots: []string{t.TempDir()}})
	if p.Limits != (Limits{FileSizeBytes: spec.DefaultFileSizeBytes, OpenFiles: spec.DefaultOpenFiles}) {
		t.Errorf("defaults = %+v", p.Limits)
	}
	s.Limits = Limits{CPUSeconds: 10, FileSizeBytes: 5, OpenFiles: 6, MemoryBytes: 7, Pids: 8}
	p = mustBuild(t, s, Call{ID: "c1", Roots: []string{t.TempDir()}})
	if p.Limits != s.Limits {
		t.Errorf("limits = %+v, want %+v", p.Limits, s.Limits)
	}
}

// BenchmarkBuild is one call's policy with this machine's PATH and home:
// it runs for every run_command call. The roots: an empty repository, and
// this package's own checkout when the tests run from one, searched in
// full each time or with a SearchCache, as toolhost does.
func BenchmarkBuild(b *testing.B) {
	home, _ := os.UserHomeDir()
	empty := b.TempDir()
	if err := os.Mkdir(filepath.Join(empty, ".git"), 0o755); err != nil {
		b.Fatal(err)
	}
	roots := map[string]string{"empty": empty}
	if repo, err := filepath.Abs("../../.."); err == nil && isDir(filepath.Join(repo, ".git")) {
		roots["this-repository"] = repo
	}
	for _, name := range slices.Sorted(maps.Keys(roots)) {
		for _, cached := range []bool{false, true} {
			s := Settings{Mode: ModeWorkspaceWrite, Network: NetworkOff, StateDir: b.TempDir(), Home: home, Path: os.Getenv("PATH"), Environ: os.Environ()}
			run := name
			if cached {
				s.Search = NewSearchCache()
				run += "-cached"
			}
			b.Run(run, func(b *testing.B) {
				for b.Loop() {
					_, cleanup, err := Build(context.Background(), s, Call{ID: "bench", Roots: []string{roots[name]}})
					if err != nil {
						b.Fatal(err)
					}
					cleanup()
				}
			})
		}
	}
}

func resolvedDir(p string) string {
	d, err := filepath.EvalSymlinks(filepath.Dir(p))
	if err != nil {
		return ""
	}
	return d
}

func pathExists(p string) bool {
	_, err := os.Lstat(p)
	return err == nil
}

// TestBuildPinsWhatItHides: in a root that holds secrets and toolhost's
// configuration (a root that is $HOME), every directory between the root
// and them is a mount point, which a command cannot rename: moving
// ~/.config away would carry ~/.config/gh out of where the next call
// hides it (the red team's renamed-away secret).
func TestBuildPinsWhatItHides(t *testing.T) {
	home := fakeHome(t)
	conf := filepath.Join(home, ".config/toolhost/toolhost.toml")
	mustWrite(t, conf, "")
	s := testSettings(t, home)
	s.Protected = []string{conf}
	p := mustBuild(t, s, Call{ID: "c1", Roots: []string{home}})
	for _, rel := range []string{".config", ".config/toolhost", ".local", ".local/share"} {
		if findMount(p, MountWrite, filepath.Join(home, rel)) == nil {
			t.Errorf("%s is not a mount point: a command could rename it and move what lies in it out of its protection", rel)
		}
	}
	for _, rel := range []string{".config/gh", ".local/share/keyrings", ".ssh"} {
		if m := effectiveMount(p, filepath.Join(home, rel)); m == nil || m.Kind != MountHide {
			t.Errorf("%s: %+v, want hidden", rel, m)
		}
	}
	if m := effectiveMount(p, conf); m == nil || m.Kind != MountRead {
		t.Errorf("the operator's configuration: %+v, want read-only", m)
	}
	// Outside a writable root nothing needs pinning: read-only mode.
	s.Mode = ModeReadOnly
	p = mustBuild(t, s, Call{ID: "c2", Roots: []string{home}})
	if findMount(p, MountWrite, filepath.Join(home, ".config")) != nil {
		t.Errorf("read-only mode pinned ~/.config writable")
	}
}

// TestBuildSweepsTmpOfDeadToolhost: the private tmp of a call whose
// toolhost was killed before its cleanup ran is removed by a later Build;
// a live toolhost's, this one's and names without a pid stay (the red team's tmp left after SIGKILL).
func TestBuildSweepsTmpOfDeadToolhost(t *testing.T) {
	home := fakeHome(t)
	s := testSettings(t, home)
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	live := exec.Command("sleep", "60")
	if err := live.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { live.Process.Kill(); live.Wait() })
	tmp := filepath.Join(s.StateDir, "sandbox", "tmp")
	names := map[string]bool{ // name: kept
		fmt.Sprintf("call-%d-c1-123", dead.Process.Pid): false,
		fmt.Sprintf("call-%d-c2-123", live.Process.Pid): true,
		fmt.Sprintf("call-%d-c3-123", os.Getpid()):      true,
		"call-c4-123": true,
		fmt.Sprintf("other-%d-c5-123", dead.Process.Pid): true,
	}
	for name := range names {
		mustWrite(t, filepath.Join(tmp, name, "left.bin"), "a command's file")
	}
	mustBuild(t, s, Call{ID: "c6", Roots: []string{t.TempDir()}})
	for name, kept := range names {
		if got := pathExists(filepath.Join(tmp, name)); got != kept {
			t.Errorf("%s: exists %v, want %v", name, got, kept)
		}
	}
}

// TestBuildStagesGitDir: what a command writes at the top of a git
// directory lands in its stage (here written there directly, as the
// overlay would); the cleanup applies to the real directory what git
// writes in its work (the index, HEAD, a rebase's state) and nothing
// else: not a commondir (the red team's), a config.worktree, a gitdir,
// an objects/info/alternates. A linked worktree's own commondir stays,
// read-only.
func TestBuildStagesGitDir(t *testing.T) {
	home := fakeHome(t)
	root := t.TempDir()
	git := filepath.Join(root, ".git")
	mustWrite(t, filepath.Join(git, "HEAD"), "ref: refs/heads/main\n")
	mustMkdir(t, filepath.Join(git, "objects"))
	mustMkdir(t, filepath.Join(git, "refs"))
	wtGitdir := filepath.Join(git, "worktrees/wt")
	mustWrite(t, filepath.Join(wtGitdir, "commondir"), "../..\n")
	wt := t.TempDir()
	mustWrite(t, filepath.Join(wt, ".git"), "gitdir: "+wtGitdir+"\n")
	s := testSettings(t, home)
	p, cleanup, err := Build(context.Background(), s, Call{ID: "c1", Roots: []string{root, wt}})
	if err != nil {
		t.Fatal(err)
	}
	for _, through := range []string{"objects", "refs", "worktrees"} {
		if findMount(p, MountWrite, filepath.Join(git, through)) == nil {
			t.Errorf(".git/%s is not bound through", through)
		}
	}
	if m := effectiveMount(p, filepath.Join(wtGitdir, "commondir")); m == nil || m.Kind != MountRead {
		t.Errorf("the worktree's commondir: %+v, want read-only", m)
	}
	upper := func(target string) string {
		m := findMount(p, MountStage, target)
		if m == nil {
			t.Fatalf("%s is not staged", target)
		}
		return filepath.Join(m.Stage, "upper")
	}
	up := upper(git)
	mustWrite(t, filepath.Join(up, "commondir"), "../evil\n")
	mustWrite(t, filepath.Join(up, "config.worktree"), "[core]\n")
	mustWrite(t, filepath.Join(up, "gitdir"), "/elsewhere\n")
	mustWrite(t, filepath.Join(up, "HEAD"), "ref: refs/heads/feature\n")
	mustWrite(t, filepath.Join(up, "index"), "DIRC")
	mustWrite(t, filepath.Join(up, "index.lock"), "left by a killed git")
	mustWrite(t, filepath.Join(up, "rebase-merge/git-rebase-todo"), "pick 1234\n")
	mustWrite(t, filepath.Join(upper(filepath.Join(git, "objects/info")), "alternates"), "/tmp/o\n")
	mustWrite(t, filepath.Join(upper(filepath.Join(git, "objects/info")), "commit-graph"), "CGPH")
	mustWrite(t, filepath.Join(upper(wtGitdir), "commondir"), "../../evil\n")
	cleanup()
	for _, rel := range []string{"commondir", "config.worktree", "gitdir", "index.lock", "objects/info/alternates"} {
		if pathExists(filepath.Join(git, rel)) {
			t.Errorf(".git/%s, written by the command, was applied", rel)
		}
	}
	for rel, want := range map[string]string{
		"HEAD": "ref: refs/heads/feature\n", "index": "DIRC", "rebase-merge/git-rebase-todo": "pick 1234\n",
		"objects/info/commit-graph": "CGPH", "worktrees/wt/commondir": "../..\n",
	} {
		if b, err := os.ReadFile(filepath.Join(git, rel)); err != nil || string(b) != want {
			t.Errorf(".git/%s = %q, %v; want %q", rel, b, err, want)
		}
	}
	if ms, _ := filepath.Glob(filepath.Join(s.StateDir, "sandbox", "stage", "*")); len(ms) != 0 {
		t.Errorf("the stages were left behind: %v", ms)
	}
}

// TestBuildListsLinkedHooks: a .git/hooks that is a link to hooks kept
// in the tree is listed itself, for the launcher to keep in place, besides
// the directory it names, bound read-only (the red team's replaced hooks link).
func TestBuildListsLinkedHooks(t *testing.T) {
	home := fakeHome(t)
	root := t.TempDir()
	mustMkdir(t, filepath.Join(root, ".git"))
	mustMkdir(t, filepath.Join(root, ".githooks"))
	link := filepath.Join(root, ".git/hooks")
	if err := os.Symlink("../.githooks", link); err != nil {
		t.Fatal(err)
	}
	p := mustBuild(t, testSettings(t, home), Call{ID: "c1", Roots: []string{root}})
	if m := findMount(p, MountRead, link); m == nil || m.Source != link {
		t.Errorf("the hooks link is not listed: %+v", m)
	}
	if m := effectiveMount(p, filepath.Join(root, ".githooks")); m == nil || m.Kind != MountRead {
		t.Errorf("the hooks the link names: %+v, want read-only", m)
	}
}

// TestBuildCallEnviron: a call that brings its environment (the engine's,
// sanitized) gets it, not Settings.Environ, with PWD its working
// directory; a secret the operator's environment names stays hidden
// when the call's does not name it.
func TestBuildCallEnviron(t *testing.T) {
	home := fakeHome(t)
	s := testSettings(t, home)
	s.Mode = ModeWorkspaceWrite
	s.Environ = append(s.Environ, "FROM_SETTINGS=1")
	sub := filepath.Join(home, "work")
	mustMkdir(t, sub)
	c := Call{ID: "c1", Roots: []string{home}, Dir: sub, Environ: []string{"HOME=" + home, "FROM_CALL=1", "PWD=/elsewhere"}}
	p := mustBuild(t, s, c)
	for _, w := range []string{"FROM_CALL=1", "PWD=" + sub, "HOME=" + home} {
		if !slices.Contains(p.Env, w) {
			t.Errorf("env lacks %s: %q", w, p.Env)
		}
	}
	for _, kv := range p.Env {
		if strings.HasPrefix(kv, "FROM_SETTINGS=") || kv == "PWD=/elsewhere" {
			t.Errorf("env has %s", kv)
		}
	}
	// testSettings' SSH_AUTH_SOCK lies in ~/.ssh, hidden anyway: the
	// agent socket here is one outside every secret directory.
	agent := filepath.Join(home, "agent.sock")
	mustWrite(t, agent, "")
	s.Environ = append(s.Environ, "SSH_AUTH_SOCK="+agent)
	p = mustBuild(t, s, c)
	if m := effectiveMount(p, agent); m == nil || m.Kind != MountHide {
		t.Errorf("the operator's agent socket %s: %+v, want hidden", agent, m)
	}
	// Without Call.Environ, Settings.Environ as before.
	c.Environ = nil
	p = mustBuild(t, s, c)
	if !slices.Contains(p.Env, "FROM_SETTINGS=1") || !slices.Contains(p.Env, "PWD="+sub) {
		t.Errorf("env = %q, want Settings.Environ with PWD=%s", p.Env, sub)
	}
}

// A root in /dev or /proc, which the launcher makes afresh for each
// command, is refused when the policy is built, naming the path and
// what to do, not when each command starts.
func TestBuildRefusesRootMadeByLauncher(t *testing.T) {
	shm, err := os.MkdirTemp("/dev/shm", "toolhost-root-")
	if err != nil {
		t.Skipf("no /dev/shm here: %v", err)
	}
	defer os.RemoveAll(shm)
	for _, root := range []string{shm, "/proc/self"} {
		_, cleanup, err := Build(context.Background(), testSettings(t, fakeHome(t)), Call{ID: "c1", Roots: []string{root}, Dir: root})
		cleanup()
		if err == nil {
			t.Errorf("Build with the root %s: no error", root)
			continue
		}
		for _, want := range []string{root, "makes afresh for each command", "keep the project elsewhere"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("Build with the root %s: %v; want %q in it", root, err, want)
			}
		}
	}
}
