//go:build unix

package readcache

import (
	"fmt"
	"os"
	"syscall"
)

// lock serialises Save between processes sharing the state directory.
func (s *Store) lock(conversation string) (unlock func(), err error) {
	f, err := os.OpenFile(s.fileName(conversation)+".lock", os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("lock read cache: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("lock read cache: %w", err)
	}
	return func() {
		syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}, nil
}
