package pvesim

import (
	"fmt"
	"regexp"
	"strings"
)

// VolumeSpec describes storage content added from Go (see AddVolume).
type VolumeSpec struct {
	Node    string // required for local storages; ignored for shared ones
	VolID   string // "local:iso/debian.iso", "local:import/debian.qcow2"
	Size    int64
	Format  string // default from the extension
	Notes   string
	Content string // default from the volume name (iso/, vztmpl/, import/, ...)
}

// AddVolume puts a volume on a storage, as if uploaded.
func (s *Server) AddVolume(v VolumeSpec) error {
	s.mu.Lock()
	s.statdCatchUp()
	s.touch()
	defer s.mu.Unlock()
	storage, name, ok := strings.Cut(v.VolID, ":")
	if !ok {
		return fmt.Errorf("volume id %q: want storage:name", v.VolID)
	}
	st := s.state.storage(storage)
	if st == nil {
		return fmt.Errorf("storage %q does not exist", storage)
	}
	if !st.Shared && s.state.node(v.Node) == nil {
		return fmt.Errorf("node %q does not exist", v.Node)
	}
	content := v.Content
	if content == "" {
		content, _, _ = s.volumeContentType(v.Node, v.VolID)
	}
	format := v.Format
	if format == "" {
		format = listedFormat(content, name)
	}
	s.state.addVolume(&Volume{Node: v.Node, Storage: storage, Name: name, Content: content, Format: format,
		Size: v.Size, Notes: v.Notes, CTime: s.clock.Now().Unix(), VMID: volumeVMID(name)})
	return nil
}

func formatFromName(name string) string {
	switch {
	case strings.HasSuffix(name, ".iso") || strings.HasSuffix(name, ".img"):
		return "iso"
	case strings.HasSuffix(name, ".qcow2"):
		return "qcow2"
	case strings.HasSuffix(name, ".vmdk"):
		return "vmdk"
	case strings.HasSuffix(name, ".ova"):
		return "ova"
	}
	return "raw"
}

var (
	reTemplateFormat = regexp.MustCompile(`(?i)\.(?:(tar)|tar\.(gz|xz|zst|bz2))$`)
	reBackupFormat   = regexp.MustCompile(`\.(tgz|(?:tar|vma)(?:\.(?:gz|lzo|zst|bz2))?)$`)
)

// listedFormat is the format a content listing gives a file of a content
// type (pve-storage PVE/Storage/Plugin.pm $get_subdir_files): a template
// is "tar" or "t" and its compressor ("tzst", "tgz", "txz", "tbz2"), a
// backup its archive extension ("vma.zst", "tar.zst", "tgz"), a snippet
// "snippet"; images and imports go by their extension.
func listedFormat(content, name string) string {
	switch content {
	case "vztmpl":
		if m := reTemplateFormat.FindStringSubmatch(name); m != nil {
			if m[1] != "" {
				return "tar"
			}
			return "t" + m[2]
		}
	case "backup":
		if m := reBackupFormat.FindStringSubmatch(name); m != nil {
			return m[1]
		}
	case "snippets":
		return "snippet"
	}
	return formatFromName(name)
}

// GuestSpec describes a guest added from Go (see AddGuest): an existing,
// possibly unowned, guest as someone else created it.
type GuestSpec struct {
	VMID    int
	Node    string
	Type    string            // "qemu" (default) or "lxc"
	Config  map[string]string // config file values, e.g. {"name": "db", "cores": "2", "scsi0": "local-lvm:vm-105-disk-0,size=8G"}
	Running bool
}

// AddGuest creates a guest directly in the state. Volumes named in drive
// values are created on their storage when missing.
func (s *Server) AddGuest(spec GuestSpec) error {
	s.mu.Lock()
	s.statdCatchUp()
	s.touch()
	defer s.mu.Unlock()
	if spec.Type == "" {
		spec.Type = "qemu"
	}
	if s.state.node(spec.Node) == nil {
		return fmt.Errorf("node %q does not exist", spec.Node)
	}
	if _, taken := s.state.Guests[spec.VMID]; taken {
		return fmt.Errorf("guest %d already exists", spec.VMID)
	}
	g := &Guest{VMID: spec.VMID, Node: spec.Node, Type: spec.Type, Conf: copyConf(spec.Config), Running: spec.Running}
	g.ensureMaps()
	if spec.Running {
		g.StartedAt = s.clock.Now()
	}
	for k, v := range g.Conf {
		if !isQemuDiskKey(k) && k != "rootfs" && !strings.HasPrefix(k, "mp") {
			continue
		}
		file := strings.SplitN(v, ",", 2)[0]
		if strings.HasPrefix(file, "volume=") || strings.HasPrefix(file, "file=") {
			file = file[strings.IndexByte(file, '=')+1:]
		}
		if s.state.volume(spec.Node, file) != nil || !strings.Contains(file, ":") {
			continue
		}
		storage, name, _ := strings.Cut(file, ":")
		if s.state.storage(storage) == nil || strings.Contains(v, "media=cdrom") {
			continue
		}
		var size int64
		for _, part := range strings.Split(v, ",") {
			if sz, ok := strings.CutPrefix(part, "size="); ok {
				size, _ = ParseSize(sz)
			}
		}
		s.state.addVolume(&Volume{Node: spec.Node, Storage: storage, Name: name, Content: "images",
			Format: formatFromName(name), Size: size, VMID: spec.VMID, CTime: s.clock.Now().Unix()})
	}
	s.state.Guests[spec.VMID] = g
	return nil
}

