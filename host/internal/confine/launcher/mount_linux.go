package launcher

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/toolhost/toolhost/host/internal/confine/spec"
)

// The command's root is built the way bubblewrap builds one. The launcher
// runs in a mount namespace of its own, made private so that nothing it
// mounts propagates to the host. It mounts a tmpfs on /tmp (a directory
// every system has; the tmpfs covers it only inside this namespace) and
// pivots into it, which leaves the host's whole tree at /oldroot, /tmp
// included: the tmpfs left /tmp when it became the root. A second tmpfs
// at /newroot is the command's root: the policy's mounts are bound into
// it from /oldroot, then /dev, /proc and /dev/shm, and finally the
// launcher pivots into /newroot and detaches everything else, so the
// host's tree is no longer reachable by any path.
//
// Paths are resolved with file descriptors, never by name alone:
//
//   - A Source is opened beneath /oldroot with RESOLVE_NO_SYMLINKS, so a
//     directory on its way that a command replaced with a symlink (the
//     workspace is writable) fails the launch instead of mounting what the
//     link points at. confine.Build lists canonical paths. When the Source
//     itself is a symlink (/bin -> usr/bin), the same symlink is made at
//     Target: it resolves inside the new root, where only what is mounted
//     exists.
//   - A Target is walked component by component beneath /newroot, with
//     RESOLVE_NO_SYMLINKS too: a missing directory is made (inside a
//     writable bind mount that makes it on the host, as bubblewrap does),
//     and a symlink on the way fails the launch.
//   - Mounts are made with open_tree and move_mount on those descriptors,
//     and made read-only with mount_setattr on the detached copy before it
//     is attached, recursively, so a read-only tree is never writable,
//     not even for a moment, and its submounts are read-only too.
//
// mount_setattr needs Linux 5.12; Landlock, which confinement requires
// as well, needs 5.13, so a kernel that lacks mount_setattr cannot confine
// a command anyway, and the launch fails closed with that fix instead of
// remounting mount by mount.

const (
	// baseDir is where the launcher's scratch root is mounted before the
	// first pivot; oldRoot and newRoot are inside it.
	baseDir = "/tmp"
	oldRoot = "/oldroot"
	newRoot = "/newroot"
)

// devNodes are the device nodes bound into the command's /dev from the
// host's.
var devNodes = []string{"null", "zero", "full", "random", "urandom", "tty"}

// devLinks are the symlinks of the command's /dev.
var devLinks = [][2]string{
	{"fd", "/proc/self/fd"},
	{"stdin", "/proc/self/fd/0"},
	{"stdout", "/proc/self/fd/1"},
	{"stderr", "/proc/self/fd/2"},
	{"core", "/proc/kcore"},
}

// The sizes of the launcher's tmpfs mounts. A tmpfs grows to half of
// RAM unless told otherwise, and without a cgroup nothing else would stop
// a command that fills one.
const (
	// scratchMax bounds each tmpfs a command writes to (a MountTmpfs such
	// as $HOME's, /dev/shm): Limits.MemoryBytes when set and smaller.
	scratchMax = 1 << 30
	// skeletonSize bounds the tmpfs that hold only directories, empty
	// files and short links (mount points): the scratch root, the
	// command's root, /dev and a hidden directory's. Those take inodes,
	// not blocks; a long symlink (a policy source that is one) takes a
	// page.
	skeletonSize = 1 << 20
)

// scratchSize is the size of a tmpfs the command writes to under l.
func scratchSize(l spec.Limits) uint64 {
	if l.MemoryBytes > 0 {
		return min(l.MemoryBytes, scratchMax)
	}
	return scratchMax
}

// procReadOnly are the parts of the fresh /proc made read-only, as
// bubblewrap does: a command that runs as the user who owns the kernel's
// tunables (root) must not reach them through the namespace's /proc.
var procReadOnly = []string{"sys", "sysrq-trigger", "irq", "bus"}

// buildRoot makes the command's root from p and enters it, with p.Dir as
// the working directory. The calling process must be alone in a new
// mount namespace (the launcher is).
func buildRoot(p *spec.Policy) error {
	r, err := prepareRoot()
	if err != nil {
		return err
	}
	_, err = finishRoot(r, p, nil)
	return err
}

