package confine

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// What a call leaves in the state directory (its tmp, its stages, the
// record of its check) is named call-<pid>-…, after the toolhost that
// made it: a toolhost killed before its cleanup ran leaves them, and a
// later one finds them by that pid.

// deadOwner returns the pid in name (call-<pid>-…) when that toolhost
// is gone and is not this one.
func deadOwner(name string) (int, bool) {
	rest, ok := strings.CutPrefix(name, "call-")
	pidText, _, _ := strings.Cut(rest, "-")
	pid, err := strconv.Atoi(pidText)
	if !ok || err != nil || pid <= 0 || pid == os.Getpid() || !processGone(pid) {
		return 0, false
	}
	return pid, true
}

// leftover is one entry a toolhost that is gone left, claimed.
type leftover struct {
	pid  int    // the toolhost that left it
	path string // where it is now, renamed under this toolhost's pid
}

// claimLeftovers claims each entry of base a toolhost that is gone left,
// by renaming it under this toolhost's pid: another toolhost sharing the
// directory, or another call of this one, skips it, and one that dies
// while handling it leaves it to the next.
func claimLeftovers(base string) []leftover {
	entries, err := os.ReadDir(base)
	if err != nil {
		return nil
	}
	var out []leftover
	for _, e := range entries {
		pid, ok := deadOwner(e.Name())
		if !ok {
			continue
		}
		claimed := filepath.Join(base, fmt.Sprintf("call-%d-recovered-%s", os.Getpid(), e.Name()))
		if os.Rename(filepath.Join(base, e.Name()), claimed) == nil {
			out = append(out, leftover{pid: pid, path: claimed})
		}
	}
	return out
}
