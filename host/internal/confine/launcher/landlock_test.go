//go:build linux

package launcher

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"

	"github.com/toolhost/toolhost/host/internal/confine/spec"
)

// The tests of Landlock and seccomp restrict a child process, never the
// test binary itself (restrictions cannot be lifted): runConfined
// re-runs the test binary as TestConfineHelper, which applies what the
// case asks and runs one probe, an operation a command could try, and
// prints its outcome.
const (
	helperCaseEnv   = "TOOLHOST_CONFINE_TEST_PROBE"
	helperApplyEnv  = "TOOLHOST_CONFINE_TEST_APPLY"
	helperPolicyEnv = "TOOLHOST_CONFINE_TEST_POLICY"
	helperBaseEnv   = "TOOLHOST_CONFINE_TEST_BASE"
	helperArgEnv    = "TOOLHOST_CONFINE_TEST_ARG"
)

// What the helper applies before its probe.
const (
	applyLandlock = "landlock"
	applySeccomp  = "seccomp"
	applyBoth     = "both" // as the launcher does
)

// confineProbe is one operation run in the confined child; base is the case's
// directory tree (see testTree), arg a value the parent passes. It
// returns nil when the operation succeeded.
type confineProbe func(base, arg string) error

// confineProbes lists every probe by name, from both test files.
func confineProbes() map[string]confineProbe {
	all := landlockProbes()
	for name, p := range seccompProbes() {
		all[name] = p
	}
	all["noop"] = func(string, string) error { return nil }
	return all
}

// TestConfineHelper is the child process of runConfined; run directly it
// does nothing.
func TestConfineHelper(t *testing.T) {
	name := os.Getenv(helperCaseEnv)
	if name == "" {
		t.Skip("the child process of the Landlock and seccomp tests")
	}
	os.Exit(runConfineHelper(name))
}

func runConfineHelper(name string) int {
	p, ok := confineProbes()[name]
	if !ok {
		fmt.Printf("result: no probe %q\n", name)
		return 2
	}
	var policy spec.Policy
	if err := json.Unmarshal([]byte(os.Getenv(helperPolicyEnv)), &policy); err != nil {
		fmt.Printf("result: policy: %v\n", err)
		return 2
	}
	apply := os.Getenv(helperApplyEnv)
	// As launch does: one locked thread, no_new_privs set on it first
	// (the launcher's invariant, which loadSeccomp relies on).
	runtime.LockOSThread()
	if apply != "" {
		if err := setNoNewPrivs(); err != nil {
			fmt.Printf("result: %v\n", err)
			return 2
		}
	}
	if apply == applyLandlock || apply == applyBoth {
		start := time.Now()
		abi, err := restrictLandlock(&policy)
		if err != nil {
			fmt.Printf("result: restrictLandlock: %v\n", err)
			return 2
		}
		fmt.Printf("landlock abi %d took %v\n", abi, time.Since(start))
	}
	if apply == applySeccomp || apply == applyBoth {
		start := time.Now()
		if err := loadSeccomp(&policy, nil); err != nil {
			fmt.Printf("result: loadSeccomp: %v\n", err)
			return 2
		}
		fmt.Printf("seccomp took %v\n", time.Since(start))
	}
	fmt.Printf("result: %s\n", probeOutcome(p(os.Getenv(helperBaseEnv), os.Getenv(helperArgEnv))))
	return 0
}

// probeOutcome names err by its errno (EACCES), "ok" for nil, or its text.
func probeOutcome(err error) string {
	if err == nil {
		return "ok"
	}
	var errno unix.Errno
	if errors.As(err, &errno) {
		return unix.ErrnoName(errno)
	}
	return "error: " + strings.ReplaceAll(err.Error(), "\n", " ")
}

// helperRun is one run of the helper.
type helperRun struct {
	apply  string
	policy spec.Policy
	base   string
	arg    string
}

