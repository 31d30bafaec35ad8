// Package calendarevent is Proxmox VE's calendar event grammar (the
// "pve-calendar-event" format of backup and replication schedules): pve-common
// src/PVE/CalendarEvent.pm pve_verify_calendar_event, which trims the text
// and hands it to the Rust parser of proxmox-time (calendar_event.rs
// parse_calendar_event_incomplete, parse_helpers.rs parse_complete_line).
// The parser here has the same grammar and the same nom combinator
// semantics, so it accepts the same texts and names the same place and
// error kind in its message ("unable to parse calendar event at 'x' -
// Context(\"weekday\")"), and computes the next event as
// compute_next_event does.
//
// It is a leaf: the manifest checks and pvesim both import it, and it
// imports nothing of proxmops.
package calendarevent

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// calErr is nom's first VerboseError entry: the input left where the
// parse failed and the Debug form of its kind.
type calErr struct{ rest, kind string }

func (e *calErr) Error() string { return e.rest + " " + e.kind }

func calContext(rest, ctx string) *calErr { return &calErr{rest, fmt.Sprintf("Context(%q)", ctx)} }

// calValue is DateTimeValue: Single (step 0, no end), Range (hasEnd,
// step 0) or Repeated (step, optional end).
type calValue struct {
	start, end, step uint32
	hasEnd, isRange  bool
}

func (v calValue) contains(x uint32) bool {
	switch {
	case v.isRange:
		return x >= v.start && x <= v.end
	case v.step == 0 && !v.hasEnd:
		return x == v.start
	}
	if x < v.start {
		return false
	}
	if v.step == 0 {
		return v.start == x
	}
	return (x-v.start)%v.step == 0 && (!v.hasEnd || x <= v.end)
}

func calListContains(list []calValue, x uint32) bool {
	for _, v := range list {
		if v.contains(x) {
			return true
		}
	}
	return false
}

// calFindNext is DateTimeValue::find_next: the smallest value of the list
// greater than x.
func calFindNext(list []calValue, x uint32) (uint32, bool) {
	var next uint32
	found := false
	set := func(n uint32) {
		if !found || n < next {
			next, found = n, true
		}
	}
	for _, v := range list {
		switch {
		case v.isRange:
			if x < v.start {
				set(v.start)
			} else if n := x + 1; n >= v.start && n <= v.end {
				set(n)
			}
		case v.step == 0 && !v.hasEnd:
			if v.start > x {
				set(v.start)
			}
		default:
			if x < v.start {
				set(v.start)
			} else if v.step > 0 {
				n := v.start + ((x-v.start+v.step)/v.step)*v.step
				if !v.hasEnd || n <= v.end {
					set(n)
				}
			}
		}
	}
	return next, found
}

// Event is a parsed calendar event (proxmox-time CalendarEvent); days is WeekDays (bit 0 Monday).
type Event struct {
	utc                                    bool
	days                                   uint8
	second, minute, hour, day, month, year []calValue
}

var calShortcuts = map[string]Event{
	"minutely":      {second: calSingles(0)},
	"hourly":        {minute: calSingles(0), second: calSingles(0)},
	"daily":         {hour: calSingles(0), minute: calSingles(0), second: calSingles(0)},
	"weekly":        {hour: calSingles(0), minute: calSingles(0), second: calSingles(0), days: 1},
	"monthly":       {hour: calSingles(0), minute: calSingles(0), second: calSingles(0), day: calSingles(1)},
	"yearly":        {hour: calSingles(0), minute: calSingles(0), second: calSingles(0), day: calSingles(1), month: calSingles(1)},
	"annually":      {hour: calSingles(0), minute: calSingles(0), second: calSingles(0), day: calSingles(1), month: calSingles(1)},
	"quarterly":     {hour: calSingles(0), minute: calSingles(0), second: calSingles(0), day: calSingles(1), month: calSingles(1, 4, 7, 10)},
	"semiannually":  {hour: calSingles(0), minute: calSingles(0), second: calSingles(0), day: calSingles(1), month: calSingles(1, 7)},
	"semi-annually": {hour: calSingles(0), minute: calSingles(0), second: calSingles(0), day: calSingles(1), month: calSingles(1, 7)},
}

