package confine

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"
)

// A command can make a repository in a root (git init, git clone, a
// submodule it populates) and write into its config and hooks what git
// then runs outside the sandbox: the operator's `git status` at the top
// recurses into a gitlink and runs the submodule's core.fsmonitor. The
// read-only binds of protectInside cover only the repositories that
// existed when the call started. So when a command ends, before its
// result is returned, the writable trees are searched again (searchTree,
// with the SearchCache, so unchanged directories are not read again),
// and every git directory found whose config or hooks the command could
// reach (writable) and that changed during the call (ctime, which no
// system call sets back) loses
// what git would run: the config keys that name a program or another
// file to read (runsProgram) and the hooks. What is removed is kept
// aside in the git directory's toolhost-quarantine, with a README saying
// how to restore it, and reported to the model (Run.Hint) and the
// operator (a warning in the log).
//
// The search after the call reads the trees at any depth (a repository
// deeper than the search before the call reaches is still one git add -A
// at the top makes an embedded repository and git status recurses into),
// within the same bound of entries, oldest first; what that bound leaves
// out is said in the call's output. A hard link can reach a config or
// hook by another path than the read-only bind covers, so whether the
// command changed a file is its ctime, whichever path wrote it; and the
// binds of the next call break such links first (breakLinks). A toolhost
// killed during a call never runs its check: Build records what the
// check needs in the state directory (newrepos_record.go), and the next
// toolhost runs it.

// quarantineDir is the directory, in a git directory, that holds what
// was set aside from it.
const quarantineDir = "toolhost-quarantine"

// Bounds of the check after a call: the git directories looked at, and
// the entries read of their modules/ and worktrees/ directories.
const (
	settleMaxGitDirs = 4096
	settleMaxEntries = walkMaxEntries
	// settleMaxConfig is the largest config file read and rewritten;
	// a larger one the command wrote is set aside whole.
	settleMaxConfig = 1 << 20
	// settleMaxDepth is no bound in practice: the search after the call
	// reads as deep as the tree goes, within settleMaxEntries.
	settleMaxDepth = 1 << 30
	// gitTimeout bounds each run of git that lists a config file.
	gitTimeout = 10 * time.Second
)

// Neutralized is what was set aside from one git directory after a call.
type Neutralized struct {
	Repo   string   // the repository: its .git, or a bare git directory
	GitDir string   // the git directory that held it
	Keys   []string // config keys removed, as git names them
	Files  []string // files set aside whole: hooks, a config git could not list
	Kept   string   // the quarantine directory holding all of it
	Err    error    // what could not be done; the rest was
}

// settle is the check that runs when a call's command has ended.
type settle struct {
	s Settings
	c Call
	// mounts are the policy's writable, hidden and tmpfs mounts: what
	// decides whether the command could reach a path (writable).
	mounts []Mount
	since  int64 // nanoseconds since the epoch: what changed after it is the call's
	// bound are the files Build replaced by a copy to break a hard link
	// before it bound them read-only (breakLinks), as it left them.
	bound map[string]boundFile
	// record is the file in the state directory that lets another
	// toolhost run this check if this one is killed first; "" when none.
	record string
	once   sync.Once
	watch  *gitlinkWatch // while the command runs; nil when nothing is watched
	found  []Neutralized
	// uncovered is what the search after the call could not reach;
	// bounds are what the check's own bounds left out, each a sentence
	// for the command's output and the log.
	uncovered, bounds []string
}

// boundFile is an entry of a git directory as Build left it before the
// command ran (a config, a hook, the hooks directory or link), or a copy
// Build made of one to break a hard link: its inode and ctime
// (nanoseconds since the epoch). That ctime is the operator's or
// toolhost's doing, not the command's: the entry, as long as it is that
// inode with that ctime, did not change. Another
// inode there is judged by its ctime like any file: telling the
// operator's replacement (git config renames a new file into place)
// from one a concurrent call's command made, and linked, is not
// possible from here.
type boundFile struct {
	Ino   uint64 `json:"ino"`
	Ctime int64  `json:"ctime"`
}

// notes is what the check left out by its own bounds, and what it could
// not search.
func (st *settle) notes() []string {
	if st == nil {
		return nil
	}
	return slices.Concat(st.bounds, st.uncovered)
}

