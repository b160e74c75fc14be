// Command list_directory is the list_directory tool: a compact listing of
// a directory, optionally recursive, like ls (the same entries as JSON in
// the structured result), that never follows symlinks, omits denied
// paths, and counts what it left out (hidden names, and with
// respect_gitignore what the ignore files exclude).
package main

import (
	"strconv"
	"strings"
	"time"

	"github.com/toolhost/toolhost/abi"
	"github.com/toolhost/toolhost/internal/searchtext"
	"github.com/toolhost/toolhost/sdk"
)

type args struct {
	Path             string  `json:"path"`
	Depth            *uint32 `json:"depth"`
	IncludeHidden    bool    `json:"include_hidden"`
	MaxEntries       *uint32 `json:"max_entries"`
	RespectGitignore bool    `json:"respect_gitignore"`
}

const (
	defaultDepth      = 1
	maxDepth          = 16
	defaultMaxEntries = 1000
	maxMaxEntries     = 10000
)

const schema = `{
  "type": "object",
  "properties": {
    "path": {"type": "string", "default": ".", "description": "Directory, relative to the workspace root; default the root."},
    "depth": {"type": "integer", "minimum": 1, "maximum": 16, "default": 1, "description": "How many levels to descend; 1 lists only the directory itself."},
    "include_hidden": {"type": "boolean", "default": false, "description": "Include names starting with a dot."},
    "max_entries": {"type": "integer", "minimum": 1, "maximum": 10000, "default": 1000, "description": "Stop after this many entries and set truncated."},
    "respect_gitignore": {"type": "boolean", "default": false, "description": "Leave out what .gitignore, .ignore and .git/info/exclude exclude (counted in the result), as search and glob do."}
  },
  "additionalProperties": false
}`

func init() {
	sdk.Register(sdk.Tool[args]{
		Manifest: abi.Manifest{
			Name:         "list_directory",
			Version:      "1.0.0",
			Description:  `List a directory in the workspace, like ls: one line per entry sorted by path, "name/" for a directory, "name  size" for a file, "name@" for a symbolic link (listed, never followed), then a line with the count and what was left out (hidden names; with respect_gitignore, ignored ones). Deeper levels (depth) show paths below the directory. The structured result is JSON {"path", "entries": [{"name", "path", "type": "file|dir|symlink|other", "size", "modified"}], "truncated", "total", "skipped": {"hidden", "ignored"}}. A name that is not valid UTF-8 shows each bad byte as \xNN and has "invalid_utf8": true; such a file cannot be opened by name. To find files by pattern use glob; to find text use search.`,
			Parameters:   []byte(schema),
			RiskLevel:    abi.RiskLow,
			TimeoutClass: abi.TimeoutFile,
			PathArgs:     []string{"path"},
			Capabilities: []abi.Capability{abi.CapFSSearch},
			// It reports what it finds below the directory it was given.
			ReadsUnderPathArgs: true,
		},
		Summary: func(a args) (string, error) {
			s := "List " + orRoot(a.Path)
			if a.Depth != nil && *a.Depth > 1 {
				s += " depth " + strconv.Itoa(int(*a.Depth))
			}
			return s, nil
		},
		Handle: handle,
	})
}

func main() {}

func orRoot(p string) string {
	if p == "" {
		return "."
	}
	return p
}

func handle(c *sdk.Call, a args) (string, error) {
	depth, maxEntries := uint32(defaultDepth), uint32(defaultMaxEntries)
	if a.Depth != nil {
		depth = min(max(*a.Depth, 1), maxDepth)
	}
	if a.MaxEntries != nil {
		maxEntries = min(max(*a.MaxEntries, 1), maxMaxEntries)
	}
	dir := orRoot(a.Path)
	r, err := sdk.Search(abi.SearchRequest{Mode: abi.SearchList, Path: dir, Depth: int(depth), MaxResults: int(maxEntries),
		Hidden: a.IncludeHidden, Ignored: !a.RespectGitignore})
	if err != nil {
		return "", err
	}
	text, obj := render(dir, r, c.Limits.OutputLimit())
	c.SetStructured(obj)
	c.SelfLimited()
	return string(text), nil
}

// tailRoom is kept free of entries for the closing line and members.
const tailRoom = 512

