// Command read_multiple_files is the read_multiple_files tool: several
// files in one call, each shown as read_file shows it under a header
// naming it. A file that cannot be read shows its error in its place and
// the others are read all the same; every file shown counts as read for
// the stale-file rule, as read_file's reads do, and one that showed
// nothing of itself (not even its first line) does not. The files share the
// output limit: one that does not fit is cut at a whole line, and the
// ones no room is left for are not read, each named in the output.
package main

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/toolhost/toolhost/abi"
	"github.com/toolhost/toolhost/internal/fileread"
	"github.com/toolhost/toolhost/sdk"
)

type args struct {
	Paths        []string `json:"paths"`
	MaxBytesEach int64    `json:"max_bytes_each"`
	LineNumbers  bool     `json:"line_numbers"`
}

// maxPaths bounds a call (the schema's maxItems): each file is a read,
// and past this many the headers alone crowd the output limit.
const maxPaths = 100

const schema = `{
  "type": "object",
  "properties": {
    "paths": {"type": "array", "minItems": 1, "maxItems": 100, "items": {"type": "string", "minLength": 1}, "description": "File paths, relative to the workspace root. Each is shown under a header line ==> path <==, as read_file would return it."},
    "max_bytes_each": {"type": "integer", "minimum": 1, "description": "The most bytes of each file to show; a longer file is cut after its last whole line that fits, and says so. All the files together stay within the output limit whatever this says."},
    "line_numbers": {"type": "boolean", "default": false, "description": "Prefix every line with its line number and an arrow, no padding (12→text), as read_file does."}
  },
  "required": ["paths"],
  "additionalProperties": false
}`

func init() {
	sdk.Register(sdk.Tool[args]{
		Manifest: abi.Manifest{
			Name:         "read_multiple_files",
			Version:      "1.0.0",
			Description:  "Read several files at once, each under a header line ==> path <== and shown as read_file shows it. A file that cannot be read shows its error in its place; the others are still read. The files share the output limit: a file that does not fit is cut at a whole line and says so, and files left without room are named and not read.",
			Parameters:   []byte(schema),
			RiskLevel:    abi.RiskLow,
			TimeoutClass: abi.TimeoutFile,
			PathArgs:     []string{"paths/*"},
			Capabilities: []abi.Capability{abi.CapFSRead},
		},
		Summary: summary,
		Handle:  handle,
	})
}

func main() {}

func summary(a args) (string, error) {
	if len(a.Paths) == 1 {
		return "Read " + a.Paths[0], nil
	}
	return fmt.Sprintf("Read %d files: %s", len(a.Paths), strings.Join(a.Paths, ", ")), nil
}

const (
	// footerRoom is kept free for the closing note naming the files cut
	// or not read, and for a cut note longer than its file's room.
	footerRoom = 1 << 10
	// minRoom is the least room worth reading a file into; below it the
	// file is named as not read instead.
	minRoom = 128
)

func handle(c *sdk.Call, a args) (string, error) {
	if len(a.Paths) == 0 {
		return "", sdk.BadArgs("paths is empty: name at least one file")
	}
	if len(a.Paths) > maxPaths {
		return "", sdk.BadArgs("%d paths, more than the %d one call may read; split them over several calls", len(a.Paths), maxPaths)
	}
	limit := c.Limits.OutputLimit()
	want := make([]int64, len(a.Paths))
	for i, p := range a.Paths {
		want[i] = estimate(p, a.LineNumbers)
		if a.MaxBytesEach > 0 {
			want[i] = min(want[i], a.MaxBytesEach)
		}
	}
	rooms, unread := share(a.Paths, want, limit)
	var (
		out      strings.Builder
		cut      []string
		failed   int
		readable int
		carry    int64 // room earlier files left unused
	)
	for i, room := range rooms {
		p := a.Paths[i]
		room += carry
		// The room set aside for a cut note may hold a file that fits
		// whole, unless max_bytes_each bounds it.
		slack := int64(len(p) + fileread.MaxNote)
		if a.MaxBytesEach > 0 && room+slack > a.MaxBytesEach {
			room, slack = min(room, a.MaxBytesEach), max(a.MaxBytesEach-room, 0)
		}
		body, wasCut, err := readOne(c, p, room, slack, a.LineNumbers)
		if err != nil {
			failed++
			body = errorText(err, room)
		} else {
			readable++
		}
		if wasCut {
			cut = append(cut, p)
		}
		carry = max(room-int64(len(body)), 0)
		out.WriteString(header(p))
		out.WriteString(body)
		if body != "" && !strings.HasSuffix(body, "\n") {
			out.WriteByte('\n')
		}
	}
	out.WriteString(footer(len(a.Paths), readable, failed, cut, unread, limit))
	c.SelfLimited()
	return out.String(), nil
}

