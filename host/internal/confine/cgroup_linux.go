package confine

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// A command's cgroup lives in toolhost's own cgroup of each hierarchy,
// at toolhost-<pid>/<name>, so that what toolhost may do there is what
// whoever started it delegated, and each toolhost process has its own
// directory. When a toolhost makes that directory, it removes those of
// toolhost processes that are gone, if they are empty: it never kills
// what it finds there, since a toolhost in another PID namespace may
// share the cgroup under the same number.
//
// cgroup v2 gives one directory holding the kill switch and, where
// delegated, the memory and pids controllers. cgroup v1 (or a hybrid
// machine whose controllers are bound to v1) gives one directory per
// controller; a process is added to each, and killed by signal.

// closeTimeout bounds how long Close kills and waits before it gives up
// and reports what is left.
const closeTimeout = 5 * time.Second

// Cgroup is one command's control group: one directory per hierarchy
// used. Its methods are safe for concurrent use.
type Cgroup struct {
	dirs        []cgroupDir
	controllers []string
	// oomFile is memory.events (v2) or memory.oom_control (v1), "" when
	// no memory limit applies.
	oomFile string
	// enableErr is why the v2 hierarchy could not give the controllers.
	enableErr error

	mu     sync.Mutex
	closed bool
	oom    bool
}

type cgroupDir struct {
	path string
	v2   bool
}

// cgroupLayout is where toolhost's own cgroups are, and which of them it
// may write.
type cgroupLayout struct {
	unified      string // own cgroup in the v2 hierarchy
	unifiedIsTop bool   // own is the top of the mounted v2 hierarchy
	memory, pids string // own cgroups in the v1 memory and pids hierarchies
}

// NewCgroup makes a cgroup for one command with l's memory and process
// limits, or returns an error when none can be had here. A limit whose
// controller is not available is left out (Controllers says which
// apply); the cgroup still serves to kill everything the command started.
func NewCgroup(name string, l Limits) (*Cgroup, error) {
	return newCgroupIn(name, l, "")
}

// newCgroupIn is NewCgroup whose v2 directory is v2dir, made already by
// warmCgroup, when it is not "": a warm launcher was cloned into it.
func newCgroupIn(name string, l Limits, v2dir string) (*Cgroup, error) {
	if name == "" || name == "." || name == ".." || strings.ContainsAny(name, "/\x00") {
		return nil, fmt.Errorf("cgroup name %q: want one path element", name)
	}
	mounts, err := readMountinfo()
	if err != nil {
		return nil, err
	}
	lay := findCgroups(mounts)
	var need []string
	if l.MemoryBytes > 0 {
		need = append(need, "memory")
	}
	if l.Pids > 0 {
		need = append(need, "pids")
	}
	c := &Cgroup{}
	if v2dir != "" && (lay.unified == "" || filepath.Dir(filepath.Dir(v2dir)) != lay.unified) {
		return nil, fmt.Errorf("the cgroup %s is not toolhost's", v2dir)
	}
	if err := c.build(lay, name, need, l, v2dir); err != nil {
		c.removeDirs()
		return nil, err
	}
	if len(c.dirs) == 0 {
		return nil, errors.New("no writable cgroup: neither a delegated cgroup v2 nor writable v1 memory or pids hierarchies (toolhost sandbox doctor)")
	}
	// A limit asked for must hold: a cgroup without its controller would
	// let the command run past memory_max or pids_max unnoticed.
	for _, k := range need {
		if !slices.Contains(c.controllers, k) {
			c.Close()
			return nil, fmt.Errorf("the %s controller cannot be had in the command's cgroup (toolhost sandbox doctor): %w", k, errors.Join(c.enableErr, errors.ErrUnsupported))
		}
	}
	return c, nil
}

