package resource

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/openrmq/rocketmq-operator/api/v1alpha1"
)

// BrokerComponent is the component label value of broker objects.
const BrokerComponent = "broker"

// Paths inside a broker pod.
const (
	brokerConfDir    = "/etc/rocketmq/broker"
	NamesrvAddrKey   = "namesrvAddr"
	brokerStoreDir   = "/home/rocketmq/store"
	brokerStoreClaim = "store"
	// BrokerACLDir is where spec.acl's Secret is mounted: a whole-directory Secret volume
	// (never subPath), so the kubelet's in-place updates of the Secret reach the file.
	BrokerACLDir    = "/etc/rocketmq/acl"
	brokerACLVolume = "acl"
)

// ACLKey is the key of the ACL file in spec.acl's Secret: spec.acl.key, or plain_acl.yml.
func ACLKey(acl *v1alpha1.BrokerACL) string {
	if acl == nil || acl.Key == "" {
		return v1alpha1.DefaultACLKey
	}
	return acl.Key
}

// BrokerACLFile is the path the brokers read plain_acl.yml from (broker.conf aclPlainFile),
// or "" without spec.acl.
func BrokerACLFile(br *v1alpha1.Broker) string {
	if br.Spec.ACL == nil {
		return ""
	}
	return BrokerACLDir + "/" + ACLKey(br.Spec.ACL)
}

// BrokerBuilder builds the children of one Broker: one shared name-server ConfigMap, then
// per group one ClusterIP Service per pod, a broker.conf ConfigMap, a headless Service, a
// StatefulSet and a PDB; and, apart from Builders, the NetworkPolicy of spec.networkPolicy.
//
// Stable addresses: each broker pod announces its own Service's ClusterIP (brokerIP1 and
// brokerIP2, so clients, the name servers' routes and its slaves all hold that address),
// not its pod IP. The ClusterIP lives as long as the Service, so a restarted or
// rescheduled pod is at once where every client and slave already looks; the price is a
// kube-proxy hop on each connection. With spec.expose NodePort the Service is a NodePort
// one too, on ports fixed by the spec (brokerNodePorts), and the pod announces its node
// port to clients (BrokerAddressConf) while HA stays on the ClusterIP. With LoadBalancer
// it is a LoadBalancer one, and the pod announces the load balancer's IP, known only once
// the cloud wrote it to the Service's status: until each pod Service of a group has one,
// the group's ConfigMap and StatefulSet are held (PendingLoadBalancers), so that no pod
// starts announcing an address clients cannot reach.
type BrokerBuilder struct {
	Instance *v1alpha1.Broker
	Scheme   *runtime.Scheme
	// NameServerAddress is the resolved namesrvAddr list.
	NameServerAddress string
	// OperatorNamespace is admitted by the NetworkPolicy; empty admits no namespace.
	OperatorNamespace string
	// PodAddresses maps pod names to their Services' addresses. The pod Services'
	// Applied fills it, so it is complete when the ConfigMaps and StatefulSets that
	// follow them in Builders' order are applied.
	PodAddresses map[string]PodAddress
	// Partitions is each group's StatefulSet rollingUpdate partition, by group index: the
	// operator drives the roll (controllers/broker_roll.go) by lowering it from replicas.
	// A group not in the map gets 0.
	Partitions map[int32]int32
}

// PodAddress is what a broker pod's Service was given.
type PodAddress struct {
	ClusterIP string
	// LoadBalancerIP is the Service's first load-balancer ingress IP with expose
	// LoadBalancer, "" until the cloud has written one. LoadBalancerHostname is the
	// ingress hostname when the cloud gave no IP, which a broker cannot announce.
	LoadBalancerIP, LoadBalancerHostname string
}

