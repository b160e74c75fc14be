package journal

import (
	"context"
	"database/sql"
	"slices"
	"time"
)

// Read is a conversation's record that it read a file and what it held:
// the stale-file cache (SRD FR-TOOL-PATCH-02c), kept here so that it
// survives the process and is shared by every toolhost process on the
// state directory, out of every tool's reach like the rest of it.
type Read struct {
	Path   string // canonical absolute path
	SHA256 string // hex
	ReadAt time.Time
}

// readsRecord is a conversation's reads as one step log record.
type readsRecord struct {
	Conversation string
	Reads        []Read
}

// SaveReads records a conversation's reads, all or none: on disk one
// record in the step log, durable when it returns, as a step is; in
// memory one transaction. Of two records of one path the newer wins,
// whichever process saves last.
func (j *Journal) SaveReads(ctx context.Context, conversation string, reads []Read) error {
	if len(reads) == 0 {
		return nil
	}
	reads = slices.Clone(reads)
	for i := range reads {
		reads[i].ReadAt = orNow(reads[i].ReadAt)
	}
	if j.app != nil {
		return j.app.commitReads(conversation, reads)
	}
	return j.tx(ctx, "record reads of conversation "+conversation, func(tx *sql.Tx) error {
		return j.applyReads(ctx, tx, conversation, reads)
	})
}

// sqlPutRead records a read, never replacing a later one with an
// earlier.
const sqlPutRead = `INSERT INTO reads (conversation, path, sha256, read_at) VALUES (?, ?, ?, ?)
	ON CONFLICT (conversation, path) DO UPDATE SET sha256 = excluded.sha256, read_at = excluded.read_at
	WHERE excluded.read_at >= reads.read_at`

func (j *Journal) applyReads(ctx context.Context, tx *sql.Tx, conversation string, reads []Read) error {
	// Prepared once with the journal: a read_file records one read, and
	// preparing the statement cost more than running it.
	put := tx.StmtContext(ctx, j.stmts.putRead)
	for _, r := range reads {
		if _, err := put.ExecContext(ctx, conversation, r.Path, r.SHA256, nanos(r.ReadAt)); err != nil {
			return err
		}
	}
	return nil
}

// ListReads returns a conversation's reads, by path.
func (j *Journal) ListReads(ctx context.Context, conversation string) ([]Read, error) {
	var out []Read
	err := j.rows(ctx, "list reads of conversation "+conversation,
		`SELECT path, sha256, read_at FROM reads WHERE conversation = ? ORDER BY path`,
		[]any{conversation}, func(rs *sql.Rows) error {
			var r Read
			var at int64
			if err := rs.Scan(&r.Path, &r.SHA256, &at); err != nil {
				return err
			}
			r.ReadAt = time.Unix(0, at).UTC()
			out = append(out, r)
			return nil
		})
	return out, err
}
