package stack

import (
	"bufio"
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestReadReply(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    any
		wantErr bool
	}{
		{"+PONG\r\n", "PONG", false},
		{":42\r\n", int64(42), false},
		{"$5\r\nhello\r\n", "hello", false},
		{"$0\r\n\r\n", "", false},
		{"$-1\r\n", nil, false},
		{"*-1\r\n", nil, false},
		{"*2\r\n$9\r\n127.0.0.1\r\n$4\r\n6380\r\n", []any{"127.0.0.1", "6380"}, false},
		{"*2\r\n*1\r\n:1\r\n+OK\r\n", []any{[]any{int64(1)}, "OK"}, false},
		{"-ERR unknown command\r\n", nil, true},
		{"$5\r\nhel", nil, true},
		{"?what\r\n", nil, true},
		{":x\r\n", nil, true},
	} {
		got, err := readReply(bufio.NewReader(strings.NewReader(tc.in)))
		if (err != nil) != tc.wantErr {
			t.Errorf("readReply(%q): got error %v, want error %v", tc.in, err, tc.wantErr)
			continue
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("readReply(%q): got %#v, want %#v", tc.in, got, tc.want)
		}
	}
	_, err := readReply(bufio.NewReader(strings.NewReader("-LOADING Redis is loading\r\n")))
	var re respError
	if !errors.As(err, &re) || !strings.HasPrefix(string(re), "LOADING") {
		t.Errorf("error reply: got %v, want a respError starting LOADING", err)
	}
}

func TestInfoFields(t *testing.T) {
	info := "# Replication\r\nrole:slave\r\nmaster_host:127.0.0.1\r\nmaster_port:6381\r\nmaster_link_status:up\r\n"
	got := infoFields(info)
	for k, want := range map[string]string{"role": "slave", "master_port": "6381", "master_link_status": "up"} {
		if got[k] != want {
			t.Errorf("infoFields[%s]: got %q, want %q", k, got[k], want)
		}
	}
}
