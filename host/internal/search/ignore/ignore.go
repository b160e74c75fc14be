// Package ignore decides which paths the ignore files of a tree leave
// out, as ripgrep applies them: .gitignore at every level, .ignore,
// .rgignore and .git/info/exclude, with git's pattern syntax (gitignore(5):
// negation, anchoring, directory-only patterns, "**", character classes,
// escapes).
//
// A pattern without wildcards is looked up in a map, a "*.ext" compared
// by its suffix, and any other compiled to an RE2 regular expression,
// whose matching time is linear in the name or path, so no pattern a
// workspace holds can make a match backtrack; at most MaxPatterns
// patterns of MaxPatternBytes are taken from a file (the rest are dropped
// and counted: Dropped). It does no I/O: the walker reads the files and
// hands their content over.
package ignore

import (
	"bytes"
	"regexp"
	"strings"
)

// Bounds of one ignore file. A pattern with wildcards other than a
// leading "*" is compiled to a regular expression whose size grows with
// the pattern's, so those patterns are bounded in bytes too: per file,
// and per Budget (one search) in all.
const (
	MaxPatterns     = 1000
	MaxPatternBytes = 512
	MaxGlobBytes    = 16 << 10
)

// Budget bounds the bytes of compiled patterns across every ignore file
// one walk reads: nested directories may each hold a file at the
// per-file bounds. It is not safe for concurrent use: one walker owns it.
type Budget struct{ left int }

// NewBudget allows n bytes of compiled patterns.
func NewBudget(n int) *Budget { return &Budget{left: n} }

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

// set is the compiled patterns of one file. The last matching pattern
// decides, so each form of pattern is indexed by its line: a literal
// name or path by a map, a "*.ext" by its suffix, and only the rest as
// RE2 expressions, matched from the last line down and only while they
// could still beat the best match found.
type set struct {
	pats     []pattern
	names    map[string]int // literal base name → last line index
	dirNames map[string]int // the same, directory-only
	paths    map[string]int // literal anchored path → last line index
	dirPaths map[string]int
	suffixes []int // lines "*" + literal
	globs    []int // every other line, ascending
}

// Dir returns the rules below dir (slash-separated, relative to the
// workspace root, "" for the root) given the ignore files directly in
// it. A nil r has no rules yet; r itself is unchanged.
func (r *Rules) Dir(dir string, files ...File) *Rules { return r.DirWithin(nil, dir, files...) }

// DirWithin is Dir with the compiled patterns charged to b (nil: no
// bound beyond each file's): a pattern past the budget is dropped and
// counted (Dropped).
func (r *Rules) DirWithin(b *Budget, dir string, files ...File) *Rules {
	var n *Rules
	for _, f := range files {
		k := kindOf(f.Name)
		if k < 0 {
			continue
		}
		s, dropped := compile(f.Data, b)
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
	base := path[strings.LastIndexByte(path, '/')+1:]
	best := -1
	lookup := func(m map[string]int, key string) {
		if i, ok := m[key]; ok && i > best {
			best = i
		}
	}
	lookup(s.names, base)
	lookup(s.paths, path)
	if isDir {
		lookup(s.dirNames, base)
		lookup(s.dirPaths, path)
	}
	for _, i := range s.suffixes {
		p := &s.pats[i]
		if i > best && (!p.dirOnly || isDir) && strings.HasSuffix(base, p.literal) {
			best = i
		}
	}
	for k := len(s.globs) - 1; k >= 0; k-- {
		i := s.globs[k]
		if i <= best {
			break
		}
		p := &s.pats[i]
		if p.dirOnly && !isDir {
			continue
		}
		subject := path
		if !p.anchored {
			subject = base
		}
		if strings.Contains(subject, p.need) && p.re.MatchString(subject) {
			best = i
			break
		}
	}
	if best < 0 {
		return false, false
	}
	return true, !s.pats[best].negate
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
	negate, dirOnly, anchored bool
	// literal is the name, path or suffix a pattern without wildcards
	// (or a "*" and then none) matches; re matches any other.
	literal string
	kind    patternKind
	src     string // re's source, compiled once the pattern is within the bounds
	re      *regexp.Regexp
	// need is a piece of text every path re matches holds, checked
	// before re runs ("" when none is known).
	need string
}

type patternKind uint8

const (
	literalName patternKind = iota
	literalPath
	literalSuffix
	glob
)

// compile parses one ignore file. A line that does not compile (which
// the conversion should never make) is dropped like an excess one.
func compile(data []byte, b *Budget) (*set, int) {
	globBytes := 0
	s := &set{names: map[string]int{}, dirNames: map[string]int{}, paths: map[string]int{}, dirPaths: map[string]int{}}
	dropped := 0
	for len(data) > 0 {
		var line []byte
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			line, data = data[:i], data[i+1:]
		} else {
			line, data = data, nil
		}
		if len(s.pats) == MaxPatterns || len(line) > MaxPatternBytes {
			if _, ok := parse(string(line)); ok {
				dropped++
			}
			continue
		}
		p, ok := parse(string(line))
		if !ok {
			continue
		}
		if p.kind == glob {
			if globBytes+len(line) > MaxGlobBytes || (b != nil && b.left < len(line)) {
				dropped++
				continue
			}
			globBytes += len(line)
			if b != nil {
				b.left -= len(line)
			}
			var err error
			if p.re, err = regexp.Compile(p.src); err != nil {
				dropped++
				continue
			}
		}
		i := len(s.pats)
		s.pats = append(s.pats, p)
		switch {
		case p.kind == literalName && p.dirOnly:
			s.dirNames[p.literal] = i
		case p.kind == literalName:
			s.names[p.literal] = i
		case p.kind == literalPath && p.dirOnly:
			s.dirPaths[p.literal] = i
		case p.kind == literalPath:
			s.paths[p.literal] = i
		case p.kind == literalSuffix:
			s.suffixes = append(s.suffixes, i)
		default:
			s.globs = append(s.globs, i)
		}
	}
	if len(s.pats) == 0 {
		return nil, dropped
	}
	return s, dropped
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
	p.anchored = strings.Contains(line, "/")
	line = strings.TrimPrefix(line, "/")
	const meta = "*?[\\"
	switch {
	case !strings.ContainsAny(line, meta) && p.anchored:
		p.kind, p.literal = literalPath, line
	case !strings.ContainsAny(line, meta):
		p.kind, p.literal = literalName, line
	case !p.anchored && line[0] == '*' && !strings.ContainsAny(line[1:], meta):
		p.kind, p.literal = literalSuffix, line[1:]
	default:
		// An unanchored pattern has no slash: it is matched against the
		// base name alone.
		p.kind = glob
		p.src = `^` + globRE(line) + `$`
		if !strings.ContainsAny(line, "[\\") {
			for _, piece := range strings.FieldsFunc(line, func(r rune) bool { return r == '*' || r == '?' || r == '/' }) {
				if len(piece) > len(p.need) {
					p.need = piece
				}
			}
		}
	}
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
