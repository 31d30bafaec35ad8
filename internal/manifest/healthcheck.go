package manifest

import (
	"fmt"
	"sort"
	"time"
)

// Defaults of spec.healthCheck (docs/manifests.md).
const (
	DefaultHealthInterval    = 10 * time.Second
	DefaultHealthTimeout     = 3 * time.Second
	DefaultHealthFailures    = 3
	DefaultHealthGracePeriod = 5 * time.Minute
)

// HealthCheck is how proxmops decides whether a running guest works: the
// QEMU guest agent answering, a TCP port accepting, or an HTTP endpoint
// answering the expected status.
type HealthCheck struct {
	Agent            bool       `json:"agent,omitempty" doc:"VirtualMachine only: the QEMU guest agent answers agent/ping (needs spec.agent: true); excludes tcp and http."`
	TCP              *TCPCheck  `json:"tcp,omitempty" doc:"A TCP connection to the port is accepted; excludes agent and http."`
	HTTP             *HTTPCheck `json:"http,omitempty" doc:"An HTTP GET answers the expected status; excludes agent and tcp."`
	Address          string     `json:"address,omitempty" pm:"format=host" doc:"Host name or IP address tcp and http connect to (default: spec.provision.address, else the first static IP of the guest's NICs, as provisioning finds it)."`
	Interval         string     `json:"interval,omitempty" pm:"format=duration" doc:"Time between two probes, e.g. 30s (default 10s)."`
	Timeout          string     `json:"timeout,omitempty" pm:"format=duration" doc:"Time one probe may take, at most the interval (default 3s)."`
	FailureThreshold int        `json:"failureThreshold,omitempty" pm:"min=1,max=100" doc:"Consecutive failed probes that make a guest Degraded (default 3)."`
	GracePeriod      string     `json:"gracePeriod,omitempty" pm:"format=duration" doc:"Time after the guest starts during which failing probes leave it Progressing (default 5m)."`
}

// TCPCheck is a TCP health check.
type TCPCheck struct {
	Port int `json:"port" pm:"required,min=1,max=65535" doc:"TCP port on the guest's address."`
}

// HTTPCheck is an HTTP health check.
type HTTPCheck struct {
	Port         int    `json:"port" pm:"required,min=1,max=65535" doc:"HTTP port on the guest's address."`
	Path         string `json:"path,omitempty" pm:"format=abs-path" doc:"Path requested (default /)."`
	ExpectStatus int    `json:"expectStatus,omitempty" pm:"min=100,max=599" doc:"Status the answer must have (default: any 2xx or 3xx)."`
}

// durationOr parses a validated duration, def when not set.
func durationOr(s string, def time.Duration) time.Duration {
	if s == "" {
		return def
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		return def
	}
	return d
}

// IntervalDuration is spec.healthCheck.interval with its default.
func (h *HealthCheck) IntervalDuration() time.Duration {
	return durationOr(h.Interval, DefaultHealthInterval)
}

// TimeoutDuration is spec.healthCheck.timeout with its default, never
// longer than the interval.
func (h *HealthCheck) TimeoutDuration() time.Duration {
	return min(durationOr(h.Timeout, DefaultHealthTimeout), h.IntervalDuration())
}

// GraceDuration is spec.healthCheck.gracePeriod with its default.
func (h *HealthCheck) GraceDuration() time.Duration {
	return durationOr(h.GracePeriod, DefaultHealthGracePeriod)
}

// Failures is spec.healthCheck.failureThreshold with its default.
func (h *HealthCheck) Failures() int {
	if h.FailureThreshold <= 0 {
		return DefaultHealthFailures
	}
	return h.FailureThreshold
}

// HealthCheckOf is the resource's spec.healthCheck and the address its
// tcp and http probes connect to; nil for kinds without one.
func HealthCheckOf(r Resource) (*HealthCheck, string) {
	switch v := r.(type) {
	case *VirtualMachine:
		if v.Spec.HealthCheck == nil {
			return nil, ""
		}
		return v.Spec.HealthCheck, healthAddress(v.Spec.HealthCheck, v.Spec.Provision, vmStaticAddrs(v))
	case *Container:
		if v.Spec.HealthCheck == nil {
			return nil, ""
		}
		return v.Spec.HealthCheck, healthAddress(v.Spec.HealthCheck, v.Spec.Provision, ctStaticAddrs(v))
	}
	return nil, ""
}

