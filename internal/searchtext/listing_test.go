package searchtext

import (
	"encoding/json"
	"testing"

	"github.com/toolhost/toolhost/abi"
)

// A listing writes each name's control characters out in the text and in
// the structured entries alike, so no two names read the same once the
// host strips control characters; characters that only hide or reorder
// text are written out in the text and kept, JSON-escaped, in the entry.
func TestListingNames(t *testing.T) {
	tests := []struct {
		name, line, shown string
		escaped           bool
	}{
		{"plain.txt", "plain.txt  1\n", "plain.txt", false},
		{"a\x01b", `a\x01b  1` + "\n", `a\x01b`, true},
		{"ab\x7f", `ab\x7f  1` + "\n", `ab\x7f`, true},
		{"c\u0085d", `c\u{85}d  1` + "\n", `c\u{85}d`, true},
		{"bidi\u202etxt", `bidi\u{202e}txt  1` + "\n", "bidi\u202etxt", false},
	}
	for _, tt := range tests {
		r := abi.SearchResult{TotalMatches: 1, Files: []abi.SearchFile{{Path: "d/" + tt.name, Type: "file", Size: 1}}}
		text, obj := Listing("d", r, true, 0)
		if want := tt.line + "1 entry\n"; string(text) != want {
			t.Errorf("%q: text %q, want %q", tt.name, text, want)
		}
		var got struct {
			Entries []struct {
				Name    string `json:"name"`
				Path    string `json:"path"`
				Escaped bool   `json:"escaped"`
			} `json:"entries"`
		}
		if err := json.Unmarshal(obj, &got); err != nil || len(got.Entries) != 1 {
			t.Fatalf("%q: object %s: %v", tt.name, obj, err)
		}
		if e := got.Entries[0]; e.Name != tt.shown || e.Path != "d/"+tt.shown || e.Escaped != tt.escaped {
			t.Errorf("%q: entry %+v, want name %q, escaped %v", tt.name, e, tt.shown, tt.escaped)
		}
	}
	if text, obj := Listing(".", abi.SearchResult{}, false, 0); string(text) != "(empty)\n" || obj != nil {
		t.Errorf("an empty listing without its object: %q, %s", text, obj)
	}
}
