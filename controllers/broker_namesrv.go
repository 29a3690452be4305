package controllers

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openrmq/rocketmq-operator/api/v1alpha1"
	"github.com/openrmq/rocketmq-operator/internal/resource"
)

// resolveNameServers turns nameServerRef or nameServerAddresses into a namesrvAddr list.
func (r *BrokerReconciler) resolveNameServers(ctx context.Context, br *v1alpha1.Broker, st *brokerState) (time.Duration, error) {
	if br.Spec.NameServerRef == nil {
		st.namesrvAddr = strings.Join(br.Spec.NameServerAddresses, ";")
		return 0, nil
	}
	ns := &v1alpha1.NameServer{}
	key := client.ObjectKey{Namespace: br.Namespace, Name: br.Spec.NameServerRef.Name}
	if err := r.Get(ctx, key, ns); err != nil {
		if apierrors.IsNotFound(err) {
			msg := fmt.Sprintf("NameServer %q not found in namespace %q", key.Name, key.Namespace)
			notReady(&br.Status.Conditions, br.Generation, "NameServerNotFound", msg)
			// The NameServer watch brings us back when it appears; the requeue is a fallback.
			return retryAfter, fmt.Errorf("%s", msg)
		}
		return 0, err
	}
	st.namesrvAddr = resource.NameServerAddress(ns)
	return 0, nil
}

// pushNameServers sends a changed namesrvAddr to every running broker pod with
// UPDATE_BROKER_CONFIG, so no pod restarts for it. Pods that have not started yet read
// the new list from the ConfigMap (applied in an earlier step) when their container starts.
// status.nameServerAddress moves only once every running pod took the new list.
func (r *BrokerReconciler) pushNameServers(ctx context.Context, br *v1alpha1.Broker, st *brokerState) (time.Duration, error) {
	if br.Status.NameServerAddress == st.namesrvAddr {
		return 0, nil
	}
	if br.Status.NameServerAddress == "" {
		br.Status.NameServerAddress = st.namesrvAddr // first rollout: pods boot with it
		return 0, nil
	}
	if err := st.access.err(); err != nil {
		return retryAfter, fmt.Errorf("namesrvAddr not pushed to the running brokers: %w", err)
	}
	var failed []string
	pushed := 0
	for _, name := range slices.Sorted(maps.Keys(st.pods)) {
		pod := st.pods[name]
		if pod.Status.Phase != corev1.PodRunning || pod.Status.PodIP == "" {
			continue
		}
		addr := fmt.Sprintf("%s:%d", pod.Status.PodIP, br.Spec.ListenPort)
		err := st.access.Admin.UpdateBrokerConfig(ctx, addr, map[string]string{resource.NamesrvAddrKey: st.namesrvAddr})
		if err != nil {
			failed = append(failed, fmt.Sprintf("%s: %v", name, err))
			continue
		}
		pushed++
	}
	if len(failed) > 0 {
		err := fmt.Errorf("UPDATE_BROKER_CONFIG namesrvAddr failed on %d pod(s): %s",
			len(failed), strings.Join(failed, "; "))
		r.Recorder.Eventf(br, nil, corev1.EventTypeWarning, "NameServerPushFailed", "UpdateBrokerConfig", "%v", err)
		return retryAfter, err
	}
	r.Recorder.Eventf(br, nil, corev1.EventTypeNormal, "NameServerPushed", "UpdateBrokerConfig",
		"namesrvAddr=%s sent to %d running broker(s)", st.namesrvAddr, pushed)
	br.Status.NameServerAddress = st.namesrvAddr
	return 0, nil
}