// prepareRoot is the part of buildRoot that no policy changes, which a
// warm launcher does while it waits for its command: it makes the
// mounts private, pivots into a scratch root holding the host's tree at
// oldRoot, and mounts the command's empty root at newRoot.
func prepareRoot() (*roots, error) {
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return nil, fmt.Errorf("make the mounts private: %w", err)
	}
	if err := unix.Mount("tmpfs", baseDir, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, fmt.Sprintf("mode=0700,size=%d", skeletonSize)); err != nil {
		return nil, fmt.Errorf("mount the scratch root on %s: %w", baseDir, err)
	}
	for _, d := range []string{oldRoot, newRoot} {
		if err := os.Mkdir(baseDir+d, 0o700); err != nil {
			return nil, fmt.Errorf("make the scratch root: %w", err)
		}
	}
	if err := unix.PivotRoot(baseDir, baseDir+oldRoot); err != nil {
		return nil, fmt.Errorf("pivot into the scratch root: %w", err)
	}
	if err := unix.Chdir("/"); err != nil {
		return nil, err
	}
	if err := unix.Mount("tmpfs", newRoot, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, fmt.Sprintf("mode=0755,size=%d", skeletonSize)); err != nil {
		return nil, fmt.Errorf("mount the command's root: %w", err)
	}
	r, err := openRoots()
	if err != nil {
		return nil, err
	}
	if err := r.makeCommon(); err != nil {
		r.close()
		return nil, err
	}
	return r, nil
}

// makeCommon makes the command root's /dev and /proc. No policy mounts
// anything in either (spec.Policy.Check), so both are made before the
// policy's mounts, and before the command comes in a warm launcher.
func (r *roots) makeCommon() error {
	if err := r.makeDev(); err != nil {
		return fmt.Errorf("make /dev: %w", err)
	}
	if err := r.makeProc(); err != nil {
		return fmt.Errorf("mount /proc: %w", err)
	}
	return nil
}

// finishRoot makes p's mounts in the root prepareRoot made and enters
// it; it closes r. pm, when not nil, is what a warm launcher mounted
// there ahead (premount): the mounts p begins with are kept when all of
// them are, and the root is made again otherwise. It returns how many
// of p's mounts were kept.
func finishRoot(r *roots, p *spec.Policy, pm *premounted) (int, error) {
	defer r.close()
	first := 0
	if pm != nil {
		if first = pm.kept(r, p); first < len(pm.mounts) || pm.broken {
			first = 0
			if err := r.remake(); err != nil {
				return 0, fmt.Errorf("make the command's root again, other than the one made ahead: %w", err)
			}
			pm.unmake(r)
		}
	}
	r.scratch = scratchSize(p.Limits)
	for i := first; i < len(p.Mounts); i++ {
		if err := r.mount(p.Mounts[i]); err != nil {
			return 0, explainMountMax(err, i+1, len(p.Mounts))
		}
	}
	// /dev/shm is as large as the command's scratch space.
	if err := r.makeShm(); err != nil {
		return 0, explainMountMax(fmt.Errorf("mount /dev/shm: %w", err), len(p.Mounts), len(p.Mounts))
	}
	r.close()
	return first, enterRoot(p.Dir)
}

// premounted is what a warm launcher mounted in the command's root
// before its command came: mounts, made with tmpfs mounts of the
// scratch size, from the sources of ids (sourceOf) as they were then,
// their targets resolving to targets (targetOf) once all were made.
// broken says a mount failed and may have left its target made.
type premounted struct {
	mounts  []spec.Mount
	ids     []sourceID
	targets []targetID
	scratch uint64
	broken  bool
	// made are the directories the mounts made in the new root
	// (roots.made): those in writable binds are on the host, in the
	// tmp made for the command or a root, and a root made anew removes
	// them (unmake).
	made []string
}

// premount makes p's mounts in r's command root, in order, until one
// cannot be: what the host expects the command's policy to begin with.
func (r *roots) premount(p *spec.Policy) *premounted {
	pm := &premounted{scratch: scratchSize(p.Limits)}
	r.scratch = pm.scratch
	r.recording = true
	defer func() {
		pm.made, r.made, r.recording = r.made, nil, false
	}()
	for _, m := range p.Mounts {
		id, err := r.sourceOf(m)
		if err != nil {
			break
		}
		if err := r.mount(m); err != nil {
			pm.broken = true
			break
		}
		pm.mounts = append(pm.mounts, m)
		pm.ids = append(pm.ids, id)
	}
	// What each target shows once all are made: a later mount may cover
	// an earlier one's target, as it will at the command's start.
	for _, m := range pm.mounts {
		pm.targets = append(pm.targets, r.targetOf(m.Target))
	}
	return pm
}

// targetID is what a target in the command's root resolves to: the
// mount and inode it shows, or absent (a hide skipped).
type targetID struct {
	mnt, dev, ino uint64
	absent, bad   bool
}

// targetOf resolves target in the new root now, without following
// symlinks on the way or at the end.
func (r *roots) targetOf(target string) targetID {
	dir, base, err := r.parent(target, false)
	if errors.Is(err, unix.ENOENT) {
		return targetID{absent: true}
	}
	if err != nil {
		return targetID{bad: true}
	}
	defer unix.Close(dir)
	var stx unix.Statx_t
	if err := unix.Statx(dir, base, unix.AT_SYMLINK_NOFOLLOW, unix.STATX_MNT_ID|unix.STATX_INO, &stx); err != nil {
		if errors.Is(err, unix.ENOENT) {
			return targetID{absent: true}
		}
		return targetID{bad: true}
	}
	return targetID{mnt: stx.Mnt_id, dev: uint64(stx.Dev_major)<<32 | uint64(stx.Dev_minor), ino: stx.Ino}
}

