// Package transaction is the broker side of RocketMQ transactional
// messages (Java's TransactionalMessageServiceImpl, TransactionalMessageBridge
// and EndTransactionProcessor).
//
// # Flow
//
//  1. Send: a message whose sysflag says PREPARED (the producer also sets
//     TRAN_MSG=true and PGROUP) is turned by ToHalf into a half message:
//     topic RMQ_SYS_TRANS_HALF_TOPIC, queue 0, REAL_TOPIC / REAL_QID
//     holding its real topic and queue, sysflag transaction bits cleared
//     (NOT_TYPE, so the store indexes it in the half queue). The producer's
//     SendResult carries the half message's queue offset and offsetMsgId.
//  2. END_TRANSACTION (37): EndTransaction finds the half message by
//     commitlog offset and checks producer group and queue offset. COMMIT
//     puts the real message (real topic and queue, REAL_TOPIC / REAL_QID
//     removed, sysflag COMMIT, prepared-transaction offset = the half
//     message's commitlog offset; a DELAY level is honoured through
//     package schedule). COMMIT and ROLLBACK then put an op message to
//     RMQ_SYS_TRANS_OP_HALF_TOPIC queue 0: tag "d", body the half message's
//     queue offset in decimal. UNKNOWN (NOT_TYPE) does nothing.
//  3. Check: every CheckInterval (transactionCheckInterval, 60 s) the
//     Service scans the half queue from its consume offset. Half messages
//     with an op are done. Others older than TransactionTimeout
//     (transactionTimeOut, 6 s; or their CHECK_IMMUNITY_TIME_IN_SECONDS)
//     are put again at the end of the half queue with TRANSACTION_CHECK_TIMES
//     incremented, and the Checker is called with that copy, whose offsets
//     the producer's answer (END_TRANSACTION with fromTransactionCheck)
//     will name. A half message already checked CheckMax (15) times, or
//     born more than FileReservedTime (72 h) ago, is discarded with a log
//     line: moved to TRANS_CHECK_MAX_TIME_TOPIC (never delivered), as Java. The scan stops at the first message that
//     is not yet due (later ones are younger) and at messages put after
//     the scan began.
//
// # Offsets
//
// Progress is kept, as in Java, as consumer offsets of group
// CID_RMQ_SYS_TRANS: topic RMQ_SYS_TRANS_HALF_TOPIC queue 0 (next half
// message to look at) and RMQ_SYS_TRANS_OP_HALF_TOPIC queue 0 (first op
// not yet known to be done), through the Offsets interface, which the
// broker's consumerOffset.json table (metadata.Offsets) satisfies; the
// broker persists it with the other offsets. The scan keeps its position
// in memory and commits a position only once the copies it put before it
// are flushed (store FlushedOffset; checked at the next scan) or at Close
// (close the Service before the store and persist the offsets table after
// it), so a crash never skips a pending half message. Lost progress (a crash before
// consumerOffset.json was written) only means that some half messages are
// looked at again: they may be checked once more (a check is a question to
// the producer, and the producer's answer names one copy's offsets).
// Everything else is in the store, so a restart loses no pending
// transaction.
package transaction
