// The Go peer make bench measures toolhost against, mark3labs'
// mcp-filesystem-server on mcp-go, at a fixed version, in a module of its
// own so the repository's go.mod never depends on mcp-go. The benchmark
// builds it from here:
//
//	go build -C host/internal/tests/bench/peer -o BIN github.com/mark3labs/mcp-filesystem-server
module github.com/toolhost/toolhost/host/internal/tests/bench/peer

go 1.26.0

tool github.com/mark3labs/mcp-filesystem-server

require (
	github.com/djherbis/times v1.6.0 // indirect
	github.com/gabriel-vasile/mimetype v1.4.9 // indirect
	github.com/gobwas/glob v0.2.3 // indirect
	github.com/google/uuid v1.6.0 // indirect
	github.com/mark3labs/mcp-filesystem-server v0.11.1 // indirect
	github.com/mark3labs/mcp-go v0.32.0 // indirect
	github.com/spf13/cast v1.7.1 // indirect
	github.com/yosida95/uritemplate/v3 v3.0.2 // indirect
	golang.org/x/net v0.39.0 // indirect
	golang.org/x/sys v0.32.0 // indirect
)
