package textedit

import (
	"slices"
	"strconv"
	"strings"

	"github.com/aymanbagabas/go-udiff"
)

// diffContext is the lines of context around each change in a hunk.
const diffContext = 3

// maxDiffEdits bounds the lines added and removed that Diff finds on its
// own (its memory grows with their square); past it, the diff package
// diffs the lines between the first change and the last.
const maxDiffEdits = 2000

// Diff is a unified diff from before to after, labelled as git labels
// path (a/path, b/path) and as the host labels its own diffs; empty when
// they are equal.
//
// An edit changes a few lines of a file that may have thousands, and a
// general diff splitting and comparing them all costs a WebAssembly
// plugin more than the rest of the edit: Diff finds the changed lines in
// time that grows with the file's length times the lines changed (Myers'
// algorithm), the lines sharing the file's memory, and writes the hunks
// the diff package would.
func Diff(path, before, after string) string {
	if before == after {
		return ""
	}
	// Set aside the lines both share at the start and at the end, less
	// the context the hunks show, without splitting them into lines.
	p := sharedPrefix(forward(before), forward(after))
	p = strings.LastIndexByte(before[:p], '\n') + 1
	for range diffContext {
		if p == 0 {
			break
		}
		p = strings.LastIndexByte(before[:p-1], '\n') + 1
	}
	q := sharedPrefix(reverse{before[p:]}, reverse{after[p:]})
	// The shared end starts after a line break inside it, so that it
	// starts a line in both.
	if i := strings.IndexByte(before[len(before)-q:], '\n'); i >= 0 && q > 0 {
		q -= i + 1
	} else {
		q = 0
	}
	for range diffContext {
		if q == 0 {
			break
		}
		q -= strings.IndexByte(before[len(before)-q:], '\n') + 1
	}
	offset := countLF(before[:p])
	a, b := splitLines(before[p:len(before)-q]), splitLines(after[p:len(after)-q])
	ops, ok := diffLines(a, b)
	if !ok {
		return udiff.Unified("a/"+path, "b/"+path, before, after)
	}
	var out strings.Builder
	out.WriteString("--- a/" + path + "\n+++ b/" + path + "\n")
	writeHunks(&out, a, b, ops, offset, offset)
	return out.String()
}

// Diff is the unified diff from the text as parsed to the text now, as
// the function Diff writes it, found from the places the edits changed:
// the lines between them, the same in both, are neither split nor
// compared, which in WebAssembly costs more than the edits when they
// are far apart in a large file.
func (f *File) Diff(path string) string {
	if f.text == f.orig {
		return ""
	}
	var out strings.Builder
	oline, nline, opos, npos := 0, 0, 0, 0 // lines counted up to opos, npos
	for i := 0; i < len(f.changed); {
		// The lines of changes i..j-1 and their context: changes whose
		// context touches share a window, so that hunks never overlap.
		s := f.changed[i]
		lo, hi := linesBefore(f.orig, s.ob), linesAfter(f.orig, s.oe)
		j := i + 1
		for ; j < len(f.changed) && linesBefore(f.orig, f.changed[j].ob) <= hi; j++ {
			hi = linesAfter(f.orig, f.changed[j].oe)
		}
		last := f.changed[j-1]
		nlo, nhi := s.b-(s.ob-lo), last.e+(hi-last.oe)
		oline, nline = oline+countLF(f.orig[opos:lo]), nline+countLF(f.text[npos:nlo])
		opos, npos = lo, nlo
		a, b := splitLines(f.orig[lo:hi]), splitLines(f.text[nlo:nhi])
		ops, ok := diffLines(a, b)
		if !ok {
			return Diff(path, f.orig, f.text)
		}
		if out.Len() == 0 && slices.ContainsFunc(ops, func(op lineOp) bool { return op.kind != opEqual }) {
			out.WriteString("--- a/" + path + "\n+++ b/" + path + "\n")
		}
		writeHunks(&out, a, b, ops, oline, nline)
		i = j
	}
	return out.String()
}

