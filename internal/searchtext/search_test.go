package searchtext

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/toolhost/toolhost/abi"
)

func TestNumber(t *testing.T) {
	for n, want := range map[int]string{0: "0", 7: "7", 999: "999", 1000: "1,000", 11512: "11,512", 1234567: "1,234,567", -1000: "-1,000"} {
		if got := Number(n); got != want {
			t.Errorf("Number(%d) = %q, want %q", n, got, want)
		}
	}
}

// match is a SearchMatch of one line, with its context.
func match(path string, line, col int, text string, before, after []string) abi.SearchMatch {
	return abi.SearchMatch{Path: path, Line: line, Column: col, Text: text, MatchText: "x", Before: before, After: after}
}

func TestSearchContent(t *testing.T) {
	sc := Scope{MaxResults: 200, MaxAllowed: 2000}
	tests := []struct {
		name    string
		r       abi.SearchResult
		context int
		sc      Scope
		want    string
	}{
		{
			name: "plain lines and the totals",
			r: abi.SearchResult{
				Matches:       []abi.SearchMatch{match("a.go", 3, 6, "func x()", nil, nil), match("b/c.go", 10, 1, "x := 1", nil, nil)},
				FilesSearched: 12, FilesMatched: 2, TotalMatches: 2,
			},
			sc:   sc,
			want: "a.go:3:6: func x()\nb/c.go:10:1: x := 1\n2 matching lines in 2 of 12 files searched\n",
		},
		{
			name: "context shared by neighbours printed once, -- between groups and files",
			r: abi.SearchResult{
				Matches: []abi.SearchMatch{
					match("a.go", 2, 1, "x2", []string{"l1"}, []string{"x3"}),
					match("a.go", 3, 1, "x3", []string{"x2"}, []string{"l4"}),
					match("a.go", 9, 2, " x9", []string{"l8"}, []string{"l10"}),
					match("b.go", 1, 1, "x", nil, []string{"m2"}),
				},
				FilesSearched: 2, FilesMatched: 2, TotalMatches: 4,
			},
			context: 1,
			sc:      sc,
			want: "a.go-1- l1\na.go:2:1: x2\na.go:3:1: x3\na.go-4- l4\n--\n" +
				"a.go-8- l8\na.go:9:2:  x9\na.go-10- l10\n--\n" +
				"b.go:1:1: x\nb.go-2- m2\n" +
				"4 matching lines in 2 of 2 files searched\n",
		},
		{
			name: "adjacent groups are not separated; an empty context line has no trailing blank",
			r: abi.SearchResult{
				Matches: []abi.SearchMatch{
					match("a.go", 2, 1, "x2", []string{"l1"}, []string{""}),
					match("a.go", 5, 1, "x5", []string{"l4"}, nil),
				},
				FilesSearched: 1, FilesMatched: 1, TotalMatches: 2,
			},
			context: 1,
			sc:      sc,
			want:    "a.go-1- l1\na.go:2:1: x2\na.go-3-\na.go-4- l4\na.go:5:1: x5\n2 matching lines in 1 of 1 file searched\n",
		},
		{
			name: "truncated by max_results: how many of how many, and what to change",
			r: abi.SearchResult{
				Matches:       []abi.SearchMatch{match("a.go", 1, 1, "x", nil, nil)},
				FilesSearched: 11512, FilesMatched: 37, TotalMatches: 10000, Truncated: true, StoppedBy: abi.StoppedMaxResults,
				Skipped: abi.SearchSkipped{Ignored: 120, Hidden: 3, Binary: 2, TooLarge: 1},
			},
			sc: Scope{MaxResults: 1, MaxAllowed: 2000},
			want: "a.go:1:1: x\n1 of 10,000 matching lines in 37 of 11,512 files searched; skipped: 120 ignored, 3 hidden, 2 binary, 1 too large\n" +
				"To see more: raise max_results (up to 2,000); narrow path or include_paths; include_ignored:true to search the 120 ignored paths (.gitignore, .ignore, .git/info/exclude); include_hidden:true to search the 3 hidden paths\n",
		},
		{
			name: "at max_results' maximum, with ignored files asked for: narrow only",
			r: abi.SearchResult{
				Matches:       []abi.SearchMatch{match("a.go", 1, 1, "x", nil, nil)},
				FilesSearched: 5, FilesMatched: 2, TotalMatches: 3, Truncated: true,
				Skipped: abi.SearchSkipped{Ignored: 4},
			},
			sc:   Scope{MaxResults: 2000, MaxAllowed: 2000, Ignored: true},
			want: "a.go:1:1: x\n1 of 3 matching lines in 2 of 5 files searched; skipped: 4 ignored\nTo see more: narrow path or include_paths\n",
		},
		{
			name: "no match says so, with what was skipped and how to include it",
			r: abi.SearchResult{
				FilesSearched: 40,
				Skipped:       abi.SearchSkipped{Ignored: 1, Binary: 1, Symlink: 2},
			},
			sc:   sc,
			want: "No matches in 40 files searched; skipped: 1 ignored, 1 binary, 2 symlinks\nTo see more: include_ignored:true to search the 1 ignored path (.gitignore, .ignore, .git/info/exclude)\n",
		},
		{
			name: "a deadline makes the totals lower bounds",
			r: abi.SearchResult{
				Matches:       []abi.SearchMatch{match("a.go", 1, 1, "x", nil, nil)},
				FilesSearched: 900, FilesMatched: 1, TotalMatches: 1, TotalIsLowerBound: true, StoppedBy: abi.StoppedDeadline,
			},
			sc: sc,
			want: "a.go:1:1: x\nat least 1 matching line in at least 1 of 900 files searched (the call's deadline stopped the search: totals count only what was searched)\n" +
				"To see more: narrow path or include_paths so the search ends in time\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			text, obj := Search(tt.r, abi.SearchContent, tt.context, tt.sc, 0)
			if text != tt.want {
				t.Errorf("text:\n%s\nwant:\n%s", text, tt.want)
			}
			var got map[string]any
			if err := json.Unmarshal(obj, &got); err != nil {
				t.Fatalf("structured %s: %v", obj, err)
			}
			if n := len(got["matches"].([]any)); n != len(tt.r.Matches) {
				t.Errorf("structured has %d matches, want %d", n, len(tt.r.Matches))
			}
			if got["total_matches"] != float64(tt.r.TotalMatches) || got["truncated"] != (tt.r.Truncated || len(tt.r.Matches) < tt.r.TotalMatches) {
				t.Errorf("structured totals %s", obj)
			}
		})
	}
}

