// Package search walks a directory of the sandbox and matches file
// contents natively, for the host function fs_search
// (abi.SearchRequest): the search, glob and list_directory tools.
//
// The walk is ripgrep's: directories in name order, depth first (path
// order compared component by component), the ignore files applied
// (package ignore), names starting with a dot left out unless asked,
// .git never entered, symbolic links reported and never followed, and
// every entry checked against the sandbox's denied paths with the same
// canonical path every other read is checked with. A denied entry is
// neither searched nor counted: its existence is not revealed. Files are
// read whole, at most the scan limit, on every core, and the results are
// merged back into path order, so the answer does not depend on timing.
//
// What a search may cost is bounded by its Options, never by the tree:
// the scan limit per file, the scan budget in all, the output limit for
// what it keeps, and the context's deadline, which stops it with what
// it has (abi.SearchResult.TotalIsLowerBound).
package search

import (
	"context"
	"fmt"
	"runtime"
	"strings"

	"github.com/bmatcuk/doublestar/v4"

	"github.com/toolhost/toolhost/abi"
	"github.com/toolhost/toolhost/host/internal/sandbox"
)

// Bounds of a request, whatever a plugin sends.
const (
	MaxContextLines   = 10
	MaxContentResults = 2000
	MaxEntryResults   = 10000
	DefaultContent    = 200
	DefaultEntries    = 1000
	MaxPatterns       = 100
	MaxPatternBytes   = 1024
	MaxDepth          = 16
	MaxQueryBytes     = 64 << 10
	// MaxBraceGroups and MaxAlternatives bound a glob's {a,b} groups:
	// doublestar tries the alternatives of every group against every
	// position, so a 141-byte pattern of 28 groups took minutes on one
	// name.
	MaxBraceGroups     = 4
	MaxAlternatives    = 32
	maxIgnoreFileBytes = 1 << 20
	// ignoreBudgetBytes bounds the compiled ignore patterns of one
	// search (ignore.Budget): 60 nested .gitignore files of long
	// wildcard patterns took 5 GB of memory.
	ignoreBudgetBytes   = 128 << 10
	budgetScanMultiple  = 512
	estimatedMatchBytes = 96
)

// Options are the host's side of a search: the sandbox and the limits.
type Options struct {
	Sandbox *sandbox.Sandbox
	// Display gives an entry's path as results show it.
	Display func(sandbox.Path) string
	// ScanLimit is the most bytes read of one file (max_scan_bytes); a
	// larger file is skipped as too large.
	ScanLimit int64
	// Budget is the most bytes read in all; zero is 512 × ScanLimit.
	Budget int64
	// OutputLimit bounds what the result keeps (its JSON, roughly).
	OutputLimit int64
	// Workers is how many files are read and matched at once; zero is
	// GOMAXPROCS.
	Workers int
}

// RequestError is a request the host refuses: Field names the argument.
type RequestError struct {
	Field   string
	Message string
}

func (e *RequestError) Error() string { return e.Message }

func badRequest(field, format string, args ...any) error {
	return &RequestError{Field: field, Message: field + ": " + fmt.Sprintf(format, args...)}
}

