// Package readcache records which files a conversation has read and what
// they held (canonical path, SHA-256, time), the evidence stale-file
// protection checks before any overwrite or patch (SRD FR-TOOL-PATCH-02c).
//
// A Cache lives in memory. Its owner persists it (toolhost keeps caches in
// its journal, in the state directory, which no tool can read or forge):
// Merge takes in what was stored, Unsaved and Saved say what to store,
// so that separate processes with the same conversation id share what
// was read.
package readcache

import (
	"crypto/sha256"
	"encoding/hex"
	"sync"
	"time"
)

// Entry is one recorded read.
type Entry struct {
	Path   string    `json:"path"` // canonical absolute path
	SHA256 string    `json:"sha256"`
	ReadAt time.Time `json:"read_at"`

	// gen is the cache's Generation when this path's digest last
	// changed in this cache (loaded and merged entries count as
	// changes), and origin who changed it then (a batch id). In memory
	// only.
	gen    uint64
	origin string
	// lastBy is who recorded the entry last: a batch that re-read the
	// content another changed has seen that change.
	lastBy string
	// seq is the cache's put count when the entry was recorded here; 0
	// when it was merged from storage, which holds it already.
	seq uint64
}

// Cache is the read record of one conversation. It is safe for concurrent use.
type Cache struct {
	mu      sync.Mutex
	entries map[string]Entry
	gen     uint64 // counts changes of any entry's digest
	seq     uint64 // counts every put
	saved   uint64 // seq up to which the entries are stored

	recorded func() // called after each Record, outside the lock
}

// OnRecord has f called after every read recorded from now on, so that
// the owner stores it soon (not when the batch ends: a crash in the middle
// of a batch must not lose its reads).
func (c *Cache) OnRecord(f func()) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.recorded = f
}

// New returns an empty cache. Its Generation starts at 1, so 0 never
// names a moment of a real cache.
func New() *Cache { return &Cache{entries: make(map[string]Entry), gen: 1} }

// Record notes that path held content with the given digest at time at.
func (c *Cache) Record(path string, sum [sha256.Size]byte, at time.Time) {
	c.RecordFrom(path, sum, at, "")
}

// RecordFrom is Record by origin (a batch): ChangedSince tells others'
// changes from its own.
func (c *Cache) RecordFrom(path string, sum [sha256.Size]byte, at time.Time, origin string) {
	c.mu.Lock()
	c.put(Entry{Path: path, SHA256: hex.EncodeToString(sum[:]), ReadAt: at.UTC(), origin: origin}, false)
	recorded := c.recorded
	c.mu.Unlock()
	if recorded != nil {
		recorded()
	}
}

// put stores e, advancing the generation when the path's digest changes:
// reading the same content again is not a change, so it keeps who made
// the change too (another batch re-reading what this one wrote must not
// make this one's next write look stale). An entry stored is in storage
// already: Unsaved does not give it again.
func (c *Cache) put(e Entry, stored bool) {
	c.seq++
	e.seq = c.seq
	if stored {
		e.seq = 0
	}
	e.lastBy = e.origin
	old, ok := c.entries[e.Path]
	if ok && old.SHA256 == e.SHA256 {
		e.gen, e.origin = old.gen, old.origin
	} else {
		c.gen++
		e.gen = c.gen
	}
	c.entries[e.Path] = e
}

// Generation returns a number that grows whenever the conversation sees a
// file's content change (a read or a write recorded with a new digest).
// A call takes it when it begins; ChangedSince then tells whether another
// call saw a path change after that (stale-file protection between concurrent calls of one conversation).
func (c *Cache) Generation() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.gen
}

// ChangedSince reports whether path's recorded digest changed after
// generation gen, by an origin other than origin, and origin has not
// recorded it since: a batch builds on its own earlier calls' reads and
// writes, never unseen on another's. (When a third batch re-read it
// last, origin is told it changed: a needless re-read, never a lost
// update.)
func (c *Cache) ChangedSince(path string, gen uint64, origin string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[path]
	return ok && e.gen > gen && e.origin != origin && e.lastBy != origin
}

// Lookup returns the last read of path.
func (c *Cache) Lookup(path string) (Entry, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[path]
	return e, ok
}

// Matches reports whether path was read and its digest then equals sum.
func (c *Cache) Matches(path string, sum [sha256.Size]byte) (read, same bool) {
	e, ok := c.Lookup(path)
	if !ok {
		return false, false
	}
	return true, e.SHA256 == hex.EncodeToString(sum[:])
}

// Entries returns a copy of all entries.
func (c *Cache) Entries() []Entry {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]Entry, 0, len(c.entries))
	for _, e := range c.entries {
		out = append(out, e)
	}
	return out
}

// Merge adds entries from storage (another process's reads among them)
// that are newer than what c holds.
func (c *Cache) Merge(entries []Entry) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, e := range entries {
		if old, ok := c.entries[e.Path]; !ok || e.ReadAt.After(old.ReadAt) {
			c.put(e, true)
		}
	}
}

// Unsaved returns the entries recorded since the last Saved, and the
// mark to pass to Saved once they are stored.
func (c *Cache) Unsaved() (entries []Entry, mark uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, e := range c.entries {
		if e.seq > c.saved {
			entries = append(entries, e)
		}
	}
	return entries, c.seq
}

// Saved notes that the entries Unsaved gave with mark are stored; a read
// recorded since is still unsaved.
func (c *Cache) Saved(mark uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.saved = max(c.saved, mark)
}
