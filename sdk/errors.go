package sdk

import (
	"encoding/json"
	"fmt"

	"github.com/toolhost/toolhost/abi"
)

// Error is a tool error a handler returns to the host.
type Error struct {
	Kind    abi.ErrorKind
	Message string
	Details json.RawMessage // optional JSON object
}

func (e *Error) Error() string { return string(e.Kind) + ": " + e.Message }

// Errorf returns an *Error of the given kind.
func Errorf(kind abi.ErrorKind, format string, args ...any) *Error {
	return &Error{Kind: kind, Message: fmt.Sprintf(format, args...)}
}

// BadArgs returns a BadArgs error (SRD 4.1).
func BadArgs(format string, args ...any) *Error {
	return Errorf(abi.KindBadArgs, format, args...)
}

// Failed returns an ExecutionFailed error (SRD 4.1).
func Failed(format string, args ...any) *Error {
	return Errorf(abi.KindExecutionFailed, format, args...)
}

// HostError is a failure reported by a host function. Returned from a
// handler unchanged, it becomes a tool error of the kind the host chose.
type HostError struct {
	Status abi.Status
	abi.HostError
}

func (e *HostError) Error() string { return e.Message }

// toResult converts any handler error into a result envelope value.
func toResult(err error) abi.Result {
	switch e := err.(type) {
	case *Error:
		return abi.Result{Kind: e.Kind, Content: []byte(e.Message), Details: e.Details}
	case *HostError:
		kind := e.Kind
		if kind == "" {
			kind = abi.KindExecutionFailed
		}
		return abi.Result{Kind: kind, Content: []byte(e.Message), Details: e.Details}
	}
	return abi.Result{Kind: abi.KindExecutionFailed, Content: []byte(err.Error())}
}
