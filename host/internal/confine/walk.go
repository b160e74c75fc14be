package confine

import (
	"container/heap"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
)

// The bounds of the search of a writable tree for nested repositories and
// project files: it runs for every call, so it stops
// after 20000 directory entries (about 10 ms on a loaded 2-core machine),
// and reads directories at most 6 levels below the tree's top. Build
// reports what it could not search (Policy.Uncovered).
const (
	walkMaxDepth   = 6
	walkMaxEntries = 20000
)

// searchLimits bound one search: directories read at most depth levels
// below the top, at most entries directory entries in all.
type searchLimits struct{ depth, entries int }

// search is how one call searches its writable trees.
type search struct {
	skip     []string // trees not entered: toolhost's state directory
	lim      searchLimits
	projects []string     // the names of toolhost's project files
	cache    *SearchCache // nil: every directory is read
	// start is when the call's search started, in nanoseconds since the
	// epoch: what the cache compares the change times it keeps with.
	start int64
}

// found is what the search of one tree found: the .git entries and bare
// git directories of repositories inside it, its project files, and what
// it could not search, each a sentence.
type found struct {
	dotgits   []string // X/.git, a directory or a "gitdir:" file
	gitdirs   []string // bare repositories' directories (HEAD, objects, refs)
	projects  []string // project files (search.projects) at any depth
	uncovered []string
	// stopped reports that the bound of entries stopped the search.
	stopped bool
	// read counts the directories whose entries were read, not taken from
	// a SearchCache.
	read int
}

// listing is what readDir keeps of one directory.
type listing struct {
	names   []string // the entries the search looks for (wanted) that are not directories
	subdirs []string // its directories, not links
	born    []int64  // each subdir's birth time (birthTime), 0 where unknown
	n       int      // how many entries it read
	stamp   dirStamp // the directory's state when it was read; zero where unknown
}

// dirStamp identifies a directory and its last change: which one (device
// and inode) and when it last changed (ctime, in nanoseconds since the
// epoch).
type dirStamp struct {
	dev, ino uint64
	ctime    int64
	dir      bool
}

// searchTree walks tree for what git or toolhost would run or read
// later, outside the sandbox: repositories (a .git directory or file, a
// bare repository) and project configuration files. It never follows a
// symbolic link, does not enter another filesystem mounted below tree, a
// .git directory (protectDotGit covers its insides) or skip, and stays
// within s.lim. It reads the directories oldest first (birth time, which
// no system call sets back), those the filesystem gives no birth time
// last, breadth first: so what the entry bound leaves out is what was
// made last, and a command that pads the tree with directories of its
// own cannot push the user's repositories past the bound. With a cache (s.cache), a directory whose state has not changed
// since an earlier search read it is not read again; what the search
// finds is the same.
func searchTree(tree string, s search) found {
	lim := s.lim
	var f found
	dev, hasDev, err := treeDevice(tree)
	if err != nil {
		f.uncovered = append(f.uncovered, fmt.Sprintf("%s could not be searched for nested repositories and project files: %v", tree, err))
		return f
	}
	r := s.cache.begin(tree, s.projects, lim.depth, dev, hasDev, s.start)
	defer s.cache.end(r)
	queue := &dirQueue{}
	queue.push(queued{path: tree})
	entries := 0
	var tooDeep, otherFS, unreadable []string
	for queue.Len() > 0 {
		d := queue.pop()
		l, fresh, err := r.readDir(d.path, dev, hasDev, lim.entries-entries, s.projects)
		names, subdirs := l.names, l.subdirs
		entries += l.n
		if fresh {
			f.read++
		}
		switch {
		case errors.Is(err, errOtherFS):
			otherFS = append(otherFS, d.path)
			continue
		case err != nil && !errors.Is(err, errTooMany):
			unreadable = append(unreadable, d.path)
			continue
		}
		if isGitDir(names, subdirs) {
			f.gitdirs = append(f.gitdirs, d.path)
		}
		for _, name := range names {
			switch {
			case name == ".git":
				f.dotgits = append(f.dotgits, filepath.Join(d.path, name))
			case slices.Contains(s.projects, name):
				f.projects = append(f.projects, filepath.Join(d.path, name))
			}
		}
		for i, name := range subdirs {
			p := childPath(d.path, name)
			switch {
			case name == ".git":
				f.dotgits = append(f.dotgits, p)
			case underAny(p, s.skip):
			case d.depth+1 > lim.depth:
				tooDeep = append(tooDeep, p)
			default:
				var born int64
				if i < len(l.born) {
					born = l.born[i]
				}
				queue.push(queued{path: p, depth: d.depth + 1, born: born})
			}
		}
		if errors.Is(err, errTooMany) {
			left := queue.Len()
			example := d.path
			if left > 0 {
				example = queue.pop().path
			}
			f.uncovered = append(f.uncovered, fmt.Sprintf("the search of %s for nested repositories and project files stopped after %d entries; %d more directories, such as %s, were not searched, so a repository there keeps its hooks and config writable", tree, lim.entries, left+1, example))
			f.stopped = true
			break
		}
	}
	if len(tooDeep) > 0 {
		f.uncovered = append(f.uncovered, fmt.Sprintf("%d directories more than %d levels below %s, such as %s, were not searched for nested repositories and project files", len(tooDeep), lim.depth, tree, tooDeep[0]))
	}
	if len(otherFS) > 0 {
		f.uncovered = append(f.uncovered, fmt.Sprintf("%d directories in %s that are other filesystems mounted there, such as %s, were not searched for nested repositories and project files", len(otherFS), tree, otherFS[0]))
	}
	if len(unreadable) > 0 {
		f.uncovered = append(f.uncovered, fmt.Sprintf("%d directories in %s, such as %s, could not be read to search them for nested repositories and project files", len(unreadable), tree, unreadable[0]))
	}
	return f
}

