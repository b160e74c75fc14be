package fileedit

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/toolhost/toolhost/textedit"
)

func TestCheck(t *testing.T) {
	s := func(v string) *string { return &v }
	n := func(v int) *int { return &v }
	tests := []struct {
		name string
		e    Edit
		want string // "" for none
	}{
		{"text", Edit{Path: "a", OldString: s("x"), NewString: s("y")}, ""},
		{"region", Edit{Path: "a", StartLine: n(1), EndLine: n(0), NewContent: s("y")}, ""},
		{"both shapes", Edit{Path: "a", OldString: s("x"), NewString: s("y"), StartLine: n(1)}, "not a mix of both"},
		{"neither", Edit{Path: "a"}, "an edit needs"},
		{"no new_string", Edit{Path: "a", OldString: s("x")}, "needs both old_string and new_string"},
		{"no end_line", Edit{Path: "a", StartLine: n(1), NewContent: s("")}, "needs start_line, end_line and new_content"},
		{"empty old_string", Edit{Path: "a", OldString: s(""), NewString: s("y")}, "write_file"},
		{"same strings", Edit{Path: "a", OldString: s("x"), NewString: s("x")}, "nothing to do"},
	}
	for _, tt := range tests {
		err := tt.e.Check()
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("%s: %v", tt.name, err)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("%s: %v, want an error containing %q", tt.name, err, tt.want)
		}
	}
}

func TestAppendResult(t *testing.T) {
	b := AppendResult(nil, "a \"b\".go", textedit.Result{Replacements: 2, Start: 3, End: 5, Layer: textedit.Indentation}, "--- a\n+\tx\n")
	var got struct {
		Path         string `json:"path"`
		Replacements int    `json:"replacements"`
		Lines        []int  `json:"lines"`
		Layer        string `json:"layer"`
		Diff         string `json:"diff"`
	}
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	if got.Path != "a \"b\".go" || got.Replacements != 2 || len(got.Lines) != 2 || got.Lines[0] != 3 || got.Lines[1] != 5 || got.Layer != "indentation" || got.Diff != "--- a\n+\tx\n" {
		t.Errorf("got %+v from %s", got, b)
	}
}

func TestSentence(t *testing.T) {
	s := func(v string) *string { return &v }
	got := Sentence("src/a.go", Edit{OldString: s("x"), NewString: s("y")}, textedit.Result{Replacements: 1, Start: 12, End: 14, Layer: textedit.LineEndings})
	if want := "edited src/a.go: 1 replacement at lines 12–14, matched after normalizing line endings"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}
