// Command floorserver is the floor make bench measures MCP servers
// against: newline-delimited JSON-RPC on stdin and stdout written by
// hand, no SDK, doing the same system calls as nativeserver (the file
// read through an os.Root; ReadDir and each entry's Info for a listing)
// and answering in the same shape. It checks nothing it need not and
// encodes every answer straight into one buffer, so no MCP server can
// do the same work over stdio in much less time: the gap to it is what
// a server's framework and safety cost.
//
// Usage: floorserver ROOT
package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log"
	"os"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/toolhost/toolhost/internal/jsontext"
)

// maxRead bounds what one read returns, as nativeserver's does.
const maxRead = 256 << 10

// protocolVersion is the newest MCP revision the server speaks; a client
// asking for another one gets this one, as the specification allows.
const protocolVersion = "2025-06-18"

// toolList is the tools/list result, nativeserver's two tools with the
// same schemas.
const toolList = `{"tools":[` +
	`{"name":"list_directory","description":"List a directory under the root, with sizes.","annotations":{"readOnlyHint":true},` +
	`"inputSchema":{"type":"object","properties":{"path":{"type":"string","description":"directory to list, relative to the root"}},"required":["path"],"additionalProperties":false}},` +
	`{"name":"read_file","description":"Read a text file under the root.","annotations":{"readOnlyHint":true},` +
	`"inputSchema":{"type":"object","properties":{"path":{"type":"string","description":"file to read, relative to the root"}},"required":["path"],"additionalProperties":false}}]}`

// request is a JSON-RPC message from the client; one without an id is a
// notification and gets no answer.
type request struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
}

type callParams struct {
	Name      string `json:"name"`
	Arguments struct {
		Path string `json:"path"`
	} `json:"arguments"`
}

// server answers one client; out is the answer being encoded, reused.
type server struct {
	root *os.Root
	w    *bufio.Writer
	out  []byte
}

func main() {
	if len(os.Args) != 2 {
		log.Fatal("usage: floorserver ROOT")
	}
	root, err := os.OpenRoot(os.Args[1])
	if err != nil {
		log.Fatalf("floorserver: open root %s: %v", os.Args[1], err)
	}
	defer root.Close()
	s := &server{root: root, w: bufio.NewWriterSize(os.Stdout, 64<<10)}
	if err := s.serve(bufio.NewReaderSize(os.Stdin, 64<<10)); err != nil {
		log.Fatalf("floorserver: %v", err)
	}
}

