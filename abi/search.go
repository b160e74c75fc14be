package abi

import (
	"encoding/binary"
	"fmt"
	"strconv"
	"unicode/utf8"
)

// Modes of an FnFSSearch request.
const (
	// SearchContent returns the matching lines (SearchResult.Matches).
	SearchContent = "content"
	// SearchFiles returns the files with matches and their match counts
	// (SearchResult.Files).
	SearchFiles = "files"
	// SearchCount returns only the totals.
	SearchCount = "count"
	// SearchGlob returns the files (and symbolic links, never followed)
	// whose path below the searched directory matches one of
	// SearchRequest.Include and none of SearchRequest.Exclude
	// (SearchResult.Files).
	SearchGlob = "glob"
	// SearchList returns the entries (files, directories, links) of the
	// searched directory, SearchRequest.Depth levels deep, with the same
	// ignore rules (SearchResult.Files).
	SearchList = "list"
)

// RenderListing, as SearchRequest.Render of a SearchList, has the host
// return list_directory's result (AppendRendered) instead of the
// entries.
const RenderListing = "listing"

// SearchRequest is the request of FnFSSearch, sent as JSON
// (AppendSearchRequest). The host walks and matches natively; the
// plugin validates the model's arguments into this and shapes the
// result. Zero values are the defaults.
type SearchRequest struct {
	// Mode is one of the Search* modes; empty is SearchContent.
	Mode string `json:"mode,omitempty"`
	// Path is the directory (or single file) to search, as the model
	// gave it; empty is the workspace root. It must be in the call's
	// read scope, so it must be a path argument of the tool.
	Path string `json:"path,omitempty"`
	// Query is the text (or, with Regex, the RE2 pattern) to find. Empty
	// only in SearchGlob and SearchList.
	Query         string `json:"query,omitempty"`
	Regex         bool   `json:"regex,omitempty"`
	CaseSensitive bool   `json:"case_sensitive,omitempty"`
	// Multiline lets a regex match across lines: the file is matched
	// whole, and a match's Line is the line it starts on.
	Multiline bool `json:"multiline,omitempty"`
	// Include and Exclude are doublestar globs matched against an
	// entry's path relative to Path. In the content modes a pattern
	// without a slash matches the base name at any depth (like
	// ripgrep's -g); Include limits the files searched, Exclude also
	// prunes directories. In SearchGlob, Include are the patterns and
	// Exclude the negated ones, matched as doublestar matches them.
	Include []string `json:"include,omitempty"`
	Exclude []string `json:"exclude,omitempty"`
	// ContextLines is the number of lines before and after each match
	// (at most 10).
	ContextLines int `json:"context_lines,omitempty"`
	// MaxResults bounds Matches (content) or Files (the other modes);
	// the host may return fewer to stay within the output limit, and
	// then says so (Truncated, StoppedBy).
	MaxResults int `json:"max_results,omitempty"`
	// Hidden includes names starting with a dot; Ignored includes what
	// the ignore files (.gitignore, .ignore, .rgignore,
	// .git/info/exclude) leave out. Neither ever reaches a denied path
	// or anything inside .git.
	Hidden  bool `json:"hidden,omitempty"`
	Ignored bool `json:"ignored,omitempty"`
	// SortMTime sorts Files most recently modified first (SearchGlob).
	SortMTime bool `json:"sort_mtime,omitempty"`
	// Depth is how many levels SearchList descends (1: the directory
	// itself).
	Depth int `json:"depth,omitempty"`
	// Render, when set, has the host shape the result as the tool
	// returns it and send that (AppendRendered) instead of a
	// SearchResult: the entries cross into the plugin as the few bytes
	// a model reads rather than as JSON the plugin must decode, which
	// costs a Go plugin milliseconds for a hundred entries. The only
	// value is RenderListing. RenderStructured adds the structured
	// object.
	Render           string `json:"render,omitempty"`
	RenderStructured bool   `json:"render_structured,omitempty"`
}

// AppendRendered encodes a rendered result after dst: the text's length
// (u32, little-endian), the text, then the structured object (empty for
// none).
func AppendRendered(dst, text, structured []byte) []byte {
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(text)))
	dst = append(dst, text...)
	return append(dst, structured...)
}

// DecodeRendered splits what AppendRendered encoded; the slices alias b.
func DecodeRendered(b []byte) (text, structured []byte, err error) {
	if len(b) < 4 {
		return nil, nil, fmt.Errorf("%w: a rendered response of %d bytes, too short for its text's length", ErrMalformedResult, len(b))
	}
	n := binary.LittleEndian.Uint32(b)
	if uint64(n) > uint64(len(b)-4) {
		return nil, nil, fmt.Errorf("%w: a rendered response of %d bytes says its text has %d", ErrMalformedResult, len(b), n)
	}
	return b[4 : 4+n], b[4+n:], nil
}

