package host

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/toolhost/toolhost/host/internal/ctxio"
	"github.com/toolhost/toolhost/host/internal/engine"
	"github.com/toolhost/toolhost/host/internal/hostfn"
	"github.com/toolhost/toolhost/host/internal/journal"
	"github.com/toolhost/toolhost/host/internal/sandbox"
)

// UndoOptions change what Undo does.
type UndoOptions struct {
	// DryRun checks everything an undo checks and says what it would
	// do, changing nothing and journaling nothing.
	DryRun bool
}

// UndoReport is what an undo did, or would do.
type UndoReport struct {
	Target  string `json:"target"`   // the id asked for
	BatchID string `json:"batch_id"` // the batch undone, or holding the call undone
	// CallJournalID is the journal id of the call undone (BATCH.N),
	// and CallID the id its client gave it; both "" when the whole
	// batch is undone.
	CallJournalID string     `json:"call_journal_id,omitempty"`
	CallID        string     `json:"call_id,omitempty"`
	Files         []UndoFile `json:"files"`
	DryRun        bool       `json:"dry_run,omitempty"`
	// UndoBatchID and UndoCallID are the undo's own record in the
	// journal, its batch's id and its call's journal id (empty for a
	// dry run or when nothing had to change): undoing UndoCallID
	// re-applies what was undone.
	UndoBatchID string `json:"undo_batch_id,omitempty"`
	UndoCallID  string `json:"undo_call_id,omitempty"`
}

// UndoFile is one file an undo restores.
type UndoFile struct {
	Path   string     `json:"path"` // canonical absolute path
	Action UndoAction `json:"action"`
}

// AmbiguousIDError refuses an id that several calls have: a call id
// their clients gave (a model's call_1), which is unique only within its
// batch. Nothing was changed; the caller names one by its journal id.
type AmbiguousIDError struct {
	ID string
	// Candidates are the newest of the calls with the id, newest first;
	// Total counts them all.
	Candidates []IDCandidate
	Total      int
}

// IDCandidate is one call an ambiguous id names.
type IDCandidate struct {
	JournalID string    // the call's id in the journal, which names it alone
	BatchID   string    // its batch
	Tool      string    // its tool
	Path      string    // the first path it names, "" for none
	Time      time.Time // when it started, or its batch was created when it never did
}

func (e *AmbiguousIDError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d calls have the id %q (a client's call id, unique only within its batch); nothing was changed. Give the journal id of the one you mean:", e.Total, e.ID)
	for _, c := range e.Candidates {
		fmt.Fprintf(&b, "\n  %s  %s  %s  %s", c.JournalID, c.Tool, cmp.Or(c.Path, "-"), c.Time.Local().Format(time.RFC3339))
	}
	if more := e.Total - len(e.Candidates); more > 0 {
		fmt.Fprintf(&b, "\n  and %d older (toolhost journal list shows them)", more)
	}
	return b.String()
}

// ambiguous is err as an *AmbiguousIDError when it is the journal's
// *AmbiguousError, else err.
func ambiguous(err error) error {
	var amb *journal.AmbiguousError
	if !errors.As(err, &amb) {
		return err
	}
	out := &AmbiguousIDError{ID: amb.ID, Total: amb.Total}
	for _, c := range amb.Candidates {
		out.Candidates = append(out.Candidates, IDCandidate{JournalID: c.JournalID, BatchID: c.BatchID, Tool: c.Tool, Path: c.Path, Time: c.Time})
	}
	return out
}

// UndoAction is what an undo does to a file.
type UndoAction string

// Undo actions.
const (
	UndoRestore   UndoAction = "restore"   // gets its previous content and mode back
	UndoRemove    UndoAction = "remove"    // did not exist before: removed
	UndoUnchanged UndoAction = "unchanged" // already as it was before
)

// StaleFileError refuses an undo because files changed after the call or
// batch changed them: restoring them would lose those later changes.
// Nothing was changed.
type StaleFileError struct {
	Target string
	Files  []StaleFile
}

// StaleFile is one file that changed since, and how.
type StaleFile struct {
	Path string
	Why  string
}

func (e *StaleFileError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "StaleFile: undo of %s refused: %d file(s) changed after it changed them, and restoring them would lose those changes; nothing was changed:",
		e.Target, len(e.Files))
	for _, f := range e.Files {
		fmt.Fprintf(&b, "\n  %s: %s", f.Path, f.Why)
	}
	b.WriteString("\nUndo the later changes first (toolhost journal list shows them), or put the files back by hand")
	return b.String()
}

