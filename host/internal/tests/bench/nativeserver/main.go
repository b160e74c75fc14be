// Command nativeserver is the baseline make bench measures toolhost serve
// --stdio against (make bench): an MCP server over stdio on the
// official Go SDK offering the same two read-only operations as toolhost's
// read_file and list_directory, in plain Go through an os.Root, with no
// WebAssembly, no policy and no sanitizing. It is what a careful Go author
// would write by hand, so the gap to it is what toolhost's safety costs.
//
// With -http it serves MCP streamable HTTP at http://ADDR/mcp instead, as
// the SDK does by default (a session per client) but answering each
// request with application/json rather than an event stream, and prints
// that URL to stderr once it listens (port 0 picks a free one).
//
// Usage: nativeserver [-http ADDR] ROOT
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"log"
	"net"
	"net/http"
	"os"
	"path"
	"runtime/pprof"
	"slices"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// maxRead bounds what one read returns, as toolhost's read_file does.
const maxRead = 256 << 10

type readArgs struct {
	Path string `json:"path" jsonschema:"file to read, relative to the root"`
}

type listArgs struct {
	Path string `json:"path" jsonschema:"directory to list, relative to the root"`
}

// entry and listing have toolhost's list_directory shape, so both servers
// encode the same amount of JSON.
type entry struct {
	Name     string `json:"name"`
	Path     string `json:"path"`
	Type     string `json:"type"`
	Size     int64  `json:"size"`
	Modified string `json:"modified"`
}

type listing struct {
	Path      string  `json:"path"`
	Entries   []entry `json:"entries"`
	Truncated bool    `json:"truncated"`
}

func main() {
	addr := flag.String("http", "", "serve MCP streamable HTTP at http://`ADDR`/mcp instead of stdio")
	flag.Parse()
	if flag.NArg() != 1 {
		log.Fatal("usage: nativeserver [-http ADDR] ROOT")
	}
	root, err := os.OpenRoot(flag.Arg(0))
	if err != nil {
		log.Fatalf("nativeserver: open root %s: %v", flag.Arg(0), err)
	}
	defer root.Close()
	if p := os.Getenv("NATIVESERVER_CPUPROFILE"); p != "" {
		f, err := os.Create(p)
		if err != nil {
			log.Fatalf("nativeserver: $NATIVESERVER_CPUPROFILE: %v", err)
		}
		pprof.StartCPUProfile(f)
		defer pprof.StopCPUProfile()
	}
	s := mcp.NewServer(&mcp.Implementation{Name: "native", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "read_file", Description: "Read a text file under the root.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}}, func(_ context.Context, _ *mcp.CallToolRequest, a readArgs) (*mcp.CallToolResult, any, error) {
		text, err := read(root, a.Path)
		if err != nil {
			return nil, nil, err
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}, nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "list_directory", Description: "List a directory under the root, with sizes.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}}, func(_ context.Context, _ *mcp.CallToolRequest, a listArgs) (*mcp.CallToolResult, any, error) {
		l, err := list(root, a.Path)
		if err != nil {
			return nil, nil, err
		}
		// Encoded once, sent as text and as structured content, with no
		// output schema for the SDK to check each result against (it
		// would double the call's cost): toolhost checks none either.
		b, err := json.Marshal(l)
		if err != nil {
			return nil, nil, err
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(b)}}, StructuredContent: json.RawMessage(b)}, nil, nil
	})
	if *addr != "" {
		err = serveHTTP(s, *addr)
	} else {
		err = s.Run(context.Background(), &mcp.StdioTransport{})
	}
	if err != nil {
		log.Fatalf("nativeserver: %v", err)
	}
}

// serveHTTP serves s at http://addr/mcp until the process is killed.
func serveHTTP(s *mcp.Server, addr string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.Handle("/mcp", mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, &mcp.StreamableHTTPOptions{JSONResponse: true}))
	fmt.Fprintf(os.Stderr, "nativeserver: MCP at http://%s/mcp\n", ln.Addr())
	return http.Serve(ln, mux)
}

func read(root *os.Root, name string) (string, error) {
	f, err := root.Open(name)
	if err != nil {
		return "", err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxRead))
	if err != nil {
		return "", fmt.Errorf("read %s: %w", name, err)
	}
	return strings.ToValidUTF8(string(b), "\uFFFD"), nil
}

func list(root *os.Root, dir string) (listing, error) {
	f, err := root.Open(dir)
	if err != nil {
		return listing{}, err
	}
	defer f.Close()
	des, err := f.ReadDir(-1)
	if err != nil {
		return listing{}, fmt.Errorf("list %s: %w", dir, err)
	}
	slices.SortFunc(des, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	l := listing{Path: dir, Entries: make([]entry, 0, len(des))}
	for _, de := range des {
		info, err := de.Info()
		if err != nil {
			continue // removed since ReadDir
		}
		typ := "file"
		if de.IsDir() {
			typ = "directory"
		}
		l.Entries = append(l.Entries, entry{Name: de.Name(), Path: path.Join(dir, de.Name()), Type: typ, Size: info.Size(),
			Modified: info.ModTime().UTC().Format(time.RFC3339)})
	}
	return l, nil
}
