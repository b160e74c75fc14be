package confine

import "errors"

// restrictLandlock applies p's Writable and Readable rules to the calling
// process, all threads, and returns the Landlock ABI version enforced.
// Owned by the landlock/seccomp builder; this is its placeholder.
func restrictLandlock(p *Policy) (int, error) {
	return 0, errors.New("confine: Landlock rules are not built yet")
}
