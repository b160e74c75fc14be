package textedit

import (
	"strings"
	"unicode/utf8"
)

// normalized is text as a layer sees it, with, for every byte, the span
// of the original text it came from, so a match found in it maps back to
// the bytes to replace.
type normalized struct {
	s   []byte
	beg []int // s[i] came from text[beg[i]:end[i]]
	end []int
}

// normalize applies the normalizations of layers LineEndings up to l
// (line-number prefixes are stripped from old_string beforehand, not
// here). Line breaks are never removed, so the normalized text has the
// same lines as the original.
func normalize(text string, l Layer) *normalized {
	n := &normalized{
		s:   make([]byte, 0, len(text)),
		beg: make([]int, 0, len(text)),
		end: make([]int, 0, len(text)),
	}
	for start := 0; start <= len(text); {
		i := strings.IndexByte(text[start:], '\n')
		lineEnd, next := len(text), len(text)+1
		if i >= 0 {
			lineEnd, next = start+i, start+i+1
		}
		content := lineEnd
		if l >= LineEndings && content > start && text[content-1] == '\r' && i >= 0 {
			content--
		}
		n.line(text, start, content, l)
		if i >= 0 {
			n.s = append(n.s, '\n')
			n.beg = append(n.beg, content)
			n.end = append(n.end, next)
		}
		start = next
	}
	return n
}

// line appends text[start:end], one line's content, as layer l sees it.
func (n *normalized) line(text string, start, end int, l Layer) {
	first := len(n.s)
	for i := start; i < end; {
		c := text[i]
		if c < utf8.RuneSelf || l < Punctuation {
			n.add(c, i, i+1)
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(text[i:end])
		if f := fold(r); f != "" {
			for j := 0; j < len(f); j++ {
				n.add(f[j], i, i+size)
			}
		} else {
			for j := 0; j < size; j++ {
				n.add(text[i+j], i+j, i+j+1)
			}
		}
		i += size
	}
	if l >= TrailingSpace {
		k := len(n.s)
		for k > first && isBlank(n.s[k-1]) {
			k--
		}
		n.truncate(k)
	}
	if l >= Indentation {
		k := first
		for k < len(n.s) && isBlank(n.s[k]) {
			k++
		}
		if k > first {
			n.s = append(n.s[:first], n.s[k:]...)
			n.beg = append(n.beg[:first], n.beg[k:]...)
			n.end = append(n.end[:first], n.end[k:]...)
		}
	}
}

// splits reports whether a match boundary at i would fall inside the
// bytes one original character folded to.
func (n *normalized) splits(i int) bool {
	return i > 0 && i < len(n.s) && n.beg[i] == n.beg[i-1]
}

func (n *normalized) add(c byte, beg, end int) {
	n.s = append(n.s, c)
	n.beg = append(n.beg, beg)
	n.end = append(n.end, end)
}

func (n *normalized) truncate(k int) {
	n.s, n.beg, n.end = n.s[:k], n.beg[:k], n.end[:k]
}

func isBlank(c byte) bool { return c == ' ' || c == '\t' }

// fold is the ASCII a typographic character folds to at the Punctuation
// layer, or "" for a character left as it is.
func fold(r rune) string {
	switch r {
	case '\u2018', '\u2019', '\u201A', '\u201B', '\u2032':
		return "'"
	case '\u201C', '\u201D', '\u201E', '\u201F', '\u2033':
		return `"`
	case '\u2010', '\u2011', '\u2012', '\u2013', '\u2014', '\u2015', '\u2212':
		return "-"
	case '\u00A0', '\u2007', '\u202F':
		return " "
	case '\u2026':
		return "..."
	}
	return ""
}

// normalizeString is s as layer l sees it, without the offsets.
func normalizeString(s string, l Layer) string { return string(normalize(s, l).s) }

// stripLineNumbers removes from every line of s the prefix a reader
// added: "12→" (toolhost's read_file with line_numbers) or "    12\t"
// (cat -n), when every line that is not empty has one; ok is false, and
// s is returned as it is, otherwise.
func stripLineNumbers(s string) (string, bool) {
	lines := strings.Split(s, "\n")
	numbered := 0
	for i, line := range lines {
		if strings.TrimRight(line, "\r") == "" {
			continue
		}
		rest, ok := cutLineNumber(line)
		if !ok {
			return s, false
		}
		lines[i] = rest
		numbered++
	}
	if numbered == 0 {
		return s, false
	}
	return strings.Join(lines, "\n"), true
}

// stripNewLineNumbers removes the prefixes from new_string when
// old_string had them: from every line if every line has one, else
// read_file's "12→" from the lines that have it, since a model adds lines
// without numbers among those it copied. A line starting with digits and
// a tab is left alone then: it is as likely data (a TSV row) as cat -n.
func stripNewLineNumbers(s string) string {
	if out, ok := stripLineNumbers(s); ok {
		return out
	}
	lines := strings.Split(s, "\n")
	for i, line := range lines {
		if rest, ok := cutLineNumber(line); ok && !strings.HasPrefix(line[len(line)-len(rest)-1:], "\t") {
			lines[i] = rest
		}
	}
	return strings.Join(lines, "\n")
}

// cutLineNumber removes one line's number prefix: optional spaces,
// digits, then "→" or a tab.
func cutLineNumber(line string) (string, bool) {
	i := 0
	for i < len(line) && line[i] == ' ' {
		i++
	}
	d := i
	for i < len(line) && line[i] >= '0' && line[i] <= '9' {
		i++
	}
	if i == d {
		return line, false
	}
	switch {
	case strings.HasPrefix(line[i:], "→"):
		return line[i+len("→"):], true
	case strings.HasPrefix(line[i:], "\t"):
		return line[i+1:], true
	}
	return line, false
}