// undoTool is the tool name an undo is journaled under.
const undoTool = "undo"

// undoFile is one path an undo plans for.
type undoFile struct {
	path   string
	first  journal.CallChange // earliest change: what to restore
	last   journal.CallChange // latest change
	after  *journal.Image     // what the call or batch left, nil when never recorded
	p      sandbox.Path
	action UndoAction
	now    current
	before []byte // content to restore
}

// current is what a file holds now.
type current struct {
	journal.Image
	content []byte // up to one byte past the journal's cap
}

// Undo restores every file that call or batch id changed to what it held
// before (for a batch, before its first change of each), all or nothing
// in one sandbox transaction, as fs_commit changes files. id is a batch
// id, a call's journal id (BATCH.N), or the id a call's client gave it
// when only one call has that id: one several calls have is refused
// with an *AmbiguousIDError listing them.
//
// It refuses, changing nothing: with a *StaleFileError when any file
// changed after the call or batch changed it; when a change was too large
// to keep ([journal] max_preimage_bytes); when a path is now outside the
// sandbox's roots, denied or protected. The undo is journaled as a batch
// of its own (tool "undo", arguments {"target": id}) with its pre-images,
// so that undoing it re-applies what it undid.
func (h *Host) Undo(ctx context.Context, id string, opts UndoOptions) (*UndoReport, error) {
	if h.journal == nil {
		return nil, errors.New("toolhost keeps no journal here (no state directory and no [journal] path), so it has no record of any change to undo")
	}
	rep := &UndoReport{Target: id, DryRun: opts.DryRun}
	changes, conv, err := h.undoTarget(ctx, rep)
	if err != nil {
		return nil, err
	}
	files, err := h.undoPlan(ctx, rep, changes)
	if err != nil {
		return nil, err
	}
	abs := make([]string, len(files))
	for i, f := range files {
		abs[i] = f.path
	}
	unlock, err := h.sb.Lock(ctx, abs...)
	if err != nil {
		return nil, fmt.Errorf("undo of %s: %w", id, err)
	}
	defer unlock()
	if err := h.undoCheck(ctx, rep, files); err != nil {
		return nil, err
	}
	change := false
	for _, f := range files {
		rep.Files = append(rep.Files, UndoFile{Path: f.path, Action: f.action})
		change = change || f.action != UndoUnchanged
	}
	if opts.DryRun || !change {
		return rep, nil
	}
	return rep, h.undoApply(ctx, rep, conv, files)
}

// undoTarget finds what id names and the changes to undo.
func (h *Host) undoTarget(ctx context.Context, rep *UndoReport) ([]journal.CallChange, string, error) {
	id := rep.Target
	t, err := h.journal.Find(ctx, id)
	switch {
	case errors.Is(err, journal.ErrNotFound):
		return nil, "", fmt.Errorf("undo: the journal %s holds no batch and no call with the id %q; toolhost journal list shows the batches with their ids, toolhost journal show BATCH their calls' journal ids", h.journal.Path(), id)
	case err != nil:
		return nil, "", ambiguous(err)
	}
	rep.BatchID, rep.CallID = t.BatchID, t.CallID
	if t.CallID != "" {
		rep.CallJournalID = t.JournalID
	}
	b, err := h.journal.Batch(ctx, rep.BatchID)
	if err != nil {
		return nil, "", err
	}
	var changes []journal.CallChange
	if rep.CallID == "" {
		changes, err = h.journal.BatchChanges(ctx, rep.BatchID)
	} else {
		var cs []journal.Change
		cs, err = h.journal.Changes(ctx, rep.BatchID, rep.CallID)
		for _, c := range cs {
			changes = append(changes, journal.CallChange{CallID: rep.CallID, Change: c})
		}
	}
	if err != nil {
		return nil, "", err
	}
	if len(changes) == 0 {
		return nil, "", fmt.Errorf("undo: %s changed no file through toolhost, so there is nothing to undo", rep.what())
	}
	return changes, b.Conversation, nil
}

