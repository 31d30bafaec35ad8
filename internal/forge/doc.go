// Package forge posts plan previews on pull requests (GitLab: merge
// requests): it reads the forges' pull-request webhooks (event.go), plans
// the request's head read-only through the caller's plan function, renders
// the plan as Markdown (markdown.go), keeps one comment per request up to
// date (found again by a hidden marker, never posted twice) and sets the
// commit status proxmops/plan (previews.go).
//
// Each forge is one file over its maintained Go client: github.go
// (google/go-github), gitea.go (code.gitea.io/sdk/gitea, Forgejo too) and
// gitlab.go (gitlab.com/gitlab-org/api/client-go). Rate limits are waited
// out a bounded number of times (retry.go).
package forge
