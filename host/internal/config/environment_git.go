package config

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/toolhost/toolhost/host/internal/secrets"
)

// git reads configuration from the environment as well as from files:
// GIT_CONFIG_COUNT=n with the pairs GIT_CONFIG_KEY_i and GIT_CONFIG_VALUE_i
// for i below n, and GIT_CONFIG_PARAMETERS, the quoted list `git -c`
// passes on to the gits it starts. CI jobs hand git a token that way
// (http.extraheader=Authorization: ...). The variables are one group: a
// pair is kept or dropped whole, never its key without its value (git
// then stops at every call: "missing config key GIT_CONFIG_KEY_0"), and
// the name rules (KEY) do not apply to their names.
const (
	gitCount       = "GIT_CONFIG_COUNT"
	gitParameters  = "GIT_CONFIG_PARAMETERS"
	gitKeyPrefix   = "GIT_CONFIG_KEY_"
	gitValuePrefix = "GIT_CONFIG_VALUE_"
)

// gitRules says, as `toolhost config show` prints it, what Sanitize does
// with git's configuration in the environment.
const gitRules = "git configuration in the environment (GIT_CONFIG_COUNT with GIT_CONFIG_KEY_n and GIT_CONFIG_VALUE_n, GIT_CONFIG_PARAMETERS): " +
	"a pair whose key carries credentials (credential.*, http.*.extraheader, url.*.insteadOf, *.password, *.token, *.secret, ...) " +
	"or whose key or value holds a credential by the rules below or a URL with a user, or that git could not read, is dropped; " +
	"the pairs left are renumbered from 0 and GIT_CONFIG_COUNT set to match (all dropped when it is no number), " +
	"so git works with the rest; the name rules do not apply to these names; keep = [\"GIT_CONFIG_KEY_n\"] or [\"GIT_CONFIG_VALUE_n\"] passes that pair"

// gitPairIndex returns n of GIT_CONFIG_KEY_<n> or GIT_CONFIG_VALUE_<n>,
// and whether name is one: git spells the index in decimal, without
// leading zeros.
func gitPairIndex(name string) (int, bool) {
	digits, ok := strings.CutPrefix(name, gitKeyPrefix)
	if !ok {
		digits, ok = strings.CutPrefix(name, gitValuePrefix)
	}
	if !ok || digits == "" || (len(digits) > 1 && digits[0] == '0') {
		return 0, false
	}
	n, err := strconv.Atoi(digits)
	if err != nil || n < 0 || strconv.Itoa(n) != digits {
		return 0, false
	}
	return n, true
}

// gitGroup is what Sanitize makes of GIT_CONFIG_COUNT and its pairs.
type gitGroup struct {
	// entries are GIT_CONFIG_COUNT and the pairs kept, renumbered, as
	// NAME=value, for the place of GIT_CONFIG_COUNT in the environment.
	entries []string
	// removed is what became of each variable of the group that the
	// command does not see as it was, by name.
	removed map[string]EnvRemoval
}

