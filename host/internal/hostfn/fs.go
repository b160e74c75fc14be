package hostfn

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"io"
	"io/fs"
	"path/filepath"
	"strconv"
	"unicode/utf8"

	"github.com/aymanbagabas/go-udiff"
	"github.com/tetratelabs/wazero/api"

	"github.com/toolhost/toolhost/abi"
	"github.com/toolhost/toolhost/host/internal/ctxio"
	"github.com/toolhost/toolhost/host/internal/sandbox"
)

// sniffBytes is how much of a file decides whether it is binary (SRD 3.6.8).
const sniffBytes = 8 << 10

func fsStat(_ context.Context, c *Call, mem api.Memory, stack []uint64) ([]byte, error) {
	name, err := guestPath(mem, uint32(stack[0]), uint32(stack[1]))
	if err != nil {
		return nil, err
	}
	p, err := c.resolveRead("fs_stat", name)
	if err != nil {
		return nil, classify(name, err)
	}
	fi, err := p.Lstat()
	if err != nil {
		return nil, classify(name, err)
	}
	return abi.AppendFileInfo(nil, fileInfo(fi, c.display(p))), nil
}

// fsLstat is fs_stat without following a final symbolic link. The path
// up to the link resolves like any path, and the link's own path must be
// one the sandbox allows and the call may read (it names the link, or
// names it and was resolved to where the link leads). For a link, where
// it leads is told as the link stores it only when a tool may go there;
// otherwise only that it leads outside the roots or where a tool may not
// go, never where.
func fsLstat(_ context.Context, c *Call, mem api.Memory, stack []uint64) ([]byte, error) {
	name, err := guestPath(mem, uint32(stack[0]), uint32(stack[1]))
	if err != nil {
		return nil, err
	}
	entry, err := ResolveEntry(c.Sandbox, name)
	if err != nil {
		return nil, classify(name, err)
	}
	if c.Readable != nil && !c.Readable.allows(entry) {
		if p, ok := c.Resolved[name]; !ok || !c.Readable.allows(p) {
			return nil, c.notNamed("fs_lstat", name, entry)
		}
	}
	fi, err := entry.Lstat()
	if err != nil {
		return nil, classify(name, err)
	}
	var li abi.LinkInfo
	if fi.Mode()&fs.ModeSymlink != 0 {
		li = c.linkInfo(entry, name)
	}
	return abi.AppendLinkInfo(abi.AppendFileInfo(nil, fileInfo(fi, c.display(entry))), li), nil
}

// linkInfo says where the link entry (named name) leads. Its target is
// read only when the sandbox resolves name, through the link, to a path
// a tool may reach, and is told only if name still resolves there after
// it was read: a link swapped meanwhile tells nothing.
func (c *Call) linkInfo(entry sandbox.Path, name string) abi.LinkInfo {
	before, err := c.Sandbox.Resolve(name)
	if de, ok := errors.AsType[*sandbox.DenialError](err); ok && de.Reason == sandbox.PathOutsideSandbox {
		return abi.LinkInfo{Flags: abi.LinkOutside}
	} else if err != nil {
		return abi.LinkInfo{Flags: abi.LinkDenied}
	}
	target, err := entry.Readlink()
	if err != nil {
		return abi.LinkInfo{Flags: abi.LinkDenied}
	}
	if after, err := c.Sandbox.Resolve(name); err != nil || after.Abs != before.Abs {
		return abi.LinkInfo{Flags: abi.LinkDenied}
	}
	return abi.LinkInfo{Target: filepath.ToSlash(target)}
}

func fileInfo(fi fs.FileInfo, display string) abi.FileInfo {
	t := abi.TypeOther
	switch {
	case fi.Mode().IsRegular():
		t = abi.TypeFile
	case fi.IsDir():
		t = abi.TypeDir
	case fi.Mode()&fs.ModeSymlink != 0:
		t = abi.TypeSymlink
	}
	return abi.FileInfo{Type: t, Mode: uint32(fi.Mode().Perm()), Size: fi.Size(), ModTime: fi.ModTime().UnixNano(), Path: display}
}

