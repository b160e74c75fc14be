package confine

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// hintPolicy is a policy like Build's, for the paths the samples in
// testdata/hint name: /etc read-only with /etc/ssl/private hidden, the
// root /work/proj writable with its .git/hooks read-only.
func hintPolicy(mode Mode, network Network) *Policy {
	root := MountWrite
	if mode == ModeReadOnly {
		root = MountRead
	}
	return &Policy{
		Mode: mode, Network: network, Dir: "/work/proj",
		Mounts: []Mount{
			{Kind: MountRead, Source: "/usr", Target: "/usr"},
			{Kind: MountRead, Source: "/etc", Target: "/etc"},
			{Kind: MountTmpfs, Target: "/root"},
			{Kind: MountRead, Source: "/root/.pyenv", Target: "/root/.pyenv"},
			{Kind: MountWrite, Source: "/state/sandbox/tmp/call-1", Target: "/tmp"},
			{Kind: MountWrite, Source: "/state/sandbox/tmp/call-1", Target: "/var/tmp"},
			{Kind: root, Source: "/work/proj", Target: "/work/proj"},
			{Kind: MountHide, Target: "/etc/ssl/private"},
			{Kind: MountWrite, Source: "/work/proj/.git", Target: "/work/proj/.git"},
			{Kind: MountRead, Source: "/work/proj/.git/hooks", Target: "/work/proj/.git/hooks"},
			{Kind: MountWrite, Source: "/state/sandbox/cache/0123", Target: cacheTarget},
		},
	}
}

const retry = "Retrying will not help."