// render builds the text and the structured JSON by hand (encoding/json
// costs about ten times more inside the guest). The host gives both
// together, so entries that would take the two past limit are dropped
// from both and truncated is set: the JSON stays valid and the text
// says how to see the rest.
func render(dir string, r abi.SearchResult, limit int64) (text, obj []byte) {
	truncated := r.Truncated
	text = make([]byte, 0, 32+len(r.Files)*24)
	obj = make([]byte, 0, 64+len(r.Files)*96)
	obj = append(obj, `{"path":`...)
	obj = sdk.AppendJSONString(obj, dir)
	obj = append(obj, `,"entries":[`...)
	prefix := dir + "/"
	if dir == "." {
		prefix = ""
	}
	shownN := 0
	for i, e := range r.Files {
		tm, om := len(text), len(obj)
		if i > 0 {
			obj = append(obj, ',')
		}
		obj = appendEntry(obj, e)
		text = appendLine(text, strings.TrimPrefix(e.Path, prefix), e)
		if limit > 0 && int64(len(text)+len(obj)+tailRoom) > limit {
			text, obj, truncated = text[:tm], obj[:om], true
			break
		}
		shownN++
	}
	obj = append(obj, `],"truncated":`...)
	obj = strconv.AppendBool(obj, truncated)
	obj = append(obj, `,"total":`...)
	obj = strconv.AppendInt(obj, int64(r.TotalMatches), 10)
	obj = append(obj, `,"skipped":{"hidden":`...)
	obj = strconv.AppendInt(obj, int64(r.Skipped.Hidden), 10)
	obj = append(obj, `,"ignored":`...)
	obj = strconv.AppendInt(obj, int64(r.Skipped.Ignored), 10)
	obj = append(obj, "}}"...)
	text = appendTotals(text, r, shownN, truncated)
	return text, obj
}

// appendLine appends one entry as ls shows it.
func appendLine(t []byte, name string, e abi.SearchFile) []byte {
	t = searchtext.AppendName(t, shown(name))
	switch e.Type {
	case "dir":
		t = append(t, '/')
	case "symlink":
		t = append(t, '@')
	case "file":
		t = append(t, "  "...)
		t = strconv.AppendInt(t, e.Size, 10)
	default:
		t = append(t, "  ("...)
		t = append(t, e.Type...)
		t = append(t, ')')
	}
	return append(t, '\n')
}

// appendTotals ends the text: how many entries, what was left out, and
// how to see more.
func appendTotals(t []byte, r abi.SearchResult, shownN int, truncated bool) []byte {
	if r.TotalMatches == 0 {
		t = append(t, "(empty)"...)
	} else {
		t = strconv.AppendInt(t, int64(shownN), 10)
		if truncated {
			t = append(t, " of "...)
			if r.TotalIsLowerBound {
				t = append(t, "at least "...)
			}
			t = strconv.AppendInt(t, int64(r.TotalMatches), 10)
		}
		if r.TotalMatches == 1 {
			t = append(t, " entry"...)
		} else {
			t = append(t, " entries"...)
		}
	}
	var left []string
	if r.Skipped.Hidden > 0 {
		left = append(left, strconv.Itoa(r.Skipped.Hidden)+" hidden (include_hidden:true shows them)")
	}
	if r.Skipped.Ignored > 0 {
		left = append(left, strconv.Itoa(r.Skipped.Ignored)+" ignored by .gitignore or .ignore (respect_gitignore:false shows them)")
	}
	if len(left) > 0 {
		t = append(t, "; left out: "...)
		t = append(t, strings.Join(left, ", ")...)
	}
	if truncated {
		t = append(t, "; truncated: raise max_entries (up to 10000), list a subdirectory, or lower depth"...)
	}
	return append(t, '\n')
}

func appendEntry(out []byte, e abi.SearchFile) []byte {
	out = append(out, `{"name":`...)
	out = sdk.AppendJSONString(out, shown(base(e.Path)))
	out = append(out, `,"path":`...)
	out = sdk.AppendJSONString(out, shown(e.Path))
	if e.InvalidUTF8 {
		// The host wrote each byte that is not UTF-8 as \xNN: replacing
		// them with U+FFFD would list different files under one name.
		// Such a file cannot be named in a tool call.
		out = append(out, `,"invalid_utf8":true`...)
	}
	if hasC1(e.Path) {
		out = append(out, `,"escaped":true`...)
	}
	out = append(out, `,"type":"`...)
	out = append(out, e.Type...)
	out = append(out, `","size":`...)
	out = strconv.AppendInt(out, e.Size, 10)
	out = append(out, `,"modified":"`...)
	out = time.Unix(0, e.ModTime).UTC().AppendFormat(out, time.RFC3339)
	return append(out, `"}`...)
}

// shown is a name as the structured listing gives it. A C1 control
// (U+0080 to U+009F) is written \u{XX}: the host strips terminal control
// sequences from every result, so one inside a name would cut the name
// short there, and the entry says escaped.
func shown(name string) string {
	if !hasC1(name) {
		return name
	}
	var b strings.Builder
	for _, r := range name {
		if r >= 0x80 && r <= 0x9f {
			b.WriteString(`\u{`)
			b.WriteString(strconv.FormatUint(uint64(r), 16))
			b.WriteByte('}')
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

func hasC1(s string) bool {
	for _, r := range s {
		if r >= 0x80 && r <= 0x9f {
			return true
		}
	}
	return false
}

func base(p string) string {
	for i := len(p) - 1; i >= 0; i-- {
		if p[i] == '/' {
			return p[i+1:]
		}
	}
	return p
}
