package pvesim

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"net/url"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/proxmops/proxmops/pvesim/route"
)

// reNewDisk is qemu-server's NEW_DISK_RE: "local-lvm:20" or "20".
var reNewDisk = regexp.MustCompile(`^(([^/:\s]+):)?(\d+(\.\d+)?)$`)

func parseDrive(key, val string) (map[string]string, error) {
	f := qemuDriveFormat(key)
	if f == nil {
		return nil, fmt.Errorf("not a drive: %s", key)
	}
	return parsePropString(f, val, key)
}

// printDrive is print_drive: the volume first, then the options sorted.
func printDrive(key string, d map[string]string) string {
	return printPropString(qemuDriveFormat(key), d)
}

func driveIsCdrom(d map[string]string) bool { return d["media"] == "cdrom" }

func driveIsCloudinit(d map[string]string) bool {
	_, name, _ := strings.Cut(d["file"], ":")
	return name == "cloudinit" || regexp.MustCompile(`(?:^|/)vm-\d+-cloudinit(\.\w+)?$`).MatchString(name)
}

// printNet is print_net: "virtio=MAC,bridge=vmbr0,..." (model=mac first).
func printNet(n map[string]string) string {
	parts := []string{n["model"] + "=" + n["macaddr"]}
	for _, k := range sortedKeys(n) {
		if k == "model" || k == "macaddr" {
			continue
		}
		parts = append(parts, k+"="+n[k])
	}
	return strings.Join(parts, ",")
}

// randomMAC is random_ether_addr with Proxmox's default prefix BC:24:11.
func (s *Server) randomMAC() string {
	b := make([]byte, 3)
	s.rng.Read(b)
	return fmt.Sprintf("BC:24:11:%02X:%02X:%02X", b[0], b[1], b[2])
}

func (s *Server) randomUUID() string {
	b := make([]byte, 16)
	s.rng.Read(b)
	b[6] = (b[6] & 0x0f) | 0x40
	b[8] = (b[8] & 0x3f) | 0x80
	h := hex.EncodeToString(b)
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
}

// normaliseNet adds a MAC address when missing and prints the NIC in
// Proxmox's form.
func (s *Server) normaliseNet(val string) string {
	n, err := parsePropString(qemuNetFormat, val, "")
	if err != nil {
		return val
	}
	if n["macaddr"] == "" {
		n["macaddr"] = s.randomMAC()
	}
	return printNet(n)
}

// sshKeyTypes are the key types ssh-keygen -l accepts.
var sshKeyTypes = map[string]bool{
	"ssh-rsa": true, "ssh-dss": true, "ssh-ed25519": true, "ecdsa-sha2-nistp256": true,
	"ecdsa-sha2-nistp384": true, "ecdsa-sha2-nistp521": true, "sk-ssh-ed25519@openssh.com": true,
	"sk-ecdsa-sha2-nistp256@openssh.com": true,
}

// validateSSHKeys is PVE::Tools::validate_ssh_public_keys on the decoded text.
func validateSSHKeys(raw string) error {
	for _, line := range strings.Split(raw, "\n") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		fields := strings.Fields(line)
		// Options may precede the key type (authorized_keys syntax).
		ok := false
		for i := 0; i+1 < len(fields); i++ {
			if sshKeyTypes[fields[i]] {
				blob, err := base64.StdEncoding.DecodeString(fields[i+1])
				ok = err == nil && len(blob) > 4+len(fields[i]) && strings.Contains(string(blob), fields[i])
				break
			}
		}
		if !ok {
			return route.Fail("SSH public key validation error")
		}
	}
	return nil
}

func decodeSSHKeys(s string) (string, error) { return url.PathUnescape(s) }

// hashPassword mimics encrypt_pw: a SHA-256 crypt-style string.
func (s *Server) hashPassword(pw string) string {
	if regexp.MustCompile(`^\$(?:[156]|2[ay])(\$.+){2}`).MatchString(pw) {
		return pw
	}
	salt := make([]byte, 6)
	s.rng.Read(salt)
	sum := sha256.Sum256(append(salt, pw...))
	return "$5$" + base64.RawStdEncoding.EncodeToString(salt) + "$" + base64.RawStdEncoding.EncodeToString(sum[:])
}

