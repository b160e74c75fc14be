package server

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// BenchmarkAppendResult is the last stage of a tools/call over stdio:
// encoding the answer of a read_file of 200 lines (what make bench's MCP
// benchmark reads), and of a listing with its structured entries, in one
// pass. BenchmarkReadFileStages in host/internal/bench has the stages
// before it.
func BenchmarkAppendResult(b *testing.B) {
	var text strings.Builder
	for i := 1; i <= 200; i++ {
		fmt.Fprintf(&text, "line %03d: the quick brown fox jumps over the lazy dog, and back\n", i)
	}
	var entries []string
	for i := range 100 {
		entries = append(entries, fmt.Sprintf(`{"name":"f%03d.txt","path":"list/f%03d.txt","type":"file","size":2,"modified":"2026-11-29T10:00:00Z"}`, i, i))
	}
	obj := json.RawMessage(`{"path":"list","entries":[` + strings.Join(entries, ",") + `],"truncated":false,"total":100}`)
	for _, tt := range []struct {
		name string
		res  *mcp.CallToolResult
	}{
		{"read", &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text.String()}}}},
		{"listing+structured", &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "f000.txt  2\n"}}, StructuredContent: obj}},
	} {
		b.Run(tt.name, func(b *testing.B) {
			b.ReportAllocs()
			var buf bytes.Buffer
			for b.Loop() {
				buf.Reset()
				if err := appendResult(&buf, tt.res); err != nil {
					b.Fatal(err)
				}
			}
			b.SetBytes(int64(buf.Len()))
		})
	}
}