// Builders lists the children in apply order: the pod Services (whose ClusterIPs the
// configs announce), configs, the headless Service, then StatefulSets.
func (b *BrokerBuilder) Builders() []Builder {
	out := []Builder{&brokerNamesrvConfigMap{b}}
	for g := range b.Instance.Spec.Groups {
		grp := brokerGroup{BrokerBuilder: b, index: g}
		for id := range b.Instance.Spec.ReplicasPerGroup {
			out = append(out, &brokerPodService{brokerGroup: grp, id: id})
		}
		out = append(out, &brokerConfigMap{grp}, &brokerHeadlessService{grp}, &brokerHAService{grp},
			&brokerStatefulSet{grp}, &brokerPDB{grp})
	}
	return out
}

// podAddresses is "pod=clusterIP,..." for group g's pods, in ordinal order ("" for a pod
// whose Service has no ClusterIP yet), each followed by "/" and its load balancer's IP
// with expose LoadBalancer.
func (g brokerGroup) podAddresses() string {
	var parts []string
	for id := range g.Instance.Spec.ReplicasPerGroup {
		pod := BrokerPodName(g.Instance, g.index, id)
		a := g.PodAddresses[pod]
		part := pod + "=" + a.ClusterIP
		if a.LoadBalancerIP != "" {
			part += "/" + a.LoadBalancerIP
		}
		parts = append(parts, part)
	}
	return strings.Join(parts, ",")
}

// pendingLoadBalancers lists group g's pod Services that have no load-balancer IP yet,
// with why when the cloud gave a hostname; nil without expose LoadBalancer.
func (g brokerGroup) pendingLoadBalancers() []string {
	if _, ok := g.Instance.Spec.Expose.LoadBalanced(); !ok {
		return nil
	}
	var out []string
	for id := range g.Instance.Spec.ReplicasPerGroup {
		pod := BrokerPodName(g.Instance, g.index, id)
		switch a := g.PodAddresses[pod]; {
		case a.LoadBalancerHostname != "":
			out = append(out, fmt.Sprintf("%s (hostname %s only: a broker announces an IP)", pod, a.LoadBalancerHostname))
		case a.LoadBalancerIP == "":
			out = append(out, pod)
		}
	}
	return out
}

// PendingLoadBalancers says, once Builders' objects are applied, which pod Services wait
// for a load-balancer IP and so hold their group; "" when none does.
func (b *BrokerBuilder) PendingLoadBalancers() string {
	var pending []string
	for g := range b.Instance.Spec.Groups {
		pending = append(pending, brokerGroup{BrokerBuilder: b, index: g}.pendingLoadBalancers()...)
	}
	if len(pending) == 0 {
		return ""
	}
	return "waiting for the load-balancer IPs of Services " + strings.Join(pending, ", ") +
		"; their groups' pods are not created or updated until then"
}

// BrokerName of group i: broker-a, broker-b, ...
func BrokerName(i int32) string { return fmt.Sprintf("broker-%c", 'a'+rune(i)) }

// BrokerGroupName is the name of group i's StatefulSet, ConfigMap and PDB.
func BrokerGroupName(br *v1alpha1.Broker, i int32) string {
	return br.Name + "-" + BrokerName(i)
}

// BrokerNamesrvConfigMapName holds the namesrvAddr list read at container start. It is not
// part of the config hash: a new list is pushed to running brokers instead of restarting them.
func BrokerNamesrvConfigMapName(br *v1alpha1.Broker) string { return br.Name + "-namesrv" }

// BrokerPodName is the pod of group i whose ordinal (and brokerId) is id.
func BrokerPodName(br *v1alpha1.Broker, i, id int32) string {
	return fmt.Sprintf("%s-%d", BrokerGroupName(br, i), id)
}

// BrokerMemberAddress is host:port of a pod's stable DNS name.
func BrokerMemberAddress(br *v1alpha1.Broker, i, id int32) string {
	return fmt.Sprintf("%s.%s-headless.%s.svc:%d", BrokerPodName(br, i, id),
		BrokerGroupName(br, i), br.Namespace, br.Spec.ListenPort)
}

