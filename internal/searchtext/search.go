package searchtext

import (
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/toolhost/toolhost/abi"
	"github.com/toolhost/toolhost/internal/jsontext"
)

// Search is the search tool's result for r, a search in mode
// (abi.SearchContent, SearchFiles or SearchCount) with contextLines
// lines of context: the text and the structured object, together within
// limit (<= 0: none). Results that do not fit are left out, and the
// totals still count them.
func Search(r abi.SearchResult, mode string, contextLines int, sc Scope, limit int64) (text string, obj []byte) {
	bud := budget{limit: limit}
	var (
		t         []byte
		j         []byte
		shown     int
		outputCut bool
	)
	switch mode {
	case abi.SearchFiles:
		j = append(j, `{"files":[`...)
		for _, f := range r.Files {
			mark := len(t)
			t = appendPath(t, f.Path)
			t = append(t, " ("...)
			t = append(t, plural(f.Matches, "match", "matches")...)
			t = append(t, ")\n"...)
			jmark := len(j)
			if shown > 0 {
				j = append(j, ',')
			}
			j = append(j, `{"path":`...)
			j = jsontext.AppendString(j, f.Path)
			j = append(j, `,"matches":`...)
			j = strconv.AppendInt(j, int64(f.Matches), 10)
			j = append(j, '}')
			if !bud.fits(len(t), len(j)) {
				t, j, outputCut = t[:mark], j[:jmark], true
				break
			}
			shown++
		}
		j = append(j, "],"...)
	case abi.SearchCount:
		j = append(j, '{')
	default:
		j = append(j, `{"matches":[`...)
		var st groupState
		for i := range r.Matches {
			mark, jmark, saved := len(t), len(j), st
			t = st.appendMatch(t, r.Matches, i, contextLines)
			if shown > 0 {
				j = append(j, ',')
			}
			j = appendMatchJSON(j, r.Matches[i], contextLines > 0)
			if !bud.fits(len(t), len(j)) {
				t, j, st, outputCut = t[:mark], j[:jmark], saved, true
				break
			}
			shown++
		}
		j = append(j, "],"...)
	}
	total := r.TotalMatches
	listed := total // what a full list would hold
	if mode == abi.SearchFiles {
		listed = r.FilesMatched
	}
	outputCut = outputCut || r.StoppedBy == abi.StoppedOutputLimit
	truncated := mode != abi.SearchCount && (r.Truncated || outputCut || shown < listed)

	t = append(t, searchTotals(r, mode, shown, truncated)...)
	if truncated || total == 0 || r.TotalIsLowerBound {
		t = append(t, hints(r, sc, truncated, outputCut)...)
	}

	j = append(j, `"files_searched":`...)
	j = strconv.AppendInt(j, int64(r.FilesSearched), 10)
	j = append(j, `,"files_matched":`...)
	j = strconv.AppendInt(j, int64(r.FilesMatched), 10)
	j = append(j, `,"total_matches":`...)
	j = strconv.AppendInt(j, int64(total), 10)
	j = appendClose(j, r, truncated)
	return string(fit(t, j, limit)), j
}

// searchTotals is the totals line of a search that showed shown results.
func searchTotals(r abi.SearchResult, mode string, shown int, truncated bool) string {
	least := atLeast(r)
	searched := " of " + plural(r.FilesSearched, "file", "files") + " searched"
	if r.TotalMatches == 0 {
		return "No matches in " + plural(r.FilesSearched, "file", "files") + " searched" + totalsTail(r)
	}
	lines := least + plural(r.TotalMatches, "matching line", "matching lines")
	switch mode {
	case abi.SearchFiles:
		files := least + plural(r.FilesMatched, "file", "files") + " with matches"
		if truncated {
			files = Number(shown) + " of " + files
		}
		return files + " (" + lines + ")" + searched + totalsTail(r)
	case abi.SearchContent, "":
		if truncated {
			lines = Number(shown) + " of " + lines
		}
	}
	return lines + " in " + least + Number(r.FilesMatched) + searched + totalsTail(r)
}

// groupState carries what content lines were printed, so that the
// context a match shares with its neighbours is printed once and a "--"
// line separates groups that are not adjacent.
type groupState struct {
	path    string
	last    int  // the last line number printed in path
	printed bool // anything printed yet
}

// appendMatch appends ms[i] as ripgrep shows it: its context before
// (path-line- text), the line (path:line:col: text), its context after,
// leaving out lines already printed and stopping its context before the
// next match's line, which is printed as a match.
func (st *groupState) appendMatch(t []byte, ms []abi.SearchMatch, i, contextLines int) []byte {
	m := ms[i]
	same := st.printed && st.path == m.Path
	next := int(^uint(0) >> 1)
	if i+1 < len(ms) && ms[i+1].Path == m.Path {
		next = ms[i+1].Line
	}
	first := m.Line - len(m.Before)
	start := first
	if same {
		start = max(first, st.last+1)
	}
	if contextLines > 0 && st.printed && (!same || start > st.last+1) {
		t = append(t, "--\n"...)
	}
	for k, line := range m.Before {
		if n := first + k; n >= start {
			t = appendLine(t, m.Path, n, 0, line)
		}
	}
	t = appendLine(t, m.Path, m.Line, m.Column, m.Text)
	last := m.Line
	for k, line := range m.After {
		n := m.Line + 1 + k
		if n >= next {
			break
		}
		t = appendLine(t, m.Path, n, 0, line)
		last = n
	}
	st.path, st.last, st.printed = m.Path, last, true
	return t
}

