//go:build linux

package confine

import (
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/toolhost/toolhost/internal/testenv"
)

// markVar carries a case's marker in the environment of every process
// its command starts, so the test finds them in /proc however they
// detached.
const markVar = "TOOLHOST_ESCAPE_MARK"

// probeEnd is what a command prints last: its absence means the command
// never ran to its end (toolhost refused it, the shell died), and a case
// that saw nothing escape would prove nothing.
const probeEnd = "PROBE-END"

// secretFiles are the credentials of the list (item 2) that the
// fake HOME holds, each with a secret of its own.
var secretFiles = []string{
	".ssh/id_rsa", ".ssh/id_ed25519", ".aws/credentials", ".gnupg/private-keys-v1.d/key.key",
	".config/gh/hosts.yml", ".netrc", ".git-credentials", ".docker/config.json", ".kube/config",
	".config/gcloud/credentials.db", ".npmrc", ".pypirc", ".cargo/credentials.toml",
}

// fixture is one case's world: a workspace root (toolhost's working
// directory) holding a git repository, toolhost's project file and
// keep.txt; a fake HOME holding secrets, dotfiles and the operator's
// configuration; a directory outside the root holding victim.txt;
// toolhost's state directory; a secret in toolhost's own environment;
// and the case's marker.
type fixture struct {
	world
	root, home, outside, state string
	operator                   string // the operator's configuration file, in home
	mark                       string
	envSecret                  string   // TOOLHOST_TEST_SECRET, set for toolhost only
	secrets                    []string // every secret the command must not learn
	watched                    []string // trees that must be unchanged by the call
	before                     map[string]string
}

// world says how to make a fixture.
type world struct {
	config string // the operator's configuration file's text
	noGit  bool   // the root holds no git repository
	// mode and network are what config sets [tools.run_command] sandbox
	// and network to, when it does: what each result must say applied.
	mode, network string
}

func newFixture(t *testing.T, w world) *fixture {
	t.Helper()
	f := &fixture{world: w, root: t.TempDir(), home: t.TempDir(), outside: t.TempDir(), state: t.TempDir(), mark: "tcesc" + random(t, 6)}
	f.operator = filepath.Join(f.home, ".config", "toolhost", "toolhost.toml")
	// Commands name these paths unquoted: a test name that puts a shell
	// character in them would make a case attack some other path.
	if p := f.root + f.home + f.outside + f.state; strings.ContainsAny(p, "$`'\"\\ ;&|*?<>(){}[]~#") {
		t.Fatalf("the test's directories hold a character the shell would interpret (%s): rename the test", p)
	}
	f.envSecret = "ENVSECRET" + random(t, 12)
	f.secrets = append(f.secrets, f.envSecret)
	for _, name := range secretFiles {
		secret := "SECRET" + random(t, 12)
		f.secrets = append(f.secrets, secret)
		writeFile(t, filepath.Join(f.home, name), "secret = "+secret+"\n")
	}
	writeFile(t, filepath.Join(f.home, ".bashrc"), "# the user's shell start-up\n")
	writeFile(t, filepath.Join(f.home, ".gitconfig"), "[user]\n\tname = Test User\n")
	writeFile(t, f.operator, "# the operator's configuration\n"+w.config)
	writeFile(t, filepath.Join(f.outside, "victim.txt"), "outside the root\n")
	writeFile(t, filepath.Join(f.root, "keep.txt"), "kept in the root\n")
	writeFile(t, filepath.Join(f.root, "toolhost.toml"), "# the project's configuration\n")
	f.watch(f.home, f.outside, filepath.Join(f.root, "toolhost.toml"))
	if !w.noGit {
		gitInit(t, f.root)
		f.watch(filepath.Join(f.root, ".git", "hooks"), filepath.Join(f.root, ".git", "config"))
	}
	t.Cleanup(func() {
		killMarked(f.mark)
		for _, pattern := range []string{"/etc/" + f.mark + "*", filepath.Join(os.TempDir(), f.mark+"*")} {
			matches, _ := filepath.Glob(pattern)
			for _, m := range matches {
				os.RemoveAll(m)
			}
		}
	})
	return f
}

// watch adds trees that the call must leave as they are.
func (f *fixture) watch(paths ...string) { f.watched = append(f.watched, paths...) }

