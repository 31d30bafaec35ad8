package pvesim

import (
	"encoding/json"
	"testing"
)

func TestRequestCountersAndState(t *testing.T) {
	srv, c := newSim(t, Options{})
	createVM(t, c, "100")
	c.mustOK("GET", "/nodes/pve1/qemu/100/config", nil)
	c.mustOK("GET", "/nodes/pve1/qemu/100/config", nil)
	if n := srv.RequestCountFor("GET", "/nodes/{node}/qemu/{vmid}/config"); n != 2 {
		t.Fatalf("count = %d", n)
	}
	req := c.mustOKRaw("GET", "/_sim/requests")
	var counts []RequestCount
	if err := json.Unmarshal(req.Data, &counts); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, rc := range counts {
		if rc.Method == "POST" && rc.Path == "/nodes/{node}/qemu" && rc.Count == 1 {
			found = true
		}
	}
	if !found {
		t.Fatalf("counters %v", counts)
	}

	st := c.mustOKRaw("GET", "/_sim/state")
	var state map[string]any
	if err := json.Unmarshal(st.Data, &state); err != nil || state["guests"] == nil {
		t.Fatalf("state %s", st.Body)
	}

	// Drift by hand, then save and restore into a new server.
	if err := srv.MutateGuest(100, func(conf map[string]string) { conf["cores"] = "3" }); err != nil {
		t.Fatal(err)
	}
	srv2 := reloaded(t, srv)
	c2 := newClient(t, srv2)
	cfg := c2.mustOK("GET", "/nodes/pve1/qemu/100/config", nil).obj(t)
	if cfg["cores"] != float64(3) || cfg["scsi0"] != "local-lvm:vm-100-disk-0,size=8G" {
		t.Fatalf("restored config %v", cfg)
	}
	if vols := srv2.Volumes("pve1", "local-lvm"); len(vols) != 1 {
		t.Fatalf("restored volumes %v", vols)
	}
}

func (c *client) mustOKRaw(method, path string) apiResp {
	c.t.Helper()
	req, _ := newRawRequest(method, c.srv.URL()+path)
	for k, v := range c.header {
		req.Header[k] = v
	}
	r := c.send(req)
	if r.Status != 200 {
		c.t.Fatalf("%s %s: %d %s", method, path, r.Status, r.Body)
	}
	return r
}
