package engine

import (
	"bytes"
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/proxmops/proxmops/internal/cloudinit"
	"github.com/proxmops/proxmops/internal/pve"
	"github.com/proxmops/proxmops/internal/pvefields"
)

// createParams renders a GuestSpec as the parameters of POST /qemu, from
// pvefields' qemu table. importFrom is the boot disk's import source ("" for a blank
// boot disk).
func createParams(gs *pvefields.GuestSpec, vmid int, importFrom string) *pve.Params {
	p := pve.NewParams()
	if importFrom != "" {
		// Cloud images expect a serial console.
		p.Set("serial0", "socket")
		p.Set("vga", "serial0")
	}
	pvefields.QemuCreateParams(gs, vmid, importFrom, p)
	if gs.Pool != "" {
		p.Set("pool", gs.Pool)
	}
	return p
}

// ensureImage makes sure a cloud image is on the import storage, downloading
// it once per pass however many actions need it.
func (x *execCtx) ensureImage(ctx context.Context, node string, img *resolvedImage) error {
	if img == nil || img.url == "" {
		return nil
	}
	return x.pass.ensureOnce("volume "+img.volid+" on "+node, func() error {
		if img.present {
			return nil
		}
		// Someone (another pass, a person) may have fetched it meanwhile.
		if vols, err := x.e.client.StorageContent(ctx, node, img.storage, "import"); err == nil {
			for _, v := range vols {
				if v.VolID == img.volid {
					return nil
				}
			}
		}
		o := pve.DownloadOptions{Content: "import", Filename: img.fileName, URL: img.url}
		if img.checksumAlgo != "" {
			o.Checksum, o.ChecksumAlgorithm = img.checksumValue, img.checksumAlgo
		}
		upid, err := x.downloadTask(ctx, "downloading "+img.fileName+" to "+img.storage, func() (string, error) {
			return x.e.client.DownloadURL(ctx, node, img.storage, o)
		})
		if err != nil {
			return err
		}
		x.recordDownload(ctx, downloadDone{upid: upid, node: node, storage: img.storage, volid: img.volid, content: "import",
			shared: img.shared, source: img.url, checksum: checksumKey(img.checksumAlgo, img.checksumValue)})
		return nil
	})
}

// rereadGuest reads a guest again after a create or a clone. withStatus
// reads its status/current too; without it the guest is taken as stopped,
// as Proxmox leaves a VM it just created without start=1 (which proxmops
// never sends) or cloned (qemu-server API2/Qemu.pm create_vm, clone_vm).
func (x *execCtx) rereadGuest(ctx context.Context, node string, vmid int, withStatus bool) (*Guest, error) {
	g := &Guest{VMID: vmid, Type: "qemu", Node: node, fresh: true, Status: "stopped"}
	if withStatus {
		st, err := x.e.client.QemuStatus(ctx, node, vmid)
		if err != nil {
			return nil, fmt.Errorf("reading VM %d: %w", vmid, err)
		}
		g.Status, g.Name, g.Template = st.Status, st.Name, st.Template != 0
	}
	if err := x.e.readGuest(ctx, g); err != nil {
		return nil, err
	}
	if !withStatus {
		g.nameFromConfig()
	}
	g.ownTags()
	return g, nil
}

// ownTags reads the guest's tags and ownership from its configuration.
func (g *Guest) ownTags() {
	g.Tags = pve.SplitTags(g.Effective["tags"])
	g.Owned, g.Adopted = hasTag(g.Tags, OwnerTag), hasTag(g.Tags, AdoptedTag)
}

// assume makes the guest read as it will once the settings in p are
// written ("delete" removes keys), so that a diff leaves them out.
func (g *Guest) assume(p *pve.Params) {
	for _, k := range p.Keys() {
		v, _ := p.Get(k)
		if k != "delete" {
			g.Current[k], g.Effective[k] = v, v
			continue
		}
		for _, del := range strings.Split(v, ",") {
			delete(g.Current, del)
			delete(g.Effective, del)
		}
	}
	g.ownTags()
}