// expand fills a command template's {root}, {home}, {outside}, {state},
// {operator}, {mark} and {tmp} (the system's temporary directory).
func (f *fixture) expand(s string) string {
	return strings.NewReplacer("{root}", f.root, "{home}", f.home, "{outside}", f.outside, "{state}", f.state,
		"{operator}", f.operator, "{mark}", f.mark, "{tmp}", os.TempDir()).Replace(s)
}

// outcome is what one `toolhost call run_command` gave.
type outcome struct {
	stdout, stderr string // the result JSON, and toolhost's diagnostics
	code           int
	result         struct {
		OK          bool      `json:"ok"`
		Content     string    `json:"content"`
		Confinement []applied `json:"confinement"`
		Error       *struct {
			Kind    string          `json:"kind"`
			Message string          `json:"message"`
			Details json.RawMessage `json:"details"`
		} `json:"error"`
	}
	output string // the command's output: the content, or the error details' output
	took   time.Duration
	killed bool // the test killed toolhost, which printed no result
}

func (o *outcome) String() string {
	return fmt.Sprintf("exit %d after %v\nstdout: %s\nstderr: %s", o.code, o.took.Round(time.Millisecond), o.stdout, o.stderr)
}

// call is a started `toolhost call run_command`.
type call struct {
	cmd            *exec.Cmd
	stdout, stderr bytes.Buffer
	start          time.Time
	cancel         context.CancelFunc
	killed         bool // the test killed toolhost: it printed no result
}

// start starts toolhost running command (a template, see expand) as
// run_command with approval given. The command's first line exports the
// marker. The arguments go in a file, so that toolhost's own command line
// does not carry the marker.
func (f *fixture) start(t *testing.T, command string) *call {
	t.Helper()
	return f.startWith(t, command, nil)
}

// startWith is start with files toolhost inherits from its parent as
// descriptors 3 and up (nil entries leave a descriptor closed), as from an
// agent or editor that did not mark its descriptors close-on-exec.
func (f *fixture) startWith(t *testing.T, command string, inherited []*os.File) *call {
	t.Helper()
	needTools(t, command)
	args, err := json.Marshal(map[string]string{"command": markVar + "=" + f.mark + "; export " + markVar + "\n" + f.expand(command)})
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "args.json")
	writeFile(t, file, string(args))
	f.before = snapshot(f.watched...)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	c := &call{cancel: cancel}
	c.cmd = exec.CommandContext(ctx, toolhost, "--state-dir", f.state, "call", "run_command", "--args-file", file, "--allow", "run_command")
	c.cmd.Dir = f.root
	c.cmd.Env = append(os.Environ(), "HOME="+f.home, "XDG_CONFIG_HOME="+filepath.Join(f.home, ".config"), "TOOLHOST_TEST_SECRET="+f.envSecret)
	c.cmd.Stdout, c.cmd.Stderr = &c.stdout, &c.stderr
	c.cmd.ExtraFiles = inherited
	c.cmd.WaitDelay = 10 * time.Second
	c.start = time.Now()
	if err := c.cmd.Start(); err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() { c.cmd.Process.Kill(); cancel() })
	return c
}

// wait waits for toolhost to end and returns what it printed.
func (c *call) wait(t *testing.T) *outcome {
	t.Helper()
	err := c.cmd.Wait()
	c.cancel()
	o := &outcome{stdout: c.stdout.String(), stderr: c.stderr.String(), took: time.Since(c.start), killed: c.killed}
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		o.code = ee.ExitCode()
	case err != nil:
		t.Fatalf("toolhost: %v", err)
	}
	if err := json.Unmarshal([]byte(o.stdout), &o.result); err != nil && !c.killed {
		t.Fatalf("toolhost printed no result (%v): %s", err, o)
	}
	o.output = o.result.Content
	if e := o.result.Error; e != nil {
		var d struct {
			Output *string `json:"output"`
		}
		json.Unmarshal(e.Details, &d)
		o.output = e.Kind + ": " + e.Message
		if d.Output != nil {
			o.output += "\n" + *d.Output
		}
	}
	t.Logf("the command's output, after %v:\n%s", o.took.Round(time.Millisecond), o.output)
	return o
}

// run runs command as run_command to its end, then checks what every case
// checks (verify).
func (f *fixture) run(t *testing.T, command string) *outcome {
	t.Helper()
	o := f.start(t, command).wait(t)
	f.verify(t, o)
	return o
}

