// Command glob is the glob tool: the files below a directory whose path
// matches doublestar patterns, found by the host natively (fs_search)
// with ripgrep's ignore rules, one path a line with honest totals. The
// plugin checks and shapes the patterns and formats the result
// (internal/searchtext).
package main

import (
	"strings"

	"github.com/bmatcuk/doublestar/v4"

	"github.com/toolhost/toolhost/abi"
	"github.com/toolhost/toolhost/internal/searchtext"
	"github.com/toolhost/toolhost/sdk"
)

type args struct {
	Patterns       []string `json:"patterns"`
	Path           string   `json:"path"`
	MaxResults     int      `json:"max_results"`
	IncludeHidden  bool     `json:"include_hidden"`
	IncludeIgnored bool     `json:"include_ignored"`
	Sort           string   `json:"sort"`
}

const (
	defaultResults = 1000
	maxResults     = 10000
	maxPatterns    = 100
	maxPatternLen  = 1024
)

const schema = `{
  "type": "object",
  "properties": {
    "patterns": {"type": "array", "minItems": 1, "maxItems": 100, "items": {"type": "string", "minLength": 1, "maxLength": 1024}, "description": "Globs matched against each file's path relative to path: * within a name, ** any depth, ? one character, [abc], {a,b}; e.g. **/*.go, src/**/*_test.go, *.{ts,tsx}. A pattern starting with ! excludes what it matches (!vendor/**)."},
    "path": {"type": "string", "default": ".", "description": "Directory to look in, relative to the workspace root; default the root."},
    "max_results": {"type": "integer", "minimum": 1, "maximum": 10000, "default": 1000, "description": "Most paths returned; the total still counts the rest."},
    "include_hidden": {"type": "boolean", "default": false, "description": "Also match names starting with a dot (never .git). Default false."},
    "include_ignored": {"type": "boolean", "default": false, "description": "Also match what .gitignore, .ignore and .git/info/exclude leave out. Default false."},
    "sort": {"enum": ["path", "mtime"], "default": "path", "description": "path: sorted by path. mtime: most recently modified first. Default path."}
  },
  "required": ["patterns"],
  "additionalProperties": false
}`

const outputSchema = `{
  "type": "object",
  "properties": {
    "files": {"type": "array", "items": {
      "type": "object",
      "properties": {
        "path": {"type": "string"},
        "size": {"type": "integer", "minimum": 0, "description": "Bytes."},
        "mtime": {"type": "string", "description": "Modification time, RFC 3339, UTC."},
        "type": {"enum": ["file", "dir", "symlink", "other"], "description": "A symbolic link is listed, never followed."}
      },
      "required": ["path", "size", "mtime", "type"],
      "additionalProperties": false}},
    "total": {"type": "integer", "minimum": 0, "description": "Matching paths in all, returned or not."},
    "total_is_lower_bound": {"type": "boolean", "description": "The deadline stopped the walk: total counts what was walked."},
    "skipped": {"type": "object", "description": "Paths left out, per reason; a directory counts once.", "properties": {
      "ignored": {"type": "integer", "minimum": 0}, "hidden": {"type": "integer", "minimum": 0},
      "binary": {"type": "integer", "minimum": 0}, "too_large": {"type": "integer", "minimum": 0}},
      "required": ["ignored", "hidden", "binary", "too_large"], "additionalProperties": false},
    "truncated": {"type": "boolean", "description": "Some matching paths were left out of files."}
  },
  "required": ["files", "total", "total_is_lower_bound", "skipped", "truncated"],
  "additionalProperties": false
}`

func init() {
	sdk.Register(sdk.Tool[args]{
		Manifest: abi.Manifest{
			Name:    "glob",
			Version: "1.0.0",
			Description: "Find files by path pattern (**/*.go, src/**/*_test.go, *.{ts,tsx}; ! excludes), below a directory. " +
				"Skips what .gitignore, .ignore and .git/info/exclude ignore and hidden names unless asked, and counts each. " +
				"Returns one path a line, sorted by path or with sort mtime most recently modified first, then a totals line that says how many matched in all and, when some were left out, what to change to see them. " +
				"To search file contents, use search.",
			Parameters:         []byte(schema),
			OutputSchema:       []byte(outputSchema),
			RiskLevel:          abi.RiskLow,
			TimeoutClass:       abi.TimeoutFile,
			PathArgs:           []string{"path"},
			ReadsUnderPathArgs: true,
			Idempotent:         true,
			Capabilities:       []abi.Capability{abi.CapFSSearch},
		},
		Summary: summary,
		Handle:  handle,
	})
}