// build makes the directories: the v2 one first (it can kill), with the
// controllers it can have, then v1 ones for the limits still needed.
func (c *Cgroup) build(lay cgroupLayout, name string, need []string, l Limits, v2dir string) error {
	if lay.unified != "" {
		ctl := unifiedControllers(lay, need)
		dir, err := makeCgroup(lay.unified, name, v2dir, func(parent string) error {
			if len(ctl) == 0 {
				return nil
			}
			if err := enableControllers(lay.unified, parent, ctl); err != nil {
				// The limits then come from v1 hierarchies, if any; if
				// none has them, NewCgroup says why with this error.
				c.enableErr = err
				ctl = nil
			}
			return nil
		})
		if err != nil {
			return err
		}
		c.dirs = append(c.dirs, cgroupDir{path: dir, v2: true})
		for _, k := range ctl {
			if err := setLimit(dir, k, true, l); err != nil {
				return err
			}
			c.controllers = append(c.controllers, k)
			if k == "memory" {
				c.oomFile = filepath.Join(dir, "memory.events")
			}
		}
	}
	for _, k := range need {
		own := map[string]string{"memory": lay.memory, "pids": lay.pids}[k]
		if own == "" || slices.Contains(c.controllers, k) {
			continue
		}
		dir, err := makeCgroup(own, name, "", nil)
		if err != nil {
			return err
		}
		c.dirs = append(c.dirs, cgroupDir{path: dir})
		if err := setLimit(dir, k, false, l); err != nil {
			return err
		}
		c.controllers = append(c.controllers, k)
		if k == "memory" {
			c.oomFile = filepath.Join(dir, "memory.oom_control")
		}
	}
	slices.Sort(c.controllers)
	return nil
}

// setLimit writes l's limit of controller k in dir. Swap is limited with
// memory, so that a command cannot page its way past memory_max.
func setLimit(dir, k string, v2 bool, l Limits) error {
	type file struct {
		name     string
		value    uint64
		optional bool // only with swap accounting
	}
	var files []file
	switch {
	case k == "pids":
		files = []file{{"pids.max", l.Pids, false}}
	case v2:
		files = []file{{"memory.max", l.MemoryBytes, false}, {"memory.swap.max", 0, true}}
	default:
		files = []file{{"memory.limit_in_bytes", l.MemoryBytes, false}, {"memory.memsw.limit_in_bytes", l.MemoryBytes, true}}
	}
	for _, f := range files {
		path := filepath.Join(dir, f.name)
		if f.optional {
			if _, err := os.Stat(path); err != nil {
				continue
			}
		}
		if err := writeCgroupFile(path, strconv.FormatUint(f.value, 10)); err != nil {
			return fmt.Errorf("setting the %s limit: %w", k, err)
		}
	}
	return nil
}

// makeCgroup makes own/toolhost-<pid>/name, or takes existing, a leaf
// made there before, when it is not "". setup, when set, runs on the
// parent before the leaf is made or taken (v2 hands controllers down
// there, to existing leaves too). A parent removed meanwhile by another
// command's Close is made again.
func makeCgroup(own, name, existing string, setup func(parent string) error) (string, error) {
	parent := filepath.Join(own, "toolhost-"+strconv.Itoa(os.Getpid()))
	for range 3 {
		err := os.Mkdir(parent, 0o755)
		switch {
		case err == nil:
			removeStale(own)
		case !errors.Is(err, fs.ErrExist):
			return "", fmt.Errorf("making the cgroup %s: %w", parent, err)
		}
		if setup != nil {
			if err := setup(parent); err != nil {
				return "", err
			}
		}
		if existing != "" {
			if filepath.Dir(existing) != parent {
				return "", fmt.Errorf("the cgroup %s is not in %s", existing, parent)
			}
			return existing, nil
		}
		leaf := filepath.Join(parent, name)
		err = os.Mkdir(leaf, 0o755)
		switch {
		case err == nil:
			return leaf, nil
		case errors.Is(err, fs.ErrNotExist):
			continue
		case errors.Is(err, fs.ErrExist):
			return "", fmt.Errorf("making the cgroup %s: it exists already: the name %q is in use by another command", leaf, name)
		}
		return "", fmt.Errorf("making the cgroup %s: %w", leaf, err)
	}
	return "", fmt.Errorf("making a cgroup in %s: the directory kept disappearing", parent)
}

// removeStale removes own/toolhost-<pid> directories of toolhost
// processes that are gone, when they hold no process: rmdir refuses
// populated cgroups, so nothing running is touched.
func removeStale(own string) {
	entries, err := os.ReadDir(own)
	if err != nil {
		return
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(strings.TrimPrefix(e.Name(), "toolhost-"))
		if !e.IsDir() || !strings.HasPrefix(e.Name(), "toolhost-") || err != nil || pid <= 0 || pid == os.Getpid() {
			continue
		}
		if !processGone(pid) {
			continue
		}
		dir := filepath.Join(own, e.Name())
		subs, _ := os.ReadDir(dir)
		for _, s := range subs {
			if s.IsDir() {
				os.Remove(filepath.Join(dir, s.Name()))
			}
		}
		os.Remove(dir)
	}
}

