// Command read_file is the read_file tool (SRD FR-TOOL-READ-01): UTF-8 text,
// optionally a 1-based inclusive line range, or base64 for binary files.
package main

import (
	"fmt"

	"github.com/toolhost/toolhost/abi"
	"github.com/toolhost/toolhost/sdk"
)

type args struct {
	Path      string  `json:"path"`
	StartLine *uint32 `json:"start_line"`
	EndLine   *uint32 `json:"end_line"`
}

const schema = `{
  "type": "object",
  "properties": {
    "path": {"type": "string", "minLength": 1, "description": "File path, relative to the workspace root."},
    "start_line": {"type": "integer", "minimum": 1, "maximum": 4294967295, "description": "First line to return, 1-based, inclusive."},
    "end_line": {"type": "integer", "minimum": 1, "maximum": 4294967295, "description": "Last line to return, 1-based, inclusive; past the end of the file reads through the end."}
  },
  "required": ["path"],
  "additionalProperties": false
}`

func init() {
	sdk.Register(sdk.Tool[args]{
		Manifest: abi.Manifest{
			Name:         "read_file",
			Version:      "1.0.0",
			Description:  "Read a file in the workspace. Returns UTF-8 text, or for binary files a [binary:base64] header and base64 data. Use start_line/end_line to read part of a large file.",
			Parameters:   []byte(schema),
			RiskLevel:    abi.RiskLow,
			TimeoutClass: abi.TimeoutFile,
			PathArgs:     []string{"path"},
			Capabilities: []abi.Capability{abi.CapFSRead},
		},
		Summary: summary,
		Handle:  handle,
	})
}

func main() {}

func summary(a args) (string, error) {
	switch {
	case a.StartLine != nil || a.EndLine != nil:
		return fmt.Sprintf("Read %s lines %s-%s", a.Path, bound(a.StartLine, "1"), bound(a.EndLine, "end")), nil
	}
	return "Read " + a.Path, nil
}

func bound(n *uint32, def string) string {
	if n == nil {
		return def
	}
	return fmt.Sprint(*n)
}

func handle(c *sdk.Call, a args) (string, error) {
	if a.StartLine != nil || a.EndLine != nil {
		return readRange(a)
	}
	limit := c.Limits.ReadLimit()
	info, data, err := sdk.Read(a.Path, 0, limit, abi.ReadRecord)
	if err != nil {
		return "", err
	}
	if info.Flags&abi.ReadIsBinary != 0 {
		return readBinary(c, a.Path, info.FileSize)
	}
	if info.Flags&abi.ReadEOF == 0 {
		return "", sdk.Failed("%s is %d bytes, more than the read limit of %d bytes, %s; read it in parts with start_line and end_line", a.Path, info.FileSize, limit, limitKey(c.Limits))
	}
	return string(data), nil
}

// limitKey names the setting that makes the read limit what it is: the
// limit is the smaller of two (SRD 3.6.8), and an operator looking for
// the number must find the one in force, not the other.
func limitKey(l abi.Limits) string {
	if l.AvailableCapacityBytes > 0 && (l.MaxFileReadBytes <= 0 || l.AvailableCapacityBytes < l.MaxFileReadBytes) {
		return "set by available_capacity_bytes (tools.output.available_capacity_bytes), the room left for a result, which is less than tools.read_file.max_file_read_bytes"
	}
	return "set by tools.read_file.max_file_read_bytes"
}

func readRange(a args) (string, error) {
	start, end := uint32(1), uint32(0)
	if a.StartLine != nil {
		start = *a.StartLine
	}
	if a.EndLine != nil {
		end = *a.EndLine
	}
	if start == 0 || (a.EndLine != nil && end == 0) {
		return "", sdk.BadArgs("start_line and end_line are 1-based; 0 is not a line number")
	}
	if end != 0 && start > end {
		return "", sdk.BadArgs("start_line %d is after end_line %d", start, end)
	}
	info, data, err := sdk.ReadLines(a.Path, start, end, abi.ReadRecord)
	if err != nil {
		return "", err
	}
	if info.Flags&abi.ReadIsBinary != 0 {
		return "", sdk.BadArgs("%s is a binary file; line ranges apply only to text files, so read it without start_line/end_line", a.Path)
	}
	if info.Lines == 0 && start > 1 {
		return "", sdk.BadArgs("start_line %d is past the end of %s", start, a.Path)
	}
	return string(data), nil
}

const (
	binaryHeader = "[binary:base64]"
	truncated    = "[truncated]"
)

// readBinary returns as much of the file as fits in the output limit,
// base64-encoded; the host must not cut it further (FR-TOOL-READ-01b).
func readBinary(c *sdk.Call, path string, size int64) (string, error) {
	room := c.Limits.OutputLimit() - int64(len(binaryHeader+truncated+"\n"))
	raw := max(room/4*3, 0)
	_, data, err := sdk.Read(path, 0, raw, abi.ReadBase64)
	if err != nil {
		return "", err
	}
	header := binaryHeader
	if raw < size {
		header += truncated
	}
	c.SelfLimited()
	return header + "\n" + string(data), nil
}