func main() {}

func summary(a args) (string, error) {
	p := orRoot(a.Path)
	pats := strings.Join(a.Patterns, " ")
	if len(pats) > 120 {
		cut := 120
		for cut > 0 && pats[cut]&0xc0 == 0x80 {
			cut--
		}
		pats = pats[:cut] + "…"
	}
	return "Find files matching " + pats + " in " + p, nil
}

func handle(c *sdk.Call, a args) (string, error) {
	req, sc, err := request(a)
	if err != nil {
		return "", err
	}
	r, err := sdk.Search(req)
	if err != nil {
		return "", err
	}
	text, obj := searchtext.Glob(r, sc, req.SortMTime, c.Limits.OutputLimit())
	c.SetStructured(obj)
	c.SelfLimited()
	return text, nil
}

// request checks the patterns, splits the ! ones off as exclusions and
// shapes the host's request.
func request(a args) (abi.SearchRequest, searchtext.Scope, error) {
	if len(a.Patterns) == 0 {
		return abi.SearchRequest{}, searchtext.Scope{}, sdk.BadArgs("patterns is empty: send at least one glob, e.g. **/*.go")
	}
	if len(a.Patterns) > maxPatterns {
		return abi.SearchRequest{}, searchtext.Scope{}, sdk.BadArgs("patterns has %d globs, more than %d: merge them with {a,b}", len(a.Patterns), maxPatterns)
	}
	var include, exclude []string
	for i, p := range a.Patterns {
		g, neg := strings.CutPrefix(p, "!")
		switch {
		case g == "":
			return abi.SearchRequest{}, searchtext.Scope{}, sdk.BadArgs("patterns[%d] %q is empty: send a glob such as **/*.go, or !glob to exclude", i, p)
		case len(p) > maxPatternLen:
			return abi.SearchRequest{}, searchtext.Scope{}, sdk.BadArgs("patterns[%d] is %d bytes, more than %d", i, len(p), maxPatternLen)
		case strings.HasPrefix(g, "/") || !doublestar.ValidatePattern(g):
			return abi.SearchRequest{}, searchtext.Scope{}, sdk.BadArgs("patterns[%d] %q is not a valid glob relative to path: use * ? [abc] {a,b} and ** (any depth), e.g. src/**/*.go", i, p)
		case dotDot(g):
			return abi.SearchRequest{}, searchtext.Scope{}, sdk.BadArgs("patterns[%d] %q has a .. component, yet patterns match only below path: set path to the directory instead", i, p)
		case neg:
			exclude = append(exclude, g)
		default:
			include = append(include, g)
		}
	}
	if len(include) == 0 {
		// Only exclusions: everything else matches.
		include = []string{"**"}
	}
	n := defaultResults
	if a.MaxResults > 0 {
		n = min(a.MaxResults, maxResults)
	}
	var byMTime bool
	switch a.Sort {
	case "", "path":
	case "mtime":
		byMTime = true
	default:
		return abi.SearchRequest{}, searchtext.Scope{}, sdk.BadArgs("sort %q is not known: send path or mtime", a.Sort)
	}
	req := abi.SearchRequest{
		Mode:       abi.SearchGlob,
		Path:       orRoot(a.Path),
		Include:    include,
		Exclude:    exclude,
		MaxResults: n,
		Hidden:     a.IncludeHidden,
		Ignored:    a.IncludeIgnored,
		SortMTime:  byMTime,
	}
	return req, searchtext.Scope{MaxResults: n, MaxAllowed: maxResults, Hidden: a.IncludeHidden, Ignored: a.IncludeIgnored, Glob: true}, nil
}

// dotDot reports a glob with a ".." component, which no path below the
// searched directory can match.
func dotDot(g string) bool {
	for _, c := range strings.Split(g, "/") {
		if c == ".." {
			return true
		}
	}
	return false
}

// orRoot is the directory searched: an absent path is the workspace
// root, which the host is sent as ".".
func orRoot(p string) string {
	if p == "" {
		return "."
	}
	return p
}