// what names the call or batch undone, for messages.
func (r *UndoReport) what() string {
	switch {
	case r.CallJournalID == "":
		return "batch " + r.BatchID
	case r.CallID == r.CallJournalID:
		return "call " + r.CallJournalID
	}
	return fmt.Sprintf("call %s (%s)", r.CallJournalID, r.CallID)
}

// undoPlan groups the changes by path, in the order the paths were first
// changed, and checks that each can be restored: its previous content was
// kept, and the path is still one the sandbox lets a tool write.
func (h *Host) undoPlan(ctx context.Context, rep *UndoReport, changes []journal.CallChange) ([]*undoFile, error) {
	var files []*undoFile
	index := map[string]*undoFile{}
	for _, c := range changes {
		f := index[c.Path]
		if f == nil {
			f = &undoFile{path: c.Path, first: c}
			index[c.Path] = f
			files = append(files, f)
		}
		f.last = c
		if c.After != nil {
			f.after = c.After
		}
	}
	var problems []string
	for _, f := range files {
		if !f.first.Undoable {
			problems = append(problems, fmt.Sprintf("%s cannot be restored: %s. Only a previous content of at most [journal] max_preimage_bytes (now %d bytes) is kept; raise it so that later changes of such files can be undone",
				f.path, f.first.Reason, h.journal.MaxPreimageBytes()))
			continue
		}
		p, err := h.undoPath(f.path, f.entry())
		if err != nil {
			problems = append(problems, err.Error())
			continue
		}
		f.p = p
		if f.first.Before.Exists {
			if f.before, err = h.journal.PreimageContent(ctx, rep.BatchID, f.first.CallID, f.path); err != nil {
				return nil, err
			}
		}
	}
	if len(problems) > 0 {
		return nil, fmt.Errorf("undo of %s refused; nothing was changed:\n  %s", rep.what(), strings.Join(problems, "\n  "))
	}
	return files, nil
}

// entry reports whether f is, or was, a symbolic link: its path then
// names the link itself, never what it leads to.
func (f *undoFile) entry() bool {
	return f.first.Before.Mode&fs.ModeSymlink != 0 || (f.after != nil && f.after.Mode&fs.ModeSymlink != 0)
}

// undoPath resolves a journaled path as a tool's write would be (as a
// removal's when entry: a final link is the link itself), and refuses
// what a tool could not write now.
func (h *Host) undoPath(path string, entry bool) (sandbox.Path, error) {
	outside := fmt.Errorf("%s is outside the allowed roots now (%s); run the undo with a root that contains it (--root, or tools.sandbox.allowed_roots)",
		path, strings.Join(h.sb.Roots(), ", "))
	// A path in the working directory is resolved as a tool gives it,
	// relative, so that a configuration refusing absolute paths
	// (tools.sandbox.allow_absolute) still lets undo name it.
	name := path
	roots := h.sb.Roots()
	if rel, err := filepath.Rel(roots[0], path); err == nil && filepath.IsLocal(rel) {
		name = rel
	} else if !slices.ContainsFunc(roots, func(r string) bool { return within(path, r) }) {
		return sandbox.Path{}, outside
	}
	resolve := h.sb.Resolve
	if entry {
		resolve = func(name string) (sandbox.Path, error) { return hostfn.ResolveEntry(h.sb, name) }
	}
	p, err := resolve(name)
	if err != nil {
		var de *sandbox.DenialError
		if errors.As(err, &de) && de.Reason == sandbox.PathOutsideSandbox {
			return p, outside
		}
		return p, fmt.Errorf("%s cannot be written now: %w", path, err)
	}
	if p.Abs != path {
		return p, fmt.Errorf("%s now leads to %s through a symbolic link, so restoring it would write another file; remove the link, or put the file back by hand", path, p.Abs)
	}
	if err := h.sb.CheckWrite(p); err != nil {
		return p, fmt.Errorf("%s cannot be written now: %w", path, err)
	}
	return p, nil
}

// within reports whether path is dir or below it.
func within(path, dir string) bool {
	rel, err := filepath.Rel(dir, path)
	return err == nil && (rel == "." || filepath.IsLocal(rel))
}

