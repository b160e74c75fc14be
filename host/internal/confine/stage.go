package confine

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// A repository's git directory is staged rather than bound writable: the
// command sees it through an overlay (MountStage) whose upper layer lies
// in toolhost's state directory, with the directories that hold the bulk
// of what git writes (objects, refs) bound through to the real ones, and
// hooks, config and info read-only. What the command writes elsewhere
// in the git directory (the index, HEAD, the reflogs, a rebase's state,
// lock files) lands in the stage; once the command has ended,
// applyStaged copies into the real directory what git writes there in
// its work (the names below) and refuses the rest, a commondir, a
// config.worktree, a gitdir, anything git would read as configuration
// or code, and every symbolic link (git opens a reflog to append to it
// and would follow one anywhere). So no file git outside reads as a
// repository's configuration appears in the real git directory, neither
// while the command runs nor after: the file a bind mount cannot protect
// because it does not exist yet (commondir) is never written there. In
// what is bound through, the links and other special files the command
// made are removed after the call (sweepThrough). A rebase's to-do list
// and merge strategy are applied with what would run a program disabled
// (stateFilter). A toolhost that dies during the call leaves the real
// directory as the command's direct writes (objects, refs) made it; its
// stage is applied by a later one (recoverStages).

// gitDirNames are the names git writes at the top of a git directory in
// an agent's ordinary work: the index and the per-operation state files.
// gitDirPrefixes are the families of such names.
var (
	gitDirNames = []string{
		"index", "HEAD", "ORIG_HEAD", "FETCH_HEAD", "AUTO_MERGE",
		"MERGE_HEAD", "MERGE_MSG", "MERGE_MODE", "MERGE_RR", "MERGE_AUTOSTASH",
		"CHERRY_PICK_HEAD", "REVERT_HEAD", "REBASE_HEAD", "SQUASH_MSG",
		"COMMIT_EDITMSG", "TAG_EDITMSG", "EDIT_DESCRIPTION", "NOTES_MERGE_PARTIAL", "NOTES_MERGE_REF",
		"packed-refs", "shallow", "description", "gc.log",
	}
	gitDirPrefixes = []string{"BISECT_", "sharedindex."}
	// gitDirDirs are the directories of such state, applied whole,
	// their regular files only; logs (the reflogs) is always staged,
	// and refs, modules and worktrees are here for a repository that
	// had none when the call began (they are bound through otherwise):
	// a repository's first git submodule add or git worktree add makes
	// them. What the command wrote in a submodule's or worktree's git
	// directory is then checked as a repository it made
	// (newrepos.go), after the stage is applied.
	gitDirDirs = []string{"rebase-merge", "rebase-apply", "sequencer", "rr-cache", "NOTES_MERGE_WORKTREE", "lost-found", "refs", "logs", "lfs", "modules", "worktrees"}
	// objectsInfoNames are what git gc and git commit-graph write in
	// objects/info; alternates, which makes git read another store's
	// objects, is not among them.
	objectsInfoNames = []string{"commit-graph", "packs"}
	objectsInfoDirs  = []string{"commit-graphs"}
)

// stagedThrough are the directories of a git directory bound through a
// stage to the real ones: large writes go straight to disk. A name
// absent, or that is not a directory, is staged with the rest. logs is
// not among them: git appends to a reflog, following a link the command
// put in its place to any file (a ~/.bashrc), so the reflogs are staged
// and applied as regular files; a reflog the command changed is copied
// twice (the overlay's copy-up, the application), about 2 ms for 8 MB.
var stagedThrough = []string{"objects", "refs", "modules", "worktrees", "lfs"}