// updateOptions say how to finish an update.
type updateOptions struct {
	state           string // "", running, stopped
	rebootIfNeeded  bool
	shutdownTimeout time.Duration
	// own is written with the first configuration write: a clone's
	// ownership tag (and the removal of its template's description).
	own *pve.Params
}

// configTaskDelay is background_delay for an asynchronous configuration
// write: Proxmox answers once its task ended if it does within that many
// seconds (qemu-server API2/Qemu.pm update_vm_api), so no poll is needed.
const configTaskDelay = 5

// applyDiff carries out a pvefields.Diff on a guest.
func (x *execCtx) applyDiff(ctx context.Context, gs *pvefields.GuestSpec, g *Guest, d *pvefields.Diff, uo updateOptions) error {
	node, vmid := g.Node, g.VMID
	c := x.e.client
	sync, async, last := pve.NewParams(), pve.NewParams(), pve.NewParams()
	var deletes []string
	for _, ch := range d.Config {
		switch {
		case ch.Key == "":
		case ch.Last:
			last.Set(ch.Key, ch.Value)
		case ch.Del:
			deletes = append(deletes, ch.Key)
		case ch.Async:
			async.Set(ch.Key, ch.Value)
		default:
			sync.Set(ch.Key, ch.Value)
		}
	}
	if uo.own != nil {
		for _, k := range uo.own.Keys() {
			v, _ := uo.own.Get(k)
			if k == "delete" {
				deletes = uniqStrings(append(deletes, strings.Split(v, ",")...))
			} else {
				sync.Set(k, v)
			}
		}
	}
	if len(deletes) > 0 {
		sync.Set("delete", strings.Join(deletes, ","))
	}
	if g.fresh && async.Len() > 0 {
		// A guest just made has nothing to hot-plug: its settings and new
		// drives go in one call, as update_vm_api takes them.
		for _, k := range sync.Keys() {
			v, _ := sync.Get(k)
			async.Set(k, v)
		}
		sync = pve.NewParams()
	}
	if err := x.writeConfig(ctx, node, vmid, sync, async, uo.own); err != nil {
		return err
	}
	if d.Cidata != nil {
		if err := x.provisionCidata(ctx, gs, g, d.Cidata); err != nil {
			return err
		}
	}
	for _, r := range d.Resizes {
		if err := x.task(ctx, fmt.Sprintf("growing %s to %s", r.Slot, pvefields.FormatSize(r.To)), func() (string, error) { return c.QemuResize(ctx, node, vmid, r.Slot, pvefields.FormatSize(r.To)) }); err != nil {
			return err
		}
	}
	if last.Len() > 0 {
		// Alone and after the drives: Proxmox appends a CD-ROM added in the
		// same call to the old order, in an order of its own choosing.
		if err := c.QemuSetConfig(ctx, node, vmid, last); err != nil {
			return fmt.Errorf("setting the boot order of VM %d: %w", vmid, err)
		}
	}
	return x.convergePower(ctx, uo, g.Running(), g.fresh, d.NeedsReboot(), d.Refused,
		x.power(ctx, qemuCalls(c), node, vmid, g, uo.shutdownTimeout))
}

// writeConfig writes a VM's settings (PUT) and new drives (POST, a task),
// in that order. own was part of the first of these writes; when Proxmox
// refused that write, own is written alone: a guest proxmops made stays
// its own whatever else failed.
func (x *execCtx) writeConfig(ctx context.Context, node string, vmid int, sync, async, own *pve.Params) error {
	c := x.e.client
	var err error
	if sync.Len() > 0 {
		x.progress("updating configuration", "", -1)
		if err = c.QemuSetConfig(ctx, node, vmid, sync); err != nil {
			err = fmt.Errorf("updating configuration of VM %d: %w", vmid, err)
		}
	}
	firstFailed := err != nil
	if err == nil && async.Len() > 0 {
		msg := "adding drives"
		if sync.Len() == 0 && own != nil {
			msg = "updating configuration and adding drives"
		}
		async.SetInt("background_delay", configTaskDelay)
		err = x.task(ctx, msg, func() (string, error) { return c.QemuSetConfigAsync(ctx, node, vmid, async) })
		firstFailed = err != nil && sync.Len() == 0
	}
	if firstFailed && own != nil && own.Len() > 0 && !pve.IsUnknownOutcome(err) {
		if oerr := c.QemuSetConfig(ctx, node, vmid, own); oerr != nil {
			x.e.log.Warn("could not tag the guest as owned", "vmid", vmid, "error", oerr)
		}
	}
	return err
}

