//go:build !linux

package proc

import "errors"

// waitUnreaped is unavailable here, so the shell is reaped before its
// group is killed; the group id could in principle be reused in between.
func waitUnreaped(int) error { return errors.ErrUnsupported }
