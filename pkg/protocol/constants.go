package protocol

// Permission bits of a topic or a broker (Java's PermName).
const (
	PermPriority = 0x1 << 3
	PermRead     = 0x1 << 2
	PermWrite    = 0x1 << 1
	PermInherit  = 0x1 << 0
)

// IsReadable reports whether perm allows reading.
func IsReadable(perm int) bool { return perm&PermRead == PermRead }

// IsWriteable reports whether perm allows writing.
func IsWriteable(perm int) bool { return perm&PermWrite == PermWrite }

// IsInherited reports whether perm marks a topic whose config new topics copy.
func IsInherited(perm int) bool { return perm&PermInherit == PermInherit }

// PermString renders perm like Java's PermName.perm2String ("RW-", "R--", ...).
func PermString(perm int) string {
	b := []byte("---")
	if IsReadable(perm) {
		b[0] = 'R'
	}
	if IsWriteable(perm) {
		b[1] = 'W'
	}
	if IsInherited(perm) {
		b[2] = 'X'
	}
	return string(b)
}

// Well-known names and numbers (Java's MixAll, TopicValidator, NamesrvUtil). The
// broker's packages and pkg/names name these topics and prefixes through these constants
// only.
const (
	MasterID                  int64 = 0 // brokerId of a master
	DefaultTopic                    = "TBW102"
	DefaultTopicPerm                = PermRead | PermWrite | PermInherit
	DefaultQueueNums                = 16 // TopicConfig's default read/write queue numbers
	SelfTestTopic                   = "SELF_TEST_TOPIC"
	BenchmarkTopic                  = "BenchmarkTest"
	OffsetMovedEventTopic           = "OFFSET_MOVED_EVENT"
	ScheduleTopic                   = "SCHEDULE_TOPIC_XXXX"
	TransHalfTopic                  = "RMQ_SYS_TRANS_HALF_TOPIC"
	TransOpHalfTopic                = "RMQ_SYS_TRANS_OP_HALF_TOPIC"
	TransCheckMaxTimeTopic          = "TRANS_CHECK_MAX_TIME_TOPIC" // half messages checked too often
	CheckpointTopic                 = "CHECKPOINT_TOPIC_XXXX"      // not sendable (Java's TopicValidator)
	TraceTopic                      = "RMQ_SYS_TRACE_TOPIC"
	RetryGroupTopicPrefix           = "%RETRY%"
	DLQGroupTopicPrefix             = "%DLQ%"
	NamespaceOrderTopicConfig       = "ORDER_TOPIC_CONFIG" // KV namespace of orderTopicConf
	DefaultNamesrvPort              = 9876
	DefaultBrokerPort               = 10911
	TopicFilterTypeSingleTag        = "SINGLE_TAG"
	TopicFilterTypeMultiTag         = "MULTI_TAG"
)
