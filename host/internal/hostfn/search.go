package hostfn

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"

	"github.com/tetratelabs/wazero/api"

	"github.com/toolhost/toolhost/abi"
	"github.com/toolhost/toolhost/host/internal/search"
	"github.com/toolhost/toolhost/internal/searchtext"
)

// maxSearchRequestBytes bounds an fs_search request before it is
// decoded: a query, 100 patterns and a path fit well within it.
const maxSearchRequestBytes = search.MaxQueryBytes + search.MaxPatterns*search.MaxPatternBytes + 2*maxPathBytes + 4096

// fsSearch walks a tree and matches natively for the search, glob and
// list tools (abi.SearchRequest). The directory searched is a read like
// any other: in the call's read scope, resolved and checked by the
// sandbox; everything below it is checked entry by entry (package search).
func fsSearch(ctx context.Context, c *Call, mem api.Memory, stack []uint64) ([]byte, error) {
	if n := uint32(stack[1]); n > maxSearchRequestBytes {
		return nil, fail(abi.StatusTooLarge, abi.KindBadArgs, "fs_search: a request of %d bytes is more than the %d one may have; send a shorter query or fewer patterns", n, maxSearchRequestBytes)
	}
	raw, err := guestBytes(mem, uint32(stack[0]), uint32(stack[1]))
	if err != nil {
		return nil, err
	}
	var req abi.SearchRequest
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		return nil, fail(abi.StatusInvalid, abi.KindBadArgs, "fs_search: the request is not a search request (%v); send an abi.SearchRequest as JSON", err)
	}
	if dec.More() {
		return nil, fail(abi.StatusInvalid, abi.KindBadArgs, "fs_search: the request has more after its JSON object; send one abi.SearchRequest")
	}
	if err := search.Normalize(&req); err != nil {
		return nil, searchError(err)
	}
	name := req.Path
	if name == "" {
		name = "."
	}
	if len(name) > maxPathBytes {
		return nil, fail(abi.StatusInvalid, abi.KindBadArgs, "path: %d bytes is longer than the %d bytes any path may have", len(name), maxPathBytes)
	}
	start, err := c.resolveRead("fs_search", name)
	if err != nil {
		return nil, classify(name, err)
	}
	res, err := search.Run(ctx, start, req, search.Options{
		Sandbox:     c.Sandbox,
		Display:     c.display,
		ScanLimit:   c.scanLimit(),
		OutputLimit: c.outputLimit(),
	})
	if err != nil {
		return nil, searchError(classifyIfPath(name, err))
	}
	if req.Render == abi.RenderListing {
		// The directory as its entries are shown ("sub", not "./sub/"),
		// so that they are listed below it.
		dir := c.display(start)
		if dir == "" {
			dir = "."
		}
		text, obj := searchtext.Listing(dir, res, req.RenderStructured, c.outputLimit())
		return abi.AppendRendered(make([]byte, 0, 4+len(text)+len(obj)), text, obj), nil
	}
	return json.Marshal(res)
}

// searchError turns a refused request into a BadArgs error naming the
// argument.
func searchError(err error) error {
	var re *search.RequestError
	if errors.As(err, &re) {
		return fail(abi.StatusInvalid, abi.KindBadArgs, "%s", re.Message)
	}
	return err
}

func classifyIfPath(name string, err error) error {
	var re *search.RequestError
	if errors.As(err, &re) {
		return err
	}
	return classify(name, err)
}