// SearchMatch is one matching line (or, in a multiline search, the
// match's first line).
type SearchMatch struct {
	// Path is the file's path as the sandbox displays it (relative to
	// the workspace root where it is inside it).
	Path string `json:"path"`
	// Line is 1-based; Column is the 1-based byte offset of the first
	// match in the line, as ripgrep's --column counts.
	Line   int `json:"line"`
	Column int `json:"column"`
	// Text is the line without its line break, cut to a few hundred
	// bytes around the match when longer (Cut).
	Text string `json:"text"`
	Cut  bool   `json:"cut,omitempty"`
	// MatchText is the text the first match on the line matched (cut
	// like Text).
	MatchText string `json:"match_text"`
	// Before and After are the context lines (each cut like Text).
	Before []string `json:"before,omitempty"`
	After  []string `json:"after,omitempty"`
	// InvalidUTF8 says Path had bytes that are not UTF-8, shown as \xNN.
	InvalidUTF8 bool `json:"invalid_utf8,omitempty"`
}

// SearchFile is one file of a SearchFiles, SearchGlob or SearchList
// result.
type SearchFile struct {
	Path string `json:"path"`
	// Type is "file", "dir", "symlink" or "other" (FileType.String).
	Type    string `json:"type"`
	Size    int64  `json:"size"`
	ModTime int64  `json:"mtime_ns"`
	// Matches is the number of matching lines (SearchFiles).
	Matches     int  `json:"matches,omitempty"`
	InvalidUTF8 bool `json:"invalid_utf8,omitempty"`
}

// SearchSkipped counts what a search left out, per reason. A directory
// left out counts once, whatever it holds. Denied paths are never
// counted: their existence is not revealed.
type SearchSkipped struct {
	Ignored    int `json:"ignored"`
	Hidden     int `json:"hidden"`
	Binary     int `json:"binary"`
	TooLarge   int `json:"too_large"`
	Symlink    int `json:"symlink"`
	Special    int `json:"special"`
	Unreadable int `json:"unreadable"`
}

// Reasons a search stopped early (SearchResult.StoppedBy).
const (
	StoppedDeadline    = "deadline"     // the call's deadline came
	StoppedScanBudget  = "scan_budget"  // the bytes one search may read were read
	StoppedOutputLimit = "output_limit" // more results would not fit the output limit
	StoppedMaxResults  = "max_results"  // MaxResults were found; counting went on
)

// SearchResult is the response of FnFSSearch, as JSON.
type SearchResult struct {
	Matches []SearchMatch `json:"matches,omitempty"`
	Files   []SearchFile  `json:"files,omitempty"`
	// FilesSearched counts the files read (content modes) or the
	// entries considered (SearchGlob, SearchList).
	FilesSearched int `json:"files_searched"`
	FilesMatched  int `json:"files_matched"`
	// TotalMatches counts every matching line (content modes) or every
	// matching entry (SearchGlob, SearchList), returned or not;
	// TotalIsLowerBound says the count stopped early (a deadline, the
	// scan budget) and the true total is at least this.
	TotalMatches      int           `json:"total_matches"`
	TotalIsLowerBound bool          `json:"total_is_lower_bound"`
	Skipped           SearchSkipped `json:"skipped"`
	// Truncated says something was left out of Matches or Files.
	Truncated bool   `json:"truncated"`
	StoppedBy string `json:"stopped_by,omitempty"`
}

// AppendSearchRequest encodes r as JSON after dst, without
// encoding/json (costly in a guest).
func AppendSearchRequest(dst []byte, r SearchRequest) []byte {
	dst = append(dst, '{')
	first := true
	field := func(name string) {
		if !first {
			dst = append(dst, ',')
		}
		first = false
		dst = appendJSONString(dst, name)
		dst = append(dst, ':')
	}
	str := func(name, v string) {
		if v != "" {
			field(name)
			dst = appendJSONString(dst, v)
		}
	}
	flag := func(name string, v bool) {
		if v {
			field(name)
			dst = append(dst, "true"...)
		}
	}
	num := func(name string, v int) {
		if v != 0 {
			field(name)
			dst = strconv.AppendInt(dst, int64(v), 10)
		}
	}
	list := func(name string, v []string) {
		if len(v) == 0 {
			return
		}
		field(name)
		dst = append(dst, '[')
		for i, s := range v {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendJSONString(dst, s)
		}
		dst = append(dst, ']')
	}
	str("mode", r.Mode)
	str("path", r.Path)
	str("query", r.Query)
	flag("regex", r.Regex)
	flag("case_sensitive", r.CaseSensitive)
	flag("multiline", r.Multiline)
	list("include", r.Include)
	list("exclude", r.Exclude)
	num("context_lines", r.ContextLines)
	num("max_results", r.MaxResults)
	flag("hidden", r.Hidden)
	flag("ignored", r.Ignored)
	flag("sort_mtime", r.SortMTime)
	num("depth", r.Depth)
	str("render", r.Render)
	flag("render_structured", r.RenderStructured)
	return append(dst, '}')
}

// appendJSONString appends s as a JSON string. Bytes that are not UTF-8
// become U+FFFD, as encoding/json makes them.
func appendJSONString(dst []byte, s string) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				dst = append(dst, '\\', c)
			case c < 0x20:
				dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			default:
				dst = append(dst, c)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, "\ufffd"...)
		} else {
			dst = append(dst, s[i:i+size]...)
		}
		i += size
	}
	return append(dst, '"')
}