// verify checks what must hold after any call: no secret in anything
// toolhost printed, the watched trees unchanged, and no process carrying
// the marker alive a few seconds after toolhost ended.
func (f *fixture) verify(t *testing.T, o *outcome) {
	t.Helper()
	for _, s := range f.secrets {
		if strings.Contains(o.stdout, s) || strings.Contains(o.stderr, s) {
			t.Errorf("the command read secret %s (from %s): %s", s, f.secretSource(s), o)
		}
	}
	after := snapshot(f.watched...)
	for _, p := range slices.Sorted(keys(f.before, after)) {
		if before, now := f.before[p], after[p]; before != now {
			t.Errorf("%s changed on the host: was %q, now %q", p, orNone(before), orNone(now))
		}
	}
	if left := waitUnmarked(f.mark, 5*time.Second); len(left) > 0 {
		t.Errorf("processes of the command alive after toolhost ended: %s", strings.Join(left, "; "))
	}
	if !o.killed {
		f.wantConfined(t, o)
	}
}

// applied is the confinement a result says its command ran under
// (confine.Applied as the result JSON carries it).
type applied struct {
	Mode        string   `json:"mode"`
	Network     string   `json:"network"`
	Namespaces  []string `json:"namespaces"`
	LandlockABI int      `json:"landlock_abi"`
	Seccomp     bool     `json:"seccomp"`
	NoNewPrivs  bool     `json:"no_new_privs"`
	Cgroup      []string `json:"cgroup"`
}

// wantConfined checks that the result says the confinement that applied,
// and that it is the whole of it: the configured mode
// and network, every namespace, Landlock, seccomp and no_new_privs.
func (f *fixture) wantConfined(t *testing.T, o *outcome) {
	t.Helper()
	mode, network := cmp.Or(f.mode, "workspace-write"), cmp.Or(f.network, "off")
	if len(o.result.Confinement) == 0 {
		t.Errorf("the result does not say what confined the command: %s", o)
		return
	}
	for _, a := range o.result.Confinement {
		var missing []string
		for _, ns := range []string{"user", "mount", "pid", "net"} {
			if !slices.Contains(a.Namespaces, ns) {
				missing = append(missing, ns+" namespace")
			}
		}
		if a.LandlockABI < 1 {
			missing = append(missing, "Landlock")
		}
		if !a.Seccomp {
			missing = append(missing, "seccomp")
		}
		if !a.NoNewPrivs {
			missing = append(missing, "no_new_privs")
		}
		if a.Mode != mode || a.Network != network || len(missing) > 0 {
			t.Errorf("the result says the command ran under %+v: want mode %s, network %s; missing %v", a, mode, network, missing)
		}
	}
}

// secretSource names where secret s lives, for a failure message.
func (f *fixture) secretSource(s string) string {
	if s == f.envSecret {
		return "toolhost's environment, TOOLHOST_TEST_SECRET"
	}
	for i, name := range secretFiles {
		if f.secrets[i+1] == s {
			return filepath.Join(f.home, name)
		}
	}
	return "?"
}

// ranToEnd fails the test unless the command printed probeEnd: a case
// whose command never ran proves nothing.
func ranToEnd(t *testing.T, o *outcome) {
	t.Helper()
	if !strings.Contains(o.output, probeEnd) {
		t.Fatalf("the command did not run to its end (no %s in its output), so the case proves nothing: %s", probeEnd, o)
	}
}

// wantHint checks that the output carries a "sandbox: " hint line naming
// path, so a model stops retrying blindly.
func wantHint(t *testing.T, o *outcome, path string) {
	t.Helper()
	for _, line := range strings.Split(o.output, "\n") {
		if strings.HasPrefix(line, "sandbox: ") && strings.Contains(line, path) {
			return
		}
	}
	t.Errorf("no \"sandbox: \" hint line naming %s in the output:\n%s", path, o.output)
}

// snapshot describes every path under paths: its kind, mode and content's
// hash, or a link's target; a missing path is described as missing.
func snapshot(paths ...string) map[string]string {
	m := map[string]string{}
	for _, root := range paths {
		filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				m[p] = "unreadable: " + err.Error()
				return nil
			}
			info, err := d.Info()
			switch {
			case err != nil:
				m[p] = "unreadable: " + err.Error()
			case d.Type()&fs.ModeSymlink != 0:
				target, _ := os.Readlink(p)
				m[p] = "link to " + target
			case d.IsDir():
				m[p] = fmt.Sprintf("dir %v", info.Mode())
			case d.Type().IsRegular():
				b, _ := os.ReadFile(p)
				m[p] = fmt.Sprintf("file %v sha256 %x", info.Mode(), sha256.Sum256(b))
			default:
				m[p] = info.Mode().String()
			}
			return nil
		})
	}
	return m
}