// openRegular opens a sandboxed path that must be a regular file, for
// host function fn to read.
func openRegular(c *Call, fn, name string) (sandbox.Path, *sandbox.File, sandbox.FileStat, error) {
	p, err := c.resolveRead(fn, name)
	if err != nil {
		return p, nil, sandbox.FileStat{}, classify(name, err)
	}
	f, err := p.OpenFile()
	if err != nil {
		return p, nil, sandbox.FileStat{}, classify(name, err)
	}
	st, err := f.Stat()
	if err == nil && !st.Regular() {
		if st.Mode.IsDir() {
			err = fail(abi.StatusWrongType, abi.KindExecutionFailed, "%s is a directory; use list_directory to see its entries", name)
		} else {
			err = fail(abi.StatusWrongType, abi.KindExecutionFailed, "%s is not a regular file", name)
		}
	}
	if err != nil {
		f.Close()
		return p, nil, sandbox.FileStat{}, classify(name, err)
	}
	return p, f, st, nil
}

func fsRead(_ context.Context, c *Call, f *Files, mem api.Memory, stack []uint64) ([]byte, error) {
	name, err := guestPath(mem, uint32(stack[0]), uint32(stack[1]))
	if err != nil {
		return nil, err
	}
	offset, limit, flags := int64(stack[2]), int64(stack[3]), uint32(stack[4])
	if offset < 0 {
		return nil, fail(abi.StatusInvalid, abi.KindBadArgs, "%s: negative offset %d", name, offset)
	}
	p, file, st, err := openRegular(c, "fs_read", name)
	if err != nil {
		return nil, err
	}
	defer file.Close()
	if flags&abi.ReadForUpdate != 0 {
		return readForUpdate(c, f, name, p, file, st)
	}

	size := st.Size
	offset = min(offset, size)
	n := size - offset
	if limit < 0 {
		limit = n // to the end, as abi/README.md says, within the cap below
	}
	// Whatever the plugin asked, no more than the call's read limit:
	// a plugin that gets less sees that the data does
	// not reach the end of the file (no eof flag) and its size.
	n = min(n, limit, c.readLimit())
	resp := make([]byte, abi.ReadInfoSize, abi.ReadInfoSize+int(n))
	data := resp[abi.ReadInfoSize : abi.ReadInfoSize+int(n)]
	k, err := file.ReadAt(data, offset)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, classify(name, err)
	}
	data = data[:k]
	info := abi.ReadInfo{FileSize: size, ModTime: st.ModTime.UnixNano()}
	eof := offset+int64(k) >= size
	if eof {
		info.Flags |= abi.ReadEOF
	}
	head := data
	if offset != 0 {
		head = make([]byte, min(sniffBytes, size))
		m, _ := file.ReadAt(head, 0)
		head = head[:m]
	}
	if isBinary(head, eof && offset == 0) || (offset == 0 && !validUTF8(data, eof)) {
		info.Flags |= abi.ReadIsBinary
	}
	if flags&abi.ReadRecord != 0 && offset == 0 && eof {
		f.observe(c, p, sha256.Sum256(data), true)
		if f.Reads != nil {
			info.Flags |= abi.ReadRecorded
		}
	}
	out := abi.AppendReadInfo(resp[:0], info)
	if flags&abi.ReadBase64 != 0 {
		enc := make([]byte, abi.ReadInfoSize+base64.StdEncoding.EncodedLen(len(data)))
		copy(enc, out)
		base64.StdEncoding.Encode(enc[abi.ReadInfoSize:], data)
		return enc, nil
	}
	return resp[:abi.ReadInfoSize+len(data)], nil
}

// isBinary applies the SRD's sniff: a NUL byte in the first 8 KiB, or bytes
// that are not UTF-8. complete says b ends at the end of the file, so a cut
// multi-byte sequence at its end is invalid rather than unfinished.
func isBinary(b []byte, complete bool) bool {
	head := b[:min(len(b), sniffBytes)]
	if bytes.IndexByte(head, 0) >= 0 {
		return true
	}
	return !validUTF8(head, complete && len(head) == len(b))
}

// validUTF8 reports whether b is UTF-8, forgiving a sequence cut at the end
// unless b is complete.
func validUTF8(b []byte, complete bool) bool {
	if utf8.Valid(b) {
		return true
	}
	if complete {
		return false
	}
	for cut := 1; cut <= utf8.UTFMax-1 && cut <= len(b); cut++ {
		if utf8.Valid(b[:len(b)-cut]) && !utf8.FullRune(b[len(b)-cut:]) {
			return true
		}
	}
	return false
}

