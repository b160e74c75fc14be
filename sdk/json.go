package sdk

import "encoding/json"

// AppendJSONString appends s as a JSON string, for plugins that build JSON
// output by hand.
func AppendJSONString(dst []byte, s string) []byte {
	b, _ := json.Marshal(s)
	return append(dst, b...)
}
