//go:build linux

package launcher

import (
	"strings"
	"testing"

	"github.com/toolhost/toolhost/host/internal/confine/spec"
)

// Launch refuses arguments other than
// [binary, spec.LauncherArg] with an error, before it reads anything;
// an empty list once panicked on args[1:].
func TestLaunchRefusesArguments(t *testing.T) {
	for _, args := range [][]string{
		nil,
		{},
		{"toolhost"},
		{"toolhost", "call"},
		{"toolhost", spec.LauncherArg, "extra"},
	} {
		_, _, err := launch(args)
		if err == nil || !strings.Contains(err.Error(), spec.LauncherArg) {
			t.Errorf("launch(%q) = %v; want an error naming %s", args, err, spec.LauncherArg)
		}
	}
}
