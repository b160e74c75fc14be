package engine

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/toolhost/toolhost/abi"
	"github.com/toolhost/toolhost/host/internal/sandbox"
	"github.com/toolhost/toolhost/lp1"
)

// What a person approves is what will run (FR-APR-03):
// the plugin's summary is a headline, redacted and cut to fit one line, so
// every approval surface also shows the call's arguments in full, each
// rendered visibly (Visible) and never redacted, and the files they name
// as the sandbox resolved them. Redaction is for logs, never for what a
// person decides on.

// Argument is one value of a call's arguments, as a person approving the
// call sees it.
type Argument struct {
	// Name locates the value in the arguments: "path", "env.HOME",
	// "argv[0]"; a key that is not a plain word is quoted. Rendered
	// visibly, as the value is.
	Name string `json:"name"`
	// Lines is the whole value, one element per line (split at line
	// feeds), each rendered by Visible: nothing cut, nothing redacted. A
	// value that is not a string is its JSON text, on one line. A string
	// of the arguments keeps its text once instead and is split when it
	// is shown (lines, MarshalJSON): a slice of 80,000 one-character
	// lines takes ten times the text it holds, for every call a batch
	// keeps waiting for a decision.
	Lines []string `json:"lines"`
	// Paths are the files the value names, as the sandbox resolved them:
	// one for a path argument, one per file for a patch.
	Paths []PathInfo `json:"paths,omitempty"`
	// Size is the value's length in bytes as given: a string's text,
	// anything else its JSON.
	Size int `json:"size,omitempty"`
	// Omitted says Lines are left out: the arguments are larger than an
	// approval shows (Approval.Omitted says where to read them).
	Omitted bool `json:"omitted,omitempty"`

	text     string // the value as given, for a string
	isString bool
}

// lines is the value rendered one element per line, as Lines holds it:
// Lines, or the lines of a string's text, each rendered by Visible.
func (a Argument) lines() []string {
	if a.Lines != nil || !a.isString {
		return a.Lines
	}
	lines := strings.Split(a.text, "\n")
	for i, l := range lines {
		lines[i] = Visible(l)
	}
	return lines
}

// lineCounts is how many lines the value has and how many of them are
// empty, without splitting a string's text.
func (a Argument) lineCounts() (lines, empty int) {
	if a.Lines != nil || !a.isString {
		return len(a.Lines), countEmpty(a.Lines)
	}
	for s := a.text; ; {
		line, rest, more := strings.Cut(s, "\n")
		lines++
		if line == "" {
			empty++
		}
		if !more {
			return lines, empty
		}
		s = rest
	}
}

// heldBytes is about what the value holds in memory: its text, or its
// lines, with its name and files.
func (a Argument) heldBytes() int {
	n := len(a.Name) + len(a.text) + 64
	for _, l := range a.Lines {
		n += len(l) + 16
	}
	for _, p := range a.Paths {
		n += len(p.Root) + len(p.Rel) + 32
	}
	return n
}

// argumentJSON is an Argument as the surfaces' JSON shows it.
type argumentJSON struct {
	Name    string          `json:"name"`
	Lines   json.RawMessage `json:"lines"`
	Paths   []PathInfo      `json:"paths,omitempty"`
	Size    int             `json:"size,omitempty"`
	Omitted bool            `json:"omitted,omitempty"`
}

// MarshalJSON writes the argument with its lines, split from a string's
// text only while it is written.
func (a Argument) MarshalJSON() ([]byte, error) {
	lines, err := json.Marshal(a.lines())
	if err != nil {
		return nil, fmt.Errorf("argument %s: encoding its lines: %w", a.Name, err)
	}
	return json.Marshal(argumentJSON{Name: a.Name, Lines: lines, Paths: a.Paths, Size: a.Size, Omitted: a.Omitted})
}