// TestHintOnRealSamples: each sample is a real tool's stderr (see
// testdata/hint/gen.sh for how each was made); the hint names the path,
// why it was denied and what is writable, or says nothing when the
// policy did not cause the failure.
func TestHintOnRealSamples(t *testing.T) {
	etcX := "sandbox: write to /etc/x denied: /etc is read-only for commands; writable: /work/proj, $TMPDIR (/tmp). " + retry
	etcHostname := strings.ReplaceAll(etcX, "/etc/x", "/etc/hostname")
	pinnedGit := "sandbox: /work/proj/.git cannot be moved or removed: the sandbox keeps it in place (a repository's git directory, hooks or config, toolhost's configuration, or a directory the sandbox provides). " + retry
	noNet := `sandbox: commands have no network ([tools.run_command] network = "off")`
	tests := []struct {
		sample  string
		mode    Mode
		network Network
		want    string // the whole hint, or its prefix when it ends in "..."
	}{
		{"erofs-dash", ModeWorkspaceWrite, NetworkOff, etcX},
		{"erofs-bash", ModeWorkspaceWrite, NetworkOff, etcX},
		{"erofs-touch", ModeWorkspaceWrite, NetworkOff, etcX},
		{"erofs-touch-c", ModeWorkspaceWrite, NetworkOff, etcX},
		{"erofs-mkdir", ModeWorkspaceWrite, NetworkOff, etcX},
		{"erofs-cp", ModeWorkspaceWrite, NetworkOff, etcX},
		{"erofs-mv", ModeWorkspaceWrite, NetworkOff, etcX},
		{"erofs-rm", ModeWorkspaceWrite, NetworkOff, etcHostname},
		{"erofs-python", ModeWorkspaceWrite, NetworkOff, etcX},
		{"erofs-node", ModeWorkspaceWrite, NetworkOff, etcX},
		{"erofs-go", ModeWorkspaceWrite, NetworkOff, strings.ReplaceAll(etcX, "/etc/x", "/etc/gocache")},
		{"erofs-git-hook", ModeWorkspaceWrite, NetworkOff, "sandbox: write to /work/proj/.git/hooks/pre-commit denied: /work/proj/.git/hooks is read-only for commands; writable: /work/proj, $TMPDIR (/tmp). " + retry},
		{"erofs-curl", ModeWorkspaceWrite, NetworkOff, ""}, // curl names no path
		{"eacces-dash", ModeWorkspaceWrite, NetworkOff, etcX},
		{"eacces-touch", ModeWorkspaceWrite, NetworkOff, etcX},
		{"eacces-mkdir", ModeWorkspaceWrite, NetworkOff, etcX},
		{"eacces-python", ModeWorkspaceWrite, NetworkOff, etcX},
		{"eacces-git", ModeWorkspaceWrite, NetworkOff, etcX},
		{"eacces-ls", ModeWorkspaceWrite, NetworkOff, "sandbox: reading /lost+found denied: commands see only the roots (/work/proj), $TMPDIR (/tmp), system and toolchain directories. " + retry},
		{"eacces-cat", ModeWorkspaceWrite, NetworkOff, ""}, // /etc is readable: the file's own permissions refused
		{"eperm-chmod", ModeWorkspaceWrite, NetworkOff, etcHostname},
		{"eperm-touch-date", ModeWorkspaceWrite, NetworkOff, etcHostname},
		{"eperm-unshare", ModeWorkspaceWrite, NetworkOff, "sandbox: the operation was refused: ..."},
		{"hidden-cat", ModeWorkspaceWrite, NetworkOff, "sandbox: /etc/ssl/private is hidden from commands (it holds secrets or toolhost's own state). " + retry},
		{"plain-missing", ModeWorkspaceWrite, NetworkOff, ""},
		// A repository's .git is a mount point so that it cannot be
		// replaced: moving or removing it says so.
		{"busy-mv", ModeWorkspaceWrite, NetworkOff, pinnedGit},
		{"busy-rm", ModeWorkspaceWrite, NetworkOff, pinnedGit},
		{"busy-python", ModeWorkspaceWrite, NetworkOff, pinnedGit},
		{"net-curl-dns", ModeWorkspaceWrite, NetworkOff, noNet + "..."},
		{"net-curl-ip", ModeWorkspaceWrite, NetworkOff, noNet + "..."},
		{"net-python-dns", ModeWorkspaceWrite, NetworkOff, noNet + "..."},
		{"net-git", ModeWorkspaceWrite, NetworkOff, noNet + "..."},
		{"net-go-proxyoff", ModeWorkspaceWrite, NetworkOff, noNet + "..."},
		{"net-curl-dns", ModeWorkspaceWrite, NetworkOn, ""},
		{"net-curl-dns", ModeWorkspaceWrite, NetworkAllowlist, "sandbox: commands reach the network only through toolhost's proxy (HTTP_PROXY..."},
		{"proxy-curl-403", ModeWorkspaceWrite, NetworkAllowlist, "sandbox: commands reach the network only through toolhost's proxy, and only the domains in [tools.run_command] allowed_domains..."},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s/%s/%s", tt.sample, tt.mode, tt.network), func(t *testing.T) {
			stderr, err := os.ReadFile(filepath.Join("testdata", "hint", tt.sample+".stderr"))
			if err != nil {
				t.Fatal(err)
			}
			got := Hint(hintPolicy(tt.mode, tt.network), stderr)
			if prefix, ok := strings.CutSuffix(tt.want, "..."); ok {
				if !strings.HasPrefix(got, prefix) || !strings.HasSuffix(got, retry) || strings.Contains(got, "\n") {
					t.Errorf("stderr %q\nhint %q\nwant one line starting %q", stderr, got, prefix)
				}
				return
			}
			if got != tt.want {
				t.Errorf("stderr %q\nhint %q\nwant %q", stderr, got, tt.want)
			}
		})
	}
}

