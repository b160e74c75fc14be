// Package readcache records which files a conversation has read and what
// they held (canonical path, SHA-256, time), the evidence stale-file
// protection checks before any overwrite or patch (SRD FR-TOOL-PATCH-02c).
//
// A Cache lives in memory; Store persists caches as one JSON file per
// conversation in toolhost's state directory, so that separate CLI
// invocations with the same conversation id share what was read. The state
// directory is a protected path of the sandbox: no tool can read or forge it.
package readcache

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
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
}

// Cache is the read record of one conversation. It is safe for concurrent use.
type Cache struct {
	mu      sync.Mutex
	entries map[string]Entry
	dirty   bool
	gen     uint64 // counts changes of any entry's digest
	seq     uint64 // counts every put, so Save knows what it wrote
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
	defer c.mu.Unlock()
	c.put(Entry{Path: path, SHA256: hex.EncodeToString(sum[:]), ReadAt: at.UTC(), origin: origin})
	c.dirty = true
}

// put stores e, advancing the generation when the path's digest changes:
// reading the same content again is not a change, so it keeps who made
// the change too (another batch re-reading what this one wrote must not
// make this one's next write look stale).
func (c *Cache) put(e Entry) {
	c.seq++
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
// call saw a path change after that (stale-file protection between
// concurrent calls of one conversation, issue 9 item 8).
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

// merge adds entries that are newer than what c holds.
func (c *Cache) merge(entries []Entry) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, e := range entries {
		if old, ok := c.entries[e.Path]; !ok || e.ReadAt.After(old.ReadAt) {
			c.put(e)
		}
	}
}

// Store keeps caches in a directory, one file per conversation.
type Store struct {
	dir string
}

// NewStore returns a store in dir, creating it (0700) if needed.
func NewStore(dir string) (*Store, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("read cache directory: %w", err)
	}
	return &Store{dir: dir}, nil
}

type file struct {
	Conversation string  `json:"conversation"`
	Entries      []Entry `json:"entries"`
}

// fileName maps any conversation id to a safe file name.
func (s *Store) fileName(conversation string) string {
	sum := sha256.Sum256([]byte(conversation))
	return filepath.Join(s.dir, hex.EncodeToString(sum[:16])+".json")
}

// Load returns the persisted cache of a conversation (empty if none).
func (s *Store) Load(conversation string) (*Cache, error) {
	c := New()
	entries, err := s.read(conversation)
	if err != nil {
		return nil, err
	}
	c.merge(entries)
	return c, nil
}

func (s *Store) read(conversation string) ([]Entry, error) {
	data, err := os.ReadFile(s.fileName(conversation))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read cache of conversation %q: %w", conversation, err)
	}
	var f file
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, fmt.Errorf("read cache of conversation %q is corrupt (%s): %w", conversation, s.fileName(conversation), err)
	}
	return f.Entries, nil
}

// Save persists c for the conversation, merging entries another process
// saved meanwhile (the newer read of a path wins). The file is replaced
// atomically, so a crash never leaves a half-written cache.
func (s *Store) Save(conversation string, c *Cache) error {
	c.mu.Lock()
	dirty := c.dirty
	c.mu.Unlock()
	if !dirty {
		return nil
	}
	unlock, err := s.lock(conversation)
	if err != nil {
		return err
	}
	defer unlock()
	theirs, err := s.read(conversation)
	if err != nil {
		return err
	}
	c.merge(theirs)
	c.mu.Lock()
	saved := c.seq
	c.mu.Unlock()
	data, err := json.Marshal(file{Conversation: conversation, Entries: c.Entries()})
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(s.dir, ".readcache-*.tmp")
	if err != nil {
		return fmt.Errorf("save read cache: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fmt.Errorf("save read cache: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("save read cache: %w", err)
	}
	if err := os.Rename(tmp.Name(), s.fileName(conversation)); err != nil {
		return fmt.Errorf("save read cache: %w", err)
	}
	// A read recorded while this one saved is still to be saved.
	c.mu.Lock()
	if c.seq == saved {
		c.dirty = false
	}
	c.mu.Unlock()
	return nil
}
