//go:build !linux

package proc

import "log/slog"

// killSession does nothing here: without /proc there is no cheap way to
// list a session, so only the process group is killed, and a child that
// made a group of its own survives the command.
func killSession(int, *slog.Logger) {}