// MutateGuest edits a guest's config file directly, as someone changing it
// by hand on the node would ("hand-made drift"). The function gets the
// current config (without pending values) and may change it in place.
func (s *Server) MutateGuest(vmid int, f func(conf map[string]string)) error {
	return s.editGuest(vmid, func(g *Guest) { f(g.Conf) })
}

// editGuest changes guest vmid by hand, once pvestatd's view has caught up
// with what was before.
func (s *Server) editGuest(vmid int, edit func(g *Guest)) error {
	s.mu.Lock()
	s.statdCatchUp()
	s.touch()
	defer s.mu.Unlock()
	g := s.state.Guests[vmid]
	if g == nil {
		return fmt.Errorf("guest %d does not exist", vmid)
	}
	edit(g)
	return nil
}

// GuestInfo is a copy of a guest's state for tests.
type GuestInfo struct {
	VMID          int
	Node          string
	Type          string
	Running       bool
	Config        map[string]string
	Pending       map[string]string
	PendingDelete []string
	Snapshots     []string
	// KVM is what the running VM was started with (nil when stopped).
	KVM *KVMCommand
}

// Guest returns a copy of a guest's state.
func (s *Server) Guest(vmid int) (GuestInfo, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	g := s.state.Guests[vmid]
	if g == nil {
		return GuestInfo{}, false
	}
	return GuestInfo{VMID: g.VMID, Node: g.Node, Type: g.Type, Running: g.Running, Config: copyConf(g.Conf),
		Pending: copyConf(g.Pending), PendingDelete: sortedKeys(g.PendingDelete), Snapshots: sortedKeys(g.Snapshots),
		KVM: runningKVM(g)}, true
}

// SetGuestRunning powers a guest on or off without a task (drift in power state).
func (s *Server) SetGuestRunning(vmid int, running bool) error {
	return s.editGuest(vmid, func(g *Guest) {
		g.Running = running
		if running {
			g.StartedAt = s.clock.Now()
			if g.Type == "qemu" {
				g.KVM = kvmCommand(g.Conf)
			}
		}
		// The HA stack notices a guest that runs or stops against its request.
		s.haKick()
	})
}

// SetGuestIgnoresShutdown makes a guest ignore (or obey again) shutdown
// requests, as a hung guest OS does: a shutdown then runs to its timeout and
// fails, or stops the guest hard with forceStop (the HA stack's for VMs).
func (s *Server) SetGuestIgnoresShutdown(vmid int, ignores bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.touch()
	g := s.state.Guests[vmid]
	if g == nil {
		return fmt.Errorf("guest %d does not exist", vmid)
	}
	g.IgnoresShutdown = ignores
	return nil
}

// Volumes lists the volume ids on a storage as seen from a node.
func (s *Server) Volumes(node, storage string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, v := range s.state.volumesOn(node, storage) {
		out = append(out, v.VolID())
	}
	return out
}

// StorageSpec is a storage.cfg entry.
type StorageSpec struct {
	ID      string
	Type    string // dir, lvmthin, nfs, ...
	Content []string
	Shared  bool
	Path    string   // file-based storages
	Nodes   []string // empty: every node
	Disable bool
	Total   int64 // bytes; default 100 GiB
	// Format is storage.cfg "format": a file storage's default image
	// format (raw when empty, as Proxmox's).
	Format string
	// VolumeChain is storage.cfg "snapshot-as-volume-chain" (lvm, dir,
	// nfs): qcow2 snapshots as backing chains, rolled back to the most
	// recent one only.
	VolumeChain bool
}

// SetStorage adds a storage or replaces the configuration of one (its
// volumes stay).
func (s *Server) SetStorage(spec StorageSpec) error {
	s.mu.Lock()
	s.touch()
	defer s.mu.Unlock()
	if spec.ID == "" || spec.Type == "" {
		return fmt.Errorf("a storage needs an id and a type")
	}
	for _, n := range spec.Nodes {
		if s.state.node(n) == nil {
			return fmt.Errorf("node %q does not exist", n)
		}
	}
	if spec.Total == 0 {
		spec.Total = 100 << 30
	}
	st := &Storage{ID: spec.ID, Type: spec.Type, Content: append([]string(nil), spec.Content...), Shared: spec.Shared,
		Path: spec.Path, Total: spec.Total, Nodes: append([]string(nil), spec.Nodes...), Disable: spec.Disable,
		Format: spec.Format, VolumeChain: spec.VolumeChain}
	for i, old := range s.state.Storages {
		if old.ID == spec.ID {
			s.state.Storages[i] = st
			return nil
		}
	}
	s.state.Storages = append(s.state.Storages, st)
	return nil
}