// kept is how many of the mounts made ahead p begins with, made from the
// same files and still in place: a source renamed or replaced since (a
// root moved aside and made anew) is another file under the same name,
// which the mount made ahead would not show, and a target's file
// replaced on the host (renamed over, or a hard link swapped in) took
// the mount made on it along, detached, so that its path shows the
// new file unhidden or writable.
func (pm *premounted) kept(r *roots, p *spec.Policy) int {
	if scratchSize(p.Limits) != pm.scratch {
		return 0
	}
	for i, m := range pm.mounts {
		if i >= len(p.Mounts) || p.Mounts[i] != m {
			return i
		}
		if id, err := r.sourceOf(m); err != nil || id != pm.ids[i] {
			return i
		}
		// The mount made ahead is still where the path leads: not
		// detached with its dentry (a file renamed over, unlinked, a
		// hard link's other name), and a hide skipped still has
		// nothing to hide.
		if t := r.targetOf(m.Target); t.bad || t != pm.targets[i] {
			return i
		}
	}
	return len(pm.mounts)
}

// unmake removes, once the root made ahead is detached, the
// directories its mounts made on the host, deepest first: the mount
// points of roots under /tmp that the launcher made in the tmp made for
// the command, which would show it another call's root names. Only
// empty directories go (rmdir), beneath the host's root, following no
// symlink.
func (pm *premounted) unmake(r *roots) {
	for i := len(pm.made) - 1; i >= 0; i-- {
		host, ok := pm.hostDir(pm.made[i])
		if !ok {
			continue
		}
		rel, err := relPath(host)
		if err != nil || rel == "." {
			continue
		}
		dirPart, base := filepath.Split(rel)
		dir, err := openBeneath(r.old, dirPart)
		if err != nil {
			continue
		}
		unix.Unlinkat(dir, base, unix.AT_REMOVEDIR)
		unix.Close(dir)
	}
}

// hostDir is the host path of path in the root made ahead, when the
// mount that decides it there (the deepest, the latest of equals) is a
// writable bind.
func (pm *premounted) hostDir(path string) (string, bool) {
	best := -1
	for i, m := range pm.mounts {
		if strings.HasPrefix(path, m.Target+"/") && (best < 0 || len(m.Target) >= len(pm.mounts[best].Target)) {
			best = i
		}
	}
	if best < 0 || pm.mounts[best].Kind != spec.MountWrite {
		return "", false
	}
	m := pm.mounts[best]
	return filepath.Join(m.Source, strings.TrimPrefix(path, m.Target)), true
}

// sourceID is what a mount's source is: a file's device and inode, or
// a symlink's text.
type sourceID struct {
	dev, ino uint64
	link     string
}

// sourceOf is the source of m now; the zero sourceID for a mount that
// has none (tmpfs, hide). Staged mounts are the call's own and are not
// made ahead.
func (r *roots) sourceOf(m spec.Mount) (sourceID, error) {
	switch m.Kind {
	case spec.MountTmpfs, spec.MountHide:
		return sourceID{}, nil
	case spec.MountRead, spec.MountWrite:
	default:
		return sourceID{}, fmt.Errorf("a %s mount is not made ahead", m.Kind)
	}
	fd, link, err := r.openSource(m.Source)
	if err != nil {
		return sourceID{}, err
	}
	if fd < 0 {
		return sourceID{link: link}, nil
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return sourceID{}, err
	}
	return sourceID{dev: st.Dev, ino: st.Ino}, nil
}

// remake replaces the command's root with an empty one, /dev and /proc
// made, for a command whose policy is not what was mounted ahead. The
// old root goes whole, with everything mounted in it.
func (r *roots) remake() error {
	if err := unix.Unmount(newRoot, unix.MNT_DETACH); err != nil {
		return fmt.Errorf("detach it: %w", err)
	}
	if err := unix.Mount("tmpfs", newRoot, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, fmt.Sprintf("mode=0755,size=%d", skeletonSize)); err != nil {
		return fmt.Errorf("mount it: %w", err)
	}
	unix.Close(r.new)
	var err error
	if r.new, err = unix.Open(newRoot, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0); err != nil {
		return fmt.Errorf("open it: %w", err)
	}
	return r.makeCommon()
}

