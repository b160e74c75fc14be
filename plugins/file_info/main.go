// Command file_info is the file_info tool: what is at a path (a file, a
// directory or a symbolic link), its size, mode and modification time,
// and for a file whether it is text, how many lines it has and its
// SHA-256, as far as the call's scan limit reaches. A symbolic link is
// described itself, with its target as far as the host tells it, then
// what it leads to. It only looks: its
// reads are not recorded as reads of the file, so they never let a later
// write replace it.
package main

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/toolhost/toolhost/abi"
	"github.com/toolhost/toolhost/sdk"
)

type args struct {
	Path string `json:"path"`
}

const schema = `{
  "type": "object",
  "properties": {
    "path": {"type": "string", "minLength": 1, "description": "Path of a file, directory or symbolic link, relative to the workspace root."}
  },
  "required": ["path"],
  "additionalProperties": false
}`

// outputSchema is the structured object's: MCP clients get it as the
// tool's outputSchema, and the host holds every result to it.
const outputSchema = `{
  "type": "object",
  "properties": {
    "path": {"type": "string", "description": "The path as asked."},
    "resolved": {"type": "string", "description": "The path it resolved to through symbolic links, when not path itself."},
    "type": {"enum": ["file", "dir", "symlink", "other"]},
    "size": {"type": "integer", "minimum": 0, "description": "Bytes."},
    "mode": {"type": "string", "pattern": "^[0-7]{4}$", "description": "Permission bits in octal, e.g. 0644."},
    "mtime": {"type": "string", "description": "Modification time, RFC 3339, UTC."},
    "binary": {"type": "boolean", "description": "A file read_file would return base64-encoded."},
    "lines": {"type": "integer", "minimum": 0, "description": "Lines of a text file read whole within the scan limit; a last line without a newline counts."},
    "sha256": {"type": "string", "pattern": "^[0-9a-f]{64}$", "description": "SHA-256 of a file read whole within the scan limit."},
    "scan_limit_bytes": {"type": "integer", "minimum": 1, "description": "Set when the file is larger than the scan limit: lines and sha256 are left out."},
    "target": {"type": "string", "description": "For a symbolic link: its target as the link stores it, when it leads inside the allowed roots to a path tools may reach."},
    "target_outside": {"const": true, "description": "For a symbolic link: it leads outside the allowed roots (where is not told)."},
    "target_denied": {"const": true, "description": "For a symbolic link: it leads to a path tools may not reach (where is not told)."},
    "target_missing": {"const": true, "description": "For a symbolic link: nothing exists where it leads."},
    "leads_to": {"$ref": "#", "description": "For a symbolic link: what it leads to, described the same way."}
  },
  "required": ["path", "type", "size", "mode", "mtime", "binary"],
  "additionalProperties": false
}`

func init() {
	sdk.Register(sdk.Tool[args]{
		Manifest: abi.Manifest{
			Name:           "file_info",
			Version:        "1.0.0",
			Description:    "Describe a path without reading it out: type (file, dir, symlink), size in bytes, permission mode, modification time, and for a file whether it is binary, its line count and SHA-256 (for files within the scan limit). A symbolic link is described itself, with its target (or that it leads outside the allowed roots), then what it leads to. Does not count as reading the file.",
			Parameters:     []byte(schema),
			OutputSchema:   []byte(outputSchema),
			RiskLevel:      abi.RiskLow,
			TimeoutClass:   abi.TimeoutFile,
			PathArgs:       []string{"path"},
			DescribesLinks: true,
			Capabilities:   []abi.Capability{abi.CapFSRead},
		},
		Summary: func(a args) (string, error) { return "Describe " + a.Path, nil },
		Handle:  handle,
	})
}

func main() {}

// info is what file_info reports; lines and sha256 only for a file the
// scan read whole.
type info struct {
	path     string
	resolved string // the path it resolved to, when not path itself
	link     *link  // for a symbolic link
	typ      string
	size     int64
	mode     uint32
	mtime    time.Time
	binary   bool
	lines    int64 // -1: not counted
	sha256   string
	scanStop int64 // > 0: the scan limit that left lines and sha256 out
}

