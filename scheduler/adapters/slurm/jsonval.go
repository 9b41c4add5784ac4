package slurm

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// Slurm's JSON changed shape after 22.05 (openapi v0.0.38): from 23.02 a number
// may be {"set":true,"infinite":false,"number":N} and a state a list of words.
// The few fields gpuwatch reads are decoded through these two types, which take
// either shape, so the adapter keeps working on a newer Slurm.

// number is a JSON integer, null, or Slurm's {"set","infinite","number"} object.
// Set is false for null, unset or infinite.
type number struct {
	Value int64
	Set   bool
}

func (n *number) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if bytes.Equal(b, []byte("null")) {
		*n = number{}
		return nil
	}
	if len(b) > 0 && b[0] == '{' {
		var o struct {
			Set      *bool        `json:"set"`
			Infinite bool         `json:"infinite"`
			Number   *json.Number `json:"number"`
		}
		if err := json.Unmarshal(b, &o); err != nil {
			return err
		}
		if (o.Set != nil && !*o.Set) || o.Infinite || o.Number == nil {
			*n = number{}
			return nil
		}
		return n.parse(*o.Number)
	}
	var v json.Number
	if err := json.Unmarshal(b, &v); err != nil {
		return fmt.Errorf("%s is not a number", truncate(string(b), 40))
	}
	return n.parse(v)
}

func (n *number) parse(v json.Number) error {
	i, err := v.Int64()
	if err != nil {
		f, ferr := v.Float64()
		if ferr != nil || f != float64(int64(f)) {
			return fmt.Errorf("%s is not an integer", v)
		}
		i = int64(f)
	}
	*n = number{Value: i, Set: true}
	return nil
}

// time is the number as Unix seconds; zero when unset or 0.
func (n number) time() time.Time {
	if !n.Set || n.Value <= 0 {
		return time.Time{}
	}
	return time.Unix(n.Value, 0).UTC()
}

// words is a JSON string or list of strings (Slurm 23.02+ states).
type words []string

func (w *words) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if bytes.Equal(b, []byte("null")) {
		*w = nil
		return nil
	}
	if len(b) > 0 && b[0] == '[' {
		var l []string
		if err := json.Unmarshal(b, &l); err != nil {
			return err
		}
		*w = l
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("%s is neither a string nor a list of strings", truncate(string(b), 40))
	}
	*w = words{s}
	return nil
}

// jsonErrors is the "errors" list every Slurm JSON answer carries. Slurm 22.05's
// sinfo and squeue exit 0 with an error here when the controller is down.
type jsonErrors []struct {
	Error       string `json:"error"`
	Description string `json:"description"`
	Source      string `json:"source"`
	Errno       *int   `json:"errno"`
	ErrorNumber *int   `json:"error_number"`
}

func (e jsonErrors) String() string {
	var parts []string
	for _, x := range e {
		var p []string
		for _, s := range []string{x.Source, x.Description, x.Error} {
			if s != "" {
				p = append(p, s)
			}
		}
		if len(p) == 0 {
			p = append(p, "error with no text")
		}
		parts = append(parts, strings.Join(p, ": "))
	}
	return strings.Join(parts, "; ")
}

// jsonMeta is the "meta" header, to name the Slurm release in errors.
type jsonMeta struct {
	Slurm struct {
		Release string `json:"release"`
	} `json:"Slurm"`
}
