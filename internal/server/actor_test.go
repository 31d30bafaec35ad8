package server

import (
	"testing"

	"github.com/proxmops/proxmops/internal/api"
)

// What a person or a script asks of the backend carries who asked, as
// data: a token named like a user is still a token.
func TestRequestsCarryTheirActorToTheBackend(t *testing.T) {
	e := newEnv(t)
	admin := e.admin()
	script, _ := e.tokenClient(admin, "admin", "admin")

	admin.expect(202, "POST", "/api/v1/sync", nil)
	if got := e.backend.lastActor(); got != (api.Actor{Kind: api.ActorUser, Name: "admin"}) {
		t.Errorf("session sync asked by %+v", got)
	}
	script.expect(202, "POST", "/api/v1/resources/VirtualMachine/app-01/sync", nil)
	if got := e.backend.lastActor(); got != (api.Actor{Kind: api.ActorToken, Name: "admin"}) {
		t.Errorf("token sync asked by %+v", got)
	}
	script.expect(202, "DELETE", "/api/v1/resources/VirtualMachine/app-01", nil)
	if got := e.backend.lastActor(); got != (api.Actor{Kind: api.ActorToken, Name: "admin"}) {
		t.Errorf("token delete asked by %+v", got)
	}
}
