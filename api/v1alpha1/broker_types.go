package v1alpha1

import (
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// BrokerRole is the role of the master of every group; slaves are always SLAVE.
// +kubebuilder:validation:Enum=ASYNC_MASTER;SYNC_MASTER
type BrokerRole string

// FlushDiskType is broker.conf flushDiskType.
// +kubebuilder:validation:Enum=ASYNC_FLUSH;SYNC_FLUSH
type FlushDiskType string

// BrokerSpec is the desired state of a broker cluster: Groups broker groups named broker-a,
// broker-b, ..., each one StatefulSet whose ordinal is the brokerId (0 = master).
// +kubebuilder:validation:XValidation:rule="has(self.nameServerRef) != has(self.nameServerAddresses)",message="set exactly one of nameServerRef or nameServerAddresses"
// +kubebuilder:validation:XValidation:rule="self.brokerRole != 'SYNC_MASTER' || self.replicasPerGroup >= 2",message="brokerRole SYNC_MASTER needs replicasPerGroup >= 2 (a master waits for a slave on every write)"
// +kubebuilder:validation:XValidation:rule="!has(self.tls) || !has(self.config) || self.config.all(k, !k.startsWith('tls.') && k != 'useTLS')",message="with spec.tls, config must not set tls.* keys or useTLS: spec.tls sets them"
// +kubebuilder:validation:XValidation:rule="!has(self.expose) || self.expose.type != 'NodePort' || !has(self.expose.nodePort) || self.expose.nodePort.firstPort + 15 * (self.groups - 1) + 3 * self.replicasPerGroup - 1 <= 32767",message="expose.nodePort.firstPort leaves too few node ports: the last pod of the last group takes up to firstPort + 15*(groups-1) + 3*replicasPerGroup - 1, at most 32767"
// +kubebuilder:validation:XValidation:rule="!has(self.failover) || !has(self.failover.mode) || self.failover.mode == 'Disabled' || self.replicasPerGroup >= 2",message="failover needs replicasPerGroup >= 2: a slave to promote"
type BrokerSpec struct {
	ContainerSpec `json:",inline"`

	// brokerClusterName of every broker; immutable.
	// +kubebuilder:default=DefaultCluster
	// +kubebuilder:validation:Pattern=`^[a-zA-Z0-9_-]{1,64}$`
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="clusterName is immutable"
	// +optional
	ClusterName string `json:"clusterName,omitempty"`

	// NameServerRef names a NameServer in the same namespace.
	// +optional
	NameServerRef *LocalObjectReference `json:"nameServerRef,omitempty"`

	// NameServerAddresses lists name servers outside this namespace as host:port.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:items:Pattern=`^[a-zA-Z0-9.-]+:[0-9]{1,5}$`
	// +optional
	NameServerAddresses []string `json:"nameServerAddresses,omitempty"`

	// Number of broker groups (broker-a, broker-b, ...).
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=26
	// +optional
	Groups int32 `json:"groups,omitempty"`

	// Pods per group: one master plus replicasPerGroup-1 slaves.
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=5
	// +optional
	ReplicasPerGroup int32 `json:"replicasPerGroup,omitempty"`

	// Role of each group's master.
	// +kubebuilder:default=ASYNC_MASTER
	// +optional
	BrokerRole BrokerRole `json:"brokerRole,omitempty"`

	// +kubebuilder:default=ASYNC_FLUSH
	// +optional
	FlushDiskType FlushDiskType `json:"flushDiskType,omitempty"`

	// Port the broker listens on (broker.conf listenPort); the HA port is listenPort+1 and
	// the fast channel listenPort-2.
	// +kubebuilder:default=10911
	// +kubebuilder:validation:Minimum=1026
	// +kubebuilder:validation:Maximum=65534
	// +optional
	ListenPort int32 `json:"listenPort,omitempty"`

	// Config holds extra broker.conf keys. Keys the operator owns are refused.
	// slaveReadEnable defaults to true here (RocketMQ's default is false) so that
	// consumers keep reading from the slaves while a master is down.
	// +kubebuilder:validation:MaxProperties=128
	// +kubebuilder:validation:XValidation:rule="self.all(k, !(k in ['brokerClusterName', 'brokerName', 'brokerId', 'brokerRole', 'namesrvAddr', 'listenPort', 'storePathRootDir', 'storePathCommitLog', 'flushDiskType', 'brokerIP1', 'brokerIP2', 'advertisedListenPort', 'haListenPort', 'haMasterAddress']))",message="config must not set keys the operator owns: brokerClusterName, brokerName, brokerId, brokerRole, namesrvAddr, listenPort, storePathRootDir, storePathCommitLog, flushDiskType, brokerIP1, brokerIP2, advertisedListenPort, haListenPort, haMasterAddress"
	// +kubebuilder:validation:XValidation:rule="self.all(k, k.matches('^[a-zA-Z][a-zA-Z0-9.]*$'))",message="config keys must be broker.conf field names (letters, digits, dots)"
	// +kubebuilder:validation:XValidation:rule="!('aclEnable' in self) && !('aclPlainFile' in self)",message="config must not set aclEnable or aclPlainFile: turn ACL on with spec.acl, which mounts the ACL file and sets both"
	// +optional
	Config map[string]string `json:"config,omitempty"`

	// ACL turns on RocketMQ's plain ACL on every broker (broker.conf aclEnable=true): the
	// brokers then check each request against plain_acl.yml, read from a Secret. Turning it
	// on or off rolls the broker pods; editing the Secret does not (the brokers re-read it).
	// +optional
	ACL *BrokerACL `json:"acl,omitempty"`

	// TLS turns on TLS for the brokers' ports and their own connections (see TLSSpec).
	// +optional
	TLS *TLSSpec `json:"tls,omitempty"`

	// Rollout says how the operator rolls a change out to running pods (see BrokerRollout).
	// +optional
	Rollout *BrokerRollout `json:"rollout,omitempty"`

	// Failover says whether the operator replaces a group's master by its most
	// up-to-date slave (see BrokerFailover). Without it, as in RocketMQ 4.x, a group whose
	// master is gone serves reads only until the master is back.
	// +optional
	Failover *BrokerFailover `json:"failover,omitempty"`

	// ScaleIn says how a group removed by lowering groups leaves (see BrokerScaleIn).
	// +optional
	ScaleIn *BrokerScaleIn `json:"scaleIn,omitempty"`

	// NetworkPolicy, when enabled, keeps a NetworkPolicy <name>-broker over every pod of
	// this Broker: listenPort and the fast channel (listenPort-2) admit
	// networkPolicy.clientPeers (default: this namespace), the operator's namespace and this
	// Broker's own pods (slaves copy metadata from their master there); the HA port
	// (listenPort+1) admits this Broker's own pods only. With expose NodePort or
	// LoadBalancer listenPort and the fast channel admit every address as well (ipBlocks
	// 0.0.0.0/0 and ::/0): through a node port or a load balancer, connections come from
	// outside the cluster or from a node. Brokers reachable from outside the cluster
	// should run with spec.acl.
	// +optional
	NetworkPolicy *NetworkPolicySpec `json:"networkPolicy,omitempty"`

	// Expose says how clients reach the brokers. ClusterIP (the default): each pod
	// announces its own Service's ClusterIP, reachable inside the cluster only. NodePort:
	// each pod's Service opens node ports too, and the pod announces nodePort.advertisedHost
	// (or its node's IP) with its remoting node port, to every client, those inside the
	// cluster included; replication stays on the ClusterIP. Group g (0 for broker-a) owns
	// the 15 node ports from firstPort+15*g, room for 5 pods so that scaling moves no
	// port, and its pod brokerId n the three from firstPort+15*g+3*n: the fast channel,
	// HA, then the remoting port (a client with vipChannelEnabled dials the announced port
	// minus 2). LoadBalancer: each pod's Service is of type LoadBalancer on the same ports,
	// and the pod announces the load balancer's first ingress IP (brokerIP1) once the
	// cloud has given it one, HA staying on the ClusterIP (brokerIP2); until every pod
	// Service of a group has an IP the group's StatefulSet and ConfigMap are held and
	// Ready says LoadBalancerPending. Changing expose, or a load balancer's IP, rolls the
	// pods. Brokers reachable from outside the cluster should run with spec.acl.
	// +optional
	Expose *BrokerExpose `json:"expose,omitempty"`

	// +kubebuilder:default={}
	// +optional
	Storage BrokerStorage `json:"storage,omitempty"`
}

// BrokerACL is where the brokers' plain_acl.yml and the operator's own account come from,
// in one of two modes that exclude each other:
//
//   - secretName set: the file is yours. The Secret's plain_acl.yml is mounted as it is;
//     User resources of this Broker are not applied (their Ready condition says
//     ACLFileFromSecret). Put the operator's admin account in the file and name its
//     credentials in operatorCredentialsSecretName.
//   - secretName unset (acl: {} is enough): the operator renders plain_acl.yml from the
//     Broker's User resources plus its own admin account into a Secret it owns,
//     <name>-users-acl, and mounts that. The admin account is the one in
//     operatorCredentialsSecretName, or, when that is unset too, one the operator makes
//     once in a Secret <name>-operator-credentials (accessKey rocketmq-operator and a
//     random secretKey). globalWhiteRemoteAddresses go into the file.
//
// Switching modes changes the mounted Secret and so rolls the broker pods.
// +kubebuilder:validation:XValidation:rule="!has(self.secretName) || !has(self.globalWhiteRemoteAddresses)",message="globalWhiteRemoteAddresses is for the file the operator renders from User resources: with secretName, put them in your plain_acl.yml"
type BrokerACL struct {
	// SecretName names a Secret in the Broker's namespace that holds plain_acl.yml (RocketMQ
	// 4.x format: accounts, white lists, permissions). It is mounted read-only into every
	// broker pod, which must not start without it. The kubelet refreshes a mounted Secret
	// within about a minute of an edit, and the brokers re-read the file every 5 s, so new
	// rules apply without a restart. Unset, the operator renders the file from the
	// Broker's User resources.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*$')",message="acl.secretName must be the name of a Secret (lower case letters, digits, '-' and '.')"
	// +optional
	SecretName string `json:"secretName,omitempty"`

	// Key of the file in the Secret. The broker reads it as /etc/rocketmq/acl/<key>.
	// +kubebuilder:default="plain_acl.yml"
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="self.matches('^[-._a-zA-Z0-9]+$') && !self.startsWith('..') && self != '.'",message="acl.key must be a Secret data key (letters, digits, '-', '_', '.'; not starting with '..')"
	// +optional
	Key string `json:"key,omitempty"`

	// OperatorCredentialsSecretName names a Secret in the Broker's namespace with keys
	// accessKey and secretKey: an account plain_acl.yml declares admin: true. The operator
	// signs its calls to the brokers (topics, subscription groups, offset resets and lag,
	// name server updates) with it. With secretName and without it those calls go
	// unsigned, and the brokers refuse them unless the file white-lists the operator's
	// address; the AdminAccess condition says so. It may name the same Secret as
	// secretName. Without secretName the operator adds this account to the file it renders
	// (and makes one when this is unset).
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*$')",message="acl.operatorCredentialsSecretName must be the name of a Secret (lower case letters, digits, '-' and '.')"
	// +optional
	OperatorCredentialsSecretName string `json:"operatorCredentialsSecretName,omitempty"`

	// GlobalWhiteRemoteAddresses go into the rendered file (without secretName only):
	// requests from matching addresses need no account at all. Keep it empty unless
	// something that cannot sign must reach the brokers.
	// +kubebuilder:validation:MaxItems=32
	// +kubebuilder:validation:items:MaxLength=256
	// +kubebuilder:validation:items:Pattern=`^[0-9a-fA-F.:,*{}-]+$`
	// +listType=atomic
	// +optional
	GlobalWhiteRemoteAddresses []string `json:"globalWhiteRemoteAddresses,omitempty"`
}

// UsersMode says whether the operator renders plain_acl.yml from User resources: spec.acl
// is set and names no secretName.
func (a *BrokerACL) UsersMode() bool { return a != nil && a.SecretName == "" }

// Keys of the operator credentials Secret (spec.acl.operatorCredentialsSecretName).
const (
	ACLAccessKeyKey = "accessKey"
	ACLSecretKeyKey = "secretKey"
	// DefaultACLKey is spec.acl.key's default.
	DefaultACLKey = "plain_acl.yml"
)

// ConditionAdminAccess, on a Broker with spec.acl, says whether the operator's admin calls
// to its brokers are signed (True) or will be refused (False, with the reason).
const ConditionAdminAccess = "AdminAccess"

// BrokerStorage is the PersistentVolumeClaim each broker pod gets for its store.
type BrokerStorage struct {
	// Size of each pod's claim; immutable (StatefulSet volume claims cannot change).
	// +kubebuilder:default="20Gi"
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="storage.size is immutable"
	// +kubebuilder:validation:XValidation:rule="quantity(string(self)).isGreaterThan(quantity('0'))",message="storage.size must be positive"
	// +optional
	Size *resource.Quantity `json:"size,omitempty"`
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="storage.storageClassName is immutable"
	// +optional
	StorageClassName *string `json:"storageClassName,omitempty"`
	// What happens to a pod's claim when replicasPerGroup or groups shrink.
	// +kubebuilder:default=Retain
	// +optional
	WhenScaled ReclaimPolicy `json:"whenScaled,omitempty"`
	// What happens to the claims when the Broker is deleted.
	// +kubebuilder:default=Retain
	// +optional
	WhenDeleted ReclaimPolicy `json:"whenDeleted,omitempty"`
}

// BrokerMember is one pod of a broker group.
type BrokerMember struct {
	// brokerId: 0 for the master, 1..N for slaves: the pod ordinal, except after a
	// failover, when the master (ordinal masterOrdinal) and the pod of ordinal 0 swap
	// theirs.
	BrokerID int32  `json:"brokerId"`
	Pod      string `json:"pod"`
	// Address is host:port of the pod's stable DNS name.
	Address string `json:"address"`
	Ready   bool   `json:"ready"`
	// LagBytes, on a slave, is how far its commitlog was behind its master's at the
	// operator's last look (commitLogMaxOffset of both, GET_BROKER_RUNTIME_INFO); unset
	// when either could not be asked.
	// +optional
	LagBytes *int64 `json:"lagBytes,omitempty"`
}

// BrokerGroupStatus is one broker group (one brokerName).
type BrokerGroupStatus struct {
	BrokerName string `json:"brokerName"`
	// +optional
	Master *BrokerMember `json:"master,omitempty"`
	// +optional
	Slaves []BrokerMember `json:"slaves,omitempty"`
	// Rolling is where this group's roll stands; empty when it runs the current spec or
	// waits for its turn.
	// +optional
	Rolling RollPhase `json:"rolling,omitempty"`
	// MasterSteppedAsideAt is when the operator withdrew the master's write permission at
	// the name servers, before restarting it; cleared once the master is back.
	// +optional
	MasterSteppedAsideAt *metav1.Time `json:"masterSteppedAsideAt,omitempty"`
	// MasterOrdinal is the ordinal of the group's master pod: 0 until a failover moves
	// it. The pods' rendered roles and the HA Service follow it.
	// +optional
	MasterOrdinal int32 `json:"masterOrdinal,omitempty"`
	// Epoch is the master's term: 0 until the group's first failover, then one more at
	// each.
	// +optional
	Epoch int64 `json:"epoch,omitempty"`
	// MasterUnavailableSince is when the operator first saw the master's pod not Ready,
	// for Automatic failover; cleared once it is Ready.
	// +optional
	MasterUnavailableSince *metav1.Time `json:"masterUnavailableSince,omitempty"`
	// Failover is the group's latest failover.
	// +optional
	Failover *GroupFailover `json:"failover,omitempty"`
}

// BrokerRollout tunes how a change reaches running pods. The operator rolls one group
// at a time, in index order; in each group the slaves first (highest brokerId first, each
// after the previous is Ready: registered and, for a slave, replicating), then the master.
// Before it restarts a master it withdraws the master's write permission at the name
// servers (WIPE_WRITE_PERM_OF_BROKER), so that producers move to the other groups at their
// next route refresh, and the group takes writes again once its master is back. Under
// SYNC_MASTER the master steps aside before the slaves go (without a slave it would answer
// sends SLAVE_NOT_AVAILABLE).
type BrokerRollout struct {
	// MasterStepAsideSeconds is how long a master is left without write permission before
	// it restarts: the official clients refresh routes every 30 s. 0 restarts masters at
	// once (a single-group cluster has nowhere else to send, so it always does).
	// +kubebuilder:default=35
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=600
	// +optional
	MasterStepAsideSeconds *int32 `json:"masterStepAsideSeconds,omitempty"`

	// MaxSlaveLagBytes is how far behind its master (commitlog bytes) a replaced slave may
	// be for the roll to go on: the master steps aside only once its slaves hold nearly
	// everything it has.
	// +kubebuilder:default=1048576
	// +kubebuilder:validation:Minimum=0
	// +optional
	MaxSlaveLagBytes *int64 `json:"maxSlaveLagBytes,omitempty"`
}

// BrokerScaleIn tunes the removal of groups when spec.groups is lowered. A removed group
// is first made read-only (brokerPermission=4 on its master, which re-registers with the
// name servers at once): producers send to the other groups, consumers keep reading it.
// The operator removes the group's objects once every consumer group has consumed the
// messages it holds (no lag on that group, by GET_CONSUME_STATS of each subscription
// group the master knows), or when drainTimeoutSeconds have passed; status.draining and
// the ScaleIn condition say what it waits for. Raising groups again while a group drains
// gives it its write permission back.
type BrokerScaleIn struct {
	// DrainTimeoutSeconds bounds the wait for consumers: after it the group is removed
	// with whatever it still holds (a Warning Event says how much). Unset waits until the
	// messages are consumed, however long that takes; 0 removes groups at once.
	// +kubebuilder:validation:Minimum=0
	// +optional
	DrainTimeoutSeconds *int32 `json:"drainTimeoutSeconds,omitempty"`
}

// DrainingGroup is a group beyond spec.groups that waits, read-only, for its messages to
// be consumed before the operator removes it.
type DrainingGroup struct {
	BrokerName string `json:"brokerName"`
	// Since is when the operator made the group read-only.
	Since metav1.Time `json:"since"`
	// Unconsumed is how many of the group's messages consumer groups had not consumed at
	// the last look; -1 when the operator could not tell.
	Unconsumed int64 `json:"unconsumed"`
	// MasterOrdinal is the group's masterOrdinal when it began to drain: its
	// status.groups entry is gone.
	// +optional
	MasterOrdinal int32 `json:"masterOrdinal,omitempty"`
}

// ConditionScaleIn, on a Broker whose groups were lowered, says whether groups still
// drain (True, reason Draining, with what they wait for) or the last one is gone (False,
// reason GroupsRemoved).
const ConditionScaleIn = "ScaleIn"

// RollPhase is where one group's roll stands.
// +kubebuilder:validation:Enum=Slaves;MasterSteppingAside;Master
type RollPhase string

// Roll phases of a group.
const (
	RollSlaves              RollPhase = "Slaves"              // the slaves are being replaced
	RollMasterSteppingAside RollPhase = "MasterSteppingAside" // the master is left without write permission
	RollMaster              RollPhase = "Master"              // the master is being replaced
)

// FailoverMode says when the operator fails a group over.
// +kubebuilder:validation:Enum=Disabled;Manual;Automatic
type FailoverMode string

const (
	// FailoverDisabled: a group whose master is gone is read-only until it is back.
	FailoverDisabled FailoverMode = "Disabled"
	// FailoverManual: a group fails over when the Broker's FailoverAnnotation names it.
	FailoverManual FailoverMode = "Manual"
	// FailoverAutomatic: as Manual, and also once a master has been unavailable for
	// afterSeconds.
	FailoverAutomatic FailoverMode = "Automatic"
)

// FailoverAnnotation on a Broker asks for a planned failover of the group it names
// (brokerName, "broker-a"), under Manual and Automatic: the master stops taking writes,
// its most up-to-date slave catches up with it and becomes master, and the old master
// becomes its slave. The operator removes the annotation once the failover is done (or
// refused, with an Event saying why).
const FailoverAnnotation = "rocketmq.openrmq.io/failover"

// BrokerFailover: a failover fences the old master (its write permission withdrawn at
// the name servers; a master that comes back older than the group's epoch is refused by
// them and refuses writes), promotes the Ready slave with the highest commitlog offset
// at run time with the next epoch, points the group's HA Service at it, and lets the old
// master rejoin as a slave: it cuts what it wrote past the new epoch's start (reported in
// an Event) before replicating. Under SYNC_MASTER every acknowledged message is on the
// promoted slave: a send is acknowledged only once a slave has it, and the slave chosen
// holds the most.
type BrokerFailover struct {
	// +kubebuilder:default=Disabled
	// +optional
	Mode FailoverMode `json:"mode,omitempty"`
	// AfterSeconds is how long a master must have been unavailable (its pod not Ready)
	// before Automatic fails its group over.
	// +kubebuilder:default=60
	// +kubebuilder:validation:Minimum=10
	// +kubebuilder:validation:Maximum=3600
	// +optional
	AfterSeconds int32 `json:"afterSeconds,omitempty"`
}

// FailoverPhase is where a group's failover stands.
type FailoverPhase string

const (
	// FailoverFencing: the old master's writes are being stopped, and the chosen slave
	// catches up with it when the old master still serves.
	FailoverFencing FailoverPhase = "Fencing"
	// FailoverPromoting: the chosen slave is being made master of the new epoch.
	FailoverPromoting FailoverPhase = "Promoting"
	// FailoverRejoining: the new master serves; the old master is being made its slave.
	FailoverRejoining FailoverPhase = "Rejoining"
	// FailoverDone: the old master replicates from the new one (or is still away).
	FailoverDone FailoverPhase = "Done"
)

// GroupFailover is a group's latest failover.
type GroupFailover struct {
	// Trigger is Manual (the annotation) or Automatic.
	Trigger FailoverMode  `json:"trigger"`
	Phase   FailoverPhase `json:"phase"`
	// From and To are the ordinals of the old and the new master's pods.
	From int32 `json:"from"`
	To   int32 `json:"to"`
	// Epoch is the new master's epoch; StartOffset the commitlog offset it began at.
	Epoch int64 `json:"epoch"`
	// +optional
	StartOffset *int64 `json:"startOffset,omitempty"`
	// OldMasterExtraBytes is how many commitlog bytes the old master held past
	// StartOffset, cut when it rejoined; unset until it has.
	// +optional
	OldMasterExtraBytes *int64      `json:"oldMasterExtraBytes,omitempty"`
	StartedAt           metav1.Time `json:"startedAt"`
	// WritesBackAt is when the new master took writes.
	// +optional
	WritesBackAt *metav1.Time `json:"writesBackAt,omitempty"`
	// Reason says why the failover began; Message where it stands.
	// +optional
	Reason string `json:"reason,omitempty"`
	// +optional
	Message string `json:"message,omitempty"`
}

// BrokerStatus is the observed state of a broker cluster.
type BrokerStatus struct {
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Ready pods of all groups, and pods wanted.
	// +optional
	ReadyReplicas int32 `json:"readyReplicas,omitempty"`
	// +optional
	Replicas int32 `json:"replicas,omitempty"`
	// Ready as "ready/wanted" pods, for kubectl get.
	// +optional
	ReadySummary string `json:"readySummary,omitempty"`
	// NameServerAddress is the namesrvAddr every running broker was last told.
	// +optional
	NameServerAddress string `json:"nameServerAddress,omitempty"`
	// +optional
	Groups []BrokerGroupStatus `json:"groups,omitempty"`
	// Draining lists the groups scaled in that wait for their messages to be consumed.
	// +listType=map
	// +listMapKey=brokerName
	// +optional
	Draining []DrainingGroup `json:"draining,omitempty"`
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// Broker runs a RocketMQ broker cluster: one StatefulSet per broker group.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=rmqbroker,categories=rocketmq
// +kubebuilder:printcolumn:name="Cluster",type=string,JSONPath=`.spec.clusterName`
// +kubebuilder:printcolumn:name="Groups",type=integer,JSONPath=`.spec.groups`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.readySummary`
// +kubebuilder:printcolumn:name="Status",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`
// +kubebuilder:printcolumn:name="NameServers",type=string,JSONPath=`.status.nameServerAddress`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type Broker struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   BrokerSpec   `json:"spec"`
	Status BrokerStatus `json:"status,omitempty"`
}

// BrokerList is a list of Broker.
// +kubebuilder:object:root=true
type BrokerList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Broker `json:"items"`
}

func init() {
	SchemeBuilder.Register(&Broker{}, &BrokerList{})
}

const (
	AsyncMaster BrokerRole    = "ASYNC_MASTER"
	SyncMaster  BrokerRole    = "SYNC_MASTER"
	AsyncFlush  FlushDiskType = "ASYNC_FLUSH"
	SyncFlush   FlushDiskType = "SYNC_FLUSH"
)
