package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Queue and permission defaults of a Topic (mqadmin updateTopic's are 8/8 and 6).
const (
	DefaultTopicQueueNums int32 = 8
	// PermRead, PermWrite and PermInherit are RocketMQ's topic permission bits.
	PermRead    int32 = 4
	PermWrite   int32 = 2
	PermInherit int32 = 1
	// DefaultTopicPerm is read and write.
	DefaultTopicPerm = PermRead | PermWrite
)

// TopicSpec is a topic on the master of every selected group of a Broker, and its route
// in the name servers.
//
// Queue counts: set queues (read and write alike) or readQueueNums and writeQueueNums;
// unset ones are 8. They may grow at any time. They may only shrink with
// allowQueueShrink: consumers read queues below readQueueNums only, so messages in the
// queues a shrink removes are stranded. The safe way down: set allowQueueShrink, lower
// writeQueueNums, wait until the group's lag in the upper queues is 0, lower readQueueNums.
// +kubebuilder:validation:XValidation:rule="has(self.topicName) == has(oldSelf.topicName) && (!has(self.topicName) || self.topicName == oldSelf.topicName)",message="topicName is immutable"
// +kubebuilder:validation:XValidation:rule="!has(self.queues) || !(has(self.readQueueNums) || has(self.writeQueueNums))",message="set queues, or readQueueNums and writeQueueNums, not both"
// +kubebuilder:validation:XValidation:rule="(has(self.allowQueueShrink) && self.allowQueueShrink) || (has(self.readQueueNums) ? self.readQueueNums : (has(self.queues) ? self.queues : 8)) >= (has(oldSelf.readQueueNums) ? oldSelf.readQueueNums : (has(oldSelf.queues) ? oldSelf.queues : 8))",message="readQueueNums cannot shrink: consumers stop reading the removed queues, so messages still in them would be stranded; set allowQueueShrink: true to shrink anyway (lower writeQueueNums first and wait until the removed queues are consumed)"
// +kubebuilder:validation:XValidation:rule="(has(self.allowQueueShrink) && self.allowQueueShrink) || (has(self.writeQueueNums) ? self.writeQueueNums : (has(self.queues) ? self.queues : 8)) >= (has(oldSelf.writeQueueNums) ? oldSelf.writeQueueNums : (has(oldSelf.queues) ? oldSelf.queues : 8))",message="writeQueueNums cannot shrink without allowQueueShrink: true (producers stop writing to the removed queues; lower readQueueNums only once they are consumed, or messages in them are stranded)"
type TopicSpec struct {
	// BrokerRef names the Broker (same namespace) whose masters hold the topic; immutable.
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="brokerRef is immutable"
	BrokerRef LocalObjectReference `json:"brokerRef"`

	// TopicName on the brokers; defaults to metadata.name, which must then be a valid
	// topic name (letters, digits, '_' and '-'). Immutable. RocketMQ's rules
	// (pkg/names.UserTopic): the characters of ^[%|a-zA-Z0-9_-]+$, at most 127 of them,
	// and none of the system topics, the RMQ_SYS_ prefix or a consumer group's %RETRY%
	// and %DLQ% topics.
	// +kubebuilder:validation:Pattern=`^[%|a-zA-Z0-9_-]+$`
	// +kubebuilder:validation:MaxLength=127
	// +kubebuilder:validation:XValidation:rule="!(self in ['TBW102', 'SCHEDULE_TOPIC_XXXX', 'BenchmarkTest', 'RMQ_SYS_TRANS_HALF_TOPIC', 'RMQ_SYS_TRACE_TOPIC', 'RMQ_SYS_TRANS_OP_HALF_TOPIC', 'TRANS_CHECK_MAX_TIME_TOPIC', 'SELF_TEST_TOPIC', 'OFFSET_MOVED_EVENT'])",messageExpression="'topicName ' + self + ' is a RocketMQ system topic'"
	// +kubebuilder:validation:XValidation:rule="!self.lowerAscii().startsWith('rmq_sys_')",message="topicName must not start with RMQ_SYS_: the prefix is RocketMQ's own"
	// +kubebuilder:validation:XValidation:rule="!self.startsWith('%RETRY%') && !self.startsWith('%DLQ%')",message="topicName must not start with %RETRY% or %DLQ%: those are consumer groups' retry and dead-letter topics, which the brokers create"
	// +optional
	TopicName string `json:"topicName,omitempty"`

	// Queues sets readQueueNums and writeQueueNums alike.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1024
	// +optional
	Queues *int32 `json:"queues,omitempty"`
	// ReadQueueNums: the queues consumers read, per group; default 8.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1024
	// +optional
	ReadQueueNums *int32 `json:"readQueueNums,omitempty"`
	// WriteQueueNums: the queues producers write, per group; default 8.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1024
	// +optional
	WriteQueueNums *int32 `json:"writeQueueNums,omitempty"`

	// Perm is RocketMQ's permission bits: 4 read, 2 write, 1 inherit (a template that
	// auto-created topics copy); 6, read and write, is the default. 4 stops producers
	// (drain a topic), 2 stops consumers.
	// +kubebuilder:default=6
	// +kubebuilder:validation:XValidation:rule="self >= 2 && self <= 7",message="perm is RocketMQ's bits: 4 read, 2 write, 1 inherit; one of 2 to 7 (6 is read-write)"
	// +optional
	Perm *int32 `json:"perm,omitempty"`

	// Order makes it an ordered topic, as mqadmin updateTopic -o true does: every name
	// server keeps the groups' queues in its KV space (ORDER_TOPIC_CONFIG,
	// "broker-a:8;broker-b:8"), adds them to the route as orderTopicConf when its
	// orderMessageEnable is on, and hands them to the brokers when they register (which is
	// where a Java broker's topic config takes its order flag from).
	// +optional
	Order bool `json:"order,omitempty"`

	// Groups selects the broker groups that hold the topic; unset, every group of the
	// Broker, including groups added later.
	// +optional
	Groups *TopicGroupSelector `json:"groups,omitempty"`

	// AllowQueueShrink lets readQueueNums and writeQueueNums go down.
	// +optional
	AllowQueueShrink bool `json:"allowQueueShrink,omitempty"`

	// DeletionPolicy: Delete removes the topic from the brokers (its messages and consumer
	// offsets with it), its route from the name servers and its order config when the
	// resource is deleted; Retain leaves all of it.
	// +kubebuilder:default=Retain
	// +optional
	DeletionPolicy DeletionPolicy `json:"deletionPolicy,omitempty"`
}

// TopicGroupSelector picks broker groups by brokerName.
type TopicGroupSelector struct {
	// Names of the groups (broker-a, broker-b, ...). A name the Broker does not have (yet)
	// keeps the topic from being Ready. Taking a name out leaves the topic on that group.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=26
	// +kubebuilder:validation:items:Pattern=`^broker-[a-z]$`
	// +listType=set
	Names []string `json:"names"`
}

// TopicQueues is one group's queue counts and permission.
type TopicQueues struct {
	ReadQueueNums  int32 `json:"readQueueNums"`
	WriteQueueNums int32 `json:"writeQueueNums"`
	Perm           int32 `json:"perm"`
}

// TopicGroupStatus is the topic on one broker group.
type TopicGroupStatus struct {
	BrokerName string `json:"brokerName"`
	// Queues as the group's master reports them (GET_ALL_TOPIC_CONFIG).
	TopicQueues `json:",inline"`
	// Route is the group's share of the route as the name servers publish it
	// (GET_ROUTEINFO_BY_TOPIC); unset while a name server publishes none.
	// +optional
	Route *TopicQueues `json:"route,omitempty"`
	// Messages is the sum of the group's queues' max offsets: messages ever written.
	// +optional
	Messages int64 `json:"messages,omitempty"`
}

// TopicStatus is the observed state of a topic.
type TopicStatus struct {
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// TopicName in effect on the brokers.
	// +optional
	TopicName string `json:"topicName,omitempty"`
	// Queues is "read/write" as the spec asks, for kubectl get.
	// +optional
	Queues string `json:"queues,omitempty"`
	// Groups that hold the topic, as their masters report it.
	// +optional
	Groups []TopicGroupStatus `json:"groups,omitempty"`
	// Messages is the sum over the groups.
	// +optional
	Messages int64 `json:"messages,omitempty"`
	// StatsUpdatedAt is when the queues and messages were last read.
	// +optional
	StatsUpdatedAt *metav1.Time `json:"statsUpdatedAt,omitempty"`
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// Topic is a RocketMQ topic on the masters of a Broker, kept in step with every selected
// group: created on groups added later, and put back when it is deleted or changed behind
// the operator's back.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=rmqtopic,categories=rocketmq
// +kubebuilder:validation:XValidation:rule="has(self.spec.topicName) || self.metadata.name.matches('^[a-zA-Z0-9_-]{1,127}$')",message="metadata.name is not a valid RocketMQ topic name (letters, digits, '_' and '-', at most 127): set spec.topicName"
// +kubebuilder:printcolumn:name="Topic",type=string,JSONPath=`.status.topicName`
// +kubebuilder:printcolumn:name="Broker",type=string,JSONPath=`.spec.brokerRef.name`
// +kubebuilder:printcolumn:name="Queues",type=string,JSONPath=`.status.queues`
// +kubebuilder:printcolumn:name="Messages",type=integer,JSONPath=`.status.messages`
// +kubebuilder:printcolumn:name="Status",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`
// +kubebuilder:printcolumn:name="Perm",type=integer,JSONPath=`.spec.perm`,priority=1
// +kubebuilder:printcolumn:name="Order",type=boolean,JSONPath=`.spec.order`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type Topic struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   TopicSpec   `json:"spec"`
	Status TopicStatus `json:"status,omitempty"`
}

// TopicList is a list of Topic.
// +kubebuilder:object:root=true
type TopicList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Topic `json:"items"`
}

