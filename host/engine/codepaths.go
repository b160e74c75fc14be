package engine

import (
	"fmt"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/bmatcuk/doublestar/v4"
	"github.com/toolhost/toolhost/abi"
	"github.com/toolhost/toolhost/host/internal/sandbox"
)

// Some files make other programs run code: a shell rc file, .envrc, an
// editor's task settings, a CI workflow, and a git directory, whose config
// can name a program git runs (core.fsmonitor, hooks). A call that writes
// one is judged by what it makes possible, not by whether it only creates
// files (issue 10 item 2):
//
//   - a path matching Policy.CodePatterns is never auto-approved as a new
//     file;
//   - a write that would lay out a git directory (HEAD beside objects/ and
//     refs/, or a config beside objects/ and refs/) always asks a person,
//     whatever the approval mode, allowlist or prompt_side_effects say:
//     git opens such a directory as a bare repository (its default
//     safe.bareRepository=all) wherever it is, with no .git in its path.

// codePath returns the first of paths matching one of the code patterns,
// and the pattern. Patterns match as the sandbox's do, against the path
// relative to its root and the absolute path; case is ignored everywhere,
// since asking too often is the safe side of a case-insensitive disk.
func (p Policy) codePath(paths []sandbox.Path) (sandbox.Path, string, bool) {
	for _, sp := range paths {
		rel := strings.ToLower(sp.Rel)
		abs := strings.ToLower(filepath.ToSlash(sp.Abs))
		for _, pat := range p.CodePatterns {
			low := strings.ToLower(pat)
			if doublestar.MatchUnvalidated(low, abs) || (rel != "." && doublestar.MatchUnvalidated(low, rel)) {
				return sp, pat, true
			}
		}
	}
	return sandbox.Path{}, "", false
}

// batchWrites is what the calls planned so far in a batch may write: the
// written paths and every directory above them, per root, case-folded.
type batchWrites map[string]bool

func writeKey(rootDir, rel string) string {
	return strings.ToLower(rootDir + "\x00" + rel)
}

// add records that p will be written.
func (w batchWrites) add(p sandbox.Path) {
	for rel := p.Rel; rel != "." && rel != "/" && rel != ""; rel = path.Dir(rel) {
		w[writeKey(p.RootDir, rel)] = true
	}
}

// gitParts are the names that make a directory a git directory.
var gitParts = []string{"head", "objects", "refs", "config"}

// gitLayout returns why writing paths needs a person's confirmation
// because it would lay out a git directory, or "". It counts what is on
// disk, what the batch's earlier calls write (earlier) and what this call
// writes (paths).
func gitLayout(paths []sandbox.Path, earlier batchWrites) string {
	mine := batchWrites{}
	for _, p := range paths {
		mine.add(p)
	}
	for _, p := range paths {
		parts := strings.Split(p.Rel, "/")
		if p.Rel == "." {
			continue
		}
		// Every directory above the written file, the root included, is
		// a candidate: the component below it is what this write adds.
		for i := range parts {
			dir := path.Join(parts[:i]...)
			if dir == "" {
				dir = "."
			}
			part := strings.ToLower(parts[i])
			if !slices.Contains(gitParts, part) {
				continue
			}
			last := i == len(parts)-1
			if (part == "head" || part == "config") && !last {
				continue // a directory named HEAD or config is not one
			}
			has := func(name string) bool { return hasEntry(p, dir, name, earlier, mine) }
			if !has("objects") || !has("refs") || (part != "config" && !has("HEAD")) {
				continue
			}
			return gitReason(dir, part)
		}
	}
	return ""
}

// gitReason is the confirmation's reason for a write making dir a git
// directory.
func gitReason(dir, part string) string {
	where := dir + "/"
	if dir == "." {
		where = "the root directory"
	}
	if part == "config" {
		// The content is not inspected: an [include] section can pull in
		// core settings from any other file.
		return fmt.Sprintf("%s would hold a git config beside objects/ and refs/ (a bare git repository): git run there could execute code from it (core.fsmonitor)", where)
	}
	return fmt.Sprintf("%s would become a git repository (HEAD beside objects/ and refs/): git run there could execute code from it", where)
}

// hasEntry reports whether dir (relative to p's root) holds name: on
// disk, of any type (a symlink to a directory serves git as well), or
// written by this batch.
func hasEntry(p sandbox.Path, dir, name string, writes ...batchWrites) bool {
	rel := name
	if dir != "." {
		rel = dir + "/" + name
	}
	for _, w := range writes {
		if w[writeKey(p.RootDir, rel)] {
			return true
		}
	}
	if p.Root == nil {
		return false
	}
	// On a case-insensitive disk Lstat finds any case, as git would; on
	// a case-sensitive one git looks for these exact names.
	_, err := p.Root.Lstat(filepath.FromSlash(rel))
	return err == nil
}

// writtenPaths is every path the call may write, as resolved: the paths
// named by its create_args (or, without them, its path_args), and for a
// tool that writes unnamed paths, the files of an LP1 patch in its
// arguments. Only tools with fs.write write anything.
func (e *Engine) writtenPaths(m abi.Manifest, decoded any, resolved map[string]sandbox.Path) []sandbox.Path {
	if !slices.Contains(m.Capabilities, abi.CapFSWrite) {
		return nil
	}
	obj, _ := decoded.(map[string]any)
	named := m.CreateArgs
	if len(named) == 0 {
		named = m.PathArgs
	}
	var out []sandbox.Path
	for _, name := range named {
		s, _ := obj[name].(string)
		if p, ok := resolved[pathArgText(name, s)]; ok {
			out = append(out, p)
		}
	}
	if m.WritesUnnamedPaths {
		keys := make([]string, 0, len(obj))
		for k := range obj {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			if s, ok := obj[k].(string); ok {
				out = append(out, e.resolvePatch(s)...)
			}
		}
	}
	return out
}
