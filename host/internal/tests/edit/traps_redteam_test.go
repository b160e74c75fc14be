package edit

import (
	"strings"
	"testing"
	"time"
)

// TestEditByteOrderMarkQuoted: read_file shows a file's byte order mark
// as U+FEFF at the start of line 1; a model that copies that line into
// old_string, new_string or new_content gets the edit it meant, with the
// mark written once, and a sentence saying the mark was set aside.
func TestEditByteOrderMarkQuoted(t *testing.T) {
	s := serve(t)
	const bom = "\ufeff"
	tests := []struct {
		name, tool string
		args       map[string]any
	}{
		{"edit_file, old_string with the mark", "edit_file", map[string]any{"old_string": bom + "hello", "new_string": "bye"}},
		{"edit_file, new_string with the mark", "edit_file", map[string]any{"old_string": "hello", "new_string": bom + "bye"}},
		{"edit_file, both with the mark", "edit_file", map[string]any{"old_string": bom + "hello", "new_string": bom + "bye"}},
		{"edit_region, new_content with the mark", "edit_region", map[string]any{"start_line": 1, "end_line": 1, "new_content": bom + "bye"}},
		{"multi_edit", "multi_edit", nil},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			name := "bom" + string(rune('a'+i)) + ".txt"
			s.write(t, name, bom+"hello\nworld\n")
			if shown := s.readFirst(t, name, false); !strings.Contains(shown, bom+"hello") {
				t.Fatalf("read_file showed %q, want the mark as U+FEFF at the start of line 1", shown)
			}
			args := tt.args
			if tt.tool == "multi_edit" {
				args = map[string]any{"edits": []any{map[string]any{"path": name, "old_string": bom + "hello\n", "new_string": bom + "bye\n"}}}
			} else {
				args["path"] = name
			}
			text, _, isErr := s.call(t, tt.tool, args)
			if isErr {
				t.Fatalf("%s failed: %s", tt.tool, text)
			}
			if got := s.read(t, name); got != bom+"bye\nworld\n" {
				t.Errorf("file is %q, want %q (result: %s)", got, bom+"bye\nworld\n", text)
			}
			if !strings.Contains(text, "byte order mark") {
				t.Errorf("result %q does not say the U+FEFF was taken as the byte order mark", text)
			}
		})
	}
}

// TestEditCarriageReturnFile: in a file whose line breaks are lone CRs,
// edit_file writes new_string's line breaks as CR, and edit_region,
// whose line numbers read_file cannot show for such a file, refuses it
// with the reason and leaves it as it is.
func TestEditCarriageReturnFile(t *testing.T) {
	s := serve(t)
	s.write(t, "cr.txt", "a\rb\rc\r")
	s.readFirst(t, "cr.txt", false)
	text, _, isErr := s.call(t, "edit_file", map[string]any{"path": "cr.txt", "old_string": "b", "new_string": "X\nY"})
	if isErr {
		t.Fatalf("edit_file failed: %s", text)
	}
	if got := s.read(t, "cr.txt"); got != "a\rX\rY\rc\r" {
		t.Errorf("file is %q, want %q (result: %s)", got, "a\rX\rY\rc\r", text)
	}
	s.readFirst(t, "cr.txt", false)
	text, _, isErr = s.call(t, "edit_region", map[string]any{"path": "cr.txt", "start_line": 1, "end_line": 1, "new_content": "z"})
	if !isErr || !strings.Contains(text, "carriage returns alone") {
		t.Errorf("edit_region result (error %v) %q, want it refused naming the line breaks", isErr, text)
	}
	if got := s.read(t, "cr.txt"); got != "a\rX\rY\rc\r" {
		t.Errorf("the refused edit_region changed the file to %q", got)
	}
}

// TestEditNotFoundLongOldString: a failed search of a 20,001-line
// old_string in a 200,000-line file (every line alike) answers with the
// closest region within the call's timeout, where it used to be killed
// by it; multi_edit with several such edits too.
func TestEditNotFoundLongOldString(t *testing.T) {
	s := serve(t)
	file := strings.Repeat("a\n", 200000)
	s.write(t, "big.txt", file)
	// Larger than one read: a read of its first lines is a read.
	if text, _, isErr := s.call(t, "read_file", map[string]any{"path": "big.txt", "start_line": 1, "end_line": 10}); isErr {
		t.Fatalf("read_file big.txt: %s", text)
	}
	old := strings.Repeat("a\n", 20000) + "b"
	start := time.Now()
	text, _, isErr := s.call(t, "edit_file", map[string]any{"path": "big.txt", "old_string": old, "new_string": "c"})
	t.Logf("edit_file not found: %v", time.Since(start))
	if !isErr || !strings.Contains(text, "closest region is at line 1") {
		t.Errorf("result (error %v) %.300q, want not found with the closest region at line 1", isErr, text)
	}
	// As many as max_tool_args_bytes lets through, each of its own file:
	// a file with a failed edit is not tried again.
	edits := make([]any, 4)
	for i := range edits {
		name := "big" + string(rune('a'+i)) + ".txt"
		s.write(t, name, file)
		if text, _, isErr := s.call(t, "read_file", map[string]any{"path": name, "start_line": 1, "end_line": 10}); isErr {
			t.Fatalf("read_file %s: %s", name, text)
		}
		edits[i] = map[string]any{"path": name, "old_string": old, "new_string": "c"}
	}
	start = time.Now()
	text, _, _ = s.call(t, "multi_edit", map[string]any{"edits": edits, "stop_on_error": false})
	t.Logf("multi_edit of %d such edits: %v", len(edits), time.Since(start))
	if strings.Contains(text, "Timeout") || strings.Count(text, "closest region is at line 1") < len(edits) {
		t.Errorf("multi_edit result %.300q, want every edit not found with its closest region", text)
	}
	if got := s.read(t, "big.txt"); got != file {
		t.Error("a failed edit changed the file")
	}
}
