//go:build !unix

package readcache

// lock is a no-op where flock is unavailable; Save still replaces the file
// atomically, so the worst case is a lost entry, never a corrupt file.
func (s *Store) lock(string) (func(), error) { return func() {}, nil }
