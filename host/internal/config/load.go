package config

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"

	"github.com/go-viper/mapstructure/v2"
	"github.com/pelletier/go-toml/v2"
	"github.com/spf13/viper"
	"go.yaml.in/yaml/v3"
)

// Options say where to look for the configuration.
//
// Only the operator's configuration can widen what tools may do: File, or
// else the one toolhost.toml, toolhost.yaml or toolhost.yml in UserDir,
// then the environment. A file of those names in Dir (the working
// directory, which tools can write) is a project file: it is ignored with
// a reason in Loaded.Files unless the operator trusted Dir with Trust, and
// even then it may only narrow the operator's policy (NarrowedBy).
type Options struct {
	// File is the operator's explicit configuration file (--config,
	// $TOOLHOST_CONFIG); "" means the one in UserDir, if any.
	File string
	// UserDir is the user's toolhost configuration directory
	// ($XDG_CONFIG_HOME/toolhost): the operator's file when File is "",
	// and the trust file. "" means none.
	UserDir string
	// Dir is the working directory: where a project file is looked for,
	// and what relative roots from the defaults, the environment or the
	// file in UserDir resolve against (roots written in any other file
	// resolve against that file's directory).
	Dir string
	// Environ is the environment in os.Environ form; TOOLHOST_TOOLS_*
	// variables override keys.
	Environ []string
}

// Role says whose a configuration file is.
type Role string

// Roles.
const (
	// RoleOperator is a file only the operator writes: it may set
	// anything.
	RoleOperator Role = "operator"
	// RoleProject is a file in the working directory: it may only narrow,
	// and only once the operator trusted the directory.
	RoleProject Role = "project"
)

// File is a configuration file Load found, and whether it was read.
type File struct {
	Path string
	Role Role
	Read bool
	// Why says why a file was not read and what to do; "" when read.
	Why string
}

// Loaded is a loaded configuration and where each value came from.
type Loaded struct {
	Config *Config
	File   string // the operator's file read; "" when none
	// Files lists every configuration file found, read or ignored, in the
	// order they were considered.
	Files []File
	// Ignored lists the settings of a trusted project file that were
	// ignored because they would have widened the operator's policy,
	// each as "FILE: key: why".
	Ignored []string
	// Sources maps each dotted key to "default", "file PATH", "project
	// file PATH" or "env VARIABLE": every scalar key, "tools.definitions",
	// and each tools.overrides.<tool>.<field> that is set.
	Sources map[string]string

	environ []string // Options.Environ, for Show's list of hidden variables
	// extism is the [extism] tables of the last file readFile read; nil
	// when it had none.
	extism map[string]ExtismPlugin
	// userDir and dir are Options.UserDir and Options.Dir, absolute: where
	// ProtectedPaths looks for files Load would read.
	userDir, dir string
}

// KeyError is a problem with one key: unknown, of the wrong type, or
// invalid. Source says where the value came from.
type KeyError struct {
	Key    string
	Source string
	Err    error
}

func (e *KeyError) Error() string {
	if e.Source == "" {
		return e.Key + ": " + e.Err.Error()
	}
	return e.Source + ": " + e.Key + ": " + e.Err.Error()
}

func (e *KeyError) Unwrap() error { return e.Err }

// ErrUnknownKey is wrapped by a KeyError for a key toolhost does not know.
var ErrUnknownKey = errors.New("unknown key")