// unifiedControllers are the controllers of need that toolhost's v2
// cgroup offers.
func unifiedControllers(lay cgroupLayout, need []string) []string {
	avail := strings.Fields(readCgroupFile(filepath.Join(lay.unified, "cgroup.controllers")))
	var out []string
	for _, k := range need {
		if slices.Contains(avail, k) {
			out = append(out, k)
		}
	}
	return out
}

// enableControllers hands ctl down from own to parent's children. The
// kernel lets a v2 cgroup (but the top one) hand controllers down only
// when it holds no process itself; when toolhost is alone in own (a
// delegated scope), it moves itself into parent/host first.
func enableControllers(own, parent string, ctl []string) error {
	line := "+" + strings.Join(ctl, " +")
	err := writeCgroupFile(filepath.Join(own, "cgroup.subtree_control"), line)
	if errors.Is(err, unix.EBUSY) {
		if err := moveSelf(own, parent); err != nil {
			return err
		}
		err = writeCgroupFile(filepath.Join(own, "cgroup.subtree_control"), line)
	}
	if err != nil {
		return err
	}
	return writeCgroupFile(filepath.Join(parent, "cgroup.subtree_control"), line)
}

// moveSelf moves toolhost from own into parent/host, when own holds no
// other process.
func moveSelf(own, parent string) error {
	self := os.Getpid()
	for _, pid := range readPids(own) {
		if pid != self {
			return fmt.Errorf("the cgroup %s holds other processes than toolhost (%d): it cannot hand the memory and pids controllers down; run toolhost in a cgroup of its own: start toolhost with systemd-run --user --scope -p Delegate=yes", own, pid)
		}
	}
	host := filepath.Join(parent, "host")
	if err := os.Mkdir(host, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("making the cgroup %s: %w", host, err)
	}
	return writeCgroupFile(filepath.Join(host, "cgroup.procs"), strconv.Itoa(self))
}

// launchFiles opens what lets a launcher enter the cgroup without being
// moved there: the v2 directory (nil without one), which the launcher is
// cloned into (CLONE_INTO_CGROUP), and the tasks file of each v1
// hierarchy, to which the launcher's thread that forks the shell writes
// 0, moving only itself. Add, a write of a pid to cgroup.procs, takes the
// kernel's global cgroup_threadgroup_rwsem for writing, which waits for
// an RCU grace period: 10 to 15 ms per command on this machine when
// commands are a few tens of ms apart, the largest part of a confined
// command's start. A clone into a cgroup and a thread
// moving itself take that lock only for reading (20 us).
func (c *Cgroup) launchFiles() (dir *os.File, tasks []*os.File, err error) {
	closeAll := func() {
		if dir != nil {
			dir.Close()
		}
		for _, f := range tasks {
			f.Close()
		}
	}
	for _, d := range c.dirs {
		if d.v2 {
			if dir, err = os.Open(d.path); err != nil {
				closeAll()
				return nil, nil, fmt.Errorf("opening the cgroup %s: %w", d.path, err)
			}
			continue
		}
		f, err := os.OpenFile(filepath.Join(d.path, "tasks"), os.O_WRONLY, 0)
		if err != nil {
			closeAll()
			return nil, nil, fmt.Errorf("opening the cgroup %s: %w", d.path, err)
		}
		tasks = append(tasks, f)
	}
	return dir, tasks, nil
}

// warmCgroup makes a v2 cgroup for a warm launcher to be cloned into,
// named name, and opens it; "" and nil when there is no v2 hierarchy to
// write. The cgroup of the command the launcher runs takes it over
// (newCgroupIn): a move into a cgroup afterwards would wait for the
// global lock launchFiles avoids.
func warmCgroup(name string) (string, *os.File, error) {
	mounts, err := readMountinfo()
	if err != nil {
		return "", nil, err
	}
	lay := findCgroups(mounts)
	if lay.unified == "" {
		return "", nil, nil
	}
	dir, err := makeCgroup(lay.unified, name, "", nil)
	if err != nil {
		return "", nil, err
	}
	f, err := os.Open(dir)
	if err != nil {
		os.Remove(dir)
		return "", nil, fmt.Errorf("opening the cgroup %s: %w", dir, err)
	}
	return dir, f, nil
}