// stageAllows reports whether name, at the top of the staged directory
// dir, is one git writes in its work: a file (dir false) or a directory
// applied whole (dir true).
func stageAllows(target, name string, dir bool) bool {
	if isObjectsInfo(target) {
		if dir {
			return slices.Contains(objectsInfoDirs, name)
		}
		return slices.Contains(objectsInfoNames, name)
	}
	if dir {
		return slices.Contains(gitDirDirs, name)
	}
	if slices.Contains(gitDirNames, name) {
		return true
	}
	for _, p := range gitDirPrefixes {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

func isObjectsInfo(p string) bool {
	return filepath.Base(p) == "info" && filepath.Base(filepath.Dir(p)) == "objects"
}

// transient reports whether name is what git makes and removes within
// one operation (a lock, a temporary index or object): one left behind
// is a git that was killed, and it is dropped without a word.
func transient(name string) bool {
	return strings.HasSuffix(name, ".lock") || name == "gc.pid" || strings.HasPrefix(name, "tmp_") ||
		strings.HasPrefix(name, "index.stash.") || strings.HasPrefix(name, "next-index-")
}

// stageDir makes a new stage, with its upper and work directories, in
// the call's staging directory (made on first use in stageBase, named as
// the call's tmp is so that sweepTmp removes it after a crash), and
// returns it.
func (b *builder) stageDir() (string, error) {
	if b.stageErr != nil {
		return "", b.stageErr
	}
	if b.stageRoot == "" {
		base, err := stageBase(b.s.StateDir)
		if err == nil {
			// Stages left by a toolhost that is gone were applied and
			// removed before this call was built (Confiner.recoverStages).
			var d string
			if d, err = os.MkdirTemp(base, fmt.Sprintf("call-%d-%s-", os.Getpid(), safeName(b.c.ID))); err == nil {
				b.stageRoot = hostPath(d)
			}
		}
		if err != nil {
			b.stageErr = err
			b.uncovered = append(b.uncovered, fmt.Sprintf("git directories are bound writable, not staged (%v): a commondir, config.worktree or objects/info/alternates a command writes there is read by git outside until the call ends, when it is removed; a symbolic link it makes there (a reflog git outside appends to) and the exec lines of a rebase it leaves stopped are not checked", err))
			return "", err
		}
	}
	d := filepath.Join(b.stageRoot, fmt.Sprint(len(b.staged)))
	for _, sub := range []string{"upper", "work"} {
		if err := os.MkdirAll(filepath.Join(d, sub), 0o700); err != nil {
			return "", fmt.Errorf("confine: call %s: a stage for a git directory: %w", b.c.ID, err)
		}
	}
	return d, nil
}

// stage shows the directory real (a git directory, or its objects/info)
// to the command through a stage (MountStage), and reports whether it
// did. When it cannot, real is bound writable as before stages existed,
// and the names git would read as configuration that are absent are
// removed after the call if the command made them (strays): a gap for
// the call's length, which Policy.Uncovered states.
func (b *builder) stage(real string) bool {
	if b.staged[real] {
		return true
	}
	d, err := b.stageDir()
	if err == nil {
		// Without its record a stage left by a killed toolhost could
		// not be applied, and what the command did would be lost.
		err = recordStage(d, real)
	}
	if err != nil {
		b.add(Mount{Kind: MountWrite, Source: real, Target: real}, "")
		names := []string{"commondir", "config.worktree", "gitdir", "objects/info/alternates"}
		if isObjectsInfo(real) {
			names = []string{"alternates"}
		}
		for _, n := range names {
			if p := filepath.Join(real, n); !pathPresent(p) {
				b.strays = append(b.strays, p)
			}
		}
		return false
	}
	b.staged[real] = true
	b.add(Mount{Kind: MountStage, Source: real, Target: real, Stage: d}, "")
	return true
}

// removeStages removes the call's stages. The overlay's work directory
// holds a directory without permissions, which is given them first.
func removeStages(root string) {
	if root == "" || os.RemoveAll(root) == nil {
		return
	}
	filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			os.Chmod(p, 0o700)
		}
		return nil
	})
	os.RemoveAll(root)
}

