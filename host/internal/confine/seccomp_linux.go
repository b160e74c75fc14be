package confine

import "errors"

// loadSeccomp sets no_new_privs and loads the seccomp filter for p's
// network mode on every thread. Owned by the landlock/seccomp builder;
// this is its placeholder.
func loadSeccomp(p *Policy) error {
	return errors.New("confine: the seccomp filter is not built yet")
}
