//go:build !linux

package confine

// gitlinkWatch is newrepos_watch_linux.go's: there is no watch here,
// where commands are not confined anyway.
type gitlinkWatch struct{}

func (st *settle) startWatch() *gitlinkWatch { return nil }

func (w *gitlinkWatch) stop() []Neutralized { return nil }
