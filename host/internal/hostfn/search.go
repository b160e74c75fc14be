package hostfn

import (
	"context"

	"github.com/tetratelabs/wazero/api"

	"github.com/toolhost/toolhost/abi"
)

// fsSearch walks a tree and matches natively for the search, glob and
// list tools (abi.SearchRequest).
func fsSearch(_ context.Context, _ *Call, _ api.Memory, _ []uint64) ([]byte, error) {
	return nil, fail(abi.StatusInvalid, abi.KindExecutionFailed, "fs_search: not available in this build")
}
