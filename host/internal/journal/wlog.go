package journal

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
)

// The step log is what makes a step durable on the calls' path. A step
// is one write(2) of a framed record to a file of this process's own
// beside the database, and reaches the database later, applied in
// batches by a goroutine (apply.go). A commit in SQLite's own write-ahead
// log costs a call 150 to 300 µs in this pure-Go SQLite (the pages of a
// batch, its calls and their indexes, and the result, each written whole
// with checksums); the record costs 5 to 15 (binary, logcodec.go, into
// pages the file already has, below). Both are equally durable:
// written to the operating system, not synced, so a killed process loses
// nothing and a power cut may lose the last steps (docs/RATIONALE.md).
//
// A log is written from its start again (rewound) once everything in it
// is applied and it is past a size, rather than emptied: writing over
// pages the file already has costs a write(2) a third of what appending
// costs (4.4 against 13 µs for 4 KiB here), as the file system allocates
// nothing. What the last lap left after the current end is told apart by
// its sequence numbers: the records of a log are numbered one after
// another, and reading stops at the first that does not follow.
//
// A log is named after the journal and its process (pid and start time):
// only a process that is gone has its log replayed by another, at
// recovery, so a log is only ever read by one process at a time. Every
// record carries a sequence number, and the database the last one it
// applied from each log, in the same transaction as the steps: a record
// is applied once however often the log is replayed.

// logFrame is a record's header: its payload's length and CRC-32C.
const logFrame = 8

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// logRecord is one step as logged. Times are set before logging, so
// applying it later, or again, writes the same thing. The JSON names are
// the format of earlier versions, still read (logcodec.go).
type logRecord struct {
	Seq   uint64       `json:"q"`
	Batch string       `json:"b,omitempty"`
	Step  Step         `json:"s,omitzero"`
	Reads *readsRecord `json:"r,omitempty"` // instead of a step

	// folded marks a batch's record into which coalesce folded the
	// batch's later steps: its state and its calls' starts are to be
	// written as they are. Never logged.
	folded bool
}

// stepLog is an open log file, appended to by Commit.
type stepLog struct {
	mu     sync.Mutex
	f      *os.File
	name   string // base name, the key of its row in the logs table
	size   int64  // where the next record goes: the end of this lap
	seq    uint64 // of the last record written
	buf    []byte // the last record's frame, for the next to reuse
	broken error  // a write failed and could not be undone: no more
}

// LogDir is the directory of the step logs of the journal at path. The
// host keeps tools out of it, as out of the database.
func LogDir(path string) string { return path + ".logs" }

// logName is a log of process pid (started at start) for the journal at
// path; the random part tells apart two journals one process opened on
// one file.
func logName(path string, pid int, start uint64) string {
	return fmt.Sprintf("%s.log-%d-%d-%08x", filepath.Base(path), pid, start, rand.Uint32())
}

// parseLogName returns the process a log file of the journal at path
// belongs to.
func parseLogName(path, name string) (pid int, start uint64, ok bool) {
	rest, found := strings.CutPrefix(name, filepath.Base(path)+".log-")
	if !found {
		return 0, 0, false
	}
	parts := strings.Split(rest, "-")
	if len(parts) != 3 || !isLogTag(parts[2]) {
		// Only the names logName makes: a log the user moved aside as
		// an error told them (name.bad) is not replayed again.
		return 0, 0, false
	}
	pid, err1 := strconv.Atoi(parts[0])
	start, err2 := strconv.ParseUint(parts[1], 10, 64)
	return pid, start, err1 == nil && err2 == nil && pid > 0
}

// isLogTag reports whether s is the eight lowercase hex digits logName
// ends a name with.
func isLogTag(s string) bool {
	if len(s) != 8 {
		return false
	}
	for _, c := range []byte(s) {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

func createLog(dir, name string) (*stepLog, error) {
	f, err := os.OpenFile(filepath.Join(dir, name), os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return nil, err
	}
	return &stepLog{f: f, name: name}, nil
}

// append writes rec, numbered next, as one record. A failed write is cut
// off again, so the log never holds half a record followed by whole ones.
func (l *stepLog) append(rec *logRecord) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.broken != nil {
		return l.broken
	}
	rec.Seq = l.seq + 1
	// One buffer, reused: a record is encoded in place behind its frame.
	buf := appendRecord(append(l.buf[:0], make([]byte, logFrame)...), rec)
	payload := buf[logFrame:]
	binary.LittleEndian.PutUint32(buf[0:4], uint32(len(payload)))
	binary.LittleEndian.PutUint32(buf[4:8], crc32.Checksum(payload, castagnoli))
	// An empty frame follows the record in the same write, and the next
	// record is written over it: the log always ends in one. After a
	// rewind the bytes of the earlier lap lie past the end, and a replay
	// must stop at the end rather than read on into them, where a frame
	// can sit inside a record's text (a path a model made up).
	buf = append(buf, make([]byte, logFrame)...)
	l.buf = keptBuffer(buf)
	n, err := l.f.WriteAt(buf, l.size)
	if err != nil {
		if n > 0 {
			if terr := l.f.Truncate(l.size); terr != nil {
				l.broken = fmt.Errorf("step log %s: a write failed (%v) and its part could not be removed: %w", l.name, err, terr)
			}
		}
		return err
	}
	l.size += int64(n - logFrame)
	l.seq = rec.Seq
	return nil
}

// keptBuffer is buf to keep for the next record: not one that a rare
// large record grew, which would stay allocated for the process's life.
func keptBuffer(buf []byte) []byte {
	if cap(buf) > 1<<20 {
		return nil
	}
	return buf
}

// rewind starts the log over once it is larger than limit and everything
// in it is applied; sequence numbers go on from where they were.
func (l *stepLog) rewind(applied uint64, limit int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.size > limit && l.seq == applied && l.broken == nil {
		l.size = 0
	}
}

// larger reports whether the log is larger than limit.
func (l *stepLog) larger(limit int64) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.size > limit
}

func (l *stepLog) close() error { return l.f.Close() }

// readLog returns the whole records of the log file at path, in order. A
// record cut short or damaged ends the log: it is the tail of a write the
// crash interrupted. So does an empty one (no record is) and one whose
// number does not follow the last: a record of an earlier lap.
func readLog(path string) ([]logRecord, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	left := fi.Size()
	r := bufio.NewReader(f)
	var out []logRecord
	var head [logFrame]byte
	for {
		if _, err := io.ReadFull(r, head[:]); err != nil {
			return out, nil
		}
		left -= logFrame
		n := binary.LittleEndian.Uint32(head[0:4])
		if n == 0 || int64(n) > left {
			return out, nil // cut short, or a length no record has
		}
		left -= int64(n)
		payload := make([]byte, n)
		if _, err := io.ReadFull(r, payload); err != nil {
			return out, nil
		}
		if crc32.Checksum(payload, castagnoli) != binary.LittleEndian.Uint32(head[4:8]) {
			return out, nil
		}
		rec, err := decodeRecord(payload)
		if err != nil {
			return out, fmt.Errorf("step log %s: record %d: %w", path, len(out)+1, err)
		}
		if len(out) > 0 && rec.Seq != out[len(out)-1].Seq+1 {
			return out, nil
		}
		out = append(out, rec)
	}
}
