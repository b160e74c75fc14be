package secrets

import (
	"encoding/base64"
	"encoding/json"
	"regexp"
	"strings"
	"unicode/utf8"
)

// The rules below tell a credential by the name it is kept under or by
// its text alone. They are one set: the environment filter of commands
// (config.Environment.Sanitize) hides a variable that either kind
// matches, the redaction of approval summaries and journaled arguments
// replaces what the shapes find, and `toolhost config show` prints them
// all (FR-EXE-06, CFG-ENV-01, FR-APR-01).

// NameRule is a piece of a variable's name that marks it as holding a
// secret. Names are compared upper-cased.
type NameRule struct {
	// Text is the piece, upper case.
	Text string
	// Word says Text counts only as a whole word of the name, between
	// separators (GH_PAT but not PATH); otherwise anywhere (PGPASSWORD).
	Word bool
	// NotAlone says a name that is Text and nothing else does not count:
	// PWD alone is the shell's working directory, MYSQL_PWD a password.
	NotAlone bool
}

// NameRules returns the name rules, in the order they are tried.
// Each call returns a fresh slice.
func NameRules() []NameRule {
	return []NameRule{
		{Text: "KEY"}, {Text: "TOKEN"}, {Text: "SECRET"}, {Text: "PASSWORD"}, {Text: "PASSWD"},
		{Text: "PASSPHRASE"}, {Text: "CREDENTIAL"}, {Text: "AUTH"}, {Text: "JWT"}, {Text: "WEBHOOK"},
		{Text: "CONNECTION_STRING"}, {Text: "CONNECTIONSTRING"}, {Text: "CONNSTR"}, {Text: "CONN_STR"},
		{Text: "COOKIE"},
		{Text: "PAT", Word: true}, {Text: "PASS", Word: true}, {Text: "PW", Word: true},
		{Text: "PWD", Word: true, NotAlone: true}, {Text: "DSN", Word: true}, {Text: "CREDS", Word: true},
	}
}

// String says what the rule matches, as a person reads it.
func (r NameRule) String() string {
	switch {
	case r.NotAlone:
		return "the word " + r.Text + " in a longer name"
	case r.Word:
		return "the word " + r.Text
	}
	return "contains " + r.Text
}

// Name returns the first name rule that name matches, and whether one
// does. AUTH inside the word AUTHOR or AUTHORS (GIT_AUTHOR_NAME,
// identity rather than a credential) does not count; AUTHORIZATION and
// AUTHORITY do.
func Name(name string) (NameRule, bool) {
	upper := strings.ToUpper(name)
	words := strings.FieldsFunc(upper, func(r rune) bool { return (r < 'A' || r > 'Z') && (r < '0' || r > '9') })
	for _, r := range NameRules() {
		switch {
		case !r.Word && containsPart(upper, r.Text):
			return r, true
		case r.Word && !(r.NotAlone && len(words) == 1 && upper == r.Text):
			for _, w := range words {
				if w == r.Text {
					return r, true
				}
			}
		}
	}
	return NameRule{}, false
}

// containsPart reports whether part occurs in name, AUTH not as the
// start of AUTHOR or AUTHORS.
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

// Shape is a kind of credential told by its text alone, whatever holds
// it: a token with a well-known prefix, a JSON Web Token, a private key
// block, a webhook URL whose path is its secret, a connection string's
// password or account key.
type Shape struct {
	// Name says what the shape is ("GitHub token").
	Name string
	// Pattern is the regular expression (RE2 syntax) that finds it; where
	// it has a group, the first group is the secret and the rest of the
	// match stays when the secret is redacted.
	Pattern string
	// Check, when not "", is the further test a match must pass, in
	// words (a JWT's header must be JSON naming an "alg").
	Check string
	re    *regexp.Regexp
	check func(string) bool
	hints []string
	fold  bool
}

// shape is a Shape's definition. hints are texts one of which every
// match holds (compared lower-cased with fold): the pattern runs only on a
// text that holds one, since a journaled argument may be hundreds of
// kilobytes and most shapes never occur in it.
type shape struct {
	name, pattern, check string
	test                 func(string) bool
	hints                []string
	fold                 bool
}

