package engine

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// An approval summary is all a person reads before a risky call runs
// (FR-APR-06), and its text comes from the model's arguments. So every
// rune must show as itself: nothing invisible, nothing that reorders or
// hides the text around it, no line break that a one-line summary would
// lose. The rendering, also used for whatever else is shown with a
// summary (Visible):
//
//   - a line feed shows as ⏎, a carriage return as ␍, a tab as ⇥;
//   - every other control character (C0, DEL, C1), every format
//     character (Unicode category Cf: bidi overrides and isolates,
//     zero-width spaces and joiners, ...), line and paragraph separators,
//     spaces other than U+0020, default-ignorable code points, variation
//     selectors, blank-looking letters, and private-use and unassigned
//     code points show as <U+XXXX>;
//   - the glyphs ⏎ ␍ ⇥ and … show as <U+XXXX> when they are in the text
//     itself, so in a summary each of them means one thing only;
//   - bytes that are not UTF-8 show as U+FFFD (�).
//
// A summary is then collapsed (runs of spaces become one, none at either
// end) and, when longer than maxSummary characters, cut in the middle: it
// keeps its beginning and its end, with … where the middle was, so the
// last words of a command are always shown.

// Visible returns s rendered as approval summaries are: every control,
// format or otherwise invisible character written out (⏎ ␍ ⇥ or <U+XXXX>,
// see above). The result holds no control or format character, so a
// terminal shows it as it is.
func Visible(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	var b strings.Builder
	b.Grow(len(s))
	for _, r := range s {
		b.WriteString(render(r))
	}
	return b.String()
}

// render is how r is shown (see Visible).
func render(r rune) string {
	switch r {
	case '\n':
		return "⏎"
	case '\r':
		return "␍"
	case '\t':
		return "⇥"
	}
	if invisible(r) {
		return fmt.Sprintf("<U+%04X>", r)
	}
	return string(r)
}

// renderedLen is the length in characters of render(r), without building
// it.
func renderedLen(r rune) int {
	switch {
	case r == '\n' || r == '\r' || r == '\t':
		return 1
	case !invisible(r):
		return 1
	case r > 0xFFFFF:
		return 10 // <U+10XXXX>
	case r > 0xFFFF:
		return 9 // <U+XXXXX>
	}
	return 8 // <U+XXXX>
}

// renderedLength is the length in characters of Visible(s).
func renderedLength(s string) int {
	total := 0
	for _, r := range s {
		total += renderedLen(r)
	}
	return total
}

// invisible reports whether r is written out as <U+XXXX> in a summary.
func invisible(r rune) bool {
	switch r {
	case ' ', utf8.RuneError:
		return false
	case '⏎', '␍', '⇥', '…':
		return true // the rendering's own glyphs
	case 0x2800: // braille pattern blank: looks like a space
		return true
	}
	return unicode.In(r, unicode.Cc, unicode.Cf, unicode.Co, unicode.Cs, unicode.Zs, unicode.Zl, unicode.Zp,
		unicode.Other_Default_Ignorable_Code_Point, unicode.Variation_Selector, unicode.Noncharacter_Code_Point) ||
		!unicode.In(r, unicode.L, unicode.M, unicode.N, unicode.P, unicode.S) // unassigned
}

// squeeze collapses runs of spaces (U+0020 only: every other whitespace
// is rendered visibly) into one and trims them at both ends.
func squeeze(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	for _, f := range strings.Split(s, " ") {
		if f == "" {
			continue
		}
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(f)
	}
	return b.String()
}

// shown renders s (valid UTF-8) for a summary and, when the rendering is
// longer than limit characters, cuts it in the middle: the beginning, …,
// and the end, limit characters at most, never splitting a <U+XXXX>.
func shown(s string, limit int) string {
	if renderedLength(s) <= limit {
		return Visible(s)
	}
	budget := limit - 1 // the …
	headBudget := budget / 2
	tailBudget := budget - headBudget
	head, n := 0, 0
	for head < len(s) {
		r, size := utf8.DecodeRuneInString(s[head:])
		if n+renderedLen(r) > headBudget {
			break
		}
		n += renderedLen(r)
		head += size
	}
	tail, n := len(s), 0
	for tail > head {
		r, size := utf8.DecodeLastRuneInString(s[:tail])
		if n+renderedLen(r) > tailBudget {
			break
		}
		n += renderedLen(r)
		tail -= size
	}
	return Visible(s[:head]) + "…" + Visible(s[tail:])
}

// ShownID is a call id as a list of calls shows it, for a person to tell
// calls apart and name one: as it is when plain (printable ASCII with no
// quote, backslash or '<'), otherwise quoted with every other character
// escaped. Visible is not enough for that: it writes an invisible U+200B
// as the text <U+200B>, which a model can also write, and two calls
// would look alike. ShownID gives no two ids the same text.
func ShownID(id string) string {
	for _, r := range id {
		if r <= ' ' || r > '~' || r == '"' || r == '<' || r == '\\' {
			return strconv.QuoteToASCII(id)
		}
	}
	if id == "" {
		return `""`
	}
	return id
}