// hint is the lines for the command's output saying what was set aside,
// and where the check's bounds stopped it.
func (st *settle) hint(found []Neutralized) string {
	if st == nil {
		return ""
	}
	lines := []string{settleHint(found, st.c.Roots)}
	for _, b := range st.bounds {
		lines = append(lines, "sandbox: "+b)
	}
	return strings.Trim(strings.Join(lines, "\n"), "\n")
}

// newSettle returns the check for the call c under the policy p, built
// at start; bound are the files Build bound read-only (breakLinks). In
// workspace-write mode it records the check in the state directory
// first (writeRecord), so that a toolhost killed before it runs leaves
// it to the next.
func newSettle(s Settings, c Call, p *Policy, start time.Time, bound map[string]boundFile) (*settle, error) {
	st := &settle{s: s, c: c, mounts: reachMounts(p.Mounts), since: start.Add(-ctimeSlack).UnixNano(), bound: bound}
	if s.Mode != ModeWorkspaceWrite {
		return st, nil
	}
	if err := st.writeRecord(); err != nil {
		return nil, err
	}
	st.watch = st.startWatch()
	return st, nil
}

// reachMounts are the mounts of ms that decide what a command could
// write: writable ones, and hidden and tmpfs ones that cover parts of
// them. Read-only binds inside a writable tree (a repository's config
// and hooks) are left out: a hard link the command made while the file
// was writable reaches the same file by another path, so only the file's
// ctime says whether it changed.
func reachMounts(ms []Mount) []Mount {
	var out []Mount
	for _, m := range ms {
		switch m.Kind {
		case MountWrite, MountHide, MountTmpfs:
			out = append(out, m)
		}
	}
	return out
}

// run does the check once, and returns what it set aside. It must run
// only once no process of the command is left: the launcher, the
// command's PID namespace's init, has exited.
func (st *settle) run(ctx context.Context) []Neutralized {
	if st == nil {
		return nil
	}
	st.once.Do(func() {
		early := st.watch.stop()
		if st.s.Mode != ModeWorkspaceWrite {
			return
		}
		repos := st.search()
		st.found = mergeFound(early, st.neutralize(ctx, repos))
	})
	return st.found
}

// search finds the repositories in the writable trees now: what the
// search before the call found (readKnown) and what this one finds. Those
// it finds are remembered for later calls (walk_known.go).
func (st *settle) search() []string {
	s := search{skip: searchSkip(st.s), lim: searchLimits{settleMaxDepth, settleMaxEntries}, projects: st.s.ProjectFileNames, cache: st.s.Search, start: time.Now().UnixNano()}
	var repos []string
	for _, t := range dedupe(append(slices.Clone(st.c.Roots), st.s.ExtraWritable...)) {
		f := searchTree(t, s)
		rs := oldestFirst(dedupe(slices.Concat(readKnown(st.s.StateDir, t), f.dotgits, f.gitdirs)))
		rs = slices.DeleteFunc(rs, func(r string) bool { return underAny(r, s.skip) })
		writeKnown(st.s.StateDir, t, rs)
		repos = append(repos, rs...)
		st.uncovered = append(st.uncovered, f.uncovered...)
		if f.stopped {
			st.bounds = append(st.bounds, fmt.Sprintf("the check for repositories this command made stopped after %d entries of %s, read oldest first: a repository among the newest files was not checked, and git run outside the sandbox (git add -A and git status at the top, or git inside it) could run what the command wrote into its config or hooks. Remove what the project does not need from %s (build output, dependencies), or look at the .git/config and .git/hooks of repositories made there before running git outside", settleMaxEntries, t, t))
		}
	}
	return st.withGitlinks(repos)
}

