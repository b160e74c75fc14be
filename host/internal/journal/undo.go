package journal

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
)

// FileBefore is a file's state just before a call changes it, as the host
// functions read it: Content holds the whole file only when its length
// is Size. Mode's type bits say a directory or a symbolic link (whose
// Content is its target), as Image's do. A file larger than MaxPreimageBytes is not read whole (the
// reader stops one byte past the cap), so its change is not undoable.
type FileBefore struct {
	Path    string // canonical absolute path
	Exists  bool
	Mode    fs.FileMode
	Size    int64
	Content []byte
}

// FileAfter is what a call left at a path it changed.
type FileAfter struct {
	Path string
	Image
}

// MaxPreimageBytes is the most content one pre-image keeps: a reader
// need not read more than one byte past it.
func (j *Journal) MaxPreimageBytes() int64 { return j.opts.MaxPreimageBytes }

// RecordPreimages records, in one transaction, what files held before a
// call changes them, as RecordPreimage does for one: content-addressed,
// the first pre-image per call and path kept. A file whose content is
// not whole, or larger than MaxPreimageBytes, is journaled as not
// undoable, saying why. It returns, per file, whether its change can be
// undone.
func (j *Journal) RecordPreimages(ctx context.Context, batchID, callID string, files []FileBefore) ([]bool, error) {
	undoable := make([]bool, len(files))
	err := j.tx(ctx, "record previous content for call "+callID, func(tx *sql.Tx) error {
		if err := callExists(ctx, tx, batchID, callID); err != nil {
			return fmt.Errorf("%w to record the previous content of files for", err)
		}
		for i, f := range files {
			ok, err := j.recordBefore(ctx, tx, batchID, callID, f)
			if err != nil {
				return err
			}
			undoable[i] = ok
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return undoable, nil
}

func (j *Journal) recordBefore(ctx context.Context, tx *sql.Tx, batchID, callID string, f FileBefore) (bool, error) {
	var undoable bool
	err := tx.QueryRowContext(ctx, `SELECT undoable FROM preimages WHERE batch_id = ? AND call_id = ? AND path = ?`,
		batchID, callID, f.Path).Scan(&undoable)
	if err == nil || !errors.Is(err, sql.ErrNoRows) {
		return undoable, err // the call's first pre-image of the path stands
	}
	img := Image{Exists: f.Exists}
	var blob sql.NullString
	undoable, reason := true, ""
	if f.Exists {
		img.Mode, img.Size = entryMode(f.Mode), f.Size
		switch whole := int64(len(f.Content)) == f.Size; {
		case !whole || f.Size > j.opts.MaxPreimageBytes:
			undoable = false
			reason = fmt.Sprintf("the previous content of %s is %d bytes, more than journal max_preimage_bytes (%d), so it was not kept",
				f.Path, f.Size, j.opts.MaxPreimageBytes)
		default:
			sum := sha256.Sum256(f.Content)
			img.SHA256 = hex.EncodeToString(sum[:])
			blob = sql.NullString{String: img.SHA256, Valid: true}
			data := f.Content
			if data == nil {
				data = []byte{} // an empty file: NULL would be no content at all
			}
			if _, err := tx.ExecContext(ctx, `INSERT OR IGNORE INTO blobs (sha256, data) VALUES (?, ?)`, img.SHA256, data); err != nil {
				return false, err
			}
		}
	}
	_, err = tx.ExecContext(ctx, `INSERT INTO preimages
		(batch_id, call_id, path, seq, recorded_at, existed, mode, kind, size, sha256, blob, undoable, reason)
		VALUES (?, ?, ?, (SELECT count(*) FROM preimages WHERE batch_id = ? AND call_id = ?), ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		batchID, callID, f.Path, batchID, callID, nanos(now()), img.Exists, int64(img.Mode.Perm()), entryKind(img.Mode), img.Size, img.SHA256, blob, undoable, reason)
	return undoable, err
}

// RecordPostimages records, in one transaction, what a call left at
// paths it changed (each with a pre-image recorded first), so that undo
// can tell whether a file changed again since.
func (j *Journal) RecordPostimages(ctx context.Context, batchID, callID string, files []FileAfter) error {
	return j.tx(ctx, "record new content for call "+callID, func(tx *sql.Tx) error {
		for _, f := range files {
			res, err := tx.ExecContext(ctx, `UPDATE preimages SET after_exists = ?, after_mode = ?, after_kind = ?, after_size = ?, after_sha256 = ?
				WHERE batch_id = ? AND call_id = ? AND path = ?`,
				f.Exists, int64(f.Mode.Perm()), entryKind(f.Mode), f.Size, f.SHA256, batchID, callID, f.Path)
			if err != nil {
				return err
			}
			if n, _ := res.RowsAffected(); n == 0 {
				return notFoundf("journal: call %s of batch %s has no previous content of %s recorded; record it before the change", callID, batchID, f.Path)
			}
		}
		return nil
	})
}

// CallChange is a file one call of a batch changed.
type CallChange struct {
	CallID string
	Change
}

// BatchChanges returns the files every call of a batch changed, each
// with the call that changed it, in the order they were changed (call
// order, then first change within the call): a path changed by several
// calls appears once per call.
func (j *Journal) BatchChanges(ctx context.Context, batchID string) ([]CallChange, error) {
	return j.changes(ctx, batchID, "")
}
