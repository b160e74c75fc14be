package readcache

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// Store keeps caches in a directory, one file per conversation.
//
// A conversation's file is a sequence of JSON records, each
// {"conversation", "entries"}: Save appends a record of the reads made
// since the last one, and the newest read of a path wins when the file is
// loaded. Appending is what makes a read cheap: replacing the file on
// every call (a new file, a rename) cost 1.3 ms per call on ext4, more
// than the rest of a read through toolhost serve. Once the appended
// records outgrow the last whole record, Save writes the file whole
// again, replacing it atomically. A crash in the middle of an append
// leaves a partial last record, which Load skips (its reads count as
// unread, so the worst case is a refused write) and the next Save
// replaces.
type Store struct {
	dir string
}

// disk is what one Cache knows of its conversation's file, so that Save
// reads only what other processes appended since and writes only what
// changed. It is guarded by the Cache's mutex.
type disk struct {
	file    os.FileInfo // the file last read or written; nil before
	offset  int64       // how far into file the cache has merged and written
	whole   int64       // the size of the file when last written whole
	saved   uint64      // the cache's seq when it last wrote
	rewrite bool        // the file has a damaged record: write it whole
}

// compactSlack is how far the appended records may grow beyond twice the
// last whole record before Save writes the file whole again.
const compactSlack = 64 << 10

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
	f, err := os.Open(s.fileName(conversation))
	if errors.Is(err, fs.ErrNotExist) {
		return c, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read cache of conversation %q: %w", conversation, err)
	}
	defer f.Close()
	if err := s.catchUp(conversation, c, f); err != nil {
		return nil, err
	}
	return c, nil
}

// catchUp merges into c the records of f it has not seen: all of them if
// f is not the file c last saw (another process wrote it whole since),
// else those after c's offset.
func (s *Store) catchUp(conversation string, c *Cache, f *os.File) error {
	info, err := f.Stat()
	if err != nil {
		return fmt.Errorf("read cache of conversation %q: %w", conversation, err)
	}
	c.mu.Lock()
	from := c.disk.offset
	if c.disk.file == nil || !os.SameFile(c.disk.file, info) || info.Size() < from {
		from = 0
	}
	c.mu.Unlock()
	var entries []Entry
	damaged := false
	if info.Size() > from {
		if entries, damaged, err = decode(io.NewSectionReader(f, from, info.Size()-from)); err != nil && from == 0 {
			return fmt.Errorf("read cache of conversation %q is corrupt (%s): %w", conversation, f.Name(), err)
		}
		// A damaged record after good ones is the tail of an append a
		// crash cut short: what came before it still counts.
		damaged = damaged || err != nil
	}
	c.merge(entries)
	c.mu.Lock()
	defer c.mu.Unlock()
	if from == 0 {
		c.disk.whole = info.Size()
	}
	c.disk.file, c.disk.offset = info, info.Size()
	c.disk.rewrite = c.disk.rewrite || damaged
	return nil
}

// decode reads the records in r. damaged reports a record that ends
// early after at least one whole one; err, a first record that is not
// one.
func decode(r io.Reader) (entries []Entry, damaged bool, err error) {
	d := json.NewDecoder(r)
	for n := 0; ; n++ {
		var rec file
		switch err := d.Decode(&rec); {
		case err == io.EOF:
			return entries, false, nil
		case err != nil && n == 0:
			return nil, false, err
		case err != nil:
			return entries, true, nil
		}
		entries = append(entries, rec.Entries...)
	}
}

// Save persists c for the conversation, merging into c entries another
// process saved meanwhile (the newer read of a path wins). It appends the
// reads recorded since c last saved, or writes the file whole when the
// appended records have grown large or one of them is damaged.
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
	name := s.fileName(conversation)
	f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("save read cache: %w", err)
	}
	defer f.Close()
	if err := s.catchUp(conversation, c, f); err != nil {
		// Unreadable from its first record: nothing in it can be
		// kept, and writing it whole makes it readable again.
		c.mu.Lock()
		c.disk.rewrite = true
		c.mu.Unlock()
	}
	c.mu.Lock()
	saved := c.seq
	whole := c.disk.rewrite || c.disk.offset > 2*c.disk.whole+compactSlack
	var entries []Entry
	for _, e := range c.entries {
		if whole || e.seq > c.disk.saved {
			entries = append(entries, e)
		}
	}
	c.mu.Unlock()
	data, err := json.Marshal(file{Conversation: conversation, Entries: entries})
	if err != nil {
		return err
	}
	data = append(data, '\n')
	if whole {
		err = s.replace(name, data)
	} else {
		err = appendRecord(f, data)
	}
	if err != nil {
		return err
	}
	return s.saved(c, name, whole, saved, f)
}

// appendRecord writes one record at the end of f, in one write: other
// processes append only under the same lock, so nothing lands inside it.
func appendRecord(f *os.File, data []byte) error {
	if _, err := f.Write(data); err != nil {
		return fmt.Errorf("save read cache: %w", err)
	}
	return nil
}

// replace writes the file whole, atomically: a crash leaves the old file
// or the new one.
func (s *Store) replace(name string, data []byte) error {
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
	if err := os.Rename(tmp.Name(), name); err != nil {
		return fmt.Errorf("save read cache: %w", err)
	}
	return nil
}

// saved notes in c what it now holds on disk: everything up to seq, and
// the file as it is after the write (appended to f, or name written
// whole). A read recorded while Save ran is still to be saved.
func (s *Store) saved(c *Cache, name string, whole bool, seq uint64, f *os.File) error {
	var info os.FileInfo
	var err error
	if whole {
		info, err = os.Stat(name)
	} else {
		info, err = f.Stat()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.disk.saved = seq
	if c.seq == seq {
		c.dirty = false
	}
	if err != nil {
		// Written, but where the file ends is unknown: the next Save
		// reads it from the start.
		c.disk.file = nil
		return nil
	}
	c.disk.file, c.disk.offset = info, info.Size()
	if whole {
		c.disk.whole, c.disk.rewrite = info.Size(), false
	}
	return nil
}
