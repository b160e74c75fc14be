package confine

import (
	"strings"
	"testing"
)

// Doctor writes one line per piece with the fix under what is missing,
// then the verdict; its error is Require's.
func TestDoctorReport(t *testing.T) {
	tests := []struct {
		name    string
		clear   func(*Support)
		mode    Mode
		net     Network
		lines   []string
		failing bool
	}{
		{name: "all there", clear: func(*Support) {}, mode: ModeWorkspaceWrite, net: NetworkOff, lines: []string{
			"  ok       landlock         ABI 7 (files, TCP, abstract Unix sockets and signals scoped)\n",
			"  ok       user namespace   a child entered one\n",
			"  ok       cgroups          v2 /sys/fs/cgroup/toolhost.scope (kill, memory, pids): memory and pids limits apply\n",
			`verdict: run_command runs commands confined (sandbox "workspace-write", network "off"); memory_max and pids_max apply through cgroups` + "\n",
		}},
		{name: "no Landlock", clear: func(s *Support) {
			s.LandlockABI, s.LandlockErr = 0, "landlock_create_ruleset: function not implemented"
		},
			mode: ModeReadOnly, net: NetworkOff, failing: true, lines: []string{
				"  missing  landlock         unavailable (landlock_create_ruleset: function not implemented)\n",
				"\n           fix:             run a kernel with Landlock: ",
				`verdict: run_command cannot be confined as configured (sandbox "read-only", network "off")`,
			}},
		{name: "no cgroups", clear: func(s *Support) { s.Cgroup = CgroupSupport{} }, mode: ModeWorkspaceWrite, net: NetworkAllowlist, lines: []string{
			"  optional cgroups          none writable; memory_max and pids_max cannot apply, commands get rlimits only\n",
			"fix:             give toolhost a delegated cgroup v2",
			"memory_max and pids_max do not apply (no cgroup for them): rlimits only\n",
		}},
		{name: "off", clear: func(s *Support) { *s = Support{} }, mode: ModeOff, net: NetworkOn, lines: []string{
			"  optional landlock",
			`verdict: sandbox "off" (set by the operator): run_command runs commands unconfined`,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := full()
			tt.clear(&s)
			var b strings.Builder
			err := Doctor(&b, s, tt.mode, tt.net)
			if (err != nil) != tt.failing {
				t.Errorf("Doctor = %v, failing %v", err, tt.failing)
			}
			for _, line := range tt.lines {
				if !strings.Contains(b.String(), line) {
					t.Errorf("report lacks %q:\n%s", line, b.String())
				}
			}
		})
	}
}