// typedValue converts a config string into the JSON type check_type
// leaves it in (qemu-server PVE/QemuServer.pm and pve-container
// PVE/LXC/Config.pm check_type): integers and booleans as numbers, and
// everything else, "number" keys such as cpulimit and migrate_downtime
// included, as the raw string ("1.5"). The HA and SDN sections read back
// through it have no "number" keys.
func typedValue(t route.Type, v string) any {
	switch t {
	case route.TInteger, route.TBoolean:
		if n, err := strconv.ParseInt(v, 10, 64); err == nil {
			return n
		}
	}
	return v
}

// qemuConfigJSON is GET .../config: pending values merged unless current.
func qemuConfigJSON(g *Guest, current bool) map[string]any {
	conf := mergedConf(g, current)
	out := make(map[string]any, len(conf)+1)
	for k, v := range conf {
		// API2/Qemu.pm vm_config masks a set password only when it is
		// true in Perl's sense.
		if k == "cipassword" && v != "" && v != "0" {
			out[k] = "**********"
			continue
		}
		out[k] = typedValue(qemuKeyType(k), v)
	}
	out["digest"] = g.Digest()
	return out
}

// qemuPendingJSON is GET .../pending: the API masks cipassword first
// (API2/Qemu.pm vm_pending), the pending one with a trailing space, so a
// pending change of the password shows as one.
func qemuPendingJSON(g *Guest) []map[string]any {
	return pendingJSON(g, qemuKeyType, func(k, v string, pending bool) string {
		switch {
		case k != "cipassword":
			return v
		case pending:
			return "********** "
		}
		return "**********"
	}, nil)
}

// addUnusedVolume records a detached volume as the first free unusedN.
func addUnusedVolume(conf map[string]string, volid string) {
	for _, v := range conf {
		if v == volid {
			return
		}
	}
	for i := 0; ; i++ {
		k := "unused" + strconv.Itoa(i)
		if _, used := conf[k]; !used {
			conf[k] = volid
			return
		}
	}
}

// registerUnusedDrive is vmconfig_register_unused_drive: a cloud-init
// volume is freed, a disk becomes unusedN, a CD-ROM is just dropped.
func (s *Server) registerUnusedDrive(g *Guest, d map[string]string) {
	if d == nil {
		return
	}
	if driveIsCloudinit(d) {
		s.state.removeVolume(g.Node, d["file"])
		return
	}
	if driveIsCdrom(d) {
		return
	}
	if v := s.state.volume(g.Node, d["file"]); v != nil && v.VMID == g.VMID {
		addUnusedVolume(g.Conf, d["file"])
	}
}

// deleteOrDetachDrive is vmconfig_delete_or_detach_drive.
func (s *Server) deleteOrDetachDrive(g *Guest, key string, force bool) {
	d, err := parseDrive(key, g.Conf[key])
	if err != nil {
		return
	}
	if force && !driveIsCdrom(d) {
		s.state.removeVolume(g.Node, d["file"])
		return
	}
	s.registerUnusedDrive(g, d)
}

// applyPending is vmconfig_apply_pending (a stopped guest, or a start).
func (s *Server) applyPending(g *Guest) {
	for _, k := range sortedKeys(g.PendingDelete) {
		force := g.PendingDelete[k]
		if _, ok := g.Conf[k]; ok && isQemuDiskKey(k) {
			s.deleteOrDetachDrive(g, k, force)
		}
		delete(g.Conf, k)
	}
	g.PendingDelete = map[string]bool{}
	for _, k := range sortedKeys(g.Pending) {
		v := g.Pending[k]
		if isQemuDiskKey(k) {
			if old, ok := g.Conf[k]; ok {
				od, _ := parseDrive(k, old)
				nd, _ := parseDrive(k, v)
				if od != nil && (nd == nil || od["file"] != nd["file"]) {
					s.registerUnusedDrive(g, od)
				}
			}
		}
		g.Conf[k] = v
	}
	g.Pending = map[string]string{}
}

