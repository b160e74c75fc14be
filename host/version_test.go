package host

import (
	"runtime/debug"
	"strings"
	"testing"
)

// The version says what the build recorded, and says so when it recorded
// nothing, never a made-up number.
func TestVersionOf(t *testing.T) {
	vcs := func(kv ...string) []debug.BuildSetting {
		var s []debug.BuildSetting
		for i := 0; i+1 < len(kv); i += 2 {
			s = append(s, debug.BuildSetting{Key: kv[i], Value: kv[i+1]})
		}
		return s
	}
	tests := []struct {
		name string
		bi   debug.BuildInfo
		want string
	}{
		{"go test or -buildvcs=false",
			debug.BuildInfo{Main: debug.Module{Path: modulePath, Version: "(devel)"}},
			"(devel), without version control information (built by go test, with -buildvcs=false, or outside a checkout)"},
		{"a checkout with changes",
			debug.BuildInfo{Main: debug.Module{Path: modulePath, Version: "v0.0.0-20261128064851-0315e76fd035+dirty"},
				Settings: vcs("vcs", "git", "vcs.revision", "0315e76fd0350f3a2a87d225d504d82328026b71", "vcs.time", "2026-11-28T06:48:51Z", "vcs.modified", "true")},
			"v0.0.0-20261128064851-0315e76fd035+dirty, commit 0315e76fd0350f3a2a87d225d504d82328026b71 of 2026-11-28T06:48:51Z, with uncommitted changes"},
		{"a tagged, clean checkout",
			debug.BuildInfo{Main: debug.Module{Path: modulePath, Version: "v1.2.0"},
				Settings: vcs("vcs.revision", "abc123", "vcs.modified", "false")},
			"v1.2.0, commit abc123"},
		{"embedded in another program",
			debug.BuildInfo{Main: debug.Module{Path: "example.com/agent", Version: "(devel)"},
				Deps: []*debug.Module{{Path: "example.com/other", Version: "v9.9.9"}, {Path: modulePath, Version: "v1.3.0"}}},
			"v1.3.0"},
		{"embedded, replaced by a local copy",
			debug.BuildInfo{Main: debug.Module{Path: "example.com/agent"},
				Deps: []*debug.Module{{Path: modulePath, Version: "v1.3.0", Replace: &debug.Module{Path: "../toolhost"}}}},
			"v1.3.0 (replaced by ../toolhost)"},
		{"not linked in at all",
			debug.BuildInfo{Main: debug.Module{Path: "example.com/agent"}},
			"(unknown): " + modulePath + " is not among the binary's modules"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := versionOf(&tt.bi); got != tt.want {
				t.Errorf("versionOf = %q\nwant        %q", got, tt.want)
			}
		})
	}
	// The test binary itself is built by go test: no version control
	// information, and the version says so.
	if v := Version(); !strings.Contains(v, "without version control information") {
		t.Errorf("Version() in a test binary = %q, want it to say it has no version control information", v)
	}
}
