package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/toolhost/toolhost/host/internal/engine"
	"github.com/toolhost/toolhost/host/internal/inside"
)

// maxCallsPastLimit is how many calls past max_tool_calls_per_batch a
// posted batch may carry. Those get a result saying they were not run
// (FR-LIM-06), as a model's response with a few calls too many needs;
// a batch with more is refused whole before any call is planned. Each
// call planned costs a kilobyte or two beyond its arguments (its plan,
// its view, its result, its events), so a 4 MiB body of 45,000 tiny
// calls would otherwise hold a hundred times its size, and a few such
// batches gigabytes, while the batch limit lets only 8 of them run.
const maxCallsPastLimit = 128

// createBody is POST /v1/batches as read first: the calls are counted
// before any is decoded into a call.
type createBody struct {
	ConversationID string            `json:"conversation_id"`
	TurnID         string            `json:"turn_id"`
	Calls          []json.RawMessage `json:"calls"`
}

// decodeCreate reads the body of POST /v1/batches into req, strictly
// like decodeBody, refusing a batch of more calls than the server plans
// (413 TooManyCalls) before decoding them. It answers the errors itself.
func (s *Server) decodeCreate(w http.ResponseWriter, r *http.Request, where string, req *createRequest) bool {
	var body createBody
	if !decodeBody(w, r, where, &body) {
		return false
	}
	limit := s.h.Inside(inside.Key{}).Engine.MaxCallsPerBatch(s.opts.Narrowing)
	if limit > 0 && len(body.Calls) > limit+maxCallsPastLimit {
		writeError(w, http.StatusRequestEntityTooLarge, "TooManyCalls", fmt.Sprintf(
			"%s: the batch has %d calls and max_tool_calls_per_batch is %d: only the first %d of a batch run, and a batch of more than %d calls is refused whole, so none of these was planned or run. Send at most %d calls in one batch and the rest in a later batch, after their results",
			where, len(body.Calls), limit, limit, limit+maxCallsPastLimit, limit))
		return false
	}
	req.ConversationID, req.TurnID = body.ConversationID, body.TurnID
	req.Calls = make([]engine.Call, len(body.Calls))
	for i, raw := range body.Calls {
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&req.Calls[i]); err != nil {
			var te *json.UnmarshalTypeError
			if errors.As(err, &te) {
				err = fmt.Errorf("calls.%s: a JSON %s where a %s belongs", te.Field, te.Value, te.Type)
			}
			writeError(w, http.StatusBadRequest, "InvalidRequest", fmt.Sprintf("%s: call %d of the batch is not a call {\"id\", \"name\", \"arguments\"} (GET /v1/openapi.json describes it): %v", where, i+1, err))
			return false
		}
	}
	return true
}