// linesBefore is where the line holding byte i of s starts, diffContext
// lines earlier.
func linesBefore(s string, i int) int {
	i = strings.LastIndexByte(s[:i], '\n') + 1
	for range diffContext {
		if i == 0 {
			break
		}
		i = strings.LastIndexByte(s[:i-1], '\n') + 1
	}
	return i
}

// linesAfter is where the line holding byte i of s ends (after its
// break), diffContext lines later.
func linesAfter(s string, i int) int {
	for range diffContext + 1 {
		k := strings.IndexByte(s[i:], '\n')
		if k < 0 {
			return len(s)
		}
		i += k + 1
	}
	return i
}

// text is a string read from the start or, reversed, from the end.
type text interface {
	len() int
	slice(i, j int) string
}

type forward string

func (s forward) len() int              { return len(s) }
func (s forward) slice(i, j int) string { return string(s[i:j]) }

// reverse reads s from its end: slice(i, j) is the bytes j to i from
// the end.
type reverse struct{ s string }

func (r reverse) len() int              { return len(r.s) }
func (r reverse) slice(i, j int) string { return r.s[len(r.s)-j : len(r.s)-i] }

// sharedPrefix is how many bytes a and b share at their start (or end,
// reversed), comparing blocks before bytes: string equality runs as one
// machine loop, which a byte loop in WebAssembly does not.
func sharedPrefix[T forward | reverse](a, b T) int {
	x, y := text(a), text(b)
	n := min(x.len(), y.len())
	i := 0
	for _, block := range [...]int{4096, 256, 16, 1} {
		for i+block <= n && x.slice(i, i+block) == y.slice(i, i+block) {
			i += block
		}
	}
	return i
}

// splitLines cuts s after each line break; the last line may have none.
// The lines share s's memory.
func splitLines(s string) []string {
	lines := make([]string, 0, countLF(s)+1)
	for s != "" {
		i := strings.IndexByte(s, '\n')
		if i < 0 {
			lines = append(lines, s)
			break
		}
		lines = append(lines, s[:i+1])
		s = s[i+1:]
	}
	return lines
}

// opKind is what a diff does with a line.
type opKind uint8

const (
	opEqual opKind = iota
	opDelete
	opInsert
)

// lineOp is one line of the diff: a[ai] kept as b[bi], a[ai] removed, or
// b[bi] added.
type lineOp struct {
	kind   opKind
	ai, bi int
}

// diffLines is a shortest edit script from a to b, line by line; ok is
// false when it would take more than maxDiffEdits lines.
func diffLines(a, b []string) ([]lineOp, bool) {
	head := 0
	for head < len(a) && head < len(b) && a[head] == b[head] {
		head++
	}
	tail := 0
	for tail < len(a)-head && tail < len(b)-head && a[len(a)-1-tail] == b[len(b)-1-tail] {
		tail++
	}
	x, y := a[head:len(a)-tail], b[head:len(b)-tail]
	mid, ok := myers(x, y)
	if !ok {
		return nil, false
	}
	ops := make([]lineOp, 0, head+len(mid)+tail)
	for i := range head {
		ops = append(ops, lineOp{opEqual, i, i})
	}
	for _, op := range mid {
		ops = append(ops, lineOp{op.kind, op.ai + head, op.bi + head})
	}
	for i := range tail {
		ops = append(ops, lineOp{opEqual, len(a) - tail + i, len(b) - tail + i})
	}
	return ops, true
}