// runConfined runs probe name in a child under r and returns its
// outcome and the child's whole output.
func runConfined(t *testing.T, name string, r helperRun) (string, string) {
	t.Helper()
	policy, err := json.Marshal(r.policy)
	if err != nil {
		t.Fatal(err)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^TestConfineHelper$", "-test.timeout=60s")
	cmd.Env = append(os.Environ(),
		helperCaseEnv+"="+name, helperApplyEnv+"="+r.apply, helperPolicyEnv+"="+string(policy),
		helperBaseEnv+"="+r.base, helperArgEnv+"="+r.arg,
		// A race-enabled binary sleeps a second at exit by default.
		"GORACE="+strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0"))
	out, err := cmd.CombinedOutput()
	m := regexp.MustCompile(`(?m)^result: (.*)$`).FindSubmatch(out)
	if m == nil {
		t.Fatalf("probe %s: no result (%v):\n%s", name, err, out)
	}
	return string(m[1]), string(out)
}

// systemReadable is what the child needs to run sh and python3: the
// system directories a policy lists as readable.
func systemReadable() []string {
	return []string{"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/etc"}
}

// testTree makes the directories a case's policy names, below base:
//
//	rw/a/f, rw/b/   writable
//	ro/r            readable
//	out/secret      neither
//	rwfile          writable, listed as a file
//	rofile          readable, listed as a file
func testTree(t *testing.T) (string, spec.Policy) {
	t.Helper()
	base := t.TempDir()
	for _, dir := range []string{"rw/a", "rw/b", "ro", "out"} {
		if err := os.MkdirAll(filepath.Join(base, dir), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, file := range []string{"rw/a/f", "ro/r", "out/secret", "rwfile", "rofile"} {
		if err := os.WriteFile(filepath.Join(base, file), []byte("data of "+file), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	p := spec.Policy{
		Mode:     spec.ModeWorkspaceWrite,
		Network:  spec.NetworkOff,
		Writable: []string{filepath.Join(base, "rw"), filepath.Join(base, "rwfile"), filepath.Join(base, "missing-rw")},
		Readable: append(systemReadable(), filepath.Join(base, "ro"), filepath.Join(base, "rofile"), filepath.Join(base, "missing-ro")),
	}
	return base, p
}

func landlockProbes() map[string]confineProbe {
	write := func(path string) error { return os.WriteFile(path, []byte("x"), 0o644) }
	read := func(path string) error { _, err := os.ReadFile(path); return err }
	return map[string]confineProbe{
		"write-writable":       func(b, _ string) error { return write(filepath.Join(b, "rw/new")) },
		"write-outside":        func(b, _ string) error { return write(filepath.Join(b, "out/new")) },
		"overwrite-outside":    func(b, _ string) error { return write(filepath.Join(b, "out/secret")) },
		"write-readable":       func(b, _ string) error { return write(filepath.Join(b, "ro/r")) },
		"read-readable":        func(b, _ string) error { return read(filepath.Join(b, "ro/r")) },
		"read-unlisted":        func(b, _ string) error { return read(filepath.Join(b, "out/secret")) },
		"list-unlisted":        func(b, _ string) error { _, err := os.ReadDir(filepath.Join(b, "out")); return err },
		"write-writable-file":  func(b, _ string) error { return write(filepath.Join(b, "rwfile")) },
		"read-readable-file":   func(b, _ string) error { return read(filepath.Join(b, "rofile")) },
		"write-readable-file":  func(b, _ string) error { return write(filepath.Join(b, "rofile")) },
		"mkdir-remove-inside":  func(b, _ string) error { return mkdirRemove(filepath.Join(b, "rw/d")) },
		"rename-within":        func(b, _ string) error { return os.Rename(filepath.Join(b, "rw/a/f"), filepath.Join(b, "rw/b/f")) },
		"rename-out":           func(b, _ string) error { return os.Rename(filepath.Join(b, "rw/a/f"), filepath.Join(b, "out/f")) },
		"rename-to-readable":   func(b, _ string) error { return os.Rename(filepath.Join(b, "rw/a/f"), filepath.Join(b, "ro/f")) },
		"rename-in":            func(b, _ string) error { return os.Rename(filepath.Join(b, "ro/r"), filepath.Join(b, "rw/r")) },
		"link-within":          func(b, _ string) error { return os.Link(filepath.Join(b, "rw/a/f"), filepath.Join(b, "rw/b/f")) },
		"link-out":             func(b, _ string) error { return os.Link(filepath.Join(b, "rw/a/f"), filepath.Join(b, "out/f")) },
		"link-in-from-ro":      func(b, _ string) error { return os.Link(filepath.Join(b, "ro/r"), filepath.Join(b, "rw/r")) },
		"symlink-out-write":    symlinkOutWrite,
		"dev-null":             func(string, string) error { return write("/dev/null") },
		"dev-urandom":          func(string, string) error { return readSome("/dev/urandom") },
		"proc-self-read":       func(string, string) error { return read("/proc/self/status") },
		"proc-self-write":      func(string, string) error { return write("/proc/self/comm") },
		"dev-stdout-via-shell": devStdoutViaShell,
		"write-outside-via-shell": func(b, _ string) error {
			return shellRefused(b, "echo x > "+filepath.Join(b, "out/new"))
		},
		"signal-parent":   signalParent,
		"abstract-parent": dialAbstract,
		"abstract-own":    abstractOwn,
	}
}

func mkdirRemove(dir string) error {
	if err := os.Mkdir(dir, 0o755); err != nil {
		return err
	}
	return os.Remove(dir)
}

// symlinkOutWrite makes a symlink inside the writable tree that points
// out of it and writes through it: Landlock judges the file reached.
func symlinkOutWrite(b, _ string) error {
	link := filepath.Join(b, "rw/link")
	if err := os.Symlink(filepath.Join(b, "out/secret"), link); err != nil {
		return err
	}
	return os.WriteFile(link, []byte("x"), 0o644)
}

func readSome(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = f.Read(make([]byte, 16))
	return err
}

// devStdoutViaShell writes to /dev/stdout, which a shell script does
// (and /proc/self/fd behind it): the pipe it reaches must stay open.
func devStdoutViaShell(b, _ string) error { return runSh(b, "echo ok >/dev/stdout") }

// shellRefused runs script with /bin/sh, a process the caller's thread
// forks, as the launcher forks the command's shell: the rules reach it
// only through that thread's domain. A refusal the shell reports is
// EACCES.
func shellRefused(base, script string) error {
	cmd := exec.Command("/bin/sh", "-c", script)
	cmd.Dir = filepath.Join(base, "rw")
	out, err := cmd.CombinedOutput()
	if err != nil && strings.Contains(string(out), "Permission denied") {
		return unix.EACCES
	}
	if err != nil {
		return fmt.Errorf("sh -c %q: %w: %s", script, err, out)
	}
	return nil
}

// runSh runs script with /bin/sh in base's rw directory and wants "ok".
func runSh(base, script string) error {
	cmd := exec.Command("/bin/sh", "-c", script)
	cmd.Dir = filepath.Join(base, "rw")
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("sh -c %q: %w: %s", script, err, out)
	}
	if string(out) != "ok\n" {
		return fmt.Errorf("sh -c %q printed %q", script, out)
	}
	return nil
}

// signalParent sends signal 0 (the permission check alone) and SIGURG
// (which a Go program ignores) to the test process, outside the domain.
func signalParent(string, string) error {
	if err := unix.Kill(os.Getppid(), 0); err != nil {
		return err
	}
	return unix.Kill(os.Getppid(), unix.SIGURG)
}

// dialAbstract connects to the abstract socket the parent listens on.
func dialAbstract(_, name string) error {
	c, err := net.Dial("unix", "@"+name)
	if err != nil {
		return err
	}
	return c.Close()
}

// abstractOwn listens on an abstract socket inside the domain and
// connects to it: scoping refuses only what lies outside.
func abstractOwn(string, string) error {
	name := fmt.Sprintf("@toolhost-confine-own-%d", os.Getpid())
	l, err := net.Listen("unix", name)
	if err != nil {
		return err
	}
	defer l.Close()
	c, err := net.Dial("unix", name)
	if err != nil {
		return err
	}
	return c.Close()
}

// TestLandlockConfinesFiles checks the filesystem rules: a command writes only below Writable, reads only Writable and
// Readable, and cannot move or link a file out of the writable tree.
func TestLandlockConfinesFiles(t *testing.T) {
	tests := []struct {
		probe string
		want  string
	}{
		{"write-writable", "ok"},
		{"mkdir-remove-inside", "ok"},
		{"write-outside", "EACCES"},
		{"overwrite-outside", "EACCES"},
		{"write-readable", "EACCES"},
		{"read-readable", "ok"},
		{"read-unlisted", "EACCES"},
		{"list-unlisted", "EACCES"},
		{"write-writable-file", "ok"},
		{"read-readable-file", "ok"},
		{"write-readable-file", "EACCES"},
		{"rename-within", "ok"},
		{"link-within", "ok"},
		{"rename-out", "EACCES"},
		{"rename-to-readable", "EACCES"},
		{"rename-in", "EACCES"},
		{"link-out", "EACCES"},
		// Linking a read-only file into the writable tree would make it
		// writable there; the kernel refuses with EXDEV.
		{"link-in-from-ro", "EXDEV"},
		{"symlink-out-write", "EACCES"},
		{"dev-null", "ok"},
		{"dev-urandom", "ok"},
		{"proc-self-read", "ok"},
		{"proc-self-write", "EACCES"},
		{"dev-stdout-via-shell", "ok"},
		{"write-outside-via-shell", "EACCES"},
	}
	for _, tt := range tests {
		t.Run(tt.probe, func(t *testing.T) {
			base, p := testTree(t)
			got, out := runConfined(t, tt.probe, helperRun{apply: applyLandlock, policy: p, base: base})
			if got != tt.want {
				t.Errorf("%s under Landlock = %s, want %s\n%s", tt.probe, got, tt.want, out)
			}
			if tt.want != "ok" {
				// A refused write left nothing behind.
				if data, err := os.ReadFile(filepath.Join(base, "out/secret")); err != nil || string(data) != "data of out/secret" {
					t.Errorf("out/secret changed: %q, %v", data, err)
				}
			}
		})
	}
}

// TestLandlockABIRecorded checks that restrictLandlock reports the ABI
// it enforced: the kernel's, capped at the pinned 7.
func TestLandlockABIRecorded(t *testing.T) {
	kernel, err := ll.LandlockGetABIVersion()
	if err != nil || kernel < 1 {
		t.Fatalf("this machine's kernel has no Landlock (%v); the sandbox needs it", err)
	}
	want, err := landlockABI()
	if err != nil {
		t.Fatal(err)
	}
	if want > landlockPinnedABI || (kernel <= landlockPinnedABI && kernel >= 6 && want < 5) || (kernel < 6 && want != kernel) {
		t.Errorf("landlockABI() = %d on a kernel of ABI %d", want, kernel)
	}
	base, p := testTree(t)
	_, out := runConfined(t, "noop", helperRun{apply: applyLandlock, policy: p, base: base})
	m := regexp.MustCompile(`landlock abi (\d+)`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no ABI reported:\n%s", out)
	}
	if got, _ := strconv.Atoi(m[1]); got != want {
		t.Errorf("restrictLandlock enforced ABI %d, want %d (kernel %d)", got, want, kernel)
	}
}

// TestLandlockScopesSignalsAndAbstractSockets checks the IPC scopes:
// a command cannot signal a process outside its
// domain (toolhost) nor connect to an abstract socket one listens on,
// while its own abstract sockets work. The scopes came with Landlock
// ABI 6 (with its erratum fixed): below it the kernel cannot refuse
// either, and the namespaces are the only wall, so the test is skipped
// with the reason.
func TestLandlockScopesSignalsAndAbstractSockets(t *testing.T) {
	if abi, err := landlockABI(); err != nil || abi < 6 {
		t.Skipf("Landlock ABI %d (%v): signal and abstract-socket scoping need ABI 6", abi, err)
	}
	name := fmt.Sprintf("toolhost-confine-test-%d-%d", os.Getpid(), time.Now().UnixNano())
	// Listening, so that a refused connect is the scope's EPERM, not
	// ECONNREFUSED; the probe's own outcome says whether it connected.
	l, err := net.Listen("unix", "@"+name)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	tests := []struct {
		probe string
		want  string
	}{
		{"signal-parent", "EPERM"},
		{"abstract-parent", "EPERM"},
		{"abstract-own", "ok"},
	}
	for _, tt := range tests {
		t.Run(tt.probe, func(t *testing.T) {
			base, p := testTree(t)
			got, out := runConfined(t, tt.probe, helperRun{apply: applyLandlock, policy: p, base: base, arg: name})
			if got != tt.want {
				t.Errorf("%s = %s, want %s\n%s", tt.probe, got, tt.want, out)
			}
		})
	}
}

// TestLandlockLevel checks the ABI recorded for each kernel and that a
// kernel without Landlock is refused with the fix (confinement fails closed, never silently weaker).
func TestLandlockLevel(t *testing.T) {
	tests := []struct {
		name      string
		v, errata int
		err       error
		want      int
		wantErr   string
	}{
		{name: "no Landlock", v: 0, wantErr: "lsm="},
		{name: "disabled at boot", v: -1, err: unix.EOPNOTSUPP, wantErr: "CONFIG_SECURITY_LANDLOCK"},
		{name: "ABI 1", v: 1, want: 1},
		{name: "ABI 5", v: 5, want: 5},
		{name: "ABI 6 with the scoping fix", v: 6, errata: 0x2, want: 6},
		{name: "ABI 6 without the scoping fix", v: 6, errata: 0x1, want: 5},
		{name: "ABI 7", v: 7, errata: 0x2, want: 7},
		{name: "newer kernel capped at the pin", v: 11, errata: 0x3, want: 7},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := landlockLevel(tt.v, tt.errata, tt.err)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !strings.Contains(err.Error(), "Landlock is unavailable") {
					t.Fatalf("landlockLevel = %d, %v; want an error naming %q", got, err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Errorf("landlockLevel = %d, %v; want %d", got, err, tt.want)
			}
		})
	}
}
