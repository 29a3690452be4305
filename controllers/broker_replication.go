package controllers

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/openrmq/rocketmq-operator/api/v1alpha1"
	"github.com/openrmq/rocketmq-operator/internal/resource"
)

// What the roll's health gates need beyond a pod's readiness (at least one name server
// holds it; a slave replicates):
//
//   - Registration: every name server the brokers were told holds each Ready pod
//     (GET_BROKER_CLUSTER_INFO). A pod is healthy in RocketMQ's terms only once every
//     client, whichever name server it asks, finds it.
//   - Replication lag: a slave's lag is its master's commitLogMaxOffset less its own, both
//     read with GET_BROKER_RUNTIME_INFO, the slave first: a master that takes writes
//     between the two reads only makes the figure larger, never hides lag. The status
//     shows it per slave, and the roll waits for the replaced slaves to be within
//     spec.rollout.maxSlaveLagBytes before their master steps aside.

// defaultMaxSlaveLag is spec.rollout.maxSlaveLagBytes' default.
const defaultMaxSlaveLag = 1 << 20

// replicationRefresh is how often a Broker with slaves is looked at again, so that the
// status' lag does not go stale between pod events.
const replicationRefresh = 30 * time.Second

// slaveLag is one slave's lag, or why it is not known.
type slaveLag struct {
	bytes int64
	err   error
}

// maxSlaveLag is spec.rollout.maxSlaveLagBytes or its default.
func maxSlaveLag(br *v1alpha1.Broker) int64 {
	if br.Spec.Rollout != nil && br.Spec.Rollout.MaxSlaveLagBytes != nil {
		return *br.Spec.Rollout.MaxSlaveLagBytes
	}
	return defaultMaxSlaveLag
}

// observeMembers reads, for every Ready pod, which name servers do not hold its
// registration (st.unregistered), and the lag of every Ready slave whose master is Ready
// (st.lag), by pod name. A broker or name server that cannot be asked leaves the answer
// unknown, which holds a roll but fails nothing.
func (r *BrokerReconciler) observeMembers(ctx context.Context, br *v1alpha1.Broker, st *brokerState) (time.Duration, error) {
	st.lag, st.unregistered = map[string]slaveLag{}, map[string]string{}
	r.observeRegistrations(ctx, br, st)
	if br.Spec.ReplicasPerGroup < 2 {
		return 0, nil
	}
	st.requeueWithin(replicationRefresh)
	for g := range br.Spec.Groups {
		if !podReady(st.pods[resource.BrokerPodName(br, g, resource.BrokerMasterOrdinal(br, g))]) {
			continue
		}
		slaves := map[string]int64{}
		for _, id := range resource.BrokerSlaveOrdinals(br, g) {
			pod := resource.BrokerPodName(br, g, id)
			if !podReady(st.pods[pod]) {
				continue
			}
			if err := st.access.err(); err != nil {
				st.lag[pod] = slaveLag{err: err}
				continue
			}
			off, err := st.access.Admin.CommitLogMaxOffset(ctx, resource.BrokerMemberAddress(br, g, id))
			if err != nil {
				st.lag[pod] = slaveLag{err: err}
				continue
			}
			slaves[pod] = off
		}
		if len(slaves) == 0 {
			continue
		}
		masterOff, err := st.access.Admin.CommitLogMaxOffset(ctx, resource.BrokerMasterAddress(br, g))
		for pod, off := range slaves {
			if err != nil {
				st.lag[pod] = slaveLag{err: fmt.Errorf("its master: %w", err)}
			} else {
				st.lag[pod] = slaveLag{bytes: max(masterOff-off, 0)}
			}
		}
	}
	return 0, nil
}

// observeRegistrations fills st.unregistered: Ready pods some name server does not hold,
// with why.
func (r *BrokerReconciler) observeRegistrations(ctx context.Context, br *v1alpha1.Broker, st *brokerState) {
	for g := range br.Spec.Groups {
		var ready []int32
		for id := range br.Spec.ReplicasPerGroup {
			if podReady(st.pods[resource.BrokerPodName(br, g, id)]) {
				ready = append(ready, id)
			}
		}
		if len(ready) == 0 {
			continue
		}
		for _, ns := range nameServersOf(br) {
			var held map[int64]string
			err := st.access.err()
			if err == nil {
				held, err = st.access.Admin.RegisteredMembers(ctx, ns, resource.BrokerName(g))
			}
			for _, id := range ready {
				pod := resource.BrokerPodName(br, g, id)
				if _, dup := st.unregistered[pod]; dup {
					continue // the first name server's answer says enough
				}
				switch _, ok := held[int64(resource.BrokerID(br, g, id))]; {
				case err != nil:
					st.unregistered[pod] = fmt.Sprintf("registration at %s unknown: %v", ns, err)
				case !ok:
					st.unregistered[pod] = "not registered at " + ns
				}
			}
		}
	}
}

// unregisteredPods names the pods of group g some name server does not hold; "" when
// every name server holds every pod.
func unregisteredPods(br *v1alpha1.Broker, st *brokerState, g int32) string {
	var out []string
	for id := range br.Spec.ReplicasPerGroup {
		pod := resource.BrokerPodName(br, g, id)
		if why, ok := st.unregistered[pod]; ok {
			out = append(out, pod+" "+why)
		}
	}
	return strings.Join(out, ", ")
}

// laggingSlaves names the slaves of g that are not known to be within the roll's lag
// bound, with their lag or why it is unknown; "" when none.
func laggingSlaves(br *v1alpha1.Broker, st *brokerState, g int32) string {
	var out []string
	for _, id := range resource.BrokerSlaveOrdinals(br, g) {
		pod := resource.BrokerPodName(br, g, id)
		l, ok := st.lag[pod]
		var why string
		switch {
		case st.unregistered[pod] != "":
			why = st.unregistered[pod]
		case !ok:
			why = "lag not read yet"
		case l.err != nil:
			why = "lag unknown: " + l.err.Error()
		case l.bytes > maxSlaveLag(br):
			why = fmt.Sprintf("%d bytes behind its master (rollout.maxSlaveLagBytes %d)", l.bytes, maxSlaveLag(br))
		default:
			continue
		}
		out = append(out, pod+" "+why)
	}
	return strings.Join(out, ", ")
}