// PathInfo is a path as the sandbox resolved it: the cleaned canonical
// path relative to its root, so "./././a/./b.txt" shows as "a/b.txt".
// Its fields are the names as they are on disk: a surface renders them
// with Visible (Details does).
type PathInfo struct {
	// Root is the root directory containing the path, set only when the
	// sandbox has several roots (with one, every path is under it).
	Root string `json:"root,omitempty"`
	// Rel is relative to Root, forward slashes, "." for the root itself.
	Rel string `json:"rel"`
	// Dir says the path is a directory when the call is planned (a
	// directory removed or moved, or one named again by create_directory).
	Dir bool `json:"dir,omitempty"`
}

// Kind is what the path is, as a text surface names it: "directory" or
// "file" (which a path that does not exist yet is, as far as anyone
// knows).
func (p PathInfo) Kind() string {
	if p.Dir {
		return "directory"
	}
	return "file"
}

// String is the path as shown: Rel, with its root when there are several.
func (p PathInfo) String() string {
	if p.Root == "" {
		return p.Rel
	}
	return p.Rel + " (in root " + p.Root + ")"
}

// SummaryNote says how the summary differs from what will run, "" when
// it does not: every surface that shows a shortened or redacted summary
// shows this sentence with it.
func (c Confirmation) SummaryNote() string {
	var what string
	switch {
	case c.SummaryTruncated && c.SummaryRedacted:
		what = "summary shortened and secrets hidden in it"
	case c.SummaryTruncated:
		what = "summary shortened"
	case c.SummaryRedacted:
		what = "secrets hidden in the summary"
	default:
		return ""
	}
	return what + "; the full arguments below are what will run"
}

// Details renders the confirmation's arguments for a person, one row per
// line of text, unfolded and nothing left out: DetailsLayout with the
// zero Layout.
func (c Confirmation) Details() string { return c.DetailsLayout(Layout{}) }

// DetailsWidth renders the arguments in full, folded for a surface width
// columns wide.
func (c Confirmation) DetailsWidth(width int) string {
	return c.DetailsLayout(Layout{Width: width})
}

// Layout is how a surface lays out what it shows a person: every
// surface (a terminal, an MCP elicitation, a console) renders with the
// same rules, so none of them can be drawn on by an argument.
type Layout struct {
	// Width is the surface's width in columns: every row is folded to
	// fit it, so the surface never wraps a row itself and a wrapped row
	// never starts at the margin with the argument's own text. 0 leaves
	// each line on one row.
	Width int
	// MaxLines shortens a value of more lines than this to its first and
	// last lines (and a line of more than maxLineRows rows to its first
	// and last rows), with a count of what is not shown: a default view
	// that a flood of lines cannot fill. 0 shows everything.
	MaxLines int
	// More tells a person how to see what a shortened view leaves out,
	// such as "answer v to view all arguments".
	More string
}

// The marks that start the rows Details draws for a value: every row
// holding an argument's text starts with valueMark (a line) or foldMark
// (the rest of a folded line), and toolhost's own notes within a value
// start with noteMark, which no argument can produce.
const (
	valueMark = "    │"
	foldMark  = "    ┆"
	noteMark  = "    ⋮ "
)

// maxLineRows is how many rows of one line a shortened view shows.
const maxLineRows = 8

// minEmptyRun is the shortest run of empty lines counted on one row
// instead of drawn row by row: 100,000 empty lines must not scroll the
// rest of a question off the screen.
const minEmptyRun = 3

// DetailsLayout renders the confirmation's arguments for a person laid
// out by l: each argument's name, its value and the paths it resolves
// to. No row it writes starts at the left margin: a value's lines are
// indented and marked with │, rows of a folded line with ┆, so text in
// an argument (a file's content holding "Approve? [y/N]", or padded to
// wrap onto a row of its own) cannot pass for the surface's own lines.
// Runs of more than eight spaces show as ␠×N and runs of empty lines as
// their count, so padding and floods are visible as what they are. The
// result holds no control or format character and ends with a line
// feed.
func (c Confirmation) DetailsLayout(l Layout) string {
	var b strings.Builder
	if note := c.SummaryNote(); note != "" {
		b.WriteString(Fold("("+note+")", "  ", foldMark, l.Width))
	}
	if len(c.Arguments) == 0 {
		b.WriteString("  no arguments\n")
	}
	for _, a := range c.Arguments {
		lines := a.lines()
		switch {
		case a.Omitted:
			b.WriteString(Fold(a.Name+": "+a.size()+", not shown here (too large; see above)", "  ", foldMark, l.Width))
		case len(lines) == 1 && lines[0] != "":
			l.writeLine(&b, a.Name+": "+lines[0], "  ")
		case len(lines) <= 1:
			b.WriteString(Fold(a.Name+": (empty)", "  ", foldMark, l.Width))
		default:
			b.WriteString(Fold(a.Name+": "+count(len(lines), "line"), "  ", foldMark, l.Width))
			l.writeLines(&b, lines)
		}
		for _, p := range a.Paths {
			b.WriteString(Fold("→ "+p.Kind()+" "+Visible(p.String()), "    ", foldMark, l.Width))
		}
	}
	return b.String()
}

