package analytics

import (
	"slices"
	"testing"
)

func TestCountry(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Country
		ok   bool
	}{
		{"US", Country{'U', 'S'}, true},
		{"de", Country{'D', 'E'}, true},
		{"Jp", Country{'J', 'P'}, true},
		{"ZZ", Country{}, true}, // String's unknown
		{"zz", Country{}, true},
		{"", Country{}, false},
		{"U", Country{}, false},
		{"USA", Country{}, false},
		{"U1", Country{}, false},
		{"é", Country{}, false},
	} {
		got, ok := ParseCountry(tc.in)
		if got != tc.want || ok != tc.ok {
			t.Errorf("ParseCountry(%q): got %v %v, want %v %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
	if got := (Country{}).String(); got != "ZZ" {
		t.Errorf("unknown country: got %q, want ZZ", got)
	}
	if got := (Country{'F', 'R'}).String(); got != "FR" {
		t.Errorf("France: got %q, want FR", got)
	}
}

// TestEnumerations pins each list's names and numbers: they are the
// journal's bytes, so a change here that is not an append breaks every
// journal and count already written.
func TestEnumerations(t *testing.T) {
	check := func(what string, names []string, want []string, parse func(string) (uint8, bool)) {
		t.Helper()
		if !slices.Equal(names, want) {
			t.Errorf("%s: got %q, want %q (append only)", what, names, want)
		}
		for i, n := range want {
			if v, ok := parse(n); !ok || int(v) != i {
				t.Errorf("%s: parse %q: got %d %v, want %d true", what, n, v, ok, i)
			}
		}
		if _, ok := parse("Chrome "); ok {
			t.Errorf("%s: parsed a name that is not one", what)
		}
	}
	var bs, os, ds []string
	for _, b := range Browsers() {
		bs = append(bs, b.String())
	}
	for _, o := range OSes() {
		os = append(os, o.String())
	}
	for _, d := range Devices() {
		ds = append(ds, d.String())
	}
	check("browsers", bs, []string{"other", "chrome", "firefox", "safari", "edge", "opera",
		"samsung_internet", "yandex", "vivaldi", "ie", "huawei", "silk"},
		func(s string) (uint8, bool) { v, ok := ParseBrowser(s); return uint8(v), ok })
	check("systems", os, []string{"other", "windows", "macos", "linux", "android", "ios", "chromeos"},
		func(s string) (uint8, bool) { v, ok := ParseOS(s); return uint8(v), ok })
	check("devices", ds, []string{"desktop", "mobile", "tablet", "bot"},
		func(s string) (uint8, bool) { v, ok := ParseDevice(s); return uint8(v), ok })

	// A number from a newer build reads as the zero value's name.
	if got := Browser(200).String(); got != "other" {
		t.Errorf("unknown browser: got %q, want other", got)
	}
	if got := OS(200).String(); got != "other" {
		t.Errorf("unknown OS: got %q, want other", got)
	}
	if got := Device(200).String(); got != "desktop" {
		t.Errorf("unknown device: got %q, want desktop", got)
	}
}