// Load reads the configuration: defaults, then the operator's file, then
// the environment, then a trusted project file's narrowing. Unknown keys
// and wrong types in the operator's configuration are errors naming the
// key and where it came from; so is anything Validate rejects. Nothing in
// a project file is an error: a problem there makes Load ignore the file,
// saying why in Files.
func Load(opts Options) (*Loaded, error) {
	l := &Loaded{Sources: map[string]string{"tools.definitions": "default"}, environ: opts.Environ}
	var err error
	if l.userDir, err = absOrEmpty(opts.UserDir); err != nil {
		return nil, fmt.Errorf("user configuration directory: %w", err)
	}
	// "" is the process's working directory, where configFiles looks then.
	if l.dir, err = filepath.Abs(opts.Dir); err != nil {
		return nil, fmt.Errorf("working directory: %w", err)
	}
	file, err := l.operatorFile(opts)
	if err != nil {
		return nil, err
	}
	l.File = file
	v := viper.New()
	for key, val := range flatten(Default()) {
		v.SetDefault(key, val)
		l.Sources[key] = "default"
	}
	var defs []Definition
	if file != "" {
		if defs, err = l.readFile(v, file, "file "); err != nil {
			return nil, err
		}
	}
	if err := l.readEnv(v, opts.Environ); err != nil {
		return nil, err
	}
	cfg, err := decode(v, defs)
	if err != nil {
		return nil, err
	}
	if l.extism != nil {
		cfg.Extism = l.extism
	}
	// Roots written in a file are relative to that file, so that a
	// toolhost.toml means the same from any directory; roots from the
	// environment, the defaults or the user's own file (which serves
	// every project) are relative to the working directory.
	base := opts.Dir
	if file != "" && strings.HasPrefix(l.Sources["tools.sandbox.allowed_roots"], "file ") && !sameFile(filepath.Dir(file), opts.UserDir) {
		base = filepath.Dir(file)
	}
	if err := absRoots(cfg.Tools.Sandbox.AllowedRoots, base); err != nil {
		return nil, &KeyError{Key: "tools.sandbox.allowed_roots", Source: l.sourceOf("tools.sandbox.allowed_roots"), Err: err}
	}
	if err := cfg.Validate(); err != nil {
		var ke *KeyError
		if errors.As(err, &ke) && ke.Source == "" {
			ke.Source = l.sourceOf(ke.Key)
		}
		return nil, err
	}
	if err := l.checkExtraWritable(cfg, opts.Environ); err != nil {
		return nil, err
	}
	l.Config = cfg
	if err := l.project(opts, file); err != nil {
		return nil, err
	}
	return l, nil
}

// checkExtraWritable checks the operator's tools.run_command.extra_writable
// on the filesystem. A project file can only drop
// entries from it, so only this list is checked. HOME is the environment's,
// else the process's.
func (l *Loaded) checkExtraWritable(cfg *Config, environ []string) error {
	if len(cfg.Tools.RunCommand.ExtraWritable) == 0 {
		return nil
	}
	home := ""
	for _, kv := range environ {
		if v, ok := strings.CutPrefix(kv, "HOME="); ok {
			home = v
		}
	}
	if home == "" {
		home, _ = os.UserHomeDir()
	}
	var protected []string
	for _, p := range append([]string{l.userDir}, l.File) {
		if p != "" {
			protected = append(protected, p, realDir(p))
		}
	}
	err := cfg.Tools.RunCommand.CheckExtraWritable(home, protected)
	var ke *KeyError
	if errors.As(err, &ke) {
		ke.Source = l.sourceOf(ke.Key)
	}
	return err
}

// decode turns v into a Config holding defs.
func decode(v *viper.Viper, defs []Definition) (*Config, error) {
	cfg := &Config{}
	if err := v.Unmarshal(cfg, func(dc *mapstructure.DecoderConfig) { dc.WeaklyTypedInput = false }); err != nil {
		return nil, fmt.Errorf("configuration: %w", err)
	}
	if cfg.Tools.Overrides == nil {
		cfg.Tools.Overrides = map[string]Override{}
	}
	if cfg.Profiles == nil {
		cfg.Profiles = map[string]Profile{}
	}
	// [extism] comes from the file itself (readExtism), never from viper.
	cfg.Extism = map[string]ExtismPlugin{}
	cfg.Tools.Definitions = defs
	return cfg, nil
}

// absRoots makes each relative root absolute against base, in place.
func absRoots(roots []string, base string) error {
	base, err := filepath.Abs(base)
	if err != nil {
		return err
	}
	for i, r := range roots {
		if !filepath.IsAbs(r) {
			r = filepath.Join(base, r)
		}
		roots[i] = filepath.Clean(r)
	}
	return nil
}