// fastPlugOptions take effect at once even on a running guest.
var fastPlugOptions = map[string]bool{
	"description": true, "hookscript": true, "lock": true, "migrate_downtime": true, "migrate_speed": true,
	"name": true, "onboot": true, "protection": true, "shares": true, "startup": true, "tags": true,
	"vmstatestorage": true, "citype": true, "ciuser": true, "cipassword": true, "ciupgrade": true,
	"cicustom": true, "searchdomain": true, "nameserver": true, "sshkeys": true,
}

func isFastPlug(k string) bool {
	if fastPlugOptions[k] {
		return true
	}
	_, ok := route.IndexOf(k, "ipconfig")
	return ok
}

func hotplugFeatures(conf map[string]string) map[string]bool {
	v, ok := conf["hotplug"]
	if !ok || v == "1" {
		v = "network,disk,usb"
	}
	out := map[string]bool{}
	if v == "0" {
		return out
	}
	for _, f := range splitList(v) {
		out[f] = true
	}
	return out
}

// hotplugPending is vmconfig_hotplug_pending for a running guest: what
// Proxmox can change live is applied, the rest stays pending until the
// next start or reboot.
func (s *Server) hotplugPending(g *Guest) {
	for k, v := range g.Pending {
		if isFastPlug(k) {
			g.Conf[k] = v
			delete(g.Pending, k)
		}
	}
	hp := hotplugFeatures(g.Conf)
	usbHotplug := hp["usb"] && (g.Conf["ostype"] == "l26" || g.Conf["ostype"] == "win8" || g.Conf["ostype"] == "win10" || g.Conf["ostype"] == "win11")
	for _, k := range sortedKeys(g.PendingDelete) {
		force := g.PendingDelete[k]
		apply, judged := featureHotplug(k, hp, usbHotplug)
		switch {
		case judged:
		case k == "hotplug":
			apply = !strings.Contains(g.Conf["hotplug"], "cpu") && !strings.Contains(g.Conf["hotplug"], "memory")
		case k == "balloon":
			apply = g.Conf["balloon"] != "0"
		case isFastPlug(k):
			apply = true
		case strings.HasPrefix(k, "net"):
			apply = hp["network"]
		case isQemuDiskKey(k):
			apply = hp["disk"] && !regexp.MustCompile(`^(efidisk|ide|sata|tpmstate)\d+$`).MatchString(k)
			if apply {
				s.deleteOrDetachDrive(g, k, force)
			}
		}
		if apply {
			delete(g.Conf, k)
			delete(g.PendingDelete, k)
		}
	}
	for _, k := range sortedKeys(g.Pending) {
		v := g.Pending[k]
		apply, judged := featureHotplug(k, hp, usbHotplug)
		switch {
		case judged:
		case k == "hotplug":
			apply = !strings.Contains(v, "memory") && !strings.Contains(v, "cpu") &&
				!strings.Contains(g.Conf["hotplug"], "memory") && !strings.Contains(g.Conf["hotplug"], "cpu")
		case k == "balloon":
			apply = (g.Conf["balloon"] != "0") == (v != "0")
		case strings.HasPrefix(k, "net"):
			apply = s.netHotpluggable(g.Conf[k], v, hp["network"])
		case isQemuDiskKey(k):
			apply = s.diskHotpluggable(g, k, v, hp["disk"])
		case k == "agent":
			apply = agentLiveChange(g.Conf["agent"], v)
		}
		if apply {
			g.Conf[k] = v
			delete(g.Pending, k)
		}
	}
}

// featureHotplug judges the keys that both loops of
// vmconfig_hotplug_pending, deletions and changes, treat alike: each takes
// one hotplug feature (usb, cpu, memory) or none (cpuunits, cpulimit).
// judged is false for every other key; the keys are disjoint from the
// loops' other branches, so judging them first keeps the Perl's outcome.
func featureHotplug(k string, hp map[string]bool, usbHotplug bool) (apply, judged bool) {
	switch {
	case k == "tablet":
		return hp["usb"], true
	case strings.HasPrefix(k, "usb"):
		return usbHotplug, true
	case k == "vcpus":
		return hp["cpu"], true
	case k == "memory":
		return hp["memory"], true
	case k == "cpuunits", k == "cpulimit":
		return true, true
	}
	return false, false
}