func header(p string) string { return "==> " + displayPath(p) + " <==\n" }

// share divides the output limit between the files, which want about
// want[i] bytes each: what is left after
// the headers, the footer and room for each cut note is shared so that a
// file needing less than an even share (by its size) gets what it needs
// and the rest is split evenly among the larger ones. A small file named
// after a large one is shown whole, the large one cut, rather than the
// first file taking everything. Files past the point where even minRoom
// each no longer fits are not read (unread).
func share(paths []string, want []int64, limit int64) (rooms []int64, unread []string) {
	fixed := int64(footerRoom)
	n := 0
	for _, p := range paths {
		// A cut file's note, which names it, comes after its room.
		need := int64(len(header(p))+len(p)+fileread.MaxNote) + minRoom
		if fixed+need > limit {
			break
		}
		fixed += need
		n++
	}
	unread = paths[n:]
	// At least minRoom each, so the even share below never falls under it.
	budget := limit - fixed + int64(n)*minRoom
	order := make([]int, n)
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(x, y int) int { return cmp.Compare(want[x], want[y]) })
	rooms = make([]int64, n)
	for k, i := range order {
		even := budget / int64(n-k)
		rooms[i] = max(min(want[i], even), minRoom)
		budget -= rooms[i]
	}
	return rooms, unread
}

// estimate is about how many bytes path will take as shown: its size,
// more with line numbers, and enough for an error when it cannot be
// looked at. fs_stat does not count as a read.
func estimate(path string, lineNumbers bool) int64 {
	fi, err := sdk.Stat(path)
	if err != nil || fi.Type != abi.TypeFile {
		return 512
	}
	n := fi.Size + 64
	if lineNumbers {
		n += n / 2
	}
	return n
}

// readOne is one file as read_file shows it, within room bytes.
func readOne(c *sdk.Call, path string, room, slack int64, lineNumbers bool) (string, bool, error) {
	r, err := fileread.Read(c, path, fileread.Options{LineNumbers: lineNumbers, Room: room, Slack: slack, Cut: true, Partial: true})
	if err != nil {
		return "", false, err
	}
	return r.Text, r.Cut, nil
}

// errorText shows a file's error in its place: its kind and message, as
// read_file would have failed with them, within room.
func errorText(err error, room int64) string {
	kind, msg := abi.KindExecutionFailed, err.Error()
	var e *sdk.Error
	var he *sdk.HostError
	switch {
	case errors.As(err, &e):
		kind, msg = e.Kind, e.Message
	case errors.As(err, &he):
		if he.Kind != "" {
			kind = he.Kind
		}
		msg = he.Message
	}
	s := "[error " + string(kind) + "] " + msg
	if int64(len(s)) > room {
		s = s[:max(room-3, 0)] + "..."
	}
	return s + "\n"
}

// footer sums up what the output holds when anything is missing from
// it: how many files were shown whole, which were cut and which were not
// read for lack of room, within footerRoom.
func footer(total, readable, failed int, cut, unread []string, limit int64) string {
	if len(cut) == 0 && len(unread) == 0 && failed == 0 {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "[%d of %d files read", readable, total)
	if failed > 0 {
		fmt.Fprintf(&b, "; %d failed (their errors are above)", failed)
	}
	b.WriteString("]\n")
	budget := footerRoom - 256
	if len(cut) > 0 {
		b.WriteString(fileread.Truncated + " cut to fit: " + names(cut, budget/2) + "; read the rest of each with read_file start_line\n")
	}
	if len(unread) > 0 {
		fmt.Fprintf(&b, "%s not read, no room left in the output limit of %d bytes: %s; read them with read_file or in another call\n",
			fileread.Truncated, limit, names(unread, budget/2))
	}
	return b.String()
}

// names lists paths within about budget bytes, then how many more.
func names(paths []string, budget int) string {
	var b strings.Builder
	for i, p := range paths {
		p = displayPath(p)
		if i > 0 && b.Len()+len(p)+2 > budget {
			fmt.Fprintf(&b, " and %d more", len(paths)-i)
			break
		}
		if i > 0 {
			b.WriteString(", ")
		}
		if len(p) > budget {
			p = p[:budget] + "..."
		}
		b.WriteString(p)
	}
	return b.String()
}

// displayPath shows a path on a line of its own: one holding a line break
// or a header's marks is quoted, so it cannot pass for a header or a
// file's line.
func displayPath(p string) string {
	if strings.ContainsAny(p, "\r\n") || strings.Contains(p, "<==") || strings.Contains(p, "==>") {
		return strconv.Quote(p)
	}
	return p
}
