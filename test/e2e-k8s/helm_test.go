//go:build k8s

package e2ek8s

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	. "github.com/onsi/gomega"
	"helm.sh/helm/v4/pkg/action"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	"helm.sh/helm/v4/pkg/kube"
	"k8s.io/cli-runtime/pkg/genericclioptions"
)

// The chart is installed with Helm's SDK, the code `helm install` runs, so the suite needs
// no helm binary; the README's helm command does the same.

func helmConfig() *action.Configuration {
	flags := genericclioptions.NewConfigFlags(false)
	flags.KubeConfig = &kubeconfig
	ns := operatorNS
	flags.Namespace = &ns
	cfg := action.NewConfiguration()
	Expect(cfg.Init(flags, operatorNS, "secret")).To(Succeed())
	return cfg
}

// chartValues are the README's: the image built by make image, present in containerd.
func chartValues() map[string]any {
	return map[string]any{"image": map[string]any{"repository": "openrmq/rocketmq-operator"}}
}

// helmInstall installs the chart in dir as the release, creating the namespace.
func helmInstall(dir string) {
	chrt, err := loader.Load(dir)
	Expect(err).NotTo(HaveOccurred())
	in := action.NewInstall(helmConfig())
	in.ReleaseName, in.Namespace, in.CreateNamespace = releaseName, operatorNS, true
	in.WaitStrategy, in.Timeout = kube.HookOnlyStrategy, 2*time.Minute
	_, err = in.Run(chrt, chartValues())
	Expect(err).NotTo(HaveOccurred(), "helm install %s", dir)
}

// helmUpgrade upgrades the release to the chart in dir, after applying the chart's CRDs
// as the chart's NOTES tell (Helm leaves crds/ alone on upgrade).
func helmUpgrade(dir string) {
	out, err := kubectl("apply", "--server-side", "--force-conflicts", "-f", filepath.Join(dir, "crds"))
	Expect(err).NotTo(HaveOccurred(), out)
	chrt, err := loader.Load(dir)
	Expect(err).NotTo(HaveOccurred())
	up := action.NewUpgrade(helmConfig())
	up.Namespace, up.WaitStrategy, up.Timeout = operatorNS, kube.HookOnlyStrategy, 2*time.Minute
	_, err = up.Run(releaseName, chrt, chartValues())
	Expect(err).NotTo(HaveOccurred(), "helm upgrade to %s", dir)
}

func helmUninstall() {
	un := action.NewUninstall(helmConfig())
	un.IgnoreNotFound, un.WaitStrategy, un.Timeout = true, kube.HookOnlyStrategy, time.Minute
	_, _ = un.Run(releaseName)
}

// previousChart writes the chart as it was at ref (the last release before this one) to a
// folder and returns it, or "" when the clone has no such commit (a shallow clone).
func previousChart(ref string) string {
	ls, err := exec.Command("git", "-C", repo, "ls-tree", "-r", "--name-only", ref, "charts/rocketmq-operator").Output()
	if err != nil {
		return ""
	}
	dir := filepath.Join(workDir, "previous-chart")
	for _, f := range strings.Fields(string(ls)) {
		data, err := exec.Command("git", "-C", repo, "show", ref+":"+f).Output()
		Expect(err).NotTo(HaveOccurred())
		dst := filepath.Join(dir, strings.TrimPrefix(f, "charts/rocketmq-operator/"))
		Expect(os.MkdirAll(filepath.Dir(dst), 0o755)).To(Succeed())
		Expect(os.WriteFile(dst, data, 0o644)).To(Succeed())
	}
	return dir
}
