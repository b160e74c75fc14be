package confine

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestBuildPolicyRunsToolchains: under the policy Build makes for this
// machine's home and PATH, the toolchains work, git commits in the root,
// the tmp is writable, and a secret of the home is not there (the positive controls of "Done when").
func TestBuildPolicyRunsToolchains(t *testing.T) {
	home, err := os.UserHomeDir()
	if err != nil {
		t.Fatal(err)
	}
	root := canonicalTempDir(t)
	s := Settings{Mode: ModeWorkspaceWrite, Network: NetworkOff, StateDir: canonicalTempDir(t), Home: home, Path: os.Getenv("PATH"), Environ: os.Environ()}
	p := mustBuild(t, s, Call{ID: "tools", Roots: []string{root}})
	checks := map[string]string{
		"python3 -c 'print(\"py-ok\")'":      "py-ok",
		"go version":                         "go version go",
		"cargo --version":                    "cargo ",
		"rustc --version":                    "rustc ",
		"node -e 'console.log(\"node-ok\")'": "node-ok",
		"make --version":                     "GNU Make",
		"git init -q r && cd r && echo x > f && git add f && git -c user.email=t@example.com -c user.name=t commit -q -m x && git log --oneline | wc -l": "1",
		"echo x > /tmp/probe.$$ && cat /tmp/probe.$$ && echo \"$TMPDIR\"":                                                                                "x\n/tmp",
		"cat ~/.npmrc ~/.ssh/id_rsa ~/.cargo/credentials.toml 2>/dev/null; echo no-secrets":                                                              "no-secrets",
	}
	for cmd, want := range checks {
		if exe, _, _ := strings.Cut(cmd, " "); exe != "echo" && exe != "cat" {
			if _, err := exec.LookPath(exe); err != nil {
				t.Logf("%s is not on this machine's PATH: not checked", exe)
				continue
			}
			// A toolchain that does not run outside the sandbox either (a
			// rustup shim without a default toolchain, say) is not the
			// sandbox's to make work.
			outside := exec.Command("sh", "-c", cmd)
			outside.Dir = t.TempDir()
			if out, err := outside.CombinedOutput(); err != nil {
				first, _, _ := strings.Cut(strings.TrimSpace(string(out)), "\n")
				t.Logf("%s does not run on this machine outside the sandbox either (%v: %s): not checked", exe, err, first)
				continue
			}
		}
		r := mustRun(t, p, cmd)
		if r.code != 0 || !strings.Contains(r.stdout, want) {
			t.Errorf("%s: exit %d, stdout %q, stderr %q; want %q", cmd, r.code, r.stdout, r.stderr, want)
		}
		if cmd[:3] == "cat" && r.stdout != "no-secrets\n" {
			t.Errorf("a secret was read: %q", r.stdout)
		}
	}
}
