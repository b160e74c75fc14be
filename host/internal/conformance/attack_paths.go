package conformance

import (
	"github.com/toolhost/toolhost/abi"
	"github.com/toolhost/toolhost/host/internal/argpath"
)

// nestedPathArgs are the manifest's path_args inside arrays or objects
// ("paths/*", "edits/*/path"), parsed; top-level ones are properties, and
// the generator treats them as such (isPath).
func nestedPathArgs(m *abi.Manifest) []argpath.Selector {
	var out []argpath.Selector
	for _, a := range m.PathArgs {
		if s, err := argpath.Parse(a); err == nil && !s.TopLevel() {
			out = append(out, s)
		}
	}
	return out
}

// setPaths sets every string at the selector's places in v to next()'s
// paths and returns v: the generator's values hold no path, and an attack
// needs one where the host must check it. With create, a place the
// arguments lack (an absent key, an empty array) is made, so the attack
// has somewhere to be; a value of another type is left as it is.
func setPaths(v any, keys []string, next func() string, create bool) (any, bool) {
	if len(keys) == 0 {
		if _, ok := v.(string); ok || (create && v == nil) {
			return next(), true
		}
		return v, false
	}
	if keys[0] == argpath.Wildcard {
		arr, isArr := v.([]any)
		if !isArr && v != nil {
			return v, false
		}
		set := false
		for i := range arr {
			var ok bool
			arr[i], ok = setPaths(arr[i], keys[1:], next, create)
			set = set || ok
		}
		if !set && create {
			e, _ := setPaths(nil, keys[1:], next, true)
			arr, set = append(arr, e), true
		}
		return arr, set
	}
	obj, isObj := v.(map[string]any)
	if !isObj {
		if v != nil || !create {
			return v, false
		}
		obj = map[string]any{}
	}
	e, present := obj[keys[0]]
	if !present && !create {
		return obj, false
	}
	e, set := setPaths(e, keys[1:], next, create)
	if set {
		obj[keys[0]] = e
	}
	return obj, set
}

// deepCopy copies a decoded JSON value, so that setting paths in one set
// of arguments leaves the generator's shared candidates as they were.
func deepCopy(v any) any {
	switch v := v.(type) {
	case map[string]any:
		c := make(map[string]any, len(v))
		for k, e := range v {
			c[k] = deepCopy(e)
		}
		return c
	case []any:
		c := make([]any, len(v))
		for i, e := range v {
			c[i] = deepCopy(e)
		}
		return c
	}
	return v
}
