package confine

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// The set-aside works on the git directory through a descriptor opened
// with no symbolic link anywhere in its path (openat2's
// RESOLVE_NO_SYMLINKS), and on what is in it relative to that descriptor,
// never following a link at the last element: toolhost does this with the
// operator's rights, while the command that made the directory may still
// run (the watch) or another call's command may, and a path it swaps for
// a link must not make toolhost rewrite or move a file elsewhere (the
// operator's own repositories, their home).

// openRegular opens p for reading when it is a regular file: a FIFO or a
// device a command left under a name git reads (a .git file, commondir,
// an index) must not hold the check, which runs before the call's result
// is returned. follow allows a link at p's last element, which git
// follows too.
func openRegular(p string, follow bool) (*os.File, error) {
	flags := unix.O_RDONLY | unix.O_NONBLOCK | unix.O_CLOEXEC
	if !follow {
		flags |= unix.O_NOFOLLOW
	}
	fd, err := unix.Open(p, flags, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: p, Err: err}
	}
	return regularFile(fd, p)
}

// regularFile makes fd an *os.File when it is a regular file, and closes
// it otherwise.
func regularFile(fd int, p string) (*os.File, error) {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
		unix.Close(fd)
		return nil, &os.PathError{Op: "open", Path: p, Err: errors.New("not a regular file")}
	}
	return os.NewFile(uintptr(fd), p), nil
}

// gitDirHandle is a git directory opened for the set-aside.
type gitDirHandle struct {
	st   *settle
	path string
	fd   int
	q    int // the quarantine's descriptor, -1 until made
}

// neutralizeGitDir sets aside, from the git directory gd, the config
// keys that run programs and the hooks, where the command could reach
// them (writable: a read-only bind does not stop a hard link) and they
// changed during the call.
func (st *settle) neutralizeGitDir(ctx context.Context, gd string) Neutralized {
	n := Neutralized{GitDir: gd}
	fd, err := unix.Openat2(unix.AT_FDCWD, gd, &unix.OpenHow{
		Flags:   unix.O_RDONLY | unix.O_DIRECTORY | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
	})
	switch {
	case errors.Is(err, unix.ENOENT):
		return n
	case err != nil:
		if st.changed(filepath.Join(gd, "config")) || st.changed(filepath.Join(gd, "hooks")) {
			n.Err = fmt.Errorf("open %s without following a link to check it: %w", gd, err)
		}
		return n
	}
	h := &gitDirHandle{st: st, path: gd, fd: fd, q: -1}
	defer h.close()
	for _, name := range []string{"config", "config.worktree"} {
		if !h.changed(h.fd, name, filepath.Join(gd, name)) {
			continue
		}
		keys, whole, err := h.neutralizeConfig(ctx, name)
		n.Keys = append(n.Keys, keys...)
		if whole {
			n.Files = append(n.Files, name)
		}
		n.Err = errors.Join(n.Err, err)
	}
	if st.writable(filepath.Join(gd, "hooks", "x")) {
		files, err := h.neutralizeHooks()
		n.Files = append(n.Files, files...)
		n.Err = errors.Join(n.Err, err)
	}
	if len(n.Keys) > 0 || len(n.Files) > 0 {
		n.Err = errors.Join(n.Err, h.readme())
		n.Kept = filepath.Join(gd, quarantineDir)
	}
	return n
}

func (h *gitDirHandle) close() {
	unix.Close(h.fd)
	if h.q >= 0 {
		unix.Close(h.q)
	}
}

// changed is settle.changed for the entry name of the directory dirfd,
// whose host path is p. A copy Build made of p (boundFile), still as
// Build left it, did not change.
func (h *gitDirHandle) changed(dirfd int, name, p string) bool {
	if !h.st.writable(p) {
		return false
	}
	var stx unix.Statx_t
	if unix.Statx(dirfd, name, unix.AT_SYMLINK_NOFOLLOW, unix.STATX_CTIME|unix.STATX_INO, &stx) != nil || stx.Mask&unix.STATX_CTIME == 0 {
		return false
	}
	ctime := stx.Ctime.Sec*1e9 + int64(stx.Ctime.Nsec)
	if b, ok := h.st.bound[p]; ok && stx.Mask&unix.STATX_INO != 0 && b.Ino == stx.Ino && b.Ctime == ctime {
		return false
	}
	return ctime >= h.st.since
}

