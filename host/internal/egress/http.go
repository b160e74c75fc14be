package egress

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httputil"
	"time"
)

// serveHTTP answers one HTTP request: CONNECT opens a tunnel, an
// absolute-URI request is forwarded, anything else is not for a proxy.
func (p *Proxy) serveHTTP(w http.ResponseWriter, r *http.Request) {
	// The connection's goroutine is counted until a hijack; the handler
	// is counted as long as it runs, tunnel included.
	p.wg.Add(1)
	defer p.wg.Done()
	switch {
	case r.Method == http.MethodConnect:
		p.connect(w, r)
	case r.URL.IsAbs() && r.URL.Host != "":
		if r.URL.Scheme != "http" {
			http.Error(w, fmt.Sprintf("toolhost's egress proxy forwards only http:// requests; for %s, a client sends CONNECT %s", r.URL.Scheme, r.URL.Host), http.StatusBadRequest)
			return
		}
		p.forwarder.ServeHTTP(w, r)
	default:
		http.Error(w, "toolhost's egress proxy takes CONNECT host:port or absolute-URI requests (GET http://host/path); set HTTP_PROXY/HTTPS_PROXY to it", http.StatusBadRequest)
	}
}

// connect opens a tunnel to r's host:port, checked against the rules.
func (p *Proxy) connect(w http.ResponseWriter, r *http.Request) {
	up, err := p.dial(r.Context(), "connect", r.Host)
	if err != nil {
		answer(w, r.Host, err)
		return
	}
	hj, ok := w.(http.Hijacker)
	if !ok {
		_ = up.Close()
		http.Error(w, "toolhost's egress proxy cannot tunnel over this connection", http.StatusInternalServerError)
		return
	}
	c, rw, err := hj.Hijack()
	if err != nil {
		_ = up.Close()
		return
	}
	// Bytes the client sent right behind its request (a TLS ClientHello,
	// say) are already buffered: they go first.
	early, _ := rw.Reader.Peek(rw.Reader.Buffered())
	early = bytes.Clone(early)
	_ = c.SetDeadline(time.Time{})
	if _, err := io.WriteString(c, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
		_ = c.Close()
		_ = up.Close()
		return
	}
	p.relay(c, io.MultiReader(bytes.NewReader(early), c), up)
}

// rewrite makes the forwarded request go to the URL's host, with the
// Host header that names it: a Host header naming another site would
// reach it through a shared server of an allowed one.
func rewrite(pr *httputil.ProxyRequest) {
	pr.Out.Host = ""
}

// answer tells an HTTP client why its request went nowhere: 403 for a
// refusal, 502 when the host could not be resolved or reached.
func answer(w http.ResponseWriter, host string, err error) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	var re *RefusedError
	if errors.As(err, &re) {
		w.WriteHeader(http.StatusForbidden)
		fmt.Fprintln(w, re.Error())
		return
	}
	w.WriteHeader(http.StatusBadGateway)
	fmt.Fprintf(w, "toolhost's egress proxy could not reach %q: %s\n", host, oneLine(err))
}

// oneLine is err's message on one line.
func oneLine(err error) string {
	return string(bytes.ReplaceAll([]byte(err.Error()), []byte("\n"), []byte(" ")))
}