// applyStaged applies what the command wrote in each stage of p to the
// real directory, keeping what stageAllows and refusing the rest, and
// empties the stage so that a second call applies nothing; it removes
// the links the command made where git writes through (sweepThrough).
// It returns one sentence for each change refused, disabled or that
// could not be applied, and each link removed. It must run once the
// command and all its processes have ended.
func applyStaged(p *Policy) []string {
	if p == nil {
		return nil
	}
	var notes []string
	for _, m := range p.Mounts {
		if m.Kind != MountStage {
			continue
		}
		notes = append(notes, applyStage(m)...)
	}
	return notes
}

// applyStage applies one stage (applyStaged): what the command wrote in
// its upper layer, then, for a git directory, the sweep of what it made
// in the directories bound through (sweepThrough).
func applyStage(m Mount) []string {
	notes := applyUpper(m)
	if !isObjectsInfo(m.Target) {
		notes = append(notes, sweepThrough(m)...)
	}
	return notes
}

// applyUpper applies the upper layer of the stage m and empties it.
func applyUpper(m Mount) []string {
	upper := filepath.Join(m.Stage, "upper")
	entries, err := os.ReadDir(upper)
	if err != nil || len(entries) == 0 {
		return nil
	}
	defer func() {
		removeStages(upper)
		os.Mkdir(upper, 0o700)
	}()
	real, err := os.OpenRoot(m.Source)
	if err != nil {
		return []string{fmt.Sprintf("sandbox: what the command changed in %s was not kept: %v", m.Target, err)}
	}
	defer real.Close()
	a := stageApply{up: upper, real: real, target: m.Target}
	for _, e := range entries {
		name := e.Name()
		fi, err := e.Info()
		if err != nil {
			continue
		}
		switch {
		case transient(name):
		case isWhiteout(fi):
			if stageAllows(m.Target, name, true) || stageAllows(m.Target, name, false) {
				if err := real.RemoveAll(name); err != nil {
					a.refuse(name, "could not be removed: "+err.Error())
				}
			} else {
				a.refuse(name, "was removed by the command; it stays")
			}
		case fi.IsDir() && stageAllows(m.Target, name, true):
			a.dir(name)
		case fi.Mode().IsRegular() && stageAllows(m.Target, name, false):
			a.file(name, true)
		default:
			a.refuse(name, "was written by the command and not kept")
		}
	}
	return a.notes
}

// sweepThrough removes what the command made in the directories of the
// git directory m.Source that were bound through (stagedThrough) and
// that git outside would follow: symbolic links (a fan-out directory of
// objects/ or a directory of refs/ that is a link to ~/.config makes the
// operator's git write its objects or refs there), fifos, sockets,
// devices. Git makes none of them there. Only directories changed since
// the call began are read (sweepLinks), and only entries made since then
// removed. It returns one sentence for each entry removed, and for a
// sweep cut short. applyStaged runs twice a call: the stage is marked
// swept (an extended attribute, a few microseconds, where a walk costs a
// third of a millisecond and more), and swept once.
func sweepThrough(m Mount) []string {
	rec, err := os.Lstat(filepath.Join(m.Stage, stageRecord))
	if err != nil || stageSwept(m.Stage) {
		return nil // no record: not a stage Build made
	}
	defer markSwept(m.Stage)
	// The record was written when the call was built, before the
	// command began; a second of margin covers the coarse clock that
	// stamps files.
	start := changeTime(rec).Add(-time.Second)
	var notes []string
	for _, name := range stagedThrough {
		removed, err := sweepLinks(filepath.Join(m.Source, name), start)
		for _, r := range removed {
			if r.state {
				notes = append(notes, fmt.Sprintf("sandbox: %s: %s", filepath.Join(m.Target, name, r.rel), r.what))
				continue
			}
			notes = append(notes, fmt.Sprintf("sandbox: %s, %s the command made where git outside the sandbox writes, was removed: git would have followed it outside the repository", filepath.Join(m.Target, name, r.rel), r.what))
		}
		if err != nil {
			notes = append(notes, fmt.Sprintf("sandbox: %s was not wholly checked for links the command made (%v); git outside follows one there", filepath.Join(m.Target, name), err))
		}
	}
	return notes
}

