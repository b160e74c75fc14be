package confine

import (
	"context"
	"os"
	"path/filepath"
	"sync"
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
// The window left is the time from the command's write to the set-aside:
// the inotify event and two runs of git config, a few milliseconds.

// Bounds of the watch: the directories watched, and the set-asides it
// makes before it leaves the rest to the check after the call (a command
// that writes the same key again and again would otherwise fill the
// quarantine).
const (
	watchMaxDirs    = 256
	watchMaxActions = 64
)

// gitlinkWatch is the watch of one call.
type gitlinkWatch struct {
	st   *settle
	file *os.File // the inotify instance; Close ends the loop
	done chan struct{}

	mu    sync.Mutex
	wds   map[int32]watched
	found []Neutralized
	acted int
}

// watched is what one watch descriptor watches: an empty submodule
// directory, or a git directory (or its hooks) that appeared in one.
type watched struct {
	path   string
	gitDir string // "" for a submodule's directory
	repo   string // the .git that appeared, for the report
}

// startWatch starts watching the empty submodule directories of the
// repositories in the writable trees; nil when there are none, or the
// kernel has no inotify for us (the check after the call still runs).
func (st *settle) startWatch() *gitlinkWatch {
	var dirs []string
	for _, t := range dedupe(append(append([]string(nil), st.c.Roots...), st.s.ExtraWritable...)) {
		for _, r := range readKnown(st.s.StateDir, t) {
			if filepath.Base(r) != ".git" {
				continue
			}
			top := filepath.Dir(r)
			for _, l := range modulesPaths(filepath.Join(top, ".gitmodules")) {
				d := filepath.Join(top, l)
				if len(dirs) < watchMaxDirs && within(d, top) && st.isDir(d) && !pathPresent(filepath.Join(d, ".git")) {
					dirs = append(dirs, d)
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
	w := &gitlinkWatch{st: st, file: os.NewFile(uintptr(fd), "inotify"), done: make(chan struct{}), wds: map[int32]watched{}}
	for _, d := range dirs {
		w.add(watched{path: d})
	}
	go w.loop()
	return w
}

// add watches path for entries made or moved in (and, in a git
// directory, written).
func (w *gitlinkWatch) add(at watched) {
	mask := uint32(unix.IN_CREATE | unix.IN_MOVED_TO | unix.IN_ONLYDIR | unix.IN_DONT_FOLLOW)
	if at.gitDir != "" {
		mask |= unix.IN_CLOSE_WRITE
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.wds) >= watchMaxDirs {
		return
	}
	sc, err := w.file.SyscallConn()
	if err != nil {
		return
	}
	var wd int
	var werr error
	sc.Control(func(fd uintptr) { wd, werr = unix.InotifyAddWatch(int(fd), at.path, mask) })
	if werr == nil {
		w.wds[int32(wd)] = at
	}
}

// loop reads events until stop closes the instance.
func (w *gitlinkWatch) loop() {
	defer close(w.done)
	buf := make([]byte, 64<<10)
	for {
		n, err := w.file.Read(buf)
		if err != nil {
			return // closed by stop
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

// event handles name made or written in the watched at.
func (w *gitlinkWatch) event(at watched, name string) {
	switch {
	case at.gitDir == "" && name == ".git":
		// A submodule's directory got its .git: watch its git directory
		// (and common directory), then look at once at what is there
		// already, written before the watch began.
		repo := filepath.Join(at.path, ".git")
		for _, gd := range w.st.gitDirs([]string{repo}) {
			w.add(watched{path: gd, gitDir: gd, repo: repo})
			w.add(watched{path: filepath.Join(gd, "hooks"), gitDir: gd, repo: repo})
			w.act(gd, repo)
		}
	case at.gitDir != "" && at.path == at.gitDir && name == "hooks":
		w.add(watched{path: filepath.Join(at.gitDir, "hooks"), gitDir: at.gitDir, repo: at.repo})
		w.act(at.gitDir, at.repo)
	case at.gitDir != "" && at.path == at.gitDir && (name == "config" || name == "config.worktree" || name == "commondir"):
		w.act(at.gitDir, at.repo)
	case at.gitDir != "" && at.path != at.gitDir:
		w.act(at.gitDir, at.repo) // in hooks/
	}
}

// act sets aside what git would run from the git directory gd.
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

// stop ends the watch and returns what it set aside. The command has
// ended: nothing more happens that the check after the call misses.
func (w *gitlinkWatch) stop() []Neutralized {
	if w == nil {
		return nil
	}
	w.file.Close()
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.found
}
