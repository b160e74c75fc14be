// Command search is the search tool: the lines of the files below a
// directory that hold a text or match an RE2 regex, found by the host
// natively (fs_search) with ripgrep's ignore rules, shown ripgrep-like
// with honest totals. The plugin checks and shapes the arguments and
// formats the result (internal/searchtext).
package main

import (
	"strings"

	"github.com/bmatcuk/doublestar/v4"

	"github.com/toolhost/toolhost/abi"
	"github.com/toolhost/toolhost/internal/searchtext"
	"github.com/toolhost/toolhost/sdk"
)

type args struct {
	Query          string   `json:"query"`
	IsRegex        bool     `json:"is_regex"`
	CaseSensitive  bool     `json:"case_sensitive"`
	Path           string   `json:"path"`
	IncludePaths   []string `json:"include_paths"`
	ExcludePaths   []string `json:"exclude_paths"`
	ContextLines   int      `json:"context_lines"`
	Output         string   `json:"output"`
	MaxResults     int      `json:"max_results"`
	IncludeHidden  bool     `json:"include_hidden"`
	IncludeIgnored bool     `json:"include_ignored"`
	Multiline      bool     `json:"multiline"`
}

// The bounds of max_results, as the host holds them: a content result
// carries lines, a files result only paths.
const (
	defaultContent = 200
	maxContent     = 2000
	defaultFiles   = 1000
	maxFiles       = 10000
	maxPatterns    = 100
	maxPatternLen  = 1024
)

const schema = `{
  "type": "object",
  "properties": {
    "query": {"type": "string", "minLength": 1, "description": "The text to find; an RE2 regex with is_regex."},
    "is_regex": {"type": "boolean", "default": false, "description": "Read query as a Go RE2 regex (no look-around or backreferences). Default false: a literal."},
    "case_sensitive": {"type": "boolean", "default": false, "description": "Match case exactly. Default false: case-insensitive."},
    "path": {"type": "string", "default": ".", "description": "Directory (or one file) to search, relative to the workspace root; default the root."},
    "include_paths": {"type": "array", "maxItems": 100, "items": {"type": "string", "minLength": 1, "maxLength": 1024}, "description": "Search only files matching one of these globs (relative to path; ** any depth, {a,b} either; a glob without a slash matches the file name at any depth, e.g. *.go)."},
    "exclude_paths": {"type": "array", "maxItems": 100, "items": {"type": "string", "minLength": 1, "maxLength": 1024}, "description": "Skip files and directories matching any of these globs (same form as include_paths, e.g. vendor/** or *_test.go)."},
    "context_lines": {"type": "integer", "minimum": 0, "maximum": 10, "default": 0, "description": "Lines shown before and after each match (content output). Default 0."},
    "output": {"enum": ["content", "files", "count"], "default": "content", "description": "content: matching lines as path:line:col: text. files: each file with its match count (where is this used?). count: only the totals (how many?). Default content."},
    "max_results": {"type": "integer", "minimum": 1, "maximum": 10000, "description": "Most lines (content, default 200, at most 2000) or files (files, default 1000, at most 10000) returned; the totals still count the rest."},
    "include_hidden": {"type": "boolean", "default": false, "description": "Also search names starting with a dot (never .git). Default false."},
    "include_ignored": {"type": "boolean", "default": false, "description": "Also search what .gitignore, .ignore and .git/info/exclude leave out (node_modules, build output). Default false."},
    "multiline": {"type": "boolean", "default": false, "description": "Let the query match across lines (a regex's \\n or \\s); a match is shown at the line it starts on. Default false."}
  },
  "required": ["query"],
  "additionalProperties": false
}`

const outputSchema = `{
  "type": "object",
  "properties": {
    "matches": {"type": "array", "description": "The matching lines shown (output content), sorted by path then line.", "items": {
      "type": "object",
      "properties": {
        "path": {"type": "string"},
        "line": {"type": "integer", "minimum": 1},
        "column": {"type": "integer", "minimum": 1, "description": "1-based byte column of the first match on the line."},
        "match_text": {"type": "string", "description": "What the first match on the line matched."},
        "before": {"type": "array", "items": {"type": "string"}, "description": "Context lines before, with context_lines."},
        "after": {"type": "array", "items": {"type": "string"}, "description": "Context lines after, with context_lines."}
      },
      "required": ["path", "line", "column", "match_text"],
      "additionalProperties": false}},
    "files": {"type": "array", "description": "The files with matches shown (output files), sorted by path.", "items": {
      "type": "object",
      "properties": {"path": {"type": "string"}, "matches": {"type": "integer", "minimum": 1, "description": "Matching lines in the file."}},
      "required": ["path", "matches"],
      "additionalProperties": false}},
    "files_searched": {"type": "integer", "minimum": 0},
    "files_matched": {"type": "integer", "minimum": 0},
    "total_matches": {"type": "integer", "minimum": 0, "description": "Matching lines in all, shown or not."},
    "total_is_lower_bound": {"type": "boolean", "description": "The deadline or the scan budget stopped the search: the totals count what was searched."},
    "skipped": {"type": "object", "description": "Paths left out, per reason; a directory counts once.", "properties": {
      "ignored": {"type": "integer", "minimum": 0}, "hidden": {"type": "integer", "minimum": 0},
      "binary": {"type": "integer", "minimum": 0}, "too_large": {"type": "integer", "minimum": 0}},
      "required": ["ignored", "hidden", "binary", "too_large"], "additionalProperties": false},
    "truncated": {"type": "boolean", "description": "Some matches or files were left out of the list."}
  },
  "required": ["files_searched", "files_matched", "total_matches", "total_is_lower_bound", "skipped", "truncated"],
  "additionalProperties": false
}`

