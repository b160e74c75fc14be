package extism

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/toolhost/toolhost/abi"
)

// callToolResult is MCP's CallToolResult, as hyper-mcp plugins and
// servlets return it.
type callToolResult struct {
	Content           []contentBlock  `json:"content"`
	IsError           bool            `json:"isError"`
	StructuredContent json.RawMessage `json:"structuredContent"`
}

// contentBlock is one MCP content block; Raw keeps it whole for types
// toolhost does not know.
type contentBlock struct {
	Type     string `json:"type"`
	Text     string `json:"text"`
	Data     string `json:"data"`
	MimeType string `json:"mimeType"`
	URI      string `json:"uri"`
	Name     string `json:"name"`
	Resource *struct {
		URI      string `json:"uri"`
		MimeType string `json:"mimeType"`
		Text     string `json:"text"`
		Blob     string `json:"blob"`
	} `json:"resource"`
	Raw json.RawMessage `json:"-"`
}

func (b *contentBlock) UnmarshalJSON(data []byte) error {
	type plain contentBlock
	if err := json.Unmarshal(data, (*plain)(b)); err != nil {
		return err
	}
	b.Raw = data
	return nil
}

// callResult maps a CallToolResult to toolhost's result: text blocks as
// they are, other blocks described in one line (a model gains nothing from
// base64), structuredContent as JSON when there is no content, and as
// the result's structured object (which the engine checks as it does a
// toolhost/v1 plugin's) when it is an object; isError
// makes it an ExecutionFailed error with that text. The text is built up
// to a bound above limit only: the engine cuts it to limit with its
// marker, and the plugin's output (in memory already, under the memory
// cap) is never copied whole again.
func callResult(tool string, out []byte, limit int) abi.Result {
	var r callToolResult
	if err := json.Unmarshal(out, &r); err != nil {
		return abi.Result{Kind: abi.KindExecutionFailed, Content: []byte(fmt.Sprintf(
			"the plugin returned %d bytes that are not an MCP CallToolResult ({\"content\": [...]}): %v", len(out), err))}
	}
	bound := 2*limit + 4096
	var b strings.Builder
	for _, c := range r.Content {
		if b.Len() >= bound {
			break
		}
		if b.Len() > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(cut(describe(c), bound-b.Len()))
	}
	if b.Len() == 0 && len(r.StructuredContent) > 0 && string(r.StructuredContent) != "null" {
		b.WriteString(cut(string(r.StructuredContent), bound))
	}
	if r.IsError {
		text := b.String()
		if text == "" {
			text = tool + " reported an error without a message"
		}
		return abi.Result{Kind: abi.KindExecutionFailed, Content: []byte(text)}
	}
	res := abi.Result{Content: []byte(b.String())}
	if t := strings.TrimSpace(string(r.StructuredContent)); strings.HasPrefix(t, "{") {
		// Cut past the bound, the engine leaves it out as too big.
		res.Structured = []byte(t[:min(len(t), bound)])
	}
	return res
}

// describe is a content block as text.
func describe(c contentBlock) string {
	switch c.Type {
	case "text":
		return c.Text
	case "image", "audio":
		return fmt.Sprintf("[%s %s, %d bytes]", c.Type, c.MimeType, decodedLen(c.Data))
	case "resource":
		if c.Resource == nil {
			break
		}
		if c.Resource.Blob == "" {
			return "[resource " + c.Resource.URI + "]\n" + c.Resource.Text
		}
		return fmt.Sprintf("[resource %s %s, %d bytes]", c.Resource.URI, c.Resource.MimeType, decodedLen(c.Resource.Blob))
	case "resource_link":
		return strings.TrimSpace("[resource link " + c.URI + " " + c.Name + "]")
	}
	return string(c.Raw)
}

func decodedLen(s string) int {
	return base64.RawStdEncoding.DecodedLen(len(strings.TrimRight(s, "=")))
}
