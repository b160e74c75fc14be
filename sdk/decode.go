package sdk

import (
	"encoding/json"

	"github.com/toolhost/toolhost/abi"
)

// decoder is the plugin's single JSON decoding point.
type decoder struct{}

func newDecoder() *decoder { return &decoder{} }

func (d *decoder) request(raw []byte, req *abi.Request) (err error) {
	*req, err = abi.DecodeRequest(raw)
	return err
}

// args decodes the call arguments; a failure is a BadArgs error.
func (d *decoder) args(raw []byte, v any) error {
	if len(raw) == 0 {
		raw = []byte("{}")
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return BadArgs("arguments do not match the tool's types: %v", err)
	}
	return nil
}

func (d *decoder) hostError(raw []byte, e *abi.HostError) error { return json.Unmarshal(raw, e) }
