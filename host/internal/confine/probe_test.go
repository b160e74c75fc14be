package confine

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// full is a Support with every piece there, so that each case below
// clears exactly one.
func full() Support {
	return Support{
		LandlockABI:       7,
		Namespaces:        namespaceNames,
		AppArmorRestrict:  -1,
		MaxUserNamespaces: 15000,
		UnprivUsernsClone: -1,
		Seccomp:           true,
		Cgroup:            CgroupSupport{Unified: "/sys/fs/cgroup/toolhost.scope", UnifiedControllers: []string{"memory", "pids"}, UnifiedKill: true},
	}
}

// The probe on this machine finds every piece the
// default policy needs, quickly. A machine without one fails here with
// the doctor's report, never silently.
func TestProbeThisMachine(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("confinement needs Linux")
	}
	s := Probe(context.Background())
	t.Logf("%s", s.Summary())
	if err := s.Require(ModeWorkspaceWrite, NetworkOff); err != nil {
		var b strings.Builder
		Doctor(&b, s, ModeWorkspaceWrite, NetworkOff)
		t.Fatalf("this machine cannot confine commands: %v\n%s", err, b.String())
	}
	if s.LandlockABI < 1 || !s.Seccomp || len(s.Namespaces) != len(namespaceNames) {
		t.Errorf("probe: %+v", s)
	}
	// It runs once at start and starts one process: well under a second
	// even on a loaded machine (about 2 ms on an idle one).
	if s.Took <= 0 || s.Took > 2*time.Second {
		t.Errorf("the probe took %s", s.Took)
	}
}

// When a piece is missing, Require fails closed with an
// error naming the piece and its fix; no mode but off gets past it, and
// pieces the configuration does not need (cgroups; the network namespace
// with network on) do not stop it.
func TestRequireFailsClosed(t *testing.T) {
	tests := []struct {
		name  string
		clear func(*Support)
		mode  Mode
		net   Network
		wants []string // in the error; none: Require passes
	}{
		{name: "everything there", clear: func(*Support) {}, mode: ModeWorkspaceWrite, net: NetworkOff},
		{name: "home directory unknown", clear: func(s *Support) { s.Home = errors.New("cannot tell the user's home directory; set HOME") },
			mode: ModeWorkspaceWrite, net: NetworkOff, wants: []string{"set HOME"}},
		{name: "no Landlock", clear: func(s *Support) { s.LandlockABI = 0 }, mode: ModeWorkspaceWrite, net: NetworkOff,
			wants: []string{"landlock: unavailable", "CONFIG_SECURITY_LANDLOCK"}},
		{name: "Landlock not in lsm=", clear: func(s *Support) {
			s.LandlockABI, s.LandlockErr = 0, "landlock_create_ruleset: operation not supported: Landlock is not in the kernel's lsm= list"
		}, mode: ModeReadOnly, net: NetworkOff, wants: []string{"landlock: built into the kernel but not enabled", "lsm=landlock"}},
		{name: "no user namespaces", clear: func(s *Support) {
			s.Namespaces, s.MaxUserNamespaces = nil, 0
			s.NamespaceErr = map[string]string{"user": "operation not permitted", "mount": "operation not permitted", "pid": "x", "net": "x", "ipc": "x", "uts": "x"}
		}, mode: ModeWorkspaceWrite, net: NetworkOn, wants: []string{"user namespace: refused (operation not permitted)", "user.max_user_namespaces=15000"}},
		{name: "Debian's switch off", clear: func(s *Support) {
			s.Namespaces, s.UnprivUsernsClone = nil, 0
		}, mode: ModeWorkspaceWrite, net: NetworkOff, wants: []string{"user namespace: refused", "kernel.unprivileged_userns_clone=1"}},
		{name: "AppArmor restricts user namespaces", clear: func(s *Support) {
			s.AppArmorRestrict, s.AppArmorLabel = 1, "unconfined"
		}, mode: ModeWorkspaceWrite, net: NetworkOff, wants: []string{"apparmor: kernel.apparmor_restrict_unprivileged_userns = 1", "userns,", "apparmor_restrict_unprivileged_userns=0"}},
		{name: "AppArmor spares root", clear: func(s *Support) {
			s.AppArmorRestrict, s.AppArmorLabel, s.Privileged = 1, "unconfined", true
		}, mode: ModeWorkspaceWrite, net: NetworkOff},
		{name: "no network namespace", clear: func(s *Support) {
			s.Namespaces = []string{"user", "mount", "pid", "ipc", "uts"}
			s.NamespaceErr = map[string]string{"net": "invalid argument"}
		}, mode: ModeWorkspaceWrite, net: NetworkAllowlist, wants: []string{"net namespace: refused (invalid argument)", "CONFIG_NET_NS=y"}},
		{name: "no network namespace, network on", clear: func(s *Support) {
			s.Namespaces = []string{"user", "mount", "pid", "ipc", "uts"}
		}, mode: ModeWorkspaceWrite, net: NetworkOn},
		{name: "no seccomp", clear: func(s *Support) { s.Seccomp, s.SeccompErr = false, "prctl(PR_GET_SECCOMP): invalid argument" },
			mode: ModeReadOnly, net: NetworkOff, wants: []string{"seccomp: unavailable (prctl", "CONFIG_SECCOMP_FILTER"}},
		{name: "masked /proc", clear: func(s *Support) { s.ProcCovered = []string{"/proc/kcore", "/proc/acpi"} },
			mode: ModeWorkspaceWrite, net: NetworkOff, wants: []string{"proc: parts of /proc are covered (/proc/kcore, /proc/acpi)", "systempaths=unconfined"}},
		{name: "no cgroups", clear: func(s *Support) { s.Cgroup = CgroupSupport{} }, mode: ModeWorkspaceWrite, net: NetworkOff},
		{name: "nothing at all, sandbox off", clear: func(s *Support) { *s = Support{} }, mode: ModeOff, net: NetworkOn},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := full()
			tt.clear(&s)
			err := s.Require(tt.mode, tt.net)
			if len(tt.wants) == 0 {
				if err != nil {
					t.Fatalf("Require: %v", err)
				}
				return
			}
			if !errors.Is(err, ErrUnconfinable) {
				t.Fatalf("Require = %v, want ErrUnconfinable", err)
			}
			for _, want := range append(tt.wants, string(tt.mode), "did not run", "toolhost sandbox doctor") {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error lacks %q:\n%v", want, err)
				}
			}
		})
	}
}

