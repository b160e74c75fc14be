package bench

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"time"
)

// httpServer is an MCP server over streamable HTTP, started by the
// benchmark, that printed its endpoint's URL to stderr.
type httpServer struct {
	name   string
	url    string // its MCP endpoint
	token  string // the bearer token it wants, "" for none
	cmd    *exec.Cmd
	stderr *lockedBuffer
	done   chan struct{} // closed once its stderr ends
	// hc is every session's client: its transport keeps a connection
	// per session, as each client would have its own.
	hc *http.Client
}

// endpointPattern finds the URL in the line a server prints when it
// listens ("toolhost serve: MCP at http://127.0.0.1:PORT/mcp (health:
// ...)", "nativeserver: MCP at http://...").
var endpointPattern = regexp.MustCompile(`MCP at (http://\S+/mcp)\b`)

// startHTTP runs argv and waits for the URL it prints on stderr.
func startHTTP(name string, argv, env []string, dir, token string) (*httpServer, error) {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	pipe, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	s := &httpServer{name: name, token: token, cmd: cmd, stderr: &lockedBuffer{}, done: make(chan struct{}),
		hc: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 2 * httpClients}, Timeout: time.Minute}}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s (%s): %w", name, argv[0], err)
	}
	found := make(chan string, 1)
	go func() {
		defer close(s.done)
		sc := bufio.NewScanner(pipe)
		for sc.Scan() {
			fmt.Fprintln(s.stderr, sc.Text())
			if m := endpointPattern.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case found <- m[1]:
				default:
				}
			}
		}
		io.Copy(io.Discard, pipe)
	}()
	select {
	case s.url = <-found:
		return s, nil
	case <-s.done:
		return nil, errors.Join(fmt.Errorf("%s ended before it printed its URL; stderr: %s", name, s.stderr), s.stop())
	case <-time.After(30 * time.Second):
		return nil, errors.Join(fmt.Errorf("%s printed no URL within 30 s; stderr: %s", name, s.stderr), s.stop())
	}
}

// stop interrupts the server, as an operator's ^C would, and kills it if
// it has not exited within 5 s.
func (s *httpServer) stop() error {
	s.cmd.Process.Signal(os.Interrupt)
	exited := make(chan error, 1)
	go func() {
		<-s.done
		exited <- s.cmd.Wait()
	}()
	select {
	case <-exited:
		return nil
	case <-time.After(5 * time.Second):
		s.cmd.Process.Kill()
		<-exited
		return fmt.Errorf("%s did not exit within 5 s of SIGINT; killed it", s.name)
	}
}

// httpSession is one client's MCP session over streamable HTTP: one
// request in flight, its answer read as application/json or as the
// text/event-stream the server chose. No SDK, as over stdio.
type httpSession struct {
	srv  *httpServer
	id   string // Mcp-Session-Id, once the server gave one
	next int64
	// answerType is the media type of the last answer.
	answerType string
}

// openSession initializes a session and says it is initialized.
func (s *httpServer) openSession() (*httpSession, error) {
	sess := &httpSession{srv: s}
	if _, err := sess.request("initialize", initParams); err != nil {
		return nil, err
	}
	if err := sess.notify("notifications/initialized"); err != nil {
		return nil, err
	}
	return sess, nil
}

// callTool is client.callTool over HTTP.
func (sess *httpSession) callTool(name string, args map[string]any) (*toolResult, error) {
	raw, err := sess.request("tools/call", map[string]any{"name": name, "arguments": args})
	if err != nil {
		return nil, err
	}
	return toolAnswer(sess.srv.name, name, raw)
}

