package abi

import "fmt"

// Status is the outcome class of a host function call.
type Status uint32

// Host function statuses. The numbers are part of the ABI.
const (
	StatusOK         Status = 0
	StatusInvalid    Status = 1 // malformed request: bad pointer, bad UTF-8, bad flags
	StatusNotGranted Status = 2 // capability not granted, or called during summary
	StatusDenied     Status = 3 // sandbox denial
	StatusNotFound   Status = 4
	StatusTooLarge   Status = 5 // a limit was exceeded
	StatusIO         Status = 6
	StatusStale      Status = 7 // stale-file protection refused a write
	StatusWrongType  Status = 8 // a directory where a file was expected, or the reverse
	StatusScanLimit  Status = 9 // a line-range read needed more than the scan limit
	StatusCancelled  Status = 10
)

var statusNames = [...]string{"ok", "invalid", "not_granted", "denied", "not_found", "too_large", "io", "stale", "wrong_type", "scan_limit", "cancelled"}

func (s Status) String() string {
	if int(s) < len(statusNames) {
		return statusNames[s]
	}
	return fmt.Sprintf("status(%d)", uint32(s))
}

// EncodeFailure packs a failure status and the length of its staged HostError
// JSON into the negative i64 a host function returns.
func EncodeFailure(s Status, n uint32) int64 { return -int64(uint64(s)<<32 | uint64(n)) }

// DecodeReturn splits a host function's return value. For ok results n is
// the response length.
func DecodeReturn(v int64) (s Status, n uint32) {
	if v >= 0 {
		return StatusOK, uint32(v)
	}
	u := uint64(-v)
	return Status(u >> 32), uint32(u)
}