// The fail-closed path end to end in the host's side of
// a call. A probe forced to "no Landlock" makes Prepare refuse the call
// before anything is built for it: no private temporary directory, no
// cgroup, no launch.
func TestConfinerFailsClosedWithoutLandlock(t *testing.T) {
	s := full()
	s.LandlockABI, s.LandlockErr = 0, "landlock_create_ruleset: function not implemented: the kernel lacks Landlock"
	state := t.TempDir()
	root := t.TempDir()
	c := NewConfiner(Settings{Mode: ModeWorkspaceWrite, Network: NetworkOff, StateDir: state, Limits: Limits{MemoryBytes: 1 << 30, Pids: 64}}, s, "/proc/self/exe", nil)
	r, err := c.Prepare(context.Background(), Call{ID: "call_1", Roots: []string{root}, Dir: root})
	if err == nil {
		r.Close()
		t.Fatal("Prepare ran a command without Landlock")
	}
	if !errors.Is(err, ErrUnavailable) || !errors.Is(err, ErrUnconfinable) || !strings.Contains(err.Error(), "landlock") {
		t.Fatalf("Prepare = %v, want the Landlock piece named", err)
	}
	entries, _ := os.ReadDir(filepath.Join(state, "sandbox"))
	if len(entries) != 0 {
		t.Errorf("Prepare made %d entries under the state directory before failing", len(entries))
	}
}

// The start-up log line names every piece, so a log reader sees what
// confinement the host has without running the doctor.
func TestSupportSummary(t *testing.T) {
	s := full()
	s.Took = 2345 * time.Microsecond
	want := "landlock=abi7 userns=ok apparmor=ok mountns=ok pidns=ok netns=ok ipcns=ok utsns=ok seccomp=ok proc=ok cgroups=memory+pids probe=2.35ms"
	if got := s.Summary(); got != want {
		t.Errorf("Summary() =\n%s\nwant\n%s", got, want)
	}
	s.Seccomp, s.Cgroup = false, CgroupSupport{}
	if got := s.Summary(); !strings.Contains(got, "seccomp=missing") || !strings.Contains(got, "cgroups=none") {
		t.Errorf("Summary() = %s", got)
	}
}
