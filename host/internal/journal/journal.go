// Package journal is toolhost's durable record of tool batches in one
// SQLite database: what was asked (batches and calls, arguments already
// redacted by the caller), what ran (call starts, the process groups they
// spawned), what came of it (results), what it changed (pre-images of
// files, for undo) and what each conversation has read (the stale-file
// cache). It lets toolhost recover from a crash without ever re-running a
// call (SRD 3.8.1, 3.8.4, 3.8.5, NFR-REL-01/04).
//
// The journal records; it never executes, retries or restores anything,
// and it knows no engine and no transport: the engine reaches it through
// an interface of its own. It never deletes or rewrites a database file it
// cannot read: it says which file and how to move it aside.
package journal

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"time"

	_ "modernc.org/sqlite" // the database/sql driver "sqlite", pure Go
)

// Memory is the path of a journal that lives in memory only, for tests.
const Memory = ":memory:"

// Defaults for the zero Options.
const (
	DefaultMaxPreimageBytes = 8 << 20
	DefaultRetention        = 30 * 24 * time.Hour
	DefaultMaxResultBytes   = 256 << 10
	DefaultBusyTimeout      = 5 * time.Second
)

// Options configure a Journal. The zero value uses the defaults above.
type Options struct {
	// MaxPreimageBytes caps the previous content kept for one file
	// change; a larger change is journaled as not undoable.
	MaxPreimageBytes int64
	// Retention is how long finished batches, their pre-images and read
	// records are kept before Prune removes them.
	Retention time.Duration
	// MaxResultBytes caps the result content kept per call; the rest is
	// cut and the result marked truncated.
	MaxResultBytes int
	// BusyTimeout is how long a write waits for another process holding
	// the database's write lock before it fails.
	BusyTimeout time.Duration
	// Check runs SQLite's quick integrity check when the journal opens.
	// It reads every page, so its cost grows with the journal: commands
	// that open the journal on every run leave it to `toolhost journal
	// check`, and damage met later is reported as a *CorruptError by the
	// operation that meets it.
	Check bool
}

func (o Options) withDefaults() Options {
	if o.MaxPreimageBytes <= 0 {
		o.MaxPreimageBytes = DefaultMaxPreimageBytes
	}
	if o.Retention <= 0 {
		o.Retention = DefaultRetention
	}
	if o.MaxResultBytes <= 0 {
		o.MaxResultBytes = DefaultMaxResultBytes
	}
	if o.BusyTimeout <= 0 {
		o.BusyTimeout = DefaultBusyTimeout
	}
	return o
}

// Journal is an open journal database. It is safe for concurrent use, and
// several processes may open the same file.
type Journal struct {
	db   database
	path string
	opts Options

	// owner identifies this process in the batches it begins, so that
	// recovery in another process leaves a live process's batches alone.
	ownerPID   int
	ownerStart uint64

	stmts statements
	ckpt  *checkpointer // nil in memory
	app   *applier      // nil in memory
}

// statements are the hot writes, prepared once on the one connection.
type statements struct {
	insertBatch, insertCall, insertResult, startCall, finishCall, endBatch, logApplied, putRead *sql.Stmt
}

func (s *statements) all() []**sql.Stmt {
	return []**sql.Stmt{&s.insertBatch, &s.insertCall, &s.insertResult, &s.startCall, &s.finishCall, &s.endBatch, &s.logApplied, &s.putRead}
}

// Open opens (creating if needed) the journal at path, or an in-memory
// journal for Memory, and brings its schema up to date. A file that is
// not a journal gives a *CorruptError, one written by a newer toolhost a
// *VersionError; neither file is changed.
func Open(ctx context.Context, path string, opts Options) (*Journal, error) {
	opts = opts.withDefaults()
	dsn, err := dataSource(path, opts)
	if err != nil {
		return nil, err
	}
	if path != Memory {
		if err := sniff(path); err != nil {
			return nil, err
		}
	}
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("journal %s: %w", path, err)
	}
	// One connection: SQLite lets one writer in at a time anyway, the
	// engine writes in call order, and a single connection means this
	// process never contends with itself for the write lock (other
	// processes wait for it through the busy timeout), keeps the hot
	// statements prepared, and keeps a :memory: database alive.
	db.SetMaxOpenConns(1)
	db.SetConnMaxLifetime(0)
	db.SetConnMaxIdleTime(0)
	j := &Journal{path: path, opts: opts, ownerPID: os.Getpid()}
	j.db = database{DB: db, app: &j.app}
	j.ownerStart, _ = ProcessStartTime(j.ownerPID) // 0 where unknown: recovery then trusts the pid alone
	if err := j.init(ctx); err != nil {
		db.Close()
		return nil, err
	}
	if path != Memory {
		if j.ckpt, err = startCheckpointer(dsn); err != nil {
			j.Close()
			return nil, fmt.Errorf("journal %s: %w", path, err)
		}
		// What a dead process logged and did not apply is part of the
		// journal before anyone reads it.
		if err := j.replayLogs(ctx, System{}.withDefaults()); err != nil {
			j.Close()
			return nil, err
		}
		if j.app, err = startApplier(j); err != nil {
			j.Close()
			return nil, j.fail("create step log", err)
		}
	}
	return j, nil
}

