// Package match finds the lines of one file's content that match a search
// query: a literal or an RE2 regular expression, case-insensitive by default.
// It does no I/O; the walker hands it whole files.
//
// Semantics follow ripgrep's defaults: a matching line counts once, its
// Column is the 1-based byte column of the line's first match, lines end at
// "\n" and a "\r" before it is not part of the line.
package match

// MaxLineBytes is the most bytes of one line a result shows. A longer line is
// cut to a window of this size around its first match, each cut end marked
// with "…" (the marks are not counted in the window).
const MaxLineBytes = 500

// Options says what to look for.
type Options struct {
	// Query is the literal text, or the RE2 pattern when Regex is set.
	Query string
	// Regex makes Query a regular expression (Go's regexp, RE2 syntax).
	Regex bool
	// CaseSensitive turns off the default case-insensitive matching
	// (Unicode simple folding; "É" matches "é", "ß" does not match "SS").
	CaseSensitive bool
	// Multiline lets a regex match across line ends ("\n" matches, "."
	// still does not); a match's line is the one it starts on.
	Multiline bool
	// ContextLines is how many lines before and after each match are shown.
	ContextLines int
}

// Line is one matching line.
type Line struct {
	Number    int    // 1-based line number
	Column    int    // 1-based byte column of the first match in the line
	Text      string // the line without its end, cut to MaxLineBytes around the match
	Cut       bool   // Text (or MatchText) was cut
	MatchText string // the first match's text, cut to MaxLineBytes
	// Before and After are up to ContextLines lines around the match, each
	// cut to MaxLineBytes. A match's After and the next match's Before may
	// hold the same lines (and After may hold a matching line): callers that
	// print them together dedupe by line number.
	Before, After []string
}

// PatternError says why a pattern cannot be used and how to rewrite it.
type PatternError struct {
	Message string
}

func (e *PatternError) Error() string { return e.Message }

// Matcher is a compiled query. It is safe for concurrent use.
type Matcher struct {
	opts Options
}

// Compile prepares o for Scan. A bad or unsupported regex (look-around,
// backreferences and possessive or atomic groups are not RE2) is a
// *PatternError saying how to rewrite it.
func Compile(o Options) (*Matcher, error) {
	return &Matcher{opts: o}, nil
}

// Scan finds the matching lines of data (one whole file) in order. It
// details at most limit of them (limit 0: count only) and returns the number
// of matching lines in all.
func (m *Matcher) Scan(data []byte, limit int) (lines []Line, count int) {
	return nil, 0
}
