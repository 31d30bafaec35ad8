package server

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/proxmops/proxmops/internal/api"
	"github.com/proxmops/proxmops/internal/config"
	"github.com/proxmops/proxmops/internal/notify"
	"github.com/proxmops/proxmops/internal/testwait"
)

func TestNotificationsAPIShowsTheLastErrorThenTheDelivery(t *testing.T) {
	var calls atomic.Int32
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) <= 2 {
			http.Error(w, "busy", http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	defer receiver.Close()
	d := notify.New([]config.Notification{{Name: "ops", URL: receiver.URL + "/hook?key=${env:PROXMOPS_TEST_HOOK_KEY}", On: []string{"failed"}}},
		notify.Options{Window: 10 * time.Millisecond, Backoff: 300 * time.Millisecond})
	t.Setenv("PROXMOPS_TEST_HOOK_KEY", "k3y-that-is-secret")
	defer d.Close()
	e := newEnv(t, func(o *Options) { o.Notifications = d })
	admin := e.admin()
	list := func() api.NotificationStatus {
		t.Helper()
		var l api.NotificationList
		if err := json.Unmarshal(admin.expect(http.StatusOK, "GET", "/api/v1/notifications", nil), &l); err != nil || len(l.Notifications) != 1 {
			t.Fatalf("list %+v: %v", l, err)
		}
		return l.Notifications[0]
	}
	if st := list(); st.Name != "ops" || st.Service != "webhook" || st.URL != "http://"+strings.TrimPrefix(receiver.URL, "http://")+"/…" || st.LastDelivery != nil || st.LastError != "" {
		t.Fatalf("before any notice: %+v", st)
	}
	d.Notify(api.Notice{Event: api.NotifyFailed, Kind: "VirtualMachine", Name: "web", Message: "boom"})
	testwait.For(t, "the error shown", 10*time.Second, func() bool { return list().LastError != "" })
	if st := list(); !strings.Contains(st.LastError, "503") || st.LastDelivery != nil || st.Pending != 1 || strings.Contains(st.LastError, "k3y") {
		t.Errorf("after the first failure: %+v", st)
	}
	testwait.For(t, "the delivery shown", 10*time.Second, func() bool { return list().LastDelivery != nil })
	if st := list(); st.Delivered != 1 || st.Pending != 0 || st.LastErrorAt == nil || st.LastDelivery.Before(*st.LastErrorAt) {
		t.Errorf("after the delivery: %+v", st)
	}
	viewer := e.viewer(admin)
	viewer.expect(http.StatusForbidden, "GET", "/api/v1/notifications", nil)
}
