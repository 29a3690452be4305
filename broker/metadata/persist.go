package metadata

import (
	"fmt"
	"log/slog"
	"path/filepath"

	"github.com/openrmq/rocketmq-operator/pkg/atomicfile"
	"github.com/openrmq/rocketmq-operator/pkg/protocol"
)

// File names under <storePathRootDir>/config.
const (
	TopicsFile            = "topics.json"
	SubscriptionGroupFile = "subscriptionGroup.json"
	ConsumerOffsetFile    = "consumerOffset.json"
)

// ConfigDir returns the folder of the metadata files.
func ConfigDir(storeRoot string) string { return filepath.Join(storeRoot, "config") }

// WriteFileAtomic replaces path with data the way the metadata files are written.
func WriteFileAtomic(path string, data []byte) error { return atomicfile.Write(path, data) }

// loadJSON fills v from path, or from path.bak when path is missing or does not parse.
// It reports whether a file was found. Using path.bak is a WARN naming the file and
// what was wrong with it, which is kept aside as path.corrupt-<time> (atomicfile.Load).
func loadJSON(path string, v any, reset func()) (bool, error) {
	used, fb, err := atomicfile.Load(path, func(data []byte) error {
		reset()
		return protocol.Decode(data, v)
	})
	if err != nil {
		reset()
		return false, fmt.Errorf("metadata: %w", err)
	}
	if fb != nil {
		slog.Warn("metadata: file unusable, loaded its backup", "file", fb.Path, "reason", fb.Reason.Error(),
			"loaded", used, "kept", fb.KeptAs)
	}
	return used != "", nil
}

// copyNonNil copies src's entries into dst, leaving out the null ones a
// damaged or hand-edited file may hold ({"T":null} decodes to a nil pointer).
func copyNonNil[V any](dst, src map[string]*V) {
	for k, v := range src {
		if v != nil {
			dst[k] = v
		}
	}
}
