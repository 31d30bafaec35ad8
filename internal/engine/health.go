package engine

import "github.com/proxmops/proxmops/internal/vocab"

// HealthOf decides a resource's health from its planned action: the one
// place where health is decided (the controller and the API read it from
// here). The status it judges by is the one a reader sees: a conflict is
// StatusConflict, a resource not evaluated StatusUnknown.
func HealthOf(a *Action) vocab.Health {
	st := StatusOf(a)
	switch {
	case st == vocab.StatusProgressing:
		return vocab.HealthProgressing
	case st == vocab.StatusFailed:
		return vocab.HealthDegraded
	case a.Observed == nil && st == vocab.StatusUnknown:
		return vocab.HealthUnknown
	case a.Observed == nil:
		return vocab.HealthMissing
	case a.Conflicted():
		// Something not ours is there: how it does is not ours to judge.
		return vocab.HealthUnknown
	}
	switch a.Observed["status"] {
	case "paused", "suspended":
		return vocab.HealthSuspended
	case "stopped":
		if a.Kind == KindVirtualMachine && a.wantRunning {
			return vocab.HealthDegraded
		}
	}
	return vocab.HealthHealthy
}
