package confine

import (
	"strings"
	"sync"
	"time"
)

// SearchCache remembers, across calls, the directories that Build's
// search of the writable trees read (searchTree: what each held that the
// search looks for), with the state each was in when read: its device,
// inode and change time (ctime). A later search takes a directory from
// the cache only after a statx shows it in the same state, and reads it
// again otherwise; so it finds what a full search would, at the cost of
// one statx per unchanged directory instead of reading its entries
// (the search runs for every call, before the command starts).
//
// A command cannot make the cache hide what it did: making, removing or
// renaming an entry changes its directory's ctime, which no system call
// sets to a chosen value (touch -d sets the modification time and makes
// the ctime now); a directory replaced by another has another inode, or
// the same inode number with a new ctime; one replaced by a link or a
// mount is another inode or device. Two limits remain, both handled:
//
//   - Timestamps are coarse: a change in the same clock tick (or second,
//     on a filesystem that keeps whole seconds) as the directory's read
//     can leave its ctime as it was. A directory whose ctime is within
//     ctimeSlack of the start of the search that read it is not
//     remembered, so it is read again by the next search: any change
//     after the read gets a later ctime than one that old.
//   - Some filesystems' change times do not come from the kernel's clock
//     at every change (NFS and FUSE servers, vfat's copy of the
//     modification time): trees on them are not remembered (stableFS).
//
// It is safe for concurrent use. Each search validates every directory it
// takes from the cache itself, so a call never relies on what another
// call validated; the listing a search leaves is one whose every entry it
// read or validated.
type SearchCache struct {
	mu sync.Mutex
	// trees holds, per tree searched and the project files' names it was
	// searched for (searchKey), each directory's listing.
	trees map[string]map[string]listing
}

const (
	// ctimeSlack covers the coarseness of change times: the kernel's
	// coarse clock lags by up to a tick (10 ms at 100 Hz), and a
	// filesystem with small inodes (ext4's 128 bytes) keeps whole
	// seconds.
	ctimeSlack = 2 * time.Second
	// maxCachedTrees bounds the trees remembered: the roots and
	// extra_writable paths of the calls, a handful in practice.
	maxCachedTrees = 64
)

// NewSearchCache returns an empty cache, for Settings.Search.
func NewSearchCache() *SearchCache {
	return &SearchCache{trees: map[string]map[string]listing{}}
}

// treeSearch is one search's use of the cache: the listings the last
// search of the tree left, read only, and those this search read or
// validated, for the next.
type treeSearch struct {
	key       string // the tree and names searched for (searchKey)
	old, next map[string]listing
	dev       uint64
	start     int64 // when the search started, on the clock ctimes are taken from
	// tree and depth are the tree searched and how deep the search reads
	// (searchLimits).
	tree  string
	depth int
}

// begin returns the cache's part in a search of tree on device dev for
// the project files named projects, down to depth levels, started at
// start (nanoseconds since the epoch); nil when there is no cache or the
// tree's filesystem cannot be trusted with it (stableFS).
func (c *SearchCache) begin(tree string, projects []string, depth int, dev uint64, hasDev bool, start int64) *treeSearch {
	if c == nil || !hasDev || !stableFS(tree) {
		return nil
	}
	key := searchKey(tree, projects)
	c.mu.Lock()
	old := c.trees[key]
	c.mu.Unlock()
	return &treeSearch{key: key, tree: tree, depth: depth, old: old, next: make(map[string]listing, len(old)), dev: dev, start: start}
}

// searchKey is what a listing was read for: the tree and the project
// files' names, since a listing keeps only the names searched for
// (wanted).
func searchKey(tree string, projects []string) string {
	return tree + "\x00" + strings.Join(projects, "\x00")
}

// end keeps what the search s read or validated for the next search of
// its tree. Concurrent searches each store theirs; whichever is left, every
// entry in it is checked again before use.
func (c *SearchCache) end(s *treeSearch) {
	if s == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.trees == nil {
		c.trees = map[string]map[string]listing{}
	}
	// A search that stops at a depth (Build's) keeps what a deeper one
	// (the check after a call, at any depth) left below it, which it
	// could not validate: each is validated before use anyway, and the
	// deeper search drops those gone. Otherwise each would read again
	// what the other dropped.
	for dir, l := range s.old {
		if s.depth >= settleMaxDepth {
			break
		}
		if _, ok := s.next[dir]; !ok && depthBelow(s.tree, dir) > s.depth {
			s.next[dir] = l
		}
	}
	if _, ok := c.trees[s.key]; !ok && len(c.trees) >= maxCachedTrees {
		for k := range c.trees {
			delete(c.trees, k)
			break
		}
	}
	c.trees[s.key] = s.next
}

// depthBelow is how many levels dir lies below tree, which holds it.
func depthBelow(tree, dir string) int {
	if tree == "/" {
		return strings.Count(dir, "/")
	}
	return strings.Count(dir[len(tree):], "/")
}

// readDir is walk's readDir, answered from the cache when dir is in the
// state it was read in and the read was whole (no more entries than limit
// allows now). fresh reports that the directory was read.
func (s *treeSearch) readDir(dir string, dev uint64, hasDev bool, limit int, projects []string) (l listing, fresh bool, err error) {
	if s == nil {
		l, err = readDir(dir, dev, hasDev, limit, projects)
		return l, true, err
	}
	// Validated here, as it is used: a call relies on no check but its
	// own.
	if l, ok := s.old[dir]; ok && l.n <= limit && l.stamp.dev == s.dev {
		if st, err := dirStampOf(dir); err == nil && st == l.stamp {
			s.next[dir] = l
			return l, false, nil
		}
	}
	l, err = readDir(dir, dev, hasDev, limit, projects)
	// A directory that changed shortly before the search may change again
	// within the same tick without its ctime moving: not remembered.
	if err == nil && l.stamp.dir && l.stamp.ctime < s.start-int64(ctimeSlack) {
		s.next[dir] = l
	}
	return l, true, err
}
