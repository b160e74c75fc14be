// Package match finds the lines of one file's content that match a search
// query: a literal or an RE2 regular expression, case-insensitive by default.
// It does no I/O; the walker hands it whole files.
//
// Semantics follow ripgrep's defaults: a matching line counts once, its
// Column is the 1-based byte column of the line's first match, lines end at
// "\n" and a "\r" before it is not part of the line (nor matched: x$ matches
// "x\r\n"). In a regex, ^ and $ match at line bounds.
//
// Case-insensitive matching uses Unicode simple folding: "É" matches "é",
// but "straße" does not match "STRASSE" (ß to SS is a full folding, one
// character to two). A query of ASCII only takes a fast path that folds
// ASCII letters only, so a literal "k" or "s" does not match the Kelvin sign
// U+212A or the long s U+017F there (a regex does).
//
// Speed: a case-sensitive literal is found with bytes.Index over the whole
// buffer; a case-insensitive ASCII literal by scanning for both cases of its
// rarest byte and comparing at each candidate, never lowercasing the file; a
// regex is prefiltered by the longest literal every match must contain, and
// the regexp runs only on the lines holding it.
package match

import (
	"bytes"
	"regexp"
	"regexp/syntax"
	"strings"
	"unicode/utf8"
)

// MaxLineBytes is the most bytes of one line a result shows. A longer line is
// cut to a window of this size around its first match, each cut end marked
// with "…" (the marks are not counted in the window).
const MaxLineBytes = 500

// ellipsis marks a cut end.
const ellipsis = "…"

// Options says what to look for.
type Options struct {
	// Query is the literal text, or the RE2 pattern when Regex is set.
	Query string
	// Regex makes Query a regular expression (Go's regexp, RE2 syntax).
	Regex bool
	// CaseSensitive turns off the default case-insensitive matching.
	CaseSensitive bool
	// Multiline lets a match cross line ends: the regex (or literal) runs
	// over the whole buffer, "\n" in it matches a line end ("." still does
	// not, unless the pattern sets (?s)), and a match's line is the one it
	// starts on. Without it a match lies within one line.
	Multiline bool
	// ContextLines is how many lines before and after each match are shown.
	ContextLines int
}

// Line is one matching line.
type Line struct {
	Number    int    // 1-based line number
	Column    int    // 1-based byte column of the first match in the line
	Text      string // the line without its end, cut to MaxLineBytes around the match
	Cut       bool   // some text of this Line (Text, MatchText, a context line) was cut
	MatchText string // the first match's text, cut to MaxLineBytes
	// Before and After are up to ContextLines lines around the match, each
	// cut to its first MaxLineBytes. A match's After and the next match's
	// Before may hold the same lines (and After may hold a matching line):
	// callers that print them together dedupe by line number.
	Before, After []string
}

// PatternError says why a pattern cannot be used and how to rewrite it.
type PatternError struct {
	Message string
}

func (e *PatternError) Error() string { return e.Message }

// Matcher is a compiled query. It is immutable, so safe for concurrent use.
type Matcher struct {
	lit       *finder        // the literal query, or a regex's prefilter; nil: none
	re        *regexp.Regexp // nil: the query is the literal lit
	multiline bool
	context   int
}

// Compile prepares o for Scan. A bad or unsupported regex (look-around,
// backreferences and possessive or atomic groups are not RE2) is a
// *PatternError saying how to rewrite it.
func Compile(o Options) (*Matcher, error) {
	if o.Query == "" {
		return nil, &PatternError{Message: "the query is empty: send the text (or regex) to look for"}
	}
	m := &Matcher{multiline: o.Multiline, context: max(o.ContextLines, 0)}
	if !o.Regex {
		if !o.Multiline && strings.ContainsRune(o.Query, '\n') {
			return nil, &PatternError{Message: "the query holds a line break but a match lies within one line: search for one line of it, or set multiline"}
		}
		if o.CaseSensitive || isASCII(o.Query) {
			m.lit = newFinder([]byte(o.Query), !o.CaseSensitive)
			return m, nil
		}
		// Non-ASCII case-insensitive literal: Unicode folding through the
		// regexp, prefiltered by its longest foldable ASCII part.
		return m.compileRegex(regexp.QuoteMeta(o.Query), false)
	}
	if err := checkRE2(o.Query); err != nil {
		return nil, err
	}
	return m.compileRegex(o.Query, o.CaseSensitive)
}

