package confine

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"path/filepath"
	"strings"
)

// maxIndexBytes bounds the index read for its gitlinks: a monorepo of a
// million files has an index of about 100 MB; one larger is not read.
const maxIndexBytes = 128 << 20

// gitlinkMode is the mode git records for a gitlink (a submodule's
// commit) in its index.
const gitlinkMode = 0o160000

// indexGitlinks returns the paths (relative, slash-separated) of the
// gitlinks in the git index file at p: where git recurses into another
// repository (git status, git diff). hashSize is the object id's length
// (20 for SHA-1, 32 for SHA-256). Versions 2, 3 and 4 of the format are
// read.
func indexGitlinks(p string, hashSize int) ([]string, error) {
	f, err := openRegular(p, true)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxIndexBytes+1))
	if err != nil {
		return nil, fmt.Errorf("read the index %s: %w", p, err)
	}
	if len(data) > maxIndexBytes {
		return nil, fmt.Errorf("the index %s is larger than %d bytes; its gitlinks were not read", p, maxIndexBytes)
	}
	bad := func(what string) error { return fmt.Errorf("the index %s: %s", p, what) }
	if len(data) < 12 || string(data[:4]) != "DIRC" {
		return nil, bad("not a git index")
	}
	version := binary.BigEndian.Uint32(data[4:8])
	if version < 2 || version > 4 {
		return nil, bad(fmt.Sprintf("version %d is not one this reads", version))
	}
	n := int(binary.BigEndian.Uint32(data[8:12]))
	fixed := 40 + hashSize + 2 // times, dev, ino, mode, uid, gid, size; the id; flags
	off := 12
	var prev []byte
	var links []string
	for range n {
		start := off
		if off+fixed > len(data) {
			return nil, bad("an entry is cut short")
		}
		mode := binary.BigEndian.Uint32(data[off+24 : off+28])
		flags := binary.BigEndian.Uint16(data[off+fixed-2 : off+fixed])
		off += fixed
		if version >= 3 && flags&0x4000 != 0 {
			off += 2
		}
		var name []byte
		if version == 4 {
			strip, used := indexVarint(data[off:])
			if used == 0 || strip > uint64(len(prev)) {
				return nil, bad("a malformed path")
			}
			off += used
			end := bytes.IndexByte(data[off:], 0)
			if end < 0 {
				return nil, bad("a path without its end")
			}
			name = append(prev[:len(prev)-int(strip):len(prev)-int(strip)], data[off:off+end]...)
			off += end + 1
		} else {
			end := bytes.IndexByte(data[off:], 0)
			if end < 0 {
				return nil, bad("a path without its end")
			}
			name = data[off : off+end]
			// An entry is padded with 1 to 8 NULs to a multiple of 8 bytes.
			off = start + (off+end-start+8)&^7
		}
		prev = name
		if mode&0o170000 == gitlinkMode {
			links = append(links, string(name))
		}
	}
	return links, nil
}

// indexVarint decodes the offset encoding of index version 4 (the one of
// pack files' ofs-delta): how many bytes it used, 0 when malformed.
func indexVarint(b []byte) (uint64, int) {
	if len(b) == 0 {
		return 0, 0
	}
	v := uint64(b[0] & 0x7f)
	i := 1
	for b[i-1]&0x80 != 0 {
		if i >= len(b) || i > 9 {
			return 0, 0
		}
		v = ((v + 1) << 7) | uint64(b[i]&0x7f)
		i++
	}
	return v, i
}

// hashSizeOf is the object id's length of the repository whose git
// directory is gd: 32 when its config sets extensions.objectFormat =
// sha256, 20 otherwise.
func hashSizeOf(gd string) int {
	f, err := openRegular(filepath.Join(gd, "config"), true)
	if err != nil {
		return 20
	}
	defer f.Close()
	sc := bufio.NewScanner(io.LimitReader(f, 64<<10))
	for sc.Scan() {
		line := strings.ToLower(strings.Join(strings.Fields(sc.Text()), ""))
		if strings.HasPrefix(line, "objectformat=") && strings.Contains(line, "sha256") {
			return 32
		}
	}
	return 20
}

// modulesPaths returns the paths (relative) that the .gitmodules file at
// p gives its submodules: where a clone leaves them as empty directories
// until they are checked out. A small reading of "path = X" lines; what
// it misses, the gitlinks of the index cover.
func modulesPaths(p string) []string {
	f, err := openRegular(p, true)
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(io.LimitReader(f, 1<<20))
	for sc.Scan() {
		k, v, ok := strings.Cut(strings.TrimSpace(sc.Text()), "=")
		if !ok || !strings.EqualFold(strings.TrimSpace(k), "path") {
			continue
		}
		v = strings.Trim(strings.TrimSpace(v), `"`)
		if v != "" && !filepath.IsAbs(v) && !strings.HasPrefix(filepath.Clean(v), "..") {
			out = append(out, filepath.Clean(v))
		}
	}
	return out
}
