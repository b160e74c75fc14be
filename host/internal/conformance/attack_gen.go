package conformance

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/toolhost/toolhost/abi"
)

// The argument generator reads a tool's JSON Schema as a plain map and
// makes arguments a model could send: valid ones with edge values ("", 0,
// -1, long strings, the bounds), and invalid ones (wrong types, values
// past the bounds, missing or unknown properties, bytes that are not
// JSON). It is deterministic: the same schema gives the same arguments,
// so a finding can be reproduced from its arguments alone.
//
// Strings are letters only (and a few non-ASCII ones): a tool that runs
// its argument as a shell command (run_command) gets a command that is
// not found, never one that does anything.

// generatedSets is how many argument objects a check makes per tool.
const generatedSets = 6

// generator makes arguments for one tool in one workspace.
type generator struct {
	schema map[string]any
	m      *abi.Manifest
	// paths are the fixture paths a path argument takes, in turn.
	paths []string
}

func newGenerator(m *abi.Manifest, paths []string) generator {
	var schema map[string]any
	_ = json.Unmarshal(m.Parameters, &schema) // a bad schema is manifest.schema's finding
	if schema == nil {
		schema = map[string]any{}
	}
	return generator{schema: schema, m: m, paths: paths}
}

// properties returns the schema's property names, sorted, and their
// schemas.
func (g generator) properties() ([]string, map[string]map[string]any) {
	props := map[string]map[string]any{}
	if p, ok := g.schema["properties"].(map[string]any); ok {
		for name, s := range p {
			sm, _ := s.(map[string]any)
			if sm == nil {
				sm = map[string]any{}
			}
			props[name] = sm
		}
	}
	names := make([]string, 0, len(props))
	for n := range props {
		names = append(names, n)
	}
	sort.Strings(names)
	return names, props
}

func (g generator) required() map[string]bool {
	req := map[string]bool{}
	if r, ok := g.schema["required"].([]any); ok {
		for _, v := range r {
			if s, ok := v.(string); ok {
				req[s] = true
			}
		}
	}
	return req
}

// isPath says whether the argument name is a path: declared one, or
// named like one (the host checks only the declared ones; an undeclared
// one is manifest.path-args' finding, and is attacked all the same).
func (g generator) isPath(name string) bool {
	return slices.Contains(g.m.PathArgs, name) || looksLikePath(name)
}

func looksLikePath(name string) bool {
	switch name {
	case "path", "file", "dir", "cwd":
		return true
	}
	for _, suffix := range []string{"_path", "_file", "_dir"} {
		if strings.HasSuffix(name, suffix) {
			return true
		}
	}
	return false
}

// valid returns n argument objects the schema accepts: every required
// property, and the optional ones in some of them, each property taking
// its candidate values in turn.
func (g generator) valid(n int) []map[string]any {
	names, props := g.properties()
	req := g.required()
	cands := make(map[string][]any, len(names))
	for _, name := range names {
		if g.isPath(name) {
			cands[name] = pathValues(props[name], g.paths)
		} else {
			cands[name] = values(props[name], 0)
		}
	}
	nested := nestedPathArgs(g.m)
	out := make([]map[string]any, n)
	for k := range out {
		obj := map[string]any{}
		for i, name := range names {
			c := cands[name]
			if len(c) == 0 || (!req[name] && (k+i)%3 == 2) {
				continue
			}
			obj[name] = c[(k+i)%len(c)]
		}
		if len(nested) > 0 && len(g.paths) > 0 {
			// Paths inside arrays take the fixture paths in turn too.
			obj = deepCopy(obj).(map[string]any)
			j := k
			next := func() string { j++; return g.paths[j%len(g.paths)] }
			for _, s := range nested {
				setPaths(obj, s.Keys(), next, false)
			}
		}
		out[k] = obj
	}
	return out
}

// pathValues are the fixture paths a path argument takes, within its
// length bounds.
func pathValues(s map[string]any, paths []string) []any {
	var out []any
	for _, p := range paths {
		if fitsLength(s, p) {
			out = append(out, p)
		}
	}
	return out
}

func fitsLength(s map[string]any, v string) bool {
	n := utf8.RuneCountInString(v)
	if min, ok := number(s["minLength"]); ok && float64(n) < min {
		return false
	}
	if max, ok := number(s["maxLength"]); ok && float64(n) > max {
		return false
	}
	return true
}

// schemaType is the schema's first non-null type, guessed from its
// keywords when it names none.
func schemaType(s map[string]any) string {
	switch t := s["type"].(type) {
	case string:
		return t
	case []any:
		for _, v := range t {
			if str, ok := v.(string); ok && str != "null" {
				return str
			}
		}
		return "null"
	}
	switch {
	case s["properties"] != nil:
		return "object"
	case s["items"] != nil:
		return "array"
	case s["minimum"] != nil || s["maximum"] != nil:
		return "number"
	}
	return "string"
}

// values are valid candidates for a value of schema s, edge values first.
func values(s map[string]any, depth int) []any {
	if c, ok := s["const"]; ok {
		return []any{c}
	}
	if e, ok := s["enum"].([]any); ok && len(e) > 0 {
		return e
	}
	switch schemaType(s) {
	case "string":
		var out []any
		for _, v := range []string{"", "a", "aaaa", "héllo wörld", strings.Repeat("a", 300), "Zz"} {
			v = fitString(s, v)
			if fitsLength(s, v) && !slices.Contains(out, any(v)) {
				out = append(out, v)
			}
		}
		return out
	case "integer":
		return numbers(s, []float64{0, -1, 1, 7, math.MaxInt32}, true)
	case "number":
		return numbers(s, []float64{0, -1, 1.5, 1e6}, false)
	case "boolean":
		return []any{false, true}
	case "null":
		return []any{nil}
	case "array":
		items, _ := s["items"].(map[string]any)
		if items == nil {
			items = map[string]any{}
		}
		var out []any
		if min, _ := number(s["minItems"]); min == 0 {
			out = append(out, []any{})
		}
		if depth < 3 {
			vs := values(items, depth+1)
			if len(vs) > 0 {
				out = append(out, vs[:min(len(vs), 2)])
			}
		}
		return out
	case "object":
		if depth >= 3 {
			return []any{map[string]any{}}
		}
		g := generator{schema: s, m: &abi.Manifest{}}
		return []any{g.nested(depth + 1)}
	}
	return []any{"a"}
}