// myers is Myers' O((N+M)D) shortest edit script from x to y.
func myers(x, y []string) ([]lineOp, bool) {
	n, m := len(x), len(y)
	limit := min(n+m, maxDiffEdits)
	off := limit + 1
	v := make([]int, 2*limit+3)
	var trace [][]int
	end := -1
	for d := 0; d <= limit && end < 0; d++ {
		trace = append(trace, append([]int(nil), v[off-d:off+d+1]...))
		for k := -d; k <= d; k += 2 {
			var i int
			if k == -d || k != d && v[off+k-1] < v[off+k+1] {
				i = v[off+k+1]
			} else {
				i = v[off+k-1] + 1
			}
			j := i - k
			for i < n && j < m && x[i] == y[j] {
				i, j = i+1, j+1
			}
			v[off+k] = i
			if i >= n && j >= m {
				end = d
				break
			}
		}
	}
	if end < 0 {
		return nil, false
	}
	var rev []lineOp
	i, j := n, m
	for d := end; d > 0; d-- {
		prev := trace[d] // v as iteration d found it, for k in [-d, d]
		at := func(k int) int { return prev[k+d] }
		k := i - j
		var pk int
		if k == -d || k != d && at(k-1) < at(k+1) {
			pk = k + 1
		} else {
			pk = k - 1
		}
		pi := at(pk)
		snake := pi // where the diagonal after the move starts
		if pk == k-1 {
			snake = pi + 1
		}
		for i > snake {
			i, j = i-1, j-1
			rev = append(rev, lineOp{opEqual, i, j})
		}
		if pk == k+1 {
			j--
			rev = append(rev, lineOp{opInsert, i, j})
		} else {
			i--
			rev = append(rev, lineOp{opDelete, i, j})
		}
	}
	for i > 0 && j > 0 {
		i, j = i-1, j-1
		rev = append(rev, lineOp{opEqual, i, j})
	}
	for l, r := 0, len(rev)-1; l < r; l, r = l+1, r-1 {
		rev[l], rev[r] = rev[r], rev[l]
	}
	return rev, true
}

// writeHunks writes ops as unified hunks with diffContext lines of
// context, changes closer than twice that sharing a hunk, in the diff
// package's format; a and b start aOff and bOff lines into the files.
func writeHunks(out *strings.Builder, a, b []string, ops []lineOp, aOff, bOff int) {
	for i := 0; i < len(ops); {
		if ops[i].kind == opEqual {
			i++
			continue
		}
		start := max(i-diffContext, 0)
		end := i // one past the hunk's last change
		for k := i; k < len(ops); k++ {
			if ops[k].kind != opEqual {
				end = k + 1
			} else if k-end >= 2*diffContext {
				break
			}
		}
		stop := min(end+diffContext, len(ops))
		fromLine, toLine, fromCount, toCount := 0, 0, 0, 0
		for _, op := range ops[start:stop] {
			if op.kind != opInsert {
				if fromCount == 0 {
					fromLine = op.ai + 1
				}
				fromCount++
			}
			if op.kind != opDelete {
				if toCount == 0 {
					toLine = op.bi + 1
				}
				toCount++
			}
		}
		out.WriteString("@@")
		writeRange(out, " -", fromLine+aOff, fromCount, ops[start].ai+1+aOff)
		writeRange(out, " +", toLine+bOff, toCount, ops[start].bi+1+bOff)
		out.WriteString(" @@\n")
		for _, op := range ops[start:stop] {
			var line string
			switch op.kind {
			case opEqual:
				out.WriteByte(' ')
				line = a[op.ai]
			case opDelete:
				out.WriteByte('-')
				line = a[op.ai]
			case opInsert:
				out.WriteByte('+')
				line = b[op.bi]
			}
			out.WriteString(line)
			if !strings.HasSuffix(line, "\n") {
				out.WriteString("\n\\ No newline at end of file\n")
			}
		}
		i = stop
	}
}

// writeRange writes a hunk's range as the diff package does: "-12,5",
// "-12" for one line, "-0,0" for none at the start of the file.
func writeRange(out *strings.Builder, sign string, line, count, at int) {
	out.WriteString(sign)
	switch {
	case count > 1:
		out.WriteString(strconv.Itoa(line) + "," + strconv.Itoa(count))
	case count == 0 && at == 1:
		out.WriteString("0,0")
	case count == 0:
		out.WriteString(strconv.Itoa(at))
	default:
		out.WriteString(strconv.Itoa(line))
	}
}
