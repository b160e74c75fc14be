package egress

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

// maxSocketPath is the longest path a Unix socket can have on Linux
// (sun_path holds 108 bytes with the terminating NUL).
const maxSocketPath = 107

// listenUnix listens on a new socket at path with mode 0600. The socket
// is made under a temporary name, restricted, then linked into place, so
// that it is never reachable by others, whatever the umask, and so that
// a file another process put there in the meantime is not replaced.
func listenUnix(path string) (*net.UnixListener, os.FileInfo, error) {
	if !filepath.IsAbs(path) {
		return nil, nil, fmt.Errorf("egress proxy socket %q: the path must be absolute", path)
	}
	if len(path) > maxSocketPath {
		return nil, nil, fmt.Errorf("egress proxy socket %s: the path is %d bytes, a Unix socket's can be at most %d; choose a state directory with a shorter path", path, len(path), maxSocketPath)
	}
	if err := removeStale(path); err != nil {
		return nil, nil, err
	}
	var suffix [4]byte
	_, _ = rand.Read(suffix[:])
	tmp := filepath.Join(filepath.Dir(path), ".egress-"+hex.EncodeToString(suffix[:]))
	if len(tmp) > maxSocketPath {
		// The temporary name is made to fit; in a directory this long
		// the socket itself would not.
		return nil, nil, fmt.Errorf("egress proxy socket %s: the directory's path is too long for a Unix socket; choose a shorter state directory", path)
	}
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: tmp, Net: "unix"})
	if err != nil {
		return nil, nil, fmt.Errorf("egress proxy socket %s: %w", path, err)
	}
	// The file is removed here, and the one at path by Close.
	ln.SetUnlinkOnClose(false)
	defer os.Remove(tmp)
	fail := func(err error) (*net.UnixListener, os.FileInfo, error) {
		_ = ln.Close()
		return nil, nil, fmt.Errorf("egress proxy socket %s: %w", path, err)
	}
	if err := os.Chmod(tmp, 0o600); err != nil {
		return fail(err)
	}
	if err := os.Link(tmp, path); err != nil {
		return fail(err)
	}
	fi, err := os.Lstat(path)
	if err != nil {
		return fail(err)
	}
	return ln, fi, nil
}

// removeStale removes a socket at path that nothing listens on: left by
// a toolhost that died. Any other file, or a socket in use, is an error.
func removeStale(path string) error {
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("egress proxy socket %s: %w", path, err)
	}
	if fi.Mode().Type() != fs.ModeSocket {
		return fmt.Errorf("egress proxy socket %s: a %s is there, not a socket; toolhost replaces only a stale socket: move it away or choose another state directory", path, kind(fi.Mode()))
	}
	c, err := net.DialTimeout("unix", path, time.Second)
	if err == nil {
		_ = c.Close()
		return fmt.Errorf("egress proxy socket %s: another process listens on it (a second toolhost with the same state directory?); stop it or choose another state directory", path)
	}
	if !errors.Is(err, syscall.ECONNREFUSED) {
		return fmt.Errorf("egress proxy socket %s: cannot tell whether it is stale: %w", path, err)
	}
	if err := os.Remove(path); err != nil {
		return fmt.Errorf("egress proxy socket %s: remove the stale socket: %w", path, err)
	}
	return nil
}

// kind names a file's type for an error message.
func kind(m fs.FileMode) string {
	switch {
	case m.IsRegular():
		return "regular file"
	case m.IsDir():
		return "directory"
	case m&fs.ModeSymlink != 0:
		return "symbolic link"
	case m&fs.ModeNamedPipe != 0:
		return "named pipe"
	case m&fs.ModeDevice != 0:
		return "device"
	}
	return "special file"
}
