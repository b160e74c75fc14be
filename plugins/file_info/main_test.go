package main

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v5"
)

func TestInfoJSONAndText(t *testing.T) {
	mtime := time.Date(2026, 1, 2, 3, 4, 5, 600, time.UTC)
	tests := []struct {
		name string
		in   info
		want map[string]any
		text []string
	}{
		{"text file", info{path: "a.txt", typ: "file", size: 4, mode: 0o644, mtime: mtime, lines: 1, sha256: strings.Repeat("ab", 32)},
			map[string]any{"path": "a.txt", "type": "file", "size": 4.0, "mode": "0644", "mtime": "2026-01-02T03:04:05.0000006Z", "binary": false, "lines": 1.0, "sha256": strings.Repeat("ab", 32)},
			[]string{"a.txt: file, 4 bytes, text, 1 line, mode 0644, modified 2026-01-02T03:04:05.0000006Z\n", "sha256 " + strings.Repeat("ab", 32) + "\n"}},
		{"binary file", info{path: "b.bin", typ: "file", size: 3, mode: 0o600, mtime: mtime, binary: true, lines: -1, sha256: strings.Repeat("cd", 32)},
			map[string]any{"path": "b.bin", "type": "file", "size": 3.0, "mode": "0600", "mtime": "2026-01-02T03:04:05.0000006Z", "binary": true, "sha256": strings.Repeat("cd", 32)},
			[]string{"b.bin: file, 3 bytes, binary, mode 0600"}},
		{"past the scan limit", info{path: "big", typ: "file", size: 9, mode: 0o644, mtime: mtime, lines: -1, scanStop: 8},
			map[string]any{"path": "big", "type": "file", "size": 9.0, "mode": "0644", "mtime": "2026-01-02T03:04:05.0000006Z", "binary": false, "scan_limit_bytes": 8.0},
			[]string{"big: file, 9 bytes, text, mode", "larger than the scan limit of 8 bytes (max_scan_bytes): lines and sha256 not computed"}},
		{"directory through a link", info{path: "l", resolved: "d\x1b", typ: "dir", size: 4096, mode: 0o755, mtime: mtime, lines: -1},
			map[string]any{"path": "l", "resolved": "d\x1b", "type": "dir", "size": 4096.0, "mode": "0755", "mtime": "2026-01-02T03:04:05.0000006Z", "binary": false},
			[]string{"l (resolves to d\x1b): dir, 4096 bytes, mode 0755"}},
		{"link and what it leads to", info{path: "l", typ: "symlink", size: 5, mode: 0o777, mtime: mtime, lines: -1,
			link: &link{target: "a.txt", dest: &info{path: "a.txt", typ: "file", size: 2, mode: 0o644, mtime: mtime, lines: 1}}},
			map[string]any{"path": "l", "type": "symlink", "size": 5.0, "mode": "0777", "mtime": "2026-01-02T03:04:05.0000006Z", "binary": false, "target": "a.txt",
				"leads_to": map[string]any{"path": "a.txt", "type": "file", "size": 2.0, "mode": "0644", "mtime": "2026-01-02T03:04:05.0000006Z", "binary": false, "lines": 1.0}},
			[]string{"l: symlink to a.txt, 5 bytes, mode 0777", "\nleads to a.txt: file, 2 bytes, text, 1 line"}},
		{"link out of the roots", info{path: "o", typ: "symlink", size: 9, mode: 0o777, mtime: mtime, lines: -1, link: &link{outside: true}},
			map[string]any{"path": "o", "type": "symlink", "size": 9.0, "mode": "0777", "mtime": "2026-01-02T03:04:05.0000006Z", "binary": false, "target_outside": true},
			[]string{"o: symlink leading outside the allowed roots, 9 bytes"}},
		{"link to a denied path", info{path: "k", typ: "symlink", size: 9, mode: 0o777, mtime: mtime, lines: -1, link: &link{denied: true}},
			map[string]any{"path": "k", "type": "symlink", "size": 9.0, "mode": "0777", "mtime": "2026-01-02T03:04:05.0000006Z", "binary": false, "target_denied": true},
			[]string{"k: symlink leading to a path tools may not reach, 9 bytes"}},
	}
	out, err := jsonschema.CompileString("output_schema.json", outputSchema)
	if err != nil {
		t.Fatalf("outputSchema does not compile: %v", err)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got map[string]any
			if err := json.Unmarshal(tt.in.json(), &got); err != nil {
				t.Fatalf("json() = %s: %v", tt.in.json(), err)
			}
			if err := out.Validate(got); err != nil {
				t.Errorf("json() = %s does not match outputSchema: %v", tt.in.json(), err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("json() = %v, want %v", got, tt.want)
			}
			text := tt.in.text()
			for _, w := range tt.text {
				if !strings.Contains(text, w) {
					t.Errorf("text() = %q, want it to contain %q", text, w)
				}
			}
		})
	}
}
