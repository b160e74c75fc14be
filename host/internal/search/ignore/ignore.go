// Package ignore decides which paths the ignore files of a tree leave
// out, as ripgrep applies them: .gitignore at every level, .ignore,
// .rgignore and .git/info/exclude, with git's pattern syntax (gitignore(5):
// negation, anchoring, directory-only patterns, "**", character classes,
// escapes).
//
// Each pattern is compiled to an RE2 regular expression, whose matching
// time is linear in the path, so no pattern a workspace holds can make a
// match backtrack; the patterns of one file are matched as one
// alternation per run of patterns of the same sense, and at most
// MaxPatterns patterns of MaxPatternBytes are taken from a file (the
// rest are dropped and counted: Dropped). It does no I/O: the walker
// reads the files and hands their content over.
package ignore

import (
	"bytes"
	"regexp"
	"strings"
)

// Bounds of one ignore file.
const (
	MaxPatterns     = 1000
	MaxPatternBytes = 1024
)

// File is one ignore file's content. Name is ".gitignore", ".ignore",
// ".rgignore" or "exclude" (.git/info/exclude).
type File struct {
	Name string
	Data []byte
}

// kinds in the order ripgrep consults them: a match in an earlier kind
// (anywhere up the tree) beats any match of a later one.
var kinds = [...]string{".rgignore", ".ignore", ".gitignore", "exclude"}

// Rules is the ignore state at one directory: its own files' rules and
// those of the directories above it. It is immutable and safe for
// concurrent use.
type Rules struct {
	parent  *Rules
	dir     string // slash-separated, relative to the workspace root; "" the root
	sets    [len(kinds)]*set
	dropped int
}

// set is the compiled patterns of one file: runs of patterns of one
// sense, in file order.
type set struct {
	runs []run
}

// run is consecutive patterns of one sense, matched as one alternation.
// dirOnly patterns are in dirs, the others in all.
type run struct {
	negate bool
	all    *regexp.Regexp // nil when none
	dirs   *regexp.Regexp // nil when none
}

// Dir returns the rules below dir (slash-separated, relative to the
// workspace root, "" for the root) given the ignore files directly in
// it. A nil r has no rules yet; r itself is unchanged.
func (r *Rules) Dir(dir string, files ...File) *Rules {
	var n *Rules
	for _, f := range files {
		k := kindOf(f.Name)
		if k < 0 {
			continue
		}
		s, dropped := compile(f.Data)
		if s == nil && dropped == 0 {
			continue
		}
		if n == nil {
			n = &Rules{parent: r, dir: strings.Trim(dir, "/")}
			if r != nil {
				n.dropped = r.dropped
			}
		}
		n.dropped += dropped
		n.sets[k] = s
	}
	if n == nil {
		return r
	}
	return n
}

// Dropped counts the patterns of these rules' files that were not
// applied because a file had too many or one was too long.
func (r *Rules) Dropped() int {
	if r == nil {
		return 0
	}
	return r.dropped
}

// Ignored reports whether rel (slash-separated, relative to the
// workspace root) is left out; isDir says it is a directory. Only the
// entry itself is judged: a walker never looks below an ignored
// directory, as git never re-includes a file whose directory is excluded.
func (r *Rules) Ignored(rel string, isDir bool) bool {
	for k := range kinds {
		for at := r; at != nil; at = at.parent {
			s := at.sets[k]
			if s == nil {
				continue
			}
			sub, ok := below(at.dir, rel)
			if !ok {
				continue
			}
			if decided, ignored := s.match(sub, isDir); decided {
				return ignored
			}
		}
	}
	return false
}

// below returns rel relative to dir, if it is below it.
func below(dir, rel string) (string, bool) {
	if dir == "" {
		return rel, true
	}
	if len(rel) > len(dir) && rel[len(dir)] == '/' && rel[:len(dir)] == dir {
		return rel[len(dir)+1:], true
	}
	return "", false
}

// match returns the decision of the last pattern of the file matching
// path: decided false when none does.
func (s *set) match(path string, isDir bool) (decided, ignored bool) {
	for i := len(s.runs) - 1; i >= 0; i-- {
		r := s.runs[i]
		if (r.all != nil && r.all.MatchString(path)) || (isDir && r.dirs != nil && r.dirs.MatchString(path)) {
			return true, !r.negate
		}
	}
	return false, false
}

func kindOf(name string) int {
	for i, k := range kinds {
		if k == name {
			return i
		}
	}
	return -1
}

// pattern is one parsed line.
type pattern struct {
	negate, dirOnly bool
	re              string
}