// sourceOf is the source of key, or of its closest parent with one.
func (l *Loaded) sourceOf(key string) string {
	for k := key; k != ""; {
		if s, ok := l.Sources[k]; ok && s != "default" {
			return strings.TrimPrefix(s, "file ")
		}
		i := strings.LastIndexAny(k, ".[")
		if i < 0 {
			break
		}
		k = k[:i]
	}
	return "default"
}

// operatorFile is the explicit file, else the one toolhost.* file in
// opts.UserDir, else "". Two files in UserDir are an error: the operator
// must say which one holds the policy.
func (l *Loaded) operatorFile(opts Options) (string, error) {
	var inUserDir []string
	if opts.UserDir != "" {
		inUserDir = configFiles(opts.UserDir)
	}
	if opts.File == "" {
		switch len(inUserDir) {
		case 0:
			return "", nil
		case 1:
			l.Files = append(l.Files, File{Path: inUserDir[0], Role: RoleOperator, Read: true})
			return inUserDir[0], nil
		}
		return "", fmt.Errorf("both %s exist; keep one configuration file", strings.Join(inUserDir, " and "))
	}
	abs, err := filepath.Abs(opts.File)
	if err != nil {
		return "", err
	}
	if _, err := os.Stat(abs); err != nil {
		return "", fmt.Errorf("configuration file: %w", err)
	}
	if _, err := format(abs); err != nil {
		return "", err
	}
	l.Files = append(l.Files, File{Path: abs, Role: RoleOperator, Read: true})
	for _, f := range inUserDir {
		if !sameFile(f, abs) {
			l.Files = append(l.Files, File{Path: f, Role: RoleOperator, Why: "--config or $TOOLHOST_CONFIG names another file"})
		}
	}
	return abs, nil
}

// configFiles lists the files toolhost would load from dir.
func configFiles(dir string) []string {
	var found []string
	for _, name := range fileNames() {
		p := filepath.Join(dir, name)
		if _, err := os.Stat(p); err == nil {
			if abs, err := filepath.Abs(p); err == nil {
				p = abs
			}
			found = append(found, p)
		}
	}
	return found
}

// absOrEmpty is p made absolute; "" stays "".
func absOrEmpty(p string) (string, error) {
	if p == "" {
		return "", nil
	}
	return filepath.Abs(p)
}

// sameFile reports whether a and b name the same file or directory; ""
// names none.
func sameFile(a, b string) bool {
	ai, aerr := os.Stat(a)
	bi, berr := os.Stat(b)
	return aerr == nil && berr == nil && os.SameFile(ai, bi)
}

// format is the file's syntax, chosen by its extension: the same keys
// read differently in TOML and YAML, so guessing would misreport errors.
func format(file string) (string, error) {
	switch ext := strings.ToLower(filepath.Ext(file)); ext {
	case ".toml":
		return "toml", nil
	case ".yaml", ".yml":
		return "yaml", nil
	default:
		return "", fmt.Errorf("configuration file %s: unknown format %q (use .toml, .yaml or .yml)", file, ext)
	}
}

// readFile merges the file into v after checking every key and type, so
// that a misspelled or mistyped key stops toolhost instead of being
// ignored.
// Each key's source is prefix + file.
func (l *Loaded) readFile(v *viper.Viper, file, prefix string) ([]Definition, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("configuration file: %w", err)
	}
	syntax, err := format(file)
	if err != nil {
		return nil, err
	}
	fv := viper.New()
	fv.SetConfigType(syntax)
	if err := fv.ReadConfig(bytes.NewReader(data)); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	raw, err := decodeRaw(file, syntax, data)
	if err != nil {
		return nil, err
	}
	// viper's AllKeys leaves out empty tables, so they are found in the
	// raw file: [tools.sandbx] with nothing in it is still a misspelling.
	empty := emptyTables(raw, "")
	keys := append(fv.AllKeys(), empty...)
	sort.Strings(keys)
	kinds := keyKinds()
	source := prefix + file
	for _, key := range keys {
		if key == "tools.definitions" || strings.HasPrefix(key, "tools.definitions.") || isExtismKey(key) {
			// Taken from the raw file by readDefinitions: viper lowercases
			// map keys, which would break JSON Schema keywords.
			continue
		}
		val, err := checkFileKey(key, fv.Get(key), kinds)
		if err != nil {
			return nil, &KeyError{Key: key, Source: file, Err: err}
		}
		if val == nil {
			continue // an empty table that toolhost knows
		}
		v.Set(key, val)
		l.Sources[key] = source
		if table, ok := profileTable(key); ok {
			// A profile comes whole from one file: an error about a key
			// it left out (its tools) names that file.
			l.Sources[table] = source
		}
	}
	if l.extism, err = readExtism(file, raw); err != nil {
		return nil, err
	}
	extismSources(l.Sources, l.extism, source)
	defs, err := readDefinitions(file, raw)
	if err != nil || defs == nil {
		return nil, err
	}
	l.Sources["tools.definitions"] = source
	return defs, nil
}

