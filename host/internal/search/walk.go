package search

import (
	"bytes"
	"container/heap"
	"context"
	"errors"
	"io"
	"io/fs"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/bmatcuk/doublestar/v4"

	"github.com/toolhost/toolhost/abi"
	"github.com/toolhost/toolhost/host/internal/sandbox"
	"github.com/toolhost/toolhost/host/internal/search/ignore"
	"github.com/toolhost/toolhost/host/internal/search/match"
)

// ignoreNames are the ignore files a directory may hold, as ripgrep
// reads them.
var ignoreNames = [...]string{".gitignore", ".ignore", ".rgignore"}

// search is one Run.
type search struct {
	ctx    context.Context
	cancel context.CancelFunc
	start  sandbox.Path
	req    abi.SearchRequest
	o      Options
	m      *match.Matcher
	// content: the modes that read files (content, files, count).
	content bool

	res     abi.SearchResult
	skipped abi.SearchSkipped // the walker's counts
	// scanSkips are the counts of the files the workers skipped, kept
	// apart: merge runs while the walker is still counting.
	scanSkips abi.SearchSkipped
	stopped   atomic.Value // string: why the search stopped early
	read      atomic.Int64 // bytes read, against the budget
	// detailed is set once the results hold all the lines they will:
	// workers then only count.
	detailed atomic.Bool
	outBytes int64
	pool     sync.Pool
	byMTime  mtimeHeap
	// ignoreBudget bounds the compiled ignore patterns of the whole walk.
	ignoreBudget *ignore.Budget
}

func newSearch(ctx context.Context, start sandbox.Path, req abi.SearchRequest, o Options) (*search, error) {
	s := &search{start: start, req: req, o: o}
	s.content = req.Mode == abi.SearchContent || req.Mode == abi.SearchFiles || req.Mode == abi.SearchCount
	if s.content {
		m, err := match.Compile(match.Options{Query: req.Query, Regex: req.Regex, CaseSensitive: req.CaseSensitive,
			Multiline: req.Multiline, ContextLines: req.ContextLines})
		if err != nil {
			var pe *match.PatternError
			if errors.As(err, &pe) {
				return nil, &RequestError{Field: "query", Message: "query: " + pe.Message}
			}
			return nil, err
		}
		s.m = m
	}
	s.ctx, s.cancel = stopEarly(ctx)
	s.ignoreBudget = ignore.NewBudget(ignoreBudgetBytes)
	s.pool.New = func() any { b := make([]byte, 0, 64<<10); return &b }
	return s, nil
}

// stopEarly returns a context that ends a little before ctx's deadline:
// the plugin still has to shape what the search found, within the same
// deadline.
func stopEarly(ctx context.Context) (context.Context, context.CancelFunc) {
	deadline, ok := ctx.Deadline()
	if !ok {
		return context.WithCancel(ctx)
	}
	margin := time.Until(deadline) / 10
	margin = min(max(margin, 20*time.Millisecond), time.Second)
	return context.WithDeadline(ctx, deadline.Add(-margin))
}

func (s *search) stop(reason string) {
	s.stopped.CompareAndSwap(nil, reason)
	s.cancel()
}

func (s *search) stoppedBy() string {
	if r, ok := s.stopped.Load().(string); ok {
		return r
	}
	if s.ctx.Err() != nil {
		return abi.StoppedDeadline
	}
	return ""
}

func (s *search) run() (abi.SearchResult, error) {
	defer s.cancel()
	st, err := s.start.Lstat()
	if err != nil {
		return abi.SearchResult{}, err
	}
	var err2 error
	switch {
	case !st.IsDir() && s.content:
		err2 = s.runFiles(func(emit func(sandbox.Path)) error { emit(s.start); return nil })
	case !st.IsDir():
		return abi.SearchResult{}, &RequestError{Field: "path", Message: "path: " + s.start.Attempted + " is not a directory; give the directory to look in"}
	case s.content:
		rules, err := s.rulesAbove()
		if err != nil {
			return abi.SearchResult{}, err
		}
		err2 = s.runFiles(func(emit func(sandbox.Path)) error {
			return s.walk(s.start, "", rules, 0, func(p sandbox.Path, _ fs.DirEntry, _ string) { emit(p) })
		})
	default:
		rules, err := s.rulesAbove()
		if err != nil {
			return abi.SearchResult{}, err
		}
		err2 = s.walk(s.start, "", rules, 0, s.entry)
		s.finishEntries()
	}
	if err2 != nil && s.stoppedBy() == "" {
		return abi.SearchResult{}, err2
	}
	s.res.Skipped = s.skipped
	for _, c := range [...][2]*int{
		{&s.res.Skipped.Binary, &s.scanSkips.Binary}, {&s.res.Skipped.TooLarge, &s.scanSkips.TooLarge},
		{&s.res.Skipped.Special, &s.scanSkips.Special}, {&s.res.Skipped.Unreadable, &s.scanSkips.Unreadable},
	} {
		*c[0] += *c[1]
	}
	if why := s.stoppedBy(); why == abi.StoppedDeadline || why == abi.StoppedScanBudget {
		s.res.TotalIsLowerBound, s.res.Truncated, s.res.StoppedBy = true, true, why
	}
	return s.res, nil
}