// shapeDefs are the shapes. Each token pattern starts at a word boundary
// and wants the length the issuer gives its tokens (or at least 20
// characters), so that a word that merely begins like one (sk-learn)
// is not taken for a key.
var shapeDefs = []shape{
	{name: "private key block (-----BEGIN … PRIVATE KEY-----)", hints: []string{"PRIVATE KEY"}, pattern: `(?s)(-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----.*?(?:-----END [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|$))`},
	{name: "JSON Web Token (three base64url segments)", hints: []string{"eyJ", "eyI"}, pattern: `\b(ey[IJ][A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{2,}\.[A-Za-z0-9_-]*)`,
		check: `its first segment decodes (base64url) to a JSON object with "alg"`, test: jwtHeader},
	{name: "connection string credential (Password=, Pwd=, AccountKey=, SharedAccessKey=)", fold: true, hints: []string{"password", "pwd", "accountkey", "sharedaccesskey", "sharedsecret"}, pattern: `(?i)(?:^|[;\s"'])[ \t]*(?:password|pwd|accountkey|sharedaccesskey|sharedsecret)[ \t]*=[ \t]*([^;\s"']+)`},
	{name: "HTTP Authorization header (Authorization: Basic, Bearer, token or Digest and a credential)", fold: true, hints: []string{"authorization"},
		pattern: `(?i)\bauthorization["']?[ \t]*[:=][ \t]*["']?` + authCredential, check: authCheck, test: authLike},
	{name: "HTTP authorization credential alone (a value or line that is only Basic, Bearer, token or Digest and a credential)", fold: true, hints: []string{"basic", "bearer", "token", "digest"},
		pattern: `(?im)^[ \t]*["']?` + authCredential + `["']?[ \t]*\r?$`, check: authCheck, test: authLike},
	{name: "shared access signature (?sig= or &sig= in a URL)", hints: []string{"sig="}, pattern: `[?&]sig=([A-Za-z0-9%+/=_-]{16,})`},
	{name: "Slack webhook (hooks.slack.com/services/…)", fold: true, hints: []string{"hooks.slack.com"}, pattern: `(?i)https?://hooks\.slack\.com/(?:services|workflows|triggers)/([A-Za-z0-9/_-]+)`},
	{name: "Discord webhook (discord.com/api/webhooks/…)", fold: true, hints: []string{"/api/webhooks/"}, pattern: `(?i)https?://(?:[a-z]+\.)?discord(?:app)?\.com/api/webhooks/([0-9]+/[A-Za-z0-9_-]+)`},
	{name: "Microsoft Teams webhook (webhook.office.com/webhookb2/…)", fold: true, hints: []string{"webhook"}, pattern: `(?i)https?://[a-z0-9.-]*(?:webhook\.office\.com/webhookb2|outlook\.office(?:365)?\.com/webhook)/(\S+)`},
	{name: "Google Chat webhook (chat.googleapis.com/v1/spaces/…/messages?key=…)", fold: true, hints: []string{"chat.googleapis.com"}, pattern: `(?i)https?://chat\.googleapis\.com/v1/spaces/[^/\s]+/messages\?(\S+)`},
	{name: "Telegram bot token (<digits>:AA…)", hints: []string{":AA"}, pattern: `\b(?:bot)?([0-9]{6,}:AA[A-Za-z0-9_-]{30,})`},
	{name: "chat or automation webhook (…/hooks/<secret>)", fold: true, hints: []string{"/hooks/"}, pattern: `(?i)https?://[^\s/]+(?:/[^\s/]+)*/hooks/(?:catch/)?([A-Za-z0-9_/-]{20,})`},
	{name: "GitHub token (ghp_, gho_, ghu_, ghs_, ghr_, github_pat_)", hints: []string{"ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"}, pattern: `\b(gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,})`},
	{name: "GitLab token (glpat-, gldt-, glptt-, glrt-, ...)", hints: []string{"glpat-", "gldt-", "glptt-", "glrt-", "glcbt-", "gloas-", "glsoat-", "glft-", "glimt-", "glagent-"}, pattern: `\b(gl(?:pat|dt|ptt|rt|cbt|oas|soat|ft|imt|agent)-[A-Za-z0-9_-]{20,})`},
	{name: "Slack token (xoxb-, xoxp-, xoxa-, xoxs-, xoxe-, xapp-)", hints: []string{"xoxa-", "xoxb-", "xoxp-", "xoxo-", "xoxs-", "xoxr-", "xoxe-", "xapp-"}, pattern: `\b(xox[abposre]-[A-Za-z0-9-]{10,}|xapp-[0-9]-[A-Za-z0-9-]{10,})`},
	{name: "Anthropic key (sk-ant-)", hints: []string{"sk-ant-"}, pattern: `\b(sk-ant-[A-Za-z0-9_-]{20,})`},
	{name: "API key (sk-, sk-proj-, with letters and digits)", hints: []string{"sk-"}, pattern: `\b(sk-[A-Za-z0-9_-]{20,})`,
		check: "it mixes letters and digits", test: lettersAndDigits},
	{name: "Stripe key (sk_live_, rk_test_, whsec_, ...)", hints: []string{"_live_", "_test_", "whsec_"}, pattern: `\b((?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{16,}|whsec_[A-Za-z0-9]{20,})`},
	{name: "AWS access key id (AKIA, ASIA, ...)", hints: []string{"AKIA", "ASIA", "ABIA", "ACCA", "AGPA", "AIDA", "AROA", "ANPA", "ANVA", "AIPA"}, pattern: `\b((?:AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AROA|ANPA|ANVA|AIPA)[0-9A-Z]{16})\b`},
	{name: "Google API key or OAuth secret (AIza, ya29., GOCSPX-)", hints: []string{"AIza", "ya29.", "GOCSPX-"}, pattern: `\b(AIza[0-9A-Za-z_-]{35}|ya29\.[0-9A-Za-z_-]{20,}|GOCSPX-[A-Za-z0-9_-]{20,})`},
	{name: "npm token (npm_)", hints: []string{"npm_"}, pattern: `\b(npm_[A-Za-z0-9]{36,})`},
	{name: "PyPI token (pypi-)", hints: []string{"pypi-AgE"}, pattern: `\b(pypi-AgE[A-Za-z0-9_-]{40,})`},
	{name: "Hugging Face token (hf_)", hints: []string{"hf_"}, pattern: `\b(hf_[A-Za-z0-9]{30,})`},
	{name: "other service tokens (SG., dop_v1_, shpat_, dckr_pat_, hvs., glsa_, lin_api_, PMAK-, sntrys_, AGE-SECRET-KEY-1)", hints: []string{"SG.", "_v1_", "shpat_", "shpca_", "shppa_", "shpss_", "dckr_pat_", "hvs.", "hvb.", "glsa_", "lin_api_", "PMAK-", "sntrys_", "AGE-SECRET-KEY-1"},
		pattern: `\b(SG\.[A-Za-z0-9_-]{16,}\.[A-Za-z0-9_-]{16,}|do[opr]_v1_[a-f0-9]{64}|shp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}|dckr_pat_[A-Za-z0-9_-]{20,}|hv[sb]\.[A-Za-z0-9_-]{20,}|glsa_[A-Za-z0-9]{32}_[A-Fa-f0-9]{8}|lin_api_[A-Za-z0-9]{40}|PMAK-[a-f0-9]{24}-[a-f0-9]{34}|sntrys_[A-Za-z0-9+/=_]{20,}|AGE-SECRET-KEY-1[0-9A-Z]{58})`},
}