// compile parses one ignore file. A line that does not compile (which
// the conversion should never make) is dropped like an excess one.
func compile(data []byte) (*set, int) {
	var pats []pattern
	dropped := 0
	for len(data) > 0 {
		var line []byte
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			line, data = data[:i], data[i+1:]
		} else {
			line, data = data, nil
		}
		p, ok := parse(string(line))
		if !ok {
			continue
		}
		if len(pats) == MaxPatterns || len(line) > MaxPatternBytes {
			dropped++
			continue
		}
		pats = append(pats, p)
	}
	if len(pats) == 0 {
		return nil, dropped
	}
	s := &set{}
	for i := 0; i < len(pats); {
		j := i
		var all, dirs []string
		for ; j < len(pats) && pats[j].negate == pats[i].negate; j++ {
			if pats[j].dirOnly {
				dirs = append(dirs, pats[j].re)
			} else {
				all = append(all, pats[j].re)
			}
		}
		r := run{negate: pats[i].negate}
		var err error
		if r.all, err = alternation(all); err != nil {
			dropped += len(all)
		}
		if r.dirs, err = alternation(dirs); err != nil {
			dropped += len(dirs)
		}
		s.runs = append(s.runs, r)
		i = j
	}
	return s, dropped
}

func alternation(res []string) (*regexp.Regexp, error) {
	if len(res) == 0 {
		return nil, nil
	}
	return regexp.Compile(`^(?:` + strings.Join(res, "|") + `)$`)
}

// parse turns one line of an ignore file into a pattern, as gitignore(5)
// reads it; ok is false for a blank line or a comment.
func parse(line string) (p pattern, ok bool) {
	line = strings.TrimSuffix(line, "\r")
	// Trailing spaces are dropped unless escaped with a backslash.
	for strings.HasSuffix(line, " ") && !strings.HasSuffix(line, `\ `) {
		line = line[:len(line)-1]
	}
	if line == "" || line[0] == '#' {
		return p, false
	}
	if line[0] == '!' {
		p.negate, line = true, line[1:]
	} else if strings.HasPrefix(line, `\!`) || strings.HasPrefix(line, `\#`) {
		line = line[1:]
	}
	if strings.HasSuffix(line, "/") {
		p.dirOnly, line = true, strings.TrimRight(line, "/")
	}
	if line == "" {
		return p, false
	}
	// A slash at the start or in the middle anchors the pattern to the
	// file's directory; without one it matches a name at any depth.
	anchored := strings.Contains(line, "/")
	line = strings.TrimPrefix(line, "/")
	re := globRE(line)
	if !anchored {
		re = `(?:.*/)?` + re
	}
	p.re = re
	return p, true
}

// globRE converts a gitignore glob to a regular expression matching a
// whole slash-separated path.
func globRE(g string) string {
	var b strings.Builder
	comps := strings.Split(g, "/")
	for i, c := range comps {
		last := i == len(comps)-1
		if c == "**" {
			switch {
			case len(comps) == 1:
				b.WriteString(`.*`)
			case last:
				// "a/**" matches everything inside a.
				b.WriteString(`.+`)
			default:
				// "**/" matches zero or more directories.
				b.WriteString(`(?:[^/]*/)*`)
			}
			continue
		}
		b.WriteString(componentRE(c))
		if !last {
			b.WriteByte('/')
		}
	}
	return b.String()
}

// componentRE converts one path component of a glob: "*" and "?" never
// match a slash, "[...]" is a class ("[!...]" negated), "\x" is x.
func componentRE(c string) string {
	var b strings.Builder
	for i := 0; i < len(c); i++ {
		switch ch := c[i]; ch {
		case '*':
			b.WriteString(`[^/]*`)
		case '?':
			b.WriteString(`[^/]`)
		case '\\':
			if i+1 < len(c) {
				i++
				b.WriteString(regexp.QuoteMeta(c[i : i+1]))
			}
		case '[':
			end, class := bracket(c[i:])
			if end < 0 {
				b.WriteString(`\[`)
				continue
			}
			b.WriteString(class)
			i += end
		default:
			b.WriteString(regexp.QuoteMeta(c[i : i+1]))
		}
	}
	return b.String()
}

// bracket converts a character class at the start of s, returning the
// index of its closing bracket (-1: not a class) and the RE2 class.
func bracket(s string) (int, string) {
	i := 1
	neg := false
	if i < len(s) && (s[i] == '!' || s[i] == '^') {
		neg, i = true, i+1
	}
	var b strings.Builder
	b.WriteString("[")
	if neg {
		b.WriteString("^/")
	}
	first := true
	for ; i < len(s); i++ {
		ch := s[i]
		if ch == ']' && !first {
			b.WriteString("]")
			return i, b.String()
		}
		first = false
		switch ch {
		case '\\':
			if i+1 < len(s) {
				i++
				b.WriteString(regexp.QuoteMeta(s[i : i+1]))
			}
		case '[', '^':
			b.WriteString(`\` + string(ch))
		case '-':
			b.WriteByte('-')
		default:
			if ch == ']' {
				b.WriteString(`\]`)
			} else {
				b.WriteString(regexp.QuoteMeta(string(ch)))
			}
		}
	}
	return -1, ""
}