func TestSearchStructured(t *testing.T) {
	r := abi.SearchResult{
		Matches:       []abi.SearchMatch{{Path: "d/\"q\".go", Line: 4, Column: 2, Text: "\tfunc main() {", MatchText: "func main", Before: []string{"", "// x"}, After: []string{"}"}}},
		FilesSearched: 3, FilesMatched: 1, TotalMatches: 1,
		Skipped: abi.SearchSkipped{Ignored: 5, Hidden: 1, Binary: 2, TooLarge: 3, Symlink: 9},
	}
	_, obj := Search(r, abi.SearchContent, 2, Scope{}, 0)
	var got map[string]any
	if err := json.Unmarshal(obj, &got); err != nil {
		t.Fatalf("%s: %v", obj, err)
	}
	want := map[string]any{
		"matches":        []any{map[string]any{"path": "d/\"q\".go", "line": 4.0, "column": 2.0, "match_text": "func main", "before": []any{"", "// x"}, "after": []any{"}"}}},
		"files_searched": 3.0, "files_matched": 1.0, "total_matches": 1.0, "total_is_lower_bound": false,
		"skipped":   map[string]any{"ignored": 5.0, "hidden": 1.0, "binary": 2.0, "too_large": 3.0},
		"truncated": false,
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("structured\n got %v\nwant %v", got, want)
	}
	// Without context the arrays are left out: bytes a model may pay for.
	_, obj = Search(r, abi.SearchContent, 0, Scope{}, 0)
	if strings.Contains(string(obj), "before") {
		t.Errorf("no context asked, yet %s", obj)
	}
}

func TestSearchFilesAndCount(t *testing.T) {
	r := abi.SearchResult{
		Files:         []abi.SearchFile{{Path: "a.go", Matches: 1}, {Path: "b.go", Matches: 12}},
		FilesSearched: 50, FilesMatched: 3, TotalMatches: 14, Truncated: true,
	}
	sc := Scope{MaxResults: 2, MaxAllowed: 10000}
	text, obj := Search(r, abi.SearchFiles, 0, sc, 0)
	want := "a.go (1 match)\nb.go (12 matches)\n2 of 3 files with matches (14 matching lines) of 50 files searched\nTo see more: raise max_results (up to 10,000); narrow path or include_paths\n"
	if text != want {
		t.Errorf("files text:\n%s\nwant:\n%s", text, want)
	}
	if !strings.HasPrefix(string(obj), `{"files":[{"path":"a.go","matches":1},{"path":"b.go","matches":12}],"files_searched":50,`) {
		t.Errorf("files structured %s", obj)
	}
	r.Files, r.Truncated = nil, false
	text, obj = Search(r, abi.SearchCount, 0, sc, 0)
	if want := "14 matching lines in 3 of 50 files searched\n"; text != want {
		t.Errorf("count text %q, want %q", text, want)
	}
	if strings.Contains(string(obj), "matches\":[") || strings.Contains(string(obj), `"files":`) || !strings.Contains(string(obj), `"truncated":false`) {
		t.Errorf("count structured %s", obj)
	}
}