// authCredential is an HTTP authorization scheme (RFC 9110 11.4) and
// the credential after it, the first group of the shapes that find one:
// Digest's parameters (name=value or name="value", comma-separated, the
// quotes perhaps escaped as JSON writes them), else a token68 (base64, a
// bearer token). The scheme is part of the secret so that authLike can
// judge the credential by it.
const authCredential = `((?i:basic|bearer|token|digest)[ \t]+(?:[A-Za-z0-9_-]+=(?:\\?"[^"\r\n]*"|[^\s,"]+)(?:[ \t]*,[ \t]*[A-Za-z0-9_-]+=(?:\\?"[^"\r\n]*"|[^\s,"]+))*|[A-Za-z0-9._~+/-]+=*))`

// authCheck says, in words, what authLike tests.
const authCheck = "the credential is one, not a placeholder or a sentence's next word: Basic's decodes (base64) to user:password, Bearer's and token's have 8 characters or more with letters and digits (or 20 or more of two kinds among lower case, upper case and digits), Digest's parameters hold a response="

// shapes are shapeDefs compiled; never changed once made.
var shapes = compileShapes(shapeDefs)

func compileShapes(defs []shape) []Shape {
	out := make([]Shape, len(defs))
	for i, d := range defs {
		out[i] = Shape{Name: d.name, Pattern: d.pattern, Check: d.check, re: regexp.MustCompile(d.pattern), check: d.test, hints: d.hints, fold: d.fold}
	}
	return out
}