func (m *Matcher) compileRegex(pattern string, caseSensitive bool) (*Matcher, error) {
	flags := "(?m)"
	if !caseSensitive {
		flags = "(?mi)"
	}
	full := flags + pattern
	parsed, err := syntax.Parse(full, syntax.Perl)
	if err != nil {
		return nil, patternError(pattern, err)
	}
	re, err := regexp.Compile(full)
	if err != nil {
		return nil, patternError(pattern, err)
	}
	parsed = parsed.Simplify()
	req := required(parsed)
	// A regex that is one plain literal is searched as one, without the regexp.
	if parsed.Op == syntax.OpLiteral && len(req.s) > 0 && literalWhole(parsed) {
		m.lit = newFinder(req.s, req.fold)
		return m, nil
	}
	m.re = re
	if len(req.s) > 0 {
		m.lit = newFinder(req.s, req.fold)
	}
	// Without multiline a match lies within one line: a class taking in
	// "\n" ([^x], \s) searched over the whole buffer would run to the end
	// of the file from every line, quadratic in the file's lines.
	if !m.multiline {
		inLine, err := regexp.Compile(flags + withoutNewline(parsed).String())
		if err != nil {
			return nil, patternError(pattern, err)
		}
		m.re = inLine
	}
	return m, nil
}

// withoutNewline returns re with "\n" taken out of everything that could
// match it, as ripgrep does without multiline: classes lose it, "." stays
// within the line, and a literal holding it matches nothing.
func withoutNewline(re *syntax.Regexp) *syntax.Regexp {
	c := *re
	switch c.Op {
	case syntax.OpAnyChar:
		c.Op = syntax.OpAnyCharNotNL
	case syntax.OpCharClass:
		var r []rune
		for i := 0; i+1 < len(c.Rune); i += 2 {
			lo, hi := c.Rune[i], c.Rune[i+1]
			switch {
			case lo == '\n' && hi == '\n':
			case lo == '\n':
				r = append(r, '\n'+1, hi)
			case hi == '\n':
				r = append(r, lo, '\n'-1)
			case lo < '\n' && hi > '\n':
				r = append(r, lo, '\n'-1, '\n'+1, hi)
			default:
				r = append(r, lo, hi)
			}
		}
		if len(r) == 0 {
			c = syntax.Regexp{Op: syntax.OpNoMatch}
		} else {
			c.Rune = r
		}
	case syntax.OpLiteral:
		for _, ch := range c.Rune {
			if ch == '\n' {
				c = syntax.Regexp{Op: syntax.OpNoMatch}
				break
			}
		}
	}
	if len(re.Sub) > 0 {
		c.Sub = make([]*syntax.Regexp, len(re.Sub))
		for i, sub := range re.Sub {
			c.Sub[i] = withoutNewline(sub)
		}
	}
	return &c
}

