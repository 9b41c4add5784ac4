package service

import (
	"strings"
	"testing"
)

// FuzzDecodeStrict: any body either decodes into a PlaceRequest or is refused
// with a non-empty message, never a panic; what decodes still goes through
// Normalize's validation.
func FuzzDecodeStrict(f *testing.F) {
	for _, s := range []string{`{"gpus": 8}`, `{"gpus": 16, "gpus_per_node": 8, "lease": "10m", "dry_run": true, "required_tier": "leaf"}`,
		`{"gpus": "8"}`, `{"lease": "10x"}`, `{"required_tier": "rack"}`, `[1]`, ``, `{"gpus": 8} x`, `{"near": ["a", 1]}`, `{"Request": {}}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var req PlaceRequest
		err := DecodeStrict(data, &req)
		if err != nil {
			if strings.TrimSpace(err.Error()) == "" {
				t.Fatal("empty error message")
			}
			return
		}
		if req.GPUs < 0 && req.Normalize() == nil {
			t.Fatalf("negative gpus %d normalized", req.GPUs)
		}
	})
}