func calSingles(vs ...uint32) []calValue {
	out := make([]calValue, len(vs))
	for i, v := range vs {
		out[i] = calValue{start: v}
	}
	return out
}

// Verify is pve_verify_calendar_event's check, with its
// error text.
func Verify(text string) error {
	if _, err := Parse(text); err != nil {
		return fmt.Errorf("invalid calendar event '%s' - %s\n", text, err)
	}
	return nil
}

// Parse is parse_calendar_event: trim, refuse an empty
// event, then the whole text must parse (all_consuming: what is left is
// a Nom(Eof) error).
func Parse(text string) (*Event, error) {
	text = strings.TrimSpace(text)
	if text == "" {
		return nil, fmt.Errorf("unable to parse calendar event - event is empty")
	}
	ev, rest, err := calParseIncomplete(text)
	if err == nil && rest != "" {
		err = &calErr{rest, "Nom(Eof)"}
	}
	if err != nil {
		return nil, fmt.Errorf("unable to parse calendar event at '%s' - %s", err.rest, err.kind)
	}
	return ev, nil
}

func calParseIncomplete(i string) (*Event, string, *calErr) {
	ev := &Event{}
	if n, ok := strings.CutSuffix(i, "UTC"); ok {
		ev.utc = true
		i = strings.TrimRight(n, " ")
	}
	hasDay, hasTime, hasDate := false, false, false
	if i != "" && isASCIIAlpha(i[0]) {
		if sc, ok := calShortcuts[i]; ok {
			sc.utc = ev.utc
			return &sc, "", nil
		}
		// separated_list1(tag(","), parse_weekdays_range)
		rest, days, err := calWeekdaysRange(i)
		if err != nil {
			return nil, "", err
		}
		for strings.HasPrefix(rest, ",") {
			r2, d2, err := calWeekdaysRange(rest[1:])
			if err != nil {
				break
			}
			rest, days = r2, days|d2
		}
		ev.days, hasDay = days, true
		i = strings.TrimLeft(rest, " \t")
	}
	if rest, d, ok := calDateSpec(i); ok {
		ev.year, ev.month, ev.day = d[0], d[1], d[2]
		hasDate = true
		i = strings.TrimLeft(rest, " \t")
	}
	if rest, t, err := calTimeSpec(i); err == nil {
		ev.hour, ev.minute, ev.second = t[0], t[1], t[2]
		hasTime = true
		i = rest
	} else {
		ev.hour, ev.minute, ev.second = calSingles(0), calSingles(0), calSingles(0)
	}
	if !hasDay && !hasTime && !hasDate {
		return nil, "", calContext(i, "date or time specification")
	}
	return ev, i, nil
}