// withGitlinks adds to repos the checkouts of the gitlinks of each
// repository in it (and theirs in turn): where git at the top recurses,
// at any depth, which the bounded search may not reach. They are the
// paths .gitmodules names and, when the command changed the index, the
// gitlinks in it: a gitlink it added (git add of a repository) is in an
// index it changed.
func (st *settle) withGitlinks(repos []string) []string {
	seen := map[string]bool{}
	for _, r := range repos {
		seen[r] = true
	}
	for i := 0; i < len(repos) && len(repos) < settleMaxGitDirs; i++ {
		r := repos[i]
		if filepath.Base(r) != ".git" {
			continue
		}
		top := filepath.Dir(r)
		links := modulesPaths(filepath.Join(top, ".gitmodules"))
		gd := r
		if fi, err := os.Stat(r); err == nil && fi.Mode().IsRegular() {
			gd = gitFileDir(r)
		}
		// The index is only read here: whether the command could write it
		// directly or its change was applied from a stage, a change made
		// during the call is the command's.
		if idx := filepath.Join(gd, "index"); gd != "" && st.changedSince(idx) {
			l, err := indexGitlinks(idx, hashSizeOf(commonOr(gd)))
			if err != nil {
				st.bounds = append(st.bounds, fmt.Sprintf("the check for repositories this command made did not read the gitlinks of an index it changed (%v): a repository it added there that the search did not reach was not checked", err))
			}
			links = append(links, l...)
		}
		for _, l := range links {
			p := filepath.Join(top, filepath.FromSlash(l), ".git")
			if !seen[p] && within(p, top) && pathPresent(p) {
				seen[p] = true
				repos = append(repos, p)
			}
		}
	}
	return repos
}

// commonOr is gd's common directory, or gd itself.
func commonOr(gd string) string {
	if cd := commonDirOf(gd); cd != "" {
		return cd
	}
	return gd
}

// gitFileDir is gitdirOf, and commonDirOf commonDir, reading only a
// regular file: a FIFO a command left as a .git or commondir must not
// hold the check (openRegular).
func gitFileDir(dotgit string) string {
	gd, ok := strings.CutPrefix(regularFirstLine(dotgit), "gitdir: ")
	if !ok || gd == "" {
		return ""
	}
	if !filepath.IsAbs(gd) {
		gd = filepath.Join(filepath.Dir(dotgit), gd)
	}
	return filepath.Clean(gd)
}

func commonDirOf(gd string) string {
	cd := regularFirstLine(filepath.Join(gd, "commondir"))
	if cd == "" {
		return ""
	}
	if !filepath.IsAbs(cd) {
		cd = filepath.Join(gd, cd)
	}
	return filepath.Clean(cd)
}

// regularFirstLine is the first line of the regular file p (a link
// followed, as git does), "" when it is not one.
func regularFirstLine(p string) string {
	f, err := openRegular(p, true)
	if err != nil {
		return ""
	}
	defer f.Close()
	buf := make([]byte, 4096)
	n, _ := io.ReadFull(f, buf)
	line, _, _ := strings.Cut(string(buf[:n]), "\n")
	return strings.TrimSpace(line)
}

// quarantineReadme is the README of the quarantine of the git directory
// gd.
func quarantineReadme(gd string) string {
	return "toolhost keeps here what it removed from this git directory (" + gd + ") after a\n" +
		"run_command call: config keys that make git run a program (a copy of the config\n" +
		"file as the command left it, the keys listed at its top) and hooks. The command's\n" +
		"sandbox could write them, and git run outside the sandbox (your git status, git\n" +
		"commit) would have run them with your rights.\n\n" +
		"If you trust them: read each file first, then set the keys again with git config,\n" +
		"or move a hook back into hooks/ and make it executable. Otherwise delete this directory.\n"
}

