package controllers

import (
	"fmt"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
)

// stuckReasons are the container waiting reasons that do not resolve by waiting: a pod in
// one of them needs the user (a wrong image, a config that does not start).
var stuckReasons = map[string]bool{
	"ErrImagePull": true, "ImagePullBackOff": true, "InvalidImageName": true,
	"ErrImageNeverPull": true, "CrashLoopBackOff": true, "CreateContainerConfigError": true,
	"CreateContainerError": true, "RunContainerError": true,
}

// podProblem is why one of pods is not running, as the kubelet and scheduler put it
// ("ImagePullBackOff", "pod rmq-broker-a-0: Back-off pulling image ..."), or "" when none
// is stuck. Pods are looked at in name order, so the answer does not flap.
func podProblem(pods map[string]*corev1.Pod) (reason, message string) {
	for _, name := range slices.Sorted(maps.Keys(pods)) {
		p := pods[name]
		if p == nil || !p.DeletionTimestamp.IsZero() {
			continue
		}
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable {
				return c.Reason, fmt.Sprintf("pod %s: %s", name, c.Message)
			}
		}
		for _, cs := range append(slices.Clone(p.Status.InitContainerStatuses), p.Status.ContainerStatuses...) {
			if w := cs.State.Waiting; w != nil && stuckReasons[w.Reason] {
				msg := w.Message
				if msg == "" && cs.LastTerminationState.Terminated != nil {
					t := cs.LastTerminationState.Terminated
					msg = fmt.Sprintf("last exit code %d (%s)", t.ExitCode, t.Reason)
				}
				return w.Reason, fmt.Sprintf("pod %s container %s: %s", name, cs.Name, msg)
			}
		}
	}
	return "", ""
}