// writeLines writes a value's lines, only the first and last ones when
// there are more than l.MaxLines, with how many are left out.
func (l Layout) writeLines(b *strings.Builder, lines []string) {
	if l.MaxLines <= 0 || len(lines) <= l.MaxLines {
		l.writeRun(b, lines)
		return
	}
	head := l.MaxLines / 2
	tail := l.MaxLines - head
	hidden := lines[head : len(lines)-tail]
	l.writeRun(b, lines[:head])
	note := count(len(hidden), "more line") + " not shown"
	switch empty := countEmpty(hidden); empty {
	case 0:
	case len(hidden):
		note += " (all empty)"
	default:
		note += " (" + group(empty) + " empty)"
	}
	b.WriteString(Fold(l.more(note), noteMark, noteMark, l.Width))
	l.writeRun(b, lines[len(lines)-tail:])
}

// writeRun writes lines one a row (or more, folded), a run of empty
// lines as its count.
func (l Layout) writeRun(b *strings.Builder, lines []string) {
	for i := 0; i < len(lines); {
		n := 0
		for i+n < len(lines) && lines[i+n] == "" {
			n++
		}
		if n >= minEmptyRun {
			b.WriteString(Fold(count(n, "empty line"), noteMark, noteMark, l.Width))
			i += n
			continue
		}
		l.writeLine(b, lines[i], valueMark)
		i++
	}
}

// writeLine writes one line of text, folded, after first; in a shortened
// view a line of more than maxLineRows rows shows its first and last
// rows and how much of it is left out.
func (l Layout) writeLine(b *strings.Builder, line, first string) {
	rows := foldRows(line, first, foldMark, l.Width)
	if l.MaxLines > 0 && len(rows) > maxLineRows {
		head, tail := maxLineRows/2, maxLineRows-maxLineRows/2
		hidden := 0
		for _, r := range rows[head : len(rows)-tail] {
			hidden += utf8.RuneCountInString(strings.TrimPrefix(r, foldMark))
		}
		note := l.more(count(hidden, "more character") + " of this line not shown")
		rows = slices.Concat(rows[:head], foldRows(note, noteMark, noteMark, l.Width), rows[len(rows)-tail:])
	}
	for _, r := range rows {
		b.WriteString(r)
		b.WriteByte('\n')
	}
}

func (l Layout) more(note string) string {
	if l.More == "" {
		return note
	}
	return note + "; " + l.More
}

func countEmpty(lines []string) int {
	n := 0
	for _, l := range lines {
		if l == "" {
			n++
		}
	}
	return n
}

// count is "1 line", "100,000 lines".
func count(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return group(n) + " " + what + "s"
}