// link is what file_info tells of a symbolic link: where it leads, as
// far as the host lets a tool know, and what is there.
type link struct {
	target                   string // as the link stores it; "" when not told
	outside, denied, missing bool
	dest                     *info // what it leads to, when there is something a tool may reach
}

func handle(c *sdk.Call, a args) (string, error) {
	// The link itself first: fs_lstat describes a last name that is a
	// symbolic link without following it, and says where it leads only
	// when a tool may go there.
	fi, li, err := sdk.Lstat(a.Path)
	if err != nil {
		return "", err
	}
	if fi.Type != abi.TypeSymlink {
		in, err := describe(c, a.Path)
		if err != nil {
			return "", err
		}
		c.SetStructured(in.json())
		return in.text(), nil
	}
	in := fromFileInfo(fi, a.Path)
	in.link = &link{target: li.Target, outside: li.Flags&abi.LinkOutside != 0, denied: li.Flags&abi.LinkDenied != 0}
	if !in.link.outside && !in.link.denied {
		dest, err := describe(c, a.Path)
		switch {
		case err == nil:
			dest.path, dest.resolved = dest.resolved, ""
			in.link.dest = &dest
		case isNotFound(err):
			in.link.missing = true
		default:
			return "", err
		}
	}
	c.SetStructured(in.json())
	return in.text(), nil
}

// describe is what the path leads to, through every symbolic link in it.
func describe(c *sdk.Call, p string) (info, error) {
	fi, err := sdk.Stat(p)
	if err != nil {
		return info{}, err
	}
	in := fromFileInfo(fi, p)
	if in.typ == "file" {
		if err := scan(c, p, &in); err != nil {
			return info{}, err
		}
	}
	return in, nil
}

// fromFileInfo is the info of fi, which the host gave for the path asked;
// resolved is set when the host's path differs from the one asked
// (symbolic links on the way).
func fromFileInfo(fi abi.FileInfo, asked string) info {
	in := info{
		path:  fi.Path,
		typ:   fi.Type.String(),
		size:  fi.Size,
		mode:  fi.Mode,
		mtime: time.Unix(0, fi.ModTime).UTC(),
		lines: -1,
	}
	if asked := path.Clean(asked); !path.IsAbs(asked) && asked != fi.Path {
		in.path, in.resolved = asked, fi.Path
	}
	return in
}

// isNotFound reports a host function's refusal of a path where nothing is.
func isNotFound(err error) bool {
	he, ok := err.(*sdk.HostError)
	return ok && he.Status == abi.StatusNotFound
}

// scan reads the file in pieces, at most the call's scan limit, to tell
// whether it is binary (as read_file would: the first piece is what
// read_file reads) and to count its lines and hash it. The reads are not
// recorded (no abi.ReadRecord): looking at a file is not reading it for
// the stale-file rule.
func scan(c *sdk.Call, path string, in *info) error {
	limit := c.Limits.WithDefaults().MaxScanBytes
	var (
		h       hash.Hash = sha256.New()
		off     int64
		newline int64
		last    byte
	)
	for {
		want := c.Limits.ReadLimit()
		if off+want > limit {
			want = limit - off + 1 // one byte more tells a file past the limit
		}
		ri, data, err := sdk.Read(path, off, want, 0)
		if err != nil {
			return err
		}
		if off == 0 {
			in.binary = ri.Flags&abi.ReadIsBinary != 0
		}
		if off+int64(len(data)) > limit {
			in.scanStop = limit
			return nil
		}
		h.Write(data)
		for _, b := range data {
			if b == '\n' {
				newline++
			}
		}
		if len(data) > 0 {
			last = data[len(data)-1]
		}
		off += int64(len(data))
		if ri.Flags&abi.ReadEOF != 0 {
			break
		}
		if len(data) == 0 {
			// Not at the end, yet nothing came: the file shrank under
			// the scan. What was read describes no version of it.
			return sdk.Failed("%s changed while it was being scanned (%d bytes read, %d expected); ask again", path, off, ri.FileSize)
		}
	}
	in.size = off
	in.sha256 = hex.EncodeToString(h.Sum(nil))
	if !in.binary {
		in.lines = newline
		if off > 0 && last != '\n' {
			in.lines++ // a last line without a newline is a line
		}
	}
	return nil
}

