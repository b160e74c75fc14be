//go:build !linux

package confine

import (
	"io"
	"log/slog"
	"os"
)

// warmPool starts nothing here: no command can be confined.
type warmPool struct{}

func newWarmPool(exe string, log *slog.Logger) *warmPool { return &warmPool{} }
func (p *warmPool) enable(small string)                  {}
func (p *warmPool) warm(newNet bool)                     {}
func (p *warmPool) close()                               {}
func (p *warmPool) status() poolStatus                   { return poolStatus{} }

// warmLauncher is never started here.
type warmLauncher struct{}

func (p *warmPool) take(newNet bool) *warmLauncher                      { return nil }
func (w *warmLauncher) discard()                                        {}
func (w *warmLauncher) v2Cgroup() string                                { return "" }
func (w *warmLauncher) adopt()                                          {}
func (p *warmPool) limitCgroups(l Limits)                               {}
func (w *warmLauncher) presetFor(l Limits) *Cgroup                      { return nil }
func (w *warmLauncher) dropPreset()                                     {}
func (w *warmLauncher) takeTmp() string                                 { return "" }
func (p *warmPool) mountAhead(ahead func(newNet bool) (string, []byte)) {}

// DoctorLaunchers reports nothing here: no command can be confined.
func DoctorLaunchers(w io.Writer, exe, small string, n Network) error { return nil }

// owner is unknown here: no small launcher is used.
func owner(fi os.FileInfo) uint32 { return ^uint32(0) }