// presetCgroup makes the Cgroup with l's limits for the command of
// the warm launcher in dir (warmCgroup's), ahead of the command: a
// command with the same limits takes it over as it is. On two cores
// these directories and writes cost about a millisecond of a command's
// start. It returns nil when l has no limit or the Cgroup cannot be
// made; the command's Prepare then makes it, and says why it cannot.
// The launcher must be in dir already, which keeps dir from being
// removed with what a failed build made.
func presetCgroup(dir string, l Limits) *Cgroup {
	if dir == "" || (l.MemoryBytes == 0 && l.Pids == 0) {
		return nil
	}
	c, err := newCgroupIn(filepath.Base(dir), l, dir)
	if err != nil {
		return nil
	}
	return c
}

// Add moves pid into the cgroup, in every hierarchy.
func (c *Cgroup) Add(pid int) error {
	for _, d := range c.dirs {
		if err := writeCgroupFile(filepath.Join(d.path, "cgroup.procs"), strconv.Itoa(pid)); err != nil {
			return fmt.Errorf("adding process %d to its cgroup: %w", pid, err)
		}
	}
	return nil
}

// Controllers names the controllers whose limits apply: memory, pids.
func (c *Cgroup) Controllers() []string { return slices.Clone(c.controllers) }

// OOMKilled reports whether the memory limit killed a process. After
// Close it reports what Close found.
func (c *Cgroup) OOMKilled() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return c.oom
	}
	return c.readOOM()
}

// PidsMaxHit reports whether a fork was refused for the process limit:
// the "max" counter of pids.events, in the v2 directory or v1's pids
// hierarchy.
func (c *Cgroup) PidsMaxHit() bool {
	for _, d := range c.dirs {
		for line := range strings.Lines(readCgroupFile(filepath.Join(d.path, "pids.events"))) {
			if v, ok := strings.CutPrefix(line, "max "); ok {
				if n, _ := strconv.ParseUint(strings.TrimSpace(v), 10, 64); n > 0 {
					return true
				}
			}
		}
	}
	return false
}

// readOOM reads the oom_kill counter of memory.events (v2) or
// memory.oom_control (v1).
func (c *Cgroup) readOOM() bool {
	if c.oomFile == "" {
		return false
	}
	for line := range strings.Lines(readCgroupFile(c.oomFile)) {
		if v, ok := strings.CutPrefix(line, "oom_kill "); ok {
			n, _ := strconv.ParseUint(strings.TrimSpace(v), 10, 64)
			return n > 0
		}
	}
	return false
}

// Close kills what is left in the cgroup and removes it. It never waits
// more than closeTimeout: what then remains is reported, and left for a
// later toolhost to remove once empty.
func (c *Cgroup) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil
	}
	deadline := time.Now().Add(closeTimeout)
	var errs []error
	if left := c.kill(deadline); left > 0 {
		errs = append(errs, fmt.Errorf("%d processes still in the cgroup %s after %s", left, c.dirs[0].path, closeTimeout))
	}
	c.oom = c.readOOM()
	c.closed = true
	for _, d := range c.dirs {
		if err := removeCgroup(d.path, deadline); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// kill empties the cgroup: cgroup.kill where v2 has it (it also stops
// processes forking meanwhile), SIGKILL to each process listed otherwise,
// round after round, until nothing is left or the deadline passes. It
// returns how many processes are left.
func (c *Cgroup) kill(deadline time.Time) int {
	killed := map[string]bool{}
	for _, d := range c.dirs {
		if d.v2 {
			killed[d.path] = writeCgroupFile(filepath.Join(d.path, "cgroup.kill"), "1") == nil
		}
	}
	wait := time.Millisecond
	for round := 0; ; round++ {
		left := 0
		for _, d := range c.dirs {
			pids := readPids(d.path)
			left += len(pids)
			// Signals also back cgroup.kill up when it has not emptied the
			// cgroup after a few rounds.
			if len(pids) > 0 && (!killed[d.path] || round >= 5) {
				signalListed(d.path, pids)
			}
		}
		if left == 0 || time.Now().After(deadline) {
			return left
		}
		time.Sleep(wait)
		wait = min(2*wait, 50*time.Millisecond)
	}
}

// signalListed sends SIGKILL to each of pids still in dir. Each process
// is held by a pidfd before the list is read again, so a number reused
// meanwhile by a process outside the cgroup is never signalled.
func signalListed(dir string, pids []int) {
	fds := make(map[int]int, len(pids))
	for _, pid := range pids {
		if fd, err := unix.PidfdOpen(pid, 0); err == nil {
			fds[pid] = fd
		}
	}
	still := readPids(dir)
	for pid, fd := range fds {
		if slices.Contains(still, pid) {
			unix.PidfdSendSignal(fd, unix.SIGKILL, nil, 0)
		}
		unix.Close(fd)
	}
}

// removeCgroup removes dir, retrying while the kernel still counts
// exiting processes in it, then its parent when that is empty.
func removeCgroup(dir string, deadline time.Time) error {
	for {
		err := unix.Rmdir(dir)
		if err == nil || errors.Is(err, unix.ENOENT) {
			break
		}
		if !errors.Is(err, unix.EBUSY) || time.Now().After(deadline) {
			return fmt.Errorf("removing the cgroup %s: %w", dir, err)
		}
		time.Sleep(5 * time.Millisecond)
	}
	// The parent goes when this was its last command; another command
	// still running keeps it (EBUSY or ENOTEMPTY, ignored).
	unix.Rmdir(filepath.Dir(dir))
	return nil
}

func (c *Cgroup) removeDirs() {
	for i := len(c.dirs) - 1; i >= 0; i-- {
		unix.Rmdir(c.dirs[i].path)
		unix.Rmdir(filepath.Dir(c.dirs[i].path))
	}
}

// readPids lists cgroup.procs of dir.
func readPids(dir string) []int {
	var pids []int
	for _, f := range strings.Fields(readCgroupFile(filepath.Join(dir, "cgroup.procs"))) {
		if pid, err := strconv.Atoi(f); err == nil {
			pids = append(pids, pid)
		}
	}
	return pids
}

func readCgroupFile(path string) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	return string(data)
}