// queued is a directory the search is to read: its depth below the
// tree's top and its birth time (0: unknown).
type queued struct {
	path  string
	depth int
	born  int64
	seq   int // the order it was queued in
}

// dirQueue is the search's queue, a heap: oldest first, those of unknown
// birth after all others, ties in the order queued (breadth first).
type dirQueue struct {
	h   []queued
	seq int
}

func (q *dirQueue) Len() int { return len(q.h) }

func (q *dirQueue) Less(i, j int) bool {
	x, y := q.h[i], q.h[j]
	if c := compareBirth(x.born, y.born); c != 0 {
		return c < 0
	}
	return x.seq < y.seq
}

func (q *dirQueue) Swap(i, j int) { q.h[i], q.h[j] = q.h[j], q.h[i] }
func (q *dirQueue) Push(x any)    { q.h = append(q.h, x.(queued)) }

func (q *dirQueue) Pop() any {
	x := q.h[len(q.h)-1]
	q.h = q.h[:len(q.h)-1]
	return x
}

func (q *dirQueue) push(d queued) {
	d.seq = q.seq
	q.seq++
	heap.Push(q, d)
}

func (q *dirQueue) pop() queued { return heap.Pop(q).(queued) }

// childPath is dir/name for a clean dir and a name read from it (never
// "", ".", ".." or holding a slash): filepath.Join would clean it again,
// a fifth of a cached search's time.
func childPath(dir, name string) string {
	if dir == "/" {
		return dir + name
	}
	return dir + "/" + name
}

var (
	errOtherFS = errors.New("another filesystem")
	errTooMany = errors.New("too many entries")
)

// wanted reports whether the search keeps a name that is not a
// directory's: only what it looks for, since a tree holds thousands of
// other files. projects are the project files' names.
func wanted(name string, projects []string) bool {
	return name == ".git" || name == "HEAD" || slices.Contains(projects, name)
}

// isGitDir reports whether a directory holding names (files) and subdirs
// is a git directory, the way git itself recognises one: HEAD, objects
// and refs. A bare repository's hooks run when someone pushes to it.
func isGitDir(names, subdirs []string) bool {
	return slices.Contains(names, "HEAD") && slices.Contains(subdirs, "objects") && slices.Contains(subdirs, "refs")
}

// compareBirth orders birth times (nanoseconds since the epoch) oldest
// first, 0 (the filesystem records none) after all others: the one order
// of the search's queue (dirQueue), the submodules' git directories
// (oldestFirst) and the nested protection (nestedUnits). A command can
// make many directories, but none older than those there before it ran.
// Used with a stable sort, ties keep their order.
func compareBirth(a, b int64) int {
	switch {
	case a == b:
		return 0
	case a == 0:
		return 1
	case b == 0:
		return -1
	case a < b:
		return -1
	}
	return 1
}

// oldestFirst orders paths by when they were made (compareBirth).
func oldestFirst(paths []string) []string {
	type born struct {
		path string
		ns   int64
	}
	bs := make([]born, len(paths))
	for i, p := range paths {
		bs[i] = born{p, birthTime(p)}
	}
	slices.SortStableFunc(bs, func(x, y born) int { return compareBirth(x.ns, y.ns) })
	out := make([]string, len(bs))
	for i, b := range bs {
		out[i] = b.path
	}
	return out
}
