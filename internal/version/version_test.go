package version

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

func read(t *testing.T, rel string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", rel))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestVersionsAgree: `make image` tags what the chart installs by default, what
// config/manager and the samples name, and what the manager gives pods without spec.image.
// (The chart's default image once named a tag nothing built.)
func TestVersionsAgree(t *testing.T) {
	if m := regexp.MustCompile(`(?m)^appVersion: "?([^"\n]+)"?$`).FindStringSubmatch(read(t, "charts/rocketmq-operator/Chart.yaml")); m == nil || m[1] != Version {
		t.Errorf("Chart.yaml appVersion = %v, want %s", m, Version)
	}
	if !strings.Contains(read(t, "charts/rocketmq-operator/values.yaml"), "repository: "+Repository+"\n") {
		t.Errorf("values.yaml image.repository is not %s", Repository)
	}
	// The Makefile reads the version from this package, and tags the image with it.
	mk := read(t, "Makefile")
	if !strings.Contains(mk, "internal/version/version.go") || !strings.Contains(mk, "IMAGE ?= "+Repository+":$(VERSION)") {
		t.Error("Makefile does not tag the image with internal/version.Version")
	}
	kust := read(t, "config/manager/kustomization.yaml")
	if !strings.Contains(kust, "newName: "+Repository) || !strings.Contains(kust, "newTag: \""+Version+"\"") {
		t.Errorf("config/manager/kustomization.yaml does not pin %s:\n%s", DefaultImage, kust)
	}
	images := regexp.MustCompile(`(?m)^\s*image: (\S+)$`)
	for _, f := range []string{"config/samples/rocketmq_v1alpha1_nameserver.yaml", "config/samples/rocketmq_v1alpha1_broker.yaml"} {
		for _, m := range images.FindAllStringSubmatch(read(t, f), -1) {
			if m[1] != DefaultImage {
				t.Errorf("%s: image %s, want %s", f, m[1], DefaultImage)
			}
		}
	}
	if strings.Contains(read(t, "README.md"), Repository+":dev") {
		t.Errorf("README.md still names %s:dev", Repository)
	}
}