// BrokerMasterAddress is host:port of group i's master pod's stable DNS name.
func BrokerMasterAddress(br *v1alpha1.Broker, i int32) string {
	return BrokerMemberAddress(br, i, BrokerMasterOrdinal(br, i))
}

// BrokerMasterHAAddress is group i's master's HA port (listenPort+1) at the group's HA
// Service's DNS name: a ClusterIP that routes to the master also while it is not Ready.
func BrokerMasterHAAddress(br *v1alpha1.Broker, i int32) string {
	return fmt.Sprintf("%s.%s.svc:%d", BrokerGroupHAServiceName(br, i), br.Namespace, br.Spec.ListenPort+1)
}

// BrokerAddressConf is the broker.conf lines that make pod id of group i announce its
// Service's ClusterIP to clients and name servers (brokerIP1) and for HA (brokerIP2).
// With expose NodePort the pod announces its remoting node port (advertisedListenPort) at
// BROKER_IP1 (brokerIP1Env), passed as -brokerIP1 because the node's IP is known only once
// the pod runs. With LoadBalancer brokerIP1 is the load balancer's IP: its ports are the
// Service's, so clients find the fast channel at listenPort-2 as inside. HA stays on the
// ClusterIP.
func BrokerAddressConf(br *v1alpha1.Broker, i, id int32, a PodAddress) string {
	if _, _, remoting, ok := brokerNodePorts(br, i, id); ok {
		return fmt.Sprintf("brokerIP2=%s\nadvertisedListenPort=%d\n", a.ClusterIP, remoting)
	}
	ip1 := a.ClusterIP
	if _, ok := br.Spec.Expose.LoadBalanced(); ok {
		ip1 = a.LoadBalancerIP
	}
	return fmt.Sprintf("brokerIP1=%s\nbrokerIP2=%s\n", ip1, a.ClusterIP)
}

// brokerNodePortsPerGroup: a group owns three node ports for each of the 5 pods it may
// have (spec.replicasPerGroup <= 5), so that scaling one group moves no port of another.
const brokerNodePortsPerGroup = 3 * 5

// brokerNodePorts are the node ports of pod id of group i with expose NodePort, as
// spec.expose lays them out: fast channel, HA, remoting, so that the remoting node port
// minus 2 is the fast channel's, as clients with vipChannelEnabled dial it. ok is false
// without NodePort.
func brokerNodePorts(br *v1alpha1.Broker, i, id int32) (fast, ha, remoting int32, ok bool) {
	np := br.Spec.Expose.NodePorts()
	if np == nil {
		return 0, 0, 0, false
	}
	fast = np.FirstPort + brokerNodePortsPerGroup*i + 3*id
	return fast, fast + 1, fast + 2, true
}

// brokerIP1Env is BROKER_IP1, the address the pods announce with expose NodePort:
// nodePort.advertisedHost, or the IP of the node the pod runs on. ok is false without
// NodePort.
func brokerIP1Env(br *v1alpha1.Broker) (env corev1.EnvVar, ok bool) {
	np := br.Spec.Expose.NodePorts()
	switch {
	case np == nil:
		return corev1.EnvVar{}, false
	case np.AdvertisedHost != "":
		return corev1.EnvVar{Name: "BROKER_IP1", Value: np.AdvertisedHost}, true
	}
	return fieldEnv("BROKER_IP1", "status.hostIP"), true
}