// appendLine appends a match line (column > 0: path:line:col: text) or
// a context line (path-line- text; path-line- alone for an empty one).
func appendLine(t []byte, path string, line, column int, text string) []byte {
	t = appendPath(t, path)
	if column > 0 {
		t = append(t, ':')
		t = strconv.AppendInt(t, int64(line), 10)
		t = append(t, ':')
		t = strconv.AppendInt(t, int64(column), 10)
		t = append(t, ": "...)
	} else {
		t = append(t, '-')
		t = strconv.AppendInt(t, int64(line), 10)
		t = append(t, '-')
		if text == "" {
			// An empty line ends at its number, as ripgrep's does:
			// no trailing blank.
			return append(t, '\n')
		}
		t = append(t, ' ')
	}
	if !utf8.ValidString(text) {
		// The host writes each bad byte of a result as U+FFFD, three
		// bytes for one: made valid here, the text is measured as sent.
		text = strings.ToValidUTF8(text, "\uFFFD")
	}
	t = append(t, text...)
	return append(t, '\n')
}

// appendMatchJSON appends one member of the structured matches; the
// context arrays only when context was asked for.
func appendMatchJSON(j []byte, m abi.SearchMatch, context bool) []byte {
	j = append(j, `{"path":`...)
	j = jsontext.AppendString(j, m.Path)
	j = append(j, `,"line":`...)
	j = strconv.AppendInt(j, int64(m.Line), 10)
	j = append(j, `,"column":`...)
	j = strconv.AppendInt(j, int64(m.Column), 10)
	j = append(j, `,"match_text":`...)
	j = jsontext.AppendString(j, m.MatchText)
	if context {
		j = append(j, `,"before":`...)
		j = appendStringArray(j, m.Before)
		j = append(j, `,"after":`...)
		j = appendStringArray(j, m.After)
	}
	return append(j, '}')
}

// Glob is the glob tool's result for r: one path a line, then the
// totals, and the structured object, together within limit (<= 0:
// none).
func Glob(r abi.SearchResult, sc Scope, byMTime bool, limit int64) (text string, obj []byte) {
	bud := budget{limit: limit}
	var (
		t         []byte
		j         = []byte(`{"files":[`)
		shown     int
		outputCut bool
	)
	for _, f := range r.Files {
		mark, jmark := len(t), len(j)
		t = appendPath(t, f.Path)
		t = append(t, '\n')
		if shown > 0 {
			j = append(j, ',')
		}
		j = append(j, `{"path":`...)
		j = jsontext.AppendString(j, f.Path)
		j = append(j, `,"size":`...)
		j = strconv.AppendInt(j, f.Size, 10)
		j = append(j, `,"mtime":"`...)
		j = time.Unix(0, f.ModTime).UTC().AppendFormat(j, time.RFC3339)
		j = append(j, `","type":`...)
		j = jsontext.AppendString(j, f.Type)
		j = append(j, '}')
		if !bud.fits(len(t), len(j)) {
			t, j, outputCut = t[:mark], j[:jmark], true
			break
		}
		shown++
	}
	outputCut = outputCut || r.StoppedBy == abi.StoppedOutputLimit
	truncated := r.Truncated || outputCut || shown < r.TotalMatches
	least := atLeast(r)
	switch {
	case r.TotalMatches == 0:
		t = append(t, "No files match, of "...)
	case truncated:
		t = append(t, Number(shown)+" of "+least+plural(r.TotalMatches, "matching path", "matching paths")...)
		t = append(t, ", of "...)
	default:
		t = append(t, least+plural(r.TotalMatches, "matching path", "matching paths")...)
		t = append(t, ", of "...)
	}
	t = append(t, plural(r.FilesSearched, "entry", "entries")+" considered"...)
	if byMTime && shown > 1 {
		t = append(t, ", most recently modified first"...)
	}
	t = append(t, totalsTail(r)...)
	if truncated || r.TotalMatches == 0 || r.TotalIsLowerBound {
		t = append(t, hints(r, sc, truncated, outputCut)...)
	}
	j = append(j, `],"total":`...)
	j = strconv.AppendInt(j, int64(r.TotalMatches), 10)
	j = appendClose(j, r, truncated)
	return string(fit(t, j, limit)), j
}

// appendClose ends the structured object of either tool: whether the
// total is a lower bound, what was skipped, whether results were left out.
func appendClose(j []byte, r abi.SearchResult, truncated bool) []byte {
	j = append(j, `,"total_is_lower_bound":`...)
	j = strconv.AppendBool(j, r.TotalIsLowerBound)
	j = append(j, ',')
	j = appendSkippedJSON(j, r.Skipped)
	j = append(j, `,"truncated":`...)
	j = strconv.AppendBool(j, truncated)
	return append(j, '}')
}
