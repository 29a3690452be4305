package broker

import (
	"github.com/openrmq/rocketmq-operator/broker/store"
	"github.com/openrmq/rocketmq-operator/pkg/message"
)

// GetStatus is the outcome of a read from a consume queue (Java's GetMessageStatus).
type GetStatus = store.GetStatus

// Read statuses.
const (
	Found               = store.Found
	NoMatchedMessage    = store.NoMatchedMessage
	MessageWasRemoving  = store.MessageWasRemoving
	OffsetFoundNull     = store.OffsetFoundNull
	OffsetOverflowBadly = store.OffsetOverflowBadly
	OffsetOverflowOne   = store.OffsetOverflowOne
	OffsetTooSmall      = store.OffsetTooSmall
	NoMatchedLogicQueue = store.NoMatchedLogicQueue
	NoMessageInQueue    = store.NoMessageInQueue
)

// GetResult is a read from one queue.
type GetResult struct {
	Status          GetStatus
	NextBeginOffset int64
	MinOffset       int64
	MaxOffset       int64
	Body            []byte   // the raw commitlog records, concatenated, or
	Parts           [][]byte // the records as slices of the store, valid until Release
	Count           int      // records in Body or Parts
	// Release, when set, gives back to the store what keeps Parts valid. The reader calls
	// it exactly once, when it no longer uses them.
	Release func()
	// SuggestPullingFromSlave: the reader lags so far behind the tail that its data is no
	// longer in memory.
	SuggestPullingFromSlave bool
}

// BodyLen is the size of the records read.
func (r *GetResult) BodyLen() int {
	n := len(r.Body)
	for _, p := range r.Parts {
		n += len(p)
	}
	return n
}

// release runs Release unless it has run or been handed on.
func (r *GetResult) release() {
	if f := r.Release; f != nil {
		r.Release = nil
		f()
	}
}

// MessageFilter selects messages during a read, by consume-queue tag hash first and
// then by record; nil matches everything.
type MessageFilter = store.MessageFilter

// MessageStore is what the broker needs from its message store. broker/store implements
// it through storeAdapter; tests may use a memory implementation.
type MessageStore interface {
	// PutMessages appends messages of one topic and queue and waits until they are
	// durable as the flush mode requires.
	PutMessages(msgs []*message.Message) (*store.PutResult, error)
	// AppendMessages appends like PutMessages; durable waits for the flush and gives
	// the final status. It must be called once.
	AppendMessages(msgs []*message.Message) (res *store.PutResult, durable func() store.PutStatus, err error)
	// GetMessages reads up to maxMsgs matching messages from offset, within the per-pull
	// transfer limits.
	GetMessages(topic string, queueID int32, offset int64, maxMsgs int, filter MessageFilter) (*GetResult, error)
	MinOffset(topic string, queueID int32) int64
	MaxOffset(topic string, queueID int32) int64
	// OffsetByTime returns the first queue offset stored at or after ts (ms).
	OffsetByTime(topic string, queueID int32, ts int64) int64
	// StoreTime returns the store timestamp of the message at offset.
	StoreTime(topic string, queueID int32, offset int64) (int64, error)
	// MessageAt returns the raw record at a commitlog offset.
	MessageAt(phyOffset int64) ([]byte, error)
	// QueryByKey returns raw records whose KEYS or UNIQ_KEY hold key, stored in [begin, end].
	QueryByKey(topic, key string, maxNum int, begin, end int64) ([][]byte, error)
	// InMemory reports whether the message at offset is still in memory (page cache).
	InMemory(topic string, queueID int32, offset int64) bool
	// MaxPhyOffset is the commitlog write position.
	MaxPhyOffset() int64
	// MinPhyOffset is the first commitlog offset still stored.
	MinPhyOffset() int64
	// DispatchBehind is how many commitlog bytes are not in consume queues yet.
	DispatchBehind() int64
	// Damage is how many damaged commitlog ranges are known and how many reads
	// refused a damaged record (or skipped a gap) so far.
	Damage() (ranges int, refused int64)
	OnArrival(fn store.ArrivalFunc)
	// DeleteTopic drops the consume queues of topic.
	DeleteTopic(topic string) error
	// ConsumeQueueEntries reads up to count entries of a queue from index (mqadmin queryCq).
	ConsumeQueueEntries(topic string, queueID int32, index int64, count int) (entries []store.CQEntry, minOff, maxOff int64, ok bool)
	// CleanExpiredConsumeQueues drops queues whose messages are all gone; it returns how many.
	CleanExpiredConsumeQueues() int
	// CleanUnusedTopics drops the consume queues of topics keep refuses; it returns them.
	CleanUnusedTopics(keep func(topic string) bool) []string
	Close() error
}
