package testenv

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

func TestRequired(t *testing.T) {
	for _, tc := range []struct {
		ci, require string
		want        bool
	}{
		{"", "", false},
		{"true", "", true},
		{"1", "", true},
		{"0", "", false},
		{"false", "", false},
		{"", "1", true},
		{"", "0", false},
		{"false", "yes", true},
	} {
		t.Setenv("CI", tc.ci)
		t.Setenv("TOOLHOST_REQUIRE_NODE", tc.require)
		if got := Required("node"); got != tc.want {
			t.Errorf("CI=%q TOOLHOST_REQUIRE_NODE=%q: Required = %v, want %v", tc.ci, tc.require, got, tc.want)
		}
	}
}

// TestNeedSkipsOrFails runs the test binary itself on a test that needs a
// program no machine has: it skips, saying what is missing and what
// installs it, unless CI or TOOLHOST_REQUIRE_<WHAT> is set, where it fails
// saying the same.
func TestNeedSkipsOrFails(t *testing.T) {
	if os.Getenv("TESTENV_CHILD") != "" {
		LookPath(t, "toolhost-no-such-program", "apt-get install toolhost-no-such-program (as root)")
		t.Fatal("LookPath returned for a program that is not on PATH")
	}
	for _, tc := range []struct {
		env  []string
		fail bool
		says string
	}{
		{nil, false, "(skipped; set TOOLHOST_REQUIRE_TOOLHOST-NO-SUCH-PROGRAM=1 to make this a failure)"},
		{[]string{"CI=1"}, true, "(required: CI or TOOLHOST_REQUIRE_TOOLHOST-NO-SUCH-PROGRAM is set)"},
		{[]string{"TOOLHOST_REQUIRE_TOOLHOST-NO-SUCH-PROGRAM=1"}, true, "(required: CI"},
	} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestNeedSkipsOrFails$", "-test.v", "-test.count=1")
		env := []string{"TESTENV_CHILD=1"}
		for _, kv := range os.Environ() {
			if !strings.HasPrefix(kv, "CI=") && !strings.HasPrefix(kv, "TOOLHOST_REQUIRE_") {
				env = append(env, kv)
			}
		}
		cmd.Env = append(env, tc.env...)
		out, err := cmd.CombinedOutput()
		if failed := err != nil; failed != tc.fail {
			t.Errorf("%v: failed = %v (%v), want %v\n%s", tc.env, failed, err, tc.fail, out)
		}
		for _, want := range []string{`exec: "toolhost-no-such-program": executable file not found in $PATH`, "install it with: apt-get install toolhost-no-such-program (as root)", tc.says} {
			if !strings.Contains(string(out), want) {
				t.Errorf("%v: the output does not say %q:\n%s", tc.env, want, out)
			}
		}
	}
}
