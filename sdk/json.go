package sdk

import "github.com/toolhost/toolhost/sdk/internal/argjson"

// AppendJSONString appends s as a JSON string, for plugins that build JSON
// output by hand (encoding/json costs about ten times more in a guest).
func AppendJSONString(dst []byte, s string) []byte { return argjson.AppendString(dst, s) }
