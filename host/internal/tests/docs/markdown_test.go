package docs

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"
)

// block is one fenced code block of a Markdown file.
type block struct {
	line int    // line of the opening fence, from 1
	lang string // the info string's first word: sh, json, toml, ...
	// From the info string's other words:
	runnable bool     // "runnable": a command to run as written
	file     string   // "file=NAME": contents to write to NAME
	needs    []string // "needs=a,b": what the block needs beyond toolhost and Go
	body     string
}

// doc is a Markdown file of the repository, split into its fenced blocks
// and the prose around them.
type doc struct {
	path   string // relative to the repository root, with slashes
	blocks []block
	prose  []proseLine // lines outside fenced blocks
}

type proseLine struct {
	n    int
	text string
}

// parse reads a Markdown file. Fences are lines of three or more
// backticks, possibly indented (a block inside a list item); the body of an
// indented block loses that indentation.
func parse(t *testing.T, root, rel string) doc {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(rel)))
	if err != nil {
		t.Fatal(err)
	}
	d := doc{path: rel}
	lines := strings.Split(string(b), "\n")
	for i := 0; i < len(lines); i++ {
		trimmed := strings.TrimLeft(lines[i], " ")
		if !strings.HasPrefix(trimmed, "```") {
			d.prose = append(d.prose, proseLine{i + 1, lines[i]})
			continue
		}
		indent := len(lines[i]) - len(trimmed)
		fence := trimmed[:len(trimmed)-len(strings.TrimLeft(trimmed, "`"))]
		blk := infoString(strings.TrimSpace(trimmed[len(fence):]))
		blk.line = i + 1
		var body []string
		closed := false
		for i++; i < len(lines); i++ {
			if strings.TrimSpace(lines[i]) == fence {
				closed = true
				break
			}
			l := lines[i]
			if n := len(l) - len(strings.TrimLeft(l, " ")); n >= indent {
				l = l[indent:]
			} else {
				l = strings.TrimLeft(l, " ")
			}
			body = append(body, l)
		}
		if !closed {
			t.Errorf("%s:%d: code block never closed", rel, blk.line)
		}
		blk.body = strings.Join(body, "\n") + "\n"
		d.blocks = append(d.blocks, blk)
	}
	return d
}

func infoString(info string) block {
	var b block
	for i, w := range strings.Fields(info) {
		switch {
		case i == 0:
			b.lang = w
		case w == "runnable":
			b.runnable = true
		case strings.HasPrefix(w, "file="):
			b.file = strings.TrimPrefix(w, "file=")
		case strings.HasPrefix(w, "needs="):
			b.needs = strings.Split(strings.TrimPrefix(w, "needs="), ",")
		}
	}
	return b
}

var (
	codeSpan = regexp.MustCompile("`[^`]*`")
	// An inline link or image: [text](target) or [text](target "title").
	link = regexp.MustCompile(`\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)
)

// links returns the inline links of the prose, outside code spans.
func (d doc) links() []proseLine {
	var out []proseLine
	for _, l := range d.prose {
		for _, m := range link.FindAllStringSubmatch(codeSpan.ReplaceAllString(l.text, ""), -1) {
			out = append(out, proseLine{l.n, m[1]})
		}
	}
	return out
}

// anchors returns the fragment each heading of the file gets, as GitHub
// makes them: lower case, punctuation dropped, spaces to hyphens, a
// repeated one suffixed -1, -2, ...
func (d doc) anchors() map[string]bool {
	seen := map[string]int{}
	out := map[string]bool{}
	for _, l := range d.prose {
		if !strings.HasPrefix(l.text, "#") {
			continue
		}
		title := strings.TrimSpace(strings.TrimLeft(l.text, "#"))
		var b strings.Builder
		for _, r := range strings.ToLower(title) {
			switch {
			case r == ' ':
				b.WriteRune('-')
			case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
				b.WriteRune(r)
			}
		}
		a := b.String()
		if n := seen[a]; n > 0 {
			out[a+"-"+itoa(n)] = true
		} else {
			out[a] = true
		}
		seen[a]++
	}
	return out
}

func itoa(n int) string {
	if n < 10 {
		return string(rune('0' + n))
	}
	return itoa(n/10) + itoa(n%10)
}
