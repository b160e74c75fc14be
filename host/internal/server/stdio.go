package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"slices"
	"sync"
	"sync/atomic"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The stdio fast path answers tools/call itself and leaves every other
// message to the SDK. The SDK encodes a result three times on its way out
// (the result, the response around it, the frame), which for a 10 KB
// read costs more than the whole call through the engine; here the result
// is encoded once, straight into its frame. Everything else a call needs
// from the session (elicitation, progress, the conversation) still goes
// through the SDK's session, so both paths behave the same (make bench measures the difference).

// fastConn is the SDK's stdio connection with tools/call taken out of
// its stream: Read hands the SDK every message but the calls it answers.
type fastConn struct {
	mcp.Connection
	s   *Server
	out *lockedWriter
	// session is the SDK's session on this connection, set once Connect
	// returns; no call is answered before it is. ready is closed then.
	session atomic.Pointer[mcp.ServerSession]
	ready   chan struct{}
	// base is the context of the calls answered here: it ends when the
	// connection does.
	base context.Context

	mu sync.Mutex
	// inflight are the calls running on this path by their request id's
	// JSON: a client may reuse an id while a call holding it runs, and
	// each call must end only its own context.
	inflight map[string][]*flight
}

// flight is one call running on the fast path.
type flight struct{ cancel context.CancelCauseFunc }

