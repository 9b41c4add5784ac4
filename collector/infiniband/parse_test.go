package infiniband

import (
	"errors"
	"math"
	"strconv"
	"testing"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want uint64
		err  bool
	}{
		{"0\n", 0, false},
		{"4294967295", 4294967295, false},
		{" 18446744073709551615 \n", math.MaxUint64, false},
		{"18446744073709551616", 0, true},
		{"-1", 0, true},
		{"0x10", 0, true},
		{"", 0, true},
		{"12ab", 0, true},
	} {
		v, err := parseCounter([]byte(tc.in))
		if (err != nil) != tc.err || v != tc.want {
			t.Errorf("parseCounter(%q) = %d, %v", tc.in, v, err)
		}
	}
	if _, err := parseCounter([]byte("N/A (no PMA)\n")); !errors.Is(err, errNotAvailable) {
		t.Errorf("N/A: %v", err)
	}
	for in, want := range map[string]uint64{"4: ACTIVE\n": 4, "5: LinkUp": 5, "1: DOWN": 1, "3: Disabled\n": 3} {
		if v, err := parseState([]byte(in)); err != nil || v != want {
			t.Errorf("parseState(%q) = %d, %v", in, v, err)
		}
	}
	for _, in := range []string{"ACTIVE", ": ACTIVE", "4:", "x: ACTIVE", "99999999999: X", ""} {
		if _, err := parseState([]byte(in)); err == nil {
			t.Errorf("parseState(%q): no error", in)
		}
	}
	for in, want := range map[string]float64{
		"400 Gb/sec (4X NDR)\n": 50e9, "40 Gb/sec (4X QDR)": 5e9, "10 Gb/sec (4X)": 1.25e9,
		"2.5 Gb/sec (1X SDR)": 312500000, "14.0625 Gb/sec (1X FDR)": 1757812500, "100 Gb/sec (4X EDR)": 12.5e9,
	} {
		if v, err := parseRate([]byte(in)); err != nil || v != want {
			t.Errorf("parseRate(%q) = %v, %v, want %v", in, v, err, want)
		}
	}
	for _, in := range []string{"", "Gb/sec", "fast Gb/sec", "400", "400 Mb/sec", "-1 Gb/sec", "1e400 Gb/sec", "NaN Gb/sec"} {
		if _, err := parseRate([]byte(in)); err == nil {
			t.Errorf("parseRate(%q): no error", in)
		}
	}
}

// FuzzParseCounter: never panics; a value it accepts prints back to the same digits
// (less white space and leading zeros).
func FuzzParseCounter(f *testing.F) {
	for _, s := range []string{"0\n", "4294967295", "N/A (no PMA)", "18446744073709551616", "", " 7 ", "00012"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		v, err := parseCounter(b)
		if err != nil {
			if v != 0 {
				t.Errorf("%q: error %v with value %d", b, err, v)
			}
			return
		}
		again, err := parseCounter([]byte(strconv.FormatUint(v, 10)))
		if err != nil || again != v {
			t.Errorf("%q: %d does not round-trip (%d, %v)", b, v, again, err)
		}
	})
}

// FuzzParseState: never panics; an accepted id round-trips through "<id>: X".
func FuzzParseState(f *testing.F) {
	for _, s := range []string{"4: ACTIVE\n", "5: LinkUp", ":", "1:DOWN", "4294967296: X"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		v, err := parseState(b)
		if err != nil {
			return
		}
		if v > math.MaxUint32 {
			t.Errorf("%q: id %d out of range", b, v)
		}
		again, err := parseState([]byte(strconv.FormatUint(v, 10) + ": X"))
		if err != nil || again != v {
			t.Errorf("%q: %d does not round-trip", b, v)
		}
	})
}

// FuzzParseRate: never panics; an accepted rate is finite and not negative.
func FuzzParseRate(f *testing.F) {
	for _, s := range []string{"400 Gb/sec (4X NDR)\n", "2.5 Gb/sec (1X SDR)", "1. Gb/sec", ". Gb/sec", "1e9 Gb/sec"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		v, err := parseRate(b)
		if err != nil {
			return
		}
		if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
			t.Errorf("%q: rate %v", b, v)
		}
	})
}
