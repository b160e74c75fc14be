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

// matches says that what matches a code pattern, and which program
// loads such files when the pattern is one toolhost knows.
func matches(what, pattern string) string {
	why := fmt.Sprintf("%s, which matches %s (tools.approval.code_patterns)", what, pattern)
	if loader := config.CodePathLoader(pattern); loader != "" {
		why += ", loaded by " + loader
	}
	return why
}

// moveCode says why a call that may move one of its paths onto another
// changes a file tools run code from: a path it names, or the path an
// entry of a tree it moves would have at another named path, matches
// Policy.CodePatterns, or a path it names that does not exist yet is one
// an existing build definition includes (includedBy). "" when none does.
// Which named path is the source is not known here, so each counts as a
// destination; moving a code file away changes what runs too.
func (p Policy) moveCode(lw layoutWrites, trees []movedTree) string {
	if !lw.moves || len(p.CodePatterns) == 0 {
		return ""
	}
	if sp, pat, ok := p.matchCode(lw.paths); ok {
		return matches(sp.Rel, pat)
	}
	for _, t := range trees {
		for _, q := range lw.paths {
			if q.Abs == t.top.Abs {
				continue
			}
			landed := make([]sandbox.Path, len(t.entries))
			for i, e := range t.entries {
				rel := path.Join(q.Rel, e.rel)
				landed[i] = sandbox.Path{RootDir: q.RootDir, Rel: rel, Abs: filepath.Join(q.RootDir, filepath.FromSlash(rel)), Attempted: path.Join(t.top.Rel, e.rel)}
			}
			if sp, pat, ok := p.matchCode(landed); ok {
				return matches(fmt.Sprintf("%s (%s moved there)", sp.Rel, sp.Attempted), pat)
			}
		}
	}
	var absent []sandbox.Path
	for _, q := range lw.paths {
		if _, err := q.Lstat(); errors.Is(err, fs.ErrNotExist) {
			absent = append(absent, q)
		}
	}
	if len(absent) == 0 {
		return ""
	}
	return includedBy(absent)
}