func (sess *httpSession) request(method string, params any) (json.RawMessage, error) {
	sess.next++
	id := sess.next
	resp, err := sess.post(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
	if err != nil {
		return nil, err
	}
	defer drain(resp)
	if resp.StatusCode != http.StatusOK {
		return nil, sess.refused(method, resp)
	}
	if h := resp.Header.Get("Mcp-Session-Id"); h != "" {
		sess.id = h
	}
	sess.answerType, _, _ = mime.ParseMediaType(resp.Header.Get("Content-Type"))
	var m response
	switch sess.answerType {
	case "application/json":
		if err := json.NewDecoder(resp.Body).Decode(&m); err != nil {
			return nil, fmt.Errorf("%s: the answer to %s: %w", sess.srv.name, method, err)
		}
	case "text/event-stream":
		if m, err = answerEvent(resp.Body, id); err != nil {
			return nil, fmt.Errorf("%s: the answer to %s: %w", sess.srv.name, method, err)
		}
	default:
		return nil, fmt.Errorf("%s: the answer to %s is %q, neither JSON nor an event stream", sess.srv.name, method, resp.Header.Get("Content-Type"))
	}
	switch {
	case m.ID == nil || *m.ID != id:
		return nil, fmt.Errorf("%s: answer to %s has id %v, want %d", sess.srv.name, method, m.ID, id)
	case m.Error != nil:
		return nil, fmt.Errorf("%s: %s: error %d: %s", sess.srv.name, method, m.Error.Code, m.Error.Message)
	}
	return m.Result, nil
}

// answerEvent reads an event stream until the event that answers id;
// the events before it (a log message, progress) are not answers.
func answerEvent(body io.Reader, id int64) (response, error) {
	r := bufio.NewReader(body)
	var data bytes.Buffer
	for {
		line, err := r.ReadBytes('\n')
		if len(line) == 0 && err != nil {
			return response{}, fmt.Errorf("the event stream ended without it: %w", err)
		}
		line = bytes.TrimRight(line, "\r\n")
		if v, ok := bytes.CutPrefix(line, []byte("data:")); ok {
			if data.Len() > 0 {
				data.WriteByte('\n')
			}
			data.Write(bytes.TrimPrefix(v, []byte(" ")))
			continue
		}
		if len(line) > 0 || data.Len() == 0 {
			continue // event:, id:, retry:, a comment; or a blank line ending nothing
		}
		var m response
		if err := json.Unmarshal(data.Bytes(), &m); err != nil {
			return response{}, fmt.Errorf("an event's data is not JSON-RPC (%w): %.200s", err, data.Bytes())
		}
		if m.Method == "" && m.ID != nil && *m.ID == id {
			return m, nil
		}
		data.Reset()
	}
}

func (sess *httpSession) notify(method string) error {
	resp, err := sess.post(map[string]any{"jsonrpc": "2.0", "method": method})
	if err != nil {
		return err
	}
	defer drain(resp)
	if resp.StatusCode/100 != 2 {
		return sess.refused(method, resp)
	}
	return nil
}

func (sess *httpSession) post(msg any) (*http.Response, error) {
	b, err := json.Marshal(msg)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequest(http.MethodPost, sess.srv.url, bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	sess.headers(req)
	resp, err := sess.srv.hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%s: %w; stderr: %s", sess.srv.name, err, sess.srv.stderr)
	}
	return resp, nil
}

func (sess *httpSession) headers(req *http.Request) {
	if sess.srv.token != "" {
		req.Header.Set("Authorization", "Bearer "+sess.srv.token)
	}
	if sess.id != "" {
		req.Header.Set("Mcp-Session-Id", sess.id)
		req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
	}
}

// close ends the session (DELETE), so it holds no place in the
// server's bound on open sessions.
func (sess *httpSession) close() error {
	if sess.id == "" {
		return nil
	}
	req, err := http.NewRequest(http.MethodDelete, sess.srv.url, nil)
	if err != nil {
		return err
	}
	sess.headers(req)
	resp, err := sess.srv.hc.Do(req)
	if err != nil {
		return fmt.Errorf("%s: closing a session: %w", sess.srv.name, err)
	}
	defer drain(resp)
	if resp.StatusCode/100 != 2 && resp.StatusCode != http.StatusMethodNotAllowed {
		return sess.refused("DELETE", resp)
	}
	return nil
}

func (sess *httpSession) refused(what string, resp *http.Response) error {
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 500))
	return fmt.Errorf("%s: %s: %s: %s", sess.srv.name, what, resp.Status, strings.TrimSpace(string(body)))
}

// drain reads what is left of an answer and closes it, so its
// connection serves the session's next request.
func drain(resp *http.Response) {
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
}
