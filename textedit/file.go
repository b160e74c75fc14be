package textedit

import (
	"bytes"
	"strings"
)

// File is a text file being edited: its text without the byte order
// mark, and what writing it back must keep.
type File struct {
	text string
	bom  bool
	eol  string // "\n" or "\r\n": the style new lines are written in
}

var utf8BOM = []byte{0xEF, 0xBB, 0xBF}

// Parse reads data as a UTF-8 text file. A file that starts with a UTF-16
// or UTF-32 byte order mark is refused: a model's text cannot be matched
// against it, and writing it back as UTF-8 would change every byte.
func Parse(data []byte) (*File, error) {
	switch {
	case bytes.HasPrefix(data, []byte{0xFF, 0xFE, 0, 0}), bytes.HasPrefix(data, []byte{0, 0, 0xFE, 0xFF}):
		return nil, &Error{Reason: Encoding, Msg: "the file is UTF-32 (it starts with a UTF-32 byte order mark); the editing tools change UTF-8 text only, so nothing was changed; convert it to UTF-8 first, or rewrite it whole with write_file"}
	case bytes.HasPrefix(data, []byte{0xFF, 0xFE}), bytes.HasPrefix(data, []byte{0xFE, 0xFF}):
		return nil, &Error{Reason: Encoding, Msg: "the file is UTF-16 (it starts with a UTF-16 byte order mark); the editing tools change UTF-8 text only, so nothing was changed; convert it to UTF-8 first, or rewrite it whole with write_file"}
	}
	f := &File{}
	if bytes.HasPrefix(data, utf8BOM) {
		f.bom = true
		data = data[len(utf8BOM):]
	}
	f.text = string(data)
	f.eol = lineEnding(f.text)
	return f, nil
}

// lineEnding is the style most of text's lines end in; LF on a tie or
// when no line ends.
func lineEnding(text string) string {
	lf := strings.Count(text, "\n")
	crlf := strings.Count(text, "\r\n")
	if crlf > lf-crlf {
		return "\r\n"
	}
	return "\n"
}

// Text is the file's text, without its byte order mark.
func (f *File) Text() string { return f.text }

// Bytes is the file as it is to be written: its byte order mark, if it
// had one, then its text.
func (f *File) Bytes() []byte {
	if !f.bom {
		return []byte(f.text)
	}
	out := make([]byte, 0, len(utf8BOM)+len(f.text))
	return append(append(out, utf8BOM...), f.text...)
}

// LineEnding is "\r\n" for a file whose lines mostly end in CRLF, else "\n".
func (f *File) LineEnding() string { return f.eol }

// toFileEOL writes s's line endings, whichever they are, in the file's
// style.
func (f *File) toFileEOL(s string) string {
	s = strings.ReplaceAll(s, "\r\n", "\n")
	if f.eol == "\n" {
		return s
	}
	return strings.ReplaceAll(s, "\n", f.eol)
}

// lineAt is the 1-based number of the line holding byte offset off.
func lineAt(text string, off int) int { return 1 + strings.Count(text[:off], "\n") }
