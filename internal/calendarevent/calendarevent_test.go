package calendarevent

import (
	"strings"
	"testing"
	"time"
)

// pveCommonCases are the events of pve-common's test/calendar_event_test.pl
// (PVE::CalendarEvent's own tests), with their next-event pairs in UTC:
// [last, next].
var pveCommonCases = []struct {
	event string
	next  [][2]int64
}{
	{"*", [][2]int64{{0, 60}, {30, 60}, {59, 60}, {60, 120}}},
	{"*/10", [][2]int64{{0, 600}, {599, 600}, {600, 1200}, {50 * 60, 60 * 60}}},
	{"*/12:0", [][2]int64{{10, 43200}, {13 * 3600, 24 * 3600}}},
	{"1/12:0/15", [][2]int64{
		{0, 3600}, {3600, 3600 + 15*60}, {3600 + 16*60, 3600 + 30*60}, {3600 + 30*60, 3600 + 45*60},
		{3600 + 45*60, 3600 + 12*3600}, {13*3600 + 1, 13*3600 + 15*60}, {13*3600 + 15*60, 13*3600 + 30*60},
		{13*3600 + 30*60, 13*3600 + 45*60}, {13*3600 + 45*60, 25 * 3600}}},
	{"1,4,6", [][2]int64{{0, 60}, {60, 4 * 60}, {4*60 + 60, 6 * 60}, {6 * 60, 3600 + 60}}},
	{"0..3", nil},
	{"23..23:0..3", nil},
	// Epoch 0 is a Thursday.
	{"Mon", [][2]int64{{0, 4 * 86400}, {4 * 86400, 11 * 86400}, {11 * 86400, 18 * 86400}}},
	{"sat..sun", [][2]int64{{0, 2 * 86400}, {2 * 86400, 3 * 86400}, {3 * 86400, 9 * 86400}}},
	{"sun..sat", nil},
	{"wed,mon..tue,fri", nil},
	{"mon */15", nil},
	{"22/1:0", [][2]int64{{0, 22 * 3600}, {22 * 3600, 23 * 3600}, {22*3600 + 59*60, 23 * 3600}}},
	{"*/2:*", [][2]int64{{0, 60}, {3600, 2 * 3600}, {2 * 3600, 2*3600 + 60}}},
	{"20..22:*/30", [][2]int64{{0, 20 * 3600}, {20 * 3600, 20*3600 + 30*60}, {22*3600 + 30*60, 44 * 3600}}},
	{"0,1,3..5", [][2]int64{{0, 60}, {60, 3 * 60}, {5 * 60, 3600}}},
	{"2,4:0,1,3..5", [][2]int64{{0, 2 * 3600}, {2*3600 + 60, 2*3600 + 3*60}, {2*3600 + 5*60, 4 * 3600}}},
}

func TestPVECommonEventsParseAndComputeTheirNextEvent(t *testing.T) {
	for _, c := range pveCommonCases {
		ev, err := Parse(c.event)
		if err != nil {
			t.Errorf("%q: %v", c.event, err)
			continue
		}
		for _, p := range c.next {
			got, ok := ev.Next(p[0], time.UTC)
			if !ok || got != p[1] {
				t.Errorf("next event of %q after %d = %d (%v), want %d", c.event, p[0], got, ok, p[1])
			}
		}
	}
}

// TestPVECommonInvalidEventsAreRefused: the events pve-common's test
// expects to fail. ("Fri..Mon" is there too,
// from the old Perl parser; proxmox-time's parser wraps the range past
// Sunday and accepts it, as Proxmox VE does today.)
func TestPVECommonInvalidEventsAreRefused(t *testing.T) {
	for _, event := range []string{"61", "*/61", "0..80", " mon 0 0 0", " mon 0 0", ""} {
		_, err := Parse(event)
		if err == nil || !strings.HasPrefix(err.Error(), "unable to parse calendar event") {
			t.Errorf("%q: %v, want a parse error", event, err)
		}
		if err := Verify(event); err == nil || !strings.HasPrefix(err.Error(), "invalid calendar event '"+event+"' - unable to parse calendar event") {
			t.Errorf("Verify(%q) = %v", event, err)
		}
	}
	if _, err := Parse("Fri..Mon"); err != nil {
		t.Errorf("Fri..Mon: %v", err)
	}
}
