// Package ha replicates the commitlog from a master broker to its slaves,
// wire-compatible with RocketMQ 4.x (HAService, HAConnection, HAClient and
// GroupTransferService of 4.9.7), and copies the master's metadata to a
// slave (SlaveSynchronize).
//
// # Wire
//
// One plain TCP connection per slave, to the master's HA port (4.9.7 forces
// listenPort + 1; 5.x calls it haListenPort, default 10912; our broker accepts
// haListenPort but, as 4.9.7, listens on and announces listenPort + 1).
// No handshake and no framing beyond the following, all big endian:
//
//	slave -> master   report: max commitlog offset of the slave (int64), 8 bytes
//	master -> slave   frame:  physical offset (int64), body size (int32), body
//
// The slave reports right after connecting (4.9.7 waits one heartbeat
// interval first), after every frame it appended, and at least every
// haSendHeartbeatInterval (5 s). The first report sets where the master
// starts: the reported offset, or, when the slave reports 0 (an empty
// slave), the start of the master's newest commitlog segment
// (max - max % segment size; ServerConfig.EmptySlaveFromOldest sends the
// whole commitlog instead). Later reports are acknowledgements; one beyond
// the master's max offset closes the connection, and a first report beyond
// it is waited for but not counted as an acknowledgement.
//
// A frame's body is commitlog bytes starting at the frame's offset: at
// most haTransferBatchSize (32 KiB) and never past the end of a segment,
// so a record may be split across frames. A frame with size 0 is the
// master's heartbeat, sent when it wrote nothing for
// haSendHeartbeatInterval; its offset is where the next data will start.
//
// The slave accepts a frame only if its offset equals its own max offset
// (4.9.7 lets an empty slave take any offset; see Client) and the size is
// within bounds; otherwise it closes the connection and reconnects, and
// nothing of that frame is written. Either side closes a connection that
// was silent for haHousekeepingInterval (20 s).
//
// # Damaged records
//
// The master sends only records that pass their checks (framing, physical
// offset, body CRC: MasterStore.ReadChecked). A damaged range of its
// commitlog (see broker/store's doc.go) goes out as a filler of the same
// length instead of its bytes: a blank record when the range ends its
// segment, else one record of topic RMQ_SYS_DAMAGED, sysflag
// TRANSACTION_ROLLBACK (no consume queue takes it, in this broker or a Java
// one), queue id and queue offset -1, a zero body with a valid CRC. So the
// slave keeps every commitlog offset of the master and every other byte;
// the queue offsets the range held read as gaps on the slave as on the
// master, and the slave reports the filler as a damaged range of its own
// (kind filler). We chose that over stopping the slave at the damage
// (replication, and SYNC_MASTER sends, would stall until an operator
// repaired the master) and over skipping the range on the wire (4.9.7
// slaves refuse a frame that does not start at their max offset). A range
// too short for a filler record, which records between boundaries never
// are, stops replication at its start with an error in the master's log.
//
// # SYNC_MASTER
//
// A SYNC_MASTER acknowledges a send that waits for the store only once a
// slave has reported an offset at or past the end of the message
// (Server.WaitForSlave). With no slave connected, or the best slave more
// than haSlaveFallbehindMax (256 MiB) behind, the send is answered
// SLAVE_NOT_AVAILABLE (11) at once; if no slave catches up within
// slaveTimeout (3 s in 4.9.7) it is answered FLUSH_SLAVE_TIMEOUT (12). The
// message stays stored either way.
//
// # Metadata
//
// Every 10 s (first after 3 s) a slave asks its master for
// GET_ALL_TOPIC_CONFIG (21, on the master's VIP port, listenPort - 2),
// GET_ALL_CONSUMER_OFFSET (43), GET_ALL_DELAY_OFFSET (45) and
// GET_ALL_SUBSCRIPTIONGROUP_CONFIG (201) and replaces its own copies with
// the answers (Synchronizer).
package ha
