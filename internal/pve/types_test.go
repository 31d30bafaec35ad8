package pve

import (
	"encoding/json"
	"testing"
)

// Proxmox answers a number as a JSON number or as a string, depending on
// the endpoint; an empty one is 0 and a word is refused, leaving the field.
func TestNumbersDecodeFromNumbersAndNumericStrings(t *testing.T) {
	for _, tc := range []struct {
		in      string
		i       Int
		f       Float
		refused bool
	}{
		{`12`, 12, 12, false},
		{`12.6`, 13, 12.6, false},
		{`" 12 "`, 12, 12, false},
		{`"9007199254740993"`, 9007199254740993, 9007199254740992, false},
		{`""`, 0, 0, false},
		{`null`, 0, 0, false},
		{`"twelve"`, 7, 7, true},
	} {
		i, f := Int(7), Float(7)
		errI := json.Unmarshal([]byte(tc.in), &i)
		errF := json.Unmarshal([]byte(tc.in), &f)
		if (errI != nil) != tc.refused || (errF != nil) != tc.refused {
			t.Errorf("%s: errors %v, %v; want refused %v", tc.in, errI, errF, tc.refused)
		}
		if i != tc.i || f != tc.f {
			t.Errorf("%s: Int %d, Float %v; want %d, %v", tc.in, i, f, tc.i, tc.f)
		}
	}
}
