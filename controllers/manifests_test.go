package controllers

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestManifestsUpToDate regenerates the CRDs and the RBAC role into a temp dir, as
// `make manifests` does, and fails if config/ or the chart's CRD copy differ: a changed
// API type or RBAC marker must come with `make manifests`.
func TestManifestsUpToDate(t *testing.T) {
	tmp := t.TempDir()
	cmd := exec.Command("go", "tool", "controller-gen", "rbac:roleName=manager-role", "crd", "webhook",
		"paths=./api/...", "paths=./controllers/...",
		"output:crd:artifacts:config="+filepath.Join(tmp, "crd"),
		"output:rbac:artifacts:config="+filepath.Join(tmp, "rbac"))
	cmd.Dir = ".."
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("controller-gen: %v\n%s", err, out)
	}
	compare := func(generated, committed string) {
		want, err := os.ReadFile(generated)
		if err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(committed)
		if err != nil {
			t.Errorf("%s: %v (run make manifests)", committed, err)
			return
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s is stale: run make manifests", committed)
		}
	}
	crds, _ := filepath.Glob(filepath.Join(tmp, "crd", "*.yaml"))
	if len(crds) != 5 {
		t.Fatalf("controller-gen wrote %d CRDs, want 5", len(crds))
	}
	for _, f := range crds {
		compare(f, filepath.Join("..", "config", "crd", "bases", filepath.Base(f)))
		compare(f, filepath.Join("..", "charts", "rocketmq-operator", "crds", filepath.Base(f)))
	}
	role := filepath.Join(tmp, "rbac", "role.yaml")
	compare(role, filepath.Join("..", "config", "rbac", "role.yaml"))
	compare(role, filepath.Join("..", "charts", "rocketmq-operator", "files", "manager-role.yaml"))
}
