package hostfn

import (
	"encoding/binary"

	"github.com/tetratelabs/wazero/api"

	"github.com/toolhost/toolhost/abi"
)

// What one host function call may make the host hold is bounded by the
// call's limits (Call.Limits), never by what the plugin asks: a plugin is
// untrusted code, and a negative or absurd size must not become an
// allocation (FR-LIM-*, NFR-SEC-*). Each function clamps
// or refuses, as its documentation in abi/README.md allows.
const (
	// maxPathBytes bounds a path argument, like the kernel's PATH_MAX.
	maxPathBytes = 4096
	// maxEventBytes bounds one event_emit chunk. Subscribers get output
	// as it comes; a plugin with more to say emits more chunks.
	maxEventBytes = 64 << 10
	// maxCommitFiles bounds the files of one fs_commit, before its
	// request is decoded. A patch of max_patch_bytes (512 KiB by default)
	// touching more files than this is better split.
	maxCommitFiles = 4096
	// commitScanMultiple bounds the total new content of one fs_commit
	// to this many files of the most one file may hold (commitFileLimit).
	commitScanMultiple = 4
	// minListEntryBytes is the least one entry of a listing takes in any
	// output a model sees (list_directory's JSON object per entry is
	// longer), so a page of more entries than the output limit divided
	// by it could never be shown.
	minListEntryBytes = 32
)

// readLimit is the most fs_read returns: what a text read may show
// (max_file_read_bytes) or a binary one may encode into the output
// (the output limit), whichever is larger.
func (c *Call) readLimit() int64 {
	l := c.Limits.WithDefaults()
	return max(l.MaxFileReadBytes, l.OutputLimit())
}

// scanLimit is max_scan_bytes: the most a host function reads whole (a
// file for update, either side of a diff) or scans for lines.
// A limit a Call leaves at zero is the default, never none.
func (c *Call) scanLimit() int64 { return c.Limits.WithDefaults().MaxScanBytes }

func (c *Call) outputLimit() int64 { return c.Limits.WithDefaults().OutputLimit() }

// listLimit caps the entries of one fs_list page, whatever max_entries
// says (0 included): no more than the output limit can show.
func (c *Call) listLimit() int { return int(max(c.outputLimit()/minListEntryBytes, 1)) }

// commitFileLimit is the most new content one file of an fs_commit may
// have: the largest file that can be read for update, grown by the
// largest patch.
func (c *Call) commitFileLimit() int64 {
	return c.scanLimit() + c.Limits.WithDefaults().MaxPatchBytes
}

// commitLimit is the most new content one fs_commit may write in all.
func (c *Call) commitLimit() int64 { return commitScanMultiple * c.commitFileLimit() }

// checkCommitRequest refuses a request too large to decode, before
// decoding allocates anything for it.
func (c *Call) checkCommitRequest(req []byte) error {
	if len(req) >= 4 {
		if n := binary.LittleEndian.Uint32(req); n > maxCommitFiles {
			return fail(abi.StatusTooLarge, abi.KindExecutionFailed,
				"fs_commit: %d files in one commit, more than %d; split the change into smaller ones (nothing was changed)", n, maxCommitFiles)
		}
	}
	// Paths and lengths add at most this much to the content.
	if limit := c.commitLimit() + maxCommitFiles*(12+maxPathBytes); int64(len(req)) > limit {
		return fail(abi.StatusTooLarge, abi.KindExecutionFailed,
			"fs_commit: a request of %d bytes is more than one commit may write (%d bytes of content); split the change into smaller ones (nothing was changed)", len(req), c.commitLimit())
	}
	return nil
}

// guestPath reads a path argument from guest memory, refusing one longer
// than any real path before copying it.
func guestPath(mem api.Memory, ptr, n uint32) (string, error) {
	if n > maxPathBytes {
		return "", fail(abi.StatusInvalid, abi.KindBadArgs, "a path of %d bytes is longer than the %d bytes any file path may have; pass the path as the model gave it", n, maxPathBytes)
	}
	return guestString(mem, ptr, n)
}