func isASCIIAlpha(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

var calWeekdays = map[string]uint8{"monday": 0, "mon": 0, "tuesday": 1, "tue": 1, "wednesday": 2, "wed": 2,
	"thursday": 3, "thu": 3, "friday": 4, "fri": 4, "saturday": 5, "sat": 5, "sunday": 6, "sun": 6}

// calWeekday is parse_weekday: alpha1, then a day name.
func calWeekday(i string) (string, uint8, *calErr) {
	n := 0
	for n < len(i) && isASCIIAlpha(i[n]) {
		n++
	}
	if n == 0 {
		return "", 0, &calErr{i, "Nom(Alpha)"}
	}
	d, ok := calWeekdays[strings.ToLower(i[:n])]
	if !ok {
		return "", 0, calContext(i[:n], "weekday")
	}
	return i[n:], d, nil
}

// calWeekdaysRange is parse_weekdays_range: a day or "day..day", wrapping
// past Sunday.
func calWeekdaysRange(i string) (string, uint8, *calErr) {
	rest, start, err := calWeekday(i)
	if err != nil {
		return "", 0, err
	}
	if r, ok := strings.CutPrefix(rest, ".."); ok {
		if r2, end, err := calWeekday(r); err == nil {
			var bits uint8
			for d := start; ; d = (d + 1) % 7 {
				bits |= 1 << d
				if d == end {
					break
				}
			}
			return r2, bits, nil
		}
	}
	return rest, 1 << start, nil
}

// calTimeComp is parse_time_comp: digits below max.
func calTimeComp(i string, max uint32) (string, uint32, *calErr) {
	n := 0
	for n < len(i) && i[n] >= '0' && i[n] <= '9' {
		n++
	}
	if n == 0 {
		return "", 0, &calErr{i, "Nom(Digit)"}
	}
	v, err := strconv.ParseUint(i[:n], 10, 32)
	if err != nil {
		return "", 0, &calErr{i, "Nom(MapRes)"}
	}
	if uint32(v) >= max {
		return "", 0, calContext(i[n:], "time value too large")
	}
	return i[n:], uint32(v), nil
}

// calComp is parse_date_time_comp: v, v..w, v/r or v..w/r.
func calComp(i string, max uint32) (string, calValue, *calErr) {
	rest, v, err := calTimeComp(i, max)
	if err != nil {
		return "", calValue{}, err
	}
	if r, ok := strings.CutPrefix(rest, ".."); ok {
		if r2, end, err := calTimeComp(r, max); err == nil {
			if v > end {
				return "", calValue{}, calContext(r2, "range start is bigger than end")
			}
			if t, ok := strings.CutPrefix(r2, "/"); ok {
				t2, rep, err := calTimeComp(t, max)
				if err != nil {
					return "", calValue{}, err
				}
				return t2, calValue{start: v, step: rep, end: end, hasEnd: true}, nil
			}
			return r2, calValue{start: v, end: end, isRange: true}, nil
		}
	}
	if t, ok := strings.CutPrefix(rest, "/"); ok {
		t2, rep, err := calTimeComp(t, max)
		if err != nil {
			return "", calValue{}, err
		}
		// Repeated(v, 0, None) matches v alone, as Single(v) does.
		return t2, calValue{start: v, step: rep}, nil
	}
	return rest, calValue{start: v}, nil
}

// calCompList is parse_date_time_comp_list: "*", "*/r" or a list.
func calCompList(i string, start, max uint32) (string, []calValue, *calErr) {
	if rest, ok := strings.CutPrefix(i, "*"); ok {
		if t, ok := strings.CutPrefix(rest, "/"); ok {
			if n, rep, err := calTimeComp(t, max); err == nil && rep > 0 {
				return n, []calValue{{start: start, step: rep}}, nil
			} else if err != nil {
				return "", nil, err
			}
		}
		return rest, []calValue{}, nil
	}
	rest, v, err := calComp(i, max)
	if err != nil {
		return "", nil, err
	}
	list := []calValue{v}
	for strings.HasPrefix(rest, ",") {
		r2, v2, err := calComp(rest[1:], max)
		if err != nil {
			break
		}
		rest, list = r2, append(list, v2)
	}
	return rest, list, nil
}

// calTimeSpec is parse_time_spec: [hour:]minute[:second].
func calTimeSpec(i string) (string, [3][]calValue, *calErr) {
	var out [3][]calValue
	rest := i
	if r, h, err := calCompList(i, 0, 24); err == nil {
		if r2, ok := strings.CutPrefix(r, ":"); ok {
			out[0], rest = h, r2
		}
	}
	r, m, err := calCompList(rest, 0, 60)
	if err != nil {
		return "", out, err
	}
	out[1], rest = m, r
	out[2] = calSingles(0)
	if r2, ok := strings.CutPrefix(rest, ":"); ok {
		if r3, s, err := calCompList(r2, 0, 60); err == nil {
			out[2], rest = s, r3
		}
	}
	if out[0] == nil {
		out[0] = []calValue{}
	}
	return rest, out, nil
}

// calDateSpec is parse_date_spec: year-month-day or month-day.
func calDateSpec(i string) (string, [3][]calValue, bool) {
	var out [3][]calValue
	if r, y, err := calCompList(i, 0, 2200); err == nil {
		if r, ok := strings.CutPrefix(r, "-"); ok {
			if r, m, err := calCompList(r, 1, 13); err == nil {
				if r, ok := strings.CutPrefix(r, "-"); ok {
					if r, d, err := calCompList(r, 1, 32); err == nil {
						out[0], out[1], out[2] = y, m, d
						return r, out, true
					}
				}
			}
		}
	}
	if r, m, err := calCompList(i, 1, 13); err == nil {
		if r, ok := strings.CutPrefix(r, "-"); ok {
			if r, d, err := calCompList(r, 1, 32); err == nil {
				out[0], out[1], out[2] = []calValue{}, m, d
				return r, out, true
			}
		}
	}
	return "", out, false
}

// Next is compute_next_event: the first time after last the event
// triggers (in loc, or UTC for a UTC event), or false after 1000 steps.
func (ev *Event) Next(last int64, loc *time.Location) (int64, bool) {
	if ev.utc {
		loc = time.UTC
	}
	t := time.Unix(last+1, 0).In(loc)
	allDays := ev.days == 0 || ev.days == 0x7f
	date := func(y, mo, d, h, mi, s int) time.Time { return time.Date(y, time.Month(mo), d, h, mi, s, 0, loc) }
	for count := 0; count <= 1000; count++ {
		y, mo, d := t.Date()
		h, mi, s := t.Clock()
		switch {
		case len(ev.year) > 0 && !calListContains(ev.year, uint32(y)):
			n, ok := calFindNext(ev.year, uint32(y))
			if !ok {
				return 0, false
			}
			t = date(int(n), 1, 1, 0, 0, 0)
		case len(ev.month) > 0 && !calListContains(ev.month, uint32(mo)):
			if n, ok := calFindNext(ev.month, uint32(mo)); ok {
				t = date(y, int(n), 1, 0, 0, 0)
			} else {
				t = date(y+1, 1, 1, 0, 0, 0)
			}
		case len(ev.day) > 0 && !calListContains(ev.day, uint32(d)):
			if n, ok := calFindNext(ev.day, uint32(d)); ok {
				t = date(y, int(mo), int(n), 0, 0, 0)
			} else {
				t = date(y, int(mo)+1, 1, 0, 0, 0)
			}
		case !allDays && ev.days&(1<<((int(t.Weekday())+6)%7)) == 0:
			num := (int(t.Weekday()) + 6) % 7
			step := 7 - num
			for n := num + 1; n < 7; n++ {
				if ev.days&(1<<n) != 0 {
					step = n - num
					break
				}
			}
			t = date(y, int(mo), d+step, 0, 0, 0)
		case len(ev.hour) > 0 && !calListContains(ev.hour, uint32(h)):
			if n, ok := calFindNext(ev.hour, uint32(h)); ok {
				t = date(y, int(mo), d, int(n), 0, 0)
			} else {
				t = date(y, int(mo), d+1, 0, 0, 0)
			}
		case len(ev.minute) > 0 && !calListContains(ev.minute, uint32(mi)):
			if n, ok := calFindNext(ev.minute, uint32(mi)); ok {
				t = date(y, int(mo), d, h, int(n), 0)
			} else {
				t = date(y, int(mo), d, h+1, 0, 0)
			}
		case len(ev.second) > 0 && !calListContains(ev.second, uint32(s)):
			if n, ok := calFindNext(ev.second, uint32(s)); ok {
				t = date(y, int(mo), d, h, mi, int(n))
			} else {
				t = date(y, int(mo), d, h, mi+1, 0)
			}
		default:
			return t.Unix(), true
		}
	}
	return 0, false
}