func (s *Server) netHotpluggable(old, new string, hotplug bool) bool {
	if old == "" {
		return hotplug
	}
	o, e1 := parsePropString(qemuNetFormat, old, "")
	n, e2 := parsePropString(qemuNetFormat, new, "")
	if e1 != nil || e2 != nil {
		return false
	}
	if o["model"] != n["model"] || o["macaddr"] != n["macaddr"] || o["queues"] != n["queues"] || o["mtu"] != n["mtu"] || o["bridge"] == "" || n["bridge"] == "" {
		return hotplug
	}
	return true
}

func (s *Server) diskHotpluggable(g *Guest, k, v string, hotplug bool) bool {
	if k == "efidisk0" || k == "tpmstate0" {
		return false
	}
	nd, err := parseDrive(k, v)
	if err != nil || driveIsCloudinit(nd) {
		return false
	}
	old, had := g.Conf[k]
	if !had {
		return hotplug && !regexp.MustCompile(`^(ide|sata)\d+$`).MatchString(k)
	}
	od, err := parseDrive(k, old)
	if err != nil {
		return false
	}
	if driveIsCdrom(od) != driveIsCdrom(nd) {
		return false
	}
	if driveIsCdrom(od) {
		return true // changing the medium works live
	}
	if od["file"] == nd["file"] {
		return true // option changes (throttling, backup flags) apply live
	}
	if hotplug && !regexp.MustCompile(`^(ide|sata)\d+$`).MatchString(k) {
		s.registerUnusedDrive(g, od)
		return true
	}
	return false
}

func agentLiveChange(old, new string) bool {
	f := qemuConfigTypes.Lookup("agent").PropFormat
	o, e1 := parsePropString(f, old, "")
	n, e2 := parsePropString(f, new, "")
	if old == "" || e1 != nil || e2 != nil {
		return false
	}
	return o["enabled"] == n["enabled"] && o["type"] == n["type"]
}

// cleanupPending drops pending values equal to the current ones and
// pending deletes of keys that are not set.
func cleanupPending(g *Guest) {
	for k, v := range g.Pending {
		if cur, ok := g.Conf[k]; ok && cur == v {
			delete(g.Pending, k)
		}
	}
	for k := range g.PendingDelete {
		if _, ok := g.Conf[k]; !ok {
			delete(g.PendingDelete, k)
		}
	}
}

// defaultBootOrder is get_default_bootdevices: first disk, first CD-ROM, first NIC.
func defaultBootOrder(conf map[string]string) string {
	var devs []string
	order := []string{}
	for i := 0; i <= 3; i++ {
		order = append(order, "ide"+itoa(i))
	}
	for i := 0; i <= 30; i++ {
		order = append(order, "scsi"+itoa(i))
	}
	for i := 0; i <= 15; i++ {
		order = append(order, "virtio"+itoa(i))
	}
	for i := 0; i <= 5; i++ {
		order = append(order, "sata"+itoa(i))
	}
	for _, cd := range []bool{false, true} {
		for _, k := range order {
			v, ok := conf[k]
			if !ok {
				continue
			}
			d, err := parseDrive(k, v)
			if err != nil || driveIsCdrom(d) != cd {
				continue
			}
			devs = append(devs, k)
			break
		}
	}
	for i := 0; i <= 31; i++ {
		if _, ok := conf["net"+itoa(i)]; ok {
			devs = append(devs, "net"+itoa(i))
			break
		}
	}
	if len(devs) == 0 {
		return ""
	}
	return "order=" + strings.Join(devs, ";")
}

// guestVolumes lists the volumes a guest's config references (disks and unused).
func guestVolumes(conf map[string]string) []string {
	var out []string
	for _, k := range sortedKeys(conf) {
		if isQemuDiskKey(k) {
			if d, err := parseDrive(k, conf[k]); err == nil && d["file"] != "" && d["file"] != "none" && d["file"] != "cdrom" && !(driveIsCdrom(d) && !driveIsCloudinit(d)) {
				out = append(out, d["file"])
			}
		} else if _, ok := route.IndexOf(k, "unused"); ok {
			out = append(out, conf[k])
		}
	}
	sort.Strings(out)
	return out
}
