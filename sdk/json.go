package sdk

import "github.com/toolhost/toolhost/internal/jsontext"

// AppendJSONString appends s as a JSON string, for plugins that build JSON
// output by hand (encoding/json costs about ten times more in a guest).
// Control, bidi and zero-width characters come out as \u escapes, so a
// hostile file name shows what it holds, and the host's sanitizer leaves
// the JSON as it is.
func AppendJSONString(dst []byte, s string) []byte { return jsontext.AppendString(dst, s) }
