package e2e

import (
	"runtime"
	"strings"
	"testing"
)

// Toolhost sandbox doctor on this machine. Its kernel
// has every piece (Landlock, the namespaces, seccomp, a fully visible
// /proc, writable cgroups with the memory and pids controllers), so each
// line says ok and the verdict for the configured policy is that
// run_command confines commands: exit 0. A machine lacking a piece fails
// here with the report, which names the piece and its fix. When commands
// run confined, the report ends with the launcher server it started.
func TestSandboxDoctor(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the command sandbox is Linux's")
	}
	tests := []struct {
		name  string
		w     func(*workspace) *workspace
		lines []string
	}{
		{name: "defaults", w: func(w *workspace) *workspace { return w }, lines: []string{
			`configuration: tools.run_command.sandbox = "workspace-write" (default), tools.run_command.network = "off" (default)` + "\n",
			`verdict: run_command runs commands confined (sandbox "workspace-write", network "off"); memory_max and pids_max apply through cgroups` + "\n",
			"\nlaunchers: a launcher server (pid ",
		}},
		{name: "read-only with the allowlist, from the operator's file", w: func(w *workspace) *workspace {
			return w.withConfig(t, "[tools.run_command]\nsandbox = \"read-only\"\nnetwork = \"allowlist\"\nallowed_domains = [\"example.com\"]\n")
		}, lines: []string{
			`verdict: run_command runs commands confined (sandbox "read-only", network "allowlist")`,
			"\nlaunchers: a launcher server (pid ",
		}},
		{name: "off, from the environment", w: func(w *workspace) *workspace {
			return w.withEnv("TOOLHOST_TOOLS_RUN_COMMAND_SANDBOX=off", "TOOLHOST_TOOLS_RUN_COMMAND_NETWORK=on")
		}, lines: []string{
			`tools.run_command.sandbox = "off" (env TOOLHOST_TOOLS_RUN_COMMAND_SANDBOX)`,
			`verdict: sandbox "off" (set by the operator): run_command runs commands unconfined, with toolhost's own privileges` + "\n",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, stderr, code := tt.w(newWorkspace(t)).run(t, "sandbox", "doctor")
			if code != 0 {
				t.Fatalf("sandbox doctor: exit %d, want 0 on this machine\n%s%s", code, out, stderr)
			}
			for _, want := range append(tt.lines,
				"\n  ok       landlock         ABI ",
				"\n  ok       user namespace   a child entered one\n",
				"\n  ok       apparmor         ",
				"\n  ok       mount namespace  a child entered one\n",
				"\n  ok       pid namespace    a child entered one\n",
				"\n  ok       net namespace    a child entered one\n",
				"\n  ok       seccomp          filters with errno, trace and kill actions",
				"\n  ok       proc             /proc is fully visible",
				"\n  ok       cgroups          ",
				": memory and pids limits apply",
			) {
				if !strings.Contains(out, want) {
					t.Errorf("the report lacks %q:\n%s", want, out)
				}
			}
			if confined := !strings.Contains(out, `verdict: sandbox "off"`); strings.Contains(out, "launchers:") != confined {
				t.Errorf("the report says of the launchers %v, want it to when commands are confined (%v):\n%s", strings.Contains(out, "launchers:"), confined, out)
			}
			if strings.Contains(out, "missing") || strings.Contains(out, "fix:") {
				t.Errorf("the report names a missing piece on this machine:\n%s", out)
			}
		})
	}
}
