package confine

import "errors"

// Settings are the host's side of every call's policy: [tools.run_command]
// and where toolhost keeps its state. Owned by the policy builder; this is
// its placeholder.
type Settings struct {
	Mode          Mode
	Network       Network
	ExtraWritable []string
	ShareCaches   bool
	Limits        Limits
	// StateDir is toolhost's state directory: per-root caches and per-call
	// temporary directories are made under StateDir/sandbox.
	StateDir string
	// Protected are toolhost's own configuration files and directories:
	// read-only inside when they lie in a writable tree, hidden otherwise.
	Protected []string
	// Home is the user's home directory; Path the PATH toolchains are
	// looked for on; Environ the sanitized environment commands get.
	Home    string
	Path    string
	Environ []string
	// ProxySocket is the proxy's socket for NetworkAllowlist.
	ProxySocket string
}

// Call is what Build needs of one call.
type Call struct {
	ID    string
	Roots []string // the sandbox's roots, absolute and canonical
	Dir   string   // working directory, inside a root
}

// Build returns the policy of one call and a cleanup that removes what it
// made (the private temporary directory).
func Build(s Settings, c Call) (*Policy, func(), error) {
	return nil, func() {}, errors.New("confine: policies are not built yet")
}

// Hint returns a line to append to a command's output when stderr shows
// an operation the policy denied, naming what is writable; "" otherwise.
func Hint(p *Policy, stderr []byte) string { return "" }
