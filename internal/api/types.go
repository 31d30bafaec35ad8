package api

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/proxmops/proxmops/internal/manifest"
	"github.com/proxmops/proxmops/internal/vocab"
)

// HistoryEvent names what happened to a resource.
type HistoryEvent string

// History events.
const (
	EventCreated HistoryEvent = "created"
	EventDrifted HistoryEvent = "drifted"
	EventSynced  HistoryEvent = "synced"
	EventApplied HistoryEvent = "applied"
	EventFailed  HistoryEvent = "failed"
	EventDeleted HistoryEvent = "deleted"
	// EventRolledBack: a person rolled the guest back to a snapshot.
	EventRolledBack HistoryEvent = "rolledBack"
	// EventAdopted: proxmops took ownership of a guest it did not make
	// (annotation proxmops.dev/adopt).
	EventAdopted HistoryEvent = "adopted"
	// EventMoved: the guest is on another node than before (HA or a
	// migration moved it); proxmops left it there.
	EventMoved HistoryEvent = "moved"
	// EventHealth: the guest's health check changed its verdict (Healthy,
	// Progressing or Degraded, the message says which and why).
	EventHealth HistoryEvent = "health"
)

// HistoryEvents lists the history events in documented order.
var HistoryEvents = []HistoryEvent{EventCreated, EventDrifted, EventSynced, EventApplied, EventFailed, EventDeleted, EventRolledBack, EventAdopted, EventMoved, EventHealth}

// ActorKind says what started an action or wrote a history entry.
type ActorKind string

// Actor kinds.
const (
	// ActorPass: the reconcile loop on its own (auto-sync, a scheduled
	// pass, a re-scan).
	ActorPass ActorKind = "pass"
	// ActorUser: a person logged in to the UI or API (Name; Via "oidc"
	// when they logged in by single sign-on).
	ActorUser ActorKind = "user"
	// ActorToken: an API token (Name is the token's name).
	ActorToken ActorKind = "token"
	// ActorWebhook: a forge's webhook (Name is the forge, Delivery its
	// delivery id).
	ActorWebhook ActorKind = "webhook"
	// ActorCLI: a proxmops command (Name is the OS user; Token the API
	// token it acted through, when it went through the daemon).
	ActorCLI ActorKind = "cli"
	// ActorCommit: the author of the commit whose manifest asked for it
	// (an adoption annotation).
	ActorCommit ActorKind = "commit"
)

// ActorKinds lists the actor kinds in documented order.
var ActorKinds = []ActorKind{ActorPass, ActorUser, ActorToken, ActorWebhook, ActorCLI, ActorCommit}

// Actor is what started something. Its parts are data, never a string
// convention: a token named "alice" is not the user alice.
type Actor struct {
	Kind ActorKind `json:"kind"`
	// Name: the user, the token, the forge (github, gitea, gitlab), the
	// OS user of a command, a commit's author.
	Name string `json:"name,omitempty"`
	// Via is how a user logged in when not with a local password: "oidc".
	Via string `json:"via,omitempty"`
	// Delivery is a webhook's delivery id (X-GitHub-Delivery,
	// X-Gitea-Delivery, X-Gitlab-Event-UUID).
	Delivery string `json:"delivery,omitempty"`
	// Token is the API token the CLI acted through.
	Token string `json:"token,omitempty"`
}

// Via values.
const ViaOIDC = "oidc"

// PassActor is the reconcile loop.
var PassActor = Actor{Kind: ActorPass}

// String is the actor for a log line: "user alice (OIDC)", "token ci",
// "webhook github delivery 1f2e", "cli alice (token laptop)", "pass".
func (a Actor) String() string {
	s := string(a.Kind)
	if a.Name != "" {
		s += " " + a.Name
	}
	if a.Via == ViaOIDC {
		s += " (OIDC)"
	}
	if a.Delivery != "" {
		s += " delivery " + a.Delivery
	}
	if a.Token != "" {
		s += " (token " + a.Token + ")"
	}
	return s
}

type actorKey struct{}

// WithActor returns ctx carrying who asks for the work started under it.
func WithActor(ctx context.Context, a Actor) context.Context {
	return context.WithValue(ctx, actorKey{}, a)
}