// Normalize checks req as a plugin sent it and fills its defaults. The
// plugin is untrusted: every bound is the host's.
func Normalize(req *abi.SearchRequest) error {
	switch req.Mode {
	case "":
		req.Mode = abi.SearchContent
	case abi.SearchContent, abi.SearchFiles, abi.SearchCount, abi.SearchGlob, abi.SearchList:
	default:
		return badRequest("mode", "%q is not a mode; send one of content, files, count, glob, list", req.Mode)
	}
	content := req.Mode == abi.SearchContent || req.Mode == abi.SearchFiles || req.Mode == abi.SearchCount
	if content && req.Query == "" {
		return badRequest("query", "empty; send the text (or, with is_regex, the pattern) to find")
	}
	if len(req.Query) > MaxQueryBytes {
		return badRequest("query", "%d bytes is more than the %d a query may have; search for a shorter, distinctive part", len(req.Query), MaxQueryBytes)
	}
	if req.ContextLines < 0 || req.ContextLines > MaxContextLines {
		return badRequest("context_lines", "%d is outside 0..%d", req.ContextLines, MaxContextLines)
	}
	most, def := MaxEntryResults, DefaultEntries
	if req.Mode == abi.SearchContent {
		most, def = MaxContentResults, DefaultContent
	}
	switch {
	case req.MaxResults < 0:
		return badRequest("max_results", "%d is negative; send 1..%d", req.MaxResults, most)
	case req.MaxResults == 0:
		req.MaxResults = def
	case req.MaxResults > most:
		req.MaxResults = most
	}
	if req.Mode == abi.SearchList {
		if req.Depth == 0 {
			req.Depth = 1
		}
		if req.Depth < 1 || req.Depth > MaxDepth {
			return badRequest("depth", "%d is outside 1..%d", req.Depth, MaxDepth)
		}
	}
	switch {
	case req.Render == "" && req.RenderStructured:
		return badRequest("render_structured", "needs render %q", abi.RenderListing)
	case req.Render == "":
	case req.Render != abi.RenderListing:
		return badRequest("render", "%q is not known; send %q or nothing", req.Render, abi.RenderListing)
	case req.Mode != abi.SearchList:
		return badRequest("render", "%q needs mode %q, not %q", req.Render, abi.SearchList, req.Mode)
	}
	if len(req.Include)+len(req.Exclude) > MaxPatterns {
		return badRequest("include_paths", "%d patterns is more than %d; use fewer, broader patterns", len(req.Include)+len(req.Exclude), MaxPatterns)
	}
	include := "include_paths"
	if req.Mode == abi.SearchGlob {
		include = "patterns"
	}
	for _, set := range []struct {
		field string
		globs []string
	}{{include, req.Include}, {"exclude_paths", req.Exclude}} {
		for _, g := range set.globs {
			if g == "" || len(g) > MaxPatternBytes {
				return badRequest(set.field, "a pattern of %d bytes; send a glob of 1..%d bytes", len(g), MaxPatternBytes)
			}
			if !doublestar.ValidatePattern(g) {
				return badRequest(set.field, "%q is not a valid glob (unclosed [ or {?); escape a literal bracket with a backslash", g)
			}
			if groups, alternatives := braces(g); groups > MaxBraceGroups || alternatives > MaxAlternatives {
				return badRequest(set.field, "%q has %d {...} groups and %d alternatives, more than the %d and %d a pattern may have (each multiplies the work of every match); send several simpler patterns instead", g, groups, alternatives, MaxBraceGroups, MaxAlternatives)
			}
		}
	}
	if req.Mode == abi.SearchGlob && len(req.Include) == 0 {
		return badRequest("patterns", "no pattern to match; send at least one, such as **/*.go")
	}
	return nil
}

// Run searches below start (a directory, or one file in the content
// modes) as req asks; req must have passed Normalize.
func Run(ctx context.Context, start sandbox.Path, req abi.SearchRequest, o Options) (abi.SearchResult, error) {
	if o.Workers <= 0 {
		o.Workers = runtime.GOMAXPROCS(0)
	}
	if o.Budget <= 0 {
		o.Budget = budgetScanMultiple * o.ScanLimit
	}
	if o.OutputLimit <= 0 {
		o.OutputLimit = 100 << 10
	}
	s, err := newSearch(ctx, start, req, o)
	if err != nil {
		return abi.SearchResult{}, err
	}
	return s.run()
}

// baseMatch reports whether a glob of the content modes matches rel: a
// pattern without a slash matches the base name at any depth, as
// ripgrep's -g does; one with a slash the whole path below the start.
func baseMatch(pattern, rel string) bool {
	if !strings.Contains(pattern, "/") {
		rel = rel[strings.LastIndexByte(rel, '/')+1:]
	}
	ok, _ := doublestar.Match(pattern, rel)
	return ok
}

// braces counts a glob's {...} groups and their alternatives in all,
// escapes respected.
func braces(g string) (groups, alternatives int) {
	depth := 0
	for i := 0; i < len(g); i++ {
		switch g[i] {
		case '\\':
			i++
		case '{':
			depth++
			groups++
			alternatives++
		case ',':
			if depth > 0 {
				alternatives++
			}
		case '}':
			if depth > 0 {
				depth--
			}
		}
	}
	return groups, alternatives
}
