package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// runCapture runs the CLI with stdout and stderr captured.
func runCapture(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	rootCmd.SetOut(&out)
	rootCmd.SetErr(&errb)
	defer rootCmd.SetOut(nil)
	defer rootCmd.SetErr(nil)
	code = run(args)
	return code, out.String(), errb.String()
}

func TestValidateExamples(t *testing.T) {
	code, out, errs := runCapture(t, "validate", "../../examples")
	if code != 0 {
		t.Fatalf("exit %d, stderr:\n%s", code, errs)
	}
	for _, want := range []string{"VirtualMachine", "SdnVnet", "valid: "} {
		if !strings.Contains(out, want) {
			t.Errorf("summary lacks %q:\n%s", want, out)
		}
	}
}

func TestValidateReportsEveryError(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"a.yaml": "apiVersion: proxmops.dev/v1\nkind: VirtualMachine\nmetadata: {name: a, node: pve1}\nspec: {vmid: 100, coers: 2}\n",
		"b.yaml": "apiVersion: proxmops.dev/v1\nkind: VirtualMachin\nmetadata: {name: b}\nspec: {}\n",
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var stderrText string
	t.Run("text", func(t *testing.T) {
		code, out, errs := runCapture(t, "validate", dir)
		if code != 1 {
			t.Fatalf("exit %d, want 1", code)
		}
		stderrText = errs
		if out != "" {
			t.Errorf("nothing belongs on stdout when invalid: %q", out)
		}
		for _, want := range []string{
			"a.yaml:4:19: spec.coers: unknown field `coers`, did you mean `cores`?",
			"b.yaml:2:7: kind: unknown kind \"VirtualMachin\", did you mean `VirtualMachine`?",
		} {
			if !strings.Contains(errs, want) {
				t.Errorf("stderr lacks %q:\n%s", want, errs)
			}
		}
		if strings.Index(errs, "a.yaml") > strings.Index(errs, "b.yaml") {
			t.Errorf("errors not sorted by file:\n%s", errs)
		}
	})
	t.Run("json", func(t *testing.T) {
		code, out, _ := runCapture(t, "validate", "--output", "json", dir)
		if code != 1 {
			t.Fatalf("exit %d, want 1", code)
		}
		var report struct {
			Valid     bool              `json:"valid"`
			Resources []json.RawMessage `json:"resources"`
			Errors    []struct {
				File    string `json:"file"`
				Line    int    `json:"line"`
				Column  int    `json:"column"`
				Path    string `json:"path"`
				Message string `json:"message"`
			} `json:"errors"`
		}
		if err := json.Unmarshal([]byte(out), &report); err != nil {
			t.Fatalf("not JSON: %v\n%s", err, out)
		}
		if report.Valid || len(report.Errors) != 2 || report.Errors[0].File != "a.yaml" || report.Errors[0].Line != 4 || report.Errors[0].Path != "spec.coers" {
			t.Errorf("report: %+v (stderr was %q)", report, stderrText)
		}
	})
}

func TestValidateJSONValid(t *testing.T) {
	code, out, _ := runCapture(t, "validate", "-o", "json", "../../examples")
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	var report struct {
		Valid     bool `json:"valid"`
		Resources []struct {
			APIVersion string `json:"apiVersion"`
			Kind       string `json:"kind"`
		} `json:"resources"`
		Errors []any `json:"errors"`
	}
	if err := json.Unmarshal([]byte(out), &report); err != nil {
		t.Fatal(err)
	}
	if !report.Valid || len(report.Resources) < 8 || report.Errors == nil || len(report.Errors) != 0 || report.Resources[0].APIVersion != "proxmops.dev/v1" {
		t.Errorf("report: %+v", report)
	}
}

func TestValidateMissingPath(t *testing.T) {
	if code, _, _ := runCapture(t, "validate", filepath.Join(t.TempDir(), "nope")); code != 1 {
		t.Errorf("exit %d, want 1", code)
	}
}

func TestSchemaCommand(t *testing.T) {
	code, out, _ := runCapture(t, "schema")
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	var s map[string]any
	if err := json.Unmarshal([]byte(out), &s); err != nil {
		t.Fatalf("not JSON: %v", err)
	}
	if s["$schema"] != "https://json-schema.org/draft/2020-12/schema" || s["$defs"] == nil {
		t.Errorf("schema head: %v", s["$schema"])
	}
}

// validate takes one file as well as a directory: the file's documents,
// checked alone, with errors named by the file.
func TestValidateOneFile(t *testing.T) {
	resetFlags()
	code, out, errs := runCapture(t, "validate", "../../examples/network/vmbr1.yaml")
	if code != 0 || !strings.Contains(out, "Network") || !strings.Contains(out, "in 1 files") {
		t.Fatalf("exit %d:\n%s%s", code, out, errs)
	}
	bad := filepath.Join(t.TempDir(), "vm.yaml")
	if err := os.WriteFile(bad, []byte("apiVersion: proxmops.dev/v1\nkind: VirtualMachine\nmetadata: {name: a, node: pve1}\nspec: {vmid: 100, coers: 2}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errs = runCapture(t, "validate", bad)
	if code != 1 || !strings.Contains(errs, "vm.yaml:4:19: spec.coers: unknown field `coers`") {
		t.Fatalf("exit %d:\n%s%s", code, out, errs)
	}
}
