// Compatibility tests against Proxmox clients written by others, kept in a
// module of their own so the clients' dependencies never reach proxmops'
// go.mod. `make test` runs them.
module github.com/proxmops/proxmops/pvesim/compat

go 1.26.0

require (
	github.com/luthermonson/go-proxmox v0.9.0
	github.com/proxmops/proxmops v0.0.0
)

require (
	github.com/buger/goterm v1.0.4 // indirect
	github.com/diskfs/go-diskfs v1.9.4 // indirect
	github.com/djherbis/times v1.6.0 // indirect
	github.com/gorilla/websocket v1.4.2 // indirect
	github.com/jinzhu/copier v0.3.4 // indirect
	github.com/kr/fs v0.1.0 // indirect
	github.com/magefile/mage v1.14.0 // indirect
	github.com/pkg/sftp v1.13.12 // indirect
	golang.org/x/crypto v0.59.0 // indirect
	golang.org/x/sys v0.50.0 // indirect
)

replace github.com/proxmops/proxmops => ../..
