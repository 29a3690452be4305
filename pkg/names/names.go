// Package names holds RocketMQ's rules for topic and group names and the remarks Java
// answers when a name breaks them.
//
// Names arrive from the network and from files, and a topic's name becomes a directory
// (<store>/consumequeue/<topic>): every name is checked here before it is used. The
// allowed characters, ^[%|a-zA-Z0-9_-]+$, cannot spell a path separator or "..", so a
// legal name is always a single local path element.
package names

import (
	"errors"
	"strings"

	"github.com/openrmq/rocketmq-operator/pkg/protocol"
)

const (
	// Pattern is the legal characters of topics and groups, as Java prints it.
	Pattern = "^[%|a-zA-Z0-9_-]+$"
	// MaxTopicLength is Java's TopicValidator.TOPIC_MAX_LENGTH; a commitlog record's
	// topic length is one byte, so no longer topic can be stored either.
	MaxTopicLength = 127
	// MaxGroupLength is Java's Validators.CHARACTER_MAX_LENGTH.
	MaxGroupLength = 255
)

// Errors, tested with errors.Is; Error() is the remark Java sends.
var (
	ErrIllegalTopic = errors.New("illegal topic name")
	ErrIllegalGroup = errors.New("illegal group name")
)

// Error is a refused name. Its text is Java's remark, ready for a response.
type Error struct {
	kind   error
	remark string
}

func (e *Error) Error() string { return e.remark }
func (e *Error) Unwrap() error { return e.kind }

// Topic checks a topic name as 4.9.7's TopicValidator.validateTopic does, in its order.
func Topic(name string) error {
	switch {
	case blank(name):
		return &Error{ErrIllegalTopic, "The specified topic is blank."}
	case !legal(name):
		return &Error{ErrIllegalTopic, "The specified topic contains illegal characters, allowing only " + Pattern}
	case len(name) > MaxTopicLength:
		return &Error{ErrIllegalTopic, "The specified topic is longer than topic max length."}
	}
	return nil
}

// Group checks a consumer or producer group name as 4.9.7's client Validators.checkGroup
// does (the broker answers with the same words).
func Group(name string) error {
	switch {
	case blank(name):
		return &Error{ErrIllegalGroup, "the specified group is blank"}
	case len(name) > MaxGroupLength:
		return &Error{ErrIllegalGroup, "the specified group is longer than group max length 255."}
	case !legal(name):
		return &Error{ErrIllegalGroup, "the specified group[" + name + "] contains illegal characters, allowing only " + Pattern}
	}
	return nil
}

// blank is Java's UtilAll.isBlank: empty or only whitespace.
func blank(s string) bool {
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case ' ', '\t', '\n', '\r', '\f', '\v':
		default:
			return false
		}
	}
	return true
}

func legal(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case c == '%', c == '|', c == '_', c == '-':
		default:
			return false
		}
	}
	return true
}

// SystemGroups are the consumer groups a 4.9.7 broker creates at start for its own tools.
var SystemGroups = []string{
	"TOOLS_CONSUMER", "FILTERSRV_CONSUMER", "__MONITOR_CONSUMER", "CID_RMQ_SYS_TRANS",
	"SELF_TEST_C_GROUP", "CID_ONS-HTTP-PROXY", "CID_ONSAPI_PULL", "CID_ONSAPI_PERMISSION",
	"CID_ONSAPI_OWNER",
}

// SystemTopics are 4.9.7's TopicValidator.SYSTEM_TOPIC_SET: topics the brokers make and
// use themselves. A broker also treats its cluster name, its broker name and
// <cluster>_REPLY_TOPIC as system topics; those depend on the deployment and are left to
// the broker to refuse.
var SystemTopics = []string{
	protocol.DefaultTopic,           // AUTO_CREATE_TOPIC_KEY_TOPIC
	protocol.ScheduleTopic,          // delayed messages
	protocol.BenchmarkTopic,         // RMQ_SYS_BENCHMARK_TOPIC
	protocol.TransHalfTopic,         // transaction half messages
	protocol.TraceTopic,             // message traces
	protocol.TransOpHalfTopic,       // transaction commits and rollbacks
	protocol.TransCheckMaxTimeTopic, // transactions checked too often
	protocol.SelfTestTopic,
	protocol.OffsetMovedEventTopic,
}

// Prefixes of topics that belong to the brokers or to consumer groups.
const (
	// SystemTopicPrefix starts a system topic (Java's SYSTEM_TOPIC_PREFIX, "rmq_sys_");
	// it is compared without case, as the broker does.
	SystemTopicPrefix = "rmq_sys_"
	// RetryTopicPrefix and DLQTopicPrefix start a consumer group's retry and dead-letter
	// topics, which the brokers create for the group.
	RetryTopicPrefix = protocol.RetryGroupTopicPrefix
	DLQTopicPrefix   = protocol.DLQGroupTopicPrefix
)

// ErrReservedTopic is a legal name that is not for users' topics.
var ErrReservedTopic = errors.New("reserved topic name")

// UserTopic checks a name for a topic an administrator creates (mqadmin updateTopic, the
// operator's Topic resource): Topic's rules, then none of the system topics, the
// rmq_sys_ prefix, or a group's %RETRY% and %DLQ% topics. The system-topic remark is the
// broker's.
func UserTopic(name string) error {
	if err := Topic(name); err != nil {
		return err
	}
	for _, s := range SystemTopics {
		if name == s {
			return &Error{ErrReservedTopic, "The topic[" + name + "] is conflict with system topic."}
		}
	}
	switch {
	case len(name) >= len(SystemTopicPrefix) && strings.EqualFold(name[:len(SystemTopicPrefix)], SystemTopicPrefix):
		return &Error{ErrReservedTopic, "The topic[" + name + "] is conflict with system topic."}
	case strings.HasPrefix(name, RetryTopicPrefix), strings.HasPrefix(name, DLQTopicPrefix):
		return &Error{ErrReservedTopic, "The topic[" + name + "] is a consumer group's retry or dead-letter topic: the brokers create it."}
	}
	return nil
}
