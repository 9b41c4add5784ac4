// Package httpjson is the one way gpuwatch's HTTP APIs answer and read JSON:
// an answer with its status, an error as {"error": "..."} (what the CLI and the
// UI print), and a strict decoder for request bodies whose errors say what was
// wrong and where.
package httpjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"sort"
	"strings"
)

// Write answers v as indented JSON with status code.
func Write(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}

// Error answers {"error": msg} with status code.
func Error(w http.ResponseWriter, code int, msg string) {
	Write(w, code, map[string]string{"error": msg})
}

// DecodeStrict decodes one JSON object from data into v (a pointer to a
// struct), refusing unknown fields and trailing data. The error names what was
// wrong: the byte offset of a syntax error, the field whose value has the wrong
// type or is refused by its type ("lease": invalid duration "10x"), or the
// unknown field.
func DecodeStrict(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	err := dec.Decode(v)
	if err == nil {
		if dec.More() {
			return errors.New("trailing data after the JSON object")
		}
		var extra json.RawMessage
		if dec.Decode(&extra) != io.EOF {
			return errors.New("trailing data after the JSON object")
		}
		return nil
	}
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.Is(err, io.EOF):
		return errors.New("empty body: want a JSON object")
	case errors.Is(err, io.ErrUnexpectedEOF):
		return fmt.Errorf("invalid JSON at byte %d: the body ends inside a value (cut short?)", len(data))
	case errors.As(err, &syn):
		return fmt.Errorf("invalid JSON at byte %d: %v", syn.Offset, syn)
	case errors.As(err, &typ):
		field := typ.Field
		if i := strings.LastIndexByte(field, '.'); i >= 0 {
			field = field[i+1:] // a field of an embedded struct: its JSON name
		}
		if field == "" {
			return fmt.Errorf("want a JSON object, got %s", typ.Value)
		}
		return fmt.Errorf("field %q: want %s, got %s", field, jsonKind(typ.Type), typ.Value)
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		return fmt.Errorf("unknown field %s", strings.TrimPrefix(err.Error(), "json: unknown field "))
	}
	// A value its type refused (a duration, a tier): find which field.
	var fields map[string]json.RawMessage
	if json.Unmarshal(data, &fields) == nil {
		keys := make([]string, 0, len(fields))
		for k := range fields {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			one, _ := json.Marshal(map[string]json.RawMessage{k: fields[k]})
			scratch := reflect.New(reflect.TypeOf(v).Elem()).Interface()
			if e := json.Unmarshal(one, scratch); e != nil {
				return fmt.Errorf("field %q: %v", k, e)
			}
		}
	}
	return err
}

func jsonKind(t reflect.Type) string {
	text := reflect.TypeFor[interface{ UnmarshalText([]byte) error }]()
	if t.Implements(text) || reflect.PointerTo(t).Implements(text) {
		return "a string"
	}
	switch t.Kind() {
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.String:
		return "a string"
	case reflect.Slice:
		return "a list"
	}
	return "a " + t.Kind().String()
}
