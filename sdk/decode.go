package sdk

import (
	"github.com/toolhost/toolhost/abi"
	"github.com/toolhost/toolhost/sdk/internal/argjson"
)

// decoder is the plugin's single JSON decoding point (SRD FR-REG-02).
type decoder struct {
	json *argjson.Decoder
}

func newDecoder() *decoder { return &decoder{json: argjson.NewDecoder()} }

func (d *decoder) request(raw []byte, req *abi.Request) (err error) {
	*req, err = abi.DecodeRequest(raw)
	return err
}

// args decodes the call arguments; a failure is a BadArgs error.
func (d *decoder) args(raw []byte, v any) error {
	if len(raw) == 0 {
		raw = []byte("{}")
	}
	if err := d.json.Unmarshal(raw, v); err != nil {
		return BadArgs("arguments do not match the tool's types: %v", err)
	}
	return nil
}

func (d *decoder) hostError(raw []byte, e *abi.HostError) error { return d.json.Unmarshal(raw, e) }
