package journal

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// ErrNotFound is wrapped by the errors for a batch or call the journal
// does not hold.
var ErrNotFound = errors.New("not in the journal")

// CorruptError reports a journal file that is not a SQLite database or
// fails its integrity check. The file is left exactly as it was.
type CorruptError struct {
	Path string
	Err  error
}

func (e *CorruptError) Error() string {
	return fmt.Sprintf("journal %s is damaged (%v); toolhost never deletes or repairs it: "+
		"move it aside (mv %[1]s %[1]s.damaged, and its -wal and -shm files if present) and run toolhost again "+
		"to start a new journal, or set [journal] path to another file", e.Path, e.Err)
}

func (e *CorruptError) Unwrap() error { return e.Err }

// VersionError reports a journal whose schema is newer than this toolhost
// knows: it was written by a newer toolhost, and this one would not
// understand what it holds.
type VersionError struct {
	Path       string
	Have, Want int
}

func (e *VersionError) Error() string {
	return fmt.Sprintf("journal %s has schema version %d, and this toolhost knows versions up to %d: "+
		"it was written by a newer toolhost. Use that toolhost, or set [journal] path to another file",
		e.Path, e.Have, e.Want)
}

// userError is an error about the caller's request (a wrong id, a batch
// in the wrong state), which tx passes through unclassified.
type userError struct{ msg string }

func (e *userError) Error() string { return e.msg }

func userErrorf(format string, args ...any) error {
	return &userError{msg: fmt.Sprintf(format, args...)}
}

// notFound is a userError that also matches ErrNotFound.
type notFound struct{ userError }

func (e *notFound) Is(target error) bool { return target == ErrNotFound }

func notFoundf(format string, args ...any) error {
	return &notFound{userError{msg: fmt.Sprintf(format, args...)}}
}

// ErrNotInterrupted is matched by the error of ResolveInterrupted for a
// batch that is not interrupted (still open, done, or already resolved).
var ErrNotInterrupted = errors.New("journal: batch not interrupted")

// notInterrupted is a userError that also matches ErrNotInterrupted.
type notInterrupted struct{ userError }

func (e *notInterrupted) Is(target error) bool { return target == ErrNotInterrupted }

// sqliteHeader begins every SQLite database file.
var sqliteHeader = []byte("SQLite format 3\x00")

// sniff refuses a file that is not a SQLite database before SQLite opens
// it, so that nothing is written to it. A missing or empty file is a new
// journal.
func sniff(path string) error {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("journal %s: cannot read it (%w); toolhost must be able to read and write its journal: "+
			"fix the file's permissions or set [journal] path to another file", path, err)
	}
	defer f.Close()
	head := make([]byte, len(sqliteHeader))
	n, err := io.ReadFull(f, head)
	switch {
	case n == 0 && (err == io.EOF || err == nil):
		return nil
	case err != nil && !errors.Is(err, io.ErrUnexpectedEOF):
		return fmt.Errorf("journal %s: %w", path, err)
	case !bytes.Equal(head[:n], sqliteHeader):
		return &CorruptError{Path: path, Err: errors.New("not a SQLite database")}
	}
	return nil
}

// Check runs SQLite's quick integrity check, which reads every page but
// skips the slower index cross-checks; damage gives a *CorruptError.
func (j *Journal) Check(ctx context.Context) error {
	rows, err := j.db.QueryContext(ctx, "PRAGMA quick_check")
	if err != nil {
		return j.fail("integrity check", err)
	}
	defer rows.Close()
	var problems []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			return j.fail("integrity check", err)
		}
		if s != "ok" && len(problems) < 3 {
			problems = append(problems, s)
		}
	}
	if err := rows.Err(); err != nil {
		return j.fail("integrity check", err)
	}
	if len(problems) > 0 {
		return &CorruptError{Path: j.path, Err: fmt.Errorf("integrity check: %s", strings.Join(problems, "; "))}
	}
	return nil
}

// fail wraps a database error with the journal's file, what was being
// done, and why it failed in words a person can act on.
func (j *Journal) fail(op string, err error) error {
	dir := filepath.Dir(j.path)
	var serr *sqlite.Error
	if !errors.As(err, &serr) {
		// The step log's own writes (wlog.go).
		switch {
		case errors.Is(err, syscall.ENOSPC), errors.Is(err, syscall.EFBIG), errors.Is(err, syscall.EDQUOT):
			return fmt.Errorf("journal %s: %s: the disk refused a write (%w): it may be full or over a size limit; "+
				"nothing was recorded, so nothing was run: free space on the disk holding %s, or set [journal] path elsewhere", j.path, op, err, dir)
		case errors.Is(err, syscall.EROFS), errors.Is(err, fs.ErrPermission):
			return fmt.Errorf("journal %s: %s: cannot write beside it (%w); nothing was recorded, so nothing was run: "+
				"toolhost needs write access to the directory %s: fix the permissions, or set [journal] path to a writable place", j.path, op, err, dir)
		}
		return fmt.Errorf("journal %s: %s: %w", j.path, op, err)
	}
	switch serr.Code() & 0xff { // the primary result code
	case sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB:
		return &CorruptError{Path: j.path, Err: err}
	case sqlite3.SQLITE_FULL:
		return fmt.Errorf("journal %s: %s: the disk is full (%w); nothing was recorded, so nothing was run: "+
			"free space on the disk holding %s, or set [journal] path elsewhere", j.path, op, err, dir)
	case sqlite3.SQLITE_READONLY, sqlite3.SQLITE_CANTOPEN, sqlite3.SQLITE_PERM:
		return fmt.Errorf("journal %s: %s: cannot write it (%w); nothing was recorded, so nothing was run: "+
			"toolhost needs write access to the file and its directory %s (for the -wal and -shm files): "+
			"fix the permissions, or set [journal] path to a writable place", j.path, op, err, dir)
	case sqlite3.SQLITE_IOERR:
		return fmt.Errorf("journal %s: %s: the disk refused a write or read (%w): it may be full, over a size limit "+
			"or failing; nothing was recorded, so nothing was run: check the disk holding %s", j.path, op, err, dir)
	case sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED:
		return fmt.Errorf("journal %s: %s: another process held the journal longer than the busy timeout (%s) (%w): "+
			"try again, or find the process holding it", j.path, op, j.opts.BusyTimeout, err)
	}
	return fmt.Errorf("journal %s: %s: %w", j.path, op, err)
}

// isConstraint reports a violated key or constraint: a caller's mistake,
// such as an id used twice or a call the journal does not hold.
func isConstraint(err error) bool {
	var serr *sqlite.Error
	return errors.As(err, &serr) && serr.Code()&0xff == sqlite3.SQLITE_CONSTRAINT
}
