package proc

import (
	"errors"
	"fmt"
	"path"
	"strings"
)

// DefaultEnvDenylist returns the globs for variable names that commands
// never see (SRD CFG-ENV-01): names that conventionally carry credentials.
// Configured globs add to these; they cannot remove them. Each call returns
// a fresh slice, so callers may append to it freely.
func DefaultEnvDenylist() []string {
	return []string{
		"*_KEY",
		"*_TOKEN",
		"*_SECRET",
		"*_PASSWORD",
		"AWS_*",
		"ANTHROPIC_*",
		"OPENAI_*",
	}
}

// ValidateEnvDenylist reports the first glob that is not valid path.Match
// syntax, or is empty, so a bad configuration fails at load time rather
// than silently leaking a variable.
func ValidateEnvDenylist(globs []string) error {
	for _, g := range globs {
		if g == "" {
			return errors.New("proc: env denylist: empty glob")
		}
		if _, err := path.Match(g, ""); err != nil {
			return fmt.Errorf("proc: env denylist glob %q: %w", g, err)
		}
	}
	return nil
}

// SanitizeEnv returns environ without the variables whose name matches any
// glob in denylist (path.Match syntax, case-sensitive as names are on
// Unix). Pass DefaultEnvDenylist() plus the configured additions. environ
// is not modified and the order of the survivors is kept. A glob that is
// not valid syntax (see ValidateEnvDenylist) matches its literal text.
func SanitizeEnv(environ []string, denylist []string) []string {
	out := make([]string, 0, len(environ))
	for _, kv := range environ {
		if name, _ := splitEnv(kv); !denied(name, denylist) {
			out = append(out, kv)
		}
	}
	return out
}

func denied(name string, denylist []string) bool {
	for _, g := range denylist {
		ok, err := path.Match(g, name)
		if ok || (err != nil && g == name) {
			return true
		}
	}
	return false
}

// splitEnv splits NAME=value; an entry without '=' is all name.
func splitEnv(kv string) (name, value string) {
	name, value, _ = strings.Cut(kv, "=")
	return name, value
}
