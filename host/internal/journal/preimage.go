package journal

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"time"
)

// Image is a file's state at one moment: whether it existed, and if so
// its mode, size and content digest. Mode's type bits say a directory
// (fs.ModeDir) or a symbolic link (fs.ModeSymlink, whose content is its
// target); none, a regular file.
type Image struct {
	Exists bool
	Mode   fs.FileMode
	Size   int64
	SHA256 string // hex
}

// entryKind is how the preimages table names the kind of entry mode
// says (schema version 3).
func entryKind(mode fs.FileMode) string {
	switch {
	case mode&fs.ModeDir != 0:
		return "dir"
	case mode&fs.ModeSymlink != 0:
		return "symlink"
	}
	return "file"
}

// kindMode is the type bits of an entry kind of the preimages table.
func kindMode(kind string) fs.FileMode {
	switch kind {
	case "dir":
		return fs.ModeDir
	case "symlink":
		return fs.ModeSymlink
	}
	return 0
}

// entryMode is the part of a mode the journal keeps: the permission bits
// and whether it is a directory or a link.
func entryMode(mode fs.FileMode) fs.FileMode {
	return mode & (fs.ModePerm | fs.ModeDir | fs.ModeSymlink)
}

// Preimage is what a file held before a call changed it.
type Preimage struct {
	BatchID string
	CallID  string
	Path    string // canonical absolute path
	Exists  bool
	Mode    fs.FileMode
	Content []byte // ignored when !Exists
}

// Change is one file a call changed, for history and undo.
type Change struct {
	Path   string
	Before Image
	// After is what the call left, nil when it was not recorded (the
	// call ended, or toolhost stopped, before the write completed).
	After *Image
	// Undoable reports that the previous content is kept; Reason says
	// why not otherwise.
	Undoable bool
	Reason   string
}