// TestHintCases: what the policy allows gets no hint, read-only mode says
// so, one line per distinct path and at most five.
func TestHintCases(t *testing.T) {
	ro := hintPolicy(ModeReadOnly, NetworkOff)
	rw := hintPolicy(ModeWorkspaceWrite, NetworkOff)
	var many strings.Builder
	for i := range 8 {
		fmt.Fprintf(&many, "touch: cannot touch '/etc/f%d': Read-only file system\n", i)
	}
	tests := []struct {
		name   string
		p      *Policy
		stderr string
		want   string
	}{
		{"the file's own permission inside the root", rw, "touch: cannot touch '/work/proj/a': Permission denied\n", ""},
		{"in the tmp", rw, "sh: 1: cannot create /tmp/x: Permission denied\n", ""},
		{"in the scratch home", rw, "mkdir: cannot create directory '/root/.x': Permission denied\n", ""},
		{"relative, in the root", rw, "touch: cannot touch 'sub/a': Permission denied\n", ""},
		{"read-only mode", ro, "touch: cannot touch 'a': Read-only file system\n",
			`sandbox: write to /work/proj/a denied: commands run read-only here ([tools.run_command] sandbox = "read-only"); writable: $TMPDIR (/tmp). ` + retry},
		{"bash's redirection, read-only mode", ro, "/bin/bash: line 2: a: Read-only file system\n",
			`sandbox: write to /work/proj/a denied: commands run read-only here ([tools.run_command] sandbox = "read-only"); writable: $TMPDIR (/tmp). ` + retry},
		{"outside every mount", rw, "mkdir: cannot create directory '/srv/x': Permission denied\n",
			"sandbox: write to /srv/x denied: it is outside every directory commands may write; writable: /work/proj, $TMPDIR (/tmp). " + retry},
		{"a toolchain", rw, "OSError: [Errno 30] Read-only file system: '/root/.pyenv/versions/x'\n",
			"sandbox: write to /root/.pyenv/versions/x denied: /root/.pyenv is read-only for commands; writable: /work/proj, $TMPDIR (/tmp). " + retry},
		{"same path twice", rw, "touch: cannot touch '/etc/x': Read-only file system\ntouch: cannot touch '/etc/x': Read-only file system\n",
			"sandbox: write to /etc/x denied: /etc is read-only for commands; writable: /work/proj, $TMPDIR (/tmp). " + retry},
		{"no denial", rw, "FAIL: TestX (0.00s)\n", ""},
		{"loopback refused is the command's own", rw, "curl: (7) Failed to connect to 127.0.0.1 port 8080 after 0 ms: Couldn't connect to server\n", ""},
	}
	for _, tt := range tests {
		if got := Hint(tt.p, []byte(tt.stderr)); got != tt.want {
			t.Errorf("%s: hint %q, want %q", tt.name, got, tt.want)
		}
	}
	got := Hint(rw, []byte(many.String()))
	if n := strings.Count(got, "\n") + 1; n != maxHintLines || !strings.Contains(got, "/etc/f4") || strings.Contains(got, "/etc/f5") {
		t.Errorf("8 paths gave %d lines, want the first %d:\n%s", n, maxHintLines, got)
	}
	if Hint(nil, []byte("touch: cannot touch '/etc/x': Read-only file system")) != "" {
		t.Errorf("a hint without a policy")
	}
}

// TestHintOnBuiltPolicy: Hint reads Build's policies the same way: the
// roots and $TMPDIR are what it names writable.
func TestHintOnBuiltPolicy(t *testing.T) {
	home := fakeHome(t)
	root := t.TempDir()
	mustMkdir(t, filepath.Join(root, ".git"))
	p := mustBuild(t, testSettings(t, home), Call{ID: "c1", Roots: []string{root}})
	want := fmt.Sprintf("sandbox: write to %s/.git/hooks/pre-commit denied: %s/.git/hooks is read-only for commands; writable: %s, $TMPDIR (/tmp). %s", root, root, root, retry)
	if got := Hint(p, []byte("sh: 1: cannot create .git/hooks/pre-commit: Read-only file system\n")); got != want {
		t.Errorf("hint %q\nwant %q", got, want)
	}
	if got := Hint(p, []byte("cat: "+home+"/.ssh/id_rsa: No such file or directory\n")); got != "" {
		t.Errorf("a secret outside every tree is simply absent; hint %q", got)
	}
}

