package textedit

import "strings"

// tabWidth is the columns a tab counts for when comparing indentation.
// Any width would do for a file indented with tabs alone; 4 is the most
// common and keeps a tab equal to the most common unit of spaces.
const tabWidth = 4

// reindent maps indentation in old_string's style to the file's, as found
// by comparing old_string's lines with the lines they matched.
type reindent struct {
	byLevel  bool // levels (widths divided by each side's unit), else columns
	shift    int  // levels or columns added
	unitOld  int
	unitFile int
	tabs     bool // the file indents with tabs
}

// indentOf is the run of spaces and tabs that starts s.
func indentOf(s string) string {
	i := 0
	for i < len(s) && isBlank(s[i]) {
		i++
	}
	return s[:i]
}

// width is indent's width in columns.
func width(indent string) int {
	w := 0
	for i := 0; i < len(indent); i++ {
		if indent[i] == '\t' {
			w += tabWidth
		} else {
			w++
		}
	}
	return w
}

func gcd(a, b int) int {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

// matchIndent decides whether the file lines matched by old's lines keep
// old's relative indentation: every line shifted by the same number of
// columns, or by the same number of levels once each side's unit (tab or
// n spaces) is known. first is whether the match starts at the start of
// a line; if not, old's first line continues a line and its indentation
// is not compared. ok is false for lines indented differently relative
// to each other (in Python that is another program).
func matchIndent(oldLines, fileLines []string, first bool, fileUsesTabs func() bool) (r reindent, ok bool) {
	if len(oldLines) != len(fileLines) {
		return r, false
	}
	var wo, wf []int
	tabs, spaces := 0, 0
	for k := range oldLines {
		if (k == 0 && !first) || strings.TrimSpace(oldLines[k]) == "" {
			continue
		}
		fi := indentOf(fileLines[k])
		wo = append(wo, width(indentOf(oldLines[k])))
		wf = append(wf, width(fi))
		switch {
		case strings.HasPrefix(fi, "\t"):
			tabs++
		case fi != "":
			spaces++
		}
	}
	switch {
	case tabs > spaces:
		r.tabs = true
	case tabs == 0 && spaces == 0:
		r.tabs = fileUsesTabs()
	}
	if len(wo) == 0 {
		return r, true
	}
	r.shift = wf[0] - wo[0]
	same := true
	for k := range wo {
		if wf[k]-wo[k] != r.shift {
			same = false
			break
		}
	}
	if same {
		return r, true
	}
	for k := range wo {
		r.unitOld = gcd(r.unitOld, wo[k])
		r.unitFile = gcd(r.unitFile, wf[k])
	}
	if r.unitOld == 0 || r.unitFile == 0 {
		return r, false
	}
	r.byLevel = true
	r.shift = wf[0]/r.unitFile - wo[0]/r.unitOld
	for k := range wo {
		if wf[k]/r.unitFile-wo[k]/r.unitOld != r.shift {
			return r, false
		}
	}
	return r, true
}

// apply re-indents text (new_string, LF line endings) from old_string's
// style to the file's. The first line is left as it is when the match
// starts inside a line.
func (r reindent) apply(text string, first bool) string {
	lines := strings.Split(text, "\n")
	for k, line := range lines {
		if k == 0 && !first {
			continue
		}
		if strings.TrimSpace(line) == "" {
			lines[k] = strings.TrimLeft(line, " \t")
			continue
		}
		ind := indentOf(line)
		w := width(ind)
		var nw int
		if r.byLevel {
			nw = (w/r.unitOld+r.shift)*r.unitFile + w%r.unitOld
		} else {
			nw = w + r.shift
		}
		lines[k] = r.render(max(nw, 0)) + line[len(ind):]
	}
	return strings.Join(lines, "\n")
}

// render is an indentation w columns wide in the file's style.
func (r reindent) render(w int) string {
	if r.tabs {
		return strings.Repeat("\t", w/tabWidth) + strings.Repeat(" ", w%tabWidth)
	}
	return strings.Repeat(" ", w)
}

// usesTabs reports whether more of text's indented lines start with a
// tab than with a space.
func usesTabs(text string) bool {
	tabs, spaces := 0, 0
	for line := range strings.Lines(text) {
		switch {
		case strings.HasPrefix(line, "\t"):
			tabs++
		case strings.HasPrefix(line, " "):
			spaces++
		}
	}
	return tabs > spaces
}
