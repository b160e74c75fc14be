package engine

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/bmatcuk/doublestar/v4"
	"github.com/toolhost/toolhost/abi"
	"github.com/toolhost/toolhost/host/internal/config"
	"github.com/toolhost/toolhost/host/internal/sandbox"
)

// Some files make other programs run code: a shell rc file, .envrc, an
// editor's task settings, a CI workflow, and a git directory, whose config
// can name a program git runs (core.fsmonitor, hooks). A call that writes
// one is judged by what it makes possible, not by whether it only creates
// files:
//
//   - a path matching Policy.CodePatterns is never auto-approved as a new
//     file, nor is a new file that a symlink matching one reaches (the
//     repository may ship ".envrc -> .env.local" with no .env.local);
//   - a write into a directory that is or would become a git directory
//     always asks a person, whatever the approval mode, allowlist or
//     prompt_side_effects say: git opens such a directory as a bare
//     repository (its default safe.bareRepository=all) wherever it is,
//     with no .git in its path. See gitDir for what counts.

// codeWrite says why a call that only creates paths still runs code
// when written ("<path>, which matches <pattern>
// (tools.approval.code_patterns)"), or "" when none does. Patterns match
// as the sandbox's do, against the path relative to its root and the
// absolute path; case is ignored everywhere, since asking too often is the
// safe side of a case-insensitive disk.
//
// When no path matches and the call would otherwise run unasked, the
// symlinks that reach those files are matched too (see linksTo), a file
// an existing build definition includes counts as a match (includedBy),
// and a directory too large to look through for links counts as one.
func (p Policy) codeWrite(paths []sandbox.Path) string {
	matches := func(what, pattern string) string {
		why := fmt.Sprintf("%s, which matches %s (tools.approval.code_patterns)", what, pattern)
		if loader := config.CodePathLoader(pattern); loader != "" {
			why += ", loaded by " + loader
		}
		return why
	}
	if sp, pat, ok := p.matchCode(paths); ok {
		return matches(sp.Rel, pat)
	}
	if !p.newFilesUnasked() || !allNew(paths) {
		return ""
	}
	links, unseen := linksTo(paths)
	for _, l := range links {
		if _, pat, ok := p.matchCode([]sandbox.Path{l.Path}); ok {
			return matches(fmt.Sprintf("%s (through a link: the file written is %s)", l.Rel, l.target), pat)
		}
	}
	if why := includedBy(paths); why != "" {
		return why
	}
	if unseen.dir == "" {
		return ""
	}
	where := fmt.Sprintf("among the more than %d entries of %s", maxLinkScanEntries, dirName(unseen.dir))
	if unseen.tooMany {
		where = fmt.Sprintf("in %s, past the %d directories looked through", dirName(unseen.dir), maxLinkScanDirs)
	}
	return fmt.Sprintf("%s, which a link %s may reach, and such a link may match tools.approval.code_patterns", unseen.written, where)
}

