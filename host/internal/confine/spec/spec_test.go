package spec

import (
	"strings"
	"testing"
)

func TestPolicyCheck(t *testing.T) {
	for _, tc := range []struct {
		name  string
		mount Mount
		dir   string
		want  string // in the error; "" for none
	}{
		{"read bind", Mount{Kind: MountRead, Source: "/usr", Target: "/usr"}, "/w", ""},
		{"write bind", Mount{Kind: MountWrite, Source: "/w", Target: "/w"}, "/w", ""},
		{"a name beginning as /dev does", Mount{Kind: MountWrite, Source: "/devices", Target: "/devices"}, "/devices", ""},
		{"a name beginning as /proc does", Mount{Kind: MountTmpfs, Target: "/process"}, "/w", ""},
		{"relative target", Mount{Kind: MountTmpfs, Target: "w"}, "/w", "not an absolute path"},
		{"relative source", Mount{Kind: MountRead, Source: "usr", Target: "/usr"}, "/w", "not an absolute path"},
		{"unknown kind", Mount{Kind: "bind", Source: "/usr", Target: "/usr"}, "/w", "unknown kind"},
		{"stage without stage", Mount{Kind: MountStage, Source: "/w/.git", Target: "/w/.git"}, "/w", "absolute source and stage"},
		{"relative dir", Mount{Kind: MountTmpfs, Target: "/w"}, "w", "not an absolute path"},
		// The launcher makes these itself, before the policy's mounts.
		{"the root", Mount{Kind: MountRead, Source: "/", Target: "/"}, "/w", "is the root"},
		{"the root, unclean", Mount{Kind: MountRead, Source: "/", Target: "/usr/.."}, "/w", "is the root"},
		{"/dev", Mount{Kind: MountTmpfs, Target: "/dev"}, "/w", "in /dev"},
		{"in /dev", Mount{Kind: MountWrite, Source: "/dev/shm/w", Target: "/dev/shm/w"}, "/dev/shm/w", "in /dev"},
		{"in /dev, unclean", Mount{Kind: MountRead, Source: "/dev/sda", Target: "/w/../dev//sda"}, "/w", "in /dev"},
		{"/proc", Mount{Kind: MountRead, Source: "/proc", Target: "/proc"}, "/w", "in /proc"},
		{"in /proc", Mount{Kind: MountHide, Target: "/proc/kcore"}, "/w", "in /proc"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &Policy{Mode: ModeWorkspaceWrite, Network: NetworkOff, Dir: tc.dir, Mounts: []Mount{tc.mount}}
			err := p.Check()
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("Check: %v, want nil", err)
			case tc.want != "" && err == nil:
				t.Fatalf("Check: nil, want an error with %q", tc.want)
			case tc.want != "" && !strings.Contains(err.Error(), tc.want):
				t.Fatalf("Check: %v, want %q in it", err, tc.want)
			}
		})
	}
}
