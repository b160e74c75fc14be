// Package searchtext turns the host's search result (abi.SearchResult)
// into what the search and glob tools return: a text a model reads
// (ripgrep-like lines, then one totals line and, when something was left
// out, what to change to see it) and the structured object clients get
// beside it. Both are built by hand, without encoding/json, which costs
// about ten times more inside the guest, and together they stay within
// the call's output limit. It never calls the host: its functions are
// pure, so they are tested natively.
package searchtext

import (
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/toolhost/toolhost/abi"
	"github.com/toolhost/toolhost/internal/jsontext"
)

// footerRoom is kept free of results for the totals line, the hints and
// the structured object's closing members.
const footerRoom = 1 << 10

// budget shares the output limit between the text and the structured
// object, which the host gives together and leaves the object out of
// when both are over the limit.
type budget struct {
	limit int64 // <= 0: none
}

// fits reports whether text and obj bytes, with room for the footer,
// are within the limit.
func (b budget) fits(text, obj int) bool {
	return b.limit <= 0 || int64(text+obj+footerRoom) <= b.limit
}

// fit cuts text so that it and obj are within limit, for a limit too
// small for even the totals beside the object (obj is never cut: it is
// what the output schema promises). Results were already left out to
// fit, so this cuts only the footer, at a rune boundary.
func fit(text []byte, obj []byte, limit int64) []byte {
	if limit <= 0 || int64(len(text)+len(obj)) <= limit {
		return text
	}
	n := max(int(limit)-len(obj), 0)
	for n > 0 && n < len(text) && text[n]&0xc0 == 0x80 {
		n--
	}
	return text[:n]
}

// Number writes n with thousands separators (10,000), as the totals
// lines show counts.
func Number(n int) string {
	s := strconv.Itoa(n)
	neg := ""
	if n < 0 {
		neg, s = "-", s[1:]
	}
	if len(s) <= 3 {
		return neg + s
	}
	var b strings.Builder
	b.WriteString(neg)
	head := len(s) % 3
	if head > 0 {
		b.WriteString(s[:head])
	}
	for i := head; i < len(s); i += 3 {
		if b.Len() > len(neg) {
			b.WriteByte(',')
		}
		b.WriteString(s[i : i+3])
	}
	return b.String()
}

// plural is "1 match" or "2 matches" style: n with word, or with words
// when n is not 1.
func plural(n int, word, words string) string {
	if n == 1 {
		return Number(n) + " " + word
	}
	return Number(n) + " " + words
}

// appendPath appends a path to a text result (AppendName).
func appendPath(t []byte, p string) []byte { return AppendName(t, p) }

// AppendName appends a file name or path to a text result with its
// control characters (a newline, an escape) written \xNN and the
// characters that reorder or hide text (bidi controls, zero-width
// characters, C1 controls) written \u{XXXX}: one line per result is the
// format, so a crafted name must not start a line of its own that reads
// as another result, nor show as a name it is not ("bidi\u202etxt.exe"
// reads as "bidiexe.txt").
func AppendName(t []byte, p string) []byte { return appendEscaped(t, p, hidden) }