// decodeRaw decodes the file without viper, keeping map keys as written.
func decodeRaw(file, syntax string, data []byte) (map[string]any, error) {
	var raw map[string]any
	var err error
	if syntax == "toml" {
		err = toml.Unmarshal(data, &raw)
	} else {
		err = yaml.Unmarshal(data, &raw)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	return raw, nil
}

// emptyTables lists the dotted, lowercased keys of the tables in m that
// hold nothing.
func emptyTables(m map[string]any, prefix string) []string {
	var out []string
	for k, v := range m {
		sub, ok := v.(map[string]any)
		if !ok {
			continue
		}
		key := prefix + strings.ToLower(k)
		if len(sub) == 0 {
			out = append(out, key)
		} else {
			out = append(out, emptyTables(sub, key+".")...)
		}
	}
	return out
}

// checkFileKey is the value of key converted to its kind, nil for an empty
// table toolhost knows (such as [tools.overrides.read_file] with nothing in
// it), or an error saying what is wrong.
func checkFileKey(key string, val any, kinds map[string]kind) (any, error) {
	k, ok := kinds[key]
	if !ok {
		k, ok = overrideKind(key)
	}
	if !ok {
		k, ok = profileKind(key)
	}
	if ok {
		return k.fromFile(val)
	}
	table := isTable(key, kinds)
	if m, isMap := val.(map[string]any); table && (val == nil || isMap && len(m) == 0) {
		return nil, nil // YAML's "sandbox:" with nothing under it is empty too
	}
	if table {
		return nil, fmt.Errorf("expected a table, got %s", describe(val))
	}
	return nil, unknownKey(key, kinds)
}

// isTable reports whether key names a table: a section of the file holding
// other keys, or one tool's overrides.
func isTable(key string, kinds map[string]kind) bool {
	if key == "tools.overrides" {
		return true
	}
	if tool, ok := strings.CutPrefix(key, "tools.overrides."); ok && !strings.Contains(tool, ".") {
		return true
	}
	if key == "profiles" {
		return true
	}
	if name, ok := strings.CutPrefix(key, "profiles."); ok && !strings.Contains(name, ".") {
		return true
	}
	for k := range kinds {
		if strings.HasPrefix(k, key+".") {
			return true
		}
	}
	return false
}

// readEnv applies TOOLHOST_TOOLS_*, TOOLHOST_SERVER_* and TOOLHOST_JOURNAL_* variables. They are parsed here and
// given to viper with Set rather than through AutomaticEnv or BindEnv:
// viper's Unmarshal sees an environment variable only for keys it already
// knows, cannot split TOOLHOST_TOOLS_OVERRIDES_<TOOL>_<FIELD> when the tool
// name holds underscores, and ignores variables that match no key, which
// must be errors here. Other TOOLHOST_ variables (paths, the binary) are
// not configuration keys and are left alone.
func (l *Loaded) readEnv(v *viper.Viper, environ []string) error {
	byVar := map[string]string{}
	kinds := keyKinds()
	for key := range kinds {
		byVar[EnvVar(key)] = key
	}
	for _, kv := range environ {
		name, value, _ := strings.Cut(kv, "=")
		if !strings.HasPrefix(name, "TOOLHOST_TOOLS_") && !strings.HasPrefix(name, "TOOLHOST_SERVER_") && !strings.HasPrefix(name, "TOOLHOST_JOURNAL_") {
			continue
		}
		key, k, err := envKey(name, byVar, kinds)
		if err != nil {
			return &KeyError{Key: name, Source: "environment", Err: err}
		}
		val, err := k.fromEnv(value)
		if err != nil {
			return &KeyError{Key: key, Source: "env " + name, Err: err}
		}
		v.Set(key, val)
		l.Sources[key] = "env " + name
	}
	return nil
}

// envKey is the key a TOOLHOST_TOOLS_ variable sets, and its kind.
func envKey(name string, byVar map[string]string, kinds map[string]kind) (string, kind, error) {
	if key, ok := byVar[name]; ok {
		return key, kinds[key], nil
	}
	if key, ok := overrideKeyFromEnv(name); ok {
		k, _ := overrideKind(key)
		return key, k, nil
	}
	best, dist := "", 4
	for n := range byVar {
		if d := levenshtein(name, n); d < dist || d == dist && n < best {
			best, dist = n, d
		}
	}
	if best != "" {
		return "", 0, fmt.Errorf("%w: no configuration key is set by this variable; did you mean %s?", ErrUnknownKey, best)
	}
	return "", 0, fmt.Errorf("%w: no configuration key is set by this variable (keys map to TOOLHOST_ + the key upper-cased, dots as underscores, e.g. TOOLHOST_TOOLS_APPROVAL_MODE; per-tool overrides are TOOLHOST_TOOLS_OVERRIDES_<TOOL>_TIMEOUT_SECONDS, _REQUIRES_APPROVAL or _DENIED)", ErrUnknownKey)
}

// EnvVar is the environment variable that sets key.
func EnvVar(key string) string {
	return "TOOLHOST_" + strings.ToUpper(strings.ReplaceAll(key, ".", "_"))
}

// overrideFields are the keys of a [tools.overrides.<tool>] table.
func overrideFields() []string { return []string{"timeout_seconds", "requires_approval", "denied"} }

// overrideField is the kind of one key of a [tools.overrides.<tool>] table.
func overrideField(field string) (kind, bool) {
	switch field {
	case "timeout_seconds":
		return kindInt, true
	case "requires_approval", "denied":
		return kindBool, true
	}
	return 0, false
}

func overrideKind(key string) (kind, bool) {
	rest, ok := strings.CutPrefix(key, "tools.overrides.")
	if !ok {
		return 0, false
	}
	tool, field, ok := strings.Cut(rest, ".")
	if !ok || tool == "" {
		return 0, false
	}
	return overrideField(field)
}

// overrideKeyFromEnv parses TOOLHOST_TOOLS_OVERRIDES_<TOOL>_<FIELD>; tool
// names hold underscores, so the field is found by its known suffix.
func overrideKeyFromEnv(name string) (string, bool) {
	rest, ok := strings.CutPrefix(name, "TOOLHOST_TOOLS_OVERRIDES_")
	if !ok {
		return "", false
	}
	for _, field := range overrideFields() {
		if tool, ok := strings.CutSuffix(rest, "_"+strings.ToUpper(field)); ok && tool != "" {
			return "tools.overrides." + strings.ToLower(tool) + "." + field, true
		}
	}
	return "", false
}

// profileTable is the profiles.<name> table key belongs to.
func profileTable(key string) (string, bool) {
	rest, ok := strings.CutPrefix(key, "profiles.")
	if !ok {
		return "", false
	}
	name, _, _ := strings.Cut(rest, ".")
	return "profiles." + name, name != ""
}

// profileKind is the kind of one key of a [profiles.<name>] table.
func profileKind(key string) (kind, bool) {
	rest, ok := strings.CutPrefix(key, "profiles.")
	if !ok {
		return 0, false
	}
	name, field, ok := strings.Cut(rest, ".")
	if !ok || name == "" {
		return 0, false
	}
	switch field {
	case "description", "mode", "approval", "approvals", "sandbox", "network":
		return kindString, true
	case "tools":
		return kindList, true
	case "confirm_all", "sequential":
		return kindBool, true
	case "max_tool_calls_per_batch":
		return kindInt, true
	}
	return 0, false
}

func unknownKey(key string, kinds map[string]kind) error {
	best, dist := "", 4
	for k := range kinds {
		if d := levenshtein(key, k); d < dist || d == dist && k < best {
			best, dist = k, d
		}
	}
	if best != "" {
		return fmt.Errorf("%w; did you mean %q?", ErrUnknownKey, best)
	}
	return fmt.Errorf("%w (toolhost config init writes a file with every key)", ErrUnknownKey)
}

func levenshtein(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}

// kind is the type of a scalar key.
type kind int

const (
	kindString kind = iota
	kindInt
	kindBool
	kindList
	// kindSize is a number of bytes: an integer, or a string with a unit
	// (parseSize).
	kindSize
)

// String is the kind as an error message says it.
func (k kind) String() string {
	switch k {
	case kindInt:
		return "an integer"
	case kindBool:
		return "a boolean (true or false)"
	case kindList:
		return "a list of strings"
	case kindSize:
		return `a size in bytes: an integer, or a string such as "512MiB" or "2G" (K, M, G, T: powers of 1000; Ki, Mi, Gi, Ti: of 1024)`
	}
	return "a string"
}

func (k kind) mismatch(v any) error {
	return fmt.Errorf("expected %s, got %s", k, describe(v))
}

func describe(v any) string {
	switch v := v.(type) {
	case string:
		return strconv.Quote(v)
	case nil:
		return "nothing"
	}
	return fmt.Sprintf("%v (%T)", v, v)
}

// fromFile checks a value decoded from TOML or YAML.
func (k kind) fromFile(v any) (any, error) {
	switch k {
	case kindString:
		if s, ok := v.(string); ok {
			return s, nil
		}
	case kindBool:
		if b, ok := v.(bool); ok {
			return b, nil
		}
	case kindInt:
		switch n := v.(type) {
		case int:
			return n, nil
		case int64:
			return int(n), nil
		case uint64:
			if n <= math.MaxInt {
				return int(n), nil
			}
			return nil, fmt.Errorf("%d is too large", n)
		}
	case kindList:
		items, ok := v.([]any)
		if !ok {
			break
		}
		out := make([]string, len(items))
		for i, it := range items {
			s, ok := it.(string)
			if !ok {
				return nil, fmt.Errorf("expected a list of strings, item %d is %s", i+1, describe(it))
			}
			out[i] = s
		}
		return out, nil
	case kindSize:
		return sizeFromFile(v)
	}
	return nil, k.mismatch(v)
}

// sizeFromFile is a size as TOML or YAML decodes it: an integer, or a
// string parseSize reads.
func sizeFromFile(v any) (any, error) {
	var n int64
	switch v := v.(type) {
	case string:
		return parseSize(v)
	case uint64:
		return v, nil
	case int:
		n = int64(v)
	case int64:
		n = v
	default:
		return nil, kindSize.mismatch(v)
	}
	if n < 0 {
		return nil, fmt.Errorf("must be 0 or more, got %d", n)
	}
	return uint64(n), nil
}

// fromEnv parses an environment variable's text; lists are
// comma-separated.
func (k kind) fromEnv(s string) (any, error) {
	switch k {
	case kindInt:
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil {
			return nil, k.mismatch(s)
		}
		return n, nil
	case kindBool:
		b, err := strconv.ParseBool(strings.TrimSpace(s))
		if err != nil {
			return nil, k.mismatch(s)
		}
		return b, nil
	case kindSize:
		return parseSize(s)
	case kindList:
		out := []string{}
		for _, item := range strings.Split(s, ",") {
			if item = strings.TrimSpace(item); item != "" {
				out = append(out, item)
			}
		}
		return out, nil
	}
	return s, nil
}

// Keys lists every key toolhost reads, sorted: the scalar keys, then the
// keys of the tables the operator names, with <tool> or <name> in place
// of the name (tools.overrides.<tool>.denied, profiles.<name>.mode,
// extism.<name>.allowed_hosts), and tools.definitions. It is the list a
// key must be on for Load to accept it, so a test that every key reaches
// the part of toolhost that uses it can start from it.
func Keys() []string {
	keys := []string{"tools.definitions"}
	for key := range keyKinds() {
		keys = append(keys, key)
	}
	for prefix, table := range map[string]any{
		"tools.overrides.<tool>.": Override{},
		"profiles.<name>.":        Profile{},
		"extism.<name>.":          ExtismPlugin{},
	} {
		t := reflect.TypeOf(table)
		for i := range t.NumField() {
			keys = append(keys, prefix+t.Field(i).Tag.Get("mapstructure"))
		}
	}
	sort.Strings(keys)
	return keys
}

// keyKinds maps every scalar key (all but overrides and definitions) to
// its kind, from the Config struct's tags.
func keyKinds() map[string]kind {
	out := map[string]kind{}
	walk(reflect.ValueOf(Default()).Elem(), "", func(key string, v reflect.Value) {
		switch v.Kind() {
		case reflect.String:
			out[key] = kindString
		case reflect.Int:
			out[key] = kindInt
		case reflect.Bool:
			out[key] = kindBool
		case reflect.Slice:
			out[key] = kindList
		case reflect.Uint64:
			out[key] = kindSize
		}
	})
	return out
}

// flatten maps every scalar key of c to its value.
func flatten(c *Config) map[string]any {
	out := map[string]any{}
	walk(reflect.ValueOf(c).Elem(), "", func(key string, v reflect.Value) {
		out[key] = v.Interface()
	})
	return out
}

// walk calls fn for every scalar field under v, skipping the overrides map
// and the definitions list, which have keys of their own.
func walk(v reflect.Value, prefix string, fn func(string, reflect.Value)) {
	t := v.Type()
	for i := range t.NumField() {
		key := t.Field(i).Tag.Get("mapstructure")
		if prefix != "" {
			key = prefix + "." + key
		}
		f := v.Field(i)
		switch {
		case f.Kind() == reflect.Struct:
			walk(f, key, fn)
		case f.Kind() == reflect.Map, f.Kind() == reflect.Slice && f.Type().Elem().Kind() == reflect.Struct:
		default:
			fn(key, f)
		}
	}
}

// readDefinitions decodes [[tools.definitions]] from the file itself, with
// map keys as written.
func readDefinitions(file string, raw map[string]any) ([]Definition, error) {
	tools, _ := lookupFold(raw, "tools").(map[string]any)
	val := lookupFold(tools, "definitions")
	if val == nil {
		return nil, nil
	}
	if err := checkDefinitions(val); err != nil {
		return nil, &KeyError{Key: "tools.definitions", Source: file, Err: err}
	}
	defs := []Definition{}
	for _, it := range val.([]any) {
		m := it.(map[string]any)
		d := Definition{}
		d.Name, _ = m["name"].(string)
		d.Description, _ = m["description"].(string)
		d.Parameters, _ = m["parameters"].(map[string]any)
		defs = append(defs, d)
	}
	return defs, nil
}

// lookupFold is m's value for key, matched without regard to case as viper
// matches keys, so that a definitions list under "Tools:" is not dropped.
func lookupFold(m map[string]any, key string) any {
	for k, v := range m {
		if strings.EqualFold(k, key) {
			return v
		}
	}
	return nil
}

// checkDefinitions checks [[tools.definitions]] entries' keys and types.
func checkDefinitions(v any) error {
	items, ok := v.([]any)
	if !ok {
		return fmt.Errorf("expected an array of tables ([[tools.definitions]]), got %s", describe(v))
	}
	for i, it := range items {
		m, ok := it.(map[string]any)
		if !ok {
			return fmt.Errorf("entry %d: expected a table, got %s", i+1, describe(it))
		}
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			var ok bool
			switch k {
			case "name", "description":
				_, ok = m[k].(string)
			case "parameters":
				_, ok = m[k].(map[string]any)
			default:
				return fmt.Errorf("entry %d: %w %q (known: name, description, parameters)", i+1, ErrUnknownKey, k)
			}
			if !ok {
				return fmt.Errorf("entry %d: %s has the wrong type (%s)", i+1, k, describe(m[k]))
			}
		}
	}
	return nil
}
