package textedit

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
)

// Result is an edit that was made.
type Result struct {
	Replacements int
	// Start and End are the first and last line, 1-based, of the text
	// the edit wrote, in the file as it is now; End is Start when the
	// edit only removed text.
	Start, End int
	Layer      Layer // zero for a region edit
	// BOM is set when a leading U+FEFF of old_string, new_string or a
	// region's content, at the start of a file with a byte order mark,
	// was taken as that mark: matched, kept once, never written twice.
	BOM bool
}

// candidate is one place old_string matched: the bytes to replace and,
// from the Indentation layer on, how to re-indent new_string for it.
type candidate struct {
	beg, end int
	first    bool // the match starts at the start of a line
	indent   reindent
}

// Replace replaces old with new in the file: the one place old occurs,
// or with all every place. It tries the layers in order and uses the
// first that finds old; a layer that finds it in several places is an
// error unless all. On error the file is unchanged.
func (f *File) Replace(old, new string, all bool) (Result, error) {
	if f.cr {
		old, new = crToLF(old), crToLF(new)
	}
	old, bomOld := f.cutBOM(old)
	switch {
	case old == "" && bomOld:
		return Result{}, &Error{Reason: Empty, Msg: "old_string is only the file's byte order mark (U+FEFF), which the edit tools keep; give the text to replace after it; to remove the mark, rewrite the file with write_file"}
	case old == "":
		return Result{}, &Error{Reason: Empty, Msg: "old_string is empty, and an edit needs text to find; to create a file or replace its whole content, use write_file"}
	case old == new:
		return Result{}, &Error{Reason: NoChange, Msg: "old_string and new_string are the same, so there is nothing to do; the file is unchanged"}
	}
	oldStripped, numbered := stripLineNumbers(old)
	newStripped := new
	bomStripped := bomOld
	if numbered {
		newStripped = stripNewLineNumbers(new)
		// "1→" then the mark: read_file shows the mark after the number.
		var cut bool
		oldStripped, cut = f.cutBOM(oldStripped)
		bomStripped = bomStripped || cut
	}
	for l := Exact; l <= Punctuation; l++ {
		o, n, atStart := old, new, bomOld
		if l >= LineNumbers && numbered {
			o, n, atStart = oldStripped, newStripped, bomStripped
		}
		switch {
		case l == LineEndings && !strings.Contains(f.text, "\r") && !strings.Contains(old, "\r"), l == LineNumbers && !numbered:
			continue // the same text as the layer before: nothing new to find
		}
		cands := f.find(o, l, l >= LineNumbers && numbered)
		if atStart {
			// old_string began with the mark: it is at the start of the
			// file or nowhere.
			cands = slices.DeleteFunc(cands, func(c candidate) bool { return c.beg != 0 })
		}
		if len(cands) == 0 {
			continue
		}
		if len(cands) > 1 && !all {
			return Result{}, f.ambiguous(l, cands)
		}
		res := f.apply(cands, n, l)
		res.BOM = res.BOM || atStart
		return res, nil
	}
	return Result{}, f.notFound(old, new, oldStripped, newStripped, numbered)
}