func (in info) modeString() string { return fmt.Sprintf("%04o", in.mode&0o7777) }

func (in info) json() []byte {
	b := []byte(`{"path":`)
	b = sdk.AppendJSONString(b, in.path)
	if in.resolved != "" {
		b = append(b, `,"resolved":`...)
		b = sdk.AppendJSONString(b, in.resolved)
	}
	b = append(b, `,"type":`...)
	b = sdk.AppendJSONString(b, in.typ)
	b = append(b, `,"size":`...)
	b = strconv.AppendInt(b, in.size, 10)
	b = append(b, `,"mode":`...)
	b = sdk.AppendJSONString(b, in.modeString())
	b = append(b, `,"mtime":`...)
	b = sdk.AppendJSONString(b, in.mtime.Format(time.RFC3339Nano))
	b = append(b, `,"binary":`...)
	b = strconv.AppendBool(b, in.binary)
	if in.lines >= 0 {
		b = append(b, `,"lines":`...)
		b = strconv.AppendInt(b, in.lines, 10)
	}
	if in.sha256 != "" {
		b = append(b, `,"sha256":`...)
		b = sdk.AppendJSONString(b, in.sha256)
	}
	if in.scanStop > 0 {
		b = append(b, `,"scan_limit_bytes":`...)
		b = strconv.AppendInt(b, in.scanStop, 10)
	}
	if l := in.link; l != nil {
		switch {
		case l.outside:
			b = append(b, `,"target_outside":true`...)
		case l.denied:
			b = append(b, `,"target_denied":true`...)
		default:
			b = append(b, `,"target":`...)
			b = sdk.AppendJSONString(b, l.target)
		}
		if l.missing {
			b = append(b, `,"target_missing":true`...)
		}
		if l.dest != nil {
			b = append(b, `,"leads_to":`...)
			b = append(b, l.dest.json()...)
		}
	}
	return append(b, '}')
}

func (in info) text() string {
	var b strings.Builder
	name := in.path
	if in.resolved != "" {
		name += " (resolves to " + in.resolved + ")"
	}
	fmt.Fprintf(&b, "%s: %s", name, in.typ)
	if l := in.link; l != nil {
		switch {
		case l.outside:
			b.WriteString(" leading outside the allowed roots")
		case l.denied:
			b.WriteString(" leading to a path tools may not reach")
		default:
			b.WriteString(" to " + l.target)
		}
	}
	fmt.Fprintf(&b, ", %d bytes", in.size)
	if in.typ == "file" {
		switch {
		case in.binary:
			b.WriteString(", binary")
		case in.lines >= 0:
			fmt.Fprintf(&b, ", text, %d line", in.lines)
			if in.lines != 1 {
				b.WriteString("s")
			}
		default:
			b.WriteString(", text")
		}
	}
	fmt.Fprintf(&b, ", mode %s, modified %s\n", in.modeString(), in.mtime.Format(time.RFC3339Nano))
	if in.sha256 != "" {
		fmt.Fprintf(&b, "sha256 %s\n", in.sha256)
	}
	if in.scanStop > 0 {
		fmt.Fprintf(&b, "larger than the scan limit of %d bytes (max_scan_bytes): lines and sha256 not computed\n", in.scanStop)
	}
	if l := in.link; l != nil {
		switch {
		case l.dest != nil:
			b.WriteString("leads to " + l.dest.text())
		case l.missing:
			b.WriteString("leads to nothing: no file or directory exists there\n")
		}
	}
	return b.String()
}