// ActorFrom is the actor ctx carries (WithActor), else the pass.
func ActorFrom(ctx context.Context) Actor {
	if a, ok := ctx.Value(actorKey{}).(Actor); ok {
		return a
	}
	return PassActor
}

// Role is what an account or API token may do.
type Role string

// Roles of accounts and API tokens.
const (
	RoleAdmin  Role = "admin"  // everything
	RoleViewer Role = "viewer" // read only
)

// Roles lists the roles in documented order.
var Roles = []Role{RoleAdmin, RoleViewer}

// Valid reports whether r is one of the roles.
func (r Role) Valid() bool { return slices.Contains(Roles, r) }

// Check is the error for a role that is not one of Roles, naming them.
func (r Role) Check() error {
	if r.Valid() {
		return nil
	}
	names := make([]string, len(Roles))
	for i, role := range Roles {
		names[i] = strconv.Quote(string(role))
	}
	return fmt.Errorf("role %q must be %s or %s", r, strings.Join(names[:len(names)-1], ", "), names[len(names)-1])
}

// Errors a Backend returns so that the server answers with the right status:
// ErrNotFound 404, ErrNotOwned 409, ErrConflict 409, ErrNotReady 503,
// ErrInvalid 400. Wrap them (fmt.Errorf("...: %w", api.ErrNotOwned)) to
// give the words the user reads.
var (
	ErrNotFound = errors.New("not found")
	ErrNotOwned = errors.New("not owned by proxmops")
	ErrConflict = errors.New("conflict")
	ErrNotReady = errors.New("not ready")
	ErrInvalid  = errors.New("invalid request")
)

// Progress describes an action that is running. Percent is absent when unknown.
type Progress struct {
	Task    string `json:"task,omitempty"`
	Message string `json:"message"`
	Percent *int   `json:"percent,omitempty"`
}

// ResourceSummary is one entry of GET /api/v1/resources and the data of the
// SSE event "resource".
type ResourceSummary struct {
	// Cluster names the cluster the resource belongs to ("default" for
	// the single cluster section).
	Cluster string `json:"cluster"`
	Kind    string `json:"kind"`
	Name    string `json:"name"`
	Node    string `json:"node,omitempty"`
	// ManifestNode is the node metadata.node names when the guest is on
	// another one (Node): moved by HA or a migration, left where it is
	// and counted as in sync.
	ManifestNode string           `json:"manifestNode,omitempty"`
	VMID         int              `json:"vmid,omitempty"`
	Tags         []string         `json:"tags"`
	Status       vocab.Status     `json:"status"`
	Health       vocab.Health     `json:"health"`
	Action       vocab.Action     `json:"action"`
	Reason       string           `json:"reason"`
	NeedsReboot  bool             `json:"needsReboot"`
	Changes      []vocab.Change   `json:"changes"`
	Owned        bool             `json:"owned"`
	SyncPolicy   vocab.SyncPolicy `json:"syncPolicy"`
	File         string           `json:"file"`
	// Summary says in a line what the manifest declares, for kinds without
	// tags (a backup job's schedule and guests; manifest.Summary).
	Summary string `json:"summary,omitempty"`
	// DependsOn lists the declared resources this one needs, from its
	// manifest (controller.dependenciesOf); absent when it needs none.
	DependsOn []Dependency `json:"dependsOn,omitempty"`
	// Waiting, when set, says the resource is not created or started yet:
	// a resource its metadata.dependsOn names is not in sync and healthy.
	Waiting   *Wait     `json:"waiting,omitempty"`
	Progress  *Progress `json:"progress,omitempty"`
	UpdatedAt time.Time `json:"updatedAt"`
	// LastObserved is set while the cluster cannot be observed (status
	// Unknown): when what is shown was last read from the cluster (absent:
	// never, e.g. a resource of a commit loaded during the outage).
	LastObserved *time.Time `json:"lastObserved,omitempty"`
}