func (p Policy) matchCode(paths []sandbox.Path) (sandbox.Path, string, bool) {
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

// newFilesUnasked reports whether the policy can let a call that only
// creates files run unasked: only then do code patterns decide anything,
// and only then is looking for links worth its cost. (Whether the tool
// is allowlisted is not known here; an allowlisted call looks in vain.)
func (p Policy) newFilesUnasked() bool {
	return len(p.CodePatterns) > 0 && p.AutoApproveNewFiles && !p.SideEffectsUnprompted &&
		p.Approval != ApprovalAuto && p.Approval != ApprovalDeny
}

// allNew reports whether there are paths and none exists yet.
func allNew(paths []sandbox.Path) bool {
	for _, p := range paths {
		if _, err := p.Lstat(); !errors.Is(err, fs.ErrNotExist) {
			return false
		}
	}
	return len(paths) > 0
}

// batchWrites is what the calls planned so far in a batch may write: the
// written paths (as files) and every directory above them, per root,
// case-folded.
type batchWrites map[string]writeKind

// writeKind says how a batch writes a name: as a file, as a directory
// holding written files, or both (two calls disagreeing).
type writeKind uint8

const (
	wroteFile writeKind = 1 << iota
	wroteDir
)

func writeKey(rootDir, rel string) string {
	return strings.ToLower(rootDir + "\x00" + rel)
}

// add records that p will be written.
func (w batchWrites) add(p sandbox.Path) {
	kind := wroteFile
	for rel := p.Rel; rel != "." && rel != "/" && rel != ""; rel = path.Dir(rel) {
		w[writeKey(p.RootDir, rel)] |= kind
		kind = wroteDir
	}
}

// gitKind is what makes a directory a git directory, for the reason shown.
type gitKind int

const (
	notGit gitKind = iota
	gitHead
	gitConfig
	gitCommondir
)

// gitDir says whether dir, relative to p's root, is or would be a git
// directory, counting what is on disk and what writes (the batch's and
// this call's) add. git's is_git_directory wants a HEAD, and objects/
// and refs/ either beside it or in the directory a "commondir" file
// names, from which it also reads the config. So:
//
//   - HEAD beside a commondir is one: where commondir points is not
//     inspected, since objects/, refs/ and a hostile config can be laid
//     out there first, by files whose names say nothing;
//   - objects/ and refs/ beside HEAD, or beside a config (the HEAD may
//     come later, or through a link), are one, whichever comes last.
//
// A worktree's admin directory also holds a "gitdir" file, but git only
// writes it (for "git worktree prune"); the pointer git follows to find a
// repository is a .git file, which the sandbox protects.
func gitDir(p sandbox.Path, dir string, writes ...batchWrites) gitKind {
	has := func(name string, want writeKind) bool { return hasEntry(p, dir, name, want, writes...) }
	head := has("HEAD", wroteFile)
	switch {
	case head && has("commondir", wroteFile):
		return gitCommondir
	case !has("objects", wroteDir) || !has("refs", wroteDir):
		return notGit
	case head:
		return gitHead
	case has("config", wroteFile):
		return gitConfig
	}
	return notGit
}

// gitLayout returns why writing paths needs a person's confirmation
// because it writes into a directory that is or would become a git
// directory, or "". It counts what is on disk, what the batch's earlier
// calls write (earlier) and what this call writes (paths).
//
// Links need no search here (unlike codePath's): a link on disk counts
// as the entry it is named, dangling or not, and a link that reaches a
// written file from a directory above it lies in a directory this
// checks, so "vendor/HEAD -> h" makes writing vendor/h a write into a git
// directory.
func gitLayout(paths []sandbox.Path, earlier batchWrites) string {
	mine := batchWrites{}
	for _, p := range paths {
		mine.add(p)
	}
	seen := map[string]bool{}
	for _, p := range paths {
		if p.Rel == "." {
			continue
		}
		// Every directory above the written file, the root included.
		for dir := path.Dir(p.Rel); ; dir = path.Dir(dir) {
			if k := writeKey(p.RootDir, dir); !seen[k] {
				seen[k] = true
				if kind := gitDir(p, dir, earlier, mine); kind != notGit {
					return gitReason(dir, kind, gitDir(p, dir, earlier) != notGit)
				}
			}
			if dir == "." {
				break
			}
		}
	}
	return ""
}

// gitReason is the confirmation's reason for a write into dir, which is
// (already) or would become a git directory.
func gitReason(dir string, kind gitKind, already bool) string {
	where := dirName(dir)
	if already {
		what := map[gitKind]string{
			gitHead:      "HEAD beside objects/ and refs/",
			gitConfig:    "a git config beside objects/ and refs/",
			gitCommondir: "HEAD beside a commondir naming its objects, refs and config",
		}[kind]
		return fmt.Sprintf("%s is a git directory (%s): git run there could execute code from what is written in it (hooks, config)", where, what)
	}
	switch kind {
	case gitCommondir:
		return fmt.Sprintf("%s would become a git directory whose objects, refs and config are elsewhere (commondir): git run there could execute code from it", where)
	case gitConfig:
		// The content is not inspected: an [include] section can pull in
		// core settings from any other file.
		return fmt.Sprintf("%s would hold a git config beside objects/ and refs/ (a bare git repository): git run there could execute code from it (core.fsmonitor)", where)
	}
	return fmt.Sprintf("%s would become a git repository (HEAD beside objects/ and refs/): git run there could execute code from it", where)
}

// dirName is a directory relative to its root as a reason names it.
func dirName(dir string) string {
	if dir == "." {
		return "the root directory"
	}
	return dir + "/"
}

// hasEntry reports whether dir (relative to p's root) holds name: on
// disk, or written by the batch as want says (a file, or a directory
// holding written files). On disk, a file must not be a directory; a
// directory may be of any type (a symlink to one serves git as well).
func hasEntry(p sandbox.Path, dir, name string, want writeKind, writes ...batchWrites) bool {
	rel := name
	if dir != "." {
		rel = dir + "/" + name
	}
	for _, w := range writes {
		if w[writeKey(p.RootDir, rel)]&want != 0 {
			return true
		}
	}
	if p.Root == nil {
		return false
	}
	// On a case-insensitive disk Lstat finds any case, as git would; on
	// a case-sensitive one git looks for these exact names.
	fi, err := p.Root.Lstat(filepath.FromSlash(rel))
	return err == nil && (want != wroteFile || !fi.IsDir())
}

// Bounds on looking for links (linksTo): the entries read from one
// directory, and the directories listed for one call.
const (
	maxLinkScanEntries = 4096
	maxLinkScanDirs    = 128
	maxLinkHops        = 40 // as Linux's own limit on following links
)

// linkPath is a path through a symlink that reaches a written path: the
// link's path with the rest of the written path below it, judged as if
// it were written.
type linkPath struct {
	sandbox.Path
	target string // the written path it reaches, relative to the root
}

// unseenLinks names a directory linksTo did not look through, and the
// written path a link there might reach; tooMany says the call had too
// many directories to look through, rather than this one too many entries.
type unseenLinks struct {
	dir, written string
	tooMany      bool
}

// linksTo returns the paths through which symlinks reach the written
// paths that do not exist yet (a dangling link gets a target, or a new
// file appears below a linked directory). It looks at the symlinks in
// each written file's own directory and in every directory above it up
// to its root, each listed once, and follows each (and any links it
// leads through) within the root.
//
// Its limit: a link anywhere else is not seen; "sub/.envrc ->
// ../.env.local" reaches .env.local from a directory that is not above
// it. Finding every link would mean walking the whole root on every
// write. A directory with more than maxLinkScanEntries entries, or
// directories past maxLinkScanDirs, are not looked through: the first
// such is returned as unseen, so the caller can stay cautious.
func linksTo(paths []sandbox.Path) (out []linkPath, unseen unseenLinks) {
	listed := map[string]bool{}
	for _, p := range paths {
		if p.Root == nil || p.Rel == "." {
			continue
		}
		for dir := path.Dir(p.Rel); ; dir = path.Dir(dir) {
			if key := writeKey(p.RootDir, dir); !listed[key] {
				listed[key] = true
				names, ok := []string(nil), false
				tooMany := len(listed) > maxLinkScanDirs
				if !tooMany {
					names, ok = symlinksIn(p.Root, dir)
				}
				if !ok && unseen.dir == "" {
					unseen = unseenLinks{dir: dir, written: p.Rel, tooMany: tooMany}
				}
				for _, name := range names {
					out = append(out, reaching(p.Root, p.RootDir, path.Join(dir, name), paths)...)
				}
			}
			if dir == "." {
				break
			}
		}
	}
	return out, unseen
}

// symlinksIn returns the names of the symlinks in dir, relative to r,
// and false when dir has more than maxLinkScanEntries entries. A
// directory that cannot be listed (it does not exist yet) has none.
func symlinksIn(r *os.Root, dir string) ([]string, bool) {
	f, err := r.Open(filepath.FromSlash(dir))
	if err != nil {
		return nil, true
	}
	defer f.Close()
	var names []string
	for n := 0; ; {
		batch, err := f.ReadDir(256)
		n += len(batch)
		if n > maxLinkScanEntries {
			return nil, false
		}
		for _, de := range batch {
			if de.Type()&fs.ModeSymlink != 0 {
				names = append(names, de.Name())
			}
		}
		if err != nil || len(batch) == 0 {
			return names, true // io.EOF, or what could be read
		}
	}
}

// reaching returns the paths through the link at rel that reach one of
// paths (in the same root): rel itself when the link leads to the written
// file, rel with the rest below it when it leads to a directory above it.
func reaching(r *os.Root, rootDir, rel string, paths []sandbox.Path) []linkPath {
	target, ok := followLink(r, rootDir, rel)
	if !ok {
		return nil
	}
	var out []linkPath
	for _, p := range paths {
		if p.RootDir != rootDir {
			continue
		}
		// Case is ignored, as in codePath.
		var through string
		switch n := len(target); {
		case strings.EqualFold(p.Rel, target):
			through = rel
		case target == ".":
			through = rel + "/" + p.Rel
		case len(p.Rel) > n && p.Rel[n] == '/' && strings.EqualFold(p.Rel[:n], target):
			through = rel + p.Rel[n:]
		default:
			continue
		}
		lp := linkPath{Path: p, target: p.Rel}
		lp.Rel, lp.Attempted = through, through
		lp.Abs = filepath.Join(rootDir, filepath.FromSlash(through))
		out = append(out, lp)
	}
	return out
}

// followLink returns where the symlink at rel leads, relative to the
// root, following the links on the way as the kernel would; a missing
// component ends the walk with the rest taken as written, as
// sandbox.Resolve does. It reports false for a target outside the root,
// a loop, or a link that cannot be read.
func followLink(r *os.Root, rootDir, rel string) (string, bool) {
	cur := "." // canonical: no links in it
	pending := strings.Split(rel, "/")
	for hops := 0; len(pending) > 0; {
		c := pending[0]
		pending = pending[1:]
		switch c {
		case "", ".":
			continue
		case "..":
			if cur == "." {
				return "", false // above the root
			}
			cur = path.Dir(cur)
			continue
		}
		next := path.Join(cur, c)
		fi, err := r.Lstat(filepath.FromSlash(next))
		switch {
		case err != nil:
			return path.Join(append([]string{next}, pending...)...), true
		case fi.Mode()&fs.ModeSymlink == 0:
			cur = next
			continue
		}
		if hops++; hops > maxLinkHops {
			return "", false
		}
		target, err := r.Readlink(filepath.FromSlash(next))
		if err != nil {
			return "", false
		}
		if filepath.IsAbs(target) {
			inside, err := filepath.Rel(rootDir, filepath.Clean(target))
			if err != nil || !filepath.IsLocal(inside) {
				return "", false
			}
			target, cur = inside, "."
		}
		pending = append(strings.Split(filepath.ToSlash(target), "/"), pending...)
	}
	return cur, true
}

// writtenPaths is every path the call may write, as resolved: the paths
// named by its create_args (or, without them, its path_args), and for a
// tool that writes unnamed paths, the files of an LP1 patch in its
// arguments. Only tools with fs.write write anything.
func (e *Engine) writtenPaths(m abi.Manifest, decoded any, resolved map[string]sandbox.Path) []sandbox.Path {
	// A move writes its destination, and may make a git directory of
	// the one it lands in as a write would (a HEAD beside objects/).
	if !slices.Contains(m.Capabilities, abi.CapFSWrite) && !slices.Contains(m.Capabilities, abi.CapFSDelete) {
		return nil
	}
	var out []sandbox.Path
	for _, f := range pathArgs(writeArgs(m), decoded) {
		if f.Absent {
			continue
		}
		if p, ok := resolved[argText(f)]; ok {
			out = append(out, p)
		}
	}
	if m.WritesUnnamedPaths {
		obj, _ := decoded.(map[string]any)
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
