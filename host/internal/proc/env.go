package proc

import "strings"

// Which variables a command may see is decided before it gets here
// (config.Environment.Sanitize, applied by the engine): Spec.Env is passed
// on as is, with PWD set to the command's directory.

// splitEnv splits NAME=value; an entry without '=' is all name.
func splitEnv(kv string) (name, value string) {
	name, value, _ = strings.Cut(kv, "=")
	return name, value
}