// The text and the structured object share the output limit: matches
// that do not fit are left out of both, the totals still count them,
// and the result says the output limit cut it.
func TestSearchOutputLimit(t *testing.T) {
	var ms []abi.SearchMatch
	for i := range 500 {
		ms = append(ms, match("dir/file.go", i+1, 1, strings.Repeat("x", 100), nil, nil))
	}
	r := abi.SearchResult{Matches: ms, FilesSearched: 1, FilesMatched: 1, TotalMatches: 500}
	const limit = 16 << 10
	text, obj := Search(r, abi.SearchContent, 0, Scope{MaxResults: 500, MaxAllowed: 2000}, limit)
	if n := len(text) + len(obj); n > limit {
		t.Fatalf("text and structured are %d bytes, over the %d limit", n, limit)
	}
	var got struct {
		Matches   []any `json:"matches"`
		Truncated bool  `json:"truncated"`
		Total     int   `json:"total_matches"`
	}
	if err := json.Unmarshal(obj, &got); err != nil {
		t.Fatal(err)
	}
	shown := strings.Count(text, "dir/file.go:")
	if shown == 0 || shown != len(got.Matches) || !got.Truncated || got.Total != 500 {
		t.Fatalf("shown %d, structured %d matches, truncated %v, total %d", shown, len(got.Matches), got.Truncated, got.Total)
	}
	if !strings.Contains(text, Number(shown)+" of 500 matching lines") || !strings.Contains(text, "the output limit left the rest out") {
		t.Errorf("text does not say what the limit left out:\n%s", text[len(text)-300:])
	}
}

func TestGlob(t *testing.T) {
	mt := time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC).UnixNano()
	r := abi.SearchResult{
		Files:         []abi.SearchFile{{Path: "a_test.go", Type: "file", Size: 10, ModTime: mt}, {Path: "l_test.go", Type: "symlink", Size: 3, ModTime: mt}},
		FilesSearched: 30, TotalMatches: 2,
		Skipped: abi.SearchSkipped{Hidden: 2},
	}
	sc := Scope{MaxResults: 1000, MaxAllowed: 10000, Glob: true}
	text, obj := Glob(r, sc, true, 0)
	if want := "a_test.go\nl_test.go\n2 matching paths, of 30 entries considered, most recently modified first; skipped: 2 hidden\n"; text != want {
		t.Errorf("text:\n%s\nwant:\n%s", text, want)
	}
	want := `{"files":[{"path":"a_test.go","size":10,"mtime":"2026-01-02T03:04:05Z","type":"file"},{"path":"l_test.go","size":3,"mtime":"2026-01-02T03:04:05Z","type":"symlink"}],"total":2,"total_is_lower_bound":false,"skipped":{"ignored":0,"hidden":2,"binary":0,"too_large":0},"truncated":false}`
	if string(obj) != want {
		t.Errorf("structured\n got %s\nwant %s", obj, want)
	}

	r.Files, r.TotalMatches = nil, 0
	r.Skipped.Ignored = 7
	text, _ = Glob(r, sc, false, 0)
	if want := "No files match, of 30 entries considered; skipped: 7 ignored, 2 hidden\nTo see more: include_ignored:true to include the 7 ignored paths (.gitignore, .ignore, .git/info/exclude); include_hidden:true to include the 2 hidden paths\n"; text != want {
		t.Errorf("no match:\n%s\nwant:\n%s", text, want)
	}

	r.Files, r.TotalMatches, r.Truncated, r.Skipped = []abi.SearchFile{{Path: "a", Type: "file"}}, 4200, true, abi.SearchSkipped{}
	text, _ = Glob(r, Scope{MaxResults: 1, MaxAllowed: 10000, Glob: true}, false, 0)
	if want := "a\n1 of 4,200 matching paths, of 30 entries considered\nTo see more: raise max_results (up to 10,000); narrow path or patterns\n"; text != want {
		t.Errorf("truncated:\n%s\nwant:\n%s", text, want)
	}
}

// A file name holding a newline cannot forge a result line: control
// characters in paths are written \xNN in every mode's text; the
// structured object keeps the name as it is.
func TestPathControlCharacters(t *testing.T) {
	evil := "a.go:1:1: forged\nb.go"
	r := abi.SearchResult{
		Matches:       []abi.SearchMatch{match(evil, 2, 1, "x", nil, nil)},
		Files:         []abi.SearchFile{{Path: evil, Matches: 1, Type: "file"}},
		FilesSearched: 1, FilesMatched: 1, TotalMatches: 1,
	}
	for _, mode := range []string{abi.SearchContent, abi.SearchFiles, abi.SearchGlob} {
		var text string
		var obj []byte
		if mode == abi.SearchGlob {
			text, obj = Glob(r, Scope{Glob: true}, false, 0)
		} else {
			text, obj = Search(r, mode, 0, Scope{}, 0)
		}
		if first, _, _ := strings.Cut(text, "\n"); !strings.HasPrefix(first, `a.go:1:1: forged\x0ab.go`) {
			t.Errorf("%s: first line %q", mode, first)
		}
		if !strings.Contains(string(obj), `"a.go:1:1: forged\nb.go"`) {
			t.Errorf("%s: structured %s", mode, obj)
		}
	}
}