// enterRoot detaches the host's tree and pivots into the command's root.
func enterRoot(dir string) error {
	if err := unix.Unmount(oldRoot, unix.MNT_DETACH); err != nil {
		return fmt.Errorf("detach the host's root: %w", err)
	}
	if err := unix.Chdir(newRoot); err != nil {
		return err
	}
	// pivot_root(".", ".") stacks the scratch root on top of the new one,
	// and the unmount takes it away: nothing but the new root is left.
	if err := unix.PivotRoot(".", "."); err != nil {
		return fmt.Errorf("pivot into the command's root: %w", err)
	}
	if err := unix.Unmount(".", unix.MNT_DETACH); err != nil {
		return fmt.Errorf("detach the scratch root: %w", err)
	}
	// The root's own directory holds only mount points: a write there
	// would be lost anyway, so it fails as a read-only place does.
	if err := unix.MountSetattr(unix.AT_FDCWD, "/", 0, &unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY}); err != nil {
		return fmt.Errorf("make the command's root read-only: %w", mountSetattrErr(err))
	}
	if err := unix.Chdir(dir); err != nil {
		return fmt.Errorf("working directory %s: %w; it must lie inside a mount of the command's root (a root of the sandbox)", dir, err)
	}
	return nil
}

// roots holds the two trees a mount goes between.
type roots struct {
	old, new int    // O_PATH descriptors of /oldroot and /newroot
	scratch  uint64 // the size of a tmpfs the command writes to (scratchSize)
	// made lists the directories mounts made in the new root, by their
	// paths there, while recording (premount).
	made      []string
	recording bool
}

// madeDir notes the directory at path in the new root as made.
func (r *roots) madeDir(path string) {
	if r.recording {
		r.made = append(r.made, path)
	}
}

func openRoots() (*roots, error) {
	r := &roots{old: -1, new: -1}
	var err error
	if r.old, err = unix.Open(oldRoot, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0); err != nil {
		return nil, fmt.Errorf("open the host's root: %w", err)
	}
	if r.new, err = unix.Open(newRoot, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0); err != nil {
		r.close()
		return nil, fmt.Errorf("open the command's root: %w", err)
	}
	return r, nil
}

func (r *roots) close() {
	for _, fd := range []*int{&r.old, &r.new} {
		if *fd >= 0 {
			unix.Close(*fd)
			*fd = -1
		}
	}
}

// mount applies one Mount of the policy.
func (r *roots) mount(m spec.Mount) error {
	var err error
	switch m.Kind {
	case spec.MountRead, spec.MountWrite:
		err = r.bind(m)
	case spec.MountTmpfs:
		err = r.tmpfs(m.Target)
	case spec.MountHide:
		err = r.hide(m.Target)
	case spec.MountStage:
		err = r.stage(m)
	default:
		err = fmt.Errorf("unknown kind %q", m.Kind)
	}
	if err != nil {
		return fmt.Errorf("mount %s %s: %w", m.Kind, describe(m), err)
	}
	return nil
}

func describe(m spec.Mount) string {
	if m.Source == "" || m.Source == m.Target {
		return m.Target
	}
	return m.Source + " at " + m.Target
}

// bind binds m.Source at m.Target, read-only for MountRead, or makes the
// same symlink when the Source is one.
func (r *roots) bind(m spec.Mount) error {
	src, link, err := r.openSource(m.Source)
	if err != nil {
		return err
	}
	if src < 0 {
		return r.symlink(link, m.Target)
	}
	defer unix.Close(src)
	var st unix.Stat_t
	if err := unix.Fstat(src, &st); err != nil {
		return err
	}
	dst, err := r.target(m.Target, st.Mode&unix.S_IFMT == unix.S_IFDIR)
	if err != nil {
		return err
	}
	defer unix.Close(dst)
	attr := uint64(unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV)
	if m.Kind == spec.MountRead {
		attr |= unix.MOUNT_ATTR_RDONLY
	}
	return bindFD(src, dst, attr)
}