// shutdownOrStop asks the guest to shut down (Proxmox stopping it when
// calls.forceStop says so) within timeout, the engine's default when not
// positive, and stops it hard, in the step calls.stopping, unless it is
// then seen stopped.
func (x *execCtx) shutdownOrStop(ctx context.Context, calls guestCalls, node string, vmid int, timeout time.Duration) error {
	if timeout <= 0 {
		timeout = x.e.opts.ShutdownTimeout
	}
	secs := max(int(timeout/time.Second), 1)
	if err := x.task(ctx, fmt.Sprintf("shutting down (up to %ds)", secs), func() (string, error) {
		return calls.shutdown(ctx, node, vmid, secs, calls.forceStop)
	}); err == nil {
		if st, err := calls.status(ctx, node, vmid); err == nil && st.Status != "running" {
			return nil
		}
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return x.task(ctx, calls.stopping, func() (string, error) { return calls.stop(ctx, node, vmid) })
}

// power is the guestPower of guest g, at node and vmid, through calls.
func (x *execCtx) power(ctx context.Context, calls guestCalls, node string, vmid int, g *Guest, timeout time.Duration) guestPower {
	return guestPower{
		shutdown: func() error { return x.shutdownOrStop(ctx, calls, node, vmid, timeout) },
		start:    func() (string, error) { return calls.start(ctx, node, vmid) },
		reboot:   func() (string, error) { return calls.reboot(ctx, node, vmid) },
		sid:      g.HASID(), haManaged: g.HAManaged(),
		requestStop: func(secs int) (string, error) { return calls.shutdown(ctx, node, vmid, secs, false) },
		status:      func() (pve.VMStatus, error) { return calls.status(ctx, node, vmid) },
	}
}

// provisionCidata builds and uploads the userData seed and attaches it.
func (x *execCtx) provisionCidata(ctx context.Context, gs *pvefields.GuestSpec, g *Guest, ch *pvefields.CidataChange) error {
	c := x.e.client
	stor := pvefields.StorageOf(ch.NewVolume)
	fileName := strings.TrimPrefix(ch.NewVolume, stor+":iso/")
	err := x.pass.ensureOnce("volume "+ch.NewVolume+" on "+g.Node, func() error {
		if _, ok := x.pass.snap.Volume(g.Node, stor, ch.NewVolume); ok {
			return nil
		}
		var buf bytes.Buffer
		if err := cloudinit.BuildISO(&buf, gs.Seed()); err != nil {
			return err
		}
		return x.task(ctx, "uploading the cloud-init seed "+fileName, func() (string, error) {
			return c.Upload(ctx, g.Node, stor, "iso", fileName, bytes.NewReader(buf.Bytes()))
		})
	})
	if err != nil {
		return err
	}
	p := pve.NewParams().Set(ch.Slot, ch.NewVolume+",media=cdrom")
	if err := c.QemuSetConfig(ctx, g.Node, g.VMID, p); err != nil {
		return fmt.Errorf("attaching the cloud-init seed: %w", err)
	}
	if ch.OldVolume != "" && ch.OldVolume != ch.NewVolume {
		if _, file, _ := strings.Cut(ch.OldVolume, "/"); strings.HasPrefix(file, "proxmops-cidata-"+strconv.Itoa(g.VMID)+"-") {
			upid, err := c.DeleteVolume(ctx, g.Node, pvefields.StorageOf(ch.OldVolume), ch.OldVolume)
			if err == nil && upid != "" {
				_, err = c.WaitTask(ctx, upid, nil)
			}
			if err != nil {
				x.e.log.Warn("could not delete the previous cloud-init seed", "volume", ch.OldVolume, "error", err)
			}
		}
	}
	return nil
}

// guestCalls are the API calls of one Proxmox guest type, and how its
// graceful shutdown is asked and its stop after it named.
type guestCalls struct {
	what, pveType               string // VM and qemu, or container and lxc
	status                      func(ctx context.Context, node string, vmid int) (pve.VMStatus, error)
	config                      func(ctx context.Context, node string, vmid int) (pve.ConfigValues, error)
	stop, delete, start, reboot func(ctx context.Context, node string, vmid int) (string, error)
	shutdown                    func(ctx context.Context, node string, vmid, timeoutSec int, forceStop bool) (string, error)
	forceStop                   bool
	stopping                    string
}

// qemuCalls are a VM's calls; its configuration is read with pending
// changes applied.
func qemuCalls(c *pve.Client) guestCalls {
	return guestCalls{what: "VM", pveType: "qemu", status: c.QemuStatus,
		config: func(ctx context.Context, node string, vmid int) (pve.ConfigValues, error) {
			return c.QemuConfig(ctx, node, vmid, true)
		},
		stop: c.QemuStop, delete: c.QemuDelete, start: c.QemuStart, reboot: c.QemuReboot, shutdown: c.QemuShutdown,
		stopping: "stopping after the graceful shutdown timed out"}
}

// lxcCalls are a container's calls; its graceful shutdown has Proxmox stop
// it at the timeout.
func lxcCalls(c *pve.Client) guestCalls {
	return guestCalls{what: "container", pveType: "lxc", status: c.LxcStatus, config: c.LxcConfig,
		stop: c.LxcStop, delete: c.LxcDelete, start: c.LxcStart, reboot: c.LxcReboot, shutdown: c.LxcShutdown,
		forceStop: true, stopping: "stopping after the graceful shutdown"}
}

// destroyOwned stops an owned guest and deletes it, checking its
// ownership again on the cluster first; cfg is its configuration as it
// was, nil when the guest was already gone.
func (x *execCtx) destroyOwned(ctx context.Context, node string, vmid int, g guestCalls) (cfg pve.ConfigValues, err error) {
	st, err := g.status(ctx, node, vmid)
	if pve.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading %s %d: %w", g.what, vmid, err)
	}
	cfg, err = g.config(ctx, node, vmid)
	if err != nil {
		return nil, fmt.Errorf("reading %s %d: %w", g.what, vmid, err)
	}
	if !hasTag(pve.SplitTags(cfg["tags"]), OwnerTag) {
		return nil, fmt.Errorf("%s %d is not owned by proxmops (tag %s missing): not deleted", g.what, vmid, OwnerTag)
	}
	if err := x.leaveHA(ctx, st, pve.HASID(g.pveType, vmid)); err != nil {
		return nil, err
	}
	if st.Status == "running" {
		if err := x.task(ctx, "stopping before delete", func() (string, error) { return g.stop(ctx, node, vmid) }); err != nil {
			return nil, err
		}
	}
	if err := x.task(ctx, "deleting", func() (string, error) { return g.delete(ctx, node, vmid) }); err != nil {
		return nil, err
	}
	return cfg, nil
}

// destroyGuest stops an owned VM and deletes it.
func (x *execCtx) destroyGuest(ctx context.Context, node string, vmid int) error {
	c := x.e.client
	cfg, err := x.destroyOwned(ctx, node, vmid, qemuCalls(c))
	if err != nil {
		return err
	}
	// The VM's cloud-init seeds are proxmops' own volumes: they go with it.
	prefix := "proxmops-cidata-" + strconv.Itoa(vmid) + "-"
	for k, v := range cfg {
		if pd := pvefields.ParseDisk(v); pvefields.IsDiskKey(k) && pd.IsCdrom() && strings.Contains(pd.File, "/"+prefix) {
			upid, err := c.DeleteVolume(ctx, node, pvefields.StorageOf(pd.File), pd.File)
			if err == nil && upid != "" {
				_, err = c.WaitTask(ctx, upid, nil)
			}
			if err != nil && !pve.IsNotFound(err) {
				x.e.log.Warn("could not delete a cloud-init seed", "volume", pd.File, "error", err)
			}
		}
	}
	return nil
}