// undoCheck reads every file as it is now, holding their locks, refuses
// with a StaleFileError if any differs from what the call or batch left,
// and decides what to do with each.
func (h *Host) undoCheck(ctx context.Context, rep *UndoReport, files []*undoFile) error {
	stale := &StaleFileError{Target: rep.what()}
	for _, f := range files {
		now, err := readCurrent(ctx, f.p, h.journal.MaxPreimageBytes())
		if err != nil {
			return fmt.Errorf("undo of %s: reading %s: %w; nothing was changed", rep.what(), f.path, err)
		}
		f.now = now
		before := f.first.Before
		switch want := f.after; {
		case sameImage(now.Image, before):
			f.action = UndoUnchanged
			continue
		case want == nil:
			stale.Files = append(stale.Files, StaleFile{Path: f.path, Why: fmt.Sprintf(
				"the journal has no record of what call %s left there (toolhost stopped, or the change failed, before it was recorded), and it is not as it was before, so toolhost cannot tell whether it changed since", f.last.CallID)})
			continue
		case !sameImage(now.Image, *want):
			stale.Files = append(stale.Files, StaleFile{Path: f.path, Why: differs(now.Image, *want)})
			continue
		}
		f.action = UndoRestore
		if !before.Exists {
			f.action = UndoRemove
		}
	}
	if len(stale.Files) > 0 {
		return stale
	}
	return nil
}

// undoApply journals the undo as a batch of its own, then restores the
// files in one transaction, then records what it left.
func (h *Host) undoApply(ctx context.Context, rep *UndoReport, conv string, files []*undoFile) error {
	j := h.journal
	// The record outlives this call's cancellation, as the engine's does.
	jctx := context.WithoutCancel(ctx)
	// The undo's call has no client to name it: its id is its journal id.
	rep.UndoBatchID = engine.NewBatchID()
	rep.UndoCallID = journal.CallJournalID(rep.UndoBatchID, 1)
	args, _ := json.Marshal(map[string]string{"target": rep.Target})
	err := j.Commit(jctx, rep.UndoBatchID, journal.Step{
		Batch: &journal.Batch{ID: rep.UndoBatchID, Conversation: conv, Calls: []journal.Call{
			{ID: rep.UndoCallID, Tool: undoTool, Arguments: args, Disposition: string(engine.ExecuteNow)},
		}},
		Starts: []string{rep.UndoCallID},
	})
	if err != nil {
		return fmt.Errorf("undo of %s: it is journaled before it changes anything, and that failed: %w; nothing was changed", rep.what(), err)
	}
	err = h.undoCommit(jctx, rep, files)
	res := journal.Result{OK: err == nil, Content: undoSummary(rep)}
	if err != nil {
		res = journal.Result{ErrorKind: "ExecutionFailed", ErrorMessage: err.Error()}
	}
	if jerr := j.Commit(jctx, rep.UndoBatchID, journal.Step{Results: []journal.CallResult{{CallID: rep.UndoCallID, Result: res}}, End: true}); jerr != nil {
		h.log.Error("cannot record the undo's result in the journal", "batch", rep.UndoBatchID, "id", rep.UndoCallID, "err", jerr)
	}
	return err
}

