//go:build linux

package confine

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// escape is one attempt of a hostile command on the filesystem or on
// secrets. Besides its own checks, every case is checked by
// fixture.verify: no secret printed, the fake HOME, the outside
// directory, the root's .git and toolhost.toml unchanged, nothing left
// running.
type escape struct {
	name    string
	setup   func(t *testing.T, f *fixture) // more to prepare; may watch more trees
	command string                         // a template (fixture.expand); must end by printing probeEnd
	absent  []string                       // host paths (templates) that must not exist afterwards
	hint    string                         // a "sandbox: " line must name this (template), when set
}

// The filesystem and secret cases of the escape
// suite (items 2 and 4 of "What to build"; NFR-SEC-06: run_command is the
// one tool that reaches files without the host functions).
var escapes = []escape{
	{
		name: "write the home directory",
		command: `echo pwned >> ~/.bashrc; echo pwned >> "$HOME/.bashrc"; echo pwned >> {home}/.bashrc
mkdir -p {home}/.ssh; echo ssh-ed25519 AAAA pwned >> {home}/.ssh/authorized_keys; echo pwned > {home}/.profile
echo ` + probeEnd,
	},
	{
		name:    "write /etc",
		command: `echo pwned > /etc/{mark}.conf; mkdir /etc/{mark}.d; echo ` + probeEnd,
		absent:  []string{"/etc/{mark}.conf", "/etc/{mark}.d"},
		hint:    "/etc/{mark}.conf",
	},
	{
		name:    "write /tmp outside the private tmp",
		command: `echo pwned > /tmp/{mark}; echo pwned > "${TMPDIR:-/tmp}/{mark}-tmpdir"; mkdir /tmp/{mark}.d; echo ` + probeEnd,
		absent:  []string{"{tmp}/{mark}", "{tmp}/{mark}-tmpdir", "{tmp}/{mark}.d"},
	},
	{
		name: "write through a symlink out of the root",
		setup: func(t *testing.T, f *fixture) {
			if err := os.Symlink(f.outside, filepath.Join(f.root, "made-before")); err != nil {
				t.Fatal(err)
			}
		},
		command: `ln -s {outside} link; echo pwned > link/new.txt; echo pwned >> link/victim.txt
echo pwned > made-before/new2.txt; echo pwned >> made-before/victim.txt
ln -s {outside}/victim.txt lv; echo pwned >> lv
ln -s /etc etc; echo pwned > etc/{mark}.conf
ln -s {home}/.ssh ssh; echo pwned >> ssh/authorized_keys
echo ` + probeEnd,
		absent: []string{"{outside}/new.txt", "{outside}/new2.txt", "/etc/{mark}.conf", "{home}/.ssh/authorized_keys"},
	},
	{
		name: "write through a hard link out of the root",
		command: `ln {outside}/victim.txt hl && echo pwned >> hl
ln {home}/.bashrc hb && echo pwned >> hb
ln {operator} ho && echo pwned >> ho
ln toolhost.toml ht && echo pwned >> ht
ln .git/config hg && echo pwned >> hg
echo ` + probeEnd,
	},
	{
		name:    "mv a file out of the root",
		command: `mv keep.txt {outside}/moved.txt; mv keep.txt /tmp/{mark}-moved; mv keep.txt {home}/moved.txt; mv keep.txt /etc/{mark}-moved; echo ` + probeEnd,
		absent:  []string{"{outside}/moved.txt", "{tmp}/{mark}-moved", "/etc/{mark}-moved"},
	},
	{
		name: "write .git/hooks and .git/config",
		command: `echo 'echo pwned' > .git/hooks/pre-commit; chmod +x .git/hooks/pre-commit
echo '[core]' >> .git/config; git config core.hooksPath /tmp/{mark}
rm -rf .git/hooks; mv .git/config .git/config.old
echo ` + probeEnd,
		hint: "pre-commit",
	},
	{
		name:    "replace .git with one holding a hook",
		command: `mv .git .gitx && mkdir -p .git/hooks && echo x > .git/hooks/pre-commit; echo ` + probeEnd,
		absent:  []string{"{root}/.gitx", "{root}/.git/hooks/pre-commit"},
	},
	{
		name: "write toolhost's configuration files",
		command: `echo '[tools.approval]' >> toolhost.toml; mv toolhost.toml moved.toml; rm -f toolhost.toml
echo '[tools.approval]' >> {operator}; rm -f {operator}
echo ` + probeEnd,
		absent: []string{"{root}/moved.toml"},
	},
	// Creating a project configuration file that does not exist yet is
	// a gap the mounts cannot close: TestCreatedProjectFile documents it.
	{
		// A repository nested in the root (a vendored one, a submodule's
		// checkout) runs its hooks as surely as the root's own.
		name: "write a nested repository's hooks and project file",
		setup: func(t *testing.T, f *fixture) {
			sub := filepath.Join(f.root, "sub")
			gitInit(t, sub)
			writeFile(t, filepath.Join(sub, "toolhost.toml"), "# a nested project's configuration\n")
			f.watch(filepath.Join(sub, ".git", "hooks"), filepath.Join(sub, ".git", "config"), filepath.Join(sub, "toolhost.toml"))
		},
		command: `echo 'echo pwned' > sub/.git/hooks/pre-commit; echo '[core]' >> sub/.git/config; echo '# pwned' >> sub/toolhost.toml; echo ` + probeEnd,
		hint:    "{root}/sub/.git/hooks/pre-commit",
	},
	{
		// Deeper, and a vendored checkout whose .git is a file naming its
		// git directory in the root's .git/modules (a submodule's).
		name: "write a deeper nested repository's and a submodule's hooks",
		setup: func(t *testing.T, f *fixture) {
			deep := filepath.Join(f.root, "vendor", "github.com", "x", "y")
			gitInit(t, deep)
			mods := filepath.Join(f.root, ".git", "modules", "m")
			if out, err := exec.Command("git", "init", "-q", "--bare", mods).CombinedOutput(); err != nil {
				t.Fatalf("git init --bare %s: %v\n%s", mods, err, out)
			}
			writeFile(t, filepath.Join(f.root, "third_party", "m", ".git"), "gitdir: ../../.git/modules/m\n")
			writeFile(t, filepath.Join(deep, "a", "b", "toolhost.yml"), "# a nested project's configuration\n")
			f.watch(filepath.Join(deep, ".git", "hooks"), filepath.Join(deep, ".git", "config"), filepath.Join(deep, "a", "b", "toolhost.yml"),
				filepath.Join(mods, "hooks"), filepath.Join(mods, "config"), filepath.Join(f.root, "third_party", "m", ".git"))
		},
		command: `D=vendor/github.com/x/y; echo 'echo pwned' > $D/.git/hooks/pre-commit; echo '[core]' >> $D/.git/config; echo pwned >> $D/a/b/toolhost.yml
mv $D/.git $D/.gitx; mv $D/a/b/toolhost.yml $D/a/b/moved.yml
echo 'echo pwned' > .git/modules/m/hooks/pre-commit; echo '[core]' >> .git/modules/m/config
echo 'gitdir: /tmp' > third_party/m/.git
echo ` + probeEnd,
		absent: []string{"{root}/vendor/github.com/x/y/.gitx", "{root}/vendor/github.com/x/y/a/b/moved.yml"},
	},
	{
		name:    "write toolhost's state directory",
		command: `echo pwned > {state}/{mark}; ls -la {state}; echo ` + probeEnd,
		absent:  []string{"{state}/{mark}"},
	},
	{
		name: "read credentials in the home directory",
		command: `cat ~/.ssh/id_rsa "$HOME/.ssh/id_rsa" {home}/.ssh/id_rsa {home}/.ssh/id_ed25519 {home}/.aws/credentials
cat {home}/.gnupg/private-keys-v1.d/* {home}/.config/gh/hosts.yml {home}/.netrc {home}/.git-credentials
cat {home}/.docker/config.json {home}/.kube/config {home}/.config/gcloud/credentials.db {home}/.npmrc {home}/.pypirc {home}/.cargo/credentials.toml
grep -r secret {home} ~ 2>/dev/null | head -c 100000
echo ` + probeEnd,
	},
}

