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
//
// It leans on strings.IndexByte, which is vectorized even in WebAssembly,
// where a byte-at-a-time loop is several times slower; most files have no
// CR at all, which one scan settles.
func ParseFile(content string) (*File, error) {
	f := &File{}
	if content == "" {
		return f, nil
	}
	f.Lines = make([]string, 0, len(content)/32+1)
	hasCR := strings.IndexByte(content, '\r') >= 0
	eolKnown := false
	for rest, n := content, 1; ; n++ {
		end := strings.IndexByte(rest, '\n')
		if end < 0 {
			if hasCR && strings.IndexByte(rest, '\r') >= 0 {
				return nil, bareCR(n)
			}
			f.Lines = append(f.Lines, rest)
			return f, nil
		}
		line, kind := rest[:end], LF
		if hasCR {
			if strings.HasSuffix(line, "\r") {
				kind, line = CRLF, line[:len(line)-1]
			}
			if strings.IndexByte(line, '\r') >= 0 {
				return nil, bareCR(n)
			}
		}
		f.Lines = append(f.Lines, line)
		switch {
		case !eolKnown:
			f.EOL, eolKnown = kind, true
		case kind != f.EOL:
			return nil, &EOLError{Line: n, Msg: "mixed line endings (" + kind.String() + " in a " + f.EOL.String() + " file); normalize them before patching"}
		}
		rest = rest[end+1:]
		if rest == "" {
			f.FinalNewline = true
			return f, nil
		}
	}
}

func bareCR(line int) error {
	return &EOLError{Line: line, Msg: "bare carriage return (CR not followed by LF); LP1 cannot patch this file"}
}

// String joins the lines with the file's line ending, adding one after the
// last line when FinalNewline is set. A file without lines is empty.
func (f *File) String() string { return string(f.Bytes()) }

// Bytes is String as a byte slice, built with one allocation.
func (f *File) Bytes() []byte {
	if len(f.Lines) == 0 {
		return nil
	}
	eol := f.EOL.bytes()
	n := len(eol) * len(f.Lines)
	for _, l := range f.Lines {
		n += len(l)
	}
	b := make([]byte, 0, n)
	for i, l := range f.Lines {
		if i > 0 {
			b = append(b, eol...)
		}
		b = append(b, l...)
	}
	if f.FinalNewline {
		b = append(b, eol...)
	}
	return b
}