// gitDirs are the git directories git uses for the repository at repo
// (a .git directory or file, or a bare git directory): the git directory
// and its common directory, resolved; those of its submodules
// (modules/) and linked worktrees (worktrees/) too, which git uses when
// they are checked out or updated.
func (st *settle) gitDirs(repos []string) []string {
	var dirs []string
	seen := map[string]bool{}
	add := func(d string) {
		if d == "" || len(dirs) >= settleMaxGitDirs {
			return
		}
		real, err := filepath.EvalSymlinks(d)
		if err != nil || seen[real] {
			return
		}
		if fi, err := os.Stat(real); err != nil || !fi.IsDir() {
			return
		}
		seen[real] = true
		dirs = append(dirs, real)
	}
	for _, r := range repos {
		fi, err := os.Stat(r) // git follows a .git that is a link
		switch {
		case err != nil:
		case fi.Mode().IsRegular():
			if gd := gitFileDir(r); gd != "" {
				add(gd)
				add(commonDirOf(gd))
			}
		case fi.IsDir():
			add(r)
			add(commonDirOf(r))
		}
	}
	// modules/ and worktrees/ of each, and theirs in turn (a submodule's
	// submodules), within one budget of entries.
	budget := settleMaxEntries
	for i := 0; i < len(dirs) && budget > 0; i++ {
		for _, sub := range []string{"modules", "worktrees"} {
			p := filepath.Join(dirs[i], sub)
			if !pathPresent(p) {
				continue
			}
			l, err := readDir(p, 0, false, budget, nil)
			budget -= l.n
			if err != nil && !errors.Is(err, errTooMany) {
				continue
			}
			for _, d := range l.subdirs {
				add(filepath.Join(p, d))
			}
		}
	}
	if budget <= 0 || len(dirs) >= settleMaxGitDirs {
		st.bounds = append(st.bounds, fmt.Sprintf("the check for repositories this command made stopped at %d git directories (%d entries of modules/ and worktrees/ directories) in %s; the others were not looked at, and git run outside the sandbox there could run what the command wrote into their config or hooks: remove the repositories the project does not need", len(dirs), settleMaxEntries, strings.Join(st.c.Roots, ", ")))
	}
	return dirs
}

// neutralize sets aside what git would run from each git directory of
// repos that the command could write and changed.
func (st *settle) neutralize(ctx context.Context, repos []string) []Neutralized {
	var out []Neutralized
	for _, gd := range st.gitDirs(repos) {
		if ctx.Err() != nil {
			break
		}
		n := st.neutralizeGitDir(ctx, gd)
		if len(n.Keys) > 0 || len(n.Files) > 0 || n.Err != nil {
			n.Repo = repoOf(gd, repos)
			out = append(out, n)
		}
	}
	return out
}

// mergeFound is what the watch while the command ran (early) and the
// check after it (late) set aside, one entry per git directory.
func mergeFound(early, late []Neutralized) []Neutralized {
	var out []Neutralized
	at := map[string]int{}
	for _, n := range slices.Concat(early, late) {
		i, ok := at[n.GitDir]
		if !ok {
			at[n.GitDir] = len(out)
			out = append(out, n)
			continue
		}
		m := &out[i]
		for _, k := range n.Keys {
			if !slices.Contains(m.Keys, k) {
				m.Keys = append(m.Keys, k)
			}
		}
		for _, f := range n.Files {
			if !slices.Contains(m.Files, f) {
				m.Files = append(m.Files, f)
			}
		}
		if m.Kept == "" {
			m.Kept = n.Kept
		}
		m.Err = errors.Join(m.Err, n.Err)
	}
	return out
}

// repoOf is the repository among repos whose git directory is gd: its
// .git, or gd itself.
func repoOf(gd string, repos []string) string {
	for _, r := range repos {
		if r == gd || filepath.Base(r) == ".git" && (resolved(r) == gd || gitFileDir(r) == gd) {
			return r
		}
	}
	return gd
}

// changed reports whether p is something the command could reach
// (writable) and changed during the call: its ctime is after the call
// began. A path that does not exist did not change.
func (st *settle) changed(p string) bool {
	return st.writable(p) && st.changedSince(p)
}

// changedSince reports whether p changed during the call: its ctime is
// after the call began (less ctimeSlack).
func (st *settle) changedSince(p string) bool {
	// dirStampOf's statx takes a file's change time as well; it fails on
	// systems where commands are not confined anyway.
	stamp, err := dirStampOf(p)
	if b, ok := st.bound[p]; ok && err == nil && b.Ino == stamp.ino && b.Ctime == stamp.ctime {
		return false // as Build found it (boundFile)
	}
	return err == nil && stamp.ctime >= st.since
}

