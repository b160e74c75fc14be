package journal

import (
	"context"
	"database/sql"
	"fmt"
)

// migrations are the schema's versions in order: migrations[i] takes the
// database from version i to i+1 (PRAGMA user_version). A released step is
// never edited; a change is a new step at the end.
var migrations = []string{
	// 1: batches and calls, with starts, processes and results; pre-images;
	// read records. The hot path (a batch, then one small update per call
	// and one appended result) touches as few b-trees as the queries
	// allow: batches are listed by scanning (retention bounds them), and
	// only open batches are indexed by state, for recovery. Result content
	// is appended to results once per call and never updated, so the
	// calls row stays small and is updated in place, and a large result
	// costs an append rather than a rebalanced calls page; calls.result
	// has no foreign key so that Prune can drop results first.
	`
CREATE TABLE batches (
	n            INTEGER PRIMARY KEY,
	id           TEXT NOT NULL UNIQUE,
	conversation TEXT NOT NULL,
	turn         TEXT NOT NULL DEFAULT '',
	created_at   INTEGER NOT NULL,
	state        TEXT NOT NULL CHECK (state IN ('open', 'done', 'interrupted', 'resumed', 'discarded')),
	updated_at   INTEGER NOT NULL,
	owner_pid    INTEGER NOT NULL,
	owner_start  INTEGER NOT NULL
) STRICT;
CREATE INDEX open_batches ON batches (state) WHERE state = 'open';

CREATE TABLE calls (
	batch_id          TEXT NOT NULL REFERENCES batches (id) ON DELETE CASCADE,
	seq               INTEGER NOT NULL,
	id                TEXT NOT NULL,
	tool              TEXT NOT NULL,
	arguments         TEXT NOT NULL,
	disposition       TEXT NOT NULL,
	decision          TEXT NOT NULL DEFAULT '' CHECK (decision IN ('', 'approved', 'denied')),
	decided_by        TEXT NOT NULL DEFAULT '',
	started_at        INTEGER,
	finished_at       INTEGER,
	ok                INTEGER,
	result            INTEGER,
	content_truncated INTEGER NOT NULL DEFAULT 0,
	error_kind        TEXT,
	error_message     TEXT,
	UNIQUE (batch_id, id)
) STRICT;
CREATE INDEX calls_by_id ON calls (id);

CREATE TABLE results (
	n       INTEGER PRIMARY KEY,
	content TEXT NOT NULL
) STRICT;

CREATE TABLE processes (
	batch_id   TEXT NOT NULL,
	call_id    TEXT NOT NULL,
	pgid       INTEGER NOT NULL,
	start_time INTEGER NOT NULL,
	started_at INTEGER NOT NULL,
	FOREIGN KEY (batch_id) REFERENCES batches (id) ON DELETE CASCADE
) STRICT;
CREATE INDEX processes_by_call ON processes (batch_id, call_id);

CREATE TABLE blobs (
	sha256 TEXT PRIMARY KEY,
	data   BLOB NOT NULL
) STRICT;

CREATE TABLE preimages (
	batch_id      TEXT NOT NULL,
	call_id       TEXT NOT NULL,
	path          TEXT NOT NULL,
	seq           INTEGER NOT NULL,
	recorded_at   INTEGER NOT NULL,
	existed       INTEGER NOT NULL,
	mode          INTEGER NOT NULL,
	size          INTEGER NOT NULL,
	sha256        TEXT NOT NULL,
	blob          TEXT REFERENCES blobs (sha256),
	undoable      INTEGER NOT NULL,
	reason        TEXT NOT NULL DEFAULT '',
	after_exists  INTEGER,
	after_mode    INTEGER,
	after_size    INTEGER,
	after_sha256  TEXT,
	PRIMARY KEY (batch_id, call_id, path),
	FOREIGN KEY (batch_id) REFERENCES batches (id) ON DELETE CASCADE
) STRICT;
CREATE INDEX preimages_by_blob ON preimages (blob);

CREATE TABLE reads (
	conversation TEXT NOT NULL,
	path         TEXT NOT NULL,
	sha256       TEXT NOT NULL,
	read_at      INTEGER NOT NULL,
	PRIMARY KEY (conversation, path)
) STRICT;
CREATE INDEX reads_by_time ON reads (read_at);

CREATE TABLE logs (
	name    TEXT PRIMARY KEY,
	applied INTEGER NOT NULL
) STRICT;
`,
	// 2: the first path a call names, resolved as the sandbox resolved it,
	// so that the history can say what a call was about without knowing
	// the tool's path arguments. Calls recorded before it keep '' and are
	// described by the first file they changed or their "path" argument.
	// A call's journal id (BATCH.N) is derived from its batch and place,
	// so it needs no column and every call already recorded has one.
	`ALTER TABLE calls ADD COLUMN path TEXT NOT NULL DEFAULT '';`,
	// 3: what kind of entry a pre-image and a post-image are: a file, a
	// directory (a removal or a move takes a tree, and undo recreates its
	// directories with their modes, empty ones included) or a symbolic
	// link (its content is its target). Rows recorded before are files.
	// A toolhost that knows only version 2 refuses this journal rather
	// than restoring a directory or a link as a file.
	`ALTER TABLE preimages ADD COLUMN kind TEXT NOT NULL DEFAULT 'file' CHECK (kind IN ('file', 'dir', 'symlink'));
ALTER TABLE preimages ADD COLUMN after_kind TEXT CHECK (after_kind IN ('file', 'dir', 'symlink'));`,
}

// SchemaVersion is the schema version this toolhost writes.
var SchemaVersion = len(migrations)

// migrate applies the missing steps, each in its own transaction that
// reads the version again first: another process may be migrating the
// same file at the same moment, and the immediate transaction makes the
// second one wait and then find nothing to do.
func (j *Journal) migrate(ctx context.Context) error {
	have, err := j.version(ctx, j.db)
	if err != nil {
		return j.fail("read schema version", err)
	}
	if have > len(migrations) {
		return &VersionError{Path: j.path, Have: have, Want: len(migrations)}
	}
	for have < len(migrations) {
		err := j.tx(ctx, "migrate", func(tx *sql.Tx) error {
			v, err := j.version(ctx, tx)
			if err != nil {
				return err
			}
			if v != have {
				have = v
				return nil
			}
			if _, err := tx.ExecContext(ctx, migrations[v]); err != nil {
				return fmt.Errorf("schema version %d: %w", v+1, err)
			}
			// PRAGMA takes no parameters; v+1 is an integer of ours.
			if _, err := tx.ExecContext(ctx, fmt.Sprintf("PRAGMA user_version = %d", v+1)); err != nil {
				return err
			}
			have = v + 1
			return nil
		})
		if err != nil {
			return err
		}
		if have > len(migrations) {
			return &VersionError{Path: j.path, Have: have, Want: len(migrations)}
		}
	}
	return nil
}

type querier interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

func (j *Journal) version(ctx context.Context, q querier) (int, error) {
	var v int
	if err := q.QueryRowContext(ctx, "PRAGMA user_version").Scan(&v); err != nil {
		return 0, err
	}
	return v, nil
}