// find returns every place layer l finds old, in order, none overlapping;
// with numbered (old's lines had a reader's numbers) only places that
// start a line, as numbered lines are whole.
func (f *File) find(old string, l Layer, numbered bool) []candidate {
	var out []candidate
	if l == Exact {
		for off := 0; ; {
			i := strings.Index(f.text[off:], old)
			if i < 0 {
				return out
			}
			beg := off + i
			out = append(out, candidate{beg: beg, end: beg + len(old), first: beg == 0 || f.text[beg-1] == '\n'})
			off = beg + len(old)
		}
	}
	nold := normalizeString(old, l)
	if strings.TrimSpace(nold) == "" {
		return nil // only blanks: every layer from here on would find them anywhere
	}
	nt := normalize(f.text, l)
	var oldLines []string
	if l >= Indentation {
		oldLines = strings.Split(strings.ReplaceAll(old, "\r\n", "\n"), "\n")
	}
	tabs := func() bool { return usesTabs(f.text) }
	// An old_string that starts with indentation starts a line: once
	// indentation is set aside, it must not match the end of another
	// ("\tx := 1" inside "max := 1").
	lineStart := numbered || l >= Indentation && old != "" && isBlank(old[0])
	lastEnd := 0 // where the last candidate ends in the text
	// A place whose indentation does not fit is passed by one byte, so a
	// file of near matches (the same lines, indented unevenly) would cost
	// its length times old's. Past a budget of bytes looked at in
	// rejected places, the layer finds nothing: never fewer places than
	// there are, which could make a repeated old_string look unique.
	rejected, budget := 0, 4*len(f.text)+1<<16
	for off := 0; off < len(nt.s); {
		i := bytes.Index(nt.s[off:], []byte(nold))
		if i < 0 {
			break
		}
		s, e := off+i, off+i+len(nold)
		if nt.splits(s) || nt.splits(e) || lineStart && s > 0 && nt.s[s-1] != '\n' {
			off = s + 1 // inside what one character folded to ("…" to "...")
			continue
		}
		c := candidate{beg: nt.beg[s], end: nt.end[e-1]}
		if l >= TrailingSpace && (e == len(nt.s) || nt.s[e] == '\n') {
			for c.end < len(f.text) && isBlank(f.text[c.end]) {
				c.end++
			}
		}
		if l >= Indentation && (s == 0 || nt.s[s-1] == '\n') {
			// Back to the line's start, but not into the match before,
			// which may have taken this line's blanks as its trailing ones.
			for c.beg > lastEnd && isBlank(f.text[c.beg-1]) {
				c.beg--
			}
		}
		c.first = c.beg == 0 || f.text[c.beg-1] == '\n'
		if l >= Indentation {
			fileLines := strings.Split(strings.ReplaceAll(f.text[c.beg:c.end], "\r\n", "\n"), "\n")
			r, ok := matchIndent(oldLines, fileLines, c.first, tabs)
			if !ok {
				if rejected += c.end - c.beg; rejected > budget {
					return nil
				}
				off = s + 1
				continue
			}
			c.indent = r
		}
		out = append(out, c)
		off, lastEnd = e, c.end
	}
	return out
}

// apply replaces every candidate with new and reports where the new
// text is.
func (f *File) apply(cands []candidate, new string, l Layer) Result {
	new = strings.ReplaceAll(new, "\r\n", "\n")
	var b strings.Builder
	b.Grow(len(f.text) + len(cands)*len(new))
	res := Result{Replacements: len(cands), Layer: l}
	prev, line := 0, 1
	for k, c := range cands {
		chunk := f.text[prev:c.beg]
		line += countLF(chunk)
		b.WriteString(chunk)
		repl := new
		if c.beg == 0 {
			var cut bool
			repl, cut = f.cutBOM(repl)
			res.BOM = res.BOM || cut
		}
		if l >= Indentation {
			repl = c.indent.apply(repl, c.first)
		}
		repl = f.fromLF(repl)
		if repl != f.text[c.beg:c.end] {
			f.modified = true
		}
		b.WriteString(repl)
		start := line
		n := strings.Count(repl, "\n")
		end := start + n
		if strings.HasSuffix(repl, "\n") && n > 0 {
			end--
		}
		if k == 0 {
			res.Start = start
		}
		res.End = end
		line += n
		prev = c.end
	}
	b.WriteString(f.text[prev:])
	first, last := cands[0], cands[len(cands)-1]
	f.wrote(first.beg, last.end, b.Len()-first.beg-(len(f.text)-last.end))
	f.text = b.String()
	return res
}

// ambiguous is the error of a layer that found old_string in several
// places.
func (f *File) ambiguous(l Layer, cands []candidate) *Error {
	lines := make([]int, len(cands))
	strs := make([]string, len(cands))
	for i, c := range cands {
		lines[i] = lineAt(f.text, c.beg)
		strs[i] = fmt.Sprint(lines[i])
	}
	how := "exactly"
	if l != Exact {
		how = "(" + strings.TrimPrefix(l.Phrase(), "matched ") + ")"
	}
	return &Error{Reason: Ambiguous, Lines: lines, Msg: fmt.Sprintf(
		"old_string matches %d places %s, starting at lines %s; nothing was changed; add lines around it to old_string so it matches one place, or set replace_all to change every one",
		len(cands), how, strings.Join(strs, ", "))}
}
