package lp1

import (
	"strconv"
	"strings"
)

// EOL is a file's line-ending kind.
type EOL uint8

// Line-ending kinds.
const (
	LF EOL = iota
	CRLF
)

func (e EOL) bytes() string {
	if e == CRLF {
		return "\r\n"
	}
	return "\n"
}

func (e EOL) String() string {
	if e == CRLF {
		return "CRLF"
	}
	return "LF"
}

// File is a text file in LP1's newline model: lines without their line
// endings, whether the last line ends with one, and the line-ending kind.
type File struct {
	Lines        []string
	FinalNewline bool
	EOL          EOL
}

// EOLError reports file content outside the newline model: a bare CR, or
// line endings of both kinds.
type EOLError struct {
	Line int // 1-based line of the offending byte
	Msg  string
}

func (e *EOLError) Error() string { return "line " + strconv.Itoa(e.Line) + ": " + e.Msg }

// ParseFile splits content into the newline model. The lines share
// content's memory.
func ParseFile(content string) (*File, error) {
	f := &File{}
	eolKnown := false
	for rest, n := content, 1; rest != ""; n++ {
		end := strings.IndexByte(rest, '\n')
		line := rest
		if end >= 0 {
			line = rest[:end]
		}
		kind := LF
		if strings.HasSuffix(line, "\r") && end >= 0 {
			kind, line = CRLF, line[:len(line)-1]
		}
		if strings.IndexByte(line, '\r') >= 0 {
			return nil, &EOLError{Line: n, Msg: "bare carriage return (CR not followed by LF); LP1 cannot patch this file"}
		}
		f.Lines = append(f.Lines, line)
		if end < 0 {
			break
		}
		switch {
		case !eolKnown:
			f.EOL, eolKnown = kind, true
		case kind != f.EOL:
			return nil, &EOLError{Line: n, Msg: "mixed line endings (" + kind.String() + " in a " + f.EOL.String() + " file); normalize them before patching"}
		}
		rest = rest[end+1:]
		f.FinalNewline = rest == ""
	}
	return f, nil
}

// String joins the lines with the file's line ending, adding one after the
// last line when FinalNewline is set. A file without lines is empty.
func (f *File) String() string {
	if len(f.Lines) == 0 {
		return ""
	}
	eol := f.EOL.bytes()
	n := len(eol) * len(f.Lines)
	for _, l := range f.Lines {
		n += len(l)
	}
	var b strings.Builder
	b.Grow(n)
	for i, l := range f.Lines {
		if i > 0 {
			b.WriteString(eol)
		}
		b.WriteString(l)
	}
	if f.FinalNewline {
		b.WriteString(eol)
	}
	return b.String()
}