func fsReadLines(ctx context.Context, c *Call, f *Files, mem api.Memory, stack []uint64) ([]byte, error) {
	name, err := guestPath(mem, uint32(stack[0]), uint32(stack[1]))
	if err != nil {
		return nil, err
	}
	start, end, flags := uint32(stack[2]), uint32(stack[3]), uint32(stack[4])
	if start == 0 {
		start = 1
	}
	if end != 0 && end < start {
		return nil, fail(abi.StatusInvalid, abi.KindBadArgs, "%s: start_line %d is after end_line %d", name, start, end)
	}
	p, file, st, err := openRegular(c, "fs_read_lines", name)
	if err != nil {
		return nil, err
	}
	defer file.Close()

	scanLimit := c.scanLimit()
	r := lineReader{ctx: ctx, f: file, start: start, end: end, scanLimit: scanLimit, record: flags&abi.ReadRecord != 0}
	if err := r.run(); err != nil {
		return nil, classifyLines(name, start, end, scanLimit, err)
	}
	info := abi.ReadInfo{FileSize: st.Size, ModTime: st.ModTime.UnixNano(), Lines: r.lines}
	if r.binary {
		info.Flags |= abi.ReadIsBinary
		return abi.AppendReadInfo(nil, info), nil
	}
	if r.eof {
		info.Flags |= abi.ReadEOF
	}
	if r.record {
		f.observe(c, p, r.sum, true)
		if f.Reads != nil {
			info.Flags |= abi.ReadRecorded
		}
	}
	return append(abi.AppendReadInfo(make([]byte, 0, abi.ReadInfoSize+len(r.out)), info), r.out...), nil
}

var errScanLimit = errors.New("scan limit")

func classifyLines(name string, start, end uint32, limit int64, err error) error {
	if !errors.Is(err, errScanLimit) {
		return classify(name, err)
	}
	want := "through the end of the file"
	if end != 0 {
		want = "through line " + itoa(end)
	}
	return fail(abi.StatusScanLimit, abi.KindExecutionFailed,
		"%s: reading from line %d %s means scanning more than %d bytes (max_scan_bytes); request a narrower line range",
		name, start, want, limit)
}

func itoa(n uint32) string { return string(appendUint(nil, n)) }

func appendUint(b []byte, n uint32) []byte {
	if n >= 10 {
		b = appendUint(b, n/10)
	}
	return append(b, byte('0'+n%10))
}

// lineReader streams a file once: it collects lines start..end, stops
// scanning for lines at the scan limit, and, when recording, hashes the whole
// file so the read cache holds the digest of exactly what was on disk.
type lineReader struct {
	ctx        context.Context
	f          *sandbox.File
	start, end uint32
	scanLimit  int64
	record     bool

	out    []byte
	lines  uint32
	eof    bool
	binary bool
	sum    [sha256.Size]byte
}

func (r *lineReader) run() error {
	h := sha256.New()
	buf := make([]byte, 64<<10)
	line := uint32(1)
	var scanned int64
	first, done := true, false
	for !done {
		if err := r.ctx.Err(); err != nil {
			return err
		}
		n, err := io.ReadFull(r.f, buf)
		chunk := buf[:n]
		atEOF := errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)
		if err != nil && !atEOF {
			return err
		}
		if first {
			first = false
			if isBinary(chunk, atEOF) {
				r.binary = true
				return nil
			}
		}
		if r.record {
			h.Write(chunk)
		}
		var used int
		line, used, done = r.collect(chunk, line)
		scanned += int64(used)
		if scanned > r.scanLimit {
			return errScanLimit
		}
		if atEOF {
			r.eof = !done
			break
		}
	}
	if !r.record {
		return nil
	}
	if !r.eof {
		if _, err := io.CopyBuffer(h, ctxio.Reader(r.ctx, r.f), buf); err != nil {
			return err
		}
	}
	h.Sum(r.sum[:0])
	return nil
}

// collect consumes chunk from the current line number, appending lines in
// range to r.out. It returns the next line number, how many bytes it
// examined, and whether the range is complete.
func (r *lineReader) collect(chunk []byte, line uint32) (next uint32, used int, done bool) {
	for used < len(chunk) {
		i := bytes.IndexByte(chunk[used:], '\n')
		stop := len(chunk)
		if i >= 0 {
			stop = used + i + 1
		}
		if line >= r.start {
			if len(r.out) == 0 || r.out[len(r.out)-1] == '\n' {
				r.lines++
			}
			r.out = append(r.out, chunk[used:stop]...)
		}
		used = stop
		if i >= 0 {
			if r.end != 0 && line == r.end {
				return line + 1, used, true
			}
			line++
		}
	}
	return line, used, false
}