// undoCommit stages every file, journals their pre-images, commits, and
// journals what the commit left. Directories are made before the files
// in them, in the order they were first changed (a tree's top first);
// what is removed is removed from the top-most directory down, in one
// removal of the tree, once every entry in it is known to be one the
// undo removes. Restored directories get their modes, and restored
// links their targets, as soon as the transaction has committed.
func (h *Host) undoCommit(ctx context.Context, rep *UndoReport, files []*undoFile) error {
	txn := h.sb.Begin()
	defer txn.Close()
	var before []journal.FileBefore
	var after []journal.FileAfter
	removed := map[string]*undoFile{}
	for _, f := range files {
		if f.action == UndoRemove {
			removed[f.path] = f
		}
	}
	var dirs, links []*undoFile
	stageAll := func(kind fs.FileMode) error {
		for _, f := range files {
			if f.action == UndoUnchanged || f.kind() != kind {
				continue
			}
			var err error
			switch {
			case f.action == UndoRemove:
				after = append(after, journal.FileAfter{Path: f.path})
				if under(f.path, removed) {
					break // its directory's removal takes it
				}
				if err = h.removable(f, removed); err == nil {
					err = txn.StageRemove(f.p, f.now.Mode.IsDir())
				}
			case kind == fs.ModeDir:
				if !f.now.Exists {
					_, err = txn.StageMkdir(f.p)
				}
				dirs = append(dirs, f)
				after = append(after, journal.FileAfter{Path: f.path, Image: f.first.Before})
			case kind == fs.ModeSymlink:
				if f.now.Exists {
					err = fmt.Errorf("a link must be put back where %s is now; remove it by hand first", describeImage(f.now.Image))
				}
				links = append(links, f)
				after = append(after, journal.FileAfter{Path: f.path, Image: f.first.Before})
			default:
				_, err = txn.StageMode(f.p, f.before, f.first.Before.Mode, true)
				after = append(after, journal.FileAfter{Path: f.path, Image: f.first.Before})
			}
			if err != nil {
				return fmt.Errorf("undo of %s: %s: %w; nothing was changed", rep.what(), f.path, err)
			}
			before = append(before, journal.FileBefore{Path: f.path, Exists: f.now.Exists, Mode: f.now.Mode, Size: f.now.Size, Content: f.now.content})
		}
		return nil
	}
	// Directories first, so that the files and links in them have a
	// place; then files and links; a removal is staged where its kind
	// comes, and never overlaps a restoration.
	for _, kind := range []fs.FileMode{fs.ModeDir, 0, fs.ModeSymlink} {
		if err := stageAll(kind); err != nil {
			return err
		}
	}
	if _, err := h.journal.RecordPreimages(ctx, rep.UndoBatchID, rep.UndoCallID, before); err != nil {
		return fmt.Errorf("undo of %s: the files' content is journaled before they change, and that failed: %w; nothing was changed", rep.what(), err)
	}
	if err := txn.Commit(); err != nil {
		var rb *sandbox.RollbackError
		if errors.As(err, &rb) {
			return fmt.Errorf("undo of %s failed and could not be rolled back completely: %w. For each file named, move the backup named over it by hand", rep.what(), err)
		}
		return fmt.Errorf("undo of %s: %w; nothing was changed", rep.what(), err)
	}
	var late []string
	for _, f := range links {
		if err := f.p.Root.Symlink(string(f.before), f.p.Rel); err != nil {
			late = append(late, fmt.Sprintf("the link %s (to %q) could not be made: %v", f.path, f.before, err))
		}
	}
	for _, f := range dirs {
		if err := f.p.Root.Chmod(f.p.Rel, f.first.Before.Mode.Perm()); err != nil {
			late = append(late, fmt.Sprintf("the mode of %s could not be set to %04o: %v", f.path, f.first.Before.Mode.Perm(), err))
		}
	}
	if err := h.journal.RecordPostimages(ctx, rep.UndoBatchID, rep.UndoCallID, after); err != nil {
		h.log.Error("cannot record what an undo left in the journal; undoing it will be refused", "batch", rep.UndoBatchID, "id", rep.UndoCallID, "err", err)
	}
	if len(late) > 0 {
		return fmt.Errorf("undo of %s restored the files, but:\n  %s\nput those back by hand", rep.what(), strings.Join(late, "\n  "))
	}
	return nil
}

// kind is the type bits of what the undo puts at f: what was there
// before, or for a removal what is there now.
func (f *undoFile) kind() fs.FileMode {
	if f.action == UndoRemove {
		return f.now.Mode.Type() & (fs.ModeDir | fs.ModeSymlink)
	}
	return f.first.Before.Mode.Type() & (fs.ModeDir | fs.ModeSymlink)
}

// under reports whether path lies below a directory the undo removes.
func under(path string, removed map[string]*undoFile) bool {
	for dir := filepath.Dir(path); ; dir = filepath.Dir(dir) {
		if r, ok := removed[dir]; ok && r.now.Mode.IsDir() {
			return true
		}
		if next := filepath.Dir(dir); next == dir {
			return false
		}
	}
}

// removable refuses to remove a directory holding anything the undo does
// not remove itself: what was put there since, which undo must not lose.
func (h *Host) removable(f *undoFile, removed map[string]*undoFile) error {
	if !f.now.Mode.IsDir() {
		return nil
	}
	entries, err := f.p.ReadDir()
	if err != nil {
		return err
	}
	for _, e := range entries {
		child := f.p.Child(e.Name())
		r, ok := removed[child.Abs]
		if !ok {
			return fmt.Errorf("the directory holds %s, which the change did not make, so it is not removed; move that away first", child.Abs)
		}
		if err := h.removable(r, removed); err != nil {
			return err
		}
	}
	return nil
}