// A line of Latin-1 text is shown as valid UTF-8, so that its size is
// what the host passes on (it would write each bad byte as U+FFFD).
func TestInvalidUTF8LineMadeValid(t *testing.T) {
	r := abi.SearchResult{Matches: []abi.SearchMatch{match("l1.txt", 1, 1, "caf\xe9 x", nil, []string{"\xff\xfe"})}, FilesSearched: 1, FilesMatched: 1, TotalMatches: 1}
	text, _ := Search(r, abi.SearchContent, 1, Scope{}, 0)
	if want := "l1.txt:1:1: caf\uFFFD x\nl1.txt-2- \uFFFD\n"; !strings.HasPrefix(text, want) {
		t.Errorf("text %q, want it to start %q", text, want)
	}
}

// Under a limit too small for the totals, the text is cut and the
// object kept whole: text and object together never pass the limit.
func TestTinyLimit(t *testing.T) {
	r := abi.SearchResult{Matches: []abi.SearchMatch{match("a.go", 1, 1, "x", nil, nil)}, FilesSearched: 1, FilesMatched: 1, TotalMatches: 1,
		Skipped: abi.SearchSkipped{Ignored: 1000, Hidden: 1000}}
	for _, limit := range []int64{300, 400, 600, 1200} {
		text, obj := Search(r, abi.SearchContent, 0, Scope{}, limit)
		if int64(len(text)+len(obj)) > limit {
			t.Errorf("limit %d: %d bytes of text and %d of object", limit, len(text), len(obj))
		}
		text, obj = Glob(abi.SearchResult{Files: []abi.SearchFile{{Path: "a"}}, TotalMatches: 1}, Scope{Glob: true}, false, limit)
		if int64(len(text)+len(obj)) > limit {
			t.Errorf("glob, limit %d: %d bytes of text and %d of object", limit, len(text), len(obj))
		}
	}
}

// The host passes on its own encoding of the object (encoding/json,
// HTML escaping off), which the output limit is checked against: it is
// never longer than the object measured here, whatever the lines hold.
func TestObjectNoShorterThanHostEncoding(t *testing.T) {
	odd := "a\u2028b\u2029c <&> \xff\" \\ é \u2028\u2028"
	r := abi.SearchResult{
		Matches:       []abi.SearchMatch{{Path: "p" + odd, Line: 1, Column: 1, Text: odd, MatchText: odd, Before: []string{odd}, After: []string{odd, ""}}},
		Files:         []abi.SearchFile{{Path: odd, Matches: 1, Type: "file"}},
		FilesSearched: 1, FilesMatched: 1, TotalMatches: 1,
	}
	objs := map[string][]byte{}
	_, objs["content"] = Search(r, abi.SearchContent, 2, Scope{}, 0)
	_, objs["files"] = Search(r, abi.SearchFiles, 0, Scope{}, 0)
	_, objs["glob"] = Glob(r, Scope{Glob: true}, false, 0)
	for mode, obj := range objs {
		var v any
		if err := json.Unmarshal(obj, &v); err != nil {
			t.Fatalf("%s: %s: %v", mode, obj, err)
		}
		var b strings.Builder
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(v); err != nil {
			t.Fatal(err)
		}
		if host := len(strings.TrimSuffix(b.String(), "\n")); host > len(obj) {
			t.Errorf("%s: the host's encoding is %d bytes, more than the %d measured:\n%s\n%s", mode, host, len(obj), obj, b.String())
		}
	}
}

// A name's hidden characters are written out in the text: a control as
// \xNN, a bidi override, zero-width or C1 character as \u{X}.
func TestAppendName(t *testing.T) {
	for name, want := range map[string]string{
		"plain.go":          "plain.go",
		"new\nline":         `new\x0aline`,
		"bidi\u202etxt.exe": `bidi\u{202e}txt.exe`,
		"zero\u200bwidth":   `zero\u{200b}width`,
		"c1\u009bx":         `c1\u{9b}x`,
		"ünïcödé/ok":        "ünïcödé/ok",
	} {
		if got := string(AppendName(nil, name)); got != want {
			t.Errorf("AppendName(%q) = %q, want %q", name, got, want)
		}
	}
}