func fsList(ctx context.Context, c *Call, mem api.Memory, stack []uint64) ([]byte, error) {
	name, err := guestPath(mem, uint32(stack[0]), uint32(stack[1]))
	if err != nil {
		return nil, err
	}
	depth, maxEntries, flags := uint32(stack[2]), uint32(stack[3]), uint32(stack[4])
	if name == "" {
		name = "."
	}
	p, err := c.resolveRead("fs_list", name)
	if err != nil {
		return nil, classify(name, err)
	}
	st, err := p.Lstat()
	if err != nil {
		return nil, classify(name, err)
	}
	if !st.IsDir() {
		return nil, fail(abi.StatusWrongType, abi.KindExecutionFailed, "%s is not a directory; use read_file to read it", name)
	}
	// max_entries 0 means "no limit of the plugin's own", never more than
	// the output limit can show.
	limit := c.listLimit()
	if maxEntries > 0 && int64(maxEntries) < int64(limit) {
		limit = int(maxEntries)
	}
	w := walker{ctx: ctx, call: c, hidden: flags&abi.ListHidden != 0, max: limit}
	if err := w.walk(p, max(depth, 1)); err != nil && !errors.Is(err, errFull) {
		return nil, classify(name, err)
	}
	var lf uint32
	if w.truncated {
		lf |= abi.ListTruncated
	}
	out := abi.AppendListHeader(nil, lf, uint32(len(w.entries)))
	for _, e := range w.entries {
		out = abi.AppendFileInfo(out, e)
	}
	return out, nil
}

var errFull = errors.New("listing full")

// walker lists a tree depth-first in name order, which is path order
// compared component by component. Symlinks are reported, never followed;
// denied paths are left out entirely. It holds at most max entries, and
// reads no directory into memory whole.
type walker struct {
	ctx       context.Context
	call      *Call
	hidden    bool
	max       int
	entries   []abi.FileInfo
	truncated bool
}

func (w *walker) walk(dir sandbox.Path, depth uint32) error {
	if err := w.ctx.Err(); err != nil {
		return err
	}
	keep := func(name string) bool {
		if !w.hidden && name[0] == '.' {
			return false
		}
		_, denied := w.call.Sandbox.Denied(dir.Child(name).Abs)
		return !denied
	}
	// Only the first entries still fitting matter: every entry listed
	// takes one place, and the ones before it come first.
	list, more, err := dir.ReadDirFirst(w.max-len(w.entries), keep)
	if err != nil {
		return err
	}
	for _, de := range list {
		child := dir.Child(de.Name())
		fi, err := de.Info()
		if err != nil {
			continue // vanished while listing
		}
		if len(w.entries) == w.max {
			w.truncated = true
			return errFull
		}
		w.entries = append(w.entries, fileInfo(fi, w.call.display(child)))
		if de.IsDir() && depth > 1 {
			if err := w.walk(child, depth-1); err != nil {
				return err
			}
		}
	}
	if more {
		w.truncated = true
		return errFull
	}
	return nil
}

func fsWrite(ctx context.Context, c *Call, f *Files, mem api.Memory, stack []uint64) ([]byte, error) {
	name, err := guestPath(mem, uint32(stack[0]), uint32(stack[1]))
	if err != nil {
		return nil, err
	}
	data, err := guestBytes(mem, uint32(stack[2]), uint32(stack[3]))
	if err != nil {
		return nil, err
	}
	if err := c.dryRunRefusal("write " + name); err != nil {
		return nil, err
	}
	createDirs := uint32(stack[4])&abi.WriteCreateDirs != 0
	p, err := c.resolve(name)
	if err != nil {
		return nil, classify(name, err)
	}
	grant, err := f.writeGrant(c, p, name)
	if err != nil {
		return nil, err
	}
	unlock, err := c.lock(ctx, p)
	if err != nil {
		return nil, err
	}
	defer unlock()
	created, err := writeLocked(ctx, c, f, p, name, data, createDirs, grant)
	if err != nil {
		return nil, err
	}
	wi := abi.WriteInfo{Size: int64(len(data)), Path: c.display(p)}
	if created {
		wi.Flags |= abi.WriteCreated
	}
	return abi.AppendWriteInfo(nil, wi), nil
}