// BrokerConf renders the keys group i's pods share: operator defaults, then
// spec.config, then the keys the operator owns. namesrvAddr is not among them: it
// reaches the pod as -n $(NAMESRV_ADDR), read from an unhashed ConfigMap at container start,
// and running brokers get a new list through UPDATE_BROKER_CONFIG. brokerIP1/2 are per pod
// (BrokerAddressConf, the pod Service's addresses). aclEnable and aclPlainFile come from spec.acl only:
// they name the mounted Secret's file, whose content stays out of the hash (the brokers
// re-read it), while turning ACL on or off changes the hash and so rolls the pods. Keys
// are sorted so the hash only moves with content.
func BrokerConf(br *v1alpha1.Broker, i int32) string {
	kv := map[string]string{
		// Defaults a user may override. With RocketMQ's default (false) a 4.x slave
		// answers every pull with PULL_RETRY_IMMEDIATELY, so consumers stall while the
		// master is down, which defeats the replicas the operator runs.
		"slaveReadEnable": "true",
	}
	maps.Copy(kv, metricsConf()) // metrics on (metrics.go)
	maps.Copy(kv, br.Spec.Config)
	maps.Copy(kv, map[string]string{
		"brokerClusterName":  br.Spec.ClusterName,
		"brokerName":         BrokerName(i),
		"listenPort":         fmt.Sprint(br.Spec.ListenPort),
		"haListenPort":       fmt.Sprint(br.Spec.ListenPort + 1),
		"flushDiskType":      string(br.Spec.FlushDiskType),
		"storePathRootDir":   brokerStoreDir,
		"storePathCommitLog": brokerStoreDir + "/commitlog",
		// A slave replicates from its master's Service, the address the master announces
		// and keeps across restarts, by a DNS name it resolves at each connection; it does
		// not wait for the next registration (30 s) to learn it. Masters ignore the key.
		"haMasterAddress": BrokerMasterHAAddress(br, i),
	})
	// The API refuses them in spec.config; an object stored before that rule loses them.
	delete(kv, "aclEnable")
	delete(kv, "aclPlainFile")
	delete(kv, "advertisedListenPort")
	if br.Spec.ACL != nil {
		kv["aclEnable"] = "true"
		kv["aclPlainFile"] = BrokerACLFile(br)
	}
	// spec.tls owns the tls.* keys: the mounted Secret's files, mode and client auth. The
	// Secret's content stays out of the hash (the brokers re-read the files).
	if br.Spec.TLS != nil {
		withoutTLSKeys(kv)
		maps.Copy(kv, tlsConf(br.Spec.TLS, true))
	}
	var sb strings.Builder
	for _, k := range slices.Sorted(maps.Keys(kv)) {
		fmt.Fprintf(&sb, "%s=%s\n", k, kv[k])
	}
	return sb.String()
}

// BrokerMetricsPort is the brokers' metrics port, and whether they serve metrics.
func BrokerMetricsPort(br *v1alpha1.Broker) (int32, bool) { return metricsPort(br.Spec.Config) }

// BrokerPodConf is the broker.conf of one pod: the group's keys plus brokerId and
// brokerRole, which follow the status (BrokerID: the master role, brokerId 0 and the
// group's epoch for the pod of ordinal masterOrdinal, SLAVE for the others). The image is
// distroless, so there is no start script: the ConfigMap holds one file per pod, named after
// the pod, and the container picks its own with $(POD_NAME) in its command. A failover
// changes running brokers' roles at run time; the files say what a restart reads.
func BrokerPodConf(br *v1alpha1.Broker, i, ordinal int32) string {
	id := BrokerID(br, i, ordinal)
	if id != 0 {
		return BrokerConf(br, i) + fmt.Sprintf("brokerId=%d\nbrokerRole=SLAVE\n", id)
	}
	conf := BrokerConf(br, i) + fmt.Sprintf("brokerId=0\nbrokerRole=%s\n", br.Spec.BrokerRole)
	g := BrokerGroupStatusOf(br, i)
	if g != nil && g.Epoch > 0 {
		conf += fmt.Sprintf("masterEpoch=%d\n", g.Epoch)
	}
	if g != nil && g.Failover != nil && g.Failover.Phase != v1alpha1.FailoverDone && br.Spec.BrokerRole == v1alpha1.SyncMaster {
		// A failover's new master, restarted before its slave is back (failover.go).
		conf += "syncMasterAcksAlone=true\n"
	}
	return conf
}