// stage mounts at m.Target an overlay whose lower layer is m.Source and
// whose upper and work directories are m.Stage's "upper" and "work": the
// command sees m.Source and writes as if to it, but what it writes lands
// in m.Stage, which the host applies after the command ended, keeping
// only what it allows. The real directory is never written through it,
// so git outside never sees there what the command wrote, even while it
// runs. A user namespace may mount an overlay (Linux 5.11) with its
// extended attributes in the user.* namespace (userxattr). The layers
// are named by the descriptors opened beneath /oldroot, through
// /proc/self/fd, so no symlink on their paths is followed.
func (r *roots) stage(m spec.Mount) error {
	lower, link, err := r.openSource(m.Source)
	if err != nil {
		return err
	}
	if lower < 0 {
		return fmt.Errorf("the source %s is a symlink (to %s); only a directory can be staged", m.Source, link)
	}
	defer unix.Close(lower)
	layers := map[string]int{"lowerdir": lower}
	for _, name := range []string{"upper", "work"} {
		fd, l, err := r.openSource(filepath.Join(m.Stage, name))
		if err == nil && fd < 0 {
			err = fmt.Errorf("%s is a symlink (to %s)", filepath.Join(m.Stage, name), l)
		}
		if err != nil {
			return fmt.Errorf("the staging directory: %w", err)
		}
		defer unix.Close(fd)
		layers[name+"dir"] = fd
	}
	dst, err := r.target(m.Target, true)
	if err != nil {
		return err
	}
	defer unix.Close(dst)
	fs, err := unix.Fsopen("overlay", unix.FSOPEN_CLOEXEC)
	if err != nil {
		return fmt.Errorf("open an overlay: %w (the kernel needs overlayfs, Linux 5.11 or later for a user namespace to mount one)", err)
	}
	defer unix.Close(fs)
	for _, key := range []string{"lowerdir", "upperdir", "workdir"} {
		if err := unix.FsconfigSetString(fs, key, fmt.Sprintf("%s/proc/self/fd/%d", oldRoot, layers[key])); err != nil {
			return fmt.Errorf("configure the overlay's %s: %w%s", key, err, fsLog(fs))
		}
	}
	// volatile: the overlay does not sync the upper layer's whole
	// filesystem when it is unmounted (tens of milliseconds at the end of
	// every call on a disk); the stage is read by the host from its page
	// cache, and one lost to a crash leaves the real directory as it was.
	for _, flag := range []string{"userxattr", "volatile"} {
		if err := unix.FsconfigSetFlag(fs, flag); err != nil {
			return fmt.Errorf("configure the overlay: %s: %w%s", flag, err, fsLog(fs))
		}
	}
	if err := unix.FsconfigCreate(fs); err != nil {
		return fmt.Errorf("create the overlay (the state directory's filesystem must support user extended attributes, as ext4, xfs, btrfs and tmpfs do): %w%s", err, fsLog(fs))
	}
	mnt, err := unix.Fsmount(fs, unix.FSMOUNT_CLOEXEC, unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NODEV)
	if err != nil {
		return fmt.Errorf("mount the overlay: %w%s", err, fsLog(fs))
	}
	defer unix.Close(mnt)
	if err := unix.MoveMount(mnt, "", dst, "", unix.MOVE_MOUNT_F_EMPTY_PATH|unix.MOVE_MOUNT_T_EMPTY_PATH); err != nil {
		return attachErr("attach the overlay", err)
	}
	return nil
}

// fsLog is what the filesystem said about a failed configuration
// (the messages read from its fsopen descriptor), "" when nothing.
func fsLog(fs int) string {
	var msgs []string
	buf := make([]byte, 1024)
	for range 8 {
		n, err := unix.Read(fs, buf)
		if err != nil || n <= 0 {
			break
		}
		msgs = append(msgs, strings.TrimSpace(string(buf[:n])))
	}
	if len(msgs) == 0 {
		return ""
	}
	return " (" + strings.Join(msgs, "; ") + ")"
}

// bindFD attaches a recursive copy of the tree at src on dst, with the
// mount attributes attr set on the copy before it is attached.
func bindFD(src, dst int, attr uint64) error {
	tree, err := unix.OpenTree(src, "", unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_RECURSIVE|unix.AT_EMPTY_PATH)
	if err != nil {
		return fmt.Errorf("copy the mount: %w", err)
	}
	defer unix.Close(tree)
	if attr != 0 {
		if err := unix.MountSetattr(tree, "", unix.AT_EMPTY_PATH|unix.AT_RECURSIVE, &unix.MountAttr{Attr_set: attr}); err != nil {
			return fmt.Errorf("set its attributes: %w", mountSetattrErr(err))
		}
	}
	if err := unix.MoveMount(tree, "", dst, "", unix.MOVE_MOUNT_F_EMPTY_PATH|unix.MOVE_MOUNT_T_EMPTY_PATH); err != nil {
		return attachErr("attach the mount", err)
	}
	return nil
}

// mountMaxError is a mount the kernel refused with ENOSPC: the mount
// namespace holds fs.mount-max mounts already. No disk is full.
type mountMaxError struct{ err error }

func (e *mountMaxError) Error() string { return e.err.Error() }
func (e *mountMaxError) Unwrap() error { return e.err }

// attachErr wraps the error of a call that attaches a mount (what says
// which), marking ENOSPC as the mount limit's.
func attachErr(what string, err error) error {
	err = fmt.Errorf("%s: %w", what, err)
	if errors.Is(err, unix.ENOSPC) {
		return &mountMaxError{err}
	}
	return err
}