// TestHintPathOutsideSandbox: a write to, or read of, a path in the
// host's /tmp or /var/tmp fails inside with "No such file or directory"
// (or dash's "Directory nonexistent"), since there /tmp is the call's
// private directory; the hint says so, or a model makes the directory in
// the private tmp and writes where the file is discarded (the hint gap). The samples name /tmp/e14host and /var/tmp/e14host (see
// testdata/hint/gen.sh), made here on the host under other names; a path
// missing on the host too gets no hint.
func TestHintPathOutsideSandbox(t *testing.T) {
	tmp, err := os.MkdirTemp("/tmp", "e14host-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(tmp) })
	varTmp, err := os.MkdirTemp("/var/tmp", "e14host-")
	if err != nil {
		t.Skipf("no /var/tmp to make a directory in: %v", err)
	}
	t.Cleanup(func() { os.RemoveAll(varTmp) })
	rename := strings.NewReplacer("/var/tmp/e14host", varTmp, "/tmp/e14host", tmp)
	outside := func(path, target string) string {
		return fmt.Sprintf("sandbox: %s is outside what commands can see; %s is this call's private directory, removed when it ends; writable: /work/proj, $TMPDIR (/tmp). %s", path, target, retry)
	}
	tests := []struct {
		sample string
		want   string
	}{
		{"enoent-tmp-dash", outside(tmp+"/out", "/tmp")},
		{"enoent-tmp-bash", outside(tmp+"/out", "/tmp")},
		{"enoent-tmp-touch", outside(tmp+"/out", "/tmp")},
		{"enoent-tmp-cat", outside(tmp+"/in", "/tmp")},
		{"enoent-tmp-python", outside(tmp+"/out", "/tmp")},
		{"enoent-tmp-go", outside(tmp+"/out", "/tmp")},
		{"enoent-vartmp-cp", outside(varTmp+"/out", "/var/tmp")},
		{"enoent-tmp-own", ""}, // missing on the host as well
		{"plain-missing", ""},  // likewise, outside every mount
		{"erofs-touch", "sandbox: write to /etc/x denied: /etc is read-only for commands; writable: /work/proj, $TMPDIR (/tmp). " + retry},
	}
	for _, tt := range tests {
		t.Run(tt.sample, func(t *testing.T) {
			raw, err := os.ReadFile(filepath.Join("testdata", "hint", tt.sample+".stderr"))
			if err != nil {
				t.Fatal(err)
			}
			stderr := rename.Replace(string(raw))
			if got := Hint(hintPolicy(ModeWorkspaceWrite, NetworkOff), []byte(stderr)); got != tt.want {
				t.Errorf("stderr %q\nhint %q\nwant %q", stderr, got, tt.want)
			}
		})
	}

	// What the call's own tmp holds is no business of the host's: the
	// same directory made there first gets no hint.
	own := t.TempDir()
	if err := os.Mkdir(filepath.Join(own, filepath.Base(tmp)), 0o755); err != nil {
		t.Fatal(err)
	}
	p := hintPolicy(ModeWorkspaceWrite, NetworkOff)
	for i, m := range p.Mounts {
		if m.Target == "/tmp" {
			p.Mounts[i].Source = own
		}
	}
	if got := Hint(p, []byte("touch: cannot touch '"+tmp+"/sub/out': No such file or directory\n")); got != "" {
		t.Errorf("a directory of the call's own tmp got a hint: %q", got)
	}

	// A tree no mount shows (this package's directory): said too, naming
	// what commands see.
	dir, err := filepath.Abs(filepath.Join("testdata", "hint"))
	if err != nil {
		t.Fatal(err)
	}
	p = &Policy{Mode: ModeWorkspaceWrite, Network: NetworkOff, Dir: "/work/proj", Mounts: []Mount{
		{Kind: MountWrite, Source: "/work/proj", Target: "/work/proj"},
		{Kind: MountWrite, Source: own, Target: "/tmp"},
	}}
	if within(dir, "/work/proj") || within(dir, "/tmp") {
		t.Skipf("this package's directory %s lies where the policy mounts", dir)
	}
	want := fmt.Sprintf("sandbox: %s/x is outside what commands can see: they see only the roots (/work/proj), $TMPDIR (/tmp), system and toolchain directories; writable: /work/proj, $TMPDIR (/tmp). %s", dir, retry)
	if got := Hint(p, []byte("cat: "+dir+"/x: No such file or directory\n")); got != want {
		t.Errorf("hint %q\nwant %q", got, want)
	}
}

// TestUncoveredHint: a line only when nested git directories were left
// unprotected at the bound (Policy.Unprotected), naming the root; none
// for a search cut by its entry bound, which large projects hit at every
// call, whatever its sentence says (the line no longer parses Uncovered's prose).
func TestUncoveredHint(t *testing.T) {
	for _, c := range []struct {
		name string
		p    *Policy
		want string // a phrase of the line, "" for none
	}{
		{"no policy", nil, ""},
		{"nothing", &Policy{}, ""},
		{"search cut", &Policy{Uncovered: []string{"/w holds more entries than the search reads; /w/r1/.git and others were left unprotected"}}, ""},
		{"bound hit", &Policy{Uncovered: []string{"anything"}, Unprotected: []string{"/w holds x"}}, "sandbox: /w holds x holds more nested git repositories"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := UncoveredHint(c.p)
			if c.want == "" && got != "" || c.want != "" && !strings.Contains(got, c.want) || strings.Contains(got, "\n") {
				t.Errorf("UncoveredHint = %q, want %q", got, c.want)
			}
		})
	}
}