// Shapes returns the value shapes, in the order they are tried. Each
// call returns a fresh slice.
func Shapes() []Shape { return append([]Shape(nil), shapes...) }

// Find returns the spans of text holding a secret of this shape: the
// first group of each match where the pattern has one, else the match.
func (s Shape) Find(text string) [][2]int {
	if !s.hinted(text) {
		return nil
	}
	var out [][2]int
	for _, m := range s.re.FindAllStringSubmatchIndex(text, -1) {
		from, to := m[0], m[1]
		if len(m) > 2 && m[2] >= 0 {
			from, to = m[2], m[3]
		}
		if s.check != nil && !s.check(text[from:to]) {
			continue
		}
		out = append(out, [2]int{from, to})
	}
	return out
}

// hinted reports whether text holds one of the shape's hints.
func (s Shape) hinted(text string) bool {
	if s.fold {
		text = strings.ToLower(text)
	}
	for _, h := range s.hints {
		if strings.Contains(text, h) {
			return true
		}
	}
	return false
}

// Value returns the first shape found in value, and whether one is.
func Value(value string) (Shape, bool) {
	for _, s := range shapes {
		if len(s.Find(value)) > 0 {
			return s, true
		}
	}
	return Shape{}, false
}

// jwtHeader reports whether token's first segment is a JWT's header: a
// JSON object, base64url-encoded, naming the signing algorithm.
func jwtHeader(token string) bool {
	head, _, _ := strings.Cut(token, ".")
	raw, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(head, "="))
	if err != nil {
		return false
	}
	var h map[string]any
	if json.Unmarshal(raw, &h) != nil {
		return false
	}
	_, ok := h["alg"]
	return ok
}

// authLike reports whether an authorization scheme and what follows it
// (as authCredential finds them) carry a credential rather than a
// placeholder or the next word of a sentence ("Bearer token", "Basic
// Authentication", "YOUR_TOKEN"): see authCheck.
func authLike(s string) bool {
	scheme, cred := s, ""
	if i := strings.IndexAny(s, " \t"); i >= 0 {
		scheme, cred = s[:i], strings.TrimLeft(s[i:], " \t")
	}
	switch strings.ToLower(scheme) {
	case "basic":
		raw, err := base64.StdEncoding.DecodeString(cred)
		if err != nil {
			raw, err = base64.RawStdEncoding.DecodeString(strings.TrimRight(cred, "="))
		}
		return err == nil && utf8.Valid(raw) && strings.Contains(string(raw), ":")
	case "digest":
		return strings.Contains(strings.ToLower(cred), "response=")
	}
	if len(cred) < 8 {
		return false
	}
	var lower, upper, digit int
	for _, r := range cred {
		switch {
		case r >= 'a' && r <= 'z':
			lower = 1
		case r >= 'A' && r <= 'Z':
			upper = 1
		case r >= '0' && r <= '9':
			digit = 1
		}
	}
	return digit == 1 && lower+upper > 0 || len(cred) >= 20 && lower+upper+digit >= 2
}

// lettersAndDigits reports whether s has both: generated keys do, words
// joined by dashes (sk-learn-classifier) do not.
func lettersAndDigits(s string) bool {
	var letter, digit bool
	for _, r := range s {
		switch {
		case r >= '0' && r <= '9':
			digit = true
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z':
			letter = true
		}
	}
	return letter && digit
}
