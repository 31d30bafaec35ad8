package pvesim

// clusterExt is the part of the cluster state added for cluster-wide
// configuration: what storage plugins keep beside storage.cfg, the backup
// jobs of jobs.cfg and the HA rules of rules.cfg. It is saved with --state.
type clusterExt struct {
	// StorageSecrets are the sensitive properties of each storage
	// (/etc/pve/priv/storage/<id>.pw, .enc, .master.pem for PBS;
	// <id>.pw for CIFS): written by POST and PUT /storage, never read back.
	StorageSecrets map[string]map[string]string `json:"storageSecrets,omitempty"`
	// BackupJobs are jobs.cfg's vzdump sections by id, each with the keys
	// written ("type" is always "vzdump"); BackupJobOrder their order.
	BackupJobs     map[string]map[string]string `json:"backupJobs,omitempty"`
	BackupJobOrder []string                     `json:"backupJobOrder,omitempty"`
	// HARules are rules.cfg's sections by rule id ("type" included);
	// HARuleOrder their order in the file.
	HARules     map[string]map[string]string `json:"haRules,omitempty"`
	HARuleOrder []string                     `json:"haRuleOrder,omitempty"`
}