// writable reports whether the command could reach the host path p to
// write it: of the writable, hidden and tmpfs mounts (reachMounts), the
// one whose source holds p most closely is a writable one. A read-only
// bind of a repository's config or hooks in a writable tree does not
// count: a hard link reaches the file past it (whether the command wrote
// it is its ctime). A repository elsewhere (a .git file naming a git
// directory outside the trees) is never touched.
func (st *settle) writable(p string) bool {
	best, kind := -1, MountRead
	for _, m := range st.mounts {
		src := m.Source
		if m.Kind == MountHide || m.Kind == MountTmpfs || src == "" {
			src = m.Target
		}
		if within(p, src) && len(src) >= best {
			best, kind = len(src), m.Kind
		}
	}
	return best >= 0 && kind == MountWrite
}

// configEntry is one key git lists from a config file.
type configEntry struct {
	section, sub, name string // section and name lower case, as git lists them
	value              string
	bare               bool // a key without "=" (a boolean true)
}

func (e configEntry) key() string {
	if e.sub == "" {
		return e.section + "." + e.name
	}
	return e.section + "." + e.sub + "." + e.name
}

// listConfig is git's own reading of the config file at path p (git
// config --list): a hand-written parser could read a file differently
// from the git that later runs it. git is run with no system or global
// configuration, from /, and does not follow include.path. When f is not
// nil, git reads it (as /dev/fd/3) instead of p, so that what it reads is
// the file already opened, whatever p leads to now.
func listConfig(ctx context.Context, p string, f *os.File) ([]configEntry, error) {
	git, err := exec.LookPath("git")
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, gitTimeout)
	defer cancel()
	file := p
	if f != nil {
		file = "/dev/fd/3"
	}
	cmd := exec.CommandContext(ctx, git, "config", "--file", file, "--no-includes", "--list", "--null")
	if f != nil {
		cmd.ExtraFiles = []*os.File{f}
	}
	cmd.Dir = "/"
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=/nonexistent", "LC_ALL=C", "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null"}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("git config --list of %s: %w: %s", p, err, strings.TrimSpace(stderr.String()))
	}
	var entries []configEntry
	for _, rec := range strings.Split(string(out), "\x00") {
		if rec == "" {
			continue
		}
		k, v, hasValue := strings.Cut(rec, "\n")
		first, last := strings.Index(k, "."), strings.LastIndex(k, ".")
		if first < 0 {
			return nil, fmt.Errorf("git config --list of %s: a key without a section: %q", p, k)
		}
		e := configEntry{section: k[:first], name: k[last+1:], value: v, bare: !hasValue}
		if first < last {
			e.sub = k[first+1 : last]
		}
		entries = append(entries, e)
	}
	return entries, nil
}

// runsProgram reports whether git (or git-lfs) runs a program, or reads
// another file as configuration, because of the key section.sub.name set
// to value in a repository's config. From git-config(1): keys naming a
// command, a helper, a filter or diff driver, an editor or pager, hooks;
// include.path and includeIf.*.path, which read a file the command may
// have written anywhere; aliases starting with "!"; protocol.*.allow,
// which can enable the ext:: transport (a command line as a URL). Any key
// whose name ends in cmd, command or program counts too, so that keys git
// adds later of that kind are covered.
func runsProgram(section, sub, name, value string) bool {
	section, name = strings.ToLower(section), strings.ToLower(name)
	bang := strings.HasPrefix(strings.TrimSpace(value), "!")
	switch {
	case strings.HasSuffix(name, "cmd"), strings.HasSuffix(name, "command"), strings.HasSuffix(name, "program"):
		return true
	}
	switch name {
	case "textconv", "helper", "driver", "editor", "pager", "askpass", "hookspath", "gitproxy",
		"clean", "smudge", "process", "packobjectshook", "uploadpack", "receivepack", "tunnel", "difffilter":
		return true
	}
	switch section {
	case "include", "includeif", "filter", "hook", "pager", "protocol":
		return true
	case "alias":
		return bang
	case "submodule":
		return name == "update" && bang
	case "core":
		return name == "fsmonitor" && !isBoolValue(value)
	case "diff":
		return name == "external"
	case "remote":
		return name == "vcs"
	case "difftool", "mergetool", "man", "browser", "guitool", "lfs":
		return name == "path"
	case "web":
		return name == "browser"
	case "sendemail":
		return name == "smtpserver"
	}
	return false
}

// isBoolValue reports whether v is one of git's boolean spellings:
// core.fsmonitor = true starts git's own monitor, not a program of the
// repository's.
func isBoolValue(v string) bool {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "", "true", "false", "yes", "no", "on", "off", "1", "0":
		return true
	}
	return false
}