// Dependency is one edge of the dependency graph: the resource needs the
// declared resource Kind/Name, in the way Relation says; or, Kind
// DependencyNode, it places guests on the Proxmox node Name
// (RelationPrefers or RelationOnlyOn, with the node's Priority).
type Dependency struct {
	Kind     string   `json:"kind"`
	Name     string   `json:"name"`
	Relation Relation `json:"relation"`
	// Priority is a node's priority in an HA rule (higher first); absent
	// when 0 and for any other dependency.
	Priority int `json:"priority,omitempty"`
}

// DependencyNode is the Kind of a Dependency on a Proxmox node: a node is
// no declared resource, so the graph shows it only grouped by node.
const DependencyNode = "Node"

// Relation says how a resource needs another (manifest.Relation, read from
// the reference, or else the kind table: the target kind's row's).
type Relation = manifest.Relation

// Relations of a Dependency.
const (
	RelationClones      = manifest.RelationClones
	RelationMounts      = manifest.RelationMounts
	RelationBuilt       = manifest.RelationBuilt
	RelationUses        = manifest.RelationUses
	RelationZone        = manifest.RelationZone
	RelationProtectedBy = manifest.RelationProtectedBy
	RelationStoredOn    = manifest.RelationStoredOn
	RelationBacksUp     = manifest.RelationBacksUp
	RelationExcludes    = manifest.RelationExcludes
	RelationPlaces      = manifest.RelationPlaces
	RelationPrefers     = manifest.RelationPrefers
	RelationOnlyOn      = manifest.RelationOnlyOn
	RelationDependsOn   = manifest.RelationDependsOn
)

// Relations lists the relations in the order a resource's dependencies
// are listed.
var Relations = manifest.Relations

// PassStatus is where a cluster's passes stand: ClusterStatus says it of
// each cluster, ResourceList of them all (summed or joined).
type PassStatus struct {
	Revision        string     `json:"revision"`
	RevisionMessage string     `json:"revisionMessage"`
	LastPass        *time.Time `json:"lastPass"`
	PassDurationMs  int64      `json:"passDurationMs"`
	// SourceError lists what keeps the source from being read (settings,
	// Git); a head whose manifests fail to load is LoadError instead.
	SourceError string `json:"sourceError"`
	// ClusterError says why the cluster could not be observed by the last
	// pass (settings, connection, TLS pin, authentication); "" when it was.
	ClusterError string `json:"clusterError"`
	// LastObserved is when the cluster was last observed in full (null:
	// not since the daemon started).
	LastObserved *time.Time `json:"lastObserved"`
	// LoadError is set while the branch head fails to load (see Plan).
	LoadError *LoadError           `json:"loadError,omitempty"`
	Counts    map[vocab.Status]int `json:"counts"`
	// Pinned is the revision applied instead of the branch head, if any.
	Pinned *Pin `json:"pinned,omitempty"`
}

// ResourceList is the document of GET /api/v1/resources and the data of the
// SSE event "snapshot". LastPass is null before the first pass.
type ResourceList struct {
	PassStatus
	Resources []ResourceSummary `json:"resources"`
	// Clusters is each cluster's own pass status, in configuration order;
	// the fields of PassStatus sum or join them.
	Clusters []ClusterStatus `json:"clusters,omitempty"`
}

// ResourceDetail is the document of GET /api/v1/resources/{kind}/{name}.
// Desired is null for a resource found only on the cluster; Observed is null
// when the resource does not exist on the cluster. The server fills History
// from the store; a backend leaves it nil.
type ResourceDetail struct {
	ResourceSummary
	Desired  any            `json:"desired"`
	Observed any            `json:"observed"`
	History  []HistoryEntry `json:"history"`
	// ConfigReadAt is when the daemon last read the guest's full
	// configuration (reconcile.driftCheckInterval); nil for a resource
	// that is not a guest or was not read yet.
	ConfigReadAt *time.Time `json:"configReadAt,omitempty"`
	// FieldPaths maps the observed Proxmox keys to the manifest fields they
	// come from, for kinds whose keys differ from the manifest's names
	// (pvefields.FieldPaths): Network, SdnZone, SdnVnet.
	FieldPaths map[string]string `json:"fieldPaths,omitempty"`
}

