package hostfn

import (
	"path/filepath"
	"slices"
	"strings"

	"github.com/toolhost/toolhost/abi"
	"github.com/toolhost/toolhost/host/internal/sandbox"
)

// ReadScope is what a call may read, stat, list or diff against: the
// paths its arguments name, and for a tool whose manifest says it reads
// what it finds (reads_under_path_args: list_directory, a search), any
// path below them. A call may touch only the paths its arguments name
// (sdk/README.md); the fs.write grants (Files.Writes) hold writes to
// that, and this holds reads to it, so a plugin given "notes.txt" cannot
// hand the model the root's other files.
type ReadScope struct {
	// Paths are the named paths, by canonical absolute path
	// (sandbox.Path.Abs).
	Paths map[string]bool
	// Below lets the call read anything below a named path too.
	Below bool
}

// allows reports whether the scope covers p.
func (s *ReadScope) allows(p sandbox.Path) bool {
	if s.Paths[p.Abs] {
		return true
	}
	if !s.Below {
		return false
	}
	for dir := p.Abs; ; {
		parent := filepath.Dir(dir)
		if parent == dir {
			return false
		}
		if s.Paths[parent] {
			return true
		}
		dir = parent
	}
}

// resolveRead resolves a path the plugin reads (fs_stat, fs_read,
// fs_read_lines, fs_list, fs_diff, and the files a commit diffs) and
// refuses one outside the call's read scope. A nil Reads lets the call
// read wherever the sandbox allows.
func (c *Call) resolveRead(fn, name string) (sandbox.Path, error) {
	p, err := c.resolve(name)
	if err != nil || c.Readable == nil || c.Readable.allows(p) {
		return p, err
	}
	return p, c.notNamed(fn, name, p)
}

// notNamed is the refusal of a read outside the call's scope. It names
// the path as the plugin gave it and what the call may read, never the
// file's content or whether it exists.
func (c *Call) notNamed(fn, name string, p sandbox.Path) error {
	allowed := make([]string, 0, len(c.Readable.Paths))
	for abs := range c.Readable.Paths {
		allowed = append(allowed, c.displayAbs(abs))
	}
	slices.Sort(allowed)
	what := "the paths its arguments name"
	if c.Readable.Below {
		what = "the paths its arguments name and what is below them"
	}
	msg := fn + ": call " + c.CallID + " may read only " + what + " (" + strings.Join(allowed, ", ") + "); " +
		name + " was not named, so it was not read. To read it, send a call whose arguments name it"
	if len(allowed) == 0 {
		msg = fn + ": call " + c.CallID + " may not read any file: its arguments name none; " + name + " was not read"
	}
	return &Error{
		Status: abi.StatusDenied, Kind: abi.KindSandboxViolation, Message: msg,
		Details: map[string]any{"reason": string(reasonNotNamed), "attempted": name, "allowed": allowed},
	}
}