// healthAddress: the check's own address, else where provisioning
// connects to.
func healthAddress(h *HealthCheck, p *Provision, addrs []string) string {
	if h.Address != "" {
		return h.Address
	}
	if p != nil && p.Address != "" {
		return p.Address
	}
	if len(addrs) > 0 {
		return addrs[0]
	}
	return ""
}

// ctStaticAddrs are a container's static IPs, NICs in slot order, IPv4
// before IPv6 on each.
func ctStaticAddrs(c *Container) []string {
	nics := append([]ContainerNIC(nil), c.Spec.Net...)
	sort.SliceStable(nics, func(i, j int) bool { return slotNumber(nics[i].Slot) < slotNumber(nics[j].Slot) })
	var addrs []string
	for _, n := range nics {
		for _, ip := range []string{n.IP, n.IP6} {
			if a := staticAddress(ip); a != "" {
				addrs = append(addrs, a)
			}
		}
	}
	return addrs
}

// vmStaticAddrs are a VM's static IPs from its cloud-init IP settings.
func vmStaticAddrs(v *VirtualMachine) []string {
	ipc := v.Spec.CloudInit.EffectiveIPConfigs()
	slots := make([]string, 0, len(ipc))
	for s := range ipc {
		slots = append(slots, s)
	}
	sort.Slice(slots, func(i, j int) bool { return slotNumber(slots[i]) < slotNumber(slots[j]) })
	var addrs []string
	for _, s := range slots {
		for _, ip := range []string{ipc[s].IP, ipc[s].IP6} {
			if a := staticAddress(ip); a != "" {
				addrs = append(addrs, a)
			}
		}
	}
	return addrs
}

// checkHealthCheck runs the per-document rules of spec.healthCheck; vm
// says whether the guest is a VM, agent whether it declares spec.agent:
// true, addr is where tcp and http would connect to.
func checkHealthCheck(h *HealthCheck, c *checker, vm, agent bool, addr string) {
	const at = "spec.healthCheck"
	n := 0
	for _, set := range []bool{h.Agent, h.TCP != nil, h.HTTP != nil} {
		if set {
			n++
		}
	}
	switch {
	case n == 0:
		c.errorf(at, "set one of agent, tcp or http")
	case n > 1:
		c.errorf(at, "agent, tcp and http are mutually exclusive: set one")
	}
	switch {
	case h.Agent && !vm:
		c.errorf(at+".agent", "a container has no QEMU guest agent: use tcp or http")
	case h.Agent && !agent:
		c.errorf(at+".agent", "the guest agent is not enabled: set spec.agent: true")
	case (h.TCP != nil || h.HTTP != nil) && addr == "":
		c.errorf(at, "no address to probe: set spec.healthCheck.address, or give a NIC a static IP")
	}
	for _, f := range []struct{ name, v string }{{"interval", h.Interval}, {"timeout", h.Timeout}, {"gracePeriod", h.GracePeriod}} {
		if f.v == "" {
			continue
		}
		if d, err := time.ParseDuration(f.v); err == nil && d <= 0 {
			c.errorf(at+"."+f.name, "must be longer than 0")
		}
	}
	if h.Timeout != "" && h.Interval != "" && durationOr(h.Timeout, 0) > h.IntervalDuration() {
		c.errorf(at+".timeout", "%s is longer than the interval %s", h.Timeout, h.Interval)
	}
}

// checkDuration is the duration format: a Go duration such as 30s, 1m30s.
func checkDuration(s string) error {
	if _, err := time.ParseDuration(s); err != nil {
		return fmt.Errorf("%q is not a duration (e.g. 10s, 1m30s)", s)
	}
	return nil
}