// rulesAbove reads the ignore files of the directories from the root
// holding start down to start, and .git/info/exclude at the root.
func (s *search) rulesAbove() (*ignore.Rules, error) {
	if s.req.Ignored {
		return nil, nil
	}
	dir := s.start.RootPath()
	var rules *ignore.Rules
	var files []ignore.File
	if data := s.readIgnore(dir.Child(".git").Child("info").Child("exclude")); data != nil {
		files = append(files, ignore.File{Name: "exclude", Data: data})
	}
	rules = rules.DirWithin(s.ignoreBudget, "", append(files, s.ignoreFiles(dir)...)...)
	if s.start.Rel == "." {
		return rules, nil
	}
	rel := ""
	for _, name := range strings.Split(s.start.Rel, "/") {
		dir = dir.Child(name)
		if rel == "" {
			rel = name
		} else {
			rel += "/" + name
		}
		rules = rules.DirWithin(s.ignoreBudget, rel, s.ignoreFiles(dir)...)
	}
	return rules, nil
}

// ignoreFiles reads the ignore files directly in dir.
func (s *search) ignoreFiles(dir sandbox.Path) []ignore.File {
	var files []ignore.File
	for _, name := range ignoreNames {
		if data := s.readIgnore(dir.Child(name)); data != nil {
			files = append(files, ignore.File{Name: name, Data: data})
		}
	}
	return files
}