// group writes n with thousands separated, so a person reads 100,000 as
// a hundred thousand at a glance.
func group(n int) string {
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0 && s[i-1] != '-'; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// Fold lays text out (already rendered by Visible) as rows of at most
// width-1 columns, each ending with a line feed: the first row starts
// with first, every other with cont. A surface then never wraps a row
// itself, so no row it shows starts with the text's own characters, and
// text padded with spaces to line up with the margin after wrapping
// cannot draw lines of its own. Runs of more than eight spaces are shown
// as ␠×N. Width 0 leaves the text on one row.
func Fold(text, first, cont string, width int) string {
	var b strings.Builder
	for _, r := range foldRows(text, first, cont, width) {
		b.WriteString(r)
		b.WriteByte('\n')
	}
	return b.String()
}

// foldRows is Fold's rows, without line feeds. It never splits a
// rendered character (<U+XXXX>) or a run of spaces (␠×N) between rows.
func foldRows(text, first, cont string, width int) []string {
	units := showUnits(text)
	if width <= 0 {
		return []string{first + strings.Join(units, "")}
	}
	var rows []string
	row := []string{first}
	used := columns(first)
	for _, u := range units {
		w := columns(u)
		if used+w > width-1 && len(row) > 1 {
			rows = append(rows, strings.Join(row, ""))
			row, used = []string{cont}, columns(cont)
		}
		row = append(row, u)
		used += w
	}
	return append(rows, strings.Join(row, ""))
}

// minSpaceRun is the shortest run of spaces shown as ␠×N: enough to keep
// the usual indentation of code as it is, too few to push text across a
// terminal's width unseen.
const minSpaceRun = 9

// showUnits splits rendered text into what folding keeps together:
// single characters, a written-out <U+XXXX>, and runs of minSpaceRun or
// more spaces shown as ␠×N. A ␠ in the text itself is written out, so ␠
// means spaces only.
func showUnits(text string) []string {
	var units []string
	for i := 0; i < len(text); {
		if text[i] == ' ' {
			if n := len(text[i:]) - len(strings.TrimLeft(text[i:], " ")); n >= minSpaceRun {
				units = append(units, "␠×"+strconv.Itoa(n))
				i += n
				continue
			}
		}
		if text[i] == '<' {
			if m := codePoint.FindString(text[i:min(len(text), i+10)]); m != "" {
				units = append(units, m)
				i += len(m)
				continue
			}
		}
		r, size := utf8.DecodeRuneInString(text[i:])
		if r == '␠' {
			units = append(units, "<U+2420>")
		} else {
			units = append(units, text[i:i+size])
		}
		i += size
	}
	return units
}

// codePoint is a character Visible wrote out.
var codePoint = regexp.MustCompile(`^<U\+[0-9A-F]{4,6}>`)

// columns is at least how many columns s takes on a terminal: one for
// ASCII and two for anything else, as wide (East Asian, emoji) and
// ambiguous characters take two on some terminals. Counting too many
// only folds a row early; counting too few would let the terminal wrap
// it.
func columns(s string) int {
	n := 0
	for _, r := range s {
		if r < utf8.RuneSelf {
			n++
		} else {
			n += 2
		}
	}
	return n
}

// RecapMark starts every row of a recap: Details never starts a row with
// it, so no argument can draw a row that passes for the recap's.
const RecapMark = "┃ "

// The recap's limits, so that it always fits on a screen with the
// question under it, however many arguments or files a call has.
const (
	recapArgs  = 8
	recapPaths = 6
)

// Recap is the short account of c that a surface shows last, right
// before its question, for a surface width columns wide (0: unfolded):
// the call, its tool and risk, the summary, each argument by name with
// its size, and every file the call resolves to, as the sandbox
// resolved it. It is a few rows whatever the arguments are, each
// starting with RecapMark, so a long argument shown above it can neither
// push it off the screen nor imitate it. A call of many arguments or
// files lists the first ones and counts the rest.
func (c Confirmation) Recap(width int) string {
	var b strings.Builder
	b.WriteString(Fold(fmt.Sprintf("call %s (%s), %s risk", cut(Visible(c.CallID), 40), cut(Visible(c.Tool), 40),
		Visible(strings.ToUpper(string(c.Risk)))), "┏━ toolhost asks about ", foldMark, width))
	b.WriteString(Fold("summary: "+c.Summary, RecapMark, RecapMark+"  ┆", width))
	if c.SummaryTruncated || c.SummaryRedacted {
		b.WriteString(Fold("(the summary is not all of it: the arguments are what will run)", RecapMark, RecapMark+"  ", width))
	}
	if len(c.Arguments) == 0 {
		b.WriteString(RecapMark + "no arguments\n")
	}
	paths := 0
	for i, a := range c.Arguments {
		if i == recapArgs {
			b.WriteString(Fold("… and "+count(len(c.Arguments)-i, "more argument"), RecapMark, RecapMark+"  ", width))
			break
		}
		b.WriteString(Fold(cut(a.Name, 60)+": "+a.size(), RecapMark, RecapMark+"  ┆", width))
		for _, p := range a.Paths {
			paths++
			if paths <= recapPaths {
				writeRecapPath(&b, p, width)
			}
		}
	}
	if paths > recapPaths {
		b.WriteString(Fold("  … and "+count(paths-recapPaths, "more file"), RecapMark, RecapMark+"  ", width))
	}
	return b.String()
}

// writeRecapPath writes a file of the recap on at most three rows: a path
// too long for them keeps its first row and a last row holding its end,
// the file's name, with a count of what is between.
func writeRecapPath(b *strings.Builder, p PathInfo, width int) {
	const first, cont = RecapMark + "  ", RecapMark + "    ┆"
	text := "→ " + p.Kind() + " " + Visible(p.String())
	rows := foldRows(text, first, cont, width)
	if len(rows) > 3 {
		units := showUnits(text)
		head := 0
		for used := columns(first); head < len(units) && used+columns(units[head]) <= width-1; head++ {
			used += columns(units[head])
		}
		tail := len(units)
		for used := columns(cont); tail > head && used+columns(units[tail-1]) <= width-1; tail-- {
			used += columns(units[tail-1])
		}
		hidden := utf8.RuneCountInString(strings.Join(units[head:tail], ""))
		rows = []string{first + strings.Join(units[:head], ""), RecapMark + "    ⋮ " + count(hidden, "more character"), cont + strings.Join(units[tail:], "")}
	}
	for _, r := range rows {
		b.WriteString(r)
		b.WriteByte('\n')
	}
}

// size is how big the value is, for a recap: its bytes and, for more
// than one, its lines and how many of them are empty.
func (a Argument) size() string {
	s := count(a.size0(), "byte")
	if lines, empty := a.lineCounts(); lines > 1 {
		s += ", " + count(lines, "line")
		if empty > 0 {
			s += " (" + group(empty) + " empty)"
		}
	}
	return s
}

// size0 is the value's length in bytes: Size, or for an argument built
// by hand, the length of its rendering, which is close.
func (a Argument) size0() int {
	if a.Size != 0 {
		return a.Size
	}
	n := 0
	for _, l := range a.Lines {
		n += len(l) + 1
	}
	return max(0, n-1)
}

// cut shortens rendered text to limit characters, keeping its start and
// end with … between (Visible writes out a … of the text itself, so the
// … is toolhost's).
func cut(s string, limit int) string {
	r := []rune(s)
	if len(r) <= limit {
		return s
	}
	head := (limit - 1) / 2
	return string(r[:head]) + "…" + string(r[len(r)-(limit-1-head):])
}

// arguments renders a call's arguments for approval: every value in the
// order the call gives them (a key given twice never gets here: it is
// refused as BadArgs), path arguments with the path each resolves to
// (inside arrays too: "edits[2].path"), and a writer's LP1 patch with the
// files it names.
func (e *Engine) arguments(m abi.Manifest, raw json.RawMessage, resolved map[string]sandbox.Path) []Argument {
	var f flat
	flattenAt("", "", raw, &f)
	out := f.args
	var paths map[string]string // pointer to the text preflight resolved
	if len(m.PathArgs) > 0 {
		var decoded any
		_ = json.Unmarshal(raw, &decoded)
		found := pathArgs(m.PathArgs, decoded)
		paths = make(map[string]string, len(found))
		for _, pa := range found {
			if !pa.Absent {
				paths[pa.Pointer] = argText(pa)
			}
		}
	}
	for i := range out {
		a := &out[i]
		if !a.isString {
			continue
		}
		if given, ok := paths[f.ptrs[i]]; ok {
			if p, ok := resolved[given]; ok {
				a.Paths = []PathInfo{e.pathInfo(p)}
			}
		}
		if m.WritesUnnamedPaths && strings.Count(f.ptrs[i], "/") == 1 { // a top-level string
			for _, p := range e.resolvePatch(a.text) {
				a.Paths = append(a.Paths, e.pathInfo(p))
			}
		}
	}
	return out
}

// resolvePatch resolves the paths of an LP1 patch; a path the sandbox
// refuses is left out (the patch then fails as a whole when it runs), and
// text that is not a patch names nothing.
func (e *Engine) resolvePatch(text string) []sandbox.Path {
	if e.cfg.Sandbox == nil || !strings.HasPrefix(text, "LP1") {
		return nil
	}
	patch, err := lp1.Parse(text)
	if err != nil {
		return nil
	}
	var out []sandbox.Path
	for _, given := range patch.Paths() {
		if p, err := e.cfg.Sandbox.Resolve(given); err == nil {
			out = append(out, p)
		}
	}
	return out
}

func (e *Engine) pathInfo(p sandbox.Path) PathInfo {
	info := PathInfo{Rel: p.Rel}
	if fi, err := p.Lstat(); err == nil && fi.IsDir() {
		info.Dir = true
	}
	if e.cfg.Sandbox != nil && len(e.cfg.Sandbox.Roots()) > 1 {
		info.Root = p.RootDir
	}
	return info
}

// plainKey is a key shown as it is; any other is quoted.
var plainKey = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_-]*$`)

// keyName is how key k of the object at prefix is named.
func keyName(prefix, k string) string {
	if !plainKey.MatchString(k) {
		return prefix + "[" + strconv.Quote(Visible(k)) + "]"
	}
	if prefix == "" {
		return k
	}
	return prefix + "." + k
}

// flatten appends the values of raw at prefix: an object or array by its
// members, in the order given, a scalar as itself.
func flatten(prefix string, raw json.RawMessage, out *[]Argument) {
	f := flat{args: *out}
	flattenAt(prefix, "", raw, &f)
	*out = f.args
}

// flat is what flattenAt appends: the arguments, and beside each where
// it is in the call's arguments (RFC 6901: "/edits/2/path"), which is how
// a path argument's selector names it. The pointers are not kept in the
// Argument: a call waiting for a decision holds its arguments, and they
// are needed only while they are made.
type flat struct {
	args []Argument
	ptrs []string
}

func (f *flat) add(a Argument, ptr string) {
	f.args = append(f.args, a)
	f.ptrs = append(f.ptrs, ptr)
}

// flattenAt is flatten of the value at JSON pointer ptr.
func flattenAt(prefix, ptr string, raw json.RawMessage, out *flat) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	tok, err := dec.Token()
	if err != nil {
		out.add(Argument{Name: prefix, Lines: []string{Visible(string(raw))}, Size: len(raw)}, ptr)
		return
	}
	delim, ok := tok.(json.Delim)
	if !ok {
		out.add(scalar(prefix, tok), ptr)
		return
	}
	n := len(out.args)
	for i := 0; dec.More(); i++ {
		name, at := fmt.Sprintf("%s[%d]", prefix, i), ptr+"/"+strconv.Itoa(i)
		if delim == '{' {
			k, err := dec.Token()
			if err != nil {
				break
			}
			ks, _ := k.(string)
			name, at = keyName(prefix, ks), ptr+"/"+pointerKey(ks)
		}
		var v json.RawMessage
		if dec.Decode(&v) != nil {
			break
		}
		flattenAt(name, at, v, out)
	}
	if len(out.args) == n && prefix != "" { // an empty object or array
		empty := "{}"
		if delim == '[' {
			empty = "[]"
		}
		out.add(Argument{Name: prefix, Lines: []string{empty}, Size: 2}, ptr)
	}
}

// pointerKey is key k as a segment of a JSON pointer (RFC 6901).
func pointerKey(k string) string {
	return strings.ReplaceAll(strings.ReplaceAll(k, "~", "~0"), "/", "~1")
}

// scalar is the argument for a JSON string, number, boolean or null.
func scalar(name string, tok json.Token) Argument {
	s, ok := tok.(string)
	if !ok {
		b, _ := json.Marshal(tok)
		return Argument{Name: name, Lines: []string{string(b)}, Size: len(b)}
	}
	return Argument{Name: name, Size: len(s), text: s, isString: true}
}
