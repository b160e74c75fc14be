// Package lp1 parses and applies LP1 (Line Patch v1) patches, the format of
// the apply_patch tool (docs/LP1.md in the specification set).
//
// It depends only on the standard library, so the same code runs inside the
// apply_patch plugin and natively in tests, fuzzing and benchmarks.
package lp1

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// OpKind is the letter of an operation.
type OpKind byte

// The operations of LP1.
const (
	Replace     OpKind = 'R'
	InsertAfter OpKind = 'I'
	InsertAt    OpKind = 'P' // insert before the match
	Erase       OpKind = 'E'
	Append      OpKind = 'T'
	Prepend     OpKind = 'B'
	Newline     OpKind = 'N'
)

func (k OpKind) String() string { return string(k) }

// hasFind reports whether the operation starts with a find block.
func (k OpKind) hasFind() bool {
	return k == Replace || k == InsertAfter || k == InsertAt || k == Erase
}

// hasNew reports whether the operation carries a block of new lines.
func (k OpKind) hasNew() bool { return k != Erase && k != Newline }

// Op is one operation of a file section.
type Op struct {
	Kind OpKind
	// Occ selects the Occ-th match (1-based); 0 means the find block must
	// match exactly once.
	Occ  int
	Find []string
	New  []string
	// FinalNewline is the argument of N: true for "N +", false for "N -".
	FinalNewline bool
	// Line is the patch line of the operation letter (1-based).
	Line int
}

// Section is an "F <path>" line and the operations under it.
type Section struct {
	Path string
	Line int
	Ops  []Op
}

// Patch is a parsed LP1 patch: its file sections in order.
type Patch struct {
	Sections []Section
}

// Paths returns the distinct paths of the patch in order of first use.
func (p *Patch) Paths() []string {
	var paths []string
	seen := make(map[string]bool)
	for _, s := range p.Sections {
		if !seen[s.Path] {
			seen[s.Path] = true
			paths = append(paths, s.Path)
		}
	}
	return paths
}

// SyntaxError reports malformed patch text.
type SyntaxError struct {
	Line int // 1-based patch line
	Msg  string
}

func (e *SyntaxError) Error() string {
	return "LP1 syntax error at patch line " + strconv.Itoa(e.Line) + ": " + e.Msg
}

// maxOcc bounds occurrence numbers; no real file has more matches, and the
// bound keeps the number an int on every platform.
const maxOcc = 1 << 30

// Parse parses LP1 patch text. Lines may end in LF or CRLF.
func Parse(text string) (*Patch, error) {
	p := &parser{text: text}
	return p.parse()
}

type parser struct {
	text string
	pos  int // offset of the next unread line
	line int // number of the last line read
}

// next returns the next line without its line ending.
func (p *parser) next() (line string, ok bool, err error) {
	if p.pos >= len(p.text) {
		return "", false, nil
	}
	rest := p.text[p.pos:]
	end := strings.IndexByte(rest, '\n')
	if end < 0 {
		line, p.pos = rest, len(p.text)
	} else {
		line, p.pos = rest[:end], p.pos+end+1
	}
	p.line++
	line = strings.TrimSuffix(line, "\r")
	if strings.IndexByte(line, '\r') >= 0 {
		return "", false, p.errorf("carriage return inside a line; patch lines end in LF or CRLF and block lines cannot carry line endings")
	}
	return line, true, nil
}

func (p *parser) errorf(format string, args ...any) *SyntaxError {
	return &SyntaxError{Line: p.line, Msg: fmt.Sprintf(format, args...)}
}

// isSkippable reports blank lines and comments, which are ignored outside
// blocks.
func isSkippable(line string) bool {
	t := trimBlank(line)
	return t == "" || t[0] == '#'
}

func trimBlank(s string) string { return strings.Trim(s, " \t") }

func (p *parser) parse() (*Patch, error) {
	if err := p.header(); err != nil {
		return nil, err
	}
	patch := &Patch{}
	var cur *Section
	for {
		line, ok, err := p.next()
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, p.errorf("missing END line; a patch ends with a line containing only END")
		}
		if isSkippable(line) {
			continue
		}
		cmd := trimBlank(line)
		switch {
		case cmd == "END":
			if cur != nil && len(cur.Ops) == 0 {
				return nil, &SyntaxError{Line: cur.Line, Msg: "file section " + quoteForMsg(cur.Path) + " has no operations"}
			}
			if err := p.trailer(); err != nil {
				return nil, err
			}
			return patch, nil
		case cmd[0] == 'F' && (len(cmd) == 1 || cmd[1] == ' ' || cmd[1] == '\t'):
			if cur != nil && len(cur.Ops) == 0 {
				return nil, &SyntaxError{Line: cur.Line, Msg: "file section " + quoteForMsg(cur.Path) + " has no operations"}
			}
			path, err := p.path(cmd[1:])
			if err != nil {
				return nil, err
			}
			patch.Sections = append(patch.Sections, Section{Path: path, Line: p.line})
			cur = &patch.Sections[len(patch.Sections)-1]
		default:
			op, err := p.op(cmd)
			if err != nil {
				return nil, err
			}
			if cur == nil {
				return nil, &SyntaxError{Line: op.Line, Msg: "operation " + op.Kind.String() + " before any F line; start a file section with F <path>"}
			}
			cur.Ops = append(cur.Ops, op)
		}
	}
}