// lockedWriter writes each frame whole: the SDK writes a message in one
// Write, and so does the fast path, so frames never interleave.
type lockedWriter struct {
	mu sync.Mutex
	w  io.WriteCloser
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func (l *lockedWriter) Close() error { return l.w.Close() }

// errClientClosed is why calls in flight stop when the client closes
// the connection.
var errClientClosed = errors.New("the MCP client closed its connection")

// fastTransport connects an SDK stdio connection on r and w wrapped in a
// fastConn.
type fastTransport struct {
	s    *Server
	r    io.ReadCloser
	w    io.WriteCloser
	conn *fastConn
}

func (t *fastTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	out := &lockedWriter{w: t.w}
	inner, err := (&mcp.IOTransport{Reader: t.r, Writer: out}).Connect(ctx)
	if err != nil {
		return nil, err
	}
	t.conn = &fastConn{Connection: inner, s: t.s, out: out, base: context.WithoutCancel(ctx), inflight: map[string][]*flight{}, ready: make(chan struct{})}
	return t.conn, nil
}

// serveStdio serves one session on r and w, answering tools/call on the
// fast path.
func (s *Server) serveStdio(ctx context.Context, r io.ReadCloser, w io.WriteCloser) error {
	t := &fastTransport{s: s, r: r, w: w}
	return s.serve(ctx, t, func(ss *mcp.ServerSession) {
		t.conn.session.Store(ss)
		close(t.conn.ready)
	})
}

// Read returns the next message the SDK is to handle.
func (c *fastConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	for {
		msg, err := c.Connection.Read(ctx)
		if err != nil {
			c.cancelAll(errClientClosed)
			return msg, err
		}
		req, ok := msg.(*jsonrpc.Request)
		if !ok {
			return msg, nil
		}
		if req.Method == "notifications/cancelled" {
			c.cancelled(req)
			return msg, nil // the SDK's own requests may be the ones meant
		}
		if req.Method == "tools/call" && c.session.Load() == nil {
			// The SDK may answer initialize before Connect returns
			// and the session is stored: a call the client sends the
			// moment it has the answer would go to the SDK while the
			// next, on the same id, comes here, and one of the two
			// was never answered.
			select {
			case <-c.ready:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		if c.answer(req) {
			continue
		}
		return msg, nil
	}
}

// answer runs req as a tools/call on the fast path and reports whether it
// did; what it leaves (other methods, tools this endpoint does not offer,
// a session not yet initialized, a client on a revision that allows
// batches or that retries with input responses) goes to the SDK, which
// answers it as it always does.
func (c *fastConn) answer(req *jsonrpc.Request) bool {
	ss := c.session.Load()
	if req.Method != "tools/call" || !req.ID.IsValid() || ss == nil {
		return false
	}
	init := ss.InitializeParams()
	if init == nil || init.ProtocolVersion < "2025-06-18" {
		return false // 2025-03-26 allows batches, whose replies the SDK groups
	}
	var params mcp.CallToolParamsRaw
	if err := json.Unmarshal(req.Params, &params); err != nil || !c.s.stdioTools[params.Name] ||
		len(params.InputResponses) > 0 || params.RequestState != "" {
		return false
	}
	id, err := json.Marshal(req.ID.Raw())
	if err != nil {
		return false
	}
	ctx, cancel := context.WithCancelCause(c.base)
	f := &flight{cancel: cancel}
	c.mu.Lock()
	c.inflight[string(id)] = append(c.inflight[string(id)], f)
	c.mu.Unlock()
	go func() {
		defer c.done(string(id), f)
		res, err := c.s.callTool(ctx, &mcp.CallToolRequest{Session: ss, Params: &params}, c.s.opts.Narrowing, c.s.opts.Approvals)
		c.respond(id, res, err)
	}()
	return true
}

// respond writes the answer to the request with this id, encoded once.
func (c *fastConn) respond(id []byte, res *mcp.CallToolResult, callErr error) {
	var b bytes.Buffer
	b.WriteString(`{"jsonrpc":"2.0","id":`)
	b.Write(id)
	if callErr == nil {
		b.WriteString(`,"result":`)
		if err := appendResult(&b, res); err != nil {
			callErr = err
			b.Truncate(len(`{"jsonrpc":"2.0","id":`) + len(id))
		}
	}
	if callErr != nil {
		msg, _ := json.Marshal(callErr.Error())
		b.WriteString(`,"error":{"code":-32603,"message":`)
		b.Write(msg)
		b.WriteString(`}`)
	}
	b.WriteString("}\n")
	if _, err := c.out.Write(b.Bytes()); err != nil {
		c.s.log.Debug("tools/call: the answer could not be written", "id", string(id), "err", err)
	}
}

// cancelled stops the call a notifications/cancelled names, if it is one
// of this path's.
func (c *fastConn) cancelled(req *jsonrpc.Request) {
	var p struct {
		RequestID json.RawMessage `json:"requestId"`
	}
	if json.Unmarshal(req.Params, &p) != nil || len(p.RequestID) == 0 {
		return
	}
	var raw any
	if json.Unmarshal(p.RequestID, &raw) != nil {
		return
	}
	if f, ok := raw.(float64); ok {
		raw = int64(f) // ids are kept as the SDK keeps them, numbers as int64
	}
	key, err := json.Marshal(raw)
	if err != nil {
		return
	}
	// A cancellation names an id, not a call: every call holding it
	// stops.
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, f := range c.inflight[string(key)] {
		f.cancel(context.Canceled) // the cause the SDK gives its own cancelled requests
	}
}

// done forgets f, which ended.
func (c *fastConn) done(id string, f *flight) {
	c.mu.Lock()
	fs := slices.DeleteFunc(c.inflight[id], func(g *flight) bool { return g == f })
	if len(fs) == 0 {
		delete(c.inflight, id)
	} else {
		c.inflight[id] = fs
	}
	c.mu.Unlock()
	f.cancel(nil)
}

func (c *fastConn) cancelAll(cause error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, fs := range c.inflight {
		for _, f := range fs {
			f.cancel(cause)
		}
	}
}

func (c *fastConn) Close() error {
	c.cancelAll(errClientClosed)
	return c.Connection.Close()
}

// appendResult writes res as the SDK would, in one pass for the results
// toResult makes (text content, structured content that is a JSON
// object) and through encoding/json for any other.
func appendResult(b *bytes.Buffer, res *mcp.CallToolResult) error {
	text, ok := onlyText(res)
	if !ok {
		enc := json.NewEncoder(b)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(res); err != nil {
			return err
		}
		b.Truncate(b.Len() - 1) // Encode's newline
		return nil
	}
	b.WriteString(`{"content":[{"type":"text","text":`)
	appendString(b, text)
	b.WriteString(`}]`)
	if raw, ok := res.StructuredContent.(json.RawMessage); ok {
		b.WriteString(`,"structuredContent":`)
		// toResult checked it is a JSON object; a line break in it would
		// end the frame, so only then is it compacted.
		if bytes.ContainsAny(raw, "\n\r") {
			if err := json.Compact(b, raw); err != nil {
				return err
			}
		} else {
			b.Write(raw)
		}
	}
	if res.IsError {
		b.WriteString(`,"isError":true`)
	}
	b.WriteByte('}')
	return nil
}

// onlyText is the text of a result holding one text content and nothing
// the one-pass encoding leaves out.
func onlyText(res *mcp.CallToolResult) (string, bool) {
	if res == nil || len(res.Content) != 1 || res.Meta != nil {
		return "", false
	}
	t, ok := res.Content[0].(*mcp.TextContent)
	if !ok || t.Meta != nil || t.Annotations != nil {
		return "", false
	}
	if res.StructuredContent != nil {
		if _, raw := res.StructuredContent.(json.RawMessage); !raw {
			return "", false
		}
	}
	return t.Text, true
}

// appendString writes s as a JSON string, escaping what JSON requires and
// the line separators JavaScript clients choke on, like encoding/json
// without its HTML escaping. Invalid UTF-8 becomes U+FFFD, as there.
func appendString(b *bytes.Buffer, s string) {
	const hex = "0123456789abcdef"
	b.WriteByte('"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b.WriteString(s[start:i])
			switch c {
			case '"', '\\':
				b.WriteByte('\\')
				b.WriteByte(c)
			case '\n':
				b.WriteString(`\n`)
			case '\r':
				b.WriteString(`\r`)
			case '\t':
				b.WriteString(`\t`)
			default:
				b.WriteString(`\u00`)
				b.WriteByte(hex[c>>4])
				b.WriteByte(hex[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b.WriteString(s[start:i])
			b.WriteString(`\ufffd`)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b.WriteString(s[start:i])
			b.WriteString(`\u202`)
			b.WriteByte(hex[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	b.WriteString(s[start:])
	b.WriteByte('"')
}
