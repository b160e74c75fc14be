package config

import (
	"fmt"
	"path"
	"regexp"
	"slices"
	"strings"

	"github.com/toolhost/toolhost/host/internal/secrets"
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

// urlUserinfo finds the userinfo of URLs in a value: scheme://userinfo@,
// up to the authority's last '@' as URL parsers read it, so a password
// holding a raw '@' is removed whole.
var urlUserinfo = regexp.MustCompile(`(?i)\b[a-z][a-z0-9+.-]*://[^\s/?#]*@`)

// dsnCredentials finds user:password@ opening a value or one of its
// fields, as database DSNs write them without a scheme
// (root:pw@tcp(db:3306)/app).
var dsnCredentials = regexp.MustCompile(`(?:^|[\s,;])[A-Za-z0-9_.~-]+:[^\s@/:]+@`)

// envName is what a variable name in tools.environment.keep must look
// like.
var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// EnvRemoval is one variable hidden from commands, or whose value lost
// its credentials, and the rule that applied. It never holds the value.
type EnvRemoval struct {
	Name string
	Rule string
	// Stripped says the command sees the variable, its value without the
	// credentials.
	Stripped bool
}

// Sanitize returns environ (NAME=value entries) as commands may see it,
// in its order, and what it removed and why. A variable is hidden when
//   - its name matches a denylist glob, the defaults or the configured
//     ones (path.Match syntax, case-insensitive: hiding more is the safe
//     side on every system);
//   - its name looks like a secret's (secrets.NameRules: PASSWORD,
//     PASSPHRASE, JWT, WEBHOOK, CONNECTION_STRING anywhere, PAT, DSN, PWD
//     as words, ..., case-insensitive), unless Keep names it;
//   - its value opens with user:password@ (a DSN without a scheme), unless
//     Keep names it;
//   - its value holds a credential whatever the name (secrets.Shapes: a
//     token of a well-known prefix, a JWT, a private key block, a webhook
//     URL, a connection string's Password= or AccountKey=), unless Keep
//     names it.
//
// git's configuration in the environment is one group, decided before
// these rules (gitConfigPairs, gitConfigParameters): GIT_CONFIG_COUNT and
// its pairs GIT_CONFIG_KEY_n and GIT_CONFIG_VALUE_n, each pair dropped
// whole when it carries a credential or would stop git, the rest
// renumbered, and the entries of GIT_CONFIG_PARAMETERS likewise, so that
// git keeps working with the rest; the name rules do not apply to them.
//
// Otherwise the credentials of the URLs in its value are removed, unless
// Keep names it: scheme://user:password@host becomes scheme://host, as
// does scheme://token@host where the user is long and mixes letters and
// digits (API keys in DSNs), and in a proxy variable (*_PROXY) any user.
// The command keeps the rest: HTTPS_PROXY=http://u:p@proxy:8080 still
// sends it through the proxy, without the secret, where hiding the
// variable would send it straight out, around a proxy the network may
// require.
//
// Keep cannot bring back a variable the denylist names. environ is not
// modified.
func (e Environment) Sanitize(environ []string) (kept []string, removed []EnvRemoval) {
	deny := append(DefaultEnvDenylist(), e.Denylist...)
	git := e.gitConfigPairs(deny, environ)
	done := map[string]bool{}
	kept = make([]string, 0, len(environ))
	for _, kv := range environ {
		name, value, _ := strings.Cut(kv, "=")
		if _, pair := gitPairIndex(name); pair || name == gitCount {
			if r, ok := git.removed[name]; ok && !done[name] {
				removed = append(removed, r)
			}
			if name == gitCount && !done[name] {
				kept = append(kept, git.entries...)
			}
			done[name] = true
			continue
		}
		seen, hide, rule := e.filter(deny, name, value)
		if rule != "" {
			removed = append(removed, EnvRemoval{Name: name, Rule: rule, Stripped: !hide})
		}
		if hide {
			continue
		}
		if seen != value {
			kv = name + "=" + seen
		}
		kept = append(kept, kv)
	}
	return kept, removed
}

// Rules lists, as comments, every rule Sanitize applies, in its order:
// the denylist's globs, the name rules and the value shapes (with their
// regular expressions), so that an operator sees what is hidden and can
// bring a variable back with keep.
func (e Environment) Rules() string {
	var b strings.Builder
	b.WriteString("# rules that hide a variable from commands, in order (tools.environment; keep = [\"NAME\"] passes a variable the later rules hide; the denylist always wins):\n")
	fmt.Fprintf(&b, "#   denylist globs: %s\n", strings.Join(append(DefaultEnvDenylist(), e.Denylist...), ", "))
	if len(e.Keep) > 0 {
		fmt.Fprintf(&b, "#   kept, the rules below not applied: %s\n", strings.Join(e.Keep, ", "))
	}
	b.WriteString("#   " + gitRules + "\n")
	names := make([]string, 0, len(secrets.NameRules()))
	for _, r := range secrets.NameRules() {
		names = append(names, r.String())
	}
	fmt.Fprintf(&b, "#   secret-looking names, any case: %s\n", strings.Join(names, "; "))
	b.WriteString("#   value opens with user:password@ (a DSN without a scheme)\n")
	for _, s := range secrets.Shapes() {
		fmt.Fprintf(&b, "#   value looks like a credential: %s: %s", s.Name, s.Pattern)
		if s.Check != "" {
			fmt.Fprintf(&b, " (and %s)", s.Check)
		}
		b.WriteString("\n")
	}
	b.WriteString("#   otherwise the value keeps all but its URL credentials: scheme://user:password@, scheme://token@ (a long user of letters and digits), a proxy's user (*_PROXY)\n")
	return b.String()
}

// filter decides one variable: hidden, or the value the command sees;
// rule is what applied, "" for nothing.
func (e Environment) filter(deny []string, name, value string) (seen string, hide bool, rule string) {
	if g, ok := deniedBy(deny, name); ok {
		return "", true, "denylist glob " + g
	}
	if slices.Contains(e.Keep, name) {
		return value, false, ""
	}
	if name == gitParameters {
		return e.gitConfigParameters(value)
	}
	if rule := secretName(name); rule != "" {
		return "", true, rule
	}
	if dsnCredentials.MatchString(value) {
		return "", true, "value holds credentials (user:password@)"
	}
	if shape, ok := secrets.Value(value); ok {
		return "", true, "value looks like a credential (" + shape.Name + ")"
	}
	seen, rule = stripURLCredentials(name, value)
	return seen, false, rule
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

// secretName is the name rule (secrets.NameRules) name matches, as
// Sanitize reports it, "" for none.
func secretName(name string) string {
	if r, ok := secrets.Name(name); ok {
		return "secret-looking name (" + r.String() + ")"
	}
	return ""
}

// stripURLCredentials removes the userinfo of the URLs in value that hold
// credentials, and says which rule applied first ("" if none did).
func stripURLCredentials(name, value string) (stripped, rule string) {
	proxy := strings.HasSuffix(strings.ToUpper(name), "_PROXY")
	stripped = urlUserinfo.ReplaceAllStringFunc(value, func(m string) string {
		scheme := m[:strings.Index(m, "://")+len("://")]
		userinfo := m[len(scheme) : len(m)-1]
		user, pass, hasPass := strings.Cut(userinfo, ":")
		why := ""
		switch {
		case hasPass && pass != "":
			why = "URL credentials removed from the value (scheme://user:password@)"
		case !hasPass && tokenLike(user):
			why = "URL credentials removed from the value (scheme://token@)"
		case proxy && userinfo != "":
			// A proxy's user is only ever used to authenticate, however
			// short (http://tok@proxy).
			why = "URL credentials removed from the value (scheme://user@ of a proxy)"
		default:
			return m
		}
		if rule == "" {
			rule = why
		}
		return scheme
	})
	return stripped, rule
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