// Manifest is GET /api/v1/resources/{kind}/{name}/manifest: the resource's
// YAML document as it is in Git at the loaded revision.
type Manifest struct {
	Kind     string `json:"kind"`
	Name     string `json:"name"`
	File     string `json:"file"`
	Line     int    `json:"line"`
	Revision string `json:"revision"`
	Text     string `json:"text"`
}

// Live is GET /api/v1/resources/{kind}/{name}/live: what Proxmox answers
// for the resource now (a guest's config, read at request time), or, for
// kinds without one config to read, what the last pass observed.
type Live struct {
	Kind string `json:"kind"`
	Name string `json:"name"`
	// Source is "proxmox" (read now from Path) or "last pass".
	Source string         `json:"source"`
	Path   string         `json:"path,omitempty"`
	Time   time.Time      `json:"time"`
	Data   map[string]any `json:"data"`
}

// SyncOptions are the body of POST /api/v1/sync and
// POST /api/v1/resources/{kind}/{name}/sync, for that sync only.
type SyncOptions struct {
	// Prune deletes owned resources no longer declared (as reconcile.prune).
	Prune bool `json:"prune"`
	// DryRun changes nothing: the answer is the plan of the sync.
	DryRun bool `json:"dryRun"`
	// Reboot applies changes that need a reboot by rebooting (as applyMode: reboot).
	Reboot bool `json:"reboot"`
}

// TaskLog is GET /api/v1/resources/{kind}/{name}/tasklog: the log of the
// last Proxmox task of the resource's actions, as Proxmox has it now.
type TaskLog struct {
	Task    string   `json:"task"`
	Running bool     `json:"running"`
	Lines   []string `json:"lines"`
}

// AdoptRequest is the optional body of POST
// /api/v1/resources/{kind}/{name}/adopt: with dryRun the adoption is only
// planned.
type AdoptRequest struct {
	DryRun bool `json:"dryRun"`
}

// AdoptResult answers POST /api/v1/resources/{kind}/{name}/adopt.
type AdoptResult struct {
	Kind     string `json:"kind"`
	Name     string `json:"name"`
	Node     string `json:"node"`
	VMID     int    `json:"vmid"`
	Revision string `json:"revision"`
	DryRun   bool   `json:"dryRun"`
	Adopted  bool   `json:"adopted"`
	// Plan is the guest's plan with the adoption: the ownership tag, then
	// the ordinary updates a sync applies afterwards.
	Plan    PlanAction `json:"plan"`
	Message string     `json:"message"`
}

// HistoryEntry is one recorded event of a resource.
type HistoryEntry struct {
	ID      int64        `json:"id"`
	Event   HistoryEvent `json:"event"`
	Commit  string       `json:"commit"`
	Time    time.Time    `json:"time"`
	Message string       `json:"message"`
	// Actor is what started the event: the pass, a user, an API token, a
	// webhook delivery, the CLI or a commit's author; nil for entries
	// recorded before proxmops kept it.
	Actor *Actor `json:"actor,omitempty"`
	// Kind and Name say whose event it is in a listing across resources
	// (GET /api/v1/revisions/{commit}/history); absent in a resource's own.
	Kind string `json:"kind,omitempty"`
	Name string `json:"name,omitempty"`
	// Cluster is the resource's cluster of a clusters list in such a
	// listing (absent for the single cluster section).
	Cluster string `json:"cluster,omitempty"`
}

// CommitHistory is GET /api/v1/revisions/{commit}/history: what was
// recorded at one commit, newest first, each entry naming its resource.
type CommitHistory struct {
	Commit  string         `json:"commit"`
	Entries []HistoryEntry `json:"entries"`
}

// Plan is the plan document of GET /api/v1/plan and `proxmops plan --output json`;
// the engine builds it (engine.Plan.Document) for both.
type Plan struct {
	// Cluster is set on one cluster's plan; a plan of several clusters
	// leaves it empty and names the cluster of each action.
	Cluster  string       `json:"cluster,omitempty"`
	Revision string       `json:"revision"`
	Summary  PlanSummary  `json:"summary"`
	Actions  []PlanAction `json:"actions"`
	// LoadError is set when the watched branch's head failed to load: the
	// plan is then the last good revision's (Revision), not the head's.
	LoadError *LoadError `json:"loadError,omitempty"`
}

