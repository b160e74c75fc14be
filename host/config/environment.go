package config

import (
	"fmt"
	"path"
	"regexp"
	"strings"
)

// The environment policy (CFG-ENV-01, FR-EXE-06) lives here, beside its
// keys, so that "toolhost config show" can say what it hides and why with
// the very rules the engine applies to the commands tools start.

// DefaultEnvDenylist returns the SRD's globs of variable names commands
// never see (CFG-ENV-01). Configured globs add to them; nothing removes
// them. Each call returns a fresh slice.
func DefaultEnvDenylist() []string {
	return []string{"*_KEY", "*_TOKEN", "*_SECRET", "*_PASSWORD", "AWS_*", "ANTHROPIC_*", "OPENAI_*"}
}

// secretParts are the pieces of a name that mark it as holding a secret,
// wherever they appear in it (GH_TOKEN, TOKENS, MYAPIKEY, PGPASSWORD,
// GOOGLE_APPLICATION_CREDENTIALS, NPM_AUTH, OAUTH_CLIENT). A few harmless
// names go too (TOKENIZERS_PARALLELISM); tools.environment.keep brings
// them back.
var secretParts = []string{"KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL", "AUTH"}

// secretWords are whole words of a name (between underscores or other
// separators) that mark a secret but are too short to match anywhere:
// GH_PAT but not PATH, DB_PASS but not GIT_ASKPASS, SMTP_PW but not PWD.
var secretWords = []string{"PAT", "PASS", "PW"}

// urlUserinfo finds the userinfo of URLs in a value: scheme://userinfo@.
var urlUserinfo = regexp.MustCompile(`(?i)\b[a-z][a-z0-9+.-]*://([^\s/?#@\[\]]*)@`)

// dsnCredentials finds user:password@ opening a value or one of its
// fields, as database DSNs write them without a scheme
// (root:pw@tcp(db:3306)/app).
var dsnCredentials = regexp.MustCompile(`(?:^|[\s,;])[A-Za-z0-9_.~-]+:[^\s@/:]+@`)

// envName is what a variable name in tools.environment.keep must look
// like.
var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// EnvRemoval is one variable hidden from commands and the rule that hid
// it. It never holds the value.
type EnvRemoval struct {
	Name string
	Rule string
}

// Sanitize returns environ (NAME=value entries) without the variables
// commands must not see, in their order, and what it removed and why. A
// variable is hidden when
//   - its name matches a denylist glob, the defaults or the configured
//     ones (path.Match syntax, case-insensitive: hiding more is the safe
//     side on every system);
//   - its name looks like a secret's (secretParts anywhere, secretWords as
//     words, case-insensitive), unless Keep names it;
//   - its value carries credentials in a URL (scheme://user:password@, or
//     scheme://token@ where the user is long and mixes letters and digits,
//     as API keys in DSNs do) or opens with user:password@, unless Keep
//     names it.
//
// Keep cannot bring back a variable the denylist names. environ is not
// modified.
func (e Environment) Sanitize(environ []string) (kept []string, removed []EnvRemoval) {
	deny := append(DefaultEnvDenylist(), e.Denylist...)
	kept = make([]string, 0, len(environ))
	for _, kv := range environ {
		name, value, _ := strings.Cut(kv, "=")
		if rule := e.hides(deny, name, value); rule != "" {
			removed = append(removed, EnvRemoval{Name: name, Rule: rule})
			continue
		}
		kept = append(kept, kv)
	}
	return kept, removed
}

// hides is the rule that hides the variable, or "".
func (e Environment) hides(deny []string, name, value string) string {
	if g, ok := deniedBy(deny, name); ok {
		return "denylist glob " + g
	}
	for _, k := range e.Keep {
		if k == name {
			return ""
		}
	}
	if rule := secretName(name); rule != "" {
		return rule
	}
	return urlCredentials(value)
}

// deniedBy returns the first glob of deny matching name. A glob that is
// not valid syntax (Validate refuses it) matches its literal text.
func deniedBy(deny []string, name string) (string, bool) {
	upper := strings.ToUpper(name)
	for _, g := range deny {
		ok, err := path.Match(strings.ToUpper(g), upper)
		if ok || (err != nil && strings.EqualFold(g, name)) {
			return g, true
		}
	}
	return "", false
}

func secretName(name string) string {
	upper := strings.ToUpper(name)
	for _, part := range secretParts {
		if containsPart(upper, part) {
			return "secret-looking name (contains " + part + ")"
		}
	}
	words := strings.FieldsFunc(upper, func(r rune) bool { return (r < 'A' || r > 'Z') && (r < '0' || r > '9') })
	for _, w := range words {
		for _, sw := range secretWords {
			if w == sw {
				return "secret-looking name (the word " + sw + ")"
			}
		}
	}
	return ""
}

// containsPart reports whether part occurs in name. AUTH inside the word
// AUTHOR or AUTHORS (GIT_AUTHOR_NAME, identity rather than a credential)
// does not count; AUTHORIZATION and AUTHORITY do.
func containsPart(name, part string) bool {
	for i := 0; ; {
		j := strings.Index(name[i:], part)
		if j < 0 {
			return false
		}
		i += j + len(part)
		if part != "AUTH" || !authorWord(name[i:]) {
			return true
		}
	}
}

// authorWord reports whether rest, what follows AUTH, completes the word
// AUTHOR or AUTHORS.
func authorWord(rest string) bool {
	after, ok := strings.CutPrefix(rest, "OR")
	if !ok {
		return false
	}
	after = strings.TrimPrefix(after, "S")
	return after == "" || after[0] < 'A' || after[0] > 'Z'
}

func urlCredentials(value string) string {
	for _, m := range urlUserinfo.FindAllStringSubmatch(value, -1) {
		user, pass, hasPass := strings.Cut(m[1], ":")
		if hasPass && pass != "" {
			return "value holds URL credentials (scheme://user:password@)"
		}
		if !hasPass && tokenLike(user) {
			return "value holds URL credentials (scheme://token@)"
		}
	}
	if dsnCredentials.MatchString(value) {
		return "value holds credentials (user:password@)"
	}
	return ""
}

// tokenLike reports whether a URL's user looks like an API key rather
// than a name: long, with letters and digits (git@ and deploy@ are
// names; a 32-character hex key is not).
func tokenLike(user string) bool {
	if len(user) < 20 {
		return false
	}
	var letter, digit bool
	for _, r := range user {
		switch {
		case r >= '0' && r <= '9':
			digit = true
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z':
			letter = true
		}
	}
	return letter && digit
}

// validateKeep checks tools.environment.keep: variable names, none of
// them hidden by the denylist, which keep cannot override.
func (e Environment) validateKeep() error {
	deny := append(DefaultEnvDenylist(), e.Denylist...)
	for _, k := range e.Keep {
		if !envName.MatchString(k) {
			return fmt.Errorf("%q is not a variable name (letters, digits, underscores); keep takes exact names, not globs", k)
		}
		if g, ok := deniedBy(deny, k); ok {
			return fmt.Errorf("%s is hidden by the denylist glob %s, which keep cannot override; remove it from keep (the denylist always wins)", k, g)
		}
	}
	return nil
}

func envGlobs(patterns []string) error {
	for _, p := range patterns {
		if _, err := path.Match(p, ""); p == "" || err != nil {
			return fmt.Errorf("%q is not a valid variable-name glob (e.g. *_TOKEN)", p)
		}
	}
	return nil
}