// readIgnore reads one ignore file: a regular file that is not denied,
// at most maxIgnoreFileBytes of it. Anything else is no file.
func (s *search) readIgnore(p sandbox.Path) []byte {
	if _, denied := s.o.Sandbox.Denied(p.Abs); denied {
		return nil
	}
	f, err := p.OpenFile()
	if err != nil {
		return nil
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil || !st.Regular() {
		return nil
	}
	data, err := io.ReadAll(io.LimitReader(f, maxIgnoreFileBytes))
	if err != nil {
		return nil
	}
	return data
}

// visitor is called for each entry the walk keeps, in path order, with
// its path below the start.
type visitor func(p sandbox.Path, de fs.DirEntry, rel string)

// walk visits the entries below dir (rel below the start, "" for the
// start itself) in path order. In the content modes only regular files
// reach visit; the other modes see every kept entry.
func (s *search) walk(dir sandbox.Path, rel string, rules *ignore.Rules, depth int, visit visitor) error {
	if err := s.ctx.Err(); err != nil {
		return err
	}
	read := dir.ReadDirTypes
	if s.req.Mode == abi.SearchList {
		// A listing describes every entry it keeps.
		read = dir.ReadDirLstat
	}
	entries, err := read()
	if err != nil {
		if depth == 0 {
			return err
		}
		s.skipped.Unreadable++
		return nil
	}
	if !s.req.Ignored {
		var files []ignore.File
		for _, de := range entries {
			if slices.Contains(ignoreNames[:], de.Name()) && de.Type().IsRegular() {
				if data := s.readIgnore(dir.Child(de.Name())); data != nil {
					files = append(files, ignore.File{Name: de.Name(), Data: data})
				}
			}
		}
		if len(files) > 0 && depth > 0 {
			rules = rules.DirWithin(s.ignoreBudget, dir.Rel, files...)
		}
	}
	for _, de := range entries {
		if err := s.ctx.Err(); err != nil {
			return err
		}
		name := de.Name()
		child := dir.Child(name)
		if _, denied := s.o.Sandbox.Denied(child.Abs); denied || name == ".git" {
			continue // never searched, never counted
		}
		childRel := name
		if rel != "" {
			childRel = rel + "/" + name
		}
		t := de.Type()
		if !s.req.Hidden && name[0] == '.' {
			s.skipped.Hidden++
			continue
		}
		if rules != nil && rules.Ignored(child.Rel, t.IsDir()) {
			s.skipped.Ignored++
			continue
		}
		if s.content && s.excluded(childRel) {
			continue
		}
		switch {
		case t.IsDir():
			if !s.content {
				visit(child, de, childRel)
			}
			if s.req.Mode == abi.SearchList && depth+1 >= s.req.Depth {
				continue
			}
			if err := s.walk(child, childRel, rules, depth+1, visit); err != nil {
				return err
			}
		case t.IsRegular():
			if s.content && !s.included(childRel) {
				continue
			}
			visit(child, de, childRel)
		case t&fs.ModeSymlink != 0:
			if s.content {
				s.skipped.Symlink++
				continue
			}
			visit(child, de, childRel)
		default:
			if s.content {
				s.skipped.Special++
				continue
			}
			visit(child, de, childRel)
		}
	}
	return nil
}

// excluded reports an entry exclude_paths leaves out (directories too).
func (s *search) excluded(rel string) bool {
	for _, g := range s.req.Exclude {
		if baseMatch(g, rel) {
			return true
		}
	}
	return false
}

// included reports a file include_paths keeps (all, without any).
func (s *search) included(rel string) bool {
	if len(s.req.Include) == 0 {
		return true
	}
	for _, g := range s.req.Include {
		if baseMatch(g, rel) {
			return true
		}
	}
	return false
}

// job is one file to read and match; idx is its place in path order.
type job struct {
	idx int
	p   sandbox.Path
}

// scanned is what one job found.
type scanned struct {
	idx     int
	display string
	invalid bool // display had bytes that are not UTF-8 (shownPath)
	limit   int  // the most lines the worker detailed
	skip    int  // a skipped-count reason (skip*), or 0
	read    bool
	lines   []match.Line
	count   int
}

const (
	skipNone = iota
	skipBinary
	skipTooLarge
	skipSpecial
	skipUnreadable
	skipStopped
)

// runFiles reads and matches the files walk emits on every worker and
// merges what they found back into path order.
func (s *search) runFiles(walk func(emit func(sandbox.Path)) error) error {
	// At most window files are between the walk and the merge: a file
	// slow to match holds the merge, and what the others found waits in
	// pending meanwhile, so the window bounds that memory. Both channels
	// hold a whole window, so no send ever blocks: a worker still
	// matching when the deadline comes finishes on its own, after Run
	// has returned what it had.
	size := 4 * s.o.Workers
	window := make(chan struct{}, size)
	jobs := make(chan job, size)
	results := make(chan scanned, size)
	var walkErr error
	walked := make(chan struct{})
	go func() {
		defer close(walked)
		defer close(jobs)
		n := 0
		walkErr = walk(func(p sandbox.Path) {
			select {
			case window <- struct{}{}:
			case <-s.ctx.Done():
				return
			}
			jobs <- job{idx: n, p: p}
			n++
		})
	}()
	var wg sync.WaitGroup
	for range s.o.Workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range jobs {
				results <- s.scan(j)
			}
		}()
	}
	go func() { wg.Wait(); close(results) }()
	pending := map[int]scanned{}
	next := 0
	for {
		select {
		case r, ok := <-results:
			if !ok {
				<-walked
				return walkErr
			}
			pending[r.idx] = r
			for {
				r, ok := pending[next]
				if !ok {
					break
				}
				delete(pending, next)
				next++
				<-window
				s.merge(r)
			}
		case <-s.ctx.Done():
			// The walk stops at its next entry; the workers are left to
			// finish the file in hand. The walk's counts are read after
			// it has stopped.
			<-walked
			return nil
		}
	}
}