// LoadError says that a commit's manifests could not be loaded, one error
// per item (file:line:column: message).
type LoadError struct {
	Revision string   `json:"revision"`
	Errors   []string `json:"errors"`
}

// PlanSummary counts a plan two ways. Statuses puts every resource in
// exactly one status (vocab.Count, as the resource list counts them); in
// sync means Synced only. Create, Update, Reboot and Delete count the
// actions a sync would carry out (OutOfSync, not blocked): a create that
// cannot be planned is Failed, not "to create". Conflict, Failed and
// Unknown repeat their status counts; NeedsReboot counts resources whose
// changes wait for a reboot that is not planned.
type PlanSummary struct {
	Create      int `json:"create"`
	Update      int `json:"update"`
	Reboot      int `json:"reboot"`
	Delete      int `json:"delete"`
	Conflict    int `json:"conflict"`
	Failed      int `json:"failed"`
	Unknown     int `json:"unknown"`
	NeedsReboot int `json:"needsReboot"`
	// Statuses has every status as a key, zero included.
	Statuses map[vocab.Status]int `json:"statuses"`
}

// Changed is the number of actions that would change the cluster.
func (s PlanSummary) Changed() int { return s.Create + s.Update + s.Reboot + s.Delete }

// InSync is the number of resources that are Synced.
func (s PlanSummary) InSync() int { return s.Statuses[vocab.StatusSynced] }

// PlanAction is one resource's entry in a plan. A conflict has Action "none"
// and Status Conflict.
type PlanAction struct {
	Cluster     string         `json:"cluster,omitempty"`
	Kind        string         `json:"kind"`
	Name        string         `json:"name"`
	Node        string         `json:"node,omitempty"`
	VMID        int            `json:"vmid,omitempty"`
	Action      vocab.Action   `json:"action"`
	Reason      string         `json:"reason"`
	Changes     []vocab.Change `json:"changes"`
	NeedsReboot bool           `json:"needsReboot"`
	BlockedBy   string         `json:"blockedBy"`
	// Waiting, when set, holds the action this pass: it creates or starts
	// the resource, and a resource its metadata.dependsOn names is not in
	// sync and healthy yet.
	Waiting *Wait `json:"waiting,omitempty"`
	// Status is the one status the summary counts the resource under: an
	// action that cannot be carried out (a create on a storage that does not
	// exist) is Failed or Unknown here, as the text's "(cannot be planned)".
	Status vocab.Status `json:"status,omitempty"`
	// HA is the guest's HA resource id ("vm:120") when the Proxmox HA stack
	// manages it; its power changes are requested from the HA stack.
	HA string `json:"ha,omitempty"`
	// ManifestNode is the node metadata.node names when the guest is on
	// another one (Node): moved by HA or a migration, left where it is.
	ManifestNode string `json:"manifestNode,omitempty"`
}

// Wait is what a held action waits for (metadata.dependsOn): the
// resource, and its status and health when the plan was made. It waits
// until the resource is Synced and Healthy.
type Wait struct {
	Resource string       `json:"resource"` // "Kind/name"
	Status   vocab.Status `json:"status"`
	Health   vocab.Health `json:"health"`
	// Sync is the resource's sync policy when it is not auto (manual,
	// disabled): only a user brings it in sync.
	Sync vocab.SyncPolicy `json:"sync,omitempty"`
}

// SSE event types of GET /api/v1/events and GET /api/v1/logs/stream.
const (
	SSEResource = "resource" // data: ResourceSummary
	SSEPass     = "pass"     // data: PassEvent
	SSEDeleted  = "deleted"  // data: DeletedEvent
	SSESnapshot = "snapshot" // data: ResourceList
	SSELog      = "log"      // data: LogLine
)

