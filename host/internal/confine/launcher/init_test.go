//go:build linux

package launcher

import (
	"strings"
	"testing"

	"github.com/toolhost/toolhost/host/internal/confine/spec"
)

// The launchers refuse arguments other than [binary, their argument]
// with an error, before they read anything; an empty list once panicked
// on args[1:].
func TestLaunchRefusesArguments(t *testing.T) {
	for _, args := range [][]string{
		nil,
		{},
		{"toolhost"},
		{"toolhost", "call"},
		{"toolhost", spec.LauncherArg, "extra"},
		{"toolhost", spec.WarmLauncherArg},
		{"toolhost", spec.LaunchersArg},
	} {
		for _, want := range []string{spec.LauncherArg, spec.WarmLauncherArg, spec.LaunchersArg} {
			if len(args) == 2 && args[1] == want {
				continue
			}
			err := checkArgs(args, want)
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("checkArgs(%q, %s) = %v; want an error naming %s", args, want, err, want)
			}
		}
	}
}