// explainMountMax adds to err, when the mount limit caused it, the limit,
// how far the policy's mounts got (done of total) and what to do; other
// errors pass unchanged. A bind copies every mount below its source too,
// so a root with many submounts on the host counts them all.
func explainMountMax(err error, done, total int) error {
	var mm *mountMaxError
	if !errors.As(err, &mm) {
		return err
	}
	limit := "100000 (the default)"
	if b, rerr := os.ReadFile(oldRoot + "/proc/sys/fs/mount-max"); rerr == nil {
		limit = strings.TrimSpace(string(b))
	}
	return fmt.Errorf("%w: the command's root needs more mounts than the kernel allows in one mount namespace (fs.mount-max = %s), reached at mount %d of the policy's %d, each also copying the mounts below its source on the host: "+
		"remove the repositories nested in the roots that are not needed (each is mounted to keep its .git in place) or what is mounted below the roots, or raise the limit as root with sysctl -w fs.mount-max=N", err, limit, done, total)
}

func mountSetattrErr(err error) error {
	if errors.Is(err, unix.ENOSYS) {
		return fmt.Errorf("%w: the kernel lacks mount_setattr (Linux 5.12); confinement needs Linux 5.13 or later", err)
	}
	return err
}

// tmpfs puts an empty writable tmpfs at target.
func (r *roots) tmpfs(target string) error {
	dst, err := r.target(target, true)
	if err != nil {
		return err
	}
	defer unix.Close(dst)
	return newTmpfs(dst, "0755", r.scratch, unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NODEV)
}

// hide makes target unreadable: an empty tmpfs no one may enter over a
// directory, the host's /dev/null on a mount that does not allow devices
// over a file (opening it fails). A target that does not exist has
// nothing to hide and is skipped: making it would create it on the host
// when it lies in a writable tree.
func (r *roots) hide(target string) error {
	dir, base, err := r.parent(target, false)
	if errors.Is(err, unix.ENOENT) {
		return nil
	}
	if err != nil {
		return err
	}
	defer unix.Close(dir)
	var st unix.Stat_t
	if err := unix.Fstatat(dir, base, &st, unix.AT_SYMLINK_NOFOLLOW); errors.Is(err, unix.ENOENT) {
		return nil
	} else if err != nil {
		return err
	}
	dst, err := unix.Openat(dir, base, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(dst)
	const hidden = unix.MOUNT_ATTR_RDONLY | unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV | unix.MOUNT_ATTR_NOEXEC
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFDIR:
		return newTmpfs(dst, "0000", skeletonSize, hidden)
	case unix.S_IFLNK:
		return errors.New("it is a symlink inside the command's root; hide the path it points to")
	}
	null, err := unix.Openat(r.old, "dev/null", unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("open the host's /dev/null: %w", err)
	}
	defer unix.Close(null)
	return bindFD(null, dst, hidden)
}

// newTmpfs attaches a new tmpfs of at most size bytes whose root has mode
// on dst.
func newTmpfs(dst int, mode string, size uint64, attr int) error {
	fs, err := unix.Fsopen("tmpfs", unix.FSOPEN_CLOEXEC)
	if err != nil {
		return fmt.Errorf("open a tmpfs: %w", err)
	}
	defer unix.Close(fs)
	if err := unix.FsconfigSetString(fs, "mode", mode); err != nil {
		return fmt.Errorf("configure a tmpfs: %w", err)
	}
	if err := unix.FsconfigSetString(fs, "size", strconv.FormatUint(size, 10)); err != nil {
		return fmt.Errorf("configure a tmpfs of %d bytes: %w", size, err)
	}
	if err := unix.FsconfigCreate(fs); err != nil {
		return fmt.Errorf("create a tmpfs: %w", err)
	}
	mnt, err := unix.Fsmount(fs, unix.FSMOUNT_CLOEXEC, attr)
	if err != nil {
		return fmt.Errorf("mount a tmpfs: %w", err)
	}
	defer unix.Close(mnt)
	if err := unix.MoveMount(mnt, "", dst, "", unix.MOVE_MOUNT_F_EMPTY_PATH|unix.MOVE_MOUNT_T_EMPTY_PATH); err != nil {
		return attachErr("attach a tmpfs", err)
	}
	return nil
}

// openSource opens the host path src beneath /oldroot without following
// symlinks on the way. When src itself is a symlink it returns -1 and the
// link's text instead.
func (r *roots) openSource(src string) (int, string, error) {
	rel, err := relPath(src)
	if err != nil {
		return -1, "", err
	}
	if rel == "." {
		return -1, "", errors.New("the source is the host's whole root; list the directories the command needs")
	}
	dirPart, base := filepath.Split(rel)
	dir, err := openBeneath(r.old, dirPart)
	if err != nil {
		return -1, "", sourceErr(src, err)
	}
	defer unix.Close(dir)
	var st unix.Stat_t
	if err := unix.Fstatat(dir, base, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return -1, "", sourceErr(src, err)
	}
	if st.Mode&unix.S_IFMT == unix.S_IFLNK {
		link, err := readlinkat(dir, base)
		return -1, link, err
	}
	fd, err := unix.Openat(dir, base, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, "", sourceErr(src, err)
	}
	return fd, "", nil
}