// BrokerGroupStatusOf is group i's entry in the status; nil before the first one.
func BrokerGroupStatusOf(br *v1alpha1.Broker, i int32) *v1alpha1.BrokerGroupStatus {
	return BrokerGroupStatusByName(br, BrokerName(i))
}

// BrokerGroupStatusByName is the status entry of the group named name (broker-a); nil
// when there is none.
func BrokerGroupStatusByName(br *v1alpha1.Broker, name string) *v1alpha1.BrokerGroupStatus {
	for k := range br.Status.Groups {
		if br.Status.Groups[k].BrokerName == name {
			return &br.Status.Groups[k]
		}
	}
	return nil
}

// BrokerMasterOrdinal is the ordinal of group i's master pod: 0 until a failover moves
// it (status.groups[].masterOrdinal, or status.draining[] for a group scaled in).
func BrokerMasterOrdinal(br *v1alpha1.Broker, i int32) int32 {
	if g := BrokerGroupStatusOf(br, i); g != nil {
		return g.MasterOrdinal
	}
	for _, d := range br.Status.Draining {
		if d.BrokerName == BrokerName(i) {
			return d.MasterOrdinal
		}
	}
	return 0
}

// BrokerSlaveOrdinals are the ordinals of group i's pods other than its master's.
func BrokerSlaveOrdinals(br *v1alpha1.Broker, i int32) []int32 {
	m := BrokerMasterOrdinal(br, i)
	var out []int32
	for o := range br.Spec.ReplicasPerGroup {
		if o != m {
			out = append(out, o)
		}
	}
	return out
}

// BrokerID is the brokerId of group i's pod of ordinal ordinal: 0 for the master; the
// master's ordinal for the pod of ordinal 0 once a failover moved the master (they swap);
// the ordinal for the others.
func BrokerID(br *v1alpha1.Broker, i, ordinal int32) int32 {
	switch m := BrokerMasterOrdinal(br, i); ordinal {
	case m:
		return 0
	case 0:
		return m
	}
	return ordinal
}

// BrokerConfigHash changes with the group's config, the master role and, with expose
// NodePort, the group's node ports (its pods announce them), but not with
// replicasPerGroup: adding a slave adds a file without rolling the others.
func BrokerConfigHash(br *v1alpha1.Broker, i int32) string {
	s := BrokerConf(br, i) + "masterRole=" + string(br.Spec.BrokerRole)
	if first, _, _, ok := brokerNodePorts(br, i, 0); ok {
		s += fmt.Sprintf("\nnodePorts=%d", first)
	}
	return Hash(s)
}

type brokerGroup struct {
	*BrokerBuilder
	index int32
}

func (g brokerGroup) name() string { return BrokerGroupName(g.Instance, g.index) }

func (g brokerGroup) selector() map[string]string {
	l := selectorLabels(BrokerComponent, g.Instance.Name)
	l[BrokerNameLabel] = BrokerName(g.index)
	return l
}

func (g brokerGroup) labels() map[string]string {
	l := objectLabels(BrokerComponent, g.Instance.Name)
	l[BrokerNameLabel] = BrokerName(g.index)
	return l
}

// BrokerGroupSelector selects every object of group i (for scale-in cleanup).
func BrokerGroupSelector(br *v1alpha1.Broker, i int32) map[string]string {
	return brokerGroup{BrokerBuilder: &BrokerBuilder{Instance: br}, index: i}.selector()
}

// claimTemplate is a ReadWriteOnce claim; size falls back to def when unset (the API
// server defaults it, but a builder test or an old object may lack it).
func claimTemplate(name string, labels map[string]string, size *resource.Quantity, def string,
	class *string) corev1.PersistentVolumeClaim {
	q := resource.MustParse(def)
	if size != nil {
		q = *size
	}
	return corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			StorageClassName: class,
			Resources: corev1.VolumeResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceStorage: q}},
		},
	}
}