// writeCgroupFile writes value in one write, as cgroup files want,
// without creating or truncating.
func writeCgroupFile(path, value string) error {
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	_, err = f.WriteString(value)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("writing %q to %s: %w", value, path, err)
	}
	return nil
}

// findCgroups finds toolhost's own cgroups (/proc/self/cgroup) in the
// mounted hierarchies, keeping those it may write.
func findCgroups(mounts []mountEntry) cgroupLayout {
	var lay cgroupLayout
	for line := range strings.Lines(readCgroupFile("/proc/self/cgroup")) {
		parts := strings.SplitN(strings.TrimSpace(line), ":", 3)
		if len(parts) != 3 {
			continue
		}
		id, ctls, path := parts[0], strings.Split(parts[1], ","), parts[2]
		switch {
		case id == "0" && parts[1] == "":
			// A toolhost that moved itself into its own leaf (moveSelf)
			// counts from where it was.
			path = strings.TrimSuffix(path, "/toolhost-"+strconv.Itoa(os.Getpid())+"/host")
			if path == "" {
				path = "/"
			}
			lay.unified, lay.unifiedIsTop = cgroupDirOf(mounts, "cgroup2", "", path)
		}
		// v1: memory and pids may share a hierarchy.
		if slices.Contains(ctls, "memory") {
			lay.memory, _ = cgroupDirOf(mounts, "cgroup", "memory", path)
		}
		if slices.Contains(ctls, "pids") {
			lay.pids, _ = cgroupDirOf(mounts, "cgroup", "pids", path)
		}
	}
	return lay
}

// cgroupDirOf is the directory of cgroup path in the mounted hierarchy
// of fsType (with controller, for v1), when toolhost may write it; top
// says whether it is the mount's top directory.
func cgroupDirOf(mounts []mountEntry, fsType, controller, path string) (dir string, top bool) {
	for _, m := range mounts {
		if m.fsType != fsType || controller != "" && !slices.Contains(m.superOpts, controller) {
			continue
		}
		rel, err := filepath.Rel(m.root, path)
		if err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
			continue
		}
		dir := filepath.Join(m.point, rel)
		if unix.Access(dir, unix.W_OK) != nil {
			continue
		}
		return dir, rel == "."
	}
	return "", false
}

// kernelAtLeast compares the running kernel's release with major.minor.
func kernelAtLeast(major, minor int) bool {
	var u unix.Utsname
	if unix.Uname(&u) != nil {
		return false
	}
	rel := unix.ByteSliceToString(u.Release[:])
	parts := strings.SplitN(rel, ".", 3)
	if len(parts) < 2 {
		return false
	}
	maj, _ := strconv.Atoi(parts[0])
	digits := strings.IndexFunc(parts[1]+"x", func(r rune) bool { return r < '0' || r > '9' })
	mnr, _ := strconv.Atoi(parts[1][:digits])
	return maj > major || maj == major && mnr >= minor
}