// describeImage names what a file's image is, for messages.
func describeImage(img journal.Image) string {
	switch {
	case !img.Exists:
		return "nothing"
	case img.Mode.IsDir():
		return "a directory"
	case img.Mode&fs.ModeSymlink != 0:
		return "a symbolic link"
	}
	return "a file"
}

// undoSummary is the undo call's result in the journal.
func undoSummary(rep *UndoReport) string {
	var b strings.Builder
	fmt.Fprintf(&b, "undid %s", rep.what())
	for _, f := range rep.Files {
		fmt.Fprintf(&b, "\n%s %s", f.Action, f.Path)
	}
	return b.String()
}

// readCurrent reads what p holds now: whether it exists, its mode, size
// and digest (the whole file, streamed) and its content up to one byte
// past limit, for the undo's own pre-image.
func readCurrent(ctx context.Context, p sandbox.Path, limit int64) (current, error) {
	var c current
	fi, err := p.Lstat()
	if errors.Is(err, fs.ErrNotExist) {
		return c, nil
	}
	if err != nil {
		return c, err
	}
	switch {
	case fi.IsDir():
		c.Image = journal.Image{Exists: true, Mode: fs.ModeDir | fi.Mode().Perm()}
		return c, nil
	case fi.Mode()&fs.ModeSymlink != 0:
		target, err := p.Root.Readlink(p.Rel)
		if err != nil {
			return c, err
		}
		sum := sha256.Sum256([]byte(target))
		c.Image = journal.Image{Exists: true, Mode: fs.ModeSymlink | fi.Mode().Perm(), Size: int64(len(target)), SHA256: hex.EncodeToString(sum[:])}
		c.content = []byte(target)
		return c, nil
	case !fi.Mode().IsRegular():
		// Not a file a change could have left: it differs.
		c.Exists, c.Mode, c.SHA256 = true, fi.Mode(), "not a regular file"
		return c, nil
	}
	f, err := p.OpenFile()
	if err != nil {
		return c, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return c, err
	}
	h := sha256.New()
	keep := &capped{limit: limit + 1}
	n, err := io.Copy(io.MultiWriter(h, keep), ctxio.Reader(ctx, f))
	if err != nil {
		return c, err
	}
	c.Image = journal.Image{Exists: true, Mode: st.Mode.Perm(), Size: n, SHA256: hex.EncodeToString(h.Sum(nil))}
	c.content = keep.b
	return c, nil
}

// capped keeps the first limit bytes written to it.
type capped struct {
	b     []byte
	limit int64
}

func (c *capped) Write(p []byte) (int, error) {
	if room := c.limit - int64(len(c.b)); room > 0 {
		c.b = append(c.b, p[:min(int64(len(p)), room)]...)
	}
	return len(p), nil
}

// sameImage reports whether a file now is as img says: the same kind of
// entry, mode and content (a link's content is its target; a
// directory's is not compared, only its mode).
func sameImage(now, img journal.Image) bool {
	if !now.Exists || !img.Exists {
		return now.Exists == img.Exists
	}
	const kind = fs.ModeDir | fs.ModeSymlink
	if now.Mode&kind != img.Mode&kind {
		return false
	}
	if img.Mode.IsDir() {
		return now.Mode.Perm() == img.Mode.Perm()
	}
	return now.Mode.Perm() == img.Mode.Perm() && now.SHA256 == img.SHA256
}

// differs says how a file now differs from what a change left.
func differs(now, left journal.Image) string {
	switch {
	case !now.Exists:
		return "it was removed since"
	case !left.Exists:
		return "it was created again since"
	case now.Mode&(fs.ModeDir|fs.ModeSymlink) != left.Mode&(fs.ModeDir|fs.ModeSymlink):
		return fmt.Sprintf("it is %s now, and the change left %s", describeImage(now), describeImage(left))
	case now.SHA256 != left.SHA256 && !left.Mode.IsDir():
		return fmt.Sprintf("its content changed since (%d bytes now, %d left by the change)", now.Size, left.Size)
	}
	return fmt.Sprintf("its mode changed since (%04o now, %04o left by the change)", now.Mode.Perm(), left.Mode.Perm())
}