// TestHintManyMounts: a policy with thousands of mounts (a root full of
// nested repositories, each a mount point) and a megabyte of the same
// denial gets its hint at once: the hinter looked up mounts with a scan
// per line and named the writable trees with a scan per mount, per line.
// Its lookups agree with the
// plain scan of the launcher's order (effectiveMount).
func TestHintManyMounts(t *testing.T) {
	p := &Policy{Mode: ModeWorkspaceWrite, Network: NetworkOff, Dir: "/w"}
	p.Mounts = append(p.Mounts, Mount{Kind: MountRead, Source: "/etc", Target: "/etc"}, Mount{Kind: MountWrite, Source: "/w", Target: "/w"})
	for i := range maxNestedMounts {
		gd := fmt.Sprintf("/w/r%04d/.git", i)
		p.Mounts = append(p.Mounts,
			Mount{Kind: MountWrite, Source: gd, Target: gd},
			Mount{Kind: MountRead, Source: gd + "/hooks", Target: gd + "/hooks"})
	}
	// The same target twice: the latest decides.
	p.Mounts = append(p.Mounts, Mount{Kind: MountHide, Target: "/w/r0001/.git/hooks"})
	var stderr bytes.Buffer
	for stderr.Len() < hintScan {
		stderr.WriteString("touch: cannot touch '/etc/x': Read-only file system\n")
	}
	start := time.Now()
	got := Hint(p, stderr.Bytes())
	// A bound that proves it ends, not a speed: -race on two loaded
	// cores took 2.5 s.
	if d := time.Since(start); d > 20*time.Second {
		t.Errorf("Hint took %v with %d mounts", d, len(p.Mounts))
	}
	if want := "sandbox: write to /etc/x denied: /etc is read-only for commands; writable: /w, $TMPDIR (/tmp). Retrying will not help."; got != want {
		t.Errorf("hint %q\nwant %q", got, want)
	}
	h := newHinter(p)
	for _, path := range []string{"/", "/w", "/w/r0001/.git/hooks/pre-commit", "/w/r0002/.git/hooks", "/w/r0002/.git/x", "/w/r0003", "/etc/passwd", "/usr"} {
		if got, want := h.effective(path), effectiveMount(p, path); got != want {
			t.Errorf("effective(%s) = %+v, want %+v", path, got, want)
		}
	}
}