// mentionsProgramKey reports whether a config file's text names anything
// runsProgram could match: section and key names cannot be escaped or
// split in git's syntax, so a file without any of these words holds no
// such key whatever git makes of it.
func mentionsProgramKey(text []byte) bool {
	t := bytes.ToLower(text)
	for _, w := range []string{"cmd", "command", "program", "textconv", "helper", "driver", "editor", "pager",
		"askpass", "hookspath", "gitproxy", "clean", "smudge", "process", "packobjectshook", "uploadpack",
		"receivepack", "tunnel", "difffilter", "include", "filter", "hook", "protocol", "alias", "update",
		"fsmonitor", "external", "vcs", "path", "browser", "smtpserver"} {
		if bytes.Contains(t, []byte(w)) {
			return true
		}
	}
	return false
}

// writeConfig is the text of a config file holding entries, in order.
func writeConfig(entries []configEntry) []byte {
	var b bytes.Buffer
	head := ""
	for _, e := range entries {
		h := "[" + e.section + "]"
		if e.sub != "" {
			h = "[" + e.section + " \"" + escapeConfig(e.sub, false) + "\"]"
		}
		if h != head {
			b.WriteString(h + "\n")
			head = h
		}
		if e.bare {
			b.WriteString("\t" + e.name + "\n")
			continue
		}
		v := e.value
		if strings.TrimSpace(v) != v || v == "" || strings.ContainsFunc(v, func(r rune) bool { return r < ' ' || strings.ContainsRune("\"\\#;", r) }) {
			v = "\"" + escapeConfig(v, true) + "\""
		}
		b.WriteString("\t" + e.name + " = " + v + "\n")
	}
	return b.Bytes()
}

// escapeConfig quotes s for a config file: inside double quotes, a
// backslash and a quote are escaped; in a value, also newline, tab and
// backspace.
func escapeConfig(s string, value bool) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '\\' || r == '"':
			b.WriteByte('\\')
			b.WriteRune(r)
		case value && r == '\n':
			b.WriteString(`\n`)
		case value && r == '\t':
			b.WriteString(`\t`)
		case value && r == '\b':
			b.WriteString(`\b`)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// configHeader is the comment put above a config file kept aside: git
// reads the copy as a config file still (git config --file).
func configHeader(p string, keys []string) string {
	return fmt.Sprintf("# toolhost set this file aside after a run_command call: it is %s as the command left it.\n"+
		"# These keys make git run a program or read another file, and were removed from %s:\n#   %s\n"+
		"# A command's sandbox could write them; git would have run them outside it. If you trust\n"+
		"# them, read them here and set them again with git config.\n",
		p, p, strings.Join(keys, "\n#   "))
}

// settleHint is the lines to append to the command's output for what was
// set aside, one per git directory, at most a few.
func settleHint(found []Neutralized, roots []string) string {
	const most = 5
	var lines []string
	for i, n := range found {
		if i == most {
			lines = append(lines, fmt.Sprintf("sandbox: and %d more git directories, listed in toolhost's log", len(found)-most))
			break
		}
		var what []string
		if len(n.Keys) > 0 {
			what = append(what, "config "+strings.Join(n.Keys, ", "))
		}
		if len(n.Files) > 0 {
			what = append(what, strings.Join(n.Files, ", "))
		}
		line := fmt.Sprintf("sandbox: git outside the sandbox would have run what this command wrote in %s (%s); it was removed and kept in %s for the user to review, and will not run", shortPath(n.Repo, roots), strings.Join(what, "; "), shortPath(n.Kept, roots))
		if n.Err != nil {
			line = fmt.Sprintf("sandbox: git outside the sandbox could run what this command wrote in %s, and toolhost could not set all of it aside: %v", shortPath(n.Repo, roots), n.Err)
		}
		lines = append(lines, line)
	}
	return strings.Join(lines, "\n")
}

// shortPath is p relative to the root holding it, for the model.
func shortPath(p string, roots []string) string {
	for _, r := range roots {
		if rel, err := filepath.Rel(r, p); err == nil && within(p, r) {
			return rel
		}
	}
	return p
}
