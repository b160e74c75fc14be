package confine

import (
	"context"
	"errors"
	"io"
)

// Support is what this kernel and machine allow, found once at start
// (Probe). Owned by the probe builder; this is its placeholder.
type Support struct {
	LandlockABI int
}

// Probe finds what the kernel allows.
func Probe(ctx context.Context) Support { return Support{} }

// Require returns nil when mode and network can be enforced here, else an
// error naming what is missing and the fix (fail closed).
func (s Support) Require(m Mode, n Network) error {
	if m == ModeOff {
		return nil
	}
	return errors.New("confine: the probe is not built yet")
}

// Doctor writes the report toolhost sandbox doctor prints.
func Doctor(w io.Writer, s Support) error { return errors.New("confine: doctor is not built yet") }
