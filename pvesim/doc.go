// Package pvesim is a simulated Proxmox VE cluster that speaks the Proxmox
// VE HTTP API (/api2/json) as version 9.1 does: the same envelope, status
// lines, parameter verification messages, tasks (UPIDs), locks and
// read-back normalisation. Tests, benchmarks and `proxmops sim` run against
// it instead of a real cluster.
//
// # Using it from a Go test
//
//	srv := pvesim.New(pvesim.Options{Nodes: 3, TokenID: "root@pam!proxmops", TokenSecret: "s"})
//	if err := srv.Start("127.0.0.1:0"); err != nil { ... }   // or StartTLS
//	defer srv.Close()
//	// talk to srv.APIURL() with "Authorization: PVEAPIToken=root@pam!proxmops=s"
//
// TaskSpeed 0 (the default) finishes every task before its UPID is
// returned; set TaskSpeed and a FakeClock to observe running tasks and lock
// waits deterministically. Faults (ParseFaults, SetFaults, InjectOnce)
// inject 500s, dropped connections, latency, failing tasks, lock timeouts
// and offline nodes. Requests() counts calls per method and path template;
// StateJSON/SaveState/LoadState snapshot the cluster; MutateGuest and
// AddGuest make hand-made drift and unowned guests.
//
// # Guest SSH servers
//
// With Options.GuestSSHPort set, every running guest whose NIC has a static
// address in 127.0.0.0/8 gets an SSH server on that address and port,
// accepting the keys injected at creation (a container's ssh-public-keys, a
// VM's cloud-init sshkeys for its ciuser). Commands and SFTP run confined
// to the guest's own tree, Options.GuestRoot/<vmid>/, with the host's
// system directories read-only and package-manager stand-ins recording
// installs in /var/lib/pvesim/installed-packages:
//
//	srv := pvesim.New(pvesim.Options{..., GuestSSHPort: 2222, GuestRoot: t.TempDir()})
//	// create a container with net0 ip=127.0.0.5/8 and ssh-public-keys, start it
//	addr, err := srv.GuestSSHAddr(100)    // "127.0.0.5:2222", or why there is none
//	tree := srv.GuestTree(100)            // the guest's "/" on the host
//
// Each command is this binary started again as the sandbox's init (an init
// function in package guestssh takes over when PVESIM_GUEST_SANDBOX is set),
// in new mount, PID, UTS, IPC and network namespaces. guestssh.go here says
// which guests get a server (their profiles, following the state); the
// sub-package pvesim/guestssh serves them: manager.go (servers following
// the profiles), conn.go (logins and sessions), tree.go (the tree and
// keys), pkg.go (the stand-ins), sandbox_linux.go (the confinement).
//
// # Adding an endpoint
//
// Each file serving a part of the API registers its routes from an init
// function:
//
//	func init() {
//		registerRoutes(func(s *Server) {
//			s.Handle(&Route{
//				Method:  "GET",
//				Path:    "/nodes/{node}/lxc/{vmid}/config",  // path parameters in braces
//				ProxyTo: "node",                              // the call runs on that node
//				Params: NewParams(pNode(), pVMID(),           // path parameters are parameters too
//					Bool("current").Opt().Default("0"),
//					Str("snapshot").Opt().MaxLen(40).Fmt("pve-configid"),
//				),
//				Handler: s.lxcGetConfig,
//			})
//		})
//	}
//
// Write every parameter the official schema lists for the method, with its
// rules: Str/Int/Num/Bool/Arr, then Opt, Enum, Min, Max, MinLen, MaxLen,
// Pattern (Go syntax; Proxmox anchors it), Fmt (a named format such as
// "pve-vmid", "pve-storage-id", "pve-tag-list"; "-list" and "-opt" suffixes
// work for check formats), Props (a property string: Props(keys...) with
// DefaultKey, Alias and KeyAlias keys), Indexed(max) for families such as
// scsi[n], and Requires. RegisterFormat and RegisterPropFormat add named
// formats. The framework then refuses bad input exactly as Proxmox does
// (400 "Parameter verification failed." with per-parameter messages), so a
// handler only sees valid parameters, as strings, in r.Params (r.Int,
// r.Bool, r.Has help).
//
// A handler runs with the server's state lock held and returns the value
// for "data" (use Result for "total"), or an error: Fail for a 500 with
// Proxmox's message, ParamErr/ParamError for a 400, Failf for another
// status. Asynchronous calls return s.startTask(r, node, "qmstart", id,
// body): the body runs as the task (instantly with TaskSpeed 0, otherwise
// in the background), uses tc.Sleep for realistic durations, tc.LockGuest
// to take the guest's config lock (waiting, then failing with "can't lock
// file ... got timeout"), tc.Log for the task log, and returns an error to
// fail the task with that exit status. Synchronous calls that need the lock
// use s.withGuestLock.
//
// Cached answers (GET /cluster/resources) are rebuilt after any change of
// state: non-GET requests, task steps and the exported Go API mark one
// (Server.touch); new code that changes state elsewhere must call touch.
//
// # Where things are
//
// Guests are split by verb, QEMU and LXC side by side in one file per verb:
// guest_create.go, guest_clone.go (templates and clones), guest_config.go
// (config, pending, updates), guest_resize.go, guest_power.go,
// guest_snapshot.go, guest_delete.go, guest_status.go (lists and status) and
// guest_perms.go (in-handler privilege checks). qemu.go and lxc.go hold each
// type's routes and its small specifics; qemu_params.go and lxc_params.go the
// parameter tables; qemu_config.go and qemu_boot.go QEMU's config read-back
// and kvm command line; guest.go, snapshots.go and volumes.go the shared
// guest, snapshot and disk-image model. Storage (storage.go, with
// storage_content.go for content, storage_download.go for downloads and
// uploads and storage_config.go for storage.cfg changes), network
// (network.go, network_file.go for the interfaces file), sdn (sdn.go,
// sdn_write.go for changes), pools, ha (ha_rules.go for PVE 9's rules),
// backup jobs (backup_jobs.go; calendar events are internal/calendarevent;
// the firewall's names are internal/pvefirewall),
// access and perms each have their own files; state_cluster.go holds the
// state of the cluster-wide configuration; server.go, router.go,
// formats.go, validate.go and tasks.go are the framework, with the
// parameter schema, the error
// answers and the named-format registry in the sub-package pvesim/route
// (params.go, errors.go and formats.go here name them for the endpoint
// files).
//
// Read-back typing follows the parameter definitions: typedValue turns
// config strings into JSON numbers for integer, number and boolean keys.
package pvesim
