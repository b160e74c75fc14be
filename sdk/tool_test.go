package sdk

import (
	"errors"
	"strings"
	"testing"

	"github.com/toolhost/toolhost/abi"
)

type echoArgs struct {
	Text  string `json:"text"`
	Mode  string `json:"mode"`
	Count *int   `json:"count"`
}

var echo = Tool[echoArgs]{
	Manifest: abi.Manifest{Name: "echo"},
	Summary:  func(a echoArgs) (string, error) { return "Echo " + a.Text, nil },
	Handle: func(c *Call, a echoArgs) (string, error) {
		switch a.Mode {
		case "panic":
			panic("boom: " + a.Text)
		case "bad":
			return "", BadArgs("text %q is not allowed", a.Text)
		case "plain":
			return "", errors.New("plain failure")
		case "host":
			return "", &HostError{Status: abi.StatusStale, HostError: abi.HostError{Kind: abi.KindStaleFile, Message: "stale"}}
		case "limited":
			c.SelfLimited()
		case "structured":
			c.SetStructured([]byte(`{"text":"discarded"}`))
			c.SetStructured([]byte(`{"text":"` + a.Text + `"}`))
		case "structured-fail":
			c.SetStructured([]byte(`{"text":"` + a.Text + `"}`))
			return "", BadArgs("no")
		}
		return c.ID + ":" + a.Text, nil
	},
}

func runEcho(t *testing.T, args string) abi.Result {
	t.Helper()
	req := abi.AppendRequest(nil, abi.Request{ID: "c1", Tool: "echo", Args: []byte(args)})
	return runCall(newDecoder(), echo, req)
}

func TestRunCall(t *testing.T) {
	tests := []struct {
		args    string
		kind    abi.ErrorKind
		content string
		flags   uint32
	}{
		{`{"text":"hi"}`, "", "c1:hi", 0},
		{`{"text":"hi","mode":"limited"}`, "", "c1:hi", abi.ResultNoTruncate},
		{`{"text":"x","mode":"panic"}`, abi.KindPanicked, "boom: x", 0},
		{`{"text":"x","mode":"bad"}`, abi.KindBadArgs, `text "x" is not allowed`, 0},
		{`{"mode":"plain"}`, abi.KindExecutionFailed, "plain failure", 0},
		{`{"mode":"host"}`, abi.KindStaleFile, "stale", 0},
		{`{"text":5}`, abi.KindBadArgs, "/text", 0},
		{`{"count":"many"}`, abi.KindBadArgs, "/count", 0},
	}
	for _, tt := range tests {
		r := runEcho(t, tt.args)
		if r.Kind != tt.kind || !strings.Contains(string(r.Content), tt.content) || r.Flags != tt.flags {
			t.Errorf("%s: got %s %q flags %d, want %s %q flags %d", tt.args, r.Kind, r.Content, r.Flags, tt.kind, tt.content, tt.flags)
		}
	}
	if r := runCall(newDecoder(), echo, []byte("garbage")); r.Kind != abi.KindExecutionFailed {
		t.Errorf("malformed envelope: %+v", r)
	}
}

// A handler's structured object reaches the result envelope beside its
// text, the last one set; an error result carries none.
func TestRunCallStructured(t *testing.T) {
	r := runEcho(t, `{"text":"hi","mode":"structured"}`)
	if r.Kind != "" || string(r.Content) != "c1:hi" || string(r.Structured) != `{"text":"hi"}` {
		t.Errorf("structured call: got %s %q structured %q", r.Kind, r.Content, r.Structured)
	}
	got, err := abi.DecodeResult(abi.AppendResult(nil, r))
	if err != nil || string(got.Structured) != `{"text":"hi"}` {
		t.Errorf("structured call's envelope decodes to %+v, %v", got, err)
	}
	if r := runEcho(t, `{"text":"hi","mode":"structured-fail"}`); r.Kind != abi.KindBadArgs || r.Structured != nil {
		t.Errorf("failed call: got %s structured %q, want BadArgs without structured", r.Kind, r.Structured)
	}
	if r := runEcho(t, `{"text":"hi"}`); r.Structured != nil {
		t.Errorf("call without SetStructured: structured %q", r.Structured)
	}
}

func TestRunSummary(t *testing.T) {
	if r := runSummary(newDecoder(), echo, []byte(`{"text":"hello"}`)); r.Kind != "" || string(r.Content) != "Echo hello" {
		t.Errorf("summary: %+v", r)
	}
	noSummary := echo
	noSummary.Summary = nil
	if r := runSummary(newDecoder(), noSummary, []byte(`{}`)); string(r.Content) != "echo" {
		t.Errorf("default summary: %+v", r)
	}
}

// Outside WebAssembly every host function reports that it is unavailable
// instead of crashing, so plugins can be unit-tested natively.
func TestHostFunctionsUnavailableNatively(t *testing.T) {
	_, _, err := Read("x", 0, -1, 0)
	var he *HostError
	if !errors.As(err, &he) || he.Status != abi.StatusNotGranted {
		t.Fatalf("Read natively: %v", err)
	}
}
