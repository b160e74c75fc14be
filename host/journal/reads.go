package journal

import (
	"context"
	"database/sql"
	"errors"
	"time"
)

// Read is a conversation's record that it read a file and what it held
// (the stale-file cache, SRD FR-TOOL-PATCH-02c).
type Read struct {
	Conversation string
	Path         string // canonical absolute path
	SHA256       string // hex
	ReadAt       time.Time
	// Generation is the conversation's generation when this path's
	// digest last changed; it grows whenever the conversation sees any
	// file's content change.
	Generation uint64
	// Origin is who changed the digest then (a batch id), LastBy who
	// recorded the path last.
	Origin string
	LastBy string
}

// PutRead records a read (or a write's new content) of r.Path by
// r.LastBy in one transaction. A new digest advances the conversation's
// generation and makes r.LastBy the origin; reading the same content again
// keeps generation and origin, so another batch re-reading what this one
// wrote does not make this one's next write look stale. It returns the
// record as stored.
func (j *Journal) PutRead(ctx context.Context, r Read) (Read, error) {
	if r.ReadAt.IsZero() {
		r.ReadAt = now()
	}
	err := j.tx(ctx, "record read of "+r.Path, func(tx *sql.Tx) error {
		var oldSum, oldOrigin string
		var oldGen int64
		err := tx.QueryRowContext(ctx, `SELECT sha256, generation, origin FROM reads WHERE conversation = ? AND path = ?`,
			r.Conversation, r.Path).Scan(&oldSum, &oldGen, &oldOrigin)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		if err == nil && oldSum == r.SHA256 {
			r.Generation, r.Origin = uint64(oldGen), oldOrigin
		} else {
			var gen int64
			if err := tx.QueryRowContext(ctx, `INSERT INTO conversations (id, generation) VALUES (?, 2)
				ON CONFLICT (id) DO UPDATE SET generation = generation + 1 RETURNING generation`, r.Conversation).Scan(&gen); err != nil {
				return err
			}
			r.Generation, r.Origin = uint64(gen), r.LastBy
		}
		_, err = tx.ExecContext(ctx, `INSERT INTO reads (conversation, path, sha256, read_at, generation, origin, last_by)
			VALUES (?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT (conversation, path) DO UPDATE SET sha256 = excluded.sha256, read_at = excluded.read_at,
				generation = excluded.generation, origin = excluded.origin, last_by = excluded.last_by`,
			r.Conversation, r.Path, r.SHA256, nanos(r.ReadAt), int64(r.Generation), r.Origin, r.LastBy)
		return err
	})
	return r, err
}

// GetRead returns the last read of path in a conversation.
func (j *Journal) GetRead(ctx context.Context, conversation, path string) (Read, bool, error) {
	r := Read{Conversation: conversation, Path: path}
	var at, gen int64
	err := j.db.QueryRowContext(ctx, `SELECT sha256, read_at, generation, origin, last_by FROM reads WHERE conversation = ? AND path = ?`,
		conversation, path).Scan(&r.SHA256, &at, &gen, &r.Origin, &r.LastBy)
	if errors.Is(err, sql.ErrNoRows) {
		return Read{}, false, nil
	}
	if err != nil {
		return Read{}, false, j.fail("look up read of "+path, err)
	}
	r.ReadAt, r.Generation = time.Unix(0, at).UTC(), uint64(gen)
	return r, true, nil
}

// ListReads returns a conversation's reads, by path.
func (j *Journal) ListReads(ctx context.Context, conversation string) ([]Read, error) {
	var out []Read
	err := j.rows(ctx, "list reads of conversation "+conversation,
		`SELECT path, sha256, read_at, generation, origin, last_by FROM reads WHERE conversation = ? ORDER BY path`,
		[]any{conversation}, func(rs *sql.Rows) error {
			r := Read{Conversation: conversation}
			var at, gen int64
			if err := rs.Scan(&r.Path, &r.SHA256, &at, &gen, &r.Origin, &r.LastBy); err != nil {
				return err
			}
			r.ReadAt, r.Generation = time.Unix(0, at).UTC(), uint64(gen)
			out = append(out, r)
			return nil
		})
	return out, err
}

// Generation returns the conversation's read generation: 1 for a
// conversation with no reads, so 0 never names a moment of a real one.
func (j *Journal) Generation(ctx context.Context, conversation string) (uint64, error) {
	var gen int64
	err := j.db.QueryRowContext(ctx, `SELECT generation FROM conversations WHERE id = ?`, conversation).Scan(&gen)
	if errors.Is(err, sql.ErrNoRows) {
		return 1, nil
	}
	if err != nil {
		return 0, j.fail("read generation of conversation "+conversation, err)
	}
	return uint64(gen), nil
}