// checkRE2 refuses, with a rewrite hint, what Perl or PCRE express but RE2
// cannot; Go's own messages for these name only the bad fragment.
func checkRE2(p string) error {
	refuse := func(what, hint string) error {
		return &PatternError{Message: "the regex uses " + what + ", which RE2 (Go's regexp) cannot express: " + hint}
	}
	switch {
	case strings.Contains(p, "(?=") || strings.Contains(p, "(?!"):
		return refuse("look-ahead (?= or (?!", "match the surrounding text instead (e.g. foo(?=bar) → foobar), or use two searches")
	case strings.Contains(p, "(?<=") || strings.Contains(p, "(?<!"):
		return refuse("look-behind (?<= or (?<!", "match the preceding text too (e.g. (?<=foo)bar → foobar), or use two searches")
	case strings.Contains(p, "(?>"):
		return refuse("an atomic group (?>", "write the group as a plain group (...)")
	case strings.Contains(p, "(?P="), strings.Contains(p, `\k<`), strings.Contains(p, `\g`):
		return refuse("a backreference", "repeat the referenced text literally, or use two searches")
	}
	for i := 0; i+1 < len(p); i++ {
		if p[i] == '\\' {
			if c := p[i+1]; c >= '1' && c <= '9' {
				return refuse(`a backreference \`+string(c), "repeat the referenced text literally, or use two searches")
			}
			i++
		}
	}
	return nil
}

// patternError turns a regexp/syntax error into a message naming the problem
// and where it is.
func patternError(pattern string, err error) error {
	var se *syntax.Error
	if e, ok := err.(*syntax.Error); ok {
		se = e
	}
	if se == nil {
		return &PatternError{Message: "the regex is invalid: " + err.Error()}
	}
	// The fragment may include the flags Compile put in front.
	expr := strings.TrimPrefix(strings.TrimPrefix(se.Expr, "(?mi)"), "(?m)")
	msg := "the regex is invalid: " + string(se.Code) + " in `" + expr + "`"
	if i := strings.Index(pattern, expr); i >= 0 && expr != "" {
		msg += " at byte " + itoa(i+1)
	}
	if se.Code == syntax.ErrInvalidRepeatOp || se.Code == syntax.ErrMissingRepeatArgument {
		msg += " (possessive quantifiers like a++ are not RE2: write a+; to match a literal + or *, escape it with \\)"
	} else {
		msg += " (to match punctuation literally, escape it with \\, or search without regex)"
	}
	return &PatternError{Message: msg}
}

func itoa(n int) string {
	var b [20]byte
	i := len(b)
	for {
		i--
		b[i] = byte('0' + n%10)
		n /= 10
		if n == 0 {
			return string(b[i:])
		}
	}
}

// lit is a literal every match contains: bytes, and whether it is compared
// ASCII case-insensitively (then s is lower case).
type lit struct {
	s    []byte
	fold bool
}

// required returns the longest literal every match of re must contain, or an
// empty lit when there is none it can tell.
func required(re *syntax.Regexp) lit {
	switch re.Op {
	case syntax.OpLiteral:
		var best lit
		return longer(best, appendRuns(re, lit{}, &best))
	case syntax.OpCapture, syntax.OpPlus:
		return required(re.Sub[0])
	case syntax.OpRepeat:
		if re.Min >= 1 {
			return required(re.Sub[0])
		}
	case syntax.OpConcat:
		var best, cur lit
		for _, sub := range re.Sub {
			if sub.Op == syntax.OpLiteral {
				cur = appendRuns(sub, cur, &best)
				continue
			}
			best = longer(best, cur)
			cur = lit{}
			best = longer(best, required(sub))
		}
		return longer(best, cur)
	}
	return lit{}
}

// appendRuns extends cur with the literal's runes; a rune the prefilter
// cannot compare (a non-ASCII or k/s rune under folding, whose fold partners
// differ in length) ends the run, the longest run so far kept in best.
func appendRuns(re *syntax.Regexp, cur lit, best *lit) lit {
	fold := re.Flags&syntax.FoldCase != 0
	if len(cur.s) > 0 && cur.fold != fold {
		*best = longer(*best, cur)
		cur = lit{}
	}
	cur.fold = fold
	for _, r := range re.Rune {
		if fold {
			if r >= utf8.RuneSelf || r == 'k' || r == 'K' || r == 's' || r == 'S' {
				*best = longer(*best, cur)
				cur = lit{fold: fold}
				continue
			}
			cur.s = append(cur.s, lower(byte(r)))
			continue
		}
		cur.s = utf8.AppendRune(cur.s, r)
	}
	return cur
}

// literalWhole reports whether the literal re is matched exactly by its
// finder: every rune made it into the prefilter.
func literalWhole(re *syntax.Regexp) bool {
	if re.Flags&syntax.FoldCase == 0 {
		return true
	}
	for _, r := range re.Rune {
		if r >= utf8.RuneSelf || r == 'k' || r == 'K' || r == 's' || r == 'S' {
			return false
		}
	}
	return true
}

func longer(a, b lit) lit {
	if len(b.s) > len(a.s) {
		return lit{s: append([]byte(nil), b.s...), fold: b.fold}
	}
	return a
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

func lower(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

func upper(c byte) byte {
	if 'a' <= c && c <= 'z' {
		return c - ('a' - 'A')
	}
	return c
}

// finder finds a literal, case-sensitively with bytes.Index, or ASCII
// case-insensitively by its rarest byte in either case.
type finder struct {
	needle []byte // lower case when fold
	fold   bool
	rare   int  // offset of the rarest byte in needle (fold only)
	lo, up byte // its two cases
}

func newFinder(needle []byte, fold bool) *finder {
	f := &finder{needle: needle, fold: fold}
	if !fold {
		return f
	}
	f.needle = bytes.Map(func(r rune) rune {
		if r < utf8.RuneSelf {
			return rune(lower(byte(r)))
		}
		return r
	}, needle)
	best := 1 << 30
	for i, c := range f.needle {
		if r := byteRank(c); r < best {
			best, f.rare = r, i
		}
	}
	f.lo, f.up = f.needle[f.rare], upper(f.needle[f.rare])
	return f
}

// index returns the offset of the first occurrence at or after from, or -1.
func (f *finder) index(data []byte, from int) int {
	if !f.fold {
		i := bytes.Index(data[from:], f.needle)
		if i < 0 {
			return -1
		}
		return from + i
	}
	n := len(f.needle)
	nextLo, nextUp := -2, -2 // -2: not looked up yet; -1: none left
	if f.lo == f.up {
		nextUp = -1
	}
	for i := from + f.rare; i < len(data); {
		if nextLo != -1 && nextLo < i {
			nextLo = indexFrom(data, i, f.lo)
		}
		if nextUp != -1 && nextUp < i {
			nextUp = indexFrom(data, i, f.up)
		}
		c := nextLo
		if c == -1 || (nextUp != -1 && nextUp < c) {
			c = nextUp
		}
		if c == -1 {
			return -1
		}
		s := c - f.rare
		if s+n <= len(data) && equalFoldASCII(data[s:s+n], f.needle) {
			return s
		}
		i = c + 1
	}
	return -1
}

func indexFrom(data []byte, from int, c byte) int {
	i := bytes.IndexByte(data[from:], c)
	if i < 0 {
		return -1
	}
	return from + i
}

// equalFoldASCII compares b with the lower-case lowNeedle, folding ASCII only.
func equalFoldASCII(b, lowNeedle []byte) bool {
	for i, c := range lowNeedle {
		if d := b[i]; d != c && lower(d) != c {
			return false
		}
	}
	return true
}

// byteRank is how common a byte is in source code and text (lower: rarer);
// letters count both cases. The prefilter scans for the rarest byte.
func byteRank(c byte) int {
	const common = " e\tta\nrinosl;c(d)u.p,f=m\"_g/h:b*-ywEv0k{}1xT[]S2&RCA>NI<FDPL'O#M3!8+4B65z97|j?GUHq$%W\\VK@^XJY~`QZ"
	if i := strings.IndexByte(common, c); i >= 0 {
		return 1000 - i // unlisted bytes (rarest) rank 0
	}
	return 0
}

// Scan finds the matching lines of data (one whole file) in order. It
// details at most limit of them (limit 0: count only) and returns the number
// of matching lines in all.
func (m *Matcher) Scan(data []byte, limit int) (lines []Line, count int) {
	if m.multiline {
		return m.scanMultiline(data, limit)
	}
	num := lineCounter{}
	for pos := 0; pos < len(data); {
		var s, e, ls, le int
		switch {
		case m.re == nil:
			s = m.lit.index(data, pos)
			if s < 0 {
				return lines, count
			}
			e = s + len(m.lit.needle)
			ls, le = bounds(data, pos, s)
			if e > ls+len(trimCR(data[ls:le])) {
				// The match takes in the line end's "\r", which is not part
				// of the line; a later one in this line would too.
				pos = le + 1
				continue
			}
		default:
			var c int
			if m.lit != nil {
				if c = m.lit.index(data, pos); c < 0 {
					return lines, count
				}
			} else {
				loc := m.re.FindIndex(data[pos:])
				if loc == nil {
					return lines, count
				}
				c = pos + loc[0]
				if c == len(data) && data[c-1] == '\n' {
					return lines, count
				}
			}
			ls, le = bounds(data, pos, c)
			line := trimCR(data[ls:le])
			if count >= limit {
				if !m.re.Match(line) {
					pos = le + 1
					continue
				}
			} else {
				loc := m.re.FindIndex(line)
				if loc == nil {
					pos = le + 1
					continue
				}
				s, e = ls+loc[0], ls+loc[1]
			}
		}
		count++
		if count <= limit {
			lines = append(lines, m.detail(data, num.at(data, ls), ls, le, s, e))
		}
		pos = le + 1
	}
	return lines, count
}

func (m *Matcher) scanMultiline(data []byte, limit int) (lines []Line, count int) {
	num := lineCounter{}
	for pos := 0; pos <= len(data); {
		var s, e int
		if m.re == nil {
			if s = m.lit.index(data, pos); s < 0 {
				break
			}
			e = s + len(m.lit.needle)
		} else {
			loc := m.re.FindIndex(data[pos:])
			if loc == nil {
				break
			}
			s, e = pos+loc[0], pos+loc[1]
		}
		if s == len(data) && (s == 0 || data[s-1] == '\n') {
			break // past the last line
		}
		ls, le := bounds(data, 0, s)
		count++
		if count <= limit {
			lines = append(lines, m.detail(data, num.at(data, ls), ls, le, s, e))
		}
		pos = max(e, le+1)
	}
	return lines, count
}

// lineCounter numbers lines incrementally: at is called with ascending line
// starts, so the file is counted through once.
type lineCounter struct {
	off, n int
}

func (c *lineCounter) at(data []byte, ls int) int {
	c.n += bytes.Count(data[c.off:ls], []byte{'\n'})
	c.off = ls
	return c.n + 1
}

// bounds returns the line around offset i; from is a line start at or
// before i, bounding the backward search.
func bounds(data []byte, from, i int) (ls, le int) {
	ls = from + bytes.LastIndexByte(data[from:min(i, len(data))], '\n') + 1
	if j := bytes.IndexByte(data[i:], '\n'); j >= 0 {
		return ls, i + j
	}
	return ls, len(data)
}

func trimCR(line []byte) []byte {
	if n := len(line); n > 0 && line[n-1] == '\r' {
		return line[:n-1]
	}
	return line
}

// detail builds the Line for a match at [s, e) in the line [ls, le).
func (m *Matcher) detail(data []byte, number, ls, le, s, e int) Line {
	line := trimCR(data[ls:le])
	text, cut := window(line, s-ls, e-ls)
	mt, mcut := head(data[s:e])
	l := Line{Number: number, Column: s - ls + 1, Text: text, MatchText: mt, Cut: cut || mcut}
	if m.context == 0 {
		return l
	}
	// Before: walk back from the line start.
	start := ls
	for i := 0; i < m.context && start > 0; i++ {
		prev := bytes.LastIndexByte(data[:start-1], '\n') + 1
		t, c := head(trimCR(data[prev : start-1]))
		l.Before = append(l.Before, t)
		l.Cut = l.Cut || c
		start = prev
	}
	for i, j := 0, len(l.Before)-1; i < j; i, j = i+1, j-1 {
		l.Before[i], l.Before[j] = l.Before[j], l.Before[i]
	}
	// After: walk forward from the line end; a final "\n" ends the last line.
	end := le
	for i := 0; i < m.context && end+1 < len(data); i++ {
		next := len(data)
		if j := bytes.IndexByte(data[end+1:], '\n'); j >= 0 {
			next = end + 1 + j
		}
		t, c := head(trimCR(data[end+1 : next]))
		l.After = append(l.After, t)
		l.Cut = l.Cut || c
		end = next
	}
	return l
}

// window cuts line to MaxLineBytes around the match [s, e), never splitting
// a UTF-8 character, marking each cut end with "…".
func window(line []byte, s, e int) (string, bool) {
	if len(line) <= MaxLineBytes {
		return string(line), false
	}
	e = min(e, len(line))
	mlen := min(max(e-s, 0), MaxLineBytes)
	ws := max(s-(MaxLineBytes-mlen)/2, 0)
	we := ws + MaxLineBytes
	if we > len(line) {
		we = len(line)
		ws = we - MaxLineBytes
	}
	ws = charStart(line, ws, +1)
	we = charStart(line, we, -1)
	var b strings.Builder
	b.Grow(we - ws + 2*len(ellipsis))
	if ws > 0 {
		b.WriteString(ellipsis)
	}
	b.Write(line[ws:we])
	if we < len(line) {
		b.WriteString(ellipsis)
	}
	return b.String(), true
}

// head cuts b to its first MaxLineBytes, never splitting a UTF-8 character.
func head(b []byte) (string, bool) {
	if len(b) <= MaxLineBytes {
		return string(b), false
	}
	return string(b[:charStart(b, MaxLineBytes, -1)]) + ellipsis, true
}

// charStart moves i (by dir, at most utf8.UTFMax-1 bytes, so invalid UTF-8
// cannot run it far) off UTF-8 continuation bytes, to a character start.
func charStart(b []byte, i, dir int) int {
	for n := 0; n < utf8.UTFMax-1 && i > 0 && i < len(b) && !utf8.RuneStart(b[i]); n++ {
		i += dir
	}
	return i
}
