//go:build k8s

package e2ek8s

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openrmq/rocketmq-operator/api/v1alpha1"
	"github.com/openrmq/rocketmq-operator/internal/version"
)

// The rolling-update measurement of issue 11: an image change of the samples' Broker (2
// groups, master and slave each) under a steady 200 msg/s official Go producer and a
// 50 msg/s official Java producer (java/.../SteadyProducer.java), with a push consumer
// reading along. The operator rolls one group at a time, slaves first, and takes each
// master's write permission away at the name servers 35 s before it restarts it
// (controllers/broker_roll.go). It prints one line in the form and asserts that
// no acknowledged message of either producer is lost.

const (
	rollRate = 200 // messages per second
	// javaRollRate is the Java producer's, beside the Go producer's.
	javaRollRate = 50
	// rollLimit bounds the whole measurement: the roll (two masters step aside for 35 s
	// each) plus the tail after it.
	rollLimit = 6 * time.Minute
)

// gapTracker keeps the longest interval between consecutive events, and when it began.
type gapTracker struct {
	mu      sync.Mutex
	last    time.Time
	longest time.Duration
	from    time.Time
}

func (g *gapTracker) tick(t time.Time) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.last.IsZero() && t.Sub(g.last) > g.longest {
		g.longest, g.from = t.Sub(g.last), g.last
	}
	g.last = t
}

// brokerLogsAround prints what the samples' broker pods logged from 2 s before from to
// 2 s after to, at most 40 lines a pod: the broker's side of a stall the clients saw.
func brokerLogsAround(from, to time.Time) {
	for _, pod := range []string{"rmq-broker-a-0", "rmq-broker-a-1", "rmq-broker-b-0", "rmq-broker-b-1"} {
		out, err := kubectl("logs", "-n", samplesNS, pod, "--timestamps", "--since-time="+from.Add(-2*time.Second).UTC().Format(time.RFC3339))
		if err != nil {
			report("logs of %s: %v", pod, err)
			continue
		}
		var lines []string
		for l := range strings.Lines(out) {
			if ts, _, ok := strings.Cut(l, " "); ok {
				if t, err := time.Parse(time.RFC3339Nano, ts); err == nil && t.After(to.Add(2*time.Second)) {
					break
				}
			}
			if lines = append(lines, strings.TrimRight(l, "\n")); len(lines) == 40 {
				break
			}
		}
		report("%s logged %d line(s) around the stall:\n%s", pod, len(lines), strings.Join(lines, "\n"))
	}
}

// longestGap is the longest interval between events so far and when it began.
func (g *gapTracker) longestGap() (time.Duration, time.Time) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.longest, g.from
}

func (g *gapTracker) max(end time.Time) time.Duration {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.last.IsZero() && end.Sub(g.last) > g.longest {
		return end.Sub(g.last)
	}
	return g.longest
}

// javaSends is what SteadyProducer printed: the keys it had acknowledged SEND_OK and the
// longest stall between those, and the lines of sends answered otherwise or failed.
type javaSends struct {
	acked         []string
	stall         gapTracker
	notOK, failed []string
	done          string // the summary line, printed once it stopped
}

func parseJavaSends(out string) *javaSends {
	js := &javaSends{}
	for _, l := range strings.Split(out, "\n") {
		f := strings.Fields(l)
		switch {
		case len(f) == 4 && f[0] == "ACK" && f[2] == "SEND_OK":
			ms, err := strconv.ParseInt(f[3], 10, 64)
			Expect(err).NotTo(HaveOccurred(), "java producer: %q", l)
			// The time of the answer, not of reading the line: the stall is the producer's own.
			js.stall.tick(time.UnixMilli(ms))
			js.acked = append(js.acked, f[1])
		case len(f) == 4 && f[0] == "ACK":
			js.notOK = append(js.notOK, l)
		case len(f) > 0 && f[0] == "FAIL":
			js.failed = append(js.failed, l)
		case len(f) > 0 && f[0] == "DONE":
			js.done = l
		}
	}
	return js
}