// PassEvent is the data of the SSE event "pass", sent after every pass.
type PassEvent struct {
	Cluster  string `json:"cluster"`
	Revision string `json:"revision"`
	// RevisionMessage is the revision's commit subject, as in ResourceList:
	// a reader that learns a new revision from this event can name it.
	RevisionMessage string `json:"revisionMessage"`
	// PassDurationMs is how long the pass took.
	PassDurationMs int64                `json:"passDurationMs"`
	LastPass       time.Time            `json:"lastPass"`
	Counts         map[vocab.Status]int `json:"counts"`
	SourceError    string               `json:"sourceError"`
	// ClusterError and LastObserved are as in ResourceList.
	ClusterError string     `json:"clusterError"`
	LastObserved *time.Time `json:"lastObserved"`
	// LoadError is the branch head's load failure (null: it loaded), as in
	// ResourceList, so a stream reader learns when it starts and ends.
	LoadError *LoadError `json:"loadError"`
	// Pinned is the revision applied instead of the branch head (null: none).
	Pinned *Pin `json:"pinned"`
}

// DeletedEvent is the data of the SSE event "deleted".
type DeletedEvent struct {
	Cluster string `json:"cluster"`
	Kind    string `json:"kind"`
	Name    string `json:"name"`
}

// LogLevel is how severe a log line is: log/slog's level names.
type LogLevel string

// Levels of a log line.
const (
	LogDebug LogLevel = "DEBUG"
	LogInfo  LogLevel = "INFO"
	LogWarn  LogLevel = "WARN"
	LogError LogLevel = "ERROR"
)

// LogLevels lists the log levels, least severe first.
var LogLevels = []LogLevel{LogDebug, LogInfo, LogWarn, LogError}

// LogLine is one line of the daemon's log as served by /api/v1/logs.
type LogLine struct {
	ID    int64          `json:"id"`
	Time  time.Time      `json:"time"`
	Level LogLevel       `json:"level"`
	Msg   string         `json:"msg"`
	Attrs map[string]any `json:"attrs,omitempty"`
}

// LogLines is the document of GET /api/v1/logs.
type LogLines struct {
	Lines []LogLine `json:"lines"`
}

// Me is the document of GET /api/v1/me, POST /api/v1/login and POST /api/v1/setup.
type Me struct {
	Username  string `json:"username"`
	Role      Role   `json:"role"`
	CSRFToken string `json:"csrfToken"`
	// Via is "oidc" for a user logged in by single sign-on.
	Via string `json:"via,omitempty"`
}

// AuthMethods is GET /api/v1/auth: how one may log in.
type AuthMethods struct {
	Password bool `json:"password"`
	// OIDC is set when single sign-on is configured.
	OIDC *OIDCMethod `json:"oidc,omitempty"`
}

// OIDCMethod is the single sign-on button: the provider's name and where
// the browser goes to start.
type OIDCMethod struct {
	Name     string `json:"name"`
	LoginURL string `json:"loginURL"`
}

// User is one account as listed by GET /api/v1/users.
type User struct {
	Username  string    `json:"username"`
	Role      Role      `json:"role"`
	CreatedAt time.Time `json:"createdAt"`
}

// Token is one API token as listed by GET /api/v1/tokens (never the secret).
type Token struct {
	ID         string     `json:"id"`
	Name       string     `json:"name"`
	Role       Role       `json:"role"`
	CreatedAt  time.Time  `json:"createdAt"`
	LastUsedAt *time.Time `json:"lastUsedAt"`
}

// NewToken is the answer of POST /api/v1/tokens: the only time Token is shown.
type NewToken struct {
	ID    string `json:"id"`
	Name  string `json:"name"`
	Role  Role   `json:"role"`
	Token string `json:"token"`
}

// Check is one line of a check report (GET /api/v1/check, POST
// /api/v1/settings/test, proxmops check): Level is OK, WARN or FAIL; OK is
// false for FAIL only; Fix says what to do when Level is not OK.
type Check struct {
	Name    string     `json:"name"`
	OK      bool       `json:"ok"`
	Level   CheckLevel `json:"level"`
	Message string     `json:"message"`
	Fix     string     `json:"fix,omitempty"`
}

// CheckLevel is how a Check came out.
type CheckLevel string

// Levels of a Check.
const (
	CheckOK   CheckLevel = "OK"
	CheckWarn CheckLevel = "WARN"
	CheckFail CheckLevel = "FAIL"
)

