package forge

import (
	"net/http"
	"testing"
)

func TestWebhookActionsDecideWhatIsPlanned(t *testing.T) {
	gh := func(action string) string {
		return `{"action":"` + action + `","number":4,"pull_request":{"title":"t","html_url":"u","head":{"sha":"abc"}},"repository":{"full_name":"o/r"}}`
	}
	gl := func(action, oldrev string) string {
		return `{"object_kind":"merge_request","project":{"path_with_namespace":"g/s/p"},"object_attributes":{"iid":5,"action":"` +
			action + `","oldrev":"` + oldrev + `","last_commit":{"id":"def"}}}`
	}
	for _, c := range []struct {
		forge, body string
		op          int
		ref         string
	}{
		{"github", gh("opened"), opPlan, "refs/pull/4/head"},
		{"github", gh("reopened"), opPlan, "refs/pull/4/head"},
		{"github", gh("synchronize"), opPlan, "refs/pull/4/head"},
		{"github", gh("closed"), opClose, "refs/pull/4/head"},
		{"github", gh("edited"), opNone, "refs/pull/4/head"},
		{"github", gh("labeled"), opNone, "refs/pull/4/head"},
		{"gitea", gh("synchronized"), opPlan, "refs/pull/4/head"},
		{"gitlab", gl("open", ""), opPlan, "refs/merge-requests/5/head"},
		{"gitlab", gl("reopen", ""), opPlan, "refs/merge-requests/5/head"},
		{"gitlab", gl("update", "aaa"), opPlan, "refs/merge-requests/5/head"},
		{"gitlab", gl("update", ""), opNone, "refs/merge-requests/5/head"}, // a title edit
		{"gitlab", gl("merge", ""), opClose, "refs/merge-requests/5/head"},
		{"gitlab", gl("close", ""), opClose, "refs/merge-requests/5/head"},
		{"gitlab", gl("approved", ""), opNone, "refs/merge-requests/5/head"},
	} {
		e, err := parseEvent(c.forge, []byte(c.body))
		if err != nil || e.op != c.op || e.ref != c.ref {
			t.Errorf("%s %s: op %d ref %s (%v), want op %d ref %s", c.forge, c.body, e.op, e.ref, err, c.op, c.ref)
		}
	}
	if _, err := parseEvent("github", []byte(`{"action":"opened","pull_request":{}}`)); err == nil {
		t.Error("a payload without a number was taken")
	}
}

func TestPullRequestEventsAreToldFromPushesByHeader(t *testing.T) {
	for _, c := range []struct {
		forge, header, value string
		want                 bool
	}{
		{"github", "X-GitHub-Event", "pull_request", true},
		{"github", "X-GitHub-Event", "push", false},
		{"gitea", "X-Gitea-Event", "pull_request", true},
		{"gitea", "X-Forgejo-Event", "pull_request", true},
		{"gitea", "X-Gitea-Event", "push", false},
		{"gitlab", "X-Gitlab-Event", "Merge Request Hook", true},
		{"gitlab", "X-Gitlab-Event", "Push Hook", false},
	} {
		h := http.Header{}
		h.Set(c.header, c.value)
		if got := isPullRequestEvent(c.forge, h); got != c.want {
			t.Errorf("%s %s: %s: %v", c.forge, c.header, c.value, got)
		}
	}
}