func (j *Journal) init(ctx context.Context) error {
	if err := j.db.PingContext(ctx); err != nil {
		return j.fail("open", err)
	}
	if j.path != Memory && j.opts.Check {
		if err := j.Check(ctx); err != nil {
			return err
		}
	}
	if err := j.migrate(ctx); err != nil {
		return err
	}
	queries := []string{sqlInsertBatch, sqlInsertCall, sqlInsertResult, sqlStartCall, sqlFinishCall, sqlEndBatch, sqlLogApplied, sqlPutRead}
	for i, st := range j.stmts.all() {
		var err error
		if *st, err = j.db.PrepareContext(ctx, queries[i]); err != nil {
			return j.fail("prepare", err)
		}
	}
	return nil
}

// dataSource builds the driver's DSN: WAL so readers never block the
// writer, synchronous=NORMAL (a power loss may lose the last commits, never
// corrupt the file; see docs/RATIONALE.md), foreign keys on, a busy
// timeout so processes sharing the file wait for each other, and
// immediate transactions so a write transaction takes the write lock when
// it begins and waits for it there, instead of failing when it upgrades.
func dataSource(path string, opts Options) (string, error) {
	q := url.Values{}
	q.Set("_busy_timeout", fmt.Sprint(opts.BusyTimeout.Milliseconds()))
	q.Set("_foreign_keys", "1")
	q.Set("_txlock", "immediate")
	if path == Memory {
		return "file::memory:?" + q.Encode(), nil
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", fmt.Errorf("journal path %q: %w", path, err)
	}
	q.Set("_journal_mode", "WAL")
	q.Set("_synchronous", "NORMAL")
	// Pages of 16 KiB for a journal made now (an existing file keeps its
	// own): a result of a few KiB shares a page with others, and every
	// page costs the write-ahead log and the checkpoint two system calls
	// each, which on a 2-core machine cost more than the bytes.
	q.Add("_pragma", fmt.Sprintf("page_size(%d)", pageSize))
	q.Add("_pragma", fmt.Sprintf("wal_autocheckpoint(%d)", walAutocheckpoint)) // see checkpointer
	q.Add("_pragma", fmt.Sprintf("journal_size_limit(%d)", walSizeLimit))
	// A file: URI with the path escaped, so that no character of the
	// path ('?', '#', '%') is taken for a parameter.
	u := url.URL{Scheme: "file", Path: abs, RawQuery: q.Encode()}
	return "file:" + u.EscapedPath() + "?" + u.RawQuery, nil
}

// Path returns the journal's file, or Memory.
func (j *Journal) Path() string { return j.path }

// Close closes the database. A clean close checkpoints the write-ahead log
// into the file.
func (j *Journal) Close() error {
	var aerr error
	if j.app != nil {
		aerr = j.app.close()
		j.app = nil
	}
	j.ckpt.close()
	for _, s := range j.stmts.all() {
		if *s != nil {
			(*s).Close()
		}
	}
	if err := errors.Join(aerr, j.db.Close()); err != nil {
		return fmt.Errorf("journal %s: close: %w", j.path, err)
	}
	return nil
}

// tx runs fn in one immediate transaction and commits it.
func (j *Journal) tx(ctx context.Context, op string, fn func(*sql.Tx) error) error {
	tx, err := j.db.BeginTx(ctx, nil)
	if err != nil {
		return j.fail(op, err)
	}
	if err := fn(tx); err != nil {
		tx.Rollback()
		var uerr *userError
		if errors.As(err, &uerr) {
			return err
		}
		return j.fail(op, err)
	}
	if err := tx.Commit(); err != nil {
		return j.fail(op, err)
	}
	j.ckpt.committed(1)
	return nil
}

// nanos and fromNanos store times as UTC Unix nanoseconds: exact, sortable
// and independent of the driver's time handling.
func nanos(t time.Time) int64 { return t.UnixNano() }

func fromNanos(n sql.NullInt64) time.Time {
	if !n.Valid {
		return time.Time{}
	}
	return time.Unix(0, n.Int64).UTC()
}

func now() time.Time { return time.Now().UTC() }