func init() {
	sdk.Register(sdk.Tool[args]{
		Manifest: abi.Manifest{
			Name:    "search",
			Version: "1.0.0",
			Description: "Search the contents of the files below a directory, like ripgrep: a literal text, or an RE2 regex with is_regex; case-insensitive unless case_sensitive. " +
				"output content (default) shows matching lines as path:line:col: text (context lines as path-line- text); files lists each file with its match count, to see where something is used; count gives only the totals. " +
				"Skips what .gitignore, .ignore and .git/info/exclude ignore, hidden names, binary files and files over the scan limit, and counts each. " +
				"Results are sorted by path, then line. The totals are honest: the last line says how many lines matched in all and in how many files, how many files were searched and skipped and why, and when results were left out, what to change to see them. " +
				"To find files by name, use glob.",
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
	return "Search for " + quote(a.Query) + " in " + orRoot(a.Path), nil
}

// quote quotes a query for an approval, cut so that a long one does not
// fill the prompt.
func quote(q string) string {
	const most = 80
	if len(q) > most {
		cut := most
		for cut > 0 && q[cut]&0xc0 == 0x80 {
			cut--
		}
		q = q[:cut] + "…"
	}
	return `"` + q + `"`
}

func orRoot(p string) string {
	if p == "" {
		return "."
	}
	return p
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
	text, obj := searchtext.Search(r, req.Mode, req.ContextLines, sc, c.Limits.OutputLimit())
	c.SetStructured(obj)
	c.SelfLimited()
	return text, nil
}

// request checks a's values the schema cannot and shapes them into the
// host's request, with the scope the totals' hints need.
func request(a args) (abi.SearchRequest, searchtext.Scope, error) {
	if a.Query == "" {
		return abi.SearchRequest{}, searchtext.Scope{}, sdk.BadArgs("query is empty: give the text (or, with is_regex, the regex) to find")
	}
	mode := a.Output
	def, most := defaultContent, maxContent
	switch mode {
	case "", abi.SearchContent:
		mode = abi.SearchContent
	case abi.SearchFiles, abi.SearchCount:
		def, most = defaultFiles, maxFiles
	default:
		return abi.SearchRequest{}, searchtext.Scope{}, sdk.BadArgs("output %q is not known: send content, files or count", a.Output)
	}
	if a.ContextLines < 0 || a.ContextLines > 10 {
		return abi.SearchRequest{}, searchtext.Scope{}, sdk.BadArgs("context_lines %d is out of range: send 0 to 10", a.ContextLines)
	}
	for _, g := range []struct {
		name string
		v    []string
	}{{"include_paths", a.IncludePaths}, {"exclude_paths", a.ExcludePaths}} {
		if err := checkGlobs(g.name, g.v); err != nil {
			return abi.SearchRequest{}, searchtext.Scope{}, err
		}
	}
	n := def
	if a.MaxResults > 0 {
		n = min(a.MaxResults, most)
	}
	req := abi.SearchRequest{
		Mode:          mode,
		Path:          orRoot(a.Path),
		Query:         a.Query,
		Regex:         a.IsRegex,
		CaseSensitive: a.CaseSensitive,
		Multiline:     a.Multiline,
		Include:       a.IncludePaths,
		Exclude:       a.ExcludePaths,
		MaxResults:    n,
		Hidden:        a.IncludeHidden,
		Ignored:       a.IncludeIgnored,
	}
	if mode == abi.SearchContent {
		req.ContextLines = a.ContextLines
	}
	return req, searchtext.Scope{MaxResults: n, MaxAllowed: most, Hidden: a.IncludeHidden, Ignored: a.IncludeIgnored}, nil
}

// checkGlobs checks the globs of the argument name, so that a bad one is
// named as the model sent it.
func checkGlobs(name string, globs []string) error {
	if len(globs) > maxPatterns {
		return sdk.BadArgs("%s has %d globs, more than %d: merge them with {a,b} or narrow path", name, len(globs), maxPatterns)
	}
	for i, g := range globs {
		switch {
		case g == "":
			return sdk.BadArgs("%s[%d] is empty: send a glob such as *.go or src/**", name, i)
		case len(g) > maxPatternLen:
			return sdk.BadArgs("%s[%d] is %d bytes, more than %d", name, i, len(g), maxPatternLen)
		case strings.HasPrefix(g, "/") || !doublestar.ValidatePattern(g):
			return sdk.BadArgs("%s[%d] %q is not a valid glob relative to path: use * ? [abc] {a,b} and ** (any depth), e.g. src/**/*.go", name, i, g)
		case dotDot(g):
			return sdk.BadArgs("%s[%d] %q has a .. component, yet globs match only below path: set path to the directory instead", name, i, g)
		}
	}
	return nil
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
