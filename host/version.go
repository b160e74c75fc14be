package host

import (
	"runtime/debug"
	"strings"
)

// modulePath is toolhost's module, looked for among a binary's
// dependencies when toolhost is embedded in another program.
const modulePath = "github.com/toolhost/toolhost"

// Version says which toolhost this binary holds: the module version the
// go command recorded and, when it recorded the version control state,
// the commit, its time and whether the tree had uncommitted changes. A
// binary built without that state (by go test, with -buildvcs=false, or
// outside a checkout) says so rather than inventing a version. Embedded
// in another program, it is the toolhost module that program requires.
// The command line prints it for --version and the MCP server reports it
// as serverInfo.version.
func Version() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "(unknown): the binary carries no build information"
	}
	return versionOf(bi)
}

// versionOf is Version for the build information bi.
func versionOf(bi *debug.BuildInfo) string {
	if bi.Main.Path != modulePath {
		for _, dep := range bi.Deps {
			if dep.Path != modulePath {
				continue
			}
			if dep.Replace != nil {
				return dep.Version + " (replaced by " + strings.TrimSpace(dep.Replace.Path+" "+dep.Replace.Version) + ")"
			}
			return dep.Version
		}
		return "(unknown): " + modulePath + " is not among the binary's modules"
	}
	version := bi.Main.Version
	if version == "" {
		version = "(devel)"
	}
	var revision, at string
	modified := false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			revision = s.Value
		case "vcs.time":
			at = s.Value
		case "vcs.modified":
			modified = s.Value == "true"
		}
	}
	if revision == "" {
		return version + ", without version control information (built by go test, with -buildvcs=false, or outside a checkout)"
	}
	var b strings.Builder
	b.WriteString(version + ", commit " + revision)
	if at != "" {
		b.WriteString(" of " + at)
	}
	if modified {
		b.WriteString(", with uncommitted changes")
	}
	return b.String()
}
