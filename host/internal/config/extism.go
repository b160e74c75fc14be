package config

import (
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	"github.com/gobwas/glob"
)

// ExtismPlugin is one [extism.<name>] table: what toolhost grants the
// Extism MCP plugin of that name (its file's stem, or its folder's name).
// Nothing the plugin or its folder says adds to it.
type ExtismPlugin struct {
	// AllowedHosts are the hosts (or glob patterns: *.example.com) the
	// plugin's HTTP requests may reach; none means no network.
	AllowedHosts []string `mapstructure:"allowed_hosts"`
	// Config are the values the plugin reads with config_get (API keys
	// among them: config show does not print them).
	Config map[string]string `mapstructure:"config"`
	// MaxMemoryMiB caps each instance's memory, and so its output.
	MaxMemoryMiB int `mapstructure:"max_memory_mib"`
}

// Bounds of extism.<name>.max_memory_mib. A Go-built plugin needs about
// 13 MiB to run for long (it leaks a little on every trap).
const (
	DefaultExtismMaxMemoryMiB = 64
	MinExtismMaxMemoryMiB     = 16
	MaxExtismMaxMemoryMiB     = 4096
)

// extismPluginName is a plugin's name as a file stem or folder name can
// give it.
var extismPluginName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`)

// extismFields are the keys of an [extism.<name>] table.
var extismFields = []string{"allowed_hosts", "config", "max_memory_mib"}

// isExtismKey reports whether a dotted key lies in [extism], which is read
// from the file itself (readExtism): viper lowercases map keys, and a
// plugin's config keys and name are case-sensitive.
func isExtismKey(key string) bool { return key == "extism" || strings.HasPrefix(key, "extism.") }

// readExtism decodes [extism.<name>] tables from the file, keys as
// written, with defaults filled in; nil when the file has none.
func readExtism(file string, raw map[string]any) (map[string]ExtismPlugin, error) {
	val := lookupFold(raw, "extism")
	if val == nil {
		return nil, nil
	}
	tables, ok := val.(map[string]any)
	if !ok {
		return nil, &KeyError{Key: "extism", Source: file, Err: fmt.Errorf("expected a table of plugins ([extism.<name>]), got %s", describe(val))}
	}
	out := make(map[string]ExtismPlugin, len(tables))
	for _, name := range slices.Sorted(maps.Keys(tables)) {
		p, err := decodeExtismPlugin(name, tables[name])
		if err != nil {
			var ke *KeyError
			if errors.As(err, &ke) {
				ke.Source = file
			}
			return nil, err
		}
		out[name] = p
	}
	return out, nil
}

func decodeExtismPlugin(name string, val any) (ExtismPlugin, error) {
	key := "extism." + name
	t, ok := val.(map[string]any)
	if !ok && val != nil {
		return ExtismPlugin{}, &KeyError{Key: key, Err: fmt.Errorf("expected a table, got %s", describe(val))}
	}
	p := ExtismPlugin{AllowedHosts: []string{}, Config: map[string]string{}, MaxMemoryMiB: DefaultExtismMaxMemoryMiB}
	for _, field := range slices.Sorted(maps.Keys(t)) {
		v := t[field]
		switch field {
		case "allowed_hosts":
			hosts, err := kindList.fromFile(v)
			if err != nil {
				return ExtismPlugin{}, &KeyError{Key: key + "." + field, Err: err}
			}
			p.AllowedHosts = hosts.([]string)
		case "max_memory_mib":
			n, err := kindInt.fromFile(v)
			if err != nil {
				return ExtismPlugin{}, &KeyError{Key: key + "." + field, Err: err}
			}
			p.MaxMemoryMiB = n.(int)
		case "config":
			m, ok := v.(map[string]any)
			if !ok {
				return ExtismPlugin{}, &KeyError{Key: key + ".config", Err: fmt.Errorf("expected a table of strings (config = { key = \"value\" }), got %s", describe(v))}
			}
			for k, s := range m {
				str, ok := s.(string)
				if !ok {
					return ExtismPlugin{}, &KeyError{Key: key + ".config." + k, Err: fmt.Errorf("expected a string (quote numbers and booleans), got %s", describe(s))}
				}
				p.Config[k] = str
			}
		default:
			return ExtismPlugin{}, &KeyError{Key: key + "." + field, Err: fmt.Errorf("%w (an [extism.<plugin>] table holds %s)", ErrUnknownKey, strings.Join(extismFields, ", "))}
		}
	}
	return p, nil
}

// validateExtism checks every [extism.<name>] table.
func validateExtism(plugins map[string]ExtismPlugin) error {
	for _, name := range slices.Sorted(maps.Keys(plugins)) {
		p := plugins[name]
		key := "extism." + name
		if !extismPluginName.MatchString(name) {
			return &KeyError{Key: key, Err: fmt.Errorf("%q is not a plugin name (the plugin's file name without .wasm, or its folder's name)", name)}
		}
		if p.MaxMemoryMiB < MinExtismMaxMemoryMiB || p.MaxMemoryMiB > MaxExtismMaxMemoryMiB {
			return &KeyError{Key: key + ".max_memory_mib", Err: fmt.Errorf("must be between %d and %d, got %d", MinExtismMaxMemoryMiB, MaxExtismMaxMemoryMiB, p.MaxMemoryMiB)}
		}
		for _, h := range p.AllowedHosts {
			if err := checkHostPattern(h); err != nil {
				return &KeyError{Key: key + ".allowed_hosts", Err: err}
			}
		}
		for k := range p.Config {
			if k == "" {
				return &KeyError{Key: key + ".config", Err: errors.New("a config key is empty")}
			}
		}
	}
	return nil
}

// checkHostPattern accepts a host name or a glob of one, never a URL.
func checkHostPattern(h string) error {
	if h == "" || strings.ContainsAny(h, "/:@ \t") {
		return fmt.Errorf("%q is not a host name or pattern (write api.example.com or *.example.com, not a URL)", h)
	}
	if _, err := glob.Compile(h); err != nil {
		return fmt.Errorf("%q is not a valid host pattern: %w", h, err)
	}
	return nil
}

// showExtism adds each [extism.<name>] key to values; config values are
// replaced by a mark, since they hold API keys.
func showExtism(values map[string]any, plugins map[string]ExtismPlugin) {
	for name, p := range plugins {
		prefix := "extism." + name + "."
		values[prefix+"allowed_hosts"] = p.AllowedHosts
		values[prefix+"max_memory_mib"] = p.MaxMemoryMiB
		for k := range p.Config {
			values[prefix+"config."+k] = hiddenValue{}
		}
	}
}

// hiddenValue is a value config show does not print.
type hiddenValue struct{}

func (hiddenValue) String() string { return `"…"  # set, not shown` }

// extismSources records where each [extism] key came from.
func extismSources(sources map[string]string, plugins map[string]ExtismPlugin, source string) {
	for name, p := range plugins {
		prefix := "extism." + name + "."
		for _, f := range []string{"allowed_hosts", "max_memory_mib"} {
			sources[prefix+f] = source
		}
		for k := range p.Config {
			sources[prefix+"config."+k] = source
		}
	}
}

func cloneExtism(in map[string]ExtismPlugin) map[string]ExtismPlugin {
	out := make(map[string]ExtismPlugin, len(in))
	for name, p := range in {
		p.AllowedHosts = slices.Clone(p.AllowedHosts)
		p.Config = maps.Clone(p.Config)
		out[name] = p
	}
	return out
}
