//go:build !linux

package confine

import (
	"context"
	"runtime"
	"time"
)

// Probe finds nothing outside Linux: commands cannot be confined there,
// so Require refuses every mode but off.
func Probe(ctx context.Context) Support {
	why := "confinement needs Linux; this is " + runtime.GOOS
	s := Support{
		LandlockErr:       why,
		NamespaceErr:      map[string]string{},
		AppArmorRestrict:  -1,
		MaxUserNamespaces: -1,
		UnprivUsernsClone: -1,
		SeccompErr:        why,
		Cgroup:            CgroupSupport{Note: why},
		Took:              time.Duration(0),
	}
	for _, ns := range namespaceNames {
		s.NamespaceErr[ns] = why
	}
	return s
}