// gitConfigPairs decides GIT_CONFIG_COUNT and the GIT_CONFIG_KEY_n and
// GIT_CONFIG_VALUE_n of environ. Where a name occurs twice, the last
// wins, as it does for the commands toolhost starts.
func (e Environment) gitConfigPairs(deny []string, environ []string) gitGroup {
	g := gitGroup{removed: map[string]EnvRemoval{}}
	vars := map[string]string{}
	var indexes []int
	count, hasCount := "", false
	for _, kv := range environ {
		name, value, _ := strings.Cut(kv, "=")
		if name == gitCount {
			count, hasCount = value, true
			continue
		}
		if i, ok := gitPairIndex(name); ok {
			if _, seen := vars[name]; !seen {
				indexes = append(indexes, i)
			}
			vars[name] = value
		}
	}
	slices.Sort(indexes)
	indexes = slices.Compact(indexes)
	drop := func(name, rule string) {
		if _, ok := vars[name]; ok || name == gitCount {
			g.removed[name] = EnvRemoval{Name: name, Rule: rule}
		}
	}
	dropAll := func(rule string) {
		for _, i := range indexes {
			drop(gitKeyPrefix+strconv.Itoa(i), rule)
			drop(gitValuePrefix+strconv.Itoa(i), rule)
		}
	}
	if !hasCount {
		dropAll("git config pair without " + gitCount + ", which git does not read")
		return g
	}
	if glob, ok := deniedBy(deny, gitCount); ok {
		drop(gitCount, "denylist glob "+glob)
		dropAll("git config pair whose " + gitCount + " is hidden (denylist glob " + glob + ")")
		return g
	}
	n, err := strconv.ParseUint(count, 10, 31)
	if count == "" {
		n, err = 0, nil
	}
	if err != nil {
		drop(gitCount, "not a number, which stops git: dropped with its pairs")
		dropAll("git config pair whose " + gitCount + " is no number, which stops git")
		return g
	}
	var kept []string
	renumbered := false
	for _, i := range indexes {
		kn, vn := gitKeyPrefix+strconv.Itoa(i), gitValuePrefix+strconv.Itoa(i)
		if uint64(i) >= n {
			why := "git config pair beyond " + gitCount + "=" + count + ", which git does not read"
			drop(kn, why)
			drop(vn, why)
			continue
		}
		key, hasKey := vars[kn]
		value, hasValue := vars[vn]
		rule := e.gitPair(deny, kn, vn, key, value, hasKey, hasValue)
		if rule != "" {
			drop(kn, rule)
			drop(vn, rule)
			continue
		}
		j := len(kept) / 2
		renumbered = renumbered || j != i
		kept = append(kept, gitKeyPrefix+strconv.Itoa(j)+"="+key, gitValuePrefix+strconv.Itoa(j)+"="+value)
	}
	left := strconv.Itoa(len(kept) / 2)
	switch {
	case len(kept) == 0:
		drop(gitCount, "no git config pair left")
		return g
	case left != count || renumbered:
		g.removed[gitCount] = EnvRemoval{Name: gitCount, Rule: "set to " + left + ", the git config pairs left, renumbered from 0", Stripped: true}
	}
	g.entries = append([]string{gitCount + "=" + left}, kept...)
	return g
}

// gitPair decides the pair GIT_CONFIG_KEY_i (kn) and GIT_CONFIG_VALUE_i
// (vn): the rule that drops it, "" to keep it.
func (e Environment) gitPair(deny []string, kn, vn, key, value string, hasKey, hasValue bool) string {
	for _, name := range []string{kn, vn} {
		if glob, ok := deniedBy(deny, name); ok {
			return "git config pair dropped: " + name + " matches the denylist glob " + glob
		}
	}
	switch {
	case !hasKey:
		return "git config pair dropped: " + kn + " is missing, which stops git"
	case !hasValue:
		return "git config pair dropped: " + vn + " is missing, which stops git"
	case slices.Contains(e.Keep, kn) || slices.Contains(e.Keep, vn):
		return ""
	}
	if why := gitEntry(key, value); why != "" {
		return "git config pair dropped (" + gitKeyLabel(key) + "): " + why
	}
	return ""
}

// gitEntry says why the git configuration entry key=value must not
// reach a command, "" when it may: its key is one git keeps credentials
// under, or its key or value holds one, or git could not parse the key
// and would stop.
func gitEntry(key, value string) string {
	section, name, ok := gitKeyParts(key)
	if !ok {
		return "not a key git can read (section.name), which stops git"
	}
	bare := strings.NewReplacer("-", "", "_", "").Replace(name)
	switch {
	case section == "credential":
		return "credential.* names a credential helper or a user"
	case section == "http" && name == "extraheader":
		return "http.*.extraheader sends a header, often Authorization, with every request"
	case section == "url" && (name == "insteadof" || name == "pushinsteadof"):
		return "url.*.insteadOf rewrites remotes, often to a URL holding a token"
	case bare == "pass" || bare == "smtppass" || bare == "pat":
		return "*." + name + " holds a password"
	}
	for _, part := range []string{"password", "passwd", "passphrase", "token", "secret", "apikey", "accesskey", "privatekey", "authorization", "jwt"} {
		if strings.Contains(bare, part) {
			return "*." + name + " holds a credential"
		}
	}
	for _, part := range []struct{ what, text string }{{"key", key}, {"value", value}} {
		what, text := part.what, part.text
		switch shape, ok := secrets.Value(text); {
		case ok:
			return "its " + what + " looks like a credential (" + shape.Name + ")"
		case dsnCredentials.MatchString(text):
			return "its " + what + " holds credentials (user:password@)"
		case urlUserinfo.MatchString(text):
			return "its " + what + " holds a URL with a user or credentials (scheme://user@)"
		}
	}
	return ""
}

