package conformance

import (
	"fmt"
	"io"
	"os"
	"syscall"
)

// Limits on what the suite reads from a plugin's folder: a case file or a
// module is the plugin author's, and an operator runs toolhost test on
// plugins they do not trust yet.
const (
	// maxCaseBytes bounds a case file; the built-in ones are under 2 KiB.
	maxCaseBytes = 1 << 20
	// maxCaseSteps bounds a case's calls, each of which the suite makes.
	maxCaseSteps = 256
	// maxModuleBytes bounds a module; Go plugins are a few MiB.
	maxModuleBytes = 256 << 20
)

// readRegular reads the regular file at path, at most max bytes. A
// FIFO, a device (a link to /dev/zero) or a directory is refused
// without blocking: the file is opened non-blocking and checked after
// opening, so swapping it between a check and the open gains nothing.
func readRegular(path string, max int64) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !info.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file (%s); give a file", path, info.Mode().Type())
	}
	if info.Size() > max {
		return nil, fmt.Errorf("%s is %d bytes, more than the %d the suite reads", path, info.Size(), max)
	}
	data, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > max {
		return nil, fmt.Errorf("%s grew past the %d bytes the suite reads", path, max)
	}
	return data, nil
}
