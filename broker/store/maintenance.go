package store

import (
	"os"
)

// CQEntry is one consume-queue entry as admin tools show it.
type CQEntry struct {
	PhyOffset int64 // commitlog offset of the record
	Size      int32 // record size
	TagsCode  int64 // TAGS hash (delivery time in SCHEDULE_TOPIC_XXXX)
}

// ConsumeQueueEntries returns up to count entries of topic/qid from queue offset index,
// with the queue's min and max offsets. ok is false when there is no such queue; an
// index outside [min, max) gives no entries (Java's getIndexBuffer returns none).
func (s *Store) ConsumeQueueEntries(topic string, qid int32, index int64, count int) (entries []CQEntry, minOff, maxOff int64, ok bool) {
	cq := s.queue(topic, qid)
	if cq == nil {
		return nil, 0, 0, false
	}
	minOff, maxOff = cq.minOffset.Load(), cq.maxOffset.Load()
	for off := index; off >= minOff && off < maxOff && len(entries) < count; off++ {
		e, found := cq.entry(off)
		if !found {
			break
		}
		entries = append(entries, CQEntry{PhyOffset: e.phy, Size: e.size, TagsCode: e.tagsCode})
	}
	return entries, minOff, maxOff, true
}

// CleanExpiredConsumeQueues removes the consume queues whose every entry points below
// the commitlog minimum (Java's cleanExpiredConsumerQueue, mqadmin cleanExpiredCQ): their
// messages are gone, and their next queue offset starts again at 0. A queue without
// entries is kept (it may have been created just now). It returns how many it removed.
func (s *Store) CleanExpiredConsumeQueues() int {
	minPhy := s.cl.minOffset()
	var expired []*consumeQueue
	for _, cq := range s.allQueues() {
		end := cq.maxOffset.Load()
		if end <= 0 {
			continue
		}
		if e, ok := cq.entry(end - 1); ok && e.phy < minPhy {
			expired = append(expired, cq)
		}
	}
	for _, cq := range expired {
		s.log.Info("consume queue expired (last entry below the commitlog's first offset): removed",
			"topic", cq.topic, "queue", cq.queueID, "commitLogMinOffset", minPhy)
		s.removeQueues(cq.topic, func(qid int32) bool { return qid == cq.queueID })
	}
	return len(expired)
}

// CleanUnusedTopics removes the consume queues of every topic keep refuses (Java's
// cleanUnusedTopic, mqadmin cleanUnusedTopic), except SCHEDULE_TOPIC_XXXX, whose queues
// hold the pending delayed messages. It returns the topics removed.
func (s *Store) CleanUnusedTopics(keep func(topic string) bool) []string {
	s.cqMu.RLock()
	var unused []string
	for topic := range s.cqs {
		if topic != ScheduleTopic && !keep(topic) {
			unused = append(unused, topic)
		}
	}
	s.cqMu.RUnlock()
	for _, topic := range unused {
		s.log.Info("topic has no config: its consume queues removed", "topic", topic)
		s.removeQueues(topic, func(int32) bool { return true })
	}
	return unused
}

// removeQueues destroys topic's queues whose id match selects, and forgets their next
// offsets. The topic directory goes once it holds no queue.
func (s *Store) removeQueues(topic string, match func(qid int32) bool) {
	s.putMu.Lock()
	for k := range s.queueTable {
		if k.topic == topic && match(k.qid) {
			delete(s.queueTable, k)
		}
	}
	s.putMu.Unlock()
	s.dispMu.Lock() // no dispatch into the queues while they go
	defer s.dispMu.Unlock()
	s.cqMu.Lock()
	var gone []*consumeQueue
	for qid, cq := range s.cqs[topic] {
		if match(qid) {
			gone = append(gone, cq)
			delete(s.cqs[topic], qid)
		}
	}
	empty := len(s.cqs[topic]) == 0
	if empty {
		delete(s.cqs, topic)
	}
	s.cqMu.Unlock()
	for _, cq := range gone {
		cq.destroy()
	}
	if empty {
		if dir, err := s.cfg.topicDir(topic); err == nil {
			os.RemoveAll(dir)
		}
	}
}
