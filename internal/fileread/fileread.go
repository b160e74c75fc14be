// Package fileread reads a file the way the read_file tool returns it, so
// that read_file and read_multiple_files give the same text for the same
// file: UTF-8 text as it is on disk (optionally a line range, optionally
// each line prefixed with its number), or a binary file base64-encoded
// under a [binary:base64] header (SRD FR-TOOL-READ-01).
package fileread

import (
	"fmt"
	"strconv"

	"github.com/toolhost/toolhost/abi"
	"github.com/toolhost/toolhost/sdk"
)

// Markers the output uses. NumberSep separates a line's number from the
// line (`12→text`); the edit tools strip exactly this prefix, so it must
// not change.
const (
	BinaryHeader = "[binary:base64]"
	Truncated    = "[truncated]"
	NumberSep    = "→"
	// MaxNote bounds the note after a cut text, besides the path it names.
	MaxNote = 160
)

// Options says what to read and how to show it.
type Options struct {
	// StartLine and EndLine select lines, 1-based and inclusive; nil
	// means from the first line and through the last. With either set
	// the file must be text.
	StartLine, EndLine *uint32
	// LineNumbers prefixes every line with its number in the file and
	// NumberSep.
	LineNumbers bool
	// Room is the most bytes of the file's text to show; a text cut to
	// fit is followed by a note of at most len(path)+MaxNote bytes
	// besides. Slack is more room a text that fits whole (and so needs
	// no note) may take, and a binary file's header and base64 too: the
	// caller's room for the note, when it has set one aside.
	Room, Slack int64
	// Cut says what to do with text that does not fit in Room: cut it
	// after the last whole line that fits and say so in a note
	// (Result.Cut), instead of leaving the host to truncate it.
	Cut bool
	// Partial shows a file past the call's read limit cut as Cut does,
	// instead of failing and asking for a line range.
	Partial bool
}

// Result is one file as read.
type Result struct {
	Text     string
	Binary   bool
	Size     int64 // the file's size in bytes
	Cut      bool  // Text holds less than was asked for
	Recorded bool  // the host recorded the read for stale-file protection
	// shown says Text shows some of the file: a line at least, or all
	// of it (an empty file), or some of a binary file's bytes.
	shown bool
}

// Read reads path as read_file does.
//
// The read counts for stale-file protection (abi.ReadRecord: the
// conversation may then overwrite, append to or edit the file) only when
// it shows some of the file. A read that showed nothing, not even a first
// line too long for the room, a range past the end, must not let a model
// replace a file it never saw. The host records as it reads, before the
// plugin knows what fits, so unless whatever is read is sure to be shown
// (sureToShow), the file is read first and, once something of it is
// shown, read again recording: what that second read found is what is
// shown. The first read asks for a record too, and reads no more than
// the room: a file that ends within it is shown whole and recorded by
// that one read. Between the two the file may change for the
// worse (a first line grown past the room); only someone who can write
// the file already can do that.
func Read(c *sdk.Call, path string, o Options) (Result, error) {
	limit := c.Limits.ReadLimit()
	read := func(record uint32) (Result, error) { return readWhole(c, path, o, limit, record) }
	if o.StartLine != nil || o.EndLine != nil {
		read = func(record uint32) (Result, error) { return readRange(path, o, record) }
	} else if sureToShow(o, limit) {
		return read(abi.ReadRecord)
	} else if room := o.Room + o.Slack; fitsWhole(o, room) && room < limit {
		// Most files fit the room whole, and then are shown whole: read
		// at most the room, recording, and the host records only a read
		// that reaches the end of the file. One read, not two.
		first := o
		first.Partial = true
		r, err := readWhole(c, path, first, room, abi.ReadRecord)
		switch {
		case err != nil, r.Recorded, !r.Binary && !r.Cut && r.shown:
			// Recorded, or a text that ended within the room where the
			// host keeps no record: what the reads below would show.
			return r, err
		case !r.Binary && r.shown:
			// Larger than the room, and its first lines are shown: the
			// read that shows them records.
			return read(abi.ReadRecord)
		}
	}
	r, err := read(0)
	if err != nil || !r.shown {
		return r, err
	}
	return read(abi.ReadRecord)
}

// sureToShow reports whether a whole read of a file within limit bytes
// shows some of it, whatever it holds: its text fits whole in the room
// (no line numbers to lengthen it, no file past the read limit shown
// cut), or nothing is cut, and a binary file shows some bytes.
func sureToShow(o Options, limit int64) bool {
	if binaryRaw(o.Room+o.Slack) <= 0 {
		return false
	}
	return !o.Cut || (!o.LineNumbers && !o.Partial && limit <= o.Room+o.Slack)
}

// fitsWhole reports whether a file whose text is room bytes at most is
// shown whole: nothing lengthens it, and a binary file shows some bytes.
func fitsWhole(o Options, room int64) bool {
	return !o.LineNumbers && binaryRaw(room) > 0
}

// readWhole reads path from its start, within limit, recording the read
// as record says (0 or abi.ReadRecord).
func readWhole(c *sdk.Call, path string, o Options, limit int64, record uint32) (Result, error) {
	info, data, err := sdk.Read(path, 0, limit, record)
	if err != nil {
		return Result{}, err
	}
	if info.Flags&abi.ReadIsBinary != 0 {
		r, err := readBinary(path, info.FileSize, o.Room+o.Slack)
		r.Recorded = info.Flags&abi.ReadRecorded != 0
		return r, err
	}
	r := Result{Size: info.FileSize, Recorded: info.Flags&abi.ReadRecorded != 0}
	whole := info.Flags&abi.ReadEOF != 0
	if !whole && !o.Partial {
		return Result{}, sdk.Failed("%s is %d bytes, more than the read limit of %d bytes, %s; read it in parts with start_line and end_line", path, info.FileSize, limit, LimitKey(c.Limits))
	}
	if !whole {
		// The host may have cut inside a line, or inside a character:
		// only whole lines are shown.
		data = data[:lastLineEnd(data)]
	}
	r.Text, r.Cut, r.shown = show(data, 1, o, !whole, path, info.FileSize)
	return r, nil
}