func sourceErr(src string, err error) error {
	switch {
	case errors.Is(err, unix.ENOENT):
		return fmt.Errorf("the source %s does not exist on the host: create it or remove it from the configuration", src)
	case errors.Is(err, unix.ELOOP), errors.Is(err, unix.EXDEV):
		return fmt.Errorf("the source %s passes through a symlink: the policy lists canonical paths only (resolve it with realpath)", src)
	case errors.Is(err, unix.ENOTDIR):
		return fmt.Errorf("the source %s passes through a file that is not a directory", src)
	}
	return fmt.Errorf("the source %s: %w", src, err)
}

func readlinkat(dir int, name string) (string, error) {
	buf := make([]byte, unix.PathMax)
	n, err := unix.Readlinkat(dir, name, buf)
	if err != nil {
		return "", err
	}
	return string(buf[:n]), nil
}

// symlink makes a symlink with text link at target in the new root.
func (r *roots) symlink(link, target string) error {
	dir, base, err := r.parent(target, true)
	if err != nil {
		return err
	}
	defer unix.Close(dir)
	err = unix.Symlinkat(link, dir, base)
	if errors.Is(err, unix.EEXIST) {
		if got, rerr := readlinkat(dir, base); rerr == nil && got == link {
			return pinSymlink(dir, base, target)
		}
		return fmt.Errorf("the target %s already exists inside the command's root and is not the symlink %s", target, link)
	}
	return err
}

// pinSymlink binds the symlink base in dir onto itself. A link that is
// already there lies in a writable tree (a .git/hooks that links to the
// repository's hooks directory): the mount at its target protects what it
// points to, and the link must not be replaced by a directory of the
// command's own. A mount point cannot be unlinked or renamed (EBUSY), and
// a link bound onto itself still resolves the same.
func pinSymlink(dir int, base, target string) error {
	tree, err := unix.OpenTree(dir, base, unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_SYMLINK_NOFOLLOW)
	if err != nil {
		return fmt.Errorf("cannot pin the symlink %s in place: %w", target, err)
	}
	defer unix.Close(tree)
	if err := unix.MoveMount(tree, "", dir, base, unix.MOVE_MOUNT_F_EMPTY_PATH); err != nil {
		return attachErr("cannot pin the symlink "+target+" in place", err)
	}
	return nil
}