// RecordPreimage keeps a file's previous content before a call changes
// it: content-addressed, so the same content is stored once. A call that
// changes the same path twice keeps the first pre-image, the state before
// the call. Content larger than Options.MaxPreimageBytes is not kept and
// the change is journaled as not undoable; undoable says which.
func (j *Journal) RecordPreimage(ctx context.Context, p Preimage) (undoable bool, err error) {
	img := Image{Exists: p.Exists}
	var blob sql.NullString
	undoable, reason := true, ""
	if p.Exists {
		sum := sha256.Sum256(p.Content)
		img.Mode, img.Size, img.SHA256 = entryMode(p.Mode), int64(len(p.Content)), hex.EncodeToString(sum[:])
		if img.Size > j.opts.MaxPreimageBytes {
			undoable = false
			reason = fmt.Sprintf("the previous content of %s is %d bytes, more than journal max_preimage_bytes (%d), so it was not kept",
				p.Path, img.Size, j.opts.MaxPreimageBytes)
		} else {
			blob = sql.NullString{String: img.SHA256, Valid: true}
		}
	}
	err = j.tx(ctx, "record previous content of "+p.Path, func(tx *sql.Tx) error {
		// A call that changes a path again keeps its first pre-image.
		err := tx.QueryRowContext(ctx, `SELECT undoable FROM preimages WHERE batch_id = ? AND call_id = ? AND path = ?`,
			p.BatchID, p.CallID, p.Path).Scan(&undoable)
		if err == nil || !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		if err := callExists(ctx, tx, p.BatchID, p.CallID); err != nil {
			return fmt.Errorf("%w to record the previous content of %s for", err, p.Path)
		}
		if blob.Valid {
			if _, err := tx.ExecContext(ctx, `INSERT OR IGNORE INTO blobs (sha256, data) VALUES (?, ?)`, img.SHA256, p.Content); err != nil {
				return err
			}
		}
		_, err = tx.ExecContext(ctx, `INSERT INTO preimages
			(batch_id, call_id, path, seq, recorded_at, existed, mode, kind, size, sha256, blob, undoable, reason)
			VALUES (?, ?, ?, (SELECT count(*) FROM preimages WHERE batch_id = ? AND call_id = ?), ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			p.BatchID, p.CallID, p.Path, p.BatchID, p.CallID, nanos(now()), img.Exists, int64(img.Mode.Perm()), entryKind(img.Mode), img.Size, img.SHA256, blob, undoable, reason)
		return err
	})
	return undoable, err
}

// RecordPostimage records what a call left at path after it changed it,
// so that undo can tell whether the file changed again since.
func (j *Journal) RecordPostimage(ctx context.Context, batchID, callID, path string, after Image) error {
	res, err := j.db.ExecContext(ctx, `UPDATE preimages SET after_exists = ?, after_mode = ?, after_kind = ?, after_size = ?, after_sha256 = ?
		WHERE batch_id = ? AND call_id = ? AND path = ?`,
		after.Exists, int64(after.Mode.Perm()), entryKind(after.Mode), after.Size, after.SHA256, batchID, callID, path)
	if err != nil {
		return j.fail("record new content of "+path, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return notFoundf("journal: call %s of batch %s has no previous content of %s recorded; record it before the change", callID, batchID, path)
	}
	return nil
}

// Changes returns the files a call changed, or every call of the batch
// when callID is empty, in the order they were first changed.
func (j *Journal) Changes(ctx context.Context, batchID, callID string) ([]Change, error) {
	ccs, err := j.changes(ctx, batchID, callID)
	out := make([]Change, len(ccs))
	for i, cc := range ccs {
		out[i] = cc.Change
	}
	return out, err
}

// changes lists the changes of a batch, or of one of its calls, with the
// call that made each, in call order, then first change within the call.
func (j *Journal) changes(ctx context.Context, batchID, callID string) ([]CallChange, error) {
	q := `SELECT p.call_id, p.path, p.existed, p.mode, p.kind, p.size, p.sha256, p.undoable, p.reason,
		p.after_exists, p.after_mode, p.after_kind, p.after_size, p.after_sha256
		FROM preimages p JOIN calls c ON c.batch_id = p.batch_id AND c.id = p.call_id
		WHERE p.batch_id = ?`
	args := []any{batchID}
	if callID != "" {
		q += ` AND p.call_id = ?`
		args = append(args, callID)
	}
	q += ` ORDER BY c.seq, p.seq`
	var out []CallChange
	err := j.rows(ctx, "list changes of batch "+batchID, q, args, func(rs *sql.Rows) error {
		var c CallChange
		var mode int64
		var kind string
		var aExists sql.NullBool
		var aMode, aSize sql.NullInt64
		var aKind, aSum sql.NullString
		if err := rs.Scan(&c.CallID, &c.Path, &c.Before.Exists, &mode, &kind, &c.Before.Size, &c.Before.SHA256, &c.Undoable, &c.Reason,
			&aExists, &aMode, &aKind, &aSize, &aSum); err != nil {
			return err
		}
		c.Before.Mode = fs.FileMode(mode).Perm() | kindMode(kind)
		if aExists.Valid {
			c.After = &Image{Exists: aExists.Bool, Mode: fs.FileMode(aMode.Int64).Perm() | kindMode(aKind.String), Size: aSize.Int64, SHA256: aSum.String}
		}
		out = append(out, c)
		return nil
	})
	return out, err
}

// PreimageContent returns the previous content of path as a call's
// pre-image kept it, for undo.
func (j *Journal) PreimageContent(ctx context.Context, batchID, callID, path string) ([]byte, error) {
	var data []byte
	var existed, undoable bool
	var reason string
	err := j.db.QueryRowContext(ctx, `SELECT p.existed, p.undoable, p.reason, b.data FROM preimages p LEFT JOIN blobs b ON b.sha256 = p.blob
		WHERE p.batch_id = ? AND p.call_id = ? AND p.path = ?`, batchID, callID, path).Scan(&existed, &undoable, &reason, &data)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return nil, notFoundf("journal: call %s of batch %s did not change %s", callID, batchID, path)
	case err != nil:
		return nil, j.fail("read previous content of "+path, err)
	case !undoable:
		return nil, userErrorf("journal: the change of %s by call %s cannot be undone: %s", path, callID, reason)
	case !existed:
		return nil, nil
	}
	if data == nil {
		data = []byte{}
	}
	return data, nil
}

// PruneStats is what Prune removed.
type PruneStats struct {
	Batches int64
	Blobs   int64
	Reads   int64
}

// Prune removes what is older than Options.Retention at now: batches that
// are done, resumed or discarded, with their calls, processes and
// pre-images; read records; then the content no pre-image refers to.
// Open and interrupted batches are kept whatever their age: they are
// running or wait for the user's choice.
func (j *Journal) Prune(ctx context.Context, at time.Time) (PruneStats, error) {
	cut := nanos(at.Add(-j.opts.Retention))
	var st PruneStats
	err := j.tx(ctx, "prune", func(tx *sql.Tx) error {
		const old = `SELECT id FROM batches WHERE created_at < ? AND state IN ('done', 'resumed', 'discarded')`
		if _, err := tx.ExecContext(ctx, `DELETE FROM results WHERE n IN (SELECT result FROM calls WHERE batch_id IN (`+old+`))`, cut); err != nil {
			return err
		}
		var err error
		if st.Batches, err = affected(tx.ExecContext(ctx, `DELETE FROM batches WHERE id IN (`+old+`)`, cut)); err != nil {
			return err
		}
		if st.Reads, err = affected(tx.ExecContext(ctx, `DELETE FROM reads WHERE read_at < ?`, cut)); err != nil {
			return err
		}
		st.Blobs, err = affected(tx.ExecContext(ctx,
			`DELETE FROM blobs WHERE NOT EXISTS (SELECT 1 FROM preimages p WHERE p.blob = blobs.sha256)`))
		return err
	})
	return st, err
}

func affected(res sql.Result, err error) (int64, error) {
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}
