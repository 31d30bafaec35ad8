package server

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	"github.com/proxmops/proxmops/internal/api"
	"github.com/proxmops/proxmops/internal/config"
	"github.com/proxmops/proxmops/internal/settings"
)

// FuzzAPIRequestBodies feeds arbitrary bodies to the API's JSON decoders
// (login and setup credentials, new users, new tokens, settings patches).
// A body is either taken whole, and then means the same when encoded again,
// or refused with a 4xx and a JSON error; nothing panics.
func FuzzAPIRequestBodies(f *testing.F) {
	for _, seed := range []string{
		`{"username":"admin","password":"admin password 1"}`,
		`{"token":"pmsetup_x","username":"a","password":"b"}`,
		`{"username":"u","password":"p","role":"viewer"}`,
		`{"name":"ci","role":"admin"}`,
		`{"cluster":{"endpoint":"https://pve:8006","tokenSecret":"set"},"reconcile":{"interval":"90s","concurrency":2}}`,
		`{"username":"a"} {"username":"b"}`,
		`{"username":"a","extra":1}`,
		`[1,2]`,
		`{"username":"a"}}`, // a stray bracket after the object was once accepted
	} {
		for target := range uint8(4) {
			f.Add(target, []byte(seed))
		}
	}
	f.Fuzz(func(t *testing.T, target uint8, body []byte) {
		switch target % 4 {
		case 0:
			checkDecode(t, body, &credentials{})
		case 1:
			checkDecode(t, body, &newUser{})
		case 2:
			checkDecode(t, body, &newToken{})
		case 3:
			patch, err := settings.ParsePatch(body)
			if err != nil {
				if err.Error() == "" {
					t.Fatal("a refusal without words")
				}
				return
			}
			merged, err := settings.Update(config.Overlay{}, patch)
			if err != nil {
				t.Fatalf("a parsed patch does not apply: %v", err)
			}
			// Invalid values are refused with words, valid ones give a
			// configuration: never a panic.
			if _, _, err := config.Defaults().WithOverlay(merged); err != nil && err.Error() == "" {
				t.Fatal("a refusal without words")
			}
		}
	})
}

func checkDecode[T any](t *testing.T, body []byte, v *T) {
	r := httptest.NewRequest("POST", "/api/v1/x", bytes.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	w := httptest.NewRecorder()
	if !decodeJSON(w, r, v) {
		var e api.Error
		if w.Code < 400 || w.Code > 499 || json.Unmarshal(w.Body.Bytes(), &e) != nil || e.Error == "" {
			t.Fatalf("refused with %d %q", w.Code, w.Body.String())
		}
		return
	}
	if !json.Valid(body) {
		t.Fatalf("accepted a body that is not one JSON value: %q", body)
	}
	again, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var back T
	if err := json.Unmarshal(again, &back); err != nil || !reflect.DeepEqual(&back, v) {
		t.Fatalf("round trip: %+v -> %s -> %+v (%v)", v, again, back, err)
	}
}

// FuzzVerifyWebhook checks the forges' proofs: the right signature (or
// token) is always accepted, and anything accepted is the right one.
func FuzzVerifyWebhook(f *testing.F) {
	f.Add(uint8(0), "hook-secret", []byte(`{"ref":"refs/heads/main"}`), "sha256=00")
	f.Add(uint8(1), "hook-secret", []byte(`{}`), "zz")
	f.Add(uint8(2), "hook-secret", []byte(``), "hook-secret")
	f.Add(uint8(2), "", []byte(`x`), "")
	f.Add(uint8(0), "s", []byte(`x`), "sha256=")
	forges := []string{"github", "gitea", "gitlab"}
	f.Fuzz(func(t *testing.T, which uint8, secret string, body []byte, presented string) {
		forge := forges[int(which)%len(forges)]
		m := hmac.New(sha256.New, []byte(secret))
		m.Write(body)
		mac := m.Sum(nil)
		right := http.Header{}
		right.Set("X-Hub-Signature-256", "sha256="+hex.EncodeToString(mac))
		right.Set("X-Gitea-Signature", hex.EncodeToString(mac))
		right.Set("X-Gitlab-Token", secret)
		if err := verifyWebhook(forge, secret, right, body); (err == nil) != (secret != "") {
			t.Fatalf("right proof for %s with secret %q: %v", forge, secret, err)
		}
		h := http.Header{}
		for _, name := range []string{"X-Hub-Signature-256", "X-Gitea-Signature", "X-Gitlab-Token"} {
			h.Set(name, presented)
		}
		if verifyWebhook(forge, secret, h, body) != nil {
			return
		}
		// Accepted: it must be the right proof.
		got := h.Get(map[string]string{"github": "X-Hub-Signature-256", "gitea": "X-Gitea-Signature", "gitlab": "X-Gitlab-Token"}[forge])
		switch forge {
		case "github", "gitea":
			raw, _ := hex.DecodeString(strings.TrimPrefix(got, "sha256="))
			if !hmac.Equal(raw, mac) || (forge == "github" && !strings.HasPrefix(got, "sha256=")) {
				t.Fatalf("%s accepted %q for secret %q", forge, got, secret)
			}
		case "gitlab":
			if got != secret || secret == "" {
				t.Fatalf("gitlab accepted %q for secret %q", got, secret)
			}
		}
	})
}
