package confine

import (
	"fmt"
	"io"
	"strings"
	"time"
)

// Doctor writes the report toolhost sandbox doctor prints: one line per
// piece of s (ok, missing, or optional where mode m and network n do not
// need it), the fix under each piece that is not there, and a verdict.
// It returns Require's error for m and n, nil when run_command runs
// confined as configured, or the error writing to w.
func Doctor(w io.Writer, s Support, m Mode, n Network) error {
	var b strings.Builder
	fmt.Fprintf(&b, "sandbox probe (took %s):\n", s.Took.Round(10*time.Microsecond))
	for _, p := range s.pieces() {
		state := "ok"
		switch {
		case p.ok:
		case p.needed(m, n):
			state = "missing"
		default:
			state = "optional"
		}
		fmt.Fprintf(&b, "  %-9s%-17s%s\n", state, p.name, p.detail)
		if !p.ok {
			fmt.Fprintf(&b, "  %-9s%-17s%s\n", "", "fix:", p.fix)
		}
	}
	err := s.Require(m, n)
	b.WriteString(verdict(s, m, n, err))
	if _, werr := io.WriteString(w, b.String()); werr != nil {
		return fmt.Errorf("writing the sandbox report: %w", werr)
	}
	return err
}

// verdict is the report's last line: what run_command does as configured.
func verdict(s Support, m Mode, n Network, err error) string {
	switch {
	case m == ModeOff:
		return fmt.Sprintf("verdict: sandbox %q (set by the operator): run_command runs commands unconfined, with toolhost's own privileges\n", m)
	case err != nil:
		return fmt.Sprintf("verdict: run_command cannot be confined as configured (sandbox %q, network %q): it refuses every command until the pieces marked missing are fixed; it never runs one unconfined\n", m, n)
	}
	limits := "memory_max and pids_max do not apply (no cgroup for them): rlimits only"
	switch ctl := s.Cgroup.Controllers(); len(ctl) {
	case 2:
		limits = "memory_max and pids_max apply through cgroups"
	case 1:
		limits = "only the " + ctl[0] + " limit applies through a cgroup"
	}
	return fmt.Sprintf("verdict: run_command runs commands confined (sandbox %q, network %q); %s\n", m, n, limits)
}
