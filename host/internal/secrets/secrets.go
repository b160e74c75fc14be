// Package secrets lists where credentials are kept on a Unix system: the
// one list that the confinement of run_command hides from commands and
// that the configuration checks writable directories against. Two copies of it drifted apart once (a directory the
// configuration accepted as writable was one the confinement then
// refused at every call), so both read it from here. It also holds the
// one set of rules that tells a credential by its name or its text
// (NameRules, Shapes): the environment filter of commands and the
// redaction of summaries and journaled arguments both apply them.
//
// The package is a leaf: it imports no other toolhost package, performs
// no I/O and keeps no state (its compiled patterns never change); every
// function returns a fresh slice the caller may change.
package secrets

// Home returns the paths, relative to a user's home directory, that no
// command may read in any mode: credentials, keyrings, password stores,
// browser profiles, and coding agents' own configuration (which holds
// their tokens). Each is a file or a directory; everything below a
// directory is secret too.
func Home() []string {
	return []string{
		".ssh", ".aws", ".gnupg", ".netrc", ".git-credentials", ".docker", ".kube",
		".npmrc", ".pypirc", ".cargo/credentials", ".cargo/credentials.toml",
		".config/gh", ".config/gcloud", ".config/hub", ".azure", ".password-store",
		".local/share/keyrings", ".pgpass", ".vault-token", ".terraform.d",
		".config/op", ".config/rclone", ".config/github-copilot",
		".claude", ".claude.json", ".codex", ".gemini", ".cursor", ".aider",
		".continue", ".config/git/credentials", ".config/Code",
		".mozilla", ".config/google-chrome", ".config/chromium",
	}
}

// Etc returns the files and directories of /etc that hold secrets
// although /etc itself is readable: password hashes, sudo rules, host
// and TLS private keys, saved network credentials.
func Etc() []string {
	return []string{
		"/etc/shadow", "/etc/shadow-", "/etc/gshadow", "/etc/gshadow-",
		"/etc/sudoers", "/etc/sudoers.d", "/etc/security/opasswd",
		"/etc/ssl/private", "/etc/krb5.keytab", "/etc/NetworkManager/system-connections",
		"/etc/wpa_supplicant", "/etc/docker/key.json",
	}
}

// EtcGlobs returns patterns (path.Match syntax) of further /etc secrets:
// the ssh host private keys, whose names depend on the key types.
func EtcGlobs() []string {
	return []string{"/etc/ssh/ssh_host_*_key"}
}

// RunUser is where login sessions keep their sockets (the ssh and gpg
// agents, D-Bus, the keyring): never reachable by a command.
const RunUser = "/run/user"