// LimitKey names the setting that makes the read limit what it is: the
// limit is the smaller of two (SRD 3.6.8), and an operator looking for
// the number must find the one in force, not the other.
func LimitKey(l abi.Limits) string {
	if l.AvailableCapacityBytes > 0 && (l.MaxFileReadBytes <= 0 || l.AvailableCapacityBytes < l.MaxFileReadBytes) {
		return "set by available_capacity_bytes (tools.output.available_capacity_bytes), the room left for a result, which is less than tools.read_file.max_file_read_bytes"
	}
	return "set by tools.read_file.max_file_read_bytes"
}

// readRange reads o's lines of path, recording the read as record says.
func readRange(path string, o Options, record uint32) (Result, error) {
	start, end := uint32(1), uint32(0)
	if o.StartLine != nil {
		start = *o.StartLine
	}
	if o.EndLine != nil {
		end = *o.EndLine
	}
	if start == 0 || (o.EndLine != nil && end == 0) {
		return Result{}, sdk.BadArgs("start_line and end_line are 1-based; 0 is not a line number")
	}
	if end != 0 && start > end {
		return Result{}, sdk.BadArgs("start_line %d is after end_line %d", start, end)
	}
	info, data, err := sdk.ReadLines(path, start, end, record)
	if err != nil {
		return Result{}, err
	}
	if info.Flags&abi.ReadIsBinary != 0 {
		return Result{}, sdk.BadArgs("%s is a binary file; line ranges apply only to text files, so read it without start_line/end_line", path)
	}
	if info.Lines == 0 && start > 1 {
		return Result{}, sdk.BadArgs("start_line %d is past the end of %s", start, path)
	}
	r := Result{Size: info.FileSize, Recorded: info.Flags&abi.ReadRecorded != 0}
	r.Text, r.Cut, r.shown = show(data, start, o, false, path, info.FileSize)
	return r, nil
}

// show numbers data's lines from first when asked and, with o.Cut, fits
// the text in o.Room, after which a note says where it was cut (the note
// is not counted in o.Room; a text that fits whole in o.Room+o.Slack
// needs none). It returns the text, whether it was cut, and whether it
// shows anything of data: false when not one whole line fits.
// partial says data is already less than the file.
func show(data []byte, first uint32, o Options, partial bool, path string, size int64) (text string, cut, shown bool) {
	all := data
	if o.LineNumbers {
		all = Number(data, first)
	}
	if !o.Cut || (!partial && int64(len(all)) <= o.Room+o.Slack) {
		return string(all), false, true
	}
	keep := all[:lastLineEnd(all[:max(0, min(int64(len(all)), o.Room))])]
	lines := uint32(countLines(keep))
	if lines == 0 {
		// Not one whole line fits: the note alone says where to read.
		return cutNote(path, first, first-1, size), true, false
	}
	return string(keep) + cutNote(path, first, first+lines-1, size), true, true
}

// cutNote says which lines a cut text shows and how to read on.
func cutNote(path string, first, last uint32, size int64) string {
	if last < first {
		return fmt.Sprintf("%s not even line %d fits in the room left (%s is %d bytes); read it with read_file start_line and end_line\n", Truncated, first, path, size)
	}
	return fmt.Sprintf("%s showing lines %d-%d of %s (%d bytes); read on with read_file start_line %d\n", Truncated, first, last, path, size, uint64(last)+1)
}

// Number prefixes each line of data with its number, counting from first,
// and NumberSep: "1→alpha\n2→beta". A final line without a newline is
// numbered too; empty data stays empty.
func Number(data []byte, first uint32) []byte {
	if len(data) == 0 {
		return data
	}
	out := make([]byte, 0, len(data)+countLines(data)*(len(NumberSep)+4))
	n := first
	atStart := true
	for _, b := range data {
		if atStart {
			out = strconv.AppendUint(out, uint64(n), 10)
			out = append(out, NumberSep...)
			n++
			atStart = false
		}
		out = append(out, b)
		if b == '\n' {
			atStart = true
		}
	}
	return out
}

// countLines counts lines, a final one without a newline included.
func countLines(b []byte) int {
	n := 0
	for i, c := range b {
		if c == '\n' || i == len(b)-1 {
			n++
		}
	}
	return n
}

// lastLineEnd is the length of b's whole lines: up to and including its
// last newline.
func lastLineEnd(b []byte) int {
	for i := len(b) - 1; i >= 0; i-- {
		if b[i] == '\n' {
			return i + 1
		}
	}
	return 0
}

// readBinary returns as much of the file as fits in room, base64-encoded;
// the host must not cut it further (FR-TOOL-READ-01b).
func readBinary(path string, size, room int64) (Result, error) {
	raw := binaryRaw(room)
	_, data, err := sdk.Read(path, 0, raw, abi.ReadBase64)
	if err != nil {
		return Result{}, err
	}
	header := BinaryHeader
	if raw < size {
		header += Truncated
	}
	return Result{Text: header + "\n" + string(data), Binary: true, Size: size, Cut: raw < size, shown: len(data) > 0}, nil
}

// binaryRaw is how many bytes of a binary file fit in room once
// base64-encoded under its header.
func binaryRaw(room int64) int64 {
	avail := room - int64(len(BinaryHeader+Truncated+"\n"))
	return max(avail/4*3, 0)
}