// sweptEntry is an entry sweepLinks removed: its path in the directory
// swept and what it was ("a symbolic link to /home/u/.bashrc"); or, when
// state, a rebase's state file it changed and what it disabled there.
type sweptEntry struct {
	rel, what string
	state     bool
}

// stageApply is the application of one stage.
type stageApply struct {
	up     string   // the stage's upper directory
	real   *os.Root // the real directory
	target string
	notes  []string
}

func (a *stageApply) refuse(rel, what string) {
	a.notes = append(a.notes, fmt.Sprintf("sandbox: %s %s: in a repository's git directory commands change only what git writes in its work (the index, HEAD, refs, objects, a merge's or rebase's state); what git reads as configuration or code (config, hooks, commondir, gitdir, config.worktree, info, objects/info/alternates) stays as it was", filepath.Join(a.target, rel), what))
}

// dir applies the directory rel: replaced whole when the overlay marks
// it opaque (removed and made again), merged entry by entry otherwise.
func (a *stageApply) dir(rel string) {
	up := filepath.Join(a.up, rel)
	if isOpaque(up) {
		if err := a.real.RemoveAll(rel); err != nil {
			a.refuse(rel, "could not be replaced: "+err.Error())
			return
		}
	}
	if fi, err := a.real.Lstat(rel); err == nil && !fi.IsDir() {
		a.real.RemoveAll(rel)
	}
	if err := a.real.Mkdir(rel, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
		a.refuse(rel, "could not be made: "+err.Error())
		return
	}
	entries, err := os.ReadDir(up)
	if err != nil {
		return
	}
	for _, e := range entries {
		r := filepath.Join(rel, e.Name())
		fi, err := e.Info()
		switch {
		case err != nil:
		case isWhiteout(fi):
			a.real.RemoveAll(r)
		case fi.IsDir():
			a.dir(r)
		case fi.Mode().IsRegular():
			a.file(r, false)
		default:
			a.refuse(r, "is not a regular file or directory and was not kept")
		}
	}
}

// file copies the regular file rel into the real directory, through
// rel.lock as git does: taken exclusively, so a git outside that holds
// it is waited for (a second at most) rather than overwritten, and
// renamed onto rel. Only git's top-level files are locked (locked); a
// file of a directory of state is written the same way. A rebase's or
// sequencer's state file goes through stateFilter first.
func (a *stageApply) file(rel string, locked bool) {
	src, err := os.Open(filepath.Join(a.up, rel))
	if err != nil {
		return
	}
	defer src.Close()
	var r io.Reader = src
	if filter := stateFilter(rel); filter != nil {
		data, err := io.ReadAll(io.LimitReader(src, maxStateFile+1))
		if err == nil && len(data) > maxStateFile {
			err = fmt.Errorf("larger than %d bytes", maxStateFile)
		}
		if err != nil {
			a.refuse(rel, "was not read to check it: "+err.Error())
			return
		}
		out, note, keep := filter(data)
		if note != "" {
			a.notes = append(a.notes, fmt.Sprintf("sandbox: %s: %s", filepath.Join(a.target, rel), note))
		}
		if !keep {
			return
		}
		r = bytes.NewReader(out)
	}
	lock := rel + ".lock"
	if !locked {
		lock = rel + ".toolhost-tmp"
		a.real.Remove(lock)
	}
	var dst *os.File
	for deadline := time.Now().Add(time.Second); ; time.Sleep(20 * time.Millisecond) {
		dst, err = a.real.OpenFile(lock, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if err == nil || !errors.Is(err, fs.ErrExist) || time.Now().After(deadline) {
			break
		}
	}
	if err != nil {
		a.refuse(rel, "could not be applied ("+err.Error()+"); git outside held its lock")
		return
	}
	_, err = io.Copy(dst, r)
	if cerr := dst.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = a.real.Rename(lock, rel)
	}
	if err != nil {
		a.real.Remove(lock)
		a.refuse(rel, "could not be applied: "+err.Error())
	}
}