// CheckLevels lists the levels, best first.
var CheckLevels = []CheckLevel{CheckOK, CheckWarn, CheckFail}

// TestResult is a check report: OK is false when any check is FAIL.
type TestResult struct {
	OK     bool    `json:"ok"`
	Checks []Check `json:"checks"`
}

// Error is the body of every error answer.
type Error struct {
	Error string `json:"error"`
}

// Secret markers of the settings document: the API never returns a secret.
const (
	SecretSet    = "set"
	SecretNotSet = "not set"
)

// SettingsDocument is the document of GET and PUT /api/v1/settings, with
// the configuration file's keys. Secret fields (tokenSecret, token, sshKey)
// read "set" or "not set". Warnings, in answers only, are the configuration's
// advice (an insecure option, a plain-http Git URL with a token).
type SettingsDocument struct {
	Cluster   ClusterSettings   `json:"cluster"`
	Source    SourceSettings    `json:"source"`
	Reconcile ReconcileSettings `json:"reconcile"`
	Forge     ForgeSettings     `json:"forge"`
	Warnings  []string          `json:"warnings,omitempty"`
}

// ForgeSettings is the "forge" section of the settings document (token:
// "set" or "not set").
type ForgeSettings struct {
	Type                string `json:"type"`
	APIURL              string `json:"apiURL"`
	Repository          string `json:"repository"`
	Token               string `json:"token"`
	PullRequestPreviews bool   `json:"pullRequestPreviews"`
}

// ClusterSettings is the "cluster" section of the settings document.
type ClusterSettings struct {
	Endpoint           string `json:"endpoint"`
	TokenID            string `json:"tokenId"`
	TokenSecret        string `json:"tokenSecret"`
	InsecureSkipVerify bool   `json:"insecureSkipVerify"`
	Fingerprint        string `json:"fingerprint"`
	CAFile             string `json:"caFile"`
}

// SourceSettings is the "source" section of the settings document.
type SourceSettings struct {
	RepoURL               string `json:"repoURL"`
	Path                  string `json:"path"`
	Revision              string `json:"revision"`
	Username              string `json:"username"`
	Token                 string `json:"token"`
	SSHKey                string `json:"sshKey"`
	KnownHostsFile        string `json:"knownHostsFile"`
	InsecureIgnoreHostKey bool   `json:"insecureIgnoreHostKey"`
	Submodules            bool   `json:"submodules"`
}

// ReconcileSettings is the "reconcile" section of the settings document.
type ReconcileSettings struct {
	Interval           string `json:"interval"`
	AutoSync           bool   `json:"autoSync"`
	Prune              bool   `json:"prune"`
	Concurrency        int    `json:"concurrency"`
	DryRun             bool   `json:"dryRun"`
	DriftCheckInterval string `json:"driftCheckInterval"`
	HistoryPerResource int    `json:"historyPerResource"`
	HistoryTotal       int    `json:"historyTotal"`
}

// PullRequest is one open pull request (GitLab: merge request) and the
// last plan of its head, as GET /api/v1/previews lists them.
type PullRequest struct {
	Forge  string `json:"forge"`
	Number int64  `json:"number"`
	Title  string `json:"title"`
	URL    string `json:"url"`
	// HeadRef is the ref fetched (refs/pull/N/head); Commit the commit the
	// webhook named and Planned the one planned (they differ only while a
	// newer push is on its way).
	HeadRef string `json:"headRef"`
	Commit  string `json:"commit"`
	Planned string `json:"planned"`
	// State is the commit status set: pending while planning, success,
	// failure (the plan cannot be carried out as it is) or error (no plan
	// could be made); Description is its text.
	State       string    `json:"state"`
	Description string    `json:"description"`
	Errors      []string  `json:"errors"`
	Plan        *Plan     `json:"plan"`
	UpdatedAt   time.Time `json:"updatedAt"`
	// CommentURL is the plan's comment on the forge ("" until posted).
	CommentURL string `json:"commentURL"`
}

// PullRequestList is the document of GET /api/v1/previews.
type PullRequestList struct {
	Enabled  bool          `json:"enabled"`
	Requests []PullRequest `json:"requests"`
}