// writeLocked makes the checks of a write and writes, holding p's lock.
func writeLocked(ctx context.Context, c *Call, f *Files, p sandbox.Path, name string, data []byte, createDirs bool, grant WriteGrant) (created bool, err error) {
	if err := c.checkCreateOnly(p, name, grant); err != nil {
		return false, err
	}
	if err := checkFresh(ctx, c, f, p, name); err != nil {
		return false, err
	}
	txn := c.Sandbox.Begin()
	defer txn.Close()
	created, err = stage(txn, p, data, createDirs, grant == WriteCreateOnly)
	if err == nil {
		// The previous content is journaled before the commit, and a
		// journal that cannot record it refuses the change.
		if jerr := c.beforeChange(ctx, []sandbox.Path{p}); jerr != nil {
			return false, jerr
		}
		err = txn.Commit()
	}
	switch {
	case errors.Is(err, fs.ErrExist):
		return false, c.appeared(p, name, grant)
	case errors.Is(err, fs.ErrNotExist) && !createDirs:
		return false, fail(abi.StatusNotFound, abi.KindExecutionFailed, "%s: the parent directory does not exist; set create_dirs to true to create it", name)
	case err != nil:
		return false, classify(name, err)
	}
	f.observe(c, p, sha256.Sum256(data), true)
	c.afterChange(ctx, []sandbox.Path{p}, [][]byte{data})
	return created, nil
}

// readWhole reads the regular file at p if it holds at most limit bytes,
// stopping when ctx ends. Its size is checked before anything is read,
// and no more than limit+1 bytes are read whatever the size said (a file
// still growing): a larger file is an error matching errTooLarge. Any
// other kind of file (a FIFO, a device such as /dev/zero, a directory)
// is not read: errNotRegular, with st saying what it is. Opening does not
// wait for a FIFO's writer (sandbox.Path.OpenFile).
func readWhole(ctx context.Context, p sandbox.Path, limit int64) (b []byte, st sandbox.FileStat, err error) {
	f, err := p.OpenFile()
	if err != nil {
		return nil, st, err
	}
	defer f.Close()
	if st, err = f.Stat(); err != nil {
		return nil, st, err
	}
	switch {
	case !st.Regular():
		return nil, st, errNotRegular
	case st.Size > limit:
		return nil, st, errTooLarge
	}
	r := io.LimitReader(ctxio.Reader(ctx, f), limit+1)
	b = make([]byte, 0, st.Size+1) // one byte more than the size seen, to notice growth
	for {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
		n, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		switch {
		case errors.Is(err, io.EOF):
			if int64(len(b)) > limit {
				return nil, st, errTooLarge
			}
			return b, st, nil
		case err != nil:
			return nil, st, err
		}
	}
}

var (
	errTooLarge   = errors.New("larger than max_scan_bytes")
	errNotRegular = errors.New("not a regular file")
)

// maxDiffLines bounds the lines of either side of a diff. The diff's cost
// grows with the lines more than with the bytes: two 2 MiB sides of a
// million short lines each take seconds, while a
// quarter of a million lines stays well inside a file tool's timeout.
const maxDiffLines = 1 << 18

func fsDiff(ctx context.Context, c *Call, mem api.Memory, stack []uint64) ([]byte, error) {
	name, err := guestPath(mem, uint32(stack[0]), uint32(stack[1]))
	if err != nil {
		return nil, err
	}
	data, err := guestBytes(mem, uint32(stack[2]), uint32(stack[3]))
	if err != nil {
		return nil, err
	}
	p, err := c.resolveRead("fs_diff", name)
	if err != nil {
		return nil, classify(name, err)
	}
	d, err := diffFile(ctx, c, p, name, data, true)
	if err != nil {
		return nil, err
	}
	return []byte(d), nil
}

