package confine

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// While a command runs, git at the top of a root (the operator's git
// status, an editor's) recurses into every submodule that is checked out:
// a command that checks out a submodule the clone left empty, or makes a
// repository there, and writes a core.fsmonitor into it, would have it
// run before the check after the call. So the submodules' directories
// that are empty when the call starts (their paths are in .gitmodules)
// are watched with inotify while it runs: when a .git appears in one, its
// git directory is watched too, and what git would run is set aside as
// soon as it is written (neutralizeGitDir), not when the command ends.
// The git directories of the repositories found before the call are
// watched for a new index too: a gitlink the command adds (git add of a
// repository it made) makes git at the top recurse into it from then on,
// so the repositories an index names are looked at when it changes.
// The window left is the time from the command's write to the set-aside:
// the inotify event and two runs of git config, a few milliseconds.

// Bounds of the watch: the directories watched, and the set-asides it
// makes before it leaves the rest to the check after the call (a command
// that writes the same key again and again would otherwise fill the
// quarantine).
const (
	watchMaxDirs    = 256
	watchMaxActions = 256
)

// gitlinkWatch is the watch of one call.
type gitlinkWatch struct {
	st   *settle
	fd   int // the inotify instance
	wake int // an eventfd: stop writes it to end the loop
	// refs counts the holders of fd and wake, the loop and stop: the
	// last to let go closes them.
	refs atomic.Int32
	// acting is held while an event is handled; stopped, set under it,
	// ends them.
	acting  sync.Mutex
	stopped bool

	mu    sync.Mutex
	wds   map[int32]watched
	found []Neutralized
	acted int
	seen  map[string]bool // the .git entries and directories met already
}

// watched is what one watch descriptor watches: an empty submodule
// directory, or a git directory (or its hooks) that appeared in one.
type watched struct {
	path   string
	gitDir string // "" for a submodule's directory
	repo   string // the .git that appeared, for the report
	// top is, for a git directory watched for its index, the top of its
	// working tree.
	top string
}

// startWatch starts watching the empty submodule directories of the
// repositories in the writable trees; nil when there are none, or the
// kernel has no inotify for us (the check after the call still runs).
func (st *settle) startWatch() *gitlinkWatch {
	var dirs []watched
	for _, t := range dedupe(append(append([]string(nil), st.c.Roots...), st.s.ExtraWritable...)) {
		for _, r := range readKnown(st.s.StateDir, t) {
			if filepath.Base(r) != ".git" || len(dirs) >= watchMaxDirs {
				continue
			}
			top := filepath.Dir(r)
			if gd := resolvedGitDir(r); gd != "" {
				dirs = append(dirs, watched{path: gd, top: top})
			}
			for _, l := range modulesPaths(filepath.Join(top, ".gitmodules")) {
				d := filepath.Join(top, l)
				if len(dirs) < watchMaxDirs && within(d, top) && st.isDir(d) && !pathPresent(filepath.Join(d, ".git")) {
					dirs = append(dirs, watched{path: d})
				}
			}
		}
	}
	if len(dirs) == 0 {
		return nil
	}
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if err != nil {
		return nil
	}
	wake, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		unix.Close(fd)
		return nil
	}
	w := &gitlinkWatch{st: st, fd: fd, wake: wake, wds: map[int32]watched{}, seen: map[string]bool{}}
	w.refs.Store(2)
	for _, d := range dirs {
		w.add(d)
	}
	go w.loop()
	return w
}

// add watches path for entries made or moved in (and, in a git
// directory, written).
func (w *gitlinkWatch) add(at watched) {
	mask := uint32(unix.IN_CREATE | unix.IN_MOVED_TO | unix.IN_ONLYDIR | unix.IN_DONT_FOLLOW)
	if at.gitDir != "" || at.top != "" {
		mask |= unix.IN_CLOSE_WRITE
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.wds) >= watchMaxDirs {
		return
	}
	if wd, err := unix.InotifyAddWatch(w.fd, at.path, mask); err == nil {
		w.wds[int32(wd)] = at
	}
}

// loop reads events until stop writes the eventfd.
func (w *gitlinkWatch) loop() {
	defer w.release()
	buf := make([]byte, 64<<10)
	for {
		fds := []unix.PollFd{{Fd: int32(w.fd), Events: unix.POLLIN}, {Fd: int32(w.wake), Events: unix.POLLIN}}
		if _, err := unix.Poll(fds, -1); err != nil {
			if err == unix.EINTR {
				continue
			}
			return
		}
		if fds[1].Revents != 0 {
			return
		}
		n, err := unix.Read(w.fd, buf)
		if err == unix.EAGAIN || err == unix.EINTR {
			continue
		}
		if err != nil || n <= 0 {
			return
		}
		for off := 0; off+unix.SizeofInotifyEvent <= n; {
			ev := (*unix.InotifyEvent)(unsafe.Pointer(&buf[off]))
			nameBytes := buf[off+unix.SizeofInotifyEvent : off+unix.SizeofInotifyEvent+int(ev.Len)]
			off += unix.SizeofInotifyEvent + int(ev.Len)
			name := string(nameBytes)
			for len(name) > 0 && name[len(name)-1] == 0 {
				name = name[:len(name)-1]
			}
			w.mu.Lock()
			at, ok := w.wds[ev.Wd]
			w.mu.Unlock()
			if ok {
				w.event(at, name)
			}
		}
	}
}