func keys(ms ...map[string]string) func(func(string) bool) {
	return func(yield func(string) bool) {
		seen := map[string]bool{}
		for _, m := range ms {
			for k := range m {
				if !seen[k] {
					seen[k] = true
					if !yield(k) {
						return
					}
				}
			}
		}
	}
}

func orNone(s string) string {
	if s == "" {
		return "absent"
	}
	return s
}

// marked lists the processes whose environment or command line holds
// mark, as "pid: command line".
func marked(mark string) []string {
	entries, _ := os.ReadDir("/proc")
	var out []string
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		dir := filepath.Join("/proc", e.Name())
		cmdline, _ := os.ReadFile(filepath.Join(dir, "cmdline"))
		environ, _ := os.ReadFile(filepath.Join(dir, "environ"))
		if bytes.Contains(cmdline, []byte(mark)) || bytes.Contains(environ, []byte(markVar+"="+mark)) {
			out = append(out, fmt.Sprintf("%d: %s", pid, bytes.ReplaceAll(bytes.TrimRight(cmdline, "\x00"), []byte{0}, []byte{' '})))
		}
	}
	return out
}

// waitUnmarked waits up to limit for no process to carry mark, and returns
// the ones still alive then.
func waitUnmarked(mark string, limit time.Duration) []string {
	deadline := time.Now().Add(limit)
	for {
		left := marked(mark)
		if len(left) == 0 || time.Now().After(deadline) {
			return left
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// killMarked kills every process carrying mark, in a bounded number of
// rounds (a process may start another while it is being killed).
func killMarked(mark string) {
	for range 20 {
		left := marked(mark)
		if len(left) == 0 {
			return
		}
		for _, p := range left {
			pid, _ := strconv.Atoi(p[:strings.IndexByte(p, ':')])
			syscall.Kill(pid, syscall.SIGKILL)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// waitFile waits up to limit for path to exist with content, and reports
// whether it did.
func waitFile(path string, limit time.Duration) bool {
	for deadline := time.Now().Add(limit); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if fi, err := os.Stat(path); err == nil && fi.Size() > 0 {
			return true
		}
	}
	return false
}

func random(t *testing.T, n int) string {
	t.Helper()
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// gitInit makes dir a git repository, with the host's git; without git
// the test skips, or fails where git is required (testenv).
func gitInit(t *testing.T, dir string) {
	t.Helper()
	testenv.LookPath(t, "git", "apt-get install git (as root)")
	if out, err := exec.Command("git", "init", "-q", dir).CombinedOutput(); err != nil {
		t.Fatalf("git init %s: %v\n%s", dir, err, out)
	}
}

// exists reports whether path exists on the host (a dangling link counts).
func exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}

// cli runs the real toolhost with args in dir, as the fixture's user (its
// HOME and configuration directory), and returns what it printed.
func (f *fixture) cli(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command(toolhost, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "HOME="+f.home, "XDG_CONFIG_HOME="+filepath.Join(f.home, ".config"))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("toolhost %s in %s: %v\n%s", strings.Join(args, " "), dir, err, out)
	}
	return string(out)
}

// needTools stops t (testenv.LookPath) when command uses a program beyond
// Go and a POSIX shell that this machine lacks: a probe that cannot start
// proves nothing either way.
func needTools(t *testing.T, command string) {
	t.Helper()
	if strings.Contains(command, "python3") || strings.Contains(command, "probe.py") {
		testenv.LookPath(t, "python3", "apt-get install python3 (as root)")
	}
	for _, tool := range []string{"curl", "git", "make"} {
		if commandWord(tool).MatchString(command) {
			testenv.LookPath(t, tool, "apt-get install "+tool+" (as root)")
		}
	}
}

// commandWord matches name where a shell would run it as a command: at
// the start, or after a separator, a pipe or a parenthesis.
func commandWord(name string) *regexp.Regexp {
	return regexp.MustCompile(`(^|[;&|(\n]\s*)` + regexp.QuoteMeta(name) + `(\s|$)`)
}