// serve answers each line of r until it ends.
func (s *server) serve(r *bufio.Reader) error {
	var long []byte // a line longer than r's buffer, gathered
	for {
		line, err := r.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			long = append(long, line...)
			continue
		}
		if long != nil {
			line, long = append(long, line...), nil
		}
		if len(line) > 0 {
			if err := s.answer(line); err != nil {
				return err
			}
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// answer handles one message and writes its answer, if it has one.
func (s *server) answer(line []byte) error {
	var req request
	if err := json.Unmarshal(line, &req); err != nil {
		return s.write(s.fail(nil, -32700, "parse error: "+err.Error()))
	}
	if len(req.ID) == 0 {
		return nil // a notification: notifications/initialized, a cancellation
	}
	switch req.Method {
	case "initialize":
		s.out = s.begin(req.ID)
		s.out = append(s.out, `{"capabilities":{"tools":{}},"protocolVersion":"`+protocolVersion+`","serverInfo":{"name":"floor","version":"1"}}}`...)
	case "ping":
		s.out = append(s.begin(req.ID), "{}}"...)
	case "tools/list":
		s.out = append(s.begin(req.ID), toolList+"}"...)
	case "tools/call":
		var p callParams
		if err := json.Unmarshal(req.Params, &p); err != nil {
			return s.write(s.fail(req.ID, -32602, "tools/call params: "+err.Error()))
		}
		switch p.Name {
		case "read_file":
			s.read(req.ID, p.Arguments.Path)
		case "list_directory":
			s.list(req.ID, p.Arguments.Path)
		default:
			return s.write(s.fail(req.ID, -32602, fmt.Sprintf("unknown tool %q", p.Name)))
		}
	default:
		return s.write(s.fail(req.ID, -32601, fmt.Sprintf("method not found: %q", req.Method)))
	}
	return s.write(append(s.out, '\n'))
}

func (s *server) write(b []byte) error {
	if _, err := s.w.Write(b); err != nil {
		return err
	}
	return s.w.Flush()
}

// begin starts an answer to id, up to its result's value.
func (s *server) begin(id json.RawMessage) []byte {
	b := append(s.out[:0], `{"jsonrpc":"2.0","id":`...)
	b = append(b, id...)
	return append(b, `,"result":`...)
}

// fail is an error answer, line and all.
func (s *server) fail(id json.RawMessage, code int, msg string) []byte {
	if id == nil {
		id = json.RawMessage("null")
	}
	b := append(s.out[:0], `{"jsonrpc":"2.0","id":`...)
	b = append(b, id...)
	b = append(b, `,"error":{"code":`...)
	b = strconv.AppendInt(b, int64(code), 10)
	b = append(b, `,"message":`...)
	b = appendString(b, msg)
	return append(b, "}}\n"...)
}

// toolError ends s.out as a tool's failure, which the model reads.
func (s *server) toolError(id json.RawMessage, err error) {
	s.out = append(s.begin(id), `{"content":[{"type":"text","text":`...)
	s.out = appendString(s.out, err.Error())
	s.out = append(s.out, `}],"isError":true}}`...)
}

func (s *server) read(id json.RawMessage, name string) {
	f, err := s.root.Open(name)
	if err != nil {
		s.toolError(id, err)
		return
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxRead))
	if err != nil {
		s.toolError(id, fmt.Errorf("read %s: %w", name, err))
		return
	}
	s.out = append(s.begin(id), `{"content":[{"type":"text","text":`...)
	s.out = appendString(s.out, string(b))
	s.out = append(s.out, `}]}}`...)
}

// list encodes nativeserver's listing once and sends it twice, as text
// and as structured content.
func (s *server) list(id json.RawMessage, dir string) {
	f, err := s.root.Open(dir)
	if err != nil {
		s.toolError(id, err)
		return
	}
	defer f.Close()
	des, err := f.ReadDir(-1)
	if err != nil {
		s.toolError(id, fmt.Errorf("list %s: %w", dir, err))
		return
	}
	slices.SortFunc(des, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	l := append([]byte(nil), `{"path":`...)
	l = appendString(l, dir)
	l = append(l, `,"entries":[`...)
	n := 0
	for _, de := range des {
		info, err := de.Info()
		if err != nil {
			continue // removed since ReadDir
		}
		if n > 0 {
			l = append(l, ',')
		}
		n++
		typ := "file"
		if de.IsDir() {
			typ = "directory"
		}
		l = append(l, `{"name":`...)
		l = appendString(l, de.Name())
		l = append(l, `,"path":`...)
		l = appendString(l, path.Join(dir, de.Name()))
		l = append(l, `,"type":"`+typ+`","size":`...)
		l = strconv.AppendInt(l, info.Size(), 10)
		l = append(l, `,"modified":"`...)
		l = info.ModTime().UTC().AppendFormat(l, time.RFC3339)
		l = append(l, `"}`...)
	}
	l = append(l, `],"truncated":false}`...)
	s.out = append(s.begin(id), `{"content":[{"type":"text","text":`...)
	s.out = appendString(s.out, string(l))
	s.out = append(s.out, `}],"structuredContent":`...)
	s.out = append(s.out, l...)
	s.out = append(s.out, `}}`...)
}

// appendString appends v as a JSON string, as the plugins' hand-built
// JSON does.
func appendString(b []byte, v string) []byte { return jsontext.AppendString(b, v) }
