package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// DeletionPolicy says whether deleting the resource removes the group from the brokers.
// +kubebuilder:validation:Enum=Retain;Delete
type DeletionPolicy string

const (
	DeletionRetain DeletionPolicy = "Retain"
	DeletionDelete DeletionPolicy = "Delete"
)

// ConsumerGroupSpec is the desired subscription group on every master of a broker cluster.
// +kubebuilder:validation:XValidation:rule="has(self.groupName) == has(oldSelf.groupName) && (!has(self.groupName) || self.groupName == oldSelf.groupName)",message="groupName is immutable"
type ConsumerGroupSpec struct {
	// BrokerRef names the Broker (same namespace) whose masters hold the group; immutable.
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="brokerRef is immutable"
	BrokerRef LocalObjectReference `json:"brokerRef"`

	// GroupName on the brokers; defaults to metadata.name.
	// +kubebuilder:validation:Pattern=`^[%|a-zA-Z0-9_-]{1,255}$`
	// +optional
	GroupName string `json:"groupName,omitempty"`

	// Times a message is redelivered before it goes to %DLQ%<group>. A pointer: 0 is valid.
	// +kubebuilder:default=16
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=64
	// +optional
	RetryMaxTimes *int32 `json:"retryMaxTimes,omitempty"`

	// +optional
	ConsumeBroadcastEnable bool `json:"consumeBroadcastEnable,omitempty"`

	// A pointer so that an explicit false survives Go clients' omitempty.
	// +kubebuilder:default=true
	// +optional
	ConsumeFromMinEnable *bool `json:"consumeFromMinEnable,omitempty"`

	// Delete removes the group from the brokers when the resource is deleted.
	// +kubebuilder:default=Retain
	// +optional
	DeletionPolicy DeletionPolicy `json:"deletionPolicy,omitempty"`

	// OffsetReset moves the group's offsets once per distinct id.
	// +optional
	OffsetReset *OffsetReset `json:"offsetReset,omitempty"`

	// OffsetMigration copies another group's offsets onto this one once per distinct id.
	// +optional
	OffsetMigration *OffsetMigration `json:"offsetMigration,omitempty"`
}

// OffsetReset is applied exactly once per id: re-applying the same manifest is a no-op, a
// new id applies it again. earliest resets to timestamp 0 (each queue's min offset), latest
// to timestamp -1 (each queue's max offset, as the Java broker's Broker2Client does).
// +kubebuilder:validation:XValidation:rule="[has(self.timestamp), has(self.earliest) && self.earliest, has(self.latest) && self.latest].filter(x, x).size() == 1",message="offsetReset needs exactly one target: timestamp, earliest: true or latest: true"
type OffsetReset struct {
	// ID names this reset; change it to reset again.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=128
	ID string `json:"id"`
	// Topic to reset; empty means every topic the group has offsets for.
	// +kubebuilder:validation:MaxLength=255
	// +optional
	Topic string `json:"topic,omitempty"`
	// +optional
	Timestamp *metav1.Time `json:"timestamp,omitempty"`
	// +optional
	Earliest bool `json:"earliest,omitempty"`
	// +optional
	Latest bool `json:"latest,omitempty"`
}

// OffsetMigration clones fromGroup's offsets (CLONE_GROUP_OFFSET) once per id.
type OffsetMigration struct {
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=128
	ID string `json:"id"`
	// +kubebuilder:validation:Pattern=`^[%|a-zA-Z0-9_-]{1,255}$`
	FromGroup string `json:"fromGroup"`
	// Topic to copy; empty means every topic fromGroup has offsets for.
	// +optional
	Topic string `json:"topic,omitempty"`
}

// QueueOffsetChange is one queue's consumer offset before and after an offset change.
type QueueOffsetChange struct {
	Topic      string `json:"topic"`
	BrokerName string `json:"brokerName"`
	QueueID    int32  `json:"queueId"`
	Before     int64  `json:"before"`
	After      int64  `json:"after"`
}

// AppliedOffsetChange records the last reset or migration the operator applied.
type AppliedOffsetChange struct {
	ID        string      `json:"id"`
	AppliedAt metav1.Time `json:"appliedAt"`
	// Queues lists at most 256 queues; QueuesOmitted counts the rest.
	// +optional
	Queues []QueueOffsetChange `json:"queues,omitempty"`
	// +optional
	QueuesOmitted int32 `json:"queuesOmitted,omitempty"`
}

// TopicLag is the summed lag (broker offset - consumer offset) over a topic's queues.
type TopicLag struct {
	Topic string `json:"topic"`
	Lag   int64  `json:"lag"`
}

// ConsumerGroupStatus is the observed state of a subscription group.
type ConsumerGroupStatus struct {
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// GroupName in effect on the brokers.
	// +optional
	GroupName string `json:"groupName,omitempty"`
	// Masters (brokerName) that hold the group.
	// +optional
	Brokers []string `json:"brokers,omitempty"`
	// +optional
	LastOffsetReset *AppliedOffsetChange `json:"lastOffsetReset,omitempty"`
	// +optional
	LastOffsetMigration *AppliedOffsetChange `json:"lastOffsetMigration,omitempty"`
	// +optional
	Lag []TopicLag `json:"lag,omitempty"`
	// +optional
	TotalLag int64 `json:"totalLag,omitempty"`
	// +optional
	LagUpdatedAt *metav1.Time `json:"lagUpdatedAt,omitempty"`
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// ConsumerGroup is a RocketMQ subscription group on every master of a Broker.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=rmqgroup,categories=rocketmq
// +kubebuilder:validation:XValidation:rule="has(self.spec.groupName) || self.metadata.name.matches('^[a-zA-Z0-9_-]{1,255}$')",message="metadata.name is not a valid RocketMQ group name (letters, digits, '_' and '-'): set spec.groupName"
// +kubebuilder:printcolumn:name="Group",type=string,JSONPath=`.status.groupName`
// +kubebuilder:printcolumn:name="Broker",type=string,JSONPath=`.spec.brokerRef.name`
// +kubebuilder:printcolumn:name="Lag",type=integer,JSONPath=`.status.totalLag`
// +kubebuilder:printcolumn:name="Status",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`
// +kubebuilder:printcolumn:name="LastReset",type=string,JSONPath=`.status.lastOffsetReset.id`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type ConsumerGroup struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   ConsumerGroupSpec   `json:"spec"`
	Status ConsumerGroupStatus `json:"status,omitempty"`
}

// ConsumerGroupList is a list of ConsumerGroup.
// +kubebuilder:object:root=true
type ConsumerGroupList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ConsumerGroup `json:"items"`
}

func init() {
	SchemeBuilder.Register(&ConsumerGroup{}, &ConsumerGroupList{})
}

// EffectiveGroupName is spec.groupName or, when unset, metadata.name.
func (g *ConsumerGroup) EffectiveGroupName() string {
	if g.Spec.GroupName != "" {
		return g.Spec.GroupName
	}
	return g.Name
}