// target returns an O_PATH descriptor of target in the new root, made
// (with its missing parents) as a directory or an empty file when it does
// not exist.
func (r *roots) target(target string, isDir bool) (int, error) {
	dir, base, err := r.parent(target, true)
	if err != nil {
		return -1, err
	}
	defer unix.Close(dir)
	if base == "." {
		return unix.Dup(dir)
	}
	if isDir {
		err := unix.Mkdirat(dir, base, 0o755)
		if err != nil && !errors.Is(err, unix.EEXIST) {
			return -1, targetErr(target, err)
		}
		if err == nil {
			r.madeDir(filepath.Clean(target))
		}
	} else {
		fd, err := unix.Openat(dir, base, unix.O_CREAT|unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o644)
		if err != nil && !errors.Is(err, unix.EISDIR) {
			return -1, targetErr(target, err)
		}
		if err == nil {
			unix.Close(fd)
		}
	}
	fd, err := unix.Openat(dir, base, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, targetErr(target, err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return -1, err
	}
	if got := st.Mode&unix.S_IFMT == unix.S_IFDIR; got != isDir || st.Mode&unix.S_IFMT == unix.S_IFLNK {
		unix.Close(fd)
		return -1, fmt.Errorf("the target %s exists inside the command's root as a %s, and the source is not one", target, kindName(st.Mode))
	}
	return fd, nil
}

func kindName(mode uint32) string {
	switch mode & unix.S_IFMT {
	case unix.S_IFDIR:
		return "directory"
	case unix.S_IFLNK:
		return "symlink"
	}
	return "file"
}

func targetErr(target string, err error) error {
	switch {
	case errors.Is(err, unix.ELOOP), errors.Is(err, unix.EXDEV):
		return fmt.Errorf("the target %s passes through a symlink inside the command's root; remove the symlink or mount the path it points to", target)
	case errors.Is(err, unix.EROFS):
		return fmt.Errorf("the target %s does not exist and lies in a read-only mount, so no mount point can be made for it: create it on the host or mount its parent writable", target)
	}
	return fmt.Errorf("the target %s: %w", target, err)
}

// parent opens the directory of target in the new root, making the
// missing ones when create is set, and returns it with target's last
// name ("." for the root itself).
func (r *roots) parent(target string, create bool) (int, string, error) {
	rel, err := relPath(target)
	if err != nil {
		return -1, "", err
	}
	if rel == "." {
		fd, err := unix.Dup(r.new)
		return fd, ".", err
	}
	dirPart, base := filepath.Split(rel)
	dir, err := unix.Dup(r.new)
	if err != nil {
		return -1, "", err
	}
	path := "/"
	for _, name := range strings.Split(strings.TrimSuffix(dirPart, "/"), "/") {
		if name == "" {
			continue
		}
		path = filepath.Join(path, name)
		next, err := openBeneath(dir, name)
		if errors.Is(err, unix.ENOENT) && create {
			if err = unix.Mkdirat(dir, name, 0o755); err == nil {
				r.madeDir(path)
			}
			if err == nil || errors.Is(err, unix.EEXIST) {
				next, err = openBeneath(dir, name)
			}
		}
		unix.Close(dir)
		if err != nil {
			if errors.Is(err, unix.ENOENT) {
				return -1, "", err
			}
			return -1, "", targetErr(target, err)
		}
		dir = next
	}
	return dir, base, nil
}

// openBeneath opens the directory rel beneath dir, following no symlink.
func openBeneath(dir int, rel string) (int, error) {
	if rel == "" {
		rel = "."
	}
	return unix.Openat2(dir, rel, &unix.OpenHow{
		Flags:   unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
	})
}

// relPath turns an absolute path into one relative to a root.
func relPath(p string) (string, error) {
	if !filepath.IsAbs(p) {
		return "", fmt.Errorf("%q is not an absolute path", p)
	}
	return filepath.Rel("/", filepath.Clean(p))
}

// makeDev mounts the command's /dev: a tmpfs with the host's harmless
// device nodes bound in, the usual links and a private devpts; makeShm
// adds /dev/shm.
func (r *roots) makeDev() error {
	dev, err := r.target("/dev", true)
	if err != nil {
		return err
	}
	err = newTmpfs(dev, "0755", skeletonSize, unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NOEXEC)
	unix.Close(dev)
	if err != nil {
		return err
	}
	for _, name := range devNodes {
		src, err := unix.Openat(r.old, "dev/"+name, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if errors.Is(err, unix.ENOENT) {
			continue // a host without it (a container without a tty)
		}
		if err != nil {
			return fmt.Errorf("open the host's /dev/%s: %w", name, err)
		}
		dst, err := r.target("/dev/"+name, false)
		if err == nil {
			err = bindFD(src, dst, unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NOEXEC)
			unix.Close(dst)
		}
		unix.Close(src)
		if err != nil {
			return fmt.Errorf("/dev/%s: %w", name, err)
		}
	}
	for _, l := range devLinks {
		if err := os.Symlink(l[1], newRoot+"/dev/"+l[0]); err != nil {
			return err
		}
	}
	// A private devpts gives the command pseudo-terminals (script, expect)
	// that are not the host's. It is a convenience: without it a command
	// only lacks ptys.
	if err := os.Mkdir(newRoot+"/dev/pts", 0o755); err != nil {
		return err
	}
	if unix.Mount("devpts", newRoot+"/dev/pts", "devpts", unix.MS_NOSUID|unix.MS_NOEXEC, "newinstance,ptmxmode=0666,mode=620") == nil {
		if err := os.Symlink("pts/ptmx", newRoot+"/dev/ptmx"); err != nil {
			return err
		}
	}
	return nil
}

// makeShm mounts the command's /dev/shm in the /dev makeDev made.
func (r *roots) makeShm() error {
	shm, err := r.target("/dev/shm", true)
	if err != nil {
		return err
	}
	defer unix.Close(shm)
	return newTmpfs(shm, "1777", r.scratch, unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NODEV)
}

// makeProc mounts the PID namespace's own /proc, with the kernel's
// tunables read-only.
func (r *roots) makeProc() error {
	dst, err := r.target("/proc", true)
	if err != nil {
		return err
	}
	unix.Close(dst)
	proc := newRoot + "/proc"
	if err := unix.Mount("proc", proc, "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		if errors.Is(err, unix.ENOSPC) {
			return attachErr("mount", err)
		}
		return fmt.Errorf("%w (a /proc partly hidden on the host, as in some containers, forbids a new one)", err)
	}
	for _, name := range procReadOnly {
		fd, err := unix.Open(proc+"/"+name, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if errors.Is(err, unix.ENOENT) {
			continue
		}
		if err != nil {
			return fmt.Errorf("/proc/%s: %w", name, err)
		}
		err = bindFD(fd, fd, unix.MOUNT_ATTR_RDONLY|unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NODEV|unix.MOUNT_ATTR_NOEXEC)
		unix.Close(fd)
		if err != nil {
			return fmt.Errorf("/proc/%s: %w", name, err)
		}
	}
	return nil
}
