package bench

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"
)

// client is the smallest MCP client over stdio an agent could have:
// newline-delimited JSON-RPC on the server's stdin and stdout, one request
// in flight at a time. No SDK, so the client's own cost is a write, a read
// and one decode, the same for every server measured.
type client struct {
	name   string
	cmd    *exec.Cmd
	in     io.WriteCloser
	out    *bufio.Reader
	stderr *lockedBuffer
	next   int64
	line   []byte // reused request buffer
	// answerLen is the last answer's length in bytes, its newline left
	// out.
	answerLen int
}

// lockedBuffer keeps a server's stderr for error messages; the process
// writes it while the client reads.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// response is the part of a JSON-RPC message the client looks at. A
// message with a method is the server's own request or notification.
type response struct {
	ID     *int64          `json:"id"`
	Method string          `json:"method"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// start runs argv with env added to the environment and opens its
// standard streams; the caller handshakes.
func start(name string, argv, env []string, dir string) (*client, error) {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	c := &client{name: name, cmd: cmd, in: in, out: bufio.NewReaderSize(out, 64<<10), stderr: &lockedBuffer{}}
	cmd.Stderr = c.stderr
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s (%s): %w", name, argv[0], err)
	}
	return c, nil
}

// handshake is what an agent does before its first call: initialize,
// notifications/initialized, tools/list. It returns the tools' names.
func (c *client) handshake() ([]string, error) {
	if _, err := c.request("initialize", initParams); err != nil {
		return nil, err
	}
	if err := c.send(map[string]any{"jsonrpc": "2.0", "method": "notifications/initialized"}); err != nil {
		return nil, err
	}
	res, err := c.request("tools/list", map[string]any{})
	if err != nil {
		return nil, err
	}
	var list struct {
		Tools []struct {
			Name string `json:"name"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(res, &list); err != nil {
		return nil, fmt.Errorf("%s: tools/list answer: %w", c.name, err)
	}
	names := make([]string, len(list.Tools))
	for i, t := range list.Tools {
		names[i] = t.Name
	}
	return names, nil
}

// toolResult is a tools/call answer.
type toolResult struct {
	Content []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"content"`
	StructuredContent json.RawMessage `json:"structuredContent"`
	IsError           bool            `json:"isError"`
}

// text is the result's text content, all blocks joined.
func (r *toolResult) text() string {
	var b strings.Builder
	for _, c := range r.Content {
		b.WriteString(c.Text)
	}
	return b.String()
}

// callTool runs one tools/call and returns its result; a result with
// isError set is an error, so nothing measures a failure path.
func (c *client) callTool(name string, args map[string]any) (*toolResult, error) {
	raw, err := c.request("tools/call", map[string]any{"name": name, "arguments": args})
	if err != nil {
		return nil, err
	}
	return toolAnswer(c.name, name, raw)
}

// initParams are the benchmark clients' initialize parameters: a client
// that offers nothing.
var initParams = map[string]any{
	"protocolVersion": "2025-06-18",
	"capabilities":    map[string]any{},
	"clientInfo":      map[string]string{"name": "toolhost-bench", "version": "1"},
}

// toolAnswer decodes server's result of a call of tool; a result with
// isError set is an error, so nothing measures a failure path.
func toolAnswer(server, tool string, raw json.RawMessage) (*toolResult, error) {
	var r toolResult
	if err := json.Unmarshal(raw, &r); err != nil {
		return nil, fmt.Errorf("%s: %s result: %w", server, tool, err)
	}
	if r.IsError {
		return nil, fmt.Errorf("%s: %s failed: %s", server, tool, r.text())
	}
	return &r, nil
}

// request sends one request and reads messages until its answer,
// refusing any request the server makes of the client (it offers no
// capabilities, so none should come).
func (c *client) request(method string, params any) (json.RawMessage, error) {
	c.next++
	id := c.next
	if err := c.send(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params}); err != nil {
		return nil, err
	}
	for {
		line, err := c.out.ReadBytes('\n')
		if err != nil {
			return nil, fmt.Errorf("%s: reading the answer to %s: %w; stderr: %s", c.name, method, err, c.stderr)
		}
		var m response
		if err := json.Unmarshal(line, &m); err != nil {
			return nil, fmt.Errorf("%s: not JSON-RPC on stdout (%w): %.200s", c.name, err, line)
		}
		switch {
		case m.Method != "" && m.ID != nil:
			refusal := map[string]any{"jsonrpc": "2.0", "id": *m.ID, "error": map[string]any{"code": -32601, "message": "the benchmark client offers nothing"}}
			if err := c.send(refusal); err != nil {
				return nil, err
			}
		case m.Method != "":
			// a notification (a log message): not an answer
		case m.ID == nil || *m.ID != id:
			return nil, fmt.Errorf("%s: answer to %s has id %v, want %d: %.200s", c.name, method, m.ID, id, line)
		case m.Error != nil:
			return nil, fmt.Errorf("%s: %s: error %d: %s", c.name, method, m.Error.Code, m.Error.Message)
		default:
			c.answerLen = len(bytes.TrimRight(line, "\r\n"))
			return m.Result, nil
		}
	}
}

func (c *client) send(msg any) error {
	b, err := json.Marshal(msg)
	if err != nil {
		return err
	}
	c.line = append(append(c.line[:0], b...), '\n')
	if _, err := c.in.Write(c.line); err != nil {
		return fmt.Errorf("%s: writing to its stdin: %w; stderr: %s", c.name, err, c.stderr)
	}
	return nil
}

// close ends the session as a client does, by closing the server's stdin,
// and kills the server if it has not exited within 5 s.
func (c *client) close() error {
	c.in.Close()
	done := make(chan error, 1)
	go func() { done <- c.cmd.Wait() }()
	select {
	case err := <-done:
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			return fmt.Errorf("%s exited with %v after its stdin closed; stderr: %s", c.name, err, c.stderr)
		}
		return err
	case <-time.After(5 * time.Second):
		c.cmd.Process.Kill()
		<-done
		return fmt.Errorf("%s did not exit within 5 s of its stdin closing; killed it", c.name)
	}
}
