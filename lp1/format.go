package lp1

import (
	"strconv"
	"strings"
)

// String formats p as LP1 text with LF line endings: paths quoted when
// needed, block lines dot-stuffed. Parse(p.String()) yields p again (up to
// patch line numbers) as long as no path or line contains CR or LF, which
// LP1 cannot express.
func (p *Patch) String() string {
	var b strings.Builder
	b.WriteString("LP1\n")
	for _, s := range p.Sections {
		b.WriteString("F " + FormatPath(s.Path) + "\n")
		for _, op := range s.Ops {
			writeOp(&b, op)
		}
	}
	b.WriteString("END\n")
	return b.String()
}

func writeOp(b *strings.Builder, op Op) {
	b.WriteByte(byte(op.Kind))
	switch {
	case op.Kind == Newline && op.FinalNewline:
		b.WriteString(" +")
	case op.Kind == Newline:
		b.WriteString(" -")
	case op.Occ > 0:
		b.WriteString(" " + strconv.Itoa(op.Occ))
	}
	b.WriteByte('\n')
	if op.Kind.hasFind() {
		writeBlock(b, op.Find)
	}
	if op.Kind.hasNew() {
		writeBlock(b, op.New)
	}
}

func writeBlock(b *strings.Builder, lines []string) {
	for _, l := range lines {
		if strings.HasPrefix(l, ".") {
			b.WriteByte('.')
		}
		b.WriteString(l + "\n")
	}
	b.WriteString(".\n")
}

// FormatPath writes path for an F line: bare when it can be, otherwise in
// double quotes with '"' and '\' escaped.
func FormatPath(path string) string {
	if path != "" && !strings.ContainsAny(path, " \t\"") {
		return path
	}
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`)
	return `"` + r.Replace(path) + `"`
}