func init() {
	SchemeBuilder.Register(&Topic{}, &TopicList{})
}

// EffectiveTopicName is spec.topicName or, when unset, metadata.name.
func (t *Topic) EffectiveTopicName() string {
	if t.Spec.TopicName != "" {
		return t.Spec.TopicName
	}
	return t.Name
}

// QueueNums are the read and write queue counts the spec asks for.
func (t *Topic) QueueNums() (read, write int32) {
	read, write = DefaultTopicQueueNums, DefaultTopicQueueNums
	if q := t.Spec.Queues; q != nil {
		read, write = *q, *q
	}
	if r := t.Spec.ReadQueueNums; r != nil {
		read = *r
	}
	if w := t.Spec.WriteQueueNums; w != nil {
		write = *w
	}
	return read, write
}

// EffectivePerm is spec.perm, or read-write.
func (t *Topic) EffectivePerm() int32 {
	if t.Spec.Perm != nil {
		return *t.Spec.Perm
	}
	return DefaultTopicPerm
}

// SelectsGroup says whether the topic belongs on the broker group brokerName.
func (t *Topic) SelectsGroup(brokerName string) bool {
	if t.Spec.Groups == nil {
		return true
	}
	for _, n := range t.Spec.Groups.Names {
		if n == brokerName {
			return true
		}
	}
	return false
}
