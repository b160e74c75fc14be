package textedit

import "strings"

// File is a text file being edited: its text without the byte order
// mark, and what writing it back must keep.
type File struct {
	text string
	bom  bool
	// cr is set for a file whose line breaks are carriage returns alone
	// (classic Mac OS): text holds them as LF, so every layer, region and
	// diff sees the file's lines, and Bytes writes them back as CR.
	cr bool
	// eol is the style new lines are written in, "\n" or "\r\n", found
	// when first needed: counting the line breaks of a large file costs a
	// WebAssembly plugin more than an edit that adds none.
	eol      string
	modified bool
	// orig is the text as parsed, and changed the places edits wrote
	// since, in order and apart: File.Diff compares only those.
	orig    string
	changed []span
}

// span is a place edits changed: bytes [ob, oe) of the text as parsed
// are bytes [b, e) of the text now.
type span struct{ ob, oe, b, e int }

// wrote records that an edit replaced bytes [b, e) of the text, as the
// edit found it, with n bytes; the places it overlaps or touches become
// one.
func (f *File) wrote(b, e, n int) {
	delta := n - (e - b)
	out := make([]span, 0, len(f.changed)+1)
	i, shift := 0, 0 // shift: how much further on the text now is than as parsed
	for ; i < len(f.changed) && f.changed[i].e < b; i++ {
		s := f.changed[i]
		out = append(out, s)
		shift = s.e - s.oe
	}
	m := span{b: b, e: e}
	if i < len(f.changed) && f.changed[i].b < m.b {
		m.b = f.changed[i].b
	}
	m.ob = m.b - shift
	for ; i < len(f.changed) && f.changed[i].b <= e; i++ {
		s := f.changed[i]
		m.e = max(m.e, s.e)
		shift = s.e - s.oe
	}
	m.oe = m.e - shift
	m.e += delta
	out = append(out, m)
	for _, s := range f.changed[i:] {
		s.b, s.e = s.b+delta, s.e+delta
		out = append(out, s)
	}
	f.changed = out
}

const utf8BOM = "\uFEFF" // EF BB BF

// Parse reads data as a UTF-8 text file; ParseString is Parse for data
// already held as a string, without copying it. A file that starts with a UTF-16
// or UTF-32 byte order mark is refused: a model's text cannot be matched
// against it, and writing it back as UTF-8 would change every byte.
func Parse(data []byte) (*File, error) { return ParseString(string(data)) }

// ParseString is Parse of a string.
func ParseString(data string) (*File, error) {
	switch {
	case strings.HasPrefix(data, "\xFF\xFE\x00\x00"), strings.HasPrefix(data, "\x00\x00\xFE\xFF"):
		return nil, &Error{Reason: Encoding, Msg: "the file is UTF-32 (it starts with a UTF-32 byte order mark); the editing tools change UTF-8 text only, so nothing was changed; convert it to UTF-8 first, or rewrite it whole with write_file"}
	case strings.HasPrefix(data, "\xFF\xFE"), strings.HasPrefix(data, "\xFE\xFF"):
		return nil, &Error{Reason: Encoding, Msg: "the file is UTF-16 (it starts with a UTF-16 byte order mark); the editing tools change UTF-8 text only, so nothing was changed; convert it to UTF-8 first, or rewrite it whole with write_file"}
	}
	f := &File{}
	if strings.HasPrefix(data, utf8BOM) {
		f.bom = true
		data = data[len(utf8BOM):]
	}
	if strings.IndexByte(data, '\n') < 0 && strings.IndexByte(data, '\r') >= 0 {
		f.cr = true
		data = strings.ReplaceAll(data, "\r", "\n")
	}
	f.text, f.orig = data, data
	return f, nil
}

// crToLF is s with its line breaks, CRLF or a lone CR, made LF: in a
// file whose breaks are lone CRs, a model's CR, LF or CRLF each means a
// break.
func crToLF(s string) string {
	if !strings.Contains(s, "\r") {
		return s
	}
	return strings.ReplaceAll(strings.ReplaceAll(s, "\r\n", "\n"), "\r", "\n")
}

// cutBOM is s without a leading U+FEFF, and whether it had one. In a file
// that starts with a byte order mark, read_file shows the mark as U+FEFF
// at the start of the first line, and a model quoting that line quotes
// it: placed at the start of the file, it is the mark the file keeps,
// never text to find after it or to write a second time.
func (f *File) cutBOM(s string) (string, bool) {
	if !f.bom || strings.HasPrefix(f.text, utf8BOM) {
		return s, false // no mark, or one in the text too: U+FEFF is text
	}
	return strings.CutPrefix(s, utf8BOM)
}

// lineEnding is the style most of text's lines end in; LF on a tie or
// when no line ends.
func lineEnding(text string) string {
	lf := countLF(text)
	crlf := strings.Count(text, "\r\n")
	if crlf > lf-crlf {
		return "\r\n"
	}
	return "\n"
}

// Text is the file's text, without its byte order mark; in a file whose
// line breaks are lone CRs, with LF for each.
func (f *File) Text() string { return f.text }

// Content is the file's text as it is to be written, without its byte
// order mark: Text, with its line breaks written back as CR in a file
// that had CR alone.
func (f *File) Content() string {
	if f.cr {
		return strings.ReplaceAll(f.text, "\n", "\r")
	}
	return f.text
}

// Bytes is the file as it is to be written: its byte order mark, if it
// had one, then its Content.
func (f *File) Bytes() []byte {
	text := f.Content()
	if !f.bom {
		return []byte(text)
	}
	out := make([]byte, 0, len(utf8BOM)+len(text))
	return append(append(out, utf8BOM...), text...)
}

// HasBOM reports whether the file starts with a UTF-8 byte order mark,
// which Bytes writes back before Text.
func (f *File) HasBOM() bool { return f.bom }

// Modified reports whether an edit changed the text: one can replace text
// with what it becomes in the file's style, the same bytes.
func (f *File) Modified() bool { return f.modified }

// LineEnding is "\r" for a file whose line breaks are all lone CRs,
// "\r\n" for a file whose lines mostly end in CRLF, else "\n".
func (f *File) LineEnding() string {
	if f.cr {
		return "\r"
	}
	return f.textEOL()
}

// textEOL is the line break new lines take in the text: LF in a CR file,
// whose Content makes them CR.
func (f *File) textEOL() string {
	if f.eol == "" {
		f.eol = lineEnding(f.text)
	}
	return f.eol
}

// fromLF writes s's line breaks, LF, in the file's style. s must have
// had its CRLFs made LF once, not twice: "\r\r\n" is a CR and a break.
func (f *File) fromLF(s string) string {
	if !strings.Contains(s, "\n") || f.textEOL() == "\n" {
		return s
	}
	return strings.ReplaceAll(s, "\n", f.eol)
}

// countLF is strings.Count(s, "\n"), jumping from break to break:
// strings.Count looks at each byte, which in WebAssembly takes three
// times as long on a file of 60-byte lines.
func countLF(s string) int {
	n := 0
	for {
		i := strings.IndexByte(s, '\n')
		if i < 0 {
			return n
		}
		n++
		s = s[i+1:]
	}
}

// lineAt is the 1-based number of the line holding byte offset off.
func lineAt(text string, off int) int { return 1 + countLF(text[:off]) }
