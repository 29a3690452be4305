package protocol

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// TopicConfig is a broker's configuration of one topic.
type TopicConfig struct {
	TopicName       string `json:"topicName"`
	ReadQueueNums   int    `json:"readQueueNums"`
	WriteQueueNums  int    `json:"writeQueueNums"`
	Perm            int    `json:"perm"`
	TopicFilterType string `json:"topicFilterType"`
	TopicSysFlag    int    `json:"topicSysFlag"`
	Order           bool   `json:"order"`
}

// NewTopicConfig returns a config with Java's defaults: 16/16 queues, read-write, single tag.
func NewTopicConfig(name string) *TopicConfig {
	return &TopicConfig{
		TopicName:       name,
		ReadQueueNums:   DefaultQueueNums,
		WriteQueueNums:  DefaultQueueNums,
		Perm:            PermRead | PermWrite,
		TopicFilterType: TopicFilterTypeSingleTag,
	}
}

// EncodeLine renders t as the space-separated line of the compressed registration body:
// "name read write perm filterType". Topic sys flag and order are not carried.
func (t *TopicConfig) EncodeLine() string {
	ft := t.TopicFilterType
	if ft == "" {
		ft = TopicFilterTypeSingleTag
	}
	return fmt.Sprintf("%s %d %d %d %s", t.TopicName, t.ReadQueueNums, t.WriteQueueNums, t.Perm, ft)
}

// DecodeTopicConfigLine parses a line written by EncodeLine.
func DecodeTopicConfigLine(line string) (*TopicConfig, error) {
	f := strings.Split(line, " ")
	if len(f) != 5 {
		return nil, fmt.Errorf("protocol: topic config %q: want 5 fields, got %d", line, len(f))
	}
	t := &TopicConfig{TopicName: f[0], TopicFilterType: f[4]}
	for i, dst := range []*int{&t.ReadQueueNums, &t.WriteQueueNums, &t.Perm} {
		n, err := strconv.Atoi(f[i+1])
		if err != nil {
			return nil, fmt.Errorf("protocol: topic config %q: %w", line, err)
		}
		*dst = n
	}
	return t, nil
}

// DataVersion versions a broker's topic table: a change bumps the counter.
type DataVersion struct {
	Counter   int64 `json:"counter"`
	Timestamp int64 `json:"timestamp"`
}

// NewDataVersion returns counter 0 stamped now, as Java's constructor does.
func NewDataVersion() DataVersion { return DataVersion{Timestamp: time.Now().UnixMilli()} }

// Next returns the following version, stamped now.
func (v DataVersion) Next() DataVersion {
	return DataVersion{Counter: v.Counter + 1, Timestamp: time.Now().UnixMilli()}
}

// TopicConfigSerializeWrapper is a broker's topic table with its version.
type TopicConfigSerializeWrapper struct {
	TopicConfigTable map[string]*TopicConfig `json:"topicConfigTable"`
	DataVersion      DataVersion             `json:"dataVersion"`
}
