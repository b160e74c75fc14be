package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/accessibility"
	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/dom"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/toolhost/toolhost/internal/testenv"
)

// The web console, driven in a real headless Chromium as a person uses
// it: log in with the link toolhost serve printed, find the controls by
// their role and accessible name, decide, and watch the calls run.

var consoleLine = regexp.MustCompile(`web console: (http://\S+/console/login\?code=\S+)`)

// consoleLink waits for the console's login link on s's stderr.
func (s *httpServe) consoleLink(t *testing.T) string {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		if m := consoleLine.FindStringSubmatch(s.stderr.String()); m != nil {
			return m[1]
		}
		if time.Now().After(deadline) {
			t.Fatalf("toolhost serve printed no console link\nstderr: %s", s.stderr)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// browser is a headless Chromium tab.
type browser struct {
	ctx  context.Context
	shot string // where screenshots go
}

// newBrowser starts Debian's chromium headless; without it the test
// skips (or fails where the browser suite is required, as in CI).
func newBrowser(t *testing.T) *browser {
	t.Helper()
	path := testenv.LookPath(t, "chromium", "apt-get install chromium")
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(path), chromedp.NoSandbox,
		chromedp.WindowSize(1280, 1000), chromedp.UserDataDir(t.TempDir()))
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelTab := chromedp.NewContext(actx)
	ctx, cancelTime := context.WithTimeout(ctx, 2*time.Minute)
	t.Cleanup(func() { cancelTime(); cancelTab(); cancelAlloc() })
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("starting %s: %v", path, err)
	}
	dir := os.Getenv("TOOLHOST_SCREENSHOTS")
	if dir == "" {
		dir = t.TempDir()
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return &browser{ctx: ctx, shot: dir}
}

func (b *browser) do(t *testing.T, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	if err := chromedp.Do(b.ctx, actions...); err != nil {
		t.Fatalf("browser: %v", err)
	}
}

// get runs one action and returns its value.
func get[T any](t *testing.T, b *browser, a chromedp.Action[T]) T {
	t.Helper()
	v, err := chromedp.Run(b.ctx, a)
	if err != nil {
		t.Fatalf("browser: %v", err)
	}
	return v
}

// screenshot saves the page as name.png.
func (b *browser) screenshot(t *testing.T, name string) {
	t.Helper()
	png := get(t, b, chromedp.FullScreenshot(100))
	if err := os.WriteFile(filepath.Join(b.shot, name+".png"), png, 0o644); err != nil {
		t.Fatal(err)
	}
}

// findRole is the elements whose role and accessible name are these,
// as a screen reader finds them.
func findRole(ctx context.Context, tg *chromedp.Target, role, name string) ([]cdp.BackendNodeID, error) {
	doc, err := cdp.Call(ctx, tg, dom.GetDocument, dom.GetDocumentParams{})
	if err != nil {
		return nil, err
	}
	res, err := cdp.Call(ctx, tg, accessibility.QueryAXTree, accessibility.QueryAXTreeParams{BackendNodeID: doc.Root.BackendNodeID, AccessibleName: name, Role: role})
	if err != nil {
		return nil, err
	}
	var found []cdp.BackendNodeID
	for _, n := range res.Nodes {
		if !n.Ignored && n.BackendDOMNodeID != 0 {
			found = append(found, n.BackendDOMNodeID)
		}
	}
	return found, nil
}

// byRole finds the one element whose role and accessible name are
// these, waiting up to 30 s for it.
func (b *browser) byRole(t *testing.T, role, name string) cdp.BackendNodeID {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		ids := get(t, b, func(ctx context.Context, tg *chromedp.Target) ([]cdp.BackendNodeID, error) {
			return findRole(ctx, tg, role, name)
		})
		switch {
		case len(ids) == 1:
			return ids[0]
		case len(ids) > 1:
			t.Fatalf("%d elements are %s %q; want one", len(ids), role, name)
		case time.Now().After(deadline):
			t.Fatalf("no %s %q on the page within 30 s; the page reads:\n%s", role, name, b.text(t, "body"))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// click clicks the middle of the element with this role and name, as a
// mouse does, once it is scrolled into view.
func (b *browser) click(t *testing.T, role, name string) {
	t.Helper()
	id := b.byRole(t, role, name)
	at := get(t, b, func(ctx context.Context, tg *chromedp.Target) ([2]float64, error) {
		if _, err := cdp.Call(ctx, tg, dom.ScrollIntoViewIfNeeded, dom.ScrollIntoViewIfNeededParams{BackendNodeID: id}); err != nil {
			return [2]float64{}, err
		}
		box, err := cdp.Call(ctx, tg, dom.GetBoxModel, dom.GetBoxModelParams{BackendNodeID: id})
		if err != nil {
			return [2]float64{}, err
		}
		q := box.Model.Border
		return [2]float64{(q[0] + q[4]) / 2, (q[1] + q[5]) / 2}, nil
	})
	b.do(t, chromedp.MouseClickXY(at[0], at[1]))
}

// waitEnabled waits until the element with this role and name can be
// used: the console keeps a call's buttons off for a moment after it
// appears.
func (b *browser) waitEnabled(t *testing.T, role, name string) {
	t.Helper()
	id := b.byRole(t, role, name)
	deadline := time.Now().Add(10 * time.Second)
	for {
		disabled := get(t, b, func(ctx context.Context, tg *chromedp.Target) (bool, error) {
			res, err := cdp.Call(ctx, tg, dom.ResolveNode, dom.ResolveNodeParams{BackendNodeID: id})
			if err != nil {
				return false, err
			}
			v, err := cdp.Call(ctx, tg, runtime.CallFunctionOn, runtime.CallFunctionOnParams{FunctionDeclaration: "function() { return this.disabled; }", ObjectID: res.Object.ObjectID, ReturnByValue: new(true)})
			if err != nil {
				return false, err
			}
			return string(v.Result.Value) == "true", nil
		})
		if !disabled {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s %q is still disabled after 10 s", role, name)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// typeInto focuses the element with this role and name and types text.
func (b *browser) typeInto(t *testing.T, role, name, text string) {
	t.Helper()
	id := b.byRole(t, role, name)
	b.do(t, func(ctx context.Context, tg *chromedp.Target) (chromedp.Void, error) {
		_, err := cdp.Call(ctx, tg, dom.Focus, dom.FocusParams{BackendNodeID: id})
		return chromedp.Void{}, err
	}, chromedp.KeyEvent(text))
}

// text is the text of the elements sel matches, "" when none does.
func (b *browser) text(t *testing.T, sel string) string {
	t.Helper()
	return get(t, b, chromedp.Evaluate[string](fmt.Sprintf(`Array.from(document.querySelectorAll(%q)).map(e => e.innerText).join("\n")`, sel)))
}

// waitText waits until the elements sel matches hold want.
func (b *browser) waitText(t *testing.T, sel, want string) string {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		s := b.text(t, sel)
		if strings.Contains(s, want) {
			return s
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s does not read %q within 30 s; it reads:\n%s", sel, want, s)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// login opens the console with a one-time link.
func (b *browser) login(t *testing.T, link string) {
	t.Helper()
	b.do(t, chromedp.Navigate(link))
	b.byRole(t, "heading", "Awaiting a decision 0")
}

// readFirst reads files in conversation conv through /v1, so that writes
// to them are planned (a file is read before it is overwritten).
func (s *httpServe) readFirst(t *testing.T, conv string, files ...string) {
	t.Helper()
	var calls []map[string]any
	for i, f := range files {
		calls = append(calls, map[string]any{"id": fmt.Sprintf("r%d", i), "name": "read_file", "arguments": map[string]any{"path": f}})
	}
	status, out := s.api(t, "POST", "/v1/batches", map[string]any{"conversation_id": conv, "calls": calls})
	var b apiBatch
	if err := json.Unmarshal(out, &b); status/100 != 2 || err != nil {
		t.Fatalf("POST /v1/batches: %d %s", status, out)
	}
	s.waitState(t, b.BatchID, "done")
}

// TestConsoleLogin: the link serve printed logs in once and lands on the
// console with the code gone from the address bar; the same link again
// is refused, and the console without a session says how to log in.
func TestConsoleLogin(t *testing.T) {
	w := newWorkspace(t)
	s := serveHTTP(t, w)
	link := s.consoleLink(t)
	b := newBrowser(t)
	b.login(t, link)
	if url := get(t, b, chromedp.Location()); url != s.base+"/console" {
		t.Errorf("after login the page is %s; want %s/console, the code gone", url, s.base)
	}
	b.screenshot(t, "console-empty")

	resp, err := http.Get(link)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("the link used a second time: %s; want 401", resp.Status)
	}
	resp, err = http.Get(s.base + "/console")
	if err != nil {
		t.Fatal(err)
	}
	var page strings.Builder
	buf := make([]byte, 4096)
	n, _ := resp.Body.Read(buf)
	page.Write(buf[:n])
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(page.String(), "--console-link") {
		t.Errorf("the console without a session: %s %q; want 401 saying how to get a link", resp.Status, page.String())
	}
}

// heldWrite serves --approvals console with a console logged in, and
// has the Go SDK's client overwrite notes.txt ("before" to "after"),
// returning once the console shows the call held.
func heldWrite(t *testing.T) (w *workspace, s *httpServe, b *browser, held apiBatch, done <-chan heldCall) {
	t.Helper()
	w = newWorkspace(t)
	w.file(t, "notes.txt", "before\n")
	s = serveHTTP(t, w, "--approvals", "console")
	b = newBrowser(t)
	b.login(t, s.consoleLink(t))
	ctx := testContext(t)
	cs := s.connect(t, ctx, nil, nil)
	if _, text, err := callText(ctx, cs, "read_file", map[string]any{"path": "notes.txt"}); err != nil || !strings.Contains(text, "before") {
		t.Fatalf("read_file: %v %q", err, text)
	}
	done = callInBackground(ctx, cs, "write_file", map[string]any{"path": "notes.txt", "content": "after\n"})
	held = s.awaitHeld(t)
	b.byRole(t, "checkbox", "Select call "+held.Calls[0].ID)
	return w, s, b, held, done
}

// TestConsoleApprovesHeldMCPCall: under --approvals console an MCP
// client that could be asked is not; its write waits in the console
// with the dry run's diff, is approved there, runs, and the client gets
// the result saying who approved it.
func TestConsoleApprovesHeldMCPCall(t *testing.T) {
	w, _, b, held, done := heldWrite(t)
	b.waitText(t, "#awaiting pre.diff", "+after")
	if got := b.text(t, "#awaiting pre.diff"); !strings.Contains(got, "-before") {
		t.Errorf("the diff reads %q; want the line removed too", got)
	}
	if title := get(t, b, chromedp.Title()); !strings.HasPrefix(title, "(1) ") {
		t.Errorf("title %q; want the count of waiting calls first", title)
	}
	b.waitEnabled(t, "button", "Approve batch "+held.BatchID)
	b.screenshot(t, "console-awaiting")
	b.click(t, "button", "Approve all")

	a := answer(t, done)
	if a.res.IsError || !strings.Contains(a.text, "notes.txt") {
		t.Fatalf("the approved call's result: %s", a.text)
	}
	if got, _ := os.ReadFile(filepath.Join(w.dir, "notes.txt")); string(got) != "after\n" {
		t.Errorf("notes.txt holds %q after the approval; want after", got)
	}
	b.waitText(t, "#batches", "decided by a person in the web console")
	b.waitText(t, "#batches", "completed")
	b.screenshot(t, "console-completed")
}

// TestConsoleDeniesWithReason: a denial's reason reaches the model in
// the call's result, with who denied it.
func TestConsoleDeniesWithReason(t *testing.T) {
	w, _, b, held, done := heldWrite(t)
	b.typeInto(t, "textbox", "Reason given to the model with a denial", "write to notes.draft instead")
	b.waitEnabled(t, "button", "Deny batch "+held.BatchID)
	b.click(t, "button", "Deny all")
	a := answer(t, done)
	for _, want := range []string{"write to notes.draft instead", "a person in the web console"} {
		if !a.res.IsError || !strings.Contains(a.text, want) {
			t.Errorf("the denied call's result %q lacks %q", a.text, want)
		}
	}
	if got, _ := os.ReadFile(filepath.Join(w.dir, "notes.txt")); string(got) != "before\n" {
		t.Errorf("notes.txt holds %q after a denial", got)
	}
}

// TestConsoleApprovesSelected: of a three-call batch posted to /v1, the
// two calls ticked run and the third is denied.
func TestConsoleApprovesSelected(t *testing.T) {
	w := newWorkspace(t)
	for _, n := range []string{"a", "b", "c"} {
		w.file(t, n+".txt", "old "+n+"\n")
	}
	s := serveHTTP(t, w)
	b := newBrowser(t)
	b.login(t, s.consoleLink(t))
	s.readFirst(t, "c1", "a.txt", "b.txt", "c.txt")
	var calls []map[string]any
	for _, n := range []string{"a", "b", "c"} {
		calls = append(calls, map[string]any{"id": "w" + n, "name": "write_file", "arguments": map[string]any{"path": n + ".txt", "content": "new " + n + "\n"}})
	}
	status, out := s.api(t, "POST", "/v1/batches", map[string]any{"conversation_id": "c1", "calls": calls})
	if status != http.StatusCreated && status != http.StatusOK {
		t.Fatalf("POST /v1/batches: %d %s", status, out)
	}
	var batch apiBatch
	if err := json.Unmarshal(out, &batch); err != nil {
		t.Fatal(err)
	}
	b.click(t, "checkbox", "Select call wa")
	b.click(t, "checkbox", "Select call wc")
	b.waitEnabled(t, "button", "Approve batch "+batch.BatchID)
	b.screenshot(t, "console-selected")
	b.click(t, "button", "Approve selected")
	b.waitText(t, "#batches", "denied")

	for n, want := range map[string]string{"a": "new a\n", "b": "old b\n", "c": "new c\n"} {
		if got, _ := os.ReadFile(filepath.Join(w.dir, n+".txt")); string(got) != want {
			t.Errorf("%s.txt holds %q; want %q", n, got, want)
		}
	}
	_, out = s.api(t, "GET", "/v1/batches/"+batch.BatchID, nil)
	if !strings.Contains(string(out), "a person in the web console") {
		t.Errorf("the batch does not say the console decided: %s", out)
	}
}

// TestConsoleRendersModelTextAsText: an argument holding markup, a bidi
// override and 100,000 lines shows as text: no element is made of it,
// the override is written out, and the page keeps its width.
func TestConsoleRendersModelTextAsText(t *testing.T) {
	w := newWorkspace(t)
	w.file(t, "x.txt", "x\n")
	s := serveHTTP(t, w)
	b := newBrowser(t)
	b.login(t, s.consoleLink(t))
	s.readFirst(t, "c1", "x.txt")
	long := strings.Repeat("\n", 100_000)
	content := `<script>document.title="pwned"</script><img src=x onerror="document.title='pwned'">` + "\u202eevil\n" + long
	status, out := s.api(t, "POST", "/v1/batches", map[string]any{"conversation_id": "c1", "calls": []map[string]any{
		{"id": `<b id="inj">x</b>`, "name": "write_file", "arguments": map[string]any{"path": "x.txt", "content": content}},
	}})
	if status/100 != 2 {
		t.Fatalf("POST /v1/batches: %d %s", status, out)
	}
	// An id with markup is shown quoted, as every id that is not plain.
	b.byRole(t, "checkbox", `Select call "<b id=\"inj\">x</b>"`)
	args := b.waitText(t, "#awaiting pre.args", "<script>")
	if !strings.Contains(args, "<U+202E>evil") {
		t.Errorf("the bidi override is not written out: %.300q", args)
	}
	injected := get(t, b, chromedp.Evaluate[int](`document.querySelectorAll("#awaiting script, #awaiting img, #inj").length`))
	title := get(t, b, chromedp.Title())
	scrollWidth := get(t, b, chromedp.Evaluate[int](`document.documentElement.scrollWidth`))
	innerWidth := get(t, b, chromedp.Evaluate[int](`window.innerWidth`))
	if injected != 0 || strings.Contains(title, "pwned") {
		t.Errorf("model text became markup: %d elements, title %q", injected, title)
	}
	if scrollWidth > innerWidth {
		t.Errorf("the page is %d px wide in a %d px window: a line broke the layout", scrollWidth, innerWidth)
	}
	b.screenshot(t, "console-hostile-text")
}

// TestConsoleStreamsOutput: a command's output streams into the console
// as it runs, the last 50 lines shown and the rest one click away; the
// region follows the end until the person scrolls up, and again once
// they scroll back down.
func TestConsoleStreamsOutput(t *testing.T) {
	w := newWorkspace(t).withConfig(t, "[tools.approval]\ndenylist = []\n")
	s := serveHTTP(t, w)
	b := newBrowser(t)
	b.login(t, s.consoleLink(t))
	run := s.batch(t, "POST", "/v1/batches", map[string]any{"conversation_id": "c1", "calls": []map[string]any{
		{"id": "c1", "name": "run_command", "arguments": map[string]any{"command": "for i in $(seq 1 400); do echo line $i; sleep 0.02; done"}},
	}}, 201)
	b.byRole(t, "checkbox", "Select call c1")
	b.waitEnabled(t, "button", "Approve batch "+run.BatchID)
	b.click(t, "button", "Approve all")
	b.byRole(t, "log", "Output of call c1")
	b.waitText(t, ".output", "line 60")
	if got := b.text(t, ".output"); strings.Contains(got, "line 1\n") || strings.Count(got, "\n") > 50 {
		t.Errorf("the region shows more than the last 50 lines:\n%s", got)
	}
	more := b.waitText(t, ".output-wrap button", "Show all")
	if !strings.Contains(more, "earlier not shown") {
		t.Errorf("the button reads %q", more)
	}
	b.click(t, "button", "Show all output of call c1")
	b.waitText(t, ".output", "line 1\n")
	b.screenshot(t, "console-streaming")

	// Scrolled up, it stays where the person put it while lines come.
	scroll := func(to string) {
		b.do(t, chromedp.Evaluate[chromedp.Void](`(() => { const o = document.querySelector(".output"); o.scrollTop = `+to+`; o.dispatchEvent(new Event("scroll")); })()`))
	}
	atEnd := func() bool {
		return get(t, b, chromedp.Evaluate[bool](`(() => { const o = document.querySelector(".output"); return o.scrollTop + o.clientHeight >= o.scrollHeight - 4; })()`))
	}
	lines := func() int { return strings.Count(b.text(t, ".output"), "\n") }
	scroll("0")
	before := lines()
	for deadline := time.Now().Add(10 * time.Second); lines() < before+20 && time.Now().Before(deadline); {
		time.Sleep(50 * time.Millisecond)
	}
	if lines() < before+20 {
		t.Fatalf("no more output came: %d lines", lines())
	}
	if top := get(t, b, chromedp.Evaluate[int](`document.querySelector(".output").scrollTop`)); top != 0 || atEnd() {
		t.Errorf("scrolled up, the region moved to %d px as output came", top)
	}
	// Back at the end, it follows again.
	scroll("1e9")
	before = lines()
	for deadline := time.Now().Add(10 * time.Second); lines() < before+20 && time.Now().Before(deadline); {
		time.Sleep(50 * time.Millisecond)
	}
	if !atEnd() {
		t.Errorf("scrolled back down, the region does not follow the end")
	}
	b.waitText(t, "#batches", "completed")
	b.waitText(t, ".output", "line 400")
}

// TestConsoleParseOnly: in parse_only mode a pending call gets its result
// from a form in the console.
func TestConsoleParseOnly(t *testing.T) {
	w := newWorkspace(t).withConfig(t, "[tools]\nmode = \"parse_only\"\n")
	s := serveHTTP(t, w)
	b := newBrowser(t)
	b.login(t, s.consoleLink(t))
	p := s.batch(t, "POST", "/v1/batches", map[string]any{"conversation_id": "c1", "calls": []map[string]any{
		{"id": "p1", "name": "read_file", "arguments": map[string]any{"path": "a.txt"}}}}, 201)
	b.typeInto(t, "textbox", "Result for call p1", "what the person saw")
	b.screenshot(t, "console-parse-only")
	b.click(t, "button", "Submit result for call p1")
	done := s.waitState(t, p.BatchID, "done")
	if len(done.Results) != 1 || !done.Results[0].OK || done.Results[0].Content != "what the person saw" {
		t.Errorf("results: %+v", done.Results)
	}
	b.waitText(t, "#batches", "what the person saw")
}

// TestConsoleUndo: the history shows a write's batch with the file it
// changed; undo asks first, showing what it will restore, then restores
// it; a second undo, after the file changed again, is refused as stale
// and changes nothing.
func TestConsoleUndo(t *testing.T) {
	w := newWorkspace(t).withConfig(t, "[tools.approval]\nmode = \"auto\"\n")
	w.file(t, "notes.txt", "before\n")
	s := serveHTTP(t, w)
	b := newBrowser(t)
	b.login(t, s.consoleLink(t))
	s.readFirst(t, "c1", "notes.txt")
	wb := s.batch(t, "POST", "/v1/batches", map[string]any{"conversation_id": "c1", "calls": []map[string]any{
		{"id": "w1", "name": "write_file", "arguments": map[string]any{"path": "notes.txt", "content": "after\n"}}}}, 201)
	s.waitState(t, wb.BatchID, "done")
	if got, _ := os.ReadFile(filepath.Join(w.dir, "notes.txt")); string(got) != "after\n" {
		t.Fatalf("the write left %q", got)
	}

	b.typeInto(t, "textbox", "Tool", "write_file")
	b.click(t, "button", "Show history")
	b.click(t, "button", "Show batch "+wb.BatchID)
	b.waitText(t, "#history-list", "notes.txt")
	call := wb.BatchID + ".1"
	b.click(t, "button", "Undo call "+call)
	b.waitText(t, "#history-list", "would:")
	if got := b.text(t, "#history-list .undo"); !strings.Contains(got, "restore") || !strings.Contains(got, "notes.txt") {
		t.Errorf("the undo's preview reads %q", got)
	}
	if got, _ := os.ReadFile(filepath.Join(w.dir, "notes.txt")); string(got) != "after\n" {
		t.Fatalf("the preview changed notes.txt to %q", got)
	}
	b.screenshot(t, "console-undo")
	b.click(t, "button", "Confirm undo of call "+call)
	b.waitText(t, "#history-result", "Undid call "+call)
	if got, _ := os.ReadFile(filepath.Join(w.dir, "notes.txt")); string(got) != "before\n" {
		t.Errorf("after the undo notes.txt holds %q; want before", got)
	}

	// The file changes behind the journal's back: undoing the undo is
	// refused, and nothing changes.
	w.file(t, "notes.txt", "edited by hand\n")
	b.click(t, "button", "Show history")
	b.waitText(t, "#history-result", "newest first")
	b.click(t, "button", "Undo batch "+wb.BatchID)
	b.waitText(t, "#history-list", "refused")
	if got := b.text(t, "#history-list .refused"); !strings.Contains(got, "StaleFile") {
		t.Errorf("the refusal reads %q; want it to say StaleFile", got)
	}
	if got, _ := os.ReadFile(filepath.Join(w.dir, "notes.txt")); string(got) != "edited by hand\n" {
		t.Errorf("a refused undo changed notes.txt to %q", got)
	}
}

// TestConsoleTSClientAcceptingEverything: the TypeScript SDK client,
// answering every elicitation "accept" by itself (as an agent CLI in a
// permissive mode or with an approving hook does), against
// --approvals console: it is never asked, its write waits in the console
// and is not written until a person approves it there; then the client
// gets the write's result.
func TestConsoleTSClientAcceptingEverything(t *testing.T) {
	script := requireTSClient(t)
	w := tsWorkspace(t)
	s := serveHTTP(t, w, "--approvals", "console")
	b := newBrowser(t)
	b.login(t, s.consoleLink(t))
	cmd := w.command("node", script, "approve-write", "--url", s.url, "--token", s.token)
	var stdout strings.Builder
	stderr := &lockedBuffer{}
	cmd.Stdout, cmd.Stderr = &stdout, stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() { cmd.Process.Kill() })

	held := s.awaitHeld(t)
	b.waitText(t, "#awaiting pre.diff", "+line two")
	time.Sleep(500 * time.Millisecond) // the client waits; nothing is written meanwhile
	if got, _ := os.ReadFile(filepath.Join(w.dir, "out.txt")); string(got) != tsBefore {
		t.Fatalf("out.txt holds %q before any decision in the console", got)
	}
	b.waitEnabled(t, "button", "Approve batch "+held.BatchID)
	b.click(t, "button", "Approve batch "+held.BatchID)
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("the TypeScript client: %v\nstderr: %s", err, stderr)
		}
	case <-time.After(time.Minute):
		t.Fatalf("the TypeScript client did not finish within a minute\nstderr: %s", stderr)
	}
	var r tsRun
	if err := json.Unmarshal([]byte(stdout.String()), &r); err != nil {
		t.Fatalf("the client's report: %v\n%s", err, stdout.String())
	}
	if c := r.call(t, 1, "write_file"); c.IsError {
		t.Errorf("the approved write's result: %s", c.Text)
	}
	if len(r.Elicitations) != 0 {
		t.Errorf("the client was asked %d times under --approvals console", len(r.Elicitations))
	}
	if got, _ := os.ReadFile(filepath.Join(w.dir, "out.txt")); string(got) != "line one\nline two\n" {
		t.Errorf("out.txt holds %q after the console approved the write", got)
	}
}

// TestConsoleManyWaiting: with 200 calls waiting the console shows every
// one, counts them in its title, and Approve all decides them all.
func TestConsoleManyWaiting(t *testing.T) {
	const n = 200
	w := newWorkspace(t).withConfig(t, "[tools.approval]\nauto_approve_new_files = false\n")
	s := serveHTTP(t, w)
	b := newBrowser(t)
	b.login(t, s.consoleLink(t))
	ids := make([]string, n)
	for i := range n {
		ids[i] = s.batch(t, "POST", "/v1/batches", map[string]any{"conversation_id": "c1", "calls": []map[string]any{
			{"id": fmt.Sprintf("w%d", i), "name": "write_file", "arguments": map[string]any{"path": fmt.Sprintf("f%d.txt", i), "content": strings.Repeat("a line of the file\n", 40)}}}}, 201).BatchID
	}
	shown := time.Now()
	b.byRole(t, "heading", fmt.Sprintf("Awaiting a decision %d", n))
	t.Logf("%d waiting calls shown %v after the last was posted", n, time.Since(shown).Round(time.Millisecond))
	if title := get(t, b, chromedp.Title()); !strings.HasPrefix(title, fmt.Sprintf("(%d) ", n)) {
		t.Errorf("title %q", title)
	}
	b.waitEnabled(t, "button", "Approve batch "+ids[n-1])
	b.click(t, "button", "Approve all")
	for _, id := range []string{ids[0], ids[n/2], ids[n-1]} {
		s.waitState(t, id, "done")
	}
	b.byRole(t, "heading", "Awaiting a decision 0")
	for i := range n {
		if _, err := os.Stat(filepath.Join(w.dir, fmt.Sprintf("f%d.txt", i))); err != nil {
			t.Fatalf("f%d.txt was not written after Approve all: %v", i, err)
		}
	}
}

// TestConsoleLinkCommand: toolhost serve --console-link asks the running
// server for a fresh login link with its token; a wrong token or no
// server is a clear failure.
func TestConsoleLinkCommand(t *testing.T) {
	w := newWorkspace(t)
	s := serveHTTP(t, w)
	ask := func(token, host string) (string, string, int) {
		cmd := w.command(w.argv("serve", "--console-link", "--http", host)...)
		cmd.Env = append(os.Environ(), "TOOLHOST_TOKEN="+token)
		return runCommand(t, cmd)
	}
	out, stderr, code := ask(s.token, s.host)
	link := strings.TrimSpace(strings.SplitN(out, "\n", 2)[0])
	if code != 0 || !strings.HasPrefix(link, s.base+"/console/login?code=") {
		t.Fatalf("--console-link: exit %d, %q %q", code, out, stderr)
	}
	resp, err := (&http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}).Get(link)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther {
		t.Errorf("the fresh link: %s; want 303 to the console", resp.Status)
	}
	for _, tt := range []struct{ token, host, want string }{
		{"wrongwrongwrongwrong", s.host, "not this server's"},
		{s.token, "127.0.0.1:1", "is toolhost serve --http 127.0.0.1:1 running?"},
	} {
		if _, stderr, code := ask(tt.token, tt.host); code != 1 || !strings.Contains(stderr, tt.want) || strings.Contains(stderr, tt.token) {
			t.Errorf("--console-link with token %q at %s: exit %d, %q; want 1 saying %q, the token not shown", tt.token, tt.host, code, stderr, tt.want)
		}
	}
}