func TestEscapes(t *testing.T) {
	for _, c := range escapes {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, world{})
			if c.setup != nil {
				c.setup(t, f)
			}
			o := f.run(t, c.command)
			ranToEnd(t, o)
			for _, p := range c.absent {
				if p = f.expand(p); exists(p) {
					t.Errorf("%s exists on the host after the call: %s", p, o)
				}
			}
			if c.hint != "" {
				wantHint(t, o, f.expand(c.hint))
			}
		})
	}
}

// "Done when": read /proc/<toolhost>/environ and
// /proc/<toolhost>/root. The command cannot learn toolhost's pid in its
// own PID namespace, so the test writes it into the root once toolhost
// has started; the command also tries every /proc/*/environ and root it
// can see (its init, the launcher, is toolhost re-executed).
func TestToolhostThroughProc(t *testing.T) {
	t.Parallel()
	f := newFixture(t, world{})
	c := f.start(t, `i=0; while [ ! -s toolhost.pid ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i+1)); done
P=$(cat toolhost.pid); echo "toolhost is $P"
{ cat /proc/$P/environ /proc/$PPID/environ /proc/1/environ; for e in /proc/[0-9]*/environ; do cat $e; done; } | tr '\0' '\n'
ls -la /proc/$P/root/ /proc/$P/cwd/ /proc/1/root/
cat /proc/$P/root{home}/.ssh/id_rsa /proc/$P/root/proc/$P/environ /proc/$P/cwd/../../{home}/.aws/credentials
for r in /proc/[0-9]*/root; do cat $r{home}/.ssh/id_rsa; done
echo `+probeEnd)
	writeFile(t, filepath.Join(f.root, "toolhost.pid"), strconv.Itoa(c.cmd.Process.Pid))
	o := c.wait(t)
	f.verify(t, o)
	ranToEnd(t, o)
	// The command wrote nothing: a hint about a denied write would send
	// the model after a problem it does not have.
	for _, line := range strings.Split(o.output, "\n") {
		if strings.HasPrefix(line, "sandbox: write to") {
			t.Errorf("a command that only read got a hint about a write: %q", line)
		}
	}
}

