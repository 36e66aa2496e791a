package main

import "testing"

func TestCheckPprofAddr(t *testing.T) {
	for _, tt := range []struct {
		addr string
		ok   bool
	}{
		{"", true}, {"127.0.0.1:6060", true}, {"[::1]:6060", true}, {"localhost:6060", true},
		{"0.0.0.0:6060", false}, {":6060", false}, {"10.0.0.5:6060", false}, {"example.com:6060", false}, {"127.0.0.1", false},
	} {
		if err := checkPprofAddr(tt.addr); (err == nil) != tt.ok {
			t.Errorf("checkPprofAddr(%q) = %v, want ok %v", tt.addr, err, tt.ok)
		}
	}
}