// neutralizeHooks moves into the quarantine the hooks the command made or
// changed (all but *.sample), or the whole hooks when it is a link or a
// file.
func (h *gitDirHandle) neutralizeHooks() ([]string, error) {
	hooks := filepath.Join(h.path, "hooks")
	fd, err := unix.Openat(h.fd, "hooks", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	switch {
	case errors.Is(err, unix.ENOENT):
		return nil, nil
	case errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENOTDIR):
		// A link to another directory (git follows it) or a file.
		if !h.changed(h.fd, "hooks", hooks) {
			return nil, nil
		}
		return []string{"hooks"}, h.move(h.fd, "hooks", "hooks")
	case err != nil:
		return nil, fmt.Errorf("open %s: %w", hooks, err)
	}
	dir := os.NewFile(uintptr(fd), hooks)
	defer dir.Close()
	names, err := dir.Readdirnames(-1)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", hooks, err)
	}
	slices.Sort(names)
	var moved []string
	var errs error
	for _, name := range names {
		if strings.HasSuffix(name, ".sample") || !h.changed(fd, name, filepath.Join(hooks, name)) {
			continue
		}
		rel := "hooks/" + name
		if err := h.move(fd, name, rel); err != nil {
			errs = errors.Join(errs, err)
			continue
		}
		moved = append(moved, rel)
	}
	return moved, errs
}

// neutralizeConfig removes from the config file name the keys git would
// run a program for (runsProgram), keeping the original in the
// quarantine, and returns the keys removed. A file that is not a regular
// file (git follows a link), is too large, or that git cannot list is set
// aside whole (whole) when it names anything runsProgram might match.
func (h *gitDirHandle) neutralizeConfig(ctx context.Context, name string) (keys []string, whole bool, err error) {
	p := filepath.Join(h.path, name)
	fd, err := unix.Openat(h.fd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ENOENT) {
		return nil, false, nil
	}
	var f *os.File
	if err == nil {
		f, err = regularFile(fd, p)
	}
	if err != nil {
		return nil, true, h.move(h.fd, name, name) // a link, a FIFO
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, false, err
	}
	if fi.Size() > settleMaxConfig {
		return nil, true, h.move(h.fd, name, name)
	}
	orig, err := io.ReadAll(io.LimitReader(f, settleMaxConfig+1))
	if err != nil {
		return nil, false, fmt.Errorf("read %s to check it for programs git runs: %w", p, err)
	}
	entries, lerr := listConfig(ctx, p, f)
	if lerr != nil {
		// git cannot list it (no git here, or a file git refuses): set it
		// aside when any word git could read as a program key is in it;
		// a file git refuses, git refuses outside too.
		if !mentionsProgramKey(orig) {
			return nil, false, nil
		}
		return nil, true, h.move(h.fd, name, name)
	}
	var kept []configEntry
	for _, e := range entries {
		if runsProgram(e.section, e.sub, e.name, e.value) {
			keys = append(keys, e.key())
			continue
		}
		kept = append(kept, e)
	}
	if len(keys) == 0 {
		return nil, false, nil
	}
	if err := h.keep(name, configHeader(p, keys), orig); err != nil {
		return nil, false, err
	}
	nf, err := h.replace(name, writeConfig(kept), fi.Mode().Perm())
	if err != nil {
		return keys, false, err
	}
	defer nf.Close()
	// What git lists now must be what was kept: a rewrite git reads
	// differently is set aside whole.
	if again, err := listConfig(ctx, p, nf); err != nil || !slices.EqualFunc(again, kept, func(a, b configEntry) bool { return a.key() == b.key() && a.value == b.value && a.bare == b.bare }) {
		return keys, true, errors.Join(h.move(h.fd, name, name), fmt.Errorf("the rewritten %s did not read back as written; it was set aside whole", p))
	}
	return keys, false, nil
}