// slaveConnected reads rocketmq_ha_master_connected from a slave pod's /metrics; a pod
// that does not answer (restarting) counts as not connected.
func slaveConnected(pod string) bool {
	p := &corev1.Pod{}
	if err := k8s.Get(ctx, client.ObjectKey{Namespace: samplesNS, Name: pod}, p); err != nil || p.Status.PodIP == "" {
		return false
	}
	cctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(cctx, http.MethodGet, "http://"+p.Status.PodIP+":5557/metrics", nil)
	if err != nil {
		return false
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		if l := sc.Text(); strings.HasPrefix(l, "rocketmq_ha_master_connected{") {
			return strings.HasSuffix(l, " 1")
		}
	}
	return false
}

func measureImageRoll(nsAddrs []string, tagSuffix string) {
	br := &v1alpha1.Broker{}
	Expect(k8s.Get(ctx, client.ObjectKey{Namespace: samplesNS, Name: "rmq"}, br)).To(Succeed())
	mode := string(br.Spec.BrokerRole)
	l := startSteadyLoad(nsAddrs, "Roll", tagSuffix, rollLimit, nil)

	// The slaves' HA connections, sampled every 250 ms.
	var disconnected = map[string]time.Duration{}
	var discMu sync.Mutex
	pollDone := make(chan struct{})
	stopPoll := sync.OnceFunc(func() { close(pollDone) })
	defer stopPoll()
	go func() {
		down := map[string]time.Time{}
		for {
			select {
			case <-pollDone:
				return
			case <-time.After(250 * time.Millisecond):
			}
			now := time.Now()
			for _, pod := range []string{"rmq-broker-a-1", "rmq-broker-b-1"} {
				ok := slaveConnected(pod)
				discMu.Lock()
				switch {
				case !ok && down[pod].IsZero():
					down[pod] = now
				case ok && !down[pod].IsZero():
					disconnected[pod] = max(disconnected[pod], now.Sub(down[pod]))
					down[pod] = time.Time{}
				}
				if !down[pod].IsZero() {
					disconnected[pod] = max(disconnected[pod], now.Sub(down[pod]))
				}
				discMu.Unlock()
			}
		}
	}()

	// Steady state (startSteadyLoad waited for it), then the image change: the same image
	// under another tag.
	newImage := version.DefaultImage + tagSuffix
	// containerd holds the image under its normalised name.
	out, err := exec.Command("ctr", "--address", containerd, "-n", "k8s.io", "images", "tag", "--force",
		"docker.io/"+version.DefaultImage, "docker.io/"+newImage).CombinedOutput()
	Expect(err).NotTo(HaveOccurred(), "ctr images tag: %s", out)
	t0 := time.Now()
	edit(br, func() { br.Spec.Image = newImage })
	lastState := ""
	Eventually(func(g Gomega) {
		if s := rollState(br); s != lastState { // the roll's timeline, one line per change
			report("roll +%s: %s", since(t0), s)
			lastState = s
		}
		g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(br), br)).To(Succeed())
		g.Expect(br.Status.ObservedGeneration).To(Equal(br.Generation))
		g.Expect(meta.IsStatusConditionTrue(br.Status.Conditions, v1alpha1.ConditionReady)).To(BeTrue())
		var pods corev1.PodList
		g.Expect(k8s.List(ctx, &pods, client.InNamespace(samplesNS), client.MatchingLabels{
			"app.kubernetes.io/instance": "rmq", "app.kubernetes.io/component": "broker"})).To(Succeed())
		g.Expect(pods.Items).To(HaveLen(4))
		for _, pod := range pods.Items {
			g.Expect(pod.Spec.Containers[0].Image).To(Equal(newImage), "pod %s", pod.Name)
			g.Expect(podIsReady(&pod)).To(BeTrue(), "pod %s", pod.Name)
		}
	}).WithTimeout(rollLimit - time.Minute).WithPolling(time.Second).Should(Succeed())
	rolled := time.Since(t0)
	res := l.finish(false)
	stopPoll()
	discMu.Lock()
	var maxDisc time.Duration
	for _, d := range disconnected {
		maxDisc = max(maxDisc, d)
	}
	discMu.Unlock()
	report("image change %s -> %s rolled in %s", version.DefaultImage, newImage, rolled.Round(100*time.Millisecond))
	stall := l.stall(res)
	// Past the bounds, when it began and what the brokers logged around it.
	for _, gap := range []struct {
		what  string
		g     *gapTracker
		bound time.Duration
	}{{"go producer's longest stall", &l.sent, 2 * time.Second}, {"java producer's longest stall", &res.js.stall, 2 * time.Second},
		{"consumer's longest gap", &l.consumed, 5 * time.Second}} {
		// The consumer still runs: its tracker is read under its lock.
		if longest, from := gap.g.longestGap(); longest > gap.bound {
			report("%s: %s from %s", gap.what, longest.Round(time.Millisecond), from.UTC().Format(time.RFC3339Nano))
			brokerLogsAround(from, from.Add(longest))
		}
	}
	fmt.Printf("rolling-update: mode=%s acked=%d lost=%d longest_send_stall_ms=%d longest_consume_gap_ms=%d max_slave_disconnect_ms=%d\n",
		mode, res.acked, res.lost, stall.Milliseconds(), l.consumed.max(res.end).Milliseconds(), maxDisc.Milliseconds())
	Expect(res.lost).To(BeZero())
	// The Go client's statuses 1-3: FLUSH_DISK_TIMEOUT, FLUSH_SLAVE_TIMEOUT, SLAVE_NOT_AVAILABLE.
	Expect(res.notOK).To(BeEmpty(), "sends answered other than SEND_OK, by status")
	Expect(res.js.notOK).To(BeEmpty(), "java sends answered other than SEND_OK")
	if mode == string(v1alpha1.SyncMaster) {
		// The Java client retries a failed send itself; one it gave up on is not SEND_OK either.
		Expect(res.js.failed).To(BeEmpty(), "java sends that failed under SYNC_MASTER")
	}
}

