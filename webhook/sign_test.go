package webhook

import (
	"encoding/base64"
	"strings"
	"testing"
)

// TestSignStandardVector signs the Standard Webhooks specification's
// published example: any of its libraries verifies what Sign makes.
func TestSignStandardVector(t *testing.T) {
	got, err := Sign("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "msg_p5jXN8AQM9LWM0D4loKWxJek", "1614265330", []byte(`{"test": 2432232314}`))
	if err != nil {
		t.Fatal(err)
	}
	if want := "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
}

// TestSignCoversEveryPart changes the ID, the timestamp, the body and the
// secret in turn: each changes the signature.
func TestSignCoversEveryPart(t *testing.T) {
	base := []string{"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "evt_1", "1700000000", `{"a":1}`}
	sign := func(p []string) string {
		s, err := Sign(p[0], p[1], p[2], []byte(p[3]))
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	want := sign(base)
	for i, other := range []string{"whsec_" + base64.StdEncoding.EncodeToString([]byte("another key")), "evt_2", "1700000001", `{"a":2}`} {
		p := append([]string(nil), base...)
		p[i] = other
		if sign(p) == want {
			t.Errorf("part %d changed to %q: same signature", i, other)
		}
	}
}

func TestNewSecret(t *testing.T) {
	s := NewSecret()
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(s, "whsec_"))
	if !strings.HasPrefix(s, "whsec_") || err != nil || len(key) != secretBytes {
		t.Errorf("secret %q: want whsec_ and the base64 of %d bytes (%v)", s, secretBytes, err)
	}
	if NewSecret() == s {
		t.Error("two secrets are the same")
	}
	if _, err := Sign("whsec_not base64!", "evt_1", "1", nil); err == nil {
		t.Error("a malformed secret signs")
	}
}