// replace replaces the entry name with text in one rename, so git never
// reads half a file, and returns the new file open for reading.
func (h *gitDirHandle) replace(name string, text []byte, perm os.FileMode) (*os.File, error) {
	p := filepath.Join(h.path, name)
	tmp := fmt.Sprintf(".toolhost-%s-%d", name, time.Now().UnixNano())
	fd, err := unix.Openat(h.fd, tmp, unix.O_RDWR|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, uint32(perm))
	if err != nil {
		return nil, fmt.Errorf("rewrite %s without the keys git would run: %w", p, err)
	}
	f := os.NewFile(uintptr(fd), filepath.Join(h.path, tmp))
	if _, err := f.Write(text); err != nil {
		f.Close()
		unix.Unlinkat(h.fd, tmp, 0)
		return nil, fmt.Errorf("rewrite %s without the keys git would run: %w", p, err)
	}
	if err := unix.Renameat(h.fd, tmp, h.fd, name); err != nil {
		f.Close()
		unix.Unlinkat(h.fd, tmp, 0)
		return nil, fmt.Errorf("rewrite %s without the keys git would run: %w", p, err)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// quarantine returns the descriptor of the git directory's quarantine,
// made when first needed. Something else in its place (the command's) is
// moved aside first.
func (h *gitDirHandle) quarantine() (int, error) {
	if h.q >= 0 {
		return h.q, nil
	}
	d := filepath.Join(h.path, quarantineDir)
	for range 2 {
		if err := unix.Mkdirat(h.fd, quarantineDir, 0o700); err != nil && !errors.Is(err, unix.EEXIST) {
			return -1, fmt.Errorf("make %s to keep what was set aside: %w", d, err)
		}
		fd, err := unix.Openat(h.fd, quarantineDir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err == nil {
			h.q = fd
			return fd, nil
		}
		if !errors.Is(err, unix.ELOOP) && !errors.Is(err, unix.ENOTDIR) {
			return -1, fmt.Errorf("open %s: %w", d, err)
		}
		aside := fmt.Sprintf("%s.%d", quarantineDir, time.Now().UnixNano())
		if err := unix.Renameat(h.fd, quarantineDir, h.fd, aside); err != nil {
			return -1, fmt.Errorf("move aside %s, which is not a directory: %w", d, err)
		}
	}
	return -1, fmt.Errorf("%s keeps being replaced", d)
}

// free is a name in the quarantine for rel that nothing holds yet.
func free(q int, rel string) string {
	base := strings.ReplaceAll(rel, "/", "-")
	name := base
	var st unix.Stat_t
	for i := 1; unix.Fstatat(q, name, &st, unix.AT_SYMLINK_NOFOLLOW) == nil; i++ {
		name = fmt.Sprintf("%s.%d", base, i)
	}
	return name
}

// move moves the entry name of the directory dirfd (rel in the git
// directory) into the quarantine, as it is: a link stays a link, a
// directory a directory. A hook kept there must not run by mistake: a
// regular file loses its execute bits.
func (h *gitDirHandle) move(dirfd int, name, rel string) error {
	q, err := h.quarantine()
	if err != nil {
		return err
	}
	dst := free(q, rel)
	if err := unix.Renameat(dirfd, name, q, dst); err != nil {
		return fmt.Errorf("move %s into %s: %w", filepath.Join(h.path, rel), filepath.Join(h.path, quarantineDir), err)
	}
	if fd, err := unix.Openat(q, dst, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0); err == nil {
		var st unix.Stat_t
		if unix.Fstat(fd, &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFREG {
			unix.Fchmod(fd, st.Mode&0o666)
		}
		unix.Close(fd)
	}
	return nil
}

// keep writes into the quarantine, as rel, header and then a file's
// text.
func (h *gitDirHandle) keep(rel, header string, text []byte) error {
	q, err := h.quarantine()
	if err != nil {
		return err
	}
	return h.create(q, free(q, rel), append([]byte(header), text...), filepath.Join(h.path, rel))
}

// create writes text into a new file name in the directory dirfd; what
// is the file it is a copy of, for errors.
func (h *gitDirHandle) create(dirfd int, name string, text []byte, what string) error {
	fd, err := unix.Openat(dirfd, name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return fmt.Errorf("keep %s before changing it: %w", what, err)
	}
	f := os.NewFile(uintptr(fd), name)
	_, werr := f.Write(text)
	if err := errors.Join(werr, f.Close()); err != nil {
		unix.Unlinkat(dirfd, name, 0)
		return fmt.Errorf("keep %s before changing it: %w", what, err)
	}
	return nil
}

// readme writes the quarantine's README, saying what it holds and what to
// do with it, unless it has one.
func (h *gitDirHandle) readme() error {
	q, err := h.quarantine()
	if err != nil {
		return err
	}
	var st unix.Stat_t
	if unix.Fstatat(q, "README", &st, unix.AT_SYMLINK_NOFOLLOW) == nil {
		return nil
	}
	err = h.create(q, "README", []byte(quarantineReadme(h.path)), "the README")
	if errors.Is(err, syscall.EEXIST) {
		return nil
	}
	return err
}

func (st *settle) isDir(p string) bool {
	fi, err := os.Lstat(p)
	return err == nil && fi.IsDir()
}

// Bounds of breakLinks: the largest file copied, and the entries of a
// hooks directory looked at.
const (
	maxLinkCopy   = 64 << 20
	maxHookBreaks = 1024
)

// breakLinks replaces each regular file among names in the git directory
// real (and, for "hooks", each file in it) that has other hard links by
// a copy of its own, same content and mode, in one rename: the read-only
// bind protectGitFiles then makes covers the only path to the file. A
// hard link a command made while the repository was writable (its own,
// made in an earlier call) would otherwise write the config or a hook
// past the bind. What was copied is remembered for the check after the
// call (b.bound): the copy's new ctime is toolhost's, not the command's.
func (b *builder) breakLinks(real string, names []string) {
	dfd, err := unix.Openat2(unix.AT_FDCWD, real, &unix.OpenHow{
		Flags:   unix.O_RDONLY | unix.O_DIRECTORY | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
	})
	if err != nil {
		return // nothing to bind either
	}
	defer unix.Close(dfd)
	for _, name := range names {
		if name != "hooks" {
			b.breakLink(dfd, real, name)
			continue
		}
		hfd, err := unix.Openat(dfd, "hooks", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			// None, or a link whose target is bound in its place: the
			// link as it is now is what the operator made.
			b.snapshot(dfd, real, "hooks")
			continue
		}
		dir := os.NewFile(uintptr(hfd), filepath.Join(real, "hooks"))
		hooks, _ := dir.Readdirnames(maxHookBreaks)
		for _, h := range hooks {
			// git never runs a sample, and the bind keeps it from being
			// renamed into a hook.
			if !strings.HasSuffix(h, ".sample") {
				b.breakLink(hfd, filepath.Join(real, "hooks"), h)
			}
		}
		dir.Close()
		b.snapshot(dfd, real, "hooks")
	}
}

// snapshot remembers the entry name of the directory dirfd (host path
// dir) as it is before the command runs, its inode and ctime
// (b.bound): the check after the call then tells the command's change
// from the operator's by the ctime itself, not by when the call began,
// which the coarse clock's slack (ctimeSlack) blurs: a hook or config
// the operator wrote a second before the call is not the command's.
func (b *builder) snapshot(dirfd int, dir, name string) {
	var st unix.Stat_t
	if unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW) != nil {
		return
	}
	if b.bound == nil {
		b.bound = map[string]boundFile{}
	}
	b.bound[filepath.Join(dir, name)] = boundFile{Ino: st.Ino, Ctime: st.Ctim.Sec*1e9 + st.Ctim.Nsec}
}

// breakLink is breakLinks of the entry name of the directory dirfd, whose
// host path is dir.
func (b *builder) breakLink(dirfd int, dir, name string) {
	var st unix.Stat_t
	if unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW) != nil {
		return
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG || st.Nlink <= 1 {
		b.snapshot(dirfd, dir, name)
		return
	}
	p := filepath.Join(dir, name)
	c, err := copyOver(dirfd, name, p)
	if err != nil {
		b.uncovered = append(b.uncovered, fmt.Sprintf("%s has other hard links and could not be replaced by a copy (%v): a command can write it by another path past its read-only bind; remove the other links (find -samefile %s)", p, err, p))
		return
	}
	if b.bound == nil {
		b.bound = map[string]boundFile{}
	}
	b.bound[p] = c
}

// copyOver replaces the regular file name of dirfd by a copy of it,
// through a temporary file renamed over it, and returns the copy's inode
// and ctime.
func copyOver(dirfd int, name, p string) (boundFile, error) {
	fd, err := unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return boundFile{}, err
	}
	src, err := regularFile(fd, p)
	if err != nil {
		return boundFile{}, err
	}
	defer src.Close()
	var st unix.Stat_t
	if err := unix.Fstat(int(src.Fd()), &st); err != nil {
		return boundFile{}, err
	}
	if st.Size > maxLinkCopy {
		return boundFile{}, fmt.Errorf("larger than %d bytes", maxLinkCopy)
	}
	tmp := fmt.Sprintf(".toolhost-unlink-%s-%d", name, time.Now().UnixNano())
	tfd, err := unix.Openat(dirfd, tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return boundFile{}, err
	}
	dst := os.NewFile(uintptr(tfd), tmp)
	_, err = io.Copy(dst, io.LimitReader(src, maxLinkCopy))
	if err == nil {
		err = unix.Fchmod(tfd, st.Mode&0o7777)
	}
	if err == nil {
		// The times stay the operator's: a tool that compares them sees
		// the same file.
		err = unix.UtimesNanoAt(dirfd, tmp, []unix.Timespec{st.Atim, st.Mtim}, unix.AT_SYMLINK_NOFOLLOW)
	}
	err = errors.Join(err, dst.Close())
	if err == nil {
		err = unix.Renameat(dirfd, tmp, dirfd, name)
	}
	if err != nil {
		unix.Unlinkat(dirfd, tmp, 0)
		return boundFile{}, err
	}
	var stx unix.Statx_t
	if err := unix.Statx(dirfd, name, unix.AT_SYMLINK_NOFOLLOW, unix.STATX_CTIME|unix.STATX_INO, &stx); err != nil {
		return boundFile{}, err
	}
	return boundFile{Ino: stx.Ino, Ctime: stx.Ctime.Sec*1e9 + int64(stx.Ctime.Nsec)}, nil
}