func (p *parser) header() error {
	for {
		line, ok, err := p.next()
		if err != nil {
			return err
		}
		if !ok {
			return p.errorf("empty patch; an LP1 patch starts with a line containing only LP1")
		}
		if isSkippable(line) {
			continue
		}
		if trimBlank(line) != "LP1" {
			return p.errorf("expected the header line LP1, found %s", quoteForMsg(line))
		}
		return nil
	}
}

// trailer checks that nothing follows END.
func (p *parser) trailer() error {
	if p.pos < len(p.text) {
		p.line++
		return p.errorf("text after END; END must be the last line of the patch")
	}
	return nil
}

// path parses the argument of an F line: a bare path or a quoted one.
func (p *parser) path(arg string) (string, error) {
	arg = trimBlank(arg)
	if arg == "" {
		return "", p.errorf("F needs a path")
	}
	if arg[0] != '"' {
		if i := strings.IndexAny(arg, " \t\""); i >= 0 {
			return "", p.errorf("bare path %s contains whitespace or a quote; write it in double quotes", quoteForMsg(arg))
		}
		return arg, nil
	}
	var b strings.Builder
	for i := 1; i < len(arg); i++ {
		c := arg[i]
		switch c {
		case '\\':
			if i+1 < len(arg) && (arg[i+1] == '"' || arg[i+1] == '\\') {
				b.WriteByte(arg[i+1])
				i++
				continue
			}
			return "", p.errorf(`invalid escape in quoted path; only \" and \\ are allowed`)
		case '"':
			if trimBlank(arg[i+1:]) != "" {
				return "", p.errorf("unexpected text after the quoted path")
			}
			if b.Len() == 0 {
				return "", p.errorf("empty quoted path")
			}
			return b.String(), nil
		default:
			b.WriteByte(c)
		}
	}
	return "", p.errorf("quoted path has no closing quote")
}

// op parses an operation line and its blocks.
func (p *parser) op(cmd string) (Op, error) {
	op := Op{Kind: OpKind(cmd[0]), Line: p.line}
	arg := ""
	if len(cmd) > 1 {
		if cmd[1] != ' ' && cmd[1] != '\t' {
			return Op{}, p.errorf("unknown line %s; expected F, R, I, P, E, T, B, N, END, a comment or a blank line", quoteForMsg(cmd))
		}
		arg = trimBlank(cmd[1:])
	}
	switch op.Kind {
	case Replace, InsertAfter, InsertAt, Erase:
		if arg != "" {
			occ, err := parseOcc(arg)
			if err != nil {
				return Op{}, p.errorf("%s: %s", op.Kind, err)
			}
			op.Occ = occ
		}
	case Append, Prepend:
		if arg != "" {
			return Op{}, p.errorf("%s takes no argument", op.Kind)
		}
	case Newline:
		switch arg {
		case "+":
			op.FinalNewline = true
		case "-":
		default:
			return Op{}, p.errorf("N needs + (force a final newline) or - (remove it)")
		}
		return op, nil
	default:
		return Op{}, p.errorf("unknown line %s; expected F, R, I, P, E, T, B, N, END, a comment or a blank line", quoteForMsg(cmd))
	}
	var err error
	if op.Kind.hasFind() {
		if op.Find, err = p.block(op, "find"); err != nil {
			return Op{}, err
		}
		if len(op.Find) == 0 {
			return Op{}, &SyntaxError{Line: op.Line, Msg: op.Kind.String() + ": the find block is empty; it needs at least one line to match"}
		}
	}
	if op.Kind.hasNew() {
		if op.New, err = p.block(op, "new"); err != nil {
			return Op{}, err
		}
	}
	return op, nil
}

// parseOcc parses a positive decimal integer without a leading zero.
func parseOcc(s string) (int, error) {
	if s[0] < '1' || s[0] > '9' {
		return 0, errors.New("occurrence " + quoteForMsg(s) + " is not a positive integer without leading zeros")
	}
	n := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, errors.New("occurrence " + quoteForMsg(s) + " is not a positive integer without leading zeros")
		}
		n = n*10 + int(c-'0')
		if n > maxOcc {
			return 0, errors.New("occurrence " + quoteForMsg(s) + " is too large")
		}
	}
	return n, nil
}

// block reads lines up to a terminator line, undoing dot-stuffing.
func (p *parser) block(op Op, what string) ([]string, error) {
	var lines []string
	for {
		line, ok, err := p.next()
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, &SyntaxError{Line: op.Line, Msg: fmt.Sprintf("the %s block of %s is not terminated; end it with a line containing only '.' (a content line starting with '.' is written with an extra '.')", what, op.Kind)}
		}
		if isTerminator(line) {
			return lines, nil
		}
		if strings.HasPrefix(line, "..") {
			line = line[1:]
		}
		lines = append(lines, line)
	}
}

// isTerminator reports a '.' in column 1 followed only by spaces or tabs.
func isTerminator(line string) bool {
	return len(line) > 0 && line[0] == '.' && trimBlank(line[1:]) == ""
}

// quoteForMsg quotes s for an error message, shortened so a pasted file
// cannot flood it.
func quoteForMsg(s string) string {
	const max = 60
	if len(s) > max {
		cut := max
		for cut > 0 && s[cut]&0xC0 == 0x80 {
			cut--
		}
		s = s[:cut] + "…"
	}
	return strconv.Quote(s)
}