// nested is one object for a nested object schema: its required
// properties.
func (g generator) nested(depth int) map[string]any {
	names, props := g.properties()
	req := g.required()
	obj := map[string]any{}
	for _, name := range names {
		if req[name] {
			if vs := values(props[name], depth); len(vs) > 0 {
				obj[name] = vs[0]
			}
		}
	}
	return obj
}

// fitString pads v to the schema's minLength, and cuts it to its
// maxLength.
func fitString(s map[string]any, v string) string {
	if min, ok := number(s["minLength"]); ok && float64(utf8.RuneCountInString(v)) < min {
		v += strings.Repeat("a", int(min)-utf8.RuneCountInString(v))
	}
	if max, ok := number(s["maxLength"]); ok && float64(utf8.RuneCountInString(v)) > max {
		v = string([]rune(v)[:int(max)])
	}
	return v
}

// numbers are the candidates within the schema's bounds, with the bounds
// themselves.
func numbers(s map[string]any, base []float64, integer bool) []any {
	lo, hasLo := number(s["minimum"])
	hi, hasHi := number(s["maximum"])
	if x, ok := number(s["exclusiveMinimum"]); ok {
		lo, hasLo = x+1, true
	}
	if x, ok := number(s["exclusiveMaximum"]); ok {
		hi, hasHi = x-1, true
	}
	cands := append([]float64{}, base...)
	if hasLo {
		cands = append([]float64{lo}, cands...)
	}
	if hasHi {
		cands = append(cands, hi)
	}
	var out []any
	for _, c := range cands {
		if (hasLo && c < lo) || (hasHi && c > hi) {
			continue
		}
		var v any = c
		if integer {
			v = int64(c)
		}
		if !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	if len(out) == 0 && hasLo {
		out = append(out, lo)
	}
	return out
}

func number(v any) (float64, bool) {
	f, ok := v.(float64)
	return f, ok
}

// invalid returns arguments the schema refuses, as raw JSON (or not
// JSON at all), each with what makes it invalid: wrong types, values past
// the bounds, a value outside an enum, a missing required property, an
// unknown property where none is allowed, and random bytes.
func (g generator) invalid(base map[string]any) []invalidArgs {
	var out []invalidArgs
	add := func(why string, v any) {
		b, _ := json.Marshal(v)
		out = append(out, invalidArgs{why: why, args: b})
	}
	names, props := g.properties()
	with := func(name string, v any) map[string]any {
		obj := clone(base)
		obj[name] = v
		return obj
	}
	for _, name := range names {
		s := props[name]
		switch schemaType(s) {
		case "string":
			add(name+" is a number, not a string", with(name, 12345))
			if max, ok := number(s["maxLength"]); ok && max < 1<<16 {
				add(name+" is longer than maxLength", with(name, strings.Repeat("a", int(max)+1)))
			}
		case "integer", "number":
			add(name+" is a string, not a number", with(name, "seven"))
			if lo, ok := number(s["minimum"]); ok {
				add(name+" is below its minimum", with(name, lo-1))
			}
			if hi, ok := number(s["maximum"]); ok {
				add(name+" is above its maximum", with(name, hi+1))
			}
			if schemaType(s) == "integer" {
				add(name+" is not an integer", with(name, 1.5))
			}
		case "boolean":
			add(name+" is a string, not a boolean", with(name, "yes"))
		case "array":
			add(name+" is an object, not an array", with(name, map[string]any{"x": 1}))
		case "object":
			add(name+" is an array, not an object", with(name, []any{1}))
		}
		if e, ok := s["enum"].([]any); ok && len(e) > 0 {
			add(name+" is not one of its enum values", with(name, "not-a-listed-value"))
		}
	}
	for name := range g.required() {
		obj := clone(base)
		delete(obj, name)
		add("required "+name+" is missing", obj)
	}
	if ap, ok := g.schema["additionalProperties"].(bool); ok && !ap {
		add("an unknown property is given", with("zz_not_in_the_schema", 1))
	}
	add("the arguments are an array, not an object", []any{base})
	add("the arguments are a string, not an object", "arguments")
	add("the arguments are a number, not an object", 42)
	// Bytes that are not JSON, or not UTF-8: fixed, then random from a
	// fixed seed.
	for _, raw := range []string{"{", `{"unterminated": "`, "\xff\xfe\x00{}", "{}}"} {
		out = append(out, invalidArgs{why: "the arguments are not JSON", args: json.RawMessage(raw)})
	}
	rng := rand.New(rand.NewPCG(13, 1))
	for range 3 {
		b := make([]byte, 64)
		for i := range b {
			b[i] = byte(rng.UintN(256))
		}
		b[0] = '{' // not JSON even so: JSON is never random bytes
		out = append(out, invalidArgs{why: "the arguments are random bytes", args: b})
	}
	return out
}

type invalidArgs struct {
	why  string
	args json.RawMessage
}

func clone(m map[string]any) map[string]any {
	c := make(map[string]any, len(m))
	for k, v := range m {
		c[k] = v
	}
	return c
}
