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

// readDir is walk_linux.go's, with os.File.
func readDir(dir string, _ uint64, _ bool, limit int) (names, subdirs []string, n int, err error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, nil, 0, err
	}
	defer f.Close()
	for {
		if n >= limit {
			return names, subdirs, n, errTooMany
		}
		es, err := f.ReadDir(min(256, limit-n))
		for _, e := range es {
			switch name := e.Name(); {
			case e.Type()&fs.ModeDir != 0:
				subdirs = append(subdirs, name)
			case wanted(name):
				names = append(names, name)
			}
		}
		n += len(es)
		if errors.Is(err, io.EOF) || err == nil && len(es) == 0 {
			return names, subdirs, n, nil
		}
		if err != nil {
			return names, subdirs, n, err
		}
	}
}

// birthTime is not known here: submodules are protected in name order.
func birthTime(string) (int64, bool) { return 0, false }
