package sdk

import (
	"strconv"

	"github.com/toolhost/toolhost/abi"
	"github.com/toolhost/toolhost/internal/jsontext"
)

// appendManifest writes m as JSON. It exists so that plugins do not link
// encoding/json's encoder, which adds a tenth to every module and so to
// every load, validation and instantiation of it.
func appendManifest(b []byte, m abi.Manifest) []byte {
	str := func(key, v string) {
		b = append(b, ',', '"')
		b = append(b, key...)
		b = append(b, '"', ':')
		b = jsontext.AppendString(b, v)
	}
	b = append(b, `{"abi":`...)
	b = jsontext.AppendString(b, m.ABI)
	str("name", m.Name)
	str("version", m.Version)
	str("description", m.Description)
	b = append(b, `,"parameters":`...)
	if len(m.Parameters) == 0 {
		b = append(b, "null"...)
	} else {
		b = append(b, m.Parameters...)
	}
	if len(m.OutputSchema) > 0 {
		b = append(b, `,"output_schema":`...)
		b = append(b, m.OutputSchema...)
	}
	b = append(b, `,"side_effecting":`...)
	b = strconv.AppendBool(b, m.SideEffecting)
	b = append(b, `,"requires_approval":`...)
	b = strconv.AppendBool(b, m.RequiresApproval)
	str("risk_level", string(m.RiskLevel))
	if m.TimeoutMillis != 0 {
		b = append(b, `,"timeout_ms":`...)
		b = strconv.AppendInt(b, m.TimeoutMillis, 10)
	}
	if m.TimeoutClass != "" {
		str("timeout_class", string(m.TimeoutClass))
	}
	list := func(key string, items []string) {
		if len(items) == 0 {
			return
		}
		b = append(b, ',', '"')
		b = append(b, key...)
		b = append(b, `":[`...)
		for i, it := range items {
			if i > 0 {
				b = append(b, ',')
			}
			b = jsontext.AppendString(b, it)
		}
		b = append(b, ']')
	}
	list("path_args", m.PathArgs)
	list("create_args", m.CreateArgs)
	if m.WritesUnnamedPaths {
		b = append(b, `,"writes_unnamed_paths":true`...)
	}
	if m.ReadsUnderPathArgs {
		b = append(b, `,"reads_under_path_args":true`...)
	}
	if m.DescribesLinks {
		b = append(b, `,"describes_links":true`...)
	}
	if m.Nondeterministic {
		b = append(b, `,"nondeterministic":true`...)
	}
	if m.OpenWorld {
		b = append(b, `,"open_world":true`...)
	}
	if m.Additive {
		b = append(b, `,"additive":true`...)
	}
	if m.Idempotent {
		b = append(b, `,"idempotent":true`...)
	}
	caps := make([]string, len(m.Capabilities))
	for i, c := range m.Capabilities {
		caps[i] = string(c)
	}
	list("capabilities", caps)
	return append(b, '}')
}