// event handles name made or written in the watched at, unless the watch
// was stopped: stop waits for one under way, so that nothing of the
// watch runs beside the check after the call.
func (w *gitlinkWatch) event(at watched, name string) {
	w.acting.Lock()
	defer w.acting.Unlock()
	if w.stopped {
		return
	}
	switch {
	case at.top != "":
		if name == "index" {
			w.indexChanged(at)
		}
	case at.gitDir == "" && name == ".git":
		// A submodule's directory got its .git.
		w.repoAppeared(filepath.Join(at.path, ".git"))
	case at.gitDir != "" && at.path == at.gitDir && name == "hooks":
		w.add(watched{path: filepath.Join(at.gitDir, "hooks"), gitDir: at.gitDir, repo: at.repo})
		w.act(at.gitDir, at.repo)
	case at.gitDir != "" && at.path == at.gitDir && (name == "config" || name == "config.worktree" || name == "commondir"):
		w.act(at.gitDir, at.repo)
	case at.gitDir != "" && at.path != at.gitDir:
		w.act(at.gitDir, at.repo) // in hooks/
	}
}

// repoAppeared watches the git directory (and common directory) of the
// repository whose .git is repo, then looks at once at what is there
// already, written before the watch began.
func (w *gitlinkWatch) repoAppeared(repo string) {
	for _, gd := range w.st.gitDirs([]string{repo}) {
		w.mu.Lock()
		met := w.seen[gd]
		w.seen[gd] = true
		w.mu.Unlock()
		if !met {
			w.add(watched{path: gd, gitDir: gd, repo: repo})
			w.add(watched{path: filepath.Join(gd, "hooks"), gitDir: gd, repo: repo})
		}
		w.act(gd, repo)
	}
}

// indexChanged looks at the gitlinks of the index of the git directory
// at: a repository checked out at one is looked at (and watched) now; an
// empty directory at one is watched for its .git.
func (w *gitlinkWatch) indexChanged(at watched) {
	links, err := indexGitlinks(filepath.Join(at.path, "index"), hashSizeOf(commonOr(at.path)))
	if err != nil {
		return // the check after the call reads it again
	}
	for _, l := range links {
		d := filepath.Join(at.top, filepath.FromSlash(l))
		if !within(d, at.top) {
			continue
		}
		w.mu.Lock()
		met := w.seen[d]
		w.seen[d] = true
		w.mu.Unlock()
		switch {
		case pathPresent(filepath.Join(d, ".git")):
			w.repoAppeared(filepath.Join(d, ".git"))
		case !met && w.st.isDir(d):
			w.add(watched{path: d})
		}
	}
}

// resolvedGitDir is the git directory of the .git entry r, links
// resolved; "" when there is none.
func resolvedGitDir(r string) string {
	gd := r
	if fi, err := os.Stat(r); err != nil {
		return ""
	} else if fi.Mode().IsRegular() {
		gd = gitFileDir(r)
	}
	real, err := filepath.EvalSymlinks(gd)
	if err != nil {
		return ""
	}
	return real
}

// act sets aside what git would run from the git directory gd; event
// holds w.acting.
func (w *gitlinkWatch) act(gd, repo string) {
	w.mu.Lock()
	if w.acted >= watchMaxActions {
		w.mu.Unlock()
		return
	}
	w.acted++
	w.mu.Unlock()
	n := w.st.neutralizeGitDir(context.Background(), gd)
	if len(n.Keys) == 0 && len(n.Files) == 0 && n.Err == nil {
		return
	}
	n.Repo = repo
	w.mu.Lock()
	w.found = append(w.found, n)
	w.mu.Unlock()
}

// stop ends the watch and returns what it set aside: it waits for a
// set-aside under way, not for the loop to end (waking a goroutine that
// waits in poll(2), or in Go's poller, took some 9 ms here, which every
// call would pay). The command has ended: nothing more happens that the
// check after the call misses.
func (w *gitlinkWatch) stop() []Neutralized {
	if w == nil {
		return nil
	}
	w.acting.Lock()
	w.stopped = true
	w.acting.Unlock()
	unix.Write(w.wake, []byte{1, 0, 0, 0, 0, 0, 0, 0})
	w.release()
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.found
}

// release lets go of the descriptors; the last holder closes them.
func (w *gitlinkWatch) release() {
	if w.refs.Add(-1) == 0 {
		unix.Close(w.fd)
		unix.Close(w.wake)
	}
}
