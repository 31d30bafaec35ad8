package api

import (
	"encoding/json"
	"os"
	"regexp"
	"slices"
	"testing"
)

// The UI's ActorKind union is the Go list: a kind added here and not
// there would show as a bare word in the timeline.
func TestActorKindsMatchTheTypeScriptUnion(t *testing.T) {
	src, err := os.ReadFile("../../web/src/api/generated.ts")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`export type ActorKind = ([^;]+);`).FindSubmatch(src)
	if m == nil {
		t.Fatal("web/src/api/generated.ts has no ActorKind union")
	}
	var ts []ActorKind
	for _, w := range regexp.MustCompile(`'([a-z]+)'`).FindAllSubmatch(m[1], -1) {
		ts = append(ts, ActorKind(w[1]))
	}
	if !slices.Equal(ts, ActorKinds) {
		t.Errorf("generated.ts ActorKind = %v, Go ActorKinds = %v", ts, ActorKinds)
	}
}

func TestActorOnTheWireIsAKindAndItsParts(t *testing.T) {
	for _, tc := range []struct {
		a    Actor
		want string
	}{
		{PassActor, `{"kind":"pass"}`},
		{Actor{Kind: ActorToken, Name: "ci"}, `{"kind":"token","name":"ci"}`},
		{Actor{Kind: ActorUser, Name: "alice", Via: ViaOIDC}, `{"kind":"user","name":"alice","via":"oidc"}`},
		{Actor{Kind: ActorWebhook, Name: "gitlab", Delivery: "f00"}, `{"kind":"webhook","name":"gitlab","delivery":"f00"}`},
		{Actor{Kind: ActorCLI, Name: "bob", Token: "laptop"}, `{"kind":"cli","name":"bob","token":"laptop"}`},
	} {
		b, _ := json.Marshal(tc.a)
		if string(b) != tc.want {
			t.Errorf("%+v = %s, want %s", tc.a, b, tc.want)
		}
	}
}