// diffFile is the unified diff from the file at p (or no file,
// when !exists) to data, read and computed under ctx, the call's
// deadline. Like read_file, it reads only a regular file, and only up to
// the scan limit; a side that is not a
// regular file, is larger than the scan limit, or has too many lines to
// diff is not diffed: the diff says so, and why, in one line, like a
// binary file's. A directory is refused: no file can replace it.
func diffFile(ctx context.Context, c *Call, p sandbox.Path, name string, data []byte, exists bool) (string, error) {
	limit := c.scanLimit()
	display := c.display(p)
	if int64(len(data)) > limit {
		return omittedDiff(display, "the new content is "+itoa64(int64(len(data)))+" bytes, larger than max_scan_bytes ("+itoa64(limit)+" bytes)"), nil
	}
	var current []byte
	if exists {
		var st sandbox.FileStat
		var err error
		current, st, err = readWhole(ctx, p, limit)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			exists = false
		case errors.Is(err, errNotRegular) && st.Mode.IsDir():
			return "", fail(abi.StatusWrongType, abi.KindExecutionFailed, "%s is a directory, so no file can replace it; name a file inside it", name)
		case errors.Is(err, errNotRegular):
			return omittedDiff(display, "a/"+display+" is "+fileKind(p, st.Mode)+", not a regular file"), nil
		case errors.Is(err, errTooLarge):
			return omittedDiff(display, "a/"+display+" is larger than max_scan_bytes ("+itoa64(limit)+" bytes)"), nil
		case err != nil:
			if stop := interrupted(err, name+": the diff was not done before the call's deadline; nothing was written"); stop != nil {
				return "", stop
			}
			return "", classify(name, err)
		}
	}
	if n, m := bytes.Count(current, newline), bytes.Count(data, newline); max(n, m) > maxDiffLines {
		return omittedDiff(display, "a/"+display+" has "+itoa64(int64(n))+" lines and b/"+display+" "+itoa64(int64(m))+", more than the "+itoa64(maxDiffLines)+" a diff compares"), nil
	}
	d, err := unifiedDiff(ctx, display, current, exists, data)
	if stop := interrupted(err, name+": the diff was not done before the call's deadline; nothing was written"); stop != nil {
		return "", stop
	}
	return d, err
}

var newline = []byte{'\n'}

// omittedDiff is the line that stands for a diff not made, saying why.
func omittedDiff(display, why string) string {
	return "Files a/" + display + " and b/" + display + " differ; diff omitted: " + why + "\n"
}

// fileKind names a file that is not regular, for a person. An open
// file's mode may only say it is irregular; the path's says more.
func fileKind(p sandbox.Path, m fs.FileMode) string {
	if m&fs.ModeIrregular != 0 {
		if fi, err := p.Lstat(); err == nil {
			m = fi.Mode()
		}
	}
	switch {
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe (FIFO)"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a block device"
	case m&fs.ModeSocket != 0:
		return "a socket"
	}
	return "a special file"
}

func itoa64(n int64) string { return strconv.FormatInt(n, 10) }

// unifiedDiff is a git-style diff from current (the file's content, or no
// file when !exists) to data; empty when they are equal. It returns
// ctx's error if ctx ends first.
func unifiedDiff(ctx context.Context, display string, current []byte, exists bool, data []byte) (string, error) {
	oldLabel := "a/" + display
	if !exists {
		oldLabel = "/dev/null"
	}
	if isBinary(current, true) || isBinary(data, true) {
		if exists && bytes.Equal(current, data) {
			return "", nil
		}
		return "Binary files " + oldLabel + " and b/" + display + " differ\n", nil
	}
	return diffWithin(ctx, oldLabel, "b/"+display, string(current), string(data))
}

// diffWithin runs the diff algorithm, which cannot be interrupted, on a
// goroutine of its own, and returns when ctx ends if that comes first:
// the call is over by then. What is left runs to its end in the
// background, bounded by maxDiffLines and the scan limit.
func diffWithin(ctx context.Context, oldLabel, newLabel, old, new string) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	if ctx.Done() == nil {
		return udiff.Unified(oldLabel, newLabel, old, new), nil
	}
	done := make(chan string, 1)
	go func() { done <- udiff.Unified(oldLabel, newLabel, old, new) }()
	select {
	case d := <-done:
		return d, nil
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

func eventEmit(ctx context.Context, c *Call, mem api.Memory, stack []uint64) ([]byte, error) {
	kind, n := uint32(stack[0]), uint32(stack[2])
	if n > maxEventBytes {
		return nil, fail(abi.StatusTooLarge, abi.KindExecutionFailed,
			"event_emit: a chunk of %d bytes is more than %d; emit output in smaller chunks", n, maxEventBytes)
	}
	data, err := guestBytes(mem, uint32(stack[1]), n)
	if err != nil {
		return nil, err
	}
	if c.Emit != nil {
		c.Emit(ctx, Event{CallID: c.CallID, Kind: kind, Data: bytes.Clone(data)})
	}
	return nil, nil
}
