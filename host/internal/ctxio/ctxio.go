// Package ctxio makes long reads of files end with the call that asked
// for them: hashing, copying or journaling a large file stops when the
// call's deadline passes or the call is cancelled.
package ctxio

import (
	"context"
	"io"
)

// Reader returns a reader of r that fails with ctx's error once ctx ends.
// It checks before each Read, so a read already under way finishes: a
// Read of a regular file is short, and what bounds the whole is the number
// of them.
func Reader(ctx context.Context, r io.Reader) io.Reader { return reader{ctx, r} }

type reader struct {
	ctx context.Context
	r   io.Reader
}

func (c reader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}