// scan reads one file whole (at most the scan limit) and matches it.
func (s *search) scan(j job) scanned {
	r := scanned{idx: j.idx}
	r.display, r.invalid = shownPath(s.o.Display(j.p))
	if s.ctx.Err() != nil {
		r.skip = skipStopped
		return r
	}
	f, err := j.p.OpenFile()
	if err != nil {
		r.skip = skipUnreadable
		return r
	}
	defer f.Close()
	st, err := f.Stat()
	switch {
	case err != nil:
		r.skip = skipUnreadable
		return r
	case !st.Regular():
		// Swapped for something else since the directory was read.
		r.skip = skipSpecial
		return r
	case st.Size > s.o.ScanLimit:
		r.skip = skipTooLarge
		return r
	}
	bp := s.pool.Get().(*[]byte)
	defer s.pool.Put(bp)
	buf := (*bp)[:0]
	// One byte more than the limit tells a file that grew past it.
	want := min(st.Size, s.o.ScanLimit) + 1
	if int64(cap(buf)) < want {
		buf = make([]byte, 0, want)
	}
	buf = buf[:want]
	n, err := io.ReadFull(f, buf)
	*bp = buf[:0]
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		r.skip = skipUnreadable
		return r
	}
	if int64(n) > s.o.ScanLimit {
		r.skip = skipTooLarge
		return r
	}
	data := buf[:n]
	if s.read.Add(int64(n)) > s.o.Budget {
		s.stop(abi.StoppedScanBudget)
	}
	r.read = true
	if bytes.IndexByte(data, 0) >= 0 {
		r.skip = skipBinary
		return r
	}
	if s.req.Mode == abi.SearchContent && !s.detailed.Load() {
		r.limit = min(s.req.MaxResults, s.detailPerFile())
	}
	r.lines, r.count = s.m.Scan(data, r.limit)
	return r
}

// detailPerFile is the most lines of one file worth detailing: a line
// with its context takes at least this much of the output limit, so
// more could never be shown, and a worker holding them would hold
// memory the output limit does not bound.
func (s *search) detailPerFile() int {
	per := int64(128 * (1 + 2*s.req.ContextLines))
	return int(max(s.o.OutputLimit/per, 1))
}

// merge adds one file's findings, in path order.
func (s *search) merge(r scanned) {
	switch r.skip {
	case skipStopped:
		return
	case skipBinary:
		s.res.FilesSearched++
		s.scanSkips.Binary++
		return
	case skipTooLarge:
		s.scanSkips.TooLarge++
		return
	case skipSpecial:
		s.scanSkips.Special++
		return
	case skipUnreadable:
		s.scanSkips.Unreadable++
		return
	}
	s.res.FilesSearched++
	if r.count == 0 {
		return
	}
	s.res.FilesMatched++
	s.res.TotalMatches += r.count
	switch s.req.Mode {
	case abi.SearchContent:
		for _, l := range r.lines {
			if len(s.res.Matches) == s.req.MaxResults {
				s.truncate(abi.StoppedMaxResults)
				break
			}
			size := int64(estimatedMatchBytes + 2*len(r.display) + len(l.Text) + len(l.MatchText))
			for _, c := range l.Before {
				size += int64(len(c) + 4)
			}
			for _, c := range l.After {
				size += int64(len(c) + 4)
			}
			if s.outBytes+size > s.o.OutputLimit {
				s.truncate(abi.StoppedOutputLimit)
				break
			}
			s.outBytes += size
			s.res.Matches = append(s.res.Matches, abi.SearchMatch{Path: r.display, Line: l.Number, Column: l.Column,
				Text: l.Text, Cut: l.Cut, MatchText: l.MatchText, Before: l.Before, After: l.After, InvalidUTF8: r.invalid})
		}
		// A worker details at most max_results lines of a file (fewer
		// when their context could not fit the output limit), and none
		// once the results are full: the rest were left out.
		if len(r.lines) < r.count {
			if r.limit > 0 && r.limit < s.req.MaxResults && len(s.res.Matches) < s.req.MaxResults {
				s.truncate(abi.StoppedOutputLimit)
			}
			s.truncate(abi.StoppedMaxResults)
		}
		if s.res.Truncated {
			s.detailed.Store(true)
		}
	case abi.SearchFiles:
		s.addFile(abi.SearchFile{Path: r.display, InvalidUTF8: r.invalid, Type: "file", Matches: r.count})
	}
}

func (s *search) truncate(why string) {
	if !s.res.Truncated {
		s.res.Truncated, s.res.StoppedBy = true, why
	}
}

// addFile keeps one entry of a files, glob or list result while it fits.
func (s *search) addFile(f abi.SearchFile) {
	if len(s.res.Files) == s.req.MaxResults {
		s.truncate(abi.StoppedMaxResults)
		return
	}
	size := int64(2*len(f.Path) + 96)
	if s.outBytes+size > s.o.OutputLimit {
		s.truncate(abi.StoppedOutputLimit)
		return
	}
	s.outBytes += size
	s.res.Files = append(s.res.Files, f)
}

