package store

import (
	"fmt"
	"path/filepath"
	"strconv"

	"github.com/openrmq/rocketmq-operator/pkg/names"
)

// Topic names become directories: <root>/consumequeue/<topic>/<queueId>. Every such
// path is built here and only from a legal RocketMQ topic name (names.Topic) and a
// non-negative queue id, whatever the name's source: a put, a record dispatched during
// recovery or replication, a directory found at start, an admin request. The result is
// checked to stay below the consume-queue root as well, so no name can leave the store.

// topicDir is <consumeQueueDir>/<topic>.
func (c *Config) topicDir(topic string) (string, error) {
	if err := names.Topic(topic); err != nil {
		return "", fmt.Errorf("%w: topic %q: %w", ErrBadTopic, topic, err)
	}
	return below(c.consumeQueueDir(), topic)
}

// queueDir is <consumeQueueDir>/<topic>/<qid>.
func (c *Config) queueDir(topic string, qid int32) (string, error) {
	if qid < 0 {
		return "", fmt.Errorf("%w: topic %q: queue id %d", ErrBadTopic, topic, qid)
	}
	dir, err := c.topicDir(topic)
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, strconv.Itoa(int(qid))), nil
}

// below joins rel to root, refusing anything that is not a path inside root.
func below(root, rel string) (string, error) {
	if !filepath.IsLocal(rel) {
		return "", fmt.Errorf("%w: %q is not a path inside %s", ErrBadTopic, rel, root)
	}
	return filepath.Join(root, rel), nil
}