// appendEscaped appends p with C0 controls and DEL written \xNN and the
// runes escape picks written \u{X}.
func appendEscaped(t []byte, p string, escape func(rune) bool) []byte {
	const hex = "0123456789abcdef"
	for i := 0; i < len(p); {
		c := p[i]
		if c < 0x20 || c == 0x7f {
			t = append(t, '\\', 'x', hex[c>>4], hex[c&0xf])
			i++
			continue
		}
		if c < utf8.RuneSelf {
			t = append(t, c)
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(p[i:])
		if escape(r) {
			t = append(t, `\u{`...)
			t = strconv.AppendUint(t, uint64(r), 16)
			t = append(t, '}')
		} else {
			t = append(t, p[i:i+size]...)
		}
		i += size
	}
	return t
}

// c1 reports a C1 control (U+0080 to U+009F).
func c1(r rune) bool { return r >= 0x80 && r <= 0x9f }

// hidden reports a C1 control or a character that reorders or hides
// text: bidi marks, embeddings, overrides and isolates, zero-width
// characters.
func hidden(r rune) bool {
	switch {
	case c1(r):
		return true
	case r == 0x061c, r == 0x200e, r == 0x200f, r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069:
		return true
	case r >= 0x200b && r <= 0x200d, r == 0x2060, r == 0xfeff:
		return true
	}
	return false
}

// Skipped is the "skipped: 120 ignored, 3 hidden" part of a totals line,
// zero reasons left out; "" when nothing was skipped.
func Skipped(s abi.SearchSkipped) string {
	var parts []string
	add := func(n int, what, whats string) {
		if n > 0 {
			parts = append(parts, plural(n, what, whats))
		}
	}
	add(s.Ignored, "ignored", "ignored")
	add(s.Hidden, "hidden", "hidden")
	add(s.Binary, "binary", "binary")
	add(s.TooLarge, "too large", "too large")
	add(s.Symlink, "symlink", "symlinks")
	add(s.Special, "special", "special")
	add(s.Unreadable, "unreadable", "unreadable")
	if len(parts) == 0 {
		return ""
	}
	return "skipped: " + strings.Join(parts, ", ")
}

// appendSkippedJSON appends the structured object's skipped member.
func appendSkippedJSON(b []byte, s abi.SearchSkipped) []byte {
	b = append(b, `"skipped":{"ignored":`...)
	b = strconv.AppendInt(b, int64(s.Ignored), 10)
	b = append(b, `,"hidden":`...)
	b = strconv.AppendInt(b, int64(s.Hidden), 10)
	b = append(b, `,"binary":`...)
	b = strconv.AppendInt(b, int64(s.Binary), 10)
	b = append(b, `,"too_large":`...)
	b = strconv.AppendInt(b, int64(s.TooLarge), 10)
	return append(b, '}')
}

func appendStringArray(b []byte, v []string) []byte {
	b = append(b, '[')
	for i, s := range v {
		if i > 0 {
			b = append(b, ',')
		}
		b = jsontext.AppendString(b, s)
	}
	return append(b, ']')
}

// Scope is what the model asked besides the query, as the totals and
// hints need it.
type Scope struct {
	// MaxResults is the bound the search ran with, MaxAllowed the most
	// the tool accepts in this mode.
	MaxResults, MaxAllowed int
	// Hidden and Ignored are include_hidden and include_ignored.
	Hidden, Ignored bool
	// Glob says the tool is glob, whose narrowing argument is patterns
	// (search's is include_paths) and which lists rather than searches.
	Glob bool
}

// stopNote says why a search stopped before the end, for a totals line;
// "" when it did not.
func stopNote(r abi.SearchResult) string {
	if !r.TotalIsLowerBound {
		return ""
	}
	switch r.StoppedBy {
	case abi.StoppedDeadline:
		return " (the call's deadline stopped the search: totals count only what was searched)"
	case abi.StoppedScanBudget:
		return " (the scan budget stopped the search: totals count only what was searched)"
	}
	return " (the search stopped early: totals count only what was searched)"
}

// atLeast is "at least " for a count that is a lower bound.
func atLeast(r abi.SearchResult) string {
	if r.TotalIsLowerBound {
		return "at least "
	}
	return ""
}

// hints is the line saying what to change to see what was left out:
// shown results of total, cut short by the output limit (outputCut) or
// by max_results, and what was skipped that a flag would include. It
// is "" when nothing could be seen by changing the arguments.
func hints(r abi.SearchResult, sc Scope, truncated, outputCut bool) string {
	narrow, verb := "narrow path or include_paths", "search"
	if sc.Glob {
		narrow, verb = "narrow path or patterns", "include"
	}
	var parts []string
	if truncated {
		switch {
		case outputCut && !sc.Glob:
			parts = append(parts, "the output limit left the rest out: "+narrow+`, or use output:"files" or "count"`)
		case outputCut:
			parts = append(parts, "the output limit left the rest out: "+narrow)
		case sc.MaxResults < sc.MaxAllowed:
			parts = append(parts, "raise max_results (up to "+Number(sc.MaxAllowed)+")", narrow)
		default:
			parts = append(parts, narrow)
		}
	}
	if r.TotalIsLowerBound && !truncated {
		parts = append(parts, narrow+" so the search ends in time")
	}
	if r.Skipped.Ignored > 0 && !sc.Ignored {
		parts = append(parts, "include_ignored:true to "+verb+" the "+plural(r.Skipped.Ignored, "ignored path", "ignored paths")+" (.gitignore, .ignore, .git/info/exclude)")
	}
	if r.Skipped.Hidden > 0 && !sc.Hidden {
		parts = append(parts, "include_hidden:true to "+verb+" the "+plural(r.Skipped.Hidden, "hidden path", "hidden paths"))
	}
	if len(parts) == 0 {
		return ""
	}
	return "To see more: " + strings.Join(parts, "; ") + "\n"
}

// totalsTail is the "; skipped: …" after the counts, with the stop note.
func totalsTail(r abi.SearchResult) string {
	s := ""
	if sk := Skipped(r.Skipped); sk != "" {
		s = "; " + sk
	}
	return s + stopNote(r) + "\n"
}