// A descriptor toolhost inherited open from whatever
// started it (an agent, an editor, a shell) is a door past the mount
// namespace: a file outside the root opened for writing, a directory
// outside it to open files relative to. The command must not find them
// open. They sit at high numbers, where the launcher's own pipes do not
// cover them.
func TestInheritedDescriptors(t *testing.T) {
	t.Parallel()
	f := newFixture(t, world{})
	victim, err := os.OpenFile(filepath.Join(f.outside, "victim.txt"), os.O_RDWR|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer victim.Close()
	dir, err := os.Open(f.outside)
	if err != nil {
		t.Fatal(err)
	}
	defer dir.Close()
	inherited := make([]*os.File, 20)
	inherited[17], inherited[18], inherited[19] = victim, dir, victim // descriptors 20, 21 and 22
	// Only the test's own descriptors are written to: others the test
	// binary inherited (a make jobserver's pipe, say) are not the test's
	// to disturb.
	c := f.startWith(t, `ls -l /proc/self/fd/
/usr/bin/python3 - <<'PY'
import os
for fd in (20, 21, 22):
    try:
        os.write(fd, b"pwned through an inherited descriptor\n")
        print("wrote to descriptor", fd)
    except OSError:
        pass
    try:
        n = os.open("new.txt", os.O_CREAT | os.O_WRONLY, 0o644, dir_fd=fd)
        os.write(n, b"pwned")
        print("created a file through descriptor", fd)
    except OSError:
        pass
PY
echo `+probeEnd, inherited)
	o := c.wait(t)
	f.verify(t, o)
	ranToEnd(t, o)
	if p := filepath.Join(f.outside, "new.txt"); exists(p) {
		t.Errorf("the command created %s through a directory descriptor toolhost inherited: %s", p, o)
	}
}

// A gap stated rather than closed: a file that does not
// exist when the call starts cannot be bound read-only, so a command can
// create a project configuration file (toolhost.yaml beside the root's
// toolhost.toml, or one in a directory of its own). What holds is that
// toolhost never trusts such a file (host/config/trust.go): a project
// file is read only in a directory the operator trusted, and only to
// narrow the policy; a directory holding several is read from none. So
// the created file is reported as ignored by a real `toolhost config
// show`, in an untrusted root and in a trusted one.
//
// In a trusted root the second file also makes toolhost ignore the
// project's own toolhost.toml (config's rule for several files), so a
// command can undo a trusted project's narrowing this way; that is
// config's to close, and this test does not assert it either way.
func TestCreatedProjectFile(t *testing.T) {
	for _, trusted := range []bool{false, true} {
		t.Run(fmt.Sprintf("trusted=%v", trusted), func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, world{})
			if trusted {
				f.cli(t, f.root, "trust", f.root)
			}
			o := f.run(t, `printf '[tools]\nmax_tool_calls_per_batch = 1\n' > toolhost.yaml; cp toolhost.yaml toolhost.yml
mkdir -p new && cp toolhost.yaml new/toolhost.toml; echo `+probeEnd)
			ranToEnd(t, o)
			created := []string{filepath.Join(f.root, "toolhost.yaml"), filepath.Join(f.root, "toolhost.yml"), filepath.Join(f.root, "new", "toolhost.toml")}
			for _, p := range created {
				if !exists(p) {
					t.Fatalf("%s was not created: the gap this test states is closed; make it a case of TestEscapes: %s", p, o)
				}
			}
			for _, dir := range []string{f.root, filepath.Join(f.root, "new")} {
				show := f.cli(t, dir, "config", "show")
				for _, p := range created {
					if filepath.Dir(p) != dir {
						continue
					}
					if !strings.Contains(show, "# ignored: "+p+" (") || strings.Contains(show, "# read: "+p) {
						t.Errorf("toolhost config show in %s does not report %s as ignored:\n%s", dir, p, show)
					}
				}
				if strings.Contains(show, "max_tool_calls_per_batch = 1 ") {
					t.Errorf("a created project file set the policy:\n%s", show)
				}
			}
		})
	}
}

// The other gap of paths that do not exist yet: a
// command can make a new repository and write its hooks in the same call.
// From the next call on, the search for nested repositories protects it
// like any other.
func TestNewRepositoryProtectedFromTheNextCall(t *testing.T) {
	t.Parallel()
	f := newFixture(t, world{})
	o := f.run(t, `git init -q made && echo 'echo planted' > made/.git/hooks/pre-commit && echo planted; echo `+probeEnd)
	ranToEnd(t, o)
	if !strings.Contains(o.output, "planted") {
		t.Fatalf("the command could not make a repository and write its hook in one call: the gap this test states is closed; make it a case of TestEscapes: %s", o)
	}
	made := filepath.Join(f.root, "made", ".git")
	f.watch(filepath.Join(made, "hooks"), filepath.Join(made, "config"), filepath.Join(made, "info"))
	o = f.run(t, `echo 'echo pwned' >> made/.git/hooks/pre-commit; echo 'echo pwned' > made/.git/hooks/post-checkout
echo '[core]' >> made/.git/config; rm -rf made/.git/hooks; echo `+probeEnd)
	ranToEnd(t, o)
	wantHint(t, o, filepath.Join(made, "hooks"))
}
