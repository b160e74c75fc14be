// The Extism guests the tests load: their own module, so the main module
// does not require go-pdk.
module github.com/toolhost/toolhost/host/internal/tests/extism/plugins

go 1.26.0

require github.com/extism/go-pdk v1.1.3
