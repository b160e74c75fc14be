package textedit

import (
	"fmt"
	"strings"
)

// maxShown is how many lines a failure shows of a region or of old_string.
const maxShown = 10

// notFound explains a failed search so the model can retry at once:
// new_string already in the file (the edit may have been made), or the
// region closest to old_string with its invisible characters shown, and
// the layers tried.
func (f *File) notFound(old, new, oldStripped, newStripped string, numbered bool) *Error {
	if line, ok := f.alreadyApplied(oldStripped, newStripped); ok {
		return &Error{Reason: AlreadyApplied, Lines: []int{line}, Msg: fmt.Sprintf(
			"old_string was not found, but new_string is already in the file at line %d: the edit may already have been made; read the file to check before editing again", line)}
	}
	var b strings.Builder
	b.WriteString("old_string was not found in the file; nothing was changed. Layers tried: exact bytes, line endings, trailing whitespace, indentation, ")
	if numbered {
		b.WriteString("line-number prefixes, ")
	} else {
		b.WriteString("line-number prefixes (old_string has none), ")
	}
	b.WriteString("typographic punctuation.\n")
	var lines []int
	if start, n := f.closest(oldStripped); n > 0 {
		lines = []int{start}
		fmt.Fprintf(&b, "The closest region is at line %d (→ is a tab, ␍ a carriage return, · a trailing space):\n", start)
		all := strings.SplitAfter(f.text, "\n")
		for i := start - 1; i < min(start-1+n, start-1+maxShown, len(all)); i++ {
			fmt.Fprintf(&b, "%6d  %s\n", i+1, Visible(all[i]))
		}
	} else {
		b.WriteString("No line of the file resembles old_string's lines.\n")
	}
	b.WriteString("old_string, shown the same way:\n")
	for i, line := range strings.SplitAfter(old, "\n") {
		if i == maxShown {
			b.WriteString("        …\n")
			break
		}
		if line != "" {
			fmt.Fprintf(&b, "        %s\n", Visible(line))
		}
	}
	b.WriteString("Copy the lines from a fresh read_file, or replace them by line number with edit_region.")
	return &Error{Reason: NotFound, Lines: lines, Msg: b.String()}
}

// alreadyApplied reports where new is in the file, at the most lenient
// layer, when it says more than old: a new_string contained in
// old_string would be found wherever old_string's remains are.
func (f *File) alreadyApplied(old, new string) (int, bool) {
	nn := normalizeString(new, Punctuation)
	if strings.TrimSpace(nn) == "" || strings.Contains(normalizeString(old, Punctuation), nn) {
		return 0, false
	}
	for l := Exact; l <= Punctuation; l++ {
		if l == LineNumbers {
			continue
		}
		if c := f.find(new, l, false); len(c) > 0 {
			return lineAt(f.text, c[0].beg), true
		}
	}
	return 0, false
}

// maxAnchors is how many of old_string's lines closest compares from
// each end: enough to place any old_string a model sends, few enough
// that a failed search costs time in proportion to the file alone.
const maxAnchors = 32

// closest finds the lines of the file most like old's: the window with
// the most of old's anchor lines in place once every layer's
// normalization is applied, or failing that the line sharing the longest
// start with old's first line. It returns the window's first line and
// length, n = 0 for nothing alike.
//
// The anchors are the first maxAnchors distinct non-empty lines of old
// and the last maxAnchors, each at one place in old. Each file line equal
// to an anchor votes for the window starting that many lines above it:
// at most two votes a line, so the work is linear in the file whatever
// old holds (an old_string of one line repeated, compared at every place
// in a file of that line, would multiply the two lengths).
func (f *File) closest(old string) (start, n int) {
	want := strings.Split(normalizeString(strings.TrimSuffix(old, "\n"), Punctuation), "\n")
	have := strings.Split(normalizeString(f.text, Punctuation), "\n")
	at := make(map[string][]int, 2*maxAnchors)
	pick := func(j int, seen map[string]bool) {
		if w := want[j]; w != "" && !seen[w] && len(seen) < maxAnchors {
			seen[w] = true
			at[w] = append(at[w], j)
		}
	}
	head, tail := map[string]bool{}, map[string]bool{}
	for j := 0; j < len(want) && len(head) < maxAnchors; j++ {
		pick(j, head)
	}
	for j := len(want) - 1; j >= 0 && len(tail) < maxAnchors; j-- {
		if k := at[want[j]]; len(k) == 1 && k[0] == j {
			tail[want[j]] = true // already an anchor, at this very place
			continue
		}
		pick(j, tail)
	}
	votes := make([]int32, len(have))
	for i, h := range have {
		for _, j := range at[h] {
			if i-j >= 0 {
				votes[i-j]++
			}
		}
	}
	best, bestAt := 0, 0
	for start, n := range votes {
		if int(n) > best {
			best, bestAt = int(n), start
		}
	}
	if best > 0 {
		return bestAt + 1, len(want)
	}
	best = 0
	firstAt := 0
	for firstAt < len(want)-1 && want[firstAt] == "" {
		firstAt++
	}
	first := want[firstAt]
	for i, line := range have {
		p := commonPrefix(line, first)
		if p > best {
			best, bestAt = p, i
		}
	}
	if best < min(8, (len(first)+1)/2) || best == 0 {
		return 0, 0
	}
	// Show the window as if the best line held old's first non-empty line.
	return max(bestAt-firstAt, 0) + 1, len(want)
}

func commonPrefix(a, b string) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}

// Visible returns line with what a model cannot see in it made visible:
// a tab as →, a carriage return as ␍, each trailing space as ·. A final
// line feed is dropped.
func Visible(line string) string {
	line = strings.TrimSuffix(line, "\n")
	content := strings.TrimRight(line, "\r")
	crs := len(line) - len(content)
	body := strings.TrimRight(content, " ")
	trailing := len(content) - len(body)
	body = strings.ReplaceAll(body, "\t", "→")
	body = strings.ReplaceAll(body, "\r", "␍")
	return body + strings.Repeat("·", trailing) + strings.Repeat("␍", crs)
}