// rollState is one line on where the samples' roll stands: the Broker's Progressing
// condition and each group's phase, partition and pods (revision, Ready).
func rollState(br *v1alpha1.Broker) string {
	var b strings.Builder
	cur := &v1alpha1.Broker{}
	if err := k8s.Get(ctx, client.ObjectKeyFromObject(br), cur); err != nil {
		return err.Error()
	}
	if c := meta.FindStatusCondition(cur.Status.Conditions, v1alpha1.ConditionProgressing); c != nil {
		fmt.Fprintf(&b, "Progressing=%s %s %q;", c.Status, c.Reason, c.Message)
	}
	for _, g := range cur.Status.Groups {
		fmt.Fprintf(&b, " %s[%s]", g.BrokerName, g.Rolling)
	}
	var sets appsv1.StatefulSetList
	if err := k8s.List(ctx, &sets, client.InNamespace(samplesNS), client.MatchingLabels{
		"app.kubernetes.io/instance": "rmq", "app.kubernetes.io/component": "broker"}); err == nil {
		for _, s := range sets.Items {
			fmt.Fprintf(&b, " %s partition=%d updated=%d ready=%d", s.Name,
				ptr.Deref(s.Spec.UpdateStrategy.RollingUpdate.Partition, 0), s.Status.UpdatedReplicas, s.Status.ReadyReplicas)
		}
	}
	var pods corev1.PodList
	if err := k8s.List(ctx, &pods, client.InNamespace(samplesNS), client.MatchingLabels{
		"app.kubernetes.io/instance": "rmq", "app.kubernetes.io/component": "broker"}); err == nil {
		for _, p := range pods.Items {
			fmt.Fprintf(&b, " %s(new=%t ready=%t)", p.Name, p.Spec.Containers[0].Image == br.Spec.Image, podIsReady(&p))
		}
	}
	return b.String()
}
