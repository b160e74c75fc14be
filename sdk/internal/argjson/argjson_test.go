package argjson

import (
	"encoding/json"
	"reflect"
	"testing"
	"unicode/utf8"
)

type inner struct {
	A int `json:"a"`
}

type Embedded struct {
	E string `json:"e"`
}

type target struct {
	Embedded
	Path     string          `json:"path"`
	Start    *uint32         `json:"start_line"`
	N        int64           `json:"n"`
	F        float64         `json:"f"`
	B        bool            `json:"b"`
	List     []string        `json:"list"`
	M        map[string]any  `json:"m"`
	Any      any             `json:"any"`
	Raw      json.RawMessage `json:"raw"`
	Inner    inner           `json:"inner"`
	PInner   *inner          `json:"pinner"`
	Untagged string
	Skip     string          `json:"-"`
	Ints     map[string]int8 `json:"ints"`
}

// Decoding agrees with encoding/json, value for value and on whether it
// fails at all.
func TestAgreesWithEncodingJSON(t *testing.T) {
	inputs := []string{
		`{}`,
		`{"path":"src/main.go","start_line":10,"n":-5,"f":1.5e3,"b":true}`,
		`{"path":"a\"b\\c\/d\n\u00e9\ud83d\ude00","list":["x","y"],"m":{"k":[1,"2",null,{"z":false}]}}`,
		`{"any":[1,2.5,"s",true,null,{}],"raw":{"x": [1, 2]},"inner":{"a":3},"pinner":{"a":4}}`,
		`{"untagged":"case-insensitive","e":"embedded","Skip":"no"}`,
		`{"start_line":null,"list":null,"unknown":{"deep":[1,{"x":2}]}}`,
		` { "path" : "spaces" , "n" : 0 } `,
		`{"path":"dup","path":"last wins"}`,
		`{"ints":{"a":127}}`,
		`{"ints":{"a":128}}`,
		`{"start_line":-1}`,
		`{"start_line":1.5}`,
		`{"n":1e2}`,
		`{"path":5}`,
		`{"b":"true"}`,
		`{"path":"unterminated}`,
		`{"path":"x",}`,
		`{"path":"x"} trailing`,
		`[1,2]`,
		`{"f":01}`,
		`{"f":-}`,
		`{"path":"\ud800 lone surrogate"}`,
		`{"path":"bad \x escape"}`,
		`{"list":["a",]}`,
		`{"m":{"a":1}`,
		``,
		`nul`,
	}
	for _, in := range inputs {
		var want, got target
		wantErr := json.Unmarshal([]byte(in), &want)
		gotErr := NewDecoder().Unmarshal([]byte(in), &got)
		if (wantErr == nil) != (gotErr == nil) {
			t.Errorf("%s: encoding/json err %v, argjson err %v", in, wantErr, gotErr)
			continue
		}
		if wantErr == nil && !reflect.DeepEqual(want, got) {
			t.Errorf("%s:\nencoding/json %+v\nargjson       %+v", in, want, got)
		}
	}
}

func TestErrorPointer(t *testing.T) {
	var v target
	err := NewDecoder().Unmarshal([]byte(`{"inner":{"a":"x"}}`), &v)
	var e *Error
	if !errorsAs(err, &e) || e.Pointer != "/inner/a" {
		t.Fatalf("err = %v, want pointer /inner/a", err)
	}
}

func errorsAs(err error, target **Error) bool {
	e, ok := err.(*Error)
	if ok {
		*target = e
	}
	return ok
}

func FuzzUnmarshal(f *testing.F) {
	f.Add([]byte(`{"path":"a","start_line":3,"list":["x"],"m":{"k":1}}`))
	f.Add([]byte(`{"any":[1,"\u00e9",{"x":null}],"f":-1.5e-3}`))
	f.Add([]byte(`{"path":"\ud83d\ude00\ud800"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var want, got target
		wantErr := json.Unmarshal(data, &want)
		gotErr := NewDecoder().Unmarshal(data, &got)
		if !utf8.Valid(data) {
			return // the host rejects invalid UTF-8 before a plugin runs
		}
		if (wantErr == nil) != (gotErr == nil) {
			t.Fatalf("%q: encoding/json err %v, argjson err %v", data, wantErr, gotErr)
		}
		if wantErr == nil && !reflect.DeepEqual(want, got) {
			t.Fatalf("%q:\nencoding/json %+v\nargjson       %+v", data, want, got)
		}
	})
}

func BenchmarkDecodeArgs(b *testing.B) {
	data := []byte(`{"path":"src/some/file.go","start_line":10,"end_line":20}`)
	var v struct {
		Path  string  `json:"path"`
		Start *uint32 `json:"start_line"`
		End   *uint32 `json:"end_line"`
	}
	b.Run("argjson", func(b *testing.B) {
		d := NewDecoder()
		for b.Loop() {
			d.Unmarshal(data, &v)
		}
	})
	b.Run("encoding_json", func(b *testing.B) {
		for b.Loop() {
			json.Unmarshal(data, &v)
		}
	})
}