// entry is the visitor of the glob and list modes.
func (s *search) entry(p sandbox.Path, de fs.DirEntry, rel string) {
	s.res.FilesSearched++
	if s.req.Mode == abi.SearchGlob {
		if de.IsDir() || !s.globbed(rel) {
			return
		}
	}
	// Through the root, or as the open directory described it: an
	// entry's own Info would look the name up outside the root.
	var fi fs.FileInfo
	var err error
	if d, ok := de.(sandbox.DescribedEntry); ok {
		fi, err = d.Lstat()
	} else {
		fi, err = p.Lstat()
	}
	if err != nil {
		return // vanished since the directory was read
	}
	s.res.TotalMatches++
	shown, invalid := shownPath(s.o.Display(p))
	f := abi.SearchFile{Path: shown, InvalidUTF8: invalid, Type: fileType(fi.Mode()), Size: fi.Size(), ModTime: fi.ModTime().UnixNano()}
	if s.req.SortMTime {
		s.keepRecent(f)
		return
	}
	s.addFile(f)
}

// globbed reports a path one of the patterns matches and none of the
// exclusions does.
func (s *search) globbed(rel string) bool {
	for _, g := range s.req.Exclude {
		if ok, _ := doublestar.Match(g, rel); ok {
			return false
		}
	}
	for _, g := range s.req.Include {
		if ok, _ := doublestar.Match(g, rel); ok {
			return true
		}
	}
	return false
}

// keepRecent keeps the max_results most recently modified files.
func (s *search) keepRecent(f abi.SearchFile) {
	if len(s.byMTime) < s.req.MaxResults {
		heap.Push(&s.byMTime, f)
		return
	}
	s.truncate(abi.StoppedMaxResults)
	if newer(f, s.byMTime[0]) {
		s.byMTime[0] = f
		heap.Fix(&s.byMTime, 0)
	}
}

func (s *search) finishEntries() {
	if !s.req.SortMTime {
		return
	}
	files := []abi.SearchFile(s.byMTime)
	slices.SortFunc(files, func(a, b abi.SearchFile) int {
		if newer(a, b) {
			return -1
		}
		return 1
	})
	truncated := s.res.Truncated
	s.res.Truncated, s.res.StoppedBy = false, ""
	for _, f := range files {
		s.addFile(f)
	}
	if truncated {
		s.truncate(abi.StoppedMaxResults)
	}
}

// newer orders by modification time, most recent first, then by path.
func newer(a, b abi.SearchFile) bool {
	if a.ModTime != b.ModTime {
		return a.ModTime > b.ModTime
	}
	return a.Path < b.Path
}

// mtimeHeap is a min-heap by newer: its top is the file to drop.
type mtimeHeap []abi.SearchFile

func (h mtimeHeap) Len() int           { return len(h) }
func (h mtimeHeap) Less(i, j int) bool { return newer(h[j], h[i]) }
func (h mtimeHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *mtimeHeap) Push(x any)        { *h = append(*h, x.(abi.SearchFile)) }
func (h *mtimeHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

func fileType(m fs.FileMode) string {
	switch {
	case m.IsRegular():
		return abi.TypeFile.String()
	case m.IsDir():
		return abi.TypeDir.String()
	case m&fs.ModeSymlink != 0:
		return abi.TypeSymlink.String()
	}
	return abi.TypeOther.String()
}

// shownPath is a path as a result gives it: JSON carries only UTF-8, and
// replacing a name's bad bytes with U+FFFD would show different files
// (and one really named with U+FFFD) as one, so each bad byte is written
// \xNN and invalid says so. Such a file cannot be named in a call.
func shownPath(p string) (shown string, invalid bool) {
	if utf8.ValidString(p) {
		return p, false
	}
	const hex = "0123456789abcdef"
	var b strings.Builder
	for i := 0; i < len(p); {
		r, size := utf8.DecodeRuneInString(p[i:])
		if r == utf8.RuneError && size == 1 {
			b.WriteString(`\x`)
			b.WriteByte(hex[p[i]>>4])
			b.WriteByte(hex[p[i]&0xf])
		} else {
			b.WriteString(p[i : i+size])
		}
		i += size
	}
	return b.String(), true
}
