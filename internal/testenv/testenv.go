// Package testenv decides what a test does when something it needs from
// outside Go and the base system (sh, bash, coreutils, grep, util-linux)
// is missing or does not run (a C toolchain for wasm32, Node.js and the
// npm packages of the MCP clients, python3, curl, git, gcc, make): on a
// developer's machine it skips, saying what is missing and the command
// that installs it, so that `go test ./...` passes with Go alone; where
// the suite is required (CI, or a TOOLHOST_REQUIRE_* variable) it fails
// instead, so a missing tool can never pass by not running. .ci/run
// installs everything and requires every suite.
package testenv

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// Required reports whether the suite named what (C, NODE, BROWSER, ...)
// must run: TOOLHOST_REQUIRE_<WHAT> or CI is set to anything but "", "0"
// or "false".
func Required(what string) bool {
	return set(os.Getenv("TOOLHOST_REQUIRE_"+strings.ToUpper(what))) || set(os.Getenv("CI"))
}

func set(v string) bool {
	return v != "" && v != "0" && !strings.EqualFold(v, "false")
}

// Need stops t when missing is not nil: a skip naming what is missing and
// install, the command that provides it ("" when missing says it
// already), or, when the suite is Required, a failure saying the same.
func Need(t testing.TB, what string, missing error, install string) {
	t.Helper()
	if missing == nil {
		return
	}
	msg := missing.Error()
	if install != "" {
		msg += "; install it with: " + install
	}
	if Required(what) {
		t.Fatalf("%s (required: CI or TOOLHOST_REQUIRE_%s is set)", msg, strings.ToUpper(what))
	}
	t.Skipf("%s (skipped; set TOOLHOST_REQUIRE_%s=1 to make this a failure)", msg, strings.ToUpper(what))
}

// LookPath is exec.LookPath(file) for a program a test needs that Go does
// not bring (python3, curl): without it, t stops as Need says, the suite
// named by the program (TOOLHOST_REQUIRE_PYTHON3, say).
func LookPath(t testing.TB, file, install string) string {
	t.Helper()
	path, err := exec.LookPath(file)
	Need(t, file, err, install)
	return path
}

// Runs is LookPath(t, file, install) that also runs file with args (a
// --version, say) and stops t the same way when that fails: a program
// found on PATH that does not run (a rustup shim without a default
// toolchain, a dangling alternative) is as missing as one not installed.
func Runs(t testing.TB, file, install string, args ...string) string {
	t.Helper()
	path := LookPath(t, file, install)
	if out, err := exec.Command(path, args...).CombinedOutput(); err != nil {
		Need(t, file, fmt.Errorf("%s is on PATH (%s) but %s %s does not run: %v: %s", file, path, file, strings.Join(args, " "), err, bytes.TrimSpace(out)), install)
	}
	return path
}

// GOROOT is the Go distribution's root as the go command reports it (the
// benchmarks search its src/); the test is skipped where go cannot say.
func GOROOT(t testing.TB) string {
	t.Helper()
	out, err := exec.Command("go", "env", "GOROOT").Output()
	if err != nil {
		t.Skipf("go env GOROOT: %v", err)
	}
	return strings.TrimSpace(string(out))
}