// gitKeyParts splits a git configuration key into its section and name,
// lower case, and reports whether git can read it: a section of letters,
// digits, '-' and '.', a dot, and a name that starts with a letter (the
// subsection between them is anything but a line break).
func gitKeyParts(key string) (section, name string, ok bool) {
	first, last := strings.IndexByte(key, '.'), strings.LastIndexByte(key, '.')
	if first <= 0 || last == len(key)-1 || strings.ContainsAny(key, "\n\x00") {
		return "", "", false
	}
	section, name = strings.ToLower(key[:first]), strings.ToLower(key[last+1:])
	for i, r := range name {
		if !(r >= 'a' && r <= 'z' || i > 0 && (r >= '0' && r <= '9' || r == '-')) {
			return "", "", false
		}
	}
	for _, r := range section {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-') {
			return "", "", false
		}
	}
	return section, name, true
}

// gitKeyLabel is key as a removal may show it: its section and name,
// the subsection (a URL that may hold a token) as "*".
func gitKeyLabel(key string) string {
	section, name, ok := gitKeyParts(key)
	switch {
	case !ok:
		return "a key git cannot read"
	case strings.IndexByte(key, '.') != strings.LastIndexByte(key, '.'):
		return section + ".*." + name
	}
	return section + "." + name
}

// gitParameter is one entry of GIT_CONFIG_PARAMETERS: its text as it
// stands there, and the key and value it gives.
type gitParameter struct {
	raw, key, value string
}

// gitConfigParameters decides GIT_CONFIG_PARAMETERS: the entries Sanitize
// drops go, the others stay as they were written; hide when none is
// left or git could not parse it.
func (e Environment) gitConfigParameters(value string) (seen string, hide bool, rule string) {
	params, ok := parseGitParameters(value)
	if !ok {
		return "", true, "not a list git can read ('key'='value' ...), which stops git"
	}
	var kept, why []string
	for _, p := range params {
		if w := gitEntry(p.key, p.value); w != "" {
			why = append(why, gitKeyLabel(p.key)+": "+w)
			continue
		}
		kept = append(kept, p.raw)
	}
	switch {
	case len(why) == 0:
		return value, false, ""
	case len(kept) == 0:
		return "", true, "git config entries dropped (" + strings.Join(why, "; ") + ")"
	}
	return strings.Join(kept, " "), false, fmt.Sprintf("%d of %d git config entries dropped (%s)", len(why), len(params), strings.Join(why, "; "))
}

// parseGitParameters reads GIT_CONFIG_PARAMETERS as git does: shell
// single-quoted words separated by white space, each 'key'='value',
// 'key'= (a boolean) or, as older gits wrote them, 'key=value'. It
// reports false where git would stop ("bogus format").
func parseGitParameters(s string) ([]gitParameter, bool) {
	var out []gitParameter
	for cur := s; cur != ""; {
		key, rest, ok := sqDequoteStep(cur)
		if !ok {
			return nil, false
		}
		var p gitParameter
		switch {
		case rest == "" || gitSpace(rest[0]):
			p.key, p.value, _ = strings.Cut(key, "=")
		case rest[0] == '=':
			rest = rest[1:]
			p.key = key
			switch {
			case rest != "" && rest[0] == '\'':
				if p.value, rest, ok = sqDequoteStep(rest); !ok || (rest != "" && !gitSpace(rest[0])) {
					return nil, false
				}
			case rest != "" && !gitSpace(rest[0]):
				return nil, false
			}
		default:
			return nil, false
		}
		p.raw = cur[:len(cur)-len(rest)]
		out = append(out, p)
		cur = strings.TrimLeftFunc(rest, func(r rune) bool { return r < 0x80 && gitSpace(byte(r)) })
	}
	return out, true
}

// sqDequoteStep reads the single-quoted word s starts with, as git's
// sq_dequote_step does: where a quote closes, a backslash and a quote or
// an exclamation mark, then a quote reopening, stand for that character.
// It returns the word, what follows it, and false when s does not start
// with one.
func sqDequoteStep(s string) (word, rest string, ok bool) {
	if s == "" || s[0] != '\'' {
		return "", "", false
	}
	var b strings.Builder
	for i := 1; ; {
		if i >= len(s) {
			return "", "", false
		}
		if c := s[i]; c != '\'' {
			b.WriteByte(c)
			i++
			continue
		}
		i++
		if i+2 < len(s) && s[i] == '\\' && (s[i+1] == '\'' || s[i+1] == '!') && s[i+2] == '\'' {
			b.WriteByte(s[i+1])
			i += 3
			continue
		}
		return b.String(), s[i:], true
	}
}

// gitSpace is C's isspace, as git uses it between entries.
func gitSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r'
}
