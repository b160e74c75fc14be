// Command list_directory is the list_directory tool: a compact listing of
// a directory, optionally recursive, like ls (and, when asked, the same
// entries as JSON in the structured result), that never follows symlinks, omits denied
// paths, and counts what it left out (hidden names, and with
// respect_gitignore what the ignore files exclude).
package main

import (
	"strconv"

	"github.com/toolhost/toolhost/abi"
	"github.com/toolhost/toolhost/sdk"
)

type args struct {
	Path             string  `json:"path"`
	Depth            *uint32 `json:"depth"`
	IncludeHidden    bool    `json:"include_hidden"`
	MaxEntries       *uint32 `json:"max_entries"`
	RespectGitignore bool    `json:"respect_gitignore"`
	Structured       bool    `json:"structured"`
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
    "respect_gitignore": {"type": "boolean", "default": false, "description": "Leave out what .gitignore, .ignore and .git/info/exclude exclude (counted in the result), as search and glob do."},
    "structured": {"type": "boolean", "default": false, "description": "Also return the entries as JSON in the structured result, with each one's modification time; the text already gives every name, kind and size in a tenth of the bytes."}
  },
  "additionalProperties": false
}`

func init() {
	sdk.Register(sdk.Tool[args]{
		Manifest: abi.Manifest{
			Name:         "list_directory",
			Version:      "1.0.0",
			Description:  `List a directory in the workspace, like ls: one line per entry sorted by path, "name/" for a directory, "name  size" for a file, "name@" for a symbolic link (listed, never followed), then a line with the count and what was left out (hidden names; with respect_gitignore, ignored ones). Deeper levels (depth) show paths below the directory. A name that is not valid UTF-8 shows each bad byte as \xNN; such a file cannot be opened by name. With structured, the structured result is JSON {"path", "entries": [{"name", "path", "type": "file|dir|symlink|other", "size", "modified", "invalid_utf8"?}], "truncated", "total", "skipped": {"hidden", "ignored"}}. To find files by pattern use glob; to find text use search.`,
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
	// The host shapes the listing: decoding a hundred entries from JSON
	// in this guest costs milliseconds, the text a few copies.
	text, obj, err := sdk.SearchRendered(abi.SearchRequest{Mode: abi.SearchList, Path: orRoot(a.Path), Depth: int(depth), MaxResults: int(maxEntries),
		Hidden: a.IncludeHidden, Ignored: !a.RespectGitignore, Render: abi.RenderListing, RenderStructured: a.Structured})
	if err != nil {
		return "", err
	}
	if len(obj) > 0 {
		c.SetStructured(obj)
	}
	c.SelfLimited()
	return string(text), nil
}
