package packaging_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// The forge's workflows under .github/workflows pass actionlint (pinned in
// tools/go.mod), which also runs shellcheck on their run: scripts.
func TestWorkflowsAreActionlintClean(t *testing.T) {
	if testing.Short() {
		t.Skip("builds actionlint")
	}
	cmd := exec.Command("go", "tool", "-modfile=tools/go.mod", "actionlint", "-color=false")
	cmd.Dir = repoRoot(t)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("actionlint: %v\n%s", err, out)
	}
}

// workflow is the part of a workflow file these tests follow.
type workflow struct {
	On   map[string]any `yaml:"on"`
	Jobs map[string]struct {
		Uses  string `yaml:"uses"`
		Needs any    `yaml:"needs"`
		Steps []struct {
			Uses string            `yaml:"uses"`
			Run  string            `yaml:"run"`
			Env  map[string]string `yaml:"env"`
		} `yaml:"steps"`
	} `yaml:"jobs"`
}

func readWorkflow(t *testing.T, name string) workflow {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(repoRoot(t), ".github", "workflows", name))
	if err != nil {
		t.Fatal(err)
	}
	var w workflow
	if err := yaml.Unmarshal(data, &w); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return w
}

// The test workflow runs on pushes and pull requests, the same entry point
// as CI here; a v* tag releases only after it passed, with GoReleaser, and
// publishes what the README and the installer fetch.
func TestReleaseWorkflowTestsThenPublishesTheNamesTheDocsUse(t *testing.T) {
	ci := readWorkflow(t, "ci.yml")
	for _, event := range []string{"push", "pull_request", "workflow_call"} {
		if _, ok := ci.On[event]; !ok {
			t.Errorf("ci.yml does not run on %s", event)
		}
	}
	ranCI := false
	for _, job := range ci.Jobs {
		for _, s := range job.Steps {
			ranCI = ranCI || strings.TrimSpace(s.Run) == "bash .ci/run"
		}
	}
	if !ranCI {
		t.Error("ci.yml does not run .ci/run, CI's entry point")
	}

	rel := readWorkflow(t, "release.yml")
	push, _ := rel.On["push"].(map[string]any)
	if tags, _ := push["tags"].([]any); !slices.Contains(tags, any("v*")) {
		t.Errorf("release.yml runs on %v, want tags v*", rel.On)
	}
	if rel.Jobs["test"].Uses != "./.github/workflows/ci.yml" {
		t.Errorf("release.yml's test job uses %q, want the test workflow", rel.Jobs["test"].Uses)
	}
	job, ok := rel.Jobs["release"]
	if !ok || job.Needs != "test" {
		t.Fatalf("release.yml's release job does not need the test job: %+v", job)
	}
	released := false
	for _, s := range job.Steps {
		released = released || strings.Contains(s.Run, "go tool -modfile=tools/go.mod goreleaser release --clean")
	}
	if !released {
		t.Error("release.yml does not run the pinned GoReleaser")
	}

	c := readGoreleaser(t)
	readme, err := os.ReadFile(filepath.Join(repoRoot(t), "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	ha, err := os.ReadFile(filepath.Join(repoRoot(t), "docs", "ha.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range c.DockersV2 {
		for _, image := range d.Images {
			if !strings.Contains(string(readme), "-v proxmops:/data "+image) {
				t.Errorf("the README's docker run does not use the published image %s", image)
			}
			if !strings.Contains(string(ha), "image: "+image+":latest") {
				t.Errorf("docs/ha.md's Compose file does not use the published image %s", image)
			}
		}
	}
	if !slices.ContainsFunc(c.Release.ExtraFiles, func(f struct {
		Glob string `yaml:"glob"`
	}) bool {
		return f.Glob == "packaging/install.sh"
	}) {
		t.Error("the release does not publish install.sh, which the README's install line fetches")
	}
}
