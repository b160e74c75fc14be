//go:build !linux

package confine

import (
	"errors"
	"io"
	"io/fs"
	"os"
)

// treeDevice tells no device here: the search does not stop at mount
// points. Commands are not confined on these systems anyway.
func treeDevice(tree string) (uint64, bool, error) {
	_, err := os.Stat(tree)
	return 0, false, err
}

// readDir is walk_linux.go's, with os.File, and no stamp.
func readDir(dir string, _ uint64, _ bool, limit int, projects []string) (listing, error) {
	var l listing
	f, err := os.Open(dir)
	if err != nil {
		return l, err
	}
	defer f.Close()
	for {
		if l.n >= limit {
			return l, errTooMany
		}
		es, err := f.ReadDir(min(256, limit-l.n))
		for _, e := range es {
			switch name := e.Name(); {
			case e.Type()&fs.ModeDir != 0:
				l.subdirs = append(l.subdirs, name)
			case wanted(name, projects):
				l.names = append(l.names, name)
			}
		}
		l.n += len(es)
		if errors.Is(err, io.EOF) || err == nil && len(es) == 0 {
			return l, nil
		}
		if err != nil {
			return l, err
		}
	}
}

// dirStampOf is not known here: nothing is remembered (stableFS).
func dirStampOf(path string) (dirStamp, error) {
	return dirStamp{}, errors.ErrUnsupported
}

// stableFS is false here: SearchCache remembers nothing on these
// systems, where commands are not confined anyway.
func stableFS(string) bool { return false }

// birthTime is not known here: submodules are protected in name order.
func birthTime(string) int64 { return 0 }