func (p Policy) matchCode(paths []sandbox.Path) (sandbox.Path, string, bool) {
	lows := make([]string, len(p.CodePatterns))
	for i, pat := range p.CodePatterns {
		lows[i] = strings.ToLower(pat)
	}
	for _, sp := range paths {
		rel := strings.ToLower(sp.Rel)
		abs := strings.ToLower(filepath.ToSlash(sp.Abs))
		for i, low := range lows {
			if doublestar.MatchUnvalidated(low, abs) || (rel != "." && doublestar.MatchUnvalidated(low, rel)) {
				return sp, p.CodePatterns[i], true
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
// written paths (each as a file or a directory: see layoutWrites), what
// a tree moved onto one of them holds, and every directory above them,
// per root, case-folded.
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

// add records that p will be written, as a file or a directory, and
// will be in every directory above it.
func (w batchWrites) add(p sandbox.Path) {
	w.addAs(p.RootDir, p.Rel, wroteFile|wroteDir)
}

// addAs records that rel, in the root rootDir, will be of kind, and will
// be in every directory above it.
func (w batchWrites) addAs(rootDir, rel string, kind writeKind) {
	for ; rel != "." && rel != "/" && rel != ""; rel = path.Dir(rel) {
		w[writeKey(rootDir, rel)] |= kind
		kind = wroteDir
	}
}

// record adds what a call may write: its paths, and what every tree it
// may move holds at each of its other paths, as on disk (trees) and as
// the batch's earlier calls write it (earlier, which may be w itself).
func (w batchWrites) record(lw layoutWrites, trees []movedTree, earlier batchWrites) {
	for _, p := range lw.paths {
		w.add(p)
	}
	type carried struct {
		rootDir, rel string
		kind         writeKind
	}
	var add []carried
	for _, t := range trees {
		prefix := writeKey(t.top.RootDir, t.top.Rel) + "/"
		for _, q := range lw.paths {
			if q.Abs == t.top.Abs {
				continue
			}
			for _, e := range t.entries {
				add = append(add, carried{q.RootDir, path.Join(q.Rel, e.rel), e.kind})
			}
			for k, kind := range earlier {
				if rest, ok := strings.CutPrefix(k, prefix); ok {
					add = append(add, carried{q.RootDir, path.Join(q.Rel, rest), kind})
				}
			}
		}
	}
	for _, c := range add {
		w.addAs(c.rootDir, c.rel, c.kind)
	}
}

// layoutWrites is what a call may lay out, as the git layout and code
// path checks judge it.
type layoutWrites struct {
	// paths may each become a file or a directory: fs_commit lets a tool
	// holding fs.write make either at a path it may write (a file, a new
	// directory), and a move's destination becomes whatever its source
	// is, a file named HEAD or a directory named objects.
	paths []sandbox.Path
	// moves says one of paths may be moved onto another with everything
	// below it: the tool holds fs.delete and the call names two paths or
	// more.
	moves bool
}

// layoutOf is what a call of m writing paths (writtenPaths) may lay out.
// A call that can only remove (fs.delete without fs.write, one path)
// lays out nothing: removing an entry never makes a git directory.
func layoutOf(m abi.Manifest, paths []sandbox.Path) layoutWrites {
	distinct := map[string]bool{}
	for _, p := range paths {
		distinct[p.Abs] = true
	}
	moves := slices.Contains(m.Capabilities, abi.CapFSDelete) && !m.Additive && len(distinct) > 1
	if !moves && !slices.Contains(m.Capabilities, abi.CapFSWrite) {
		return layoutWrites{}
	}
	return layoutWrites{paths: paths, moves: moves}
}

// maxMoveScanEntries bounds what is looked through of a tree a call may
// move: as many entries as fs_commit lets one move take (hostfn's
// maxTreeEntries). A larger tree is refused when the call runs.
const maxMoveScanEntries = 10000

// movedTree is a directory a call may move, and what it holds.
type movedTree struct {
	top sandbox.Path
	// entries are what is below top: each name relative to top and its
	// kind (a link as either).
	entries []movedEntry
	// git is the first directory of the tree, relative to the root, that
	// is a git directory (of kind gitKind); "" when none is.
	git     string
	gitKind gitKind
}

type movedEntry struct {
	rel  string
	kind writeKind
}

// movedTrees lists the directories among lw's paths, when the call may
// move them, and what each holds, looking for a git directory in each:
// a bare repository has no name saying so, and moved anywhere it is one
// there. earlier is what the batch's earlier calls write, which counts
// as in the tree. Links are entries, never followed, as a move takes
// them.
func movedTrees(lw layoutWrites, earlier batchWrites) []movedTree {
	if !lw.moves {
		return nil
	}
	var out []movedTree
	for _, top := range lw.paths {
		if top.Root == nil || top.Rel == "." {
			continue
		}
		if fi, err := top.Lstat(); err != nil || !fi.IsDir() {
			continue
		}
		t := movedTree{top: top}
		queue := []string{top.Rel}
		for n := 0; len(queue) > 0 && n <= maxMoveScanEntries; {
			dir := queue[0]
			queue = queue[1:]
			if t.git == "" {
				if k := gitDir(top, dir, earlier); k != notGit {
					t.git, t.gitKind = dir, k
				}
			}
			f, err := top.Root.Open(filepath.FromSlash(dir))
			if err != nil {
				continue
			}
			list, _ := f.ReadDir(maxMoveScanEntries + 1 - n)
			f.Close()
			n += len(list)
			for _, de := range list {
				rel := path.Join(dir, de.Name())
				kind := wroteFile | wroteDir // a link serves git as either
				switch {
				case de.IsDir():
					kind = wroteDir
					queue = append(queue, rel)
				case de.Type().IsRegular():
					kind = wroteFile
				}
				t.entries = append(t.entries, movedEntry{rel: rel[len(top.Rel)+1:], kind: kind})
			}
		}
		out = append(out, t)
	}
	return out
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
//
// A call that may move a tree (trees, from movedTrees) lays out a git
// directory when the tree holds one, and its destination holds what the
// tree does.
func gitLayout(lw layoutWrites, trees []movedTree, earlier batchWrites) string {
	for _, t := range trees {
		if t.git != "" {
			return fmt.Sprintf("%s holds a git directory (%s), which the move carries with it: git run where it lands could execute code from it",
				t.top.Rel, gitWhat(t.git, t.gitKind))
		}
	}
	mine := batchWrites{}
	mine.record(lw, trees, earlier)
	seen := map[string]bool{}
	for _, p := range lw.paths {
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
		return fmt.Sprintf("%s is a git directory (%s): git run there could execute code from what is written in it (hooks, config)", where, gitWhat("", kind))
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

// gitWhat says what makes a directory a git directory; with dir, it
// names the directory first.
func gitWhat(dir string, kind gitKind) string {
	what := map[gitKind]string{
		gitHead:      "HEAD beside objects/ and refs/",
		gitConfig:    "a git config beside objects/ and refs/",
		gitCommondir: "HEAD beside a commondir naming its objects, refs and config",
	}[kind]
	if dir != "" {
		return dirName(dir) + ": " + what
	}
	return what
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
