// Command list_directory is the list_directory tool: a JSON listing of a
// directory, optionally recursive, that never follows symlinks and omits
// denied paths.
package main

import (
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/toolhost/toolhost/abi"
	"github.com/toolhost/toolhost/sdk"
)

type args struct {
	Path          string  `json:"path"`
	Depth         *uint32 `json:"depth"`
	IncludeHidden bool    `json:"include_hidden"`
	MaxEntries    *uint32 `json:"max_entries"`
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
    "max_entries": {"type": "integer", "minimum": 1, "maximum": 10000, "default": 1000, "description": "Stop after this many entries and set truncated."}
  },
  "additionalProperties": false
}`

func init() {
	sdk.Register(sdk.Tool[args]{
		Manifest: abi.Manifest{
			Name:         "list_directory",
			Version:      "1.0.0",
			Description:  `List a directory in the workspace. Returns JSON {"path", "entries": [{"name", "path", "type": "file|dir|symlink", "size", "modified"}], "truncated"} sorted by path. Symlinks are listed, not followed. A name that is not valid UTF-8 shows each bad byte as \xNN and has "invalid_utf8": true; such a file cannot be opened by name.`,
			Parameters:   []byte(schema),
			RiskLevel:    abi.RiskLow,
			TimeoutClass: abi.TimeoutFile,
			PathArgs:     []string{"path"},
			Capabilities: []abi.Capability{abi.CapFSList},
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
	var flags uint32
	if a.IncludeHidden {
		flags |= abi.ListHidden
	}
	dir := orRoot(a.Path)
	truncated, entries, err := sdk.List(dir, depth, maxEntries, flags)
	if err != nil {
		return "", err
	}
	out := render(dir, entries, truncated, c.Limits.OutputLimit())
	c.SelfLimited()
	return string(out), nil
}

// render builds the JSON by hand: encoding/json costs about ten times more
// inside the guest. Entries that would push the output past limit are
// dropped and truncated is set, so the result is always valid JSON.
func render(dir string, entries []abi.FileInfo, truncated bool, limit int64) []byte {
	const tail = `],"truncated":true}`
	out := make([]byte, 0, 64+len(entries)*96)
	out = append(out, `{"path":`...)
	out = sdk.AppendJSONString(out, dir)
	out = append(out, `,"entries":[`...)
	for i, e := range entries {
		mark := len(out)
		if i > 0 {
			out = append(out, ',')
		}
		out = appendEntry(out, e)
		if limit > 0 && int64(len(out)+len(tail)) > limit {
			out, truncated = out[:mark], true
			break
		}
	}
	out = append(out, `],"truncated":`...)
	out = strconv.AppendBool(out, truncated)
	return append(out, '}')
}

func appendEntry(out []byte, e abi.FileInfo) []byte {
	out = append(out, `{"name":`...)
	out = sdk.AppendJSONString(out, shown(base(e.Path)))
	out = append(out, `,"path":`...)
	out = sdk.AppendJSONString(out, shown(e.Path))
	if !utf8.ValidString(e.Path) {
		out = append(out, `,"invalid_utf8":true`...)
	}
	out = append(out, `,"type":"`...)
	out = append(out, e.Type.String()...)
	out = append(out, `","size":`...)
	out = strconv.AppendInt(out, e.Size, 10)
	out = append(out, `,"modified":"`...)
	out = time.Unix(0, e.ModTime).UTC().AppendFormat(out, time.RFC3339)
	return append(out, `"}`...)
}

// shown is a name as the listing gives it: a name that is not valid UTF-8
// cannot travel in JSON as it is, and replacing its bad bytes with U+FFFD
// would list different files under one name (and that of a real file
// named with U+FFFD), so each bad byte is written \xNN and the entry says
// invalid_utf8. Such a file cannot be named in a tool call.
func shown(name string) string {
	if utf8.ValidString(name) {
		return name
	}
	var b strings.Builder
	for i := 0; i < len(name); {
		r, size := utf8.DecodeRuneInString(name[i:])
		if r == utf8.RuneError && size == 1 {
			b.WriteString(`\x`)
			b.WriteString(strconv.FormatUint(uint64(name[i])|0x100, 16)[1:])
		} else {
			b.WriteString(name[i : i+size])
		}
		i += size
	}
	return b.String()
}

func base(p string) string {
	for i := len(p) - 1; i >= 0; i-- {
		if p[i] == '/' {
			return p[i+1:]
		}
	}
	return p
}
